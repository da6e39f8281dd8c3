"""A parameter's cotangent has the parameter's dtype, as in JAX, where a float16 x met a wider
float (x + ones(float32), sin(x * y) with y float32, x @ w, an int operand's sin): the op
promoted x, and promotion's transpose (convert_element_type's) casts the cotangent back.
ad/helpers.unbroadcast does it. Values against float64 finite differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

h, s = np.float16, np.float32
CASES = {
    "plus_ones32": (lambda x: snp.sum(x + snp.ones(2, snp.float32)), (np.array([.5, 1.5], h),)),
    "sin_of_product": (lambda x, y: snp.sum(snp.sin(x * y)),
                       (np.array([.5, 1.5], h), np.array([1.0, 2.0], s))),
    "int_operand": (lambda x, n: snp.sum((x + snp.sin(n)) * (x * n)),
                    (np.array([.5, 1.5], h), np.array([1, 2], np.int32))),
    "matmul": (lambda x, w: snp.sum(snp.tanh(x @ w)),
               (np.array([[.1, .2, .3], [.4, .5, .6]], h), np.ones((3, 2), s) * 0.3)),
    "python_float_times_half": (lambda x: snp.sum(x * np.array([1.0, 2.0], h)), (1.5,)),
}
TRANSFORMS = {"grad": secant.grad, "jit(grad)": lambda f: secant.jit(secant.grad(f))}


def _fd(f, args, eps=1e-4):
    a64 = [np.asarray(a, np.float64) for a in args]
    x = a64[0]
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        hi = f(*([x + e] + a64[1:]))
        lo = f(*([x - e] + a64[1:]))
        out[i] = (np.float64(hi) - np.float64(lo)) / (2 * eps)
    return out


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_cotangent_has_the_parameters_dtype(name, transform):
    f, args = CASES[name]
    g = TRANSFORMS[transform](f)(*args)
    want = np.float32 if isinstance(args[0], float) else np.asarray(args[0]).dtype
    assert g.dtype == want
    secant.config.update("enable_x64", True)
    try:
        ref = _fd(f, args)
    finally:
        secant.config.update("enable_x64", False)
    np.testing.assert_allclose(np.asarray(g, np.float64), ref, rtol=2e-2, atol=2e-2)


def test_vmap_of_grad_keeps_the_dtype():
    f, (x, y) = CASES["sin_of_product"]
    g = secant.vmap(secant.grad(f))(np.stack([x, x]), np.stack([y, y]))
    assert g.dtype == np.float16
    np.testing.assert_allclose(np.asarray(g[1], np.float64),
                               np.asarray(secant.grad(f)(x, y), np.float64), rtol=1e-3)


def test_scalar_parameters_of_two_dtypes():
    # (the lean analysis, shapes.real_scalars, reads a real scalar's cotangent from its
    # operands' without a cast: the derivative casts each cotangent to its parameter's dtype
    # where it returns them, ad/helpers.py grads_as)
    f = lambda x, y: x * y      # noqa: E731
    for g in (secant.grad, lambda f, n=0: secant.jit(secant.grad(f, n))):
        assert g(f)(h(1.5), s(2.0)).dtype == np.float16
        assert g(f, 1)(h(1.5), s(2.0)).dtype == np.float32
    gx, gy = secant.grad(f, argnums=(0, 1))(s(1.5), h(2.0))
    assert (gx.dtype, gy.dtype) == (np.float32, np.float16)
    value, gx = secant.value_and_grad(f)(h(1.5), s(2.0))
    assert (value.dtype, gx.dtype) == (np.float32, np.float16)
    gx, aux = secant.grad(lambda x, y: (x * y, y), has_aux=True)(h(1.5), s(2.0))
    assert (gx.dtype, aux.dtype) == (np.float16, np.float32)
    tree = secant.grad(lambda p, y: p["a"] * y + p["b"][0] * y)(
        {"a": h(1.0), "b": [h(2.0)]}, s(3.0))
    assert [leaf.dtype for leaf in secant.tree_util.tree_leaves(tree)] == [np.float16] * 2
    np.testing.assert_allclose(np.asarray(tree["b"][0], np.float64), 3.0)
    g = secant.grad(lambda x, y: snp.sum(x) * y)(np.ones(2, h), s(2.0))    # (an array's too)
    assert g.dtype == np.float16
    np.testing.assert_allclose(np.asarray(g, np.float64), [2.0, 2.0])


def test_vmap_of_grad_of_scalars_of_two_dtypes():
    # vmap and jvp read grad's generated source: the cast back is in it (JAX: float16)
    f = lambda x, y: snp.sin(x * y) * y        # noqa: E731
    xs, ys = np.array([.5, 1.0, 1.5], h), np.array([1.0, 2.0, 3.0], s)
    g = secant.vmap(secant.grad(f))(xs, ys)
    assert g.dtype == np.float16
    loop = [secant.grad(f)(x, y) for x, y in zip(xs, ys)]
    np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(loop, np.float64))
    np.testing.assert_allclose(np.asarray(g, np.float64),
                               np.cos(np.float64(xs) * ys) * np.float64(ys) ** 2, rtol=2e-3)
    assert secant.vmap(secant.grad(f, 1))(xs, ys).dtype == np.float32
    g = secant.vmap(secant.grad(lambda x, y: snp.sum(x) * y))(np.ones((3, 2), h), ys)
    assert g.dtype == np.float16
    np.testing.assert_allclose(np.asarray(g, np.float64), np.repeat(ys[:, None], 2, 1))
    value, tangent = secant.jvp(secant.grad(f), (h(1.5), s(2.0)), (h(1.0), s(0.0)))
    assert (value.dtype, tangent.dtype) == (np.float16, np.float16)
    np.testing.assert_allclose(float(tangent), -np.sin(3.0) * 8.0, rtol=2e-3)

"""Issue 16 leftovers: lax's argument checks hold under every transform (lax.add of two dtypes,
lax.dot of a 3-d operand), and vmap raises JAX's exception types where a Python conversion or a
data-dependent shape meets a batched value, each naming the user's line; valid lax code keeps
its values under grad, jvp, vmap and jit (float64 finite differences, a loop, eager).

PYTEST_DONT_REWRITE: the `assert` statements of the functions below are the user's code under
test (pytest's rewriting would make their code objects disagree with their source)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import errors, lax

HERE = __file__.rsplit("/", 1)[-1]


def raises_at(exc, line_text, fn):
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    assert HERE in msg and line_text in msg, msg
    return info.value


# --- lax checks under transforms ----------------------------------------------------------------
def add_two_dtypes(x):
    return snp.sum(lax.add(x * snp.ones(3), snp.ones(3, dtype=snp.int32)))


def mul_two_dtypes(x):
    return snp.sum(lax.mul(x * snp.ones(3), snp.arange(3)))


def dot_rank3(x):
    return snp.sum(lax.dot(x * snp.ones((2, 2, 2)), snp.ones(2)))


@pytest.mark.parametrize("f, line", [(add_two_dtypes, "lax.add(x * snp.ones(3)"),
                                     (mul_two_dtypes, "lax.mul(x * snp.ones(3)"),
                                     (dot_rank3, "lax.dot(x * snp.ones((2, 2, 2))")],
                         ids=lambda v: getattr(v, "__name__", "line"))
@pytest.mark.parametrize("how", ["eager", "grad", "vmap", "jit-grad", "vmap-grad", "jvp"])
def test_lax_checks_hold_under_transforms(f, line, how):
    x, xs = snp.asarray(2.0), snp.asarray([2.0, 3.0])
    run = {"eager": lambda: f(x), "grad": lambda: secant.grad(f)(x),
           "vmap": lambda: secant.vmap(f)(xs), "jit-grad": lambda: secant.jit(secant.grad(f))(x),
           "vmap-grad": lambda: secant.vmap(secant.grad(f))(xs),
           "jvp": lambda: secant.jvp(f, (x,), (snp.asarray(1.0),))}[how]
    raises_at(TypeError, line, run)


W = np.array([0.5, 1.5, 2.0])
M = np.arange(6.0).reshape(3, 2) / 5
VALID = {
    "add": lambda x: snp.sum(lax.add(snp.sin(x), snp.asarray(W))),
    "add_scalar": lambda x: snp.sum(lax.add(snp.sin(x), 2.0)),
    "sub": lambda x: snp.sum(lax.sub(snp.asarray(W), x * x)),
    "mul": lambda x: snp.sum(lax.mul(x, lax.mul(x, snp.asarray(W)))),
    "max": lambda x: snp.sum(lax.max(x, snp.asarray(W))),
    "min": lambda x: snp.sum(lax.min(x, 1.0)),
    "pow": lambda x: snp.sum(lax.pow(x, snp.asarray(W))),
    "atan2": lambda x: snp.sum(lax.atan2(x, snp.asarray(W))),
    "dot": lambda x: snp.sum(lax.dot(x, snp.asarray(M))),
    "dot_vv": lambda x: lax.dot(x, snp.sin(x)),
    "dot_mv": lambda x: snp.sum(lax.dot(snp.outer(x, x), snp.asarray(W))),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_lax_code_keeps_its_values(x64, name):
    f = VALID[name]
    x = np.array([0.3, 0.7, 1.1])
    xs = np.stack([x, x + 0.1])
    eps = 1e-6
    fd = np.array([(float(f(snp.asarray(x + e))) - float(f(snp.asarray(x - e)))) / (2 * eps)
                   for e in np.eye(3) * eps])
    g = np.asarray(secant.grad(f)(snp.asarray(x)))
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    t = np.array([0.2, -1.0, 0.5])
    np.testing.assert_allclose(secant.jvp(f, (snp.asarray(x),), (snp.asarray(t),))[1], g @ t,
                               rtol=1e-8, atol=1e-10)
    loop = [float(f(snp.asarray(v))) for v in xs]
    np.testing.assert_allclose(secant.vmap(f)(snp.asarray(xs)), loop, rtol=1e-10)
    np.testing.assert_allclose(secant.jit(secant.vmap(f))(snp.asarray(xs)), loop, rtol=1e-10)
    np.testing.assert_allclose(secant.vmap(secant.grad(f))(snp.asarray(xs)),
                               [secant.grad(f)(snp.asarray(v)) for v in xs], rtol=1e-10)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(snp.asarray(x)), g, rtol=1e-10)


def test_generated_code_keeps_the_lax_call():
    src = secant.source(secant.grad(VALID["add"]))
    assert "lax.add(snp.sin(x), " in src     # (sin_x read once: folded into its use)
    assert "lax=True" in secant.source(secant.vmap(VALID["dot_mv"]))


# --- vmap: JAX's exception types --------------------------------------------------------------
def and_of_comparisons(x):
    return snp.where((x > 0) and (x < 3), x, -x)


def assert_traced(x):
    assert x > 0
    return x * 2.0


def list_index(x):
    table = [1.0, 2.0, 3.0]
    return x * table[(x > 2).astype(snp.int32)]


def boolean_mask(x):
    v = x * snp.arange(4.0)
    return snp.sum(v[v > 2.0])


def nonzero_no_size(x):
    v = x * snp.arange(4.0)
    return snp.sum(snp.nonzero(v)[0]) * x


def arange_batched(x):
    return snp.sum(snp.arange(x))


def zeros_batched(x):
    n = (x * 2).astype(snp.int32)
    return snp.sum(snp.zeros(n)) + x


@pytest.mark.parametrize("f, exc, line", [
    (and_of_comparisons, errors.TracerBoolConversionError, "(x > 0) and (x < 3)"),
    (assert_traced, errors.TracerBoolConversionError, "assert x > 0"),
    (list_index, errors.TracerIntegerConversionError, "table[(x > 2)"),
    (boolean_mask, errors.NonConcreteBooleanIndexError, "v[v > 2.0]"),
    (nonzero_no_size, errors.ConcretizationTypeError, "snp.nonzero(v)"),
    (arange_batched, errors.ConcretizationTypeError, "snp.arange(x)"),
    (zeros_batched, errors.ConcretizationTypeError, "snp.zeros(n)"),
], ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("how", ["vmap", "jit-vmap"])
def test_vmap_raises_jax_types(f, exc, line, how):
    xs = snp.asarray([2.0, 3.0])
    run = secant.vmap(f) if how == "vmap" else secant.jit(secant.vmap(f))
    raises_at(exc, line, lambda: run(xs))


def test_vmap_still_accepts_static_truth_values_and_unbatched_indices():
    xs = np.arange(6.0).reshape(2, 3)

    def f(x):
        assert x.shape == (3,)
        assert x.ndim == 1 and x.shape[0] == 3
        k = 2
        table = [1.0, 2.0, 3.0]
        m = snp.arange(3.0) > 1             # an unbatched mask
        y = snp.where((k > 1) and (x.ndim == 1), x, -x) * table[1]
        return y + snp.sum(x[m]) + snp.asarray(table)[snp.argmax(x)] + snp.zeros(x.shape[0])
    np.testing.assert_allclose(secant.vmap(f)(snp.asarray(xs)),
                               [f(snp.asarray(v)) for v in xs])

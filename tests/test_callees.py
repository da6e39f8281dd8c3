"""Callees: what Python would call, resolved once (transformer/callees.py) for every transform.

Each callee kind (getattr, containers, bound methods, callable objects, static/class methods,
functools.partial, operator.*, library functions passed directly, *args/**kwargs, and callees
known only at run time) is checked under grad (float64 central differences), jvp (against the
gradient), vmap (against a Python loop) and jit(grad) (against eager)."""
import functools
import operator
import os
import pathlib

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.errors import SecantError

GOLDEN = pathlib.Path(__file__).parent / "golden"
UPDATE = os.environ.get("SECANT_UPDATE_GOLDEN") == "1"


# --- the callees ----------------------------------------------------------------------------
NAME = "cos"
FNS = {"s": snp.sin, "t": snp.tanh}
TABLE = [snp.exp, snp.sin]


class Layer:
    scale = 1.5

    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return snp.tanh(self.w * x)

    def apply(self, x):
        return self.w * x * x

    @staticmethod
    def cube(x):
        return x * x * x

    @classmethod
    def scaled(cls, x):
        return cls.scale * snp.sin(x)


class Model:
    def __init__(self):
        self.layer = Layer(0.7)

    def loss(self, x):
        return snp.sum(self.layer(x))


L = Layer(0.5)
M = Model()
TRIPLE = functools.partial(lambda a, x: a * x * x, 3.0)


def via_getattr_const(x):
    return snp.sum(getattr(snp, "sin")(x))


def via_getattr_global(x):
    return snp.sum(getattr(snp, NAME)(x))


def via_dict(x):
    return snp.sum(FNS["s"](x) * FNS["t"](x))


def via_list(x):
    return snp.sum(TABLE[0](x) + TABLE[-1](x))


def via_method(x):
    return snp.sum(L.apply(x))


def via_callable_object(x):
    return snp.sum(L(x))


def via_static_and_class_methods(x):
    return snp.sum(L.cube(x) + Layer.cube(x) + L.scaled(x) + Layer.scaled(x))


def via_partial_inline(x):
    return snp.sum(functools.partial(snp.multiply, 3.0)(x) * x)


def via_partial_global(x):
    return snp.sum(TRIPLE(x))


def via_operator(x):
    return snp.sum(operator.add(operator.mul(x, x), operator.neg(operator.truediv(x, 2.0))))


def via_runtime_method(model, x):
    return model.loss(x)


def pick_at_run_time(fns, x):
    return snp.sum(fns[0](x) * fns[1](x))


def star_sum(*xs):
    return xs[0] * xs[1] + snp.sin(xs[-1])


def with_kwargs(x, *rest, scale=2.0, **kw):
    return scale * x * snp.sum(snp.stack(rest)) * kw["c"]


def posonly(x, y=3.0, /, *, z=2.0):
    return x * y * z


def calls_variadic(a, b):
    return star_sum(a, b) + with_kwargs(a, b, b, c=a) + posonly(a, z=b) + star_sum(*(b, a))


def exact(f, x, eps=1e-6):
    """Central differences of scalar f at the float64 array x."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (float(f(x + d)) - float(f(x - d))) / (2 * eps)
    return g


CASES = [via_getattr_const, via_getattr_global, via_dict, via_list, via_method,
         via_callable_object, via_static_and_class_methods, via_partial_inline,
         via_partial_global, via_operator]
X = np.array([0.3, -0.7, 1.1])


# --- grad, jvp, vmap, jit(grad) of each kind ----------------------------------------------------
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_grad_matches_finite_differences(f, x64):
    g = secant.grad(f)(X)
    np.testing.assert_allclose(np.asarray(g), exact(f, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp_is_the_gradient_along_the_tangent(f, x64):
    v = np.array([0.5, -1.0, 2.0])
    out, out_dot = secant.jvp(f, (X,), (v,))
    np.testing.assert_allclose(float(out), float(f(X)), rtol=1e-12)
    np.testing.assert_allclose(float(out_dot), exact(f, X) @ v, rtol=1e-6)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_vmap_matches_a_loop(f):
    xs = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(xs)),
                               np.array([float(f(x)) for x in xs]), rtol=1e-5)
    grads = secant.vmap(secant.grad(f))(xs)
    np.testing.assert_allclose(np.asarray(grads),
                               np.stack([np.asarray(secant.grad(f)(x)) for x in xs]), rtol=1e-5)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jit_grad_matches_eager(f):
    x = X.astype(np.float32)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(x)),
                               np.asarray(secant.grad(f)(x)), rtol=1e-5, atol=1e-6)


def test_closed_forms():
    x = 0.4
    assert float(secant.grad(lambda x: getattr(snp, "sin")(x))(0.0)) == pytest.approx(1.0)
    assert float(secant.grad(lambda x: operator.mul(x, x))(3.0)) == pytest.approx(6.0)
    assert float(secant.grad(lambda x: operator.pow(x, 3.0))(2.0)) == pytest.approx(12.0)
    assert float(secant.grad(via_callable_object)(x)) == pytest.approx(
        0.5 * (1 - np.tanh(0.5 * x) ** 2), rel=1e-5)
    assert float(secant.grad(lambda x: Layer.scaled(x))(x)) == pytest.approx(1.5 * np.cos(x),
                                                                               rel=1e-5)


# --- callables passed directly --------------------------------------------------------------------
def test_bound_method_partial_and_object_passed_directly(x64):
    assert float(secant.grad(L.apply)(2.0)) == pytest.approx(2 * 0.5 * 2.0)
    assert float(secant.grad(functools.partial(lambda a, x: a * x * x, 3.0))(1.0)) == \
        pytest.approx(6.0)
    assert float(secant.grad(L)(0.3)) == pytest.approx(0.5 * (1 - np.tanh(0.15) ** 2))
    out, dot = secant.jvp(L.apply, (2.0,), (1.0,))
    assert (float(out), float(dot)) == pytest.approx((2.0, 2.0))
    xs = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(secant.vmap(L.apply)(xs)), 0.5 * xs * xs)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(L.apply))(2.0)), 2.0)


def test_library_functions_passed_directly(x64):
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(secant.grad(snp.mean)(np.ones(4))), np.full(4, 0.25))
    np.testing.assert_allclose(np.asarray(secant.grad(snp.var)(x, ddof=1)),
                               exact(lambda a: np.var(a, ddof=1), x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.grad(snp.sum)(x, axis=None)), np.ones((2, 3)))
    assert float(secant.grad(snp.abs)(-3.0)) == -1.0
    out, vjp = secant.vjp(functools.partial(snp.var, axis=0), x)
    np.testing.assert_allclose(np.asarray(out), np.var(x, axis=0))
    np.testing.assert_allclose(np.asarray(vjp(np.ones(3))[0]),
                               exact(lambda a: np.sum(np.var(a, axis=0)), x), rtol=1e-6)
    assert float(secant.jvp(np.sin, (1.0,), (1.0,))[1]) == pytest.approx(np.cos(1.0))
    np.testing.assert_allclose(np.asarray(secant.vmap(snp.mean, in_axes=1)(x)), x.mean(0))
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(snp.mean))(x)),
                               np.full((2, 3), 1 / 6))
    np.testing.assert_allclose(
        np.asarray(secant.jit(secant.grad(functools.partial(snp.var, ddof=1)))(x)),
        exact(lambda a: np.var(a, ddof=1), x), rtol=1e-6)


def test_library_function_without_a_rule_is_a_clear_error():
    """secant's own implementation is never transformed: no error points into secant/numpy.
    (to_inexact, a conversion helper secant.numpy exports, has no rule of its own.)"""
    for transform in (secant.grad, secant.vmap, secant.jvp_fn):
        with pytest.raises(SecantError, match="secant.numpy.to_inexact") as info:
            transform(snp.to_inexact)(np.ones((2, 3, 3), np.float32))
        assert "secant/numpy" not in str(info.value)


def test_library_function_with_a_source_passed_itself():
    """snp.trace is transformed through its source (secant/numpy/sources_existing.py)."""
    x = np.arange(18.0, dtype=np.float32).reshape(2, 3, 3)
    np.testing.assert_array_equal(secant.vmap(snp.trace)(x), [np.trace(m) for m in x])
    np.testing.assert_array_equal(secant.grad(snp.trace)(x[0]), np.eye(3, dtype=np.float32))


# --- callees known only at run time ---------------------------------------------------------------
def test_runtime_method_of_a_parameter(x64):
    x = np.array([0.1, 0.2, 0.3])
    want = 0.7 * (1 - np.tanh(0.7 * x) ** 2)
    np.testing.assert_allclose(np.asarray(secant.grad(via_runtime_method, argnums=1)(M, x)),
                               want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.grad(Model.loss, argnums=1)(M, x)), want,
                               rtol=1e-6)
    v = np.array([1.0, -1.0, 0.5])
    _, dot = secant.jvp(lambda x: via_runtime_method(M, x), (x,), (v,))
    assert float(dot) == pytest.approx(want @ v)
    xs = np.linspace(0, 1, 6).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(secant.vmap(via_runtime_method, in_axes=(None, 0))(M, xs)),
                               [float(via_runtime_method(M, r)) for r in xs])
    jitted = secant.jit(secant.grad(via_runtime_method, argnums=1), static_argnums=0)
    np.testing.assert_allclose(np.asarray(jitted(M, x)), want, rtol=1e-6)


def test_runtime_function_picked_from_a_parameter(x64):
    x = np.array([0.5, 1.5])
    grad = secant.grad(pick_at_run_time, argnums=1)
    jitted = secant.jit(grad, static_argnums=0)
    for fns in ((snp.sin, snp.cos), (L.apply, Layer.cube), (TRIPLE, L)):
        f = functools.partial(pick_at_run_time, fns)
        np.testing.assert_allclose(np.asarray(grad(fns, x)), exact(f, x), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(np.asarray(jitted(fns, x)), np.asarray(grad(fns, x)),
                                   rtol=1e-12)


def test_calling_a_differentiated_array_is_pythons_type_error():
    def f(x):
        g = x
        return g(x)
    with pytest.raises(TypeError, match="not callable"):   # as Python (and JAX) say it
        secant.grad(f)(1.0)


# --- *args, **kwargs, keyword-only and positional-only parameters ---------------------------------
def test_varargs_transformed(x64):
    assert float(secant.grad(star_sum)(2.0, 3.0, 0.5)) == pytest.approx(3.0)
    assert float(secant.grad(star_sum, argnums=2)(2.0, 3.0, 0.5)) == pytest.approx(np.cos(0.5))
    assert float(secant.grad(with_kwargs)(2.0, 3.0, 4.0, c=5.0)) == pytest.approx(2 * 7 * 5)
    assert float(secant.grad(posonly)(2.0, 4.0, z=5.0)) == pytest.approx(20.0)
    with pytest.raises(SecantError, match="per call shape"):
        secant.source(secant.grad(star_sum))
    out, dot = secant.jvp(star_sum, (2.0, 3.0, 0.5), (1.0, 0.0, 0.0))
    assert float(dot) == pytest.approx(3.0)
    assert float(secant.jit(secant.grad(star_sum))(2.0, 3.0, 0.5)) == pytest.approx(3.0)


def test_variadic_callees(x64):
    a, b = 0.6, 1.3
    want = exact(lambda v: calls_variadic(v[0], v[1]), np.array([a, b]))
    got = secant.grad(calls_variadic, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(np.array([float(g) for g in got]), want, rtol=1e-6)
    _, dot = secant.jvp(calls_variadic, (a, b), (1.0, 0.0))
    assert float(dot) == pytest.approx(want[0], rel=1e-6)
    jit_got = secant.jit(secant.grad(calls_variadic, argnums=(0, 1)))(a, b)
    np.testing.assert_allclose(np.array([float(g) for g in jit_got]), want, rtol=1e-6)
    xs, ys = np.linspace(0.1, 1, 4), np.linspace(1, 2, 4)
    np.testing.assert_allclose(np.asarray(secant.vmap(calls_variadic)(xs, ys)),
                               [float(calls_variadic(x, y)) for x, y in zip(xs, ys)], rtol=1e-12)


# --- readable source -------------------------------------------------------------------------------
def _check_golden(name, text):
    path = GOLDEN / f"{name}.py.txt"
    if UPDATE or not path.exists():
        path.write_text(text)
    assert text == path.read_text()


def test_source_of_a_method_call_and_a_runtime_call():
    def f(x):
        y = L.apply(x)
        return snp.sum(L(y))
    text = secant.source(secant.grad(f))
    assert "Layer.apply(L, x)" in text and "apply_vjp(" in text and "layer_call_vjp(" in text
    runtime = secant.source(secant.grad(Model.loss, argnums=1))
    assert "dynamic_call(self.layer, x)" in runtime
    assert "dynamic_call_vjp(" in runtime and "known only at run time" in runtime
    _check_golden("callees_method_source", text)
    _check_golden("callees_runtime_source", runtime)


def runtime_layer(layer, x):
    return layer(x) + layer.apply(x)


def test_compositions_through_methods_and_runtime_calls(x64):
    layer = Layer(2.0)

    def f(x):
        return layer.apply(x) + layer(x)
    # f = 2 x^2 + tanh(2x): f'' = 4 - 8 tanh(2x) (1 - tanh(2x)^2)
    t = np.tanh(2.0)
    want2 = 4.0 - 8 * t * (1 - t ** 2)
    assert float(secant.grad(secant.grad(f))(1.0)) == pytest.approx(want2)
    assert float(secant.hessian(f)(1.0)) == pytest.approx(want2)
    assert float(secant.jacfwd(secant.grad(f))(1.0)) == pytest.approx(want2)
    g = secant.grad(runtime_layer, argnums=1)
    assert float(secant.grad(g, argnums=1)(layer, 1.0)) == pytest.approx(want2)
    assert float(secant.jvp(lambda x: g(layer, x), (1.0,), (1.0,))[1]) == pytest.approx(want2)
    h = functools.partial(runtime_layer, layer)
    assert float(secant.hessian(h)(1.0)) == pytest.approx(want2)
    assert float(secant.jacfwd(secant.jacfwd(h))(1.0)) == pytest.approx(want2)
    want3 = -16 * (1 - t ** 2) * (1 - 3 * t ** 2)
    assert float(secant.grad(secant.grad(secant.grad(h)))(1.0)) == pytest.approx(want3)
    xs = np.linspace(0.2, 1.0, 3)
    np.testing.assert_allclose(np.asarray(secant.vmap(g, in_axes=(None, 0))(layer, xs)),
                               [float(g(layer, x)) for x in xs], rtol=1e-12)
    batched = secant.grad(lambda x: snp.sum(secant.vmap(runtime_layer, in_axes=(None, 0))(layer, x)))
    np.testing.assert_allclose(np.asarray(batched(xs)), [float(g(layer, x)) for x in xs],
                               rtol=1e-12)


def cubed_times(*xs):
    return xs[0] ** 3 * xs[1]


def test_compositions_of_a_variadic_function():
    assert float(secant.grad(secant.grad(cubed_times))(2.0, 3.0)) == pytest.approx(36.0)
    assert float(secant.jit(secant.grad(secant.grad(cubed_times)))(2.0, 3.0)) == \
        pytest.approx(36.0)
    xs, ys = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(cubed_times))(xs, ys)),
                               3 * xs ** 2 * ys, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.vmap(cubed_times)(xs, ys)), xs ** 3 * ys)
    assert float(secant.jvp(secant.grad(cubed_times), (2.0, 3.0), (1.0, 0.0))[1]) == \
        pytest.approx(36.0)


def make_closure_user():
    act = snp.tanh
    scale = Layer(3.0)

    def f(x):
        return snp.sum(act(scale.apply(x)))
    return f


def by_key(key, x):
    return snp.sum(FNS[key](x))


def test_closure_cells_and_keys_known_at_run_time(x64):
    f = make_closure_user()
    x = np.array([0.2, -0.4])
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), exact(f, x), rtol=1e-6)
    for key in ("s", "t"):
        g = functools.partial(by_key, key)
        np.testing.assert_allclose(np.asarray(secant.grad(by_key, argnums=1)(key, x)),
                                   exact(g, x), rtol=1e-6)
        np.testing.assert_allclose(
            np.asarray(secant.vmap(by_key, in_axes=(None, 0))(key, np.stack([x, 2 * x]))),
            [float(g(x)), float(g(2 * x))], rtol=1e-12)

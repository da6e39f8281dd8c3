"""make_jaxpr (the typed program jit traces, as JAX's ClosedJaxpr) and test_util.check_grads.

A jaxpr is checked by what could be wrong in it: its text, its equations' primitives and avals,
and its value: evaluating the recorded equations with the primitives' NumPy implementations
(eval_jaxpr) must give what the function gives.
"""
import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import lax
from secant.jaxpr import ClosedJaxpr, Literal, eval_jaxpr, make_jaxpr
from secant.test_util import check_grads, check_jvp, check_vjp

X = np.array([0.1, 0.5, -0.3], np.float32)


def f(x, y):
    return jnp.sum(jnp.sin(x) * y + 2.0)


def test_text_is_typed_one_primitive_per_line():
    text = str(make_jaxpr(f)(X, X))
    assert text == (
        "{ lambda ; a:f32[3] b:f32[3]. let\n"
        "    c:f32[3] = sin a\n"
        "    d:f32[3] = mul c b\n"
        "    e:f32[3] = add d 2.0:f32[]\n"
        "    f:f32[] = reduce_sum[axes=(0,)] e\n"
        "  in (f,) }")


def test_closed_jaxpr_attributes():
    cj = make_jaxpr(f)(X, X)
    assert isinstance(cj, ClosedJaxpr)
    assert [e.primitive.name for e in cj.jaxpr.eqns] == ["sin", "mul", "add", "reduce_sum"]
    assert len(cj.eqns) == 4 and cj.consts == [] and cj.literals == []
    assert [(a.shape, a.dtype) for a in cj.in_avals] == [((3,), np.float32)] * 2
    assert [(a.shape, a.dtype) for a in cj.out_avals] == [((), np.float32)]
    jaxpr = cj.jaxpr
    assert [str(v) for v in jaxpr.invars] == ["a", "b"]
    assert [str(v) for v in jaxpr.outvars] == ["f"]
    add = jaxpr.eqns[2]
    assert add.invars[0] is jaxpr.eqns[1].outvars[0]           # the variables are shared
    assert isinstance(add.invars[1], Literal) and add.invars[1].val == 2.0
    assert jaxpr.eqns[3].params == {"axes": (0,)}
    assert str(add) == "e:f32[3] = add d 2.0:f32[]"


def _differences(a):
    for _ in range(2):
        a = a[1:] - a[:-1]
    return a


@pytest.mark.parametrize("name, fn, args", [
    ("plain", f, (X, X + 1)),
    ("grad", secant.grad(f), (X, X + 1)),
    ("grad argnums", secant.grad(f, argnums=(0, 1)), (X, X + 1)),
    ("vmap", secant.vmap(f), (np.ones((2, 3), np.float32), np.arange(6.0, dtype=np.float32)
                              .reshape(2, 3))),
    ("vmap of grad", secant.vmap(secant.grad(f), in_axes=(0, None)),
     (np.ones((2, 3), np.float32), X)),
    ("hessian", secant.hessian(lambda x: jnp.sum(jnp.sin(x) ** 3)), (X,)),
    ("cond", lambda x: lax.cond(x[0] > 0, lambda x: x * 2, lambda x: -x, x), (X,)),
    ("cond false", lambda x: lax.cond(x[0] > 1, lambda x: x * 2, lambda x: -x, x), (X,)),
    ("fori_loop", lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, jnp.ones(3)), (X,)),
    ("scan", lambda x: lax.scan(lambda c, xi: (c + xi, c * xi), 0.0, x), (X,)),
    ("python loop changing shape", _differences, (np.arange(5.0, dtype=np.float32) ** 2,)),
    ("python if under jit", lambda x: jnp.where(x > 0, x, 0.0).sum() if x.shape[0] > 1
     else x, (X,)),
])
def test_evaluating_the_equations_gives_the_function(name, fn, args):
    cj = make_jaxpr(fn)(*args)
    got = eval_jaxpr(cj.jaxpr, cj.consts, *args)
    want = secant.tree_util.tree_leaves(fn(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    for a, w in zip(cj.out_avals, want):
        assert a.shape == np.shape(w)


def test_grad_jaxpr_has_the_derivative_ops():
    names = [e.primitive.name for e in make_jaxpr(secant.grad(jnp.sin))(1.0).eqns]
    assert names == ["cos", "mul"] or "cos" in names


def test_control_flow_is_nested():
    cj = make_jaxpr(lambda x: lax.cond(x > 0, lambda x: x * 2, lambda x: -x, x))(1.0)
    (gt, cond), = [cj.eqns]
    assert gt.primitive.name == "gt" and cond.primitive.name == "cond"
    false_branch, true_branch = cond.params["branches"]       # JAX's order: false first
    assert [e.primitive.name for e in false_branch.eqns] == ["neg"]
    assert [e.primitive.name for e in true_branch.eqns] == ["mul"]
    assert "branches=(" in str(cj)
    loop = make_jaxpr(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, 1.0))(2.0)
    w = loop.eqns[-1]
    assert w.primitive.name == "while"
    assert [e.primitive.name for e in w.params["cond_jaxpr"].eqns] == ["lt"]
    assert [str(v.aval) for v in w.outvars] == ["int32[]", "float32[]"]
    assert "cond_jaxpr={ lambda ; " in str(loop) and "body_jaxpr={ lambda ; " in str(loop)


def test_closed_over_arrays_are_constvars():
    c = np.array([1.0, 2.0, 3.0], np.float32)
    cj = make_jaxpr(lambda x: x * c + 1.0)(X)
    assert len(cj.consts) == 1
    np.testing.assert_array_equal(cj.consts[0], c)
    assert str(cj).startswith("{ lambda b:f32[3]; a:f32[3]. let")
    np.testing.assert_allclose(eval_jaxpr(cj.jaxpr, cj.consts, X)[0], X * c + 1.0)


def test_static_argnums_and_return_shape():
    cj = make_jaxpr(lambda x, n: x ** n, static_argnums=1)(X, 3)
    assert [e.primitive.name for e in cj.eqns] == ["integer_pow"]
    assert cj.eqns[0].params == {"y": 3}
    cj, shapes = make_jaxpr(lambda x: (x, {"a": x[:2] * 2}), return_shape=True)(X)
    assert shapes[0].shape == (3,) and shapes[1]["a"].shape == (2,)
    assert shapes[1]["a"].dtype == np.float32


def test_x64_avals(x64):
    cj = make_jaxpr(lambda x: x * 2)(np.ones(2))
    assert str(cj) == ("{ lambda ; a:f64[2]. let\n    b:f64[2] = mul a 2.0:f64[]\n"
                       "  in (b,) }")


def test_a_non_array_result_is_an_error():
    with pytest.raises(secant.SecantTypeError, match="not an array"):
        make_jaxpr(lambda x: "text")(1.0)


# --- test_util.check_grads -----------------------------------------------------------------------
def g(x, y):
    return jnp.sin(x) * jnp.exp(y) + x ** 2


Y = np.array([0.1, -0.4, 0.5], np.float32)


@pytest.mark.parametrize("modes", [("fwd",), ("rev",), ("fwd", "rev")])
def test_check_grads_passes_on_correct_derivatives(modes):
    check_grads(g, (X, Y), order=2, modes=modes)


def test_check_grads_third_order_in_float64(x64):
    check_grads(lambda x: jnp.sum(jnp.tanh(x) ** 2), (X.astype(np.float64),), order=3)


@secant.custom_jvp
def wrong_sin(x):
    return jnp.sin(x)


@wrong_sin.defjvp
def _wrong_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), 2.0 * jnp.cos(x) * t        # twice the true derivative


@pytest.mark.parametrize("modes, message", [(("fwd",), "JVP tangent"),
                                            (("rev",), "VJP cotangent projection")])
def test_check_grads_catches_a_wrong_custom_jvp(modes, message):
    with pytest.raises(AssertionError, match=message):
        check_grads(wrong_sin, (X,), order=1, modes=modes)


@secant.custom_jvp
def cube(x):
    return x ** 3


@cube.defjvp
def _cube_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return x ** 3, 3.0 * lax.stop_gradient(x) ** 2 * t     # right, but its own derivative is not


@pytest.mark.parametrize("modes", [("fwd",), ("rev",)])
def test_check_grads_order_two_goes_through_the_rule(x64, modes):
    """A rule right to first order whose own derivative is wrong: order 1 passes, order 2 not."""
    x = np.array([0.3, -0.7])
    check_grads(cube, (x,), order=1, modes=modes)
    with pytest.raises(AssertionError):
        check_grads(cube, (x,), order=2, modes=modes)


def _scaled_rule(scale):
    """3x with a jvp rule off by the factor `scale`."""
    @secant.custom_jvp
    def h(x):
        return 3.0 * x

    @h.defjvp
    def h_jvp(primals, tangents):
        return 3.0 * primals[0], 3.0 * scale * tangents[0]
    return h


def test_tolerances_are_jaxs():
    # float32: atol = rtol = 2e-3 (times the size): 1e-4 relative off passes, 5e-2 fails
    one = (np.float32(1.0),)
    check_grads(_scaled_rule(1.0 + 1e-4), one, order=1, modes=("fwd",))
    off = _scaled_rule(1.05)
    with pytest.raises(AssertionError):
        check_grads(off, one, order=1, modes=("fwd",))
    check_grads(off, one, order=1, modes=("fwd",), atol=0.2, rtol=0.2)


def test_check_jvp_and_check_vjp_directly():
    check_jvp(jnp.tanh, lambda p, t: secant.jvp(jnp.tanh, p, t), (X,))
    check_vjp(jnp.tanh, lambda *p: secant.vjp(jnp.tanh, *p), (X,))
    with pytest.raises(AssertionError):
        check_jvp(jnp.tanh, lambda p, t: secant.jvp(jnp.sin, p, t), (X,))

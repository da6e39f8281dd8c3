"""Issue 15 (norm15l): the outputs of a call unpacked into names (`p, p_dot = f_jvp_vmap(c,
c_dot)`, `v, aux = helper(x)`) are batched one by one, as the callee's own batched form
batches them (transformer/normalize.py _call_outputs_active): vmap of a jvp batches only the
tangent, a helper's (value, n) keeps n a Python int. Programs that unpack what generated or
user callees return (jvp/vjp/value_and_grad/linearize results, helpers returning (value, aux),
jacfwd(jacrev) of tuple outputs, vmap(hessian) of a helper returning a pair), each under grad,
hessian, jacfwd(grad), vmap(grad) and jit(vmap(grad)): gradients against float64 central
differences, Hessians against central differences of the checked gradient, vmap against a
Python loop, jit against eager."""
import numpy as np
import pytest

import secant
import secant.numpy as jnp
from others15_check import assert_trees_close, fd_grad
from user_programs import THIRD, checks


# --- helpers returning tuples, unpacked --------------------------------------------------------
def _value_and_count(x):
    return jnp.sum(jnp.sin(x) * x), x.shape[0]


def uses_count(x):
    """(value, n) of a helper: n a Python int read by range and as a divisor"""
    v, n = _value_and_count(x)
    total = v
    for i in range(n):
        total = total + x[i] ** 2 / n
    return total


def _moments(x):
    m = jnp.mean(x)
    return m, jnp.mean((x - m) ** 2)


def uses_moments(x):
    """(mean, variance), both differentiated"""
    m, var = _moments(x)
    return jnp.exp(m) * var + jnp.sum(jnp.cos(x)) * m


def _scaled_with_constant(x):
    return x * 2.0, 3.0


def uses_constant(x):
    """(array, Python float): the float stays a constant"""
    y, c = _scaled_with_constant(x)
    return jnp.sum(jnp.tanh(y)) * c + c * jnp.prod(jnp.cos(x))


def _inner_pair(x):
    return jnp.sin(x), jnp.cos(x)


def _outer_pair(x):
    s, c = _inner_pair(x)
    return s * c, x.shape[-1]


def uses_nested(x):
    """a helper unpacking a helper's pair, returning (value, length)"""
    sc, n = _outer_pair(x)
    return jnp.sum(sc ** 2) * n + jnp.sum(sc[: n - 1] * x[1:])


def _argmax_pair(x):
    return jnp.max(x), jnp.argmax(x)


def uses_index(x):
    """(max, argmax): the index picks an element"""
    m, i = _argmax_pair(x)
    return m * jnp.sum(x ** 2) + jnp.sin(x[i])


class _Box:
    def __init__(self, c):
        self.c = c


def _box_and_sum(x):
    return _Box(x * 1.5), jnp.sum(x)


def uses_object(x):
    """(an object built from x, a value): the object's field's shape read later"""
    b, s = _box_and_sum(x)
    return jnp.sum(b.c ** 3) / b.c.shape[0] + s ** 2


# --- transforms' results unpacked --------------------------------------------------------------
def _g(x):
    return jnp.sin(x) * jnp.exp(0.3 * x)


_V = np.array([0.3, -0.7, 1.1])


def uses_jvp(x):
    y, y_dot = secant.jvp(_g, (x,), (jnp.asarray(_V),))
    return jnp.sum(y * y_dot) + jnp.sum(y ** 2)


def uses_vjp(x):
    y, pullback = secant.vjp(_g, x)
    (g,) = pullback(jnp.cos(y))
    return jnp.sum(g * x) + jnp.sum(y)


def _scalar(x):
    return jnp.sum(jnp.sin(x) ** 2) + jnp.prod(jnp.cos(x))


def uses_value_and_grad(x):
    val, gr = secant.value_and_grad(_scalar)(x)
    return val * jnp.sum(gr ** 2)


def uses_linearize(x):
    y, f_lin = secant.linearize(_g, x)
    return jnp.sum(f_lin(jnp.asarray(_V)) * y)


def _two_outputs(x):
    return jnp.sum(jnp.sin(x) * x ** 2), jnp.sum(jnp.exp(0.2 * x))


def uses_jacfwd_jacrev_tuple(x):
    """jacfwd(jacrev) of a function returning a pair: a pair of Hessians"""
    ha, hb = secant.jacfwd(secant.jacrev(_two_outputs))(x)
    return jnp.sum(ha * hb) + jnp.trace(ha)


def _pair_of(x):
    return jnp.sin(x) * x, jnp.cos(x) ** 2


def uses_vmapped_pair(x):
    """vmap of a helper returning a pair, unpacked"""
    xs = jnp.stack([x, 2.0 * x])
    a, b = secant.vmap(_pair_of)(xs)
    return jnp.sum(a * b) + jnp.sum(a[1])


def _scalar_pair(x):
    return jnp.sum(jnp.sin(x) * x) * jnp.sum(x ** 2)


def uses_vmapped_hessian(x):
    """vmap(hessian) of a scalar function, inside the function differentiated"""
    xs = jnp.stack([x, x ** 2])
    hs = secant.vmap(secant.hessian(_scalar_pair))(xs)
    return jnp.sum(hs[0] * hs[1])


def uses_grad_with_aux(x):
    """grad(has_aux=True): (gradient, aux) unpacked"""
    g, aux = secant.grad(lambda v: (jnp.sum(jnp.sin(v) * v), v ** 2), has_aux=True)(x)
    return jnp.sum(g * aux)


_ALL = ("hessian", "jacfwd(grad)", "vmap(grad)", "jit(vmap(grad))")
_SOME = ("hessian", "vmap(grad)")
# (program, the transforms it is checked under besides grad and vmap; the costly higher
# orders of the transforms' own results run under fewer, to keep the file short)
PROGRAMS = [(uses_count, _ALL), (uses_moments, _ALL), (uses_constant, _ALL),
            (uses_nested, _ALL), (uses_index, _SOME), (uses_object, _ALL), (uses_jvp, _ALL),
            (uses_vjp, _SOME), (uses_value_and_grad, _SOME), (uses_linearize, _SOME),
            (uses_jacfwd_jacrev_tuple, ("vmap(grad)",)), (uses_vmapped_pair, _SOME),
            (uses_vmapped_hessian, ()), (uses_grad_with_aux, _SOME)]
_X = np.array([0.4, -0.9, 1.3])
_XS = np.stack([_X, 0.5 * _X + 0.1, -_X])


@pytest.mark.parametrize("f, transforms", PROGRAMS, ids=[f.__name__ for f, _ in PROGRAMS])
def test_program(x64, f, transforms):
    g = secant.grad(f)
    assert_trees_close(g(_X), fd_grad(f, (_X,)), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.vmap(f)(_XS), np.stack([np.asarray(f(x)) for x in _XS]),
                               rtol=1e-12, atol=1e-12)
    if "hessian" in transforms or "jacfwd(grad)" in transforms:
        want_h = np.stack([fd_grad(lambda v, i=i: g(v)[i], (_X,)) for i in range(_X.size)])
    if "hessian" in transforms:
        assert_trees_close(secant.hessian(f)(_X), want_h, rtol=1e-5, atol=1e-6)
    if "jacfwd(grad)" in transforms:
        assert_trees_close(secant.jacfwd(g)(_X), want_h, rtol=1e-5, atol=1e-6)
    want = np.stack([np.asarray(g(x)) for x in _XS])
    if "vmap(grad)" in transforms:
        np.testing.assert_allclose(secant.vmap(g)(_XS), want, rtol=1e-10, atol=1e-12)
    if "jit(vmap(grad))" in transforms:
        np.testing.assert_allclose(secant.jit(secant.vmap(g))(_XS), want, rtol=1e-10, atol=1e-12)


def test_hessian_by_jacfwd_of_jacrev_of_prod(x64):
    """jd_hvp_by_hessian_matrix under hessian (4th order through prod's rule): in the vmap of
    cumprod's jvp `align_out, align_out_dot = align_jvp_vmap(t, ..., t_dot, ...)` batches
    only the tangent; the normaliser marked align_out batched too, and read the axis of a
    cumsum one level too deep (axis -1 out of bounds)"""
    case = next(c for c in THIRD if c.name == "jd_hvp_by_hessian_matrix")
    checks.run(case, "hessian")

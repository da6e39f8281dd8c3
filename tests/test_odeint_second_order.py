"""Second derivatives through secant.experimental.ode.odeint (issue 15), as JAX: reverse over
reverse differentiates odeint's own adjoint rules (the forward rule calls the custom_vjp
function itself; the backward rule is code the transforms read, whose
solve is odeint again). Against closed forms: for dy/dt = -k y cos(t), y(t) = y0 exp(-k sin t).
Forward mode goes beyond JAX (whose odeint refuses jvp): the sensitivity equations, solved by
odeint; so jvp, hessian (jacfwd of jacrev) and jacfwd of grad work too, for a pytree state as
well (raveled into one array, as JAX's odeint does)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.experimental.ode import odeint

TS = np.array([0.0, 0.4, 1.1])
S1, S2 = np.sin(TS[1]), np.sin(TS[2])


def rhs(y, t, k):
    return -k * y * snp.cos(t)


def loss(y0, k):
    """y(T)^2 = y0^2 exp(-2 k sin T)."""
    return odeint(rhs, y0, TS, k)[-1] ** 2


def loss_hessian(y0, k):
    e = np.exp(-2 * k * S2)
    return np.array([[2 * e, -4 * S2 * y0 * e], [-4 * S2 * y0 * e, 4 * S2 ** 2 * y0 ** 2 * e]])


def test_grad_of_grad_against_the_closed_form(x64):
    y0, k = 0.8, 0.7
    h = loss_hessian(y0, k)
    for i in range(2):
        for j in range(2):
            d2 = secant.grad(secant.grad(loss, argnums=i), argnums=j)(y0, k)
            np.testing.assert_allclose(d2, h[i, j], rtol=1e-6)


def test_jacrev_of_grad_with_a_vector_state_and_two_times(x64):
    def f(x):       # y0 = x[0], k = x[1], and x[2] weighs the state at the middle time
        ys = odeint(rhs, snp.stack([x[0], 2 * x[0]]), TS, x[1])
        return snp.sum(ys[-1]) + x[2] * ys[1, 0]
    x = np.array([0.3, -0.7, 1.1])
    y0, k, w = x
    e1, e2 = np.exp(-k * S1), np.exp(-k * S2)
    want = np.array([[0, -3 * S2 * e2 - w * S1 * e1, e1],
                     [-3 * S2 * e2 - w * S1 * e1, 3 * y0 * S2 ** 2 * e2 + w * y0 * S1 ** 2 * e1,
                      -y0 * S1 * e1],
                     [e1, -y0 * S1 * e1, 0]])
    np.testing.assert_allclose(secant.jacrev(secant.grad(f))(x), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(secant.jacrev(secant.jacrev(f))(x), want, rtol=1e-6, atol=1e-9)


def test_grad_of_grad_under_jit_and_vmap(x64):
    d2k = secant.grad(secant.grad(loss, argnums=1), argnums=1)
    ks = np.array([0.3, 0.9])
    loop = [d2k(0.8, k) for k in ks]
    np.testing.assert_allclose(loop, [loss_hessian(0.8, k)[1, 1] for k in ks], rtol=1e-6)
    np.testing.assert_allclose(secant.jit(d2k)(0.8, 0.9), loop[1], rtol=1e-10)
    np.testing.assert_allclose(secant.vmap(d2k, in_axes=(None, 0))(0.8, ks), loop, rtol=1e-10)


def _tree_rhs(s, t, k):
    return {"a": -k * s["a"]}


def test_second_derivative_of_a_pytree_state(x64):
    """(a pytree state is raveled into one array, as JAX's odeint does: every composition of an
    array state works for it; tests/test_odeint_compositions.py)"""
    def tree_loss(k):
        return odeint(_tree_rhs, {"a": 1.0}, TS, k)["a"][-1]
    np.testing.assert_allclose(secant.grad(tree_loss)(0.7), -TS[-1] * np.exp(-0.7 * TS[-1]),
                               rtol=1e-6)
    np.testing.assert_allclose(secant.grad(secant.grad(tree_loss))(0.7),
                               TS[-1] ** 2 * np.exp(-0.7 * TS[-1]), rtol=1e-6)


def test_jvp_against_the_closed_form(x64):
    """Tangents of y0, k, and of the output and initial times."""
    y0, k = 0.8, 0.7
    e = np.exp(-k * S2)

    def f(y0, k, ts):
        return odeint(rhs, y0, ts, k)[-1]
    ts = snp.asarray(TS)
    for dots, want in [((1.0, 0.0, 0 * TS), e), ((0.0, 1.0, 0 * TS), -y0 * S2 * e),
                       ((0.0, 0.0, np.array([0.0, 0.0, 1.0])), -k * np.cos(TS[2]) * y0 * e),
                       ((0.0, 0.0, np.array([1.0, 0.0, 0.0])), k * y0 * e)]:
        out, out_dot = secant.jvp(f, (y0, k, ts), tuple(snp.asarray(d) for d in dots))
        np.testing.assert_allclose(out, y0 * e, rtol=1e-7)
        np.testing.assert_allclose(out_dot, want, rtol=1e-6)


@pytest.mark.parametrize("how", ["hessian", "jacfwd_jacrev", "jacfwd_grad", "jit_hessian"])
def test_forward_over_reverse_against_the_closed_form(x64, how):
    def f(x):
        return loss(x[0], x[1])
    build = {"hessian": secant.hessian,
             "jacfwd_jacrev": lambda f: secant.jacfwd(secant.jacrev(f)),
             "jacfwd_grad": lambda f: secant.jacfwd(secant.grad(f)),
             "jit_hessian": lambda f: secant.jit(secant.hessian(f))}[how]
    np.testing.assert_allclose(build(f)(np.array([0.8, 0.7])), loss_hessian(0.8, 0.7),
                               rtol=1e-6)


class _UnhashableRhs:
    __hash__ = None         # (an equality-comparing callable object, as dataclasses are)

    def __eq__(self, other):
        return isinstance(other, _UnhashableRhs)

    def __call__(self, y, t, k):
        return -k * y


def test_an_unhashable_callable_as_func(x64):
    """func is wrapped once per function (a cache); an unhashable one is wrapped per call."""
    ts = np.array([0.0, 1.0])
    np.testing.assert_allclose(odeint(_UnhashableRhs(), 1.0, ts, 0.5)[-1], np.exp(-0.5),
                               rtol=1e-7)
    np.testing.assert_allclose(
        secant.grad(lambda k: odeint(_UnhashableRhs(), 1.0, ts, k)[-1])(0.5), -np.exp(-0.5),
        rtol=1e-7)

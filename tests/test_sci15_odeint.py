"""Issue 15: odeint under vmap (batched initial states, parameters and time grids; one solve per
example, as JAX's batched while loops), vmap of its gradient and gradient of its vmap, jit of
them, and a rhs closing over differentiated values (closure-converted into odeint's *args, as
JAX's closure_convert). Against Python loops and float64 central differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.experimental.ode import odeint

TS = np.array([0.0, 0.4, 1.1, 2.0])
KS = np.array([0.3, 0.9, 1.7])


def rhs(y, t, k):
    return -k * y * snp.cos(t)


def spring(y, t, k):
    return snp.stack([y[1], -k * y[0]])


def final(k):
    return odeint(rhs, 1.0, TS, k)[-1]


def _central(f, x, eps=1e-5):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def exact_grad(k):
    """d/dk of y(T) for rhs: y = exp(-k sin t)."""
    return -np.sin(TS[-1]) * np.exp(-k * np.sin(TS[-1]))




def test_vmap_against_a_loop(x64):
    np.testing.assert_allclose(secant.vmap(lambda k: odeint(rhs, 1.0, TS, k))(KS),
                               [odeint(rhs, 1.0, TS, k) for k in KS], rtol=1e-12)
    y0s = np.array([[1.0, 0.0], [0.5, -0.2], [0.0, 1.0]])
    np.testing.assert_allclose(secant.vmap(lambda y: odeint(spring, y, TS, 2.0))(y0s),
                               [odeint(spring, y, TS, 2.0) for y in y0s], rtol=1e-12)
    both = secant.vmap(lambda y, k: odeint(spring, y, TS, k))(y0s, KS)
    np.testing.assert_allclose(both, [odeint(spring, y, TS, k) for y, k in zip(y0s, KS)],
                               rtol=1e-12)
    grids = np.stack([TS, 2 * TS, 0.5 * TS])
    np.testing.assert_allclose(secant.vmap(lambda t: odeint(rhs, 1.0, t, 0.7))(grids),
                               [odeint(rhs, 1.0, t, 0.7) for t in grids], rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(final))(KS), [final(k) for k in KS],
                               rtol=1e-10)


def test_vmap_of_grad_and_grad_of_vmap(x64):
    loop = [secant.grad(final)(k) for k in KS]
    np.testing.assert_allclose(loop, exact_grad(KS), rtol=1e-6)
    np.testing.assert_allclose(secant.vmap(secant.grad(final))(KS), loop, rtol=1e-10)
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(final)))(KS), loop,
                               rtol=1e-10)
    np.testing.assert_allclose(
        secant.grad(lambda ks: snp.sum(secant.vmap(final)(ks)))(KS), loop, rtol=1e-10)
    y0s = np.array([[1.0, 0.0], [0.5, -0.2]])
    grads = secant.vmap(secant.grad(lambda y: odeint(spring, y, TS, 2.0, rtol=1e-12, atol=1e-12)[-1, 0]))(y0s)
    w, T = np.sqrt(2.0), TS[-1]         # y0(T) = a cos(wT) + b sin(wT) / w
    np.testing.assert_allclose(grads, np.broadcast_to([np.cos(w * T), np.sin(w * T) / w],
                                                      grads.shape), rtol=1e-8)


def closure(k, w):
    def f(y, t, a):                 # reads k and w from the caller: closure-converted
        return -k * y + w * a * snp.sin(t)
    return odeint(f, 1.0, TS, 0.3, rtol=1e-12, atol=1e-12)[-1]


def test_rhs_closing_over_differentiated_values(x64):
    lam = lambda k: odeint(lambda y, t: -k * y * snp.cos(t), 1.0, TS)[-1]     # noqa: E731
    np.testing.assert_allclose(lam(0.7), final(0.7), rtol=1e-12)
    np.testing.assert_allclose(secant.grad(lam)(0.7), exact_grad(0.7), rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(lam))(0.7), secant.grad(final)(0.7),
                               rtol=1e-10)
    np.testing.assert_allclose(secant.vmap(lam)(KS), [final(k) for k in KS], rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.grad(lam))(KS),
                               [secant.grad(final)(k) for k in KS], rtol=1e-10)
    gk, gw = secant.grad(closure, argnums=(0, 1))(0.7, 1.3)
    np.testing.assert_allclose(gk, _central(lambda k: float(closure(k, 1.3)), 0.7), rtol=1e-6)
    np.testing.assert_allclose(gw, _central(lambda w: float(closure(0.7, w)), 1.3), rtol=1e-6)


def test_vmap_of_vmap_against_a_loop(x64):
    """A grid of initial states x parameters, and of parameters in two axes: the per-example
    rule, batched again, runs once per outer example too."""
    y0s = np.array([[1.0, 0.0], [0.5, -0.2], [0.0, 1.0]])

    def spring_final(y0, k):
        return odeint(spring, y0, TS, k)[-1]
    got = secant.vmap(secant.vmap(spring_final, in_axes=(0, None)), in_axes=(None, 0))(y0s, KS)
    np.testing.assert_allclose(got, [[spring_final(y, k) for y in y0s] for k in KS],
                               rtol=1e-12)
    grid = np.stack([KS, 2 * KS])
    loop = [[final(k) for k in row] for row in grid]
    np.testing.assert_allclose(loop, np.exp(-grid * np.sin(TS[-1])), rtol=1e-6)
    np.testing.assert_allclose(secant.vmap(secant.vmap(final))(grid), loop, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.vmap(final)))(grid), loop,
                               rtol=1e-10)
    np.testing.assert_allclose(secant.vmap(secant.vmap(secant.vmap(final)))(
        np.stack([grid, grid])), [loop, loop], rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.vmap(secant.grad(final)))(grid),
                               [[secant.grad(final)(k) for k in row] for row in grid],
                               rtol=1e-10)


def test_refused_compositions_are_clear():
    # (grad of grad works since odeint2: tests/test_odeint_second_order.py)
    with pytest.raises(secant.SecantError, match="func, rtol"):
        secant.vmap(lambda tol: odeint(rhs, 1.0, TS, 0.5, rtol=tol))(np.array([1e-6, 1e-8]))

"""secant.experimental.ode.odeint as jax.experimental.ode.odeint: dopri5 values against
scipy.integrate.solve_ivp, gradients (the adjoint method) against float64 central differences
for args, y0 and t, jit against eager, pytree states, and JAX's errors."""
import numpy as np
import pytest
import scipy.integrate

import secant
import secant.numpy as snp
from secant.experimental.ode import odeint

T = np.linspace(0.0, 3.0, 5)
Y0 = np.array([1.0, 0.5])


def lotka(y, t, a, b):
    return snp.stack([a * y[0] - b * y[0] * y[1], -y[1] + 0.5 * y[0] * y[1]]) + 0.1 * snp.sin(t)


def decay(y, t, k):
    return -k * y


def loss(a, b, y0, t):
    ys = odeint(lotka, y0, t, a, b, rtol=1e-10, atol=1e-10)
    return snp.sum(ys ** 2 * snp.arange(1.0, ys.shape[0] + 1.0)[:, None])


def _fd(f, x, eps=1e-5):
    x = np.asarray(x, float)
    out = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[j] = eps
        out[j] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return out


def test_values_against_solve_ivp(x64):
    for rtol in (1.4e-8, 1e-11):
        ys = odeint(lotka, Y0, T, 1.1, 0.4, rtol=rtol, atol=rtol)
        ref = scipy.integrate.solve_ivp(lambda t, y: np.asarray(lotka(y, t, 1.1, 0.4)),
                                        (0, 3), Y0, t_eval=T, rtol=1e-12, atol=1e-12)
        assert ys.shape == (5, 2) and ys.dtype == snp.float64
        np.testing.assert_array_equal(ys[0], Y0)
        np.testing.assert_allclose(ys, ref.y.T, atol=2000 * rtol)
    np.testing.assert_allclose(odeint(decay, Y0, T, 0.7), np.exp(-0.7 * T)[:, None] * Y0,
                               rtol=1e-7)


def test_float32_default():
    ys = odeint(decay, Y0.astype(np.float32), T.astype(np.float32), 0.7)
    assert ys.dtype == snp.float32
    np.testing.assert_allclose(ys, np.exp(-0.7 * T)[:, None] * Y0, rtol=1e-5)


def test_adjoint_gradients_against_differences(x64):
    a, b = 1.1, 0.4
    ga, gb, gy0, gt = secant.jit(secant.grad(loss, argnums=(0, 1, 2, 3)))(a, b, Y0, T)
    fast = secant.jit(loss)             # (the differences: one compile, many solves)
    np.testing.assert_allclose(ga, _fd(lambda v: fast(v, b, Y0, T), a), rtol=1e-6)
    np.testing.assert_allclose(gb, _fd(lambda v: fast(a, v, Y0, T), b), rtol=1e-6)
    np.testing.assert_allclose(gy0, _fd(lambda v: fast(a, b, v, T), Y0), rtol=1e-6)
    np.testing.assert_allclose(gt, _fd(lambda v: fast(a, b, Y0, v), T), rtol=1e-5, atol=1e-6)


def test_eager_grad_is_the_jitted_one(x64):
    def coarse(a, y0):
        return snp.sum(odeint(lotka, y0, snp.array([0.0, 0.5, 1.0]), a, 0.4, rtol=1e-6) ** 2)
    eager = secant.grad(coarse, argnums=(0, 1))(1.1, Y0)
    jitted = secant.jit(secant.grad(coarse, argnums=(0, 1)))(1.1, Y0)
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(e, j, rtol=1e-10)


def test_jit_and_jit_of_grad(x64):
    run = secant.jit(lambda y0, k: odeint(decay, y0, T, k))
    np.testing.assert_allclose(run(Y0, 0.7), odeint(decay, Y0, T, 0.7), rtol=1e-12)
    g = secant.jit(secant.grad(lambda k: snp.sum(odeint(decay, Y0, T, k)[-1])))(0.7)
    np.testing.assert_allclose(g, -3.0 * 1.5 * np.exp(-0.7 * 3.0), rtol=1e-6)


def _tree_rhs(s, t, w):
    return {"a": -s["a"], "b": s["a"] * w}


def test_pytree_state(x64):
    w = np.array([2.0, 1.0])
    out = odeint(_tree_rhs, {"a": 1.0, "b": np.array([0.0, 1.0])}, T, w)
    np.testing.assert_allclose(out["a"], np.exp(-T), rtol=1e-7)
    np.testing.assert_allclose(out["b"], np.array([0.0, 1.0]) + (1 - np.exp(-T))[:, None] * w,
                               rtol=1e-7)

    def tree_loss(a0, w):
        return snp.sum(odeint(_tree_rhs, {"a": a0, "b": snp.array([0.0, 1.0])}, T, w)["b"][-1])
    ga, gw = secant.grad(tree_loss, argnums=(0, 1))(1.0, w)
    np.testing.assert_allclose(ga, 3.0 * (1 - np.exp(-3.0)), rtol=1e-6)
    np.testing.assert_allclose(gw, np.full(2, 1 - np.exp(-3.0)), rtol=1e-6)


def test_errors():
    # (jvp works since odeint2, beyond JAX, for a pytree state since odeint3:
    # tests/test_odeint_second_order.py, tests/test_odeint_compositions.py)
    with pytest.raises(secant.SecantError, match="must be arrays"):
        odeint(decay, Y0, T, "fast")
    # (vmap of odeint, and vmap of vmap, work since issue 15: tests/test_sci15_odeint.py)

"""secant.scipy.optimize.minimize(method="BFGS") as jax.scipy.optimize.minimize: the minimum
against scipy.optimize.minimize, the OptimizeResults fields, options and errors, jit against
eager."""
import numpy as np
import pytest
import scipy.optimize

import secant
import secant.numpy as snp
from secant.scipy.optimize import OptimizeResults, minimize


def rosen(x):
    return snp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def quadratic(x, a, b):
    return 0.5 * x @ a @ x - b @ x


def _scipy(fun, x0, args=()):
    return scipy.optimize.minimize(lambda x: float(fun(x, *args)), x0, method="BFGS",
                                   jac=lambda x: np.asarray(secant.grad(fun)(x, *args)),
                                   options={"gtol": 1e-8})


@pytest.mark.parametrize("x0", [[-1.2, 1.0], [-1.2, 1.0, 0.5, -0.3], [2.0, 2.0, 2.0]])
def test_rosenbrock_against_scipy(x64, x0):
    x0 = np.array(x0)
    r = minimize(rosen, x0, method="BFGS")
    assert isinstance(r, OptimizeResults)
    want = _scipy(rosen, x0)
    np.testing.assert_allclose(r.x, want.x, atol=1e-5)
    np.testing.assert_allclose(r.x, np.ones_like(x0), atol=1e-5)
    assert bool(r.success) and int(r.status) == 0
    np.testing.assert_allclose(r.fun, rosen(r.x), rtol=1e-12)
    np.testing.assert_allclose(r.jac, secant.grad(rosen)(r.x), rtol=1e-9, atol=1e-12)
    assert np.max(np.abs(r.jac)) < 1e-5                 # (gtol, in the infinity norm)
    assert 0 < int(r.nit) <= int(r.nfev) and int(r.njev) == int(r.nfev)
    assert r.hess_inv.shape == (x0.size, x0.size)


def test_quadratic_with_args_and_its_inverse_hessian(x64):
    rng = np.random.RandomState(0)
    m = rng.randn(4, 4)
    a, b = m @ m.T + 4 * np.eye(4), rng.randn(4)
    r = minimize(quadratic, np.zeros(4), args=(a, b), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(r.x, np.linalg.solve(a, b), rtol=1e-8)
    np.testing.assert_allclose(r.x, _scipy(quadratic, np.zeros(4), (a, b)).x, rtol=1e-6)
    np.testing.assert_allclose(r.hess_inv, np.linalg.inv(a), rtol=0.05, atol=0.02)


def test_jit_matches_eager(x64):
    x0 = np.array([-1.2, 1.0, 0.5])
    eager = minimize(rosen, x0, method="BFGS")
    jitted = secant.jit(lambda x: minimize(rosen, x, method="BFGS"))(x0)
    for field in ("nit", "nfev", "status", "success"):
        assert int(getattr(jitted, field)) == int(getattr(eager, field))
    for field in ("x", "fun", "jac", "hess_inv"):     # (rounding over ~50 BFGS updates)
        np.testing.assert_allclose(getattr(jitted, field), getattr(eager, field), rtol=1e-5,
                                   atol=1e-9)


def test_maxiter_and_converged_start(x64):
    r = minimize(rosen, np.array([-1.2, 1.0]), method="bfgs", options={"maxiter": 3})
    assert int(r.nit) == 3 and int(r.status) == 1 and not bool(r.success)
    r = minimize(rosen, np.ones(3), method="BFGS")
    assert int(r.nit) == 0 and bool(r.success) and int(r.nfev) == 1


def test_float32_by_default():
    r = minimize(rosen, np.array([0.5, 0.5], np.float32), method="BFGS")
    assert r.x.dtype == snp.float32
    np.testing.assert_allclose(r.x, [1.0, 1.0], atol=1e-2)


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "Nelder-Mead"}, "not recognized"),
    ({"method": "BFGS", "args": [1.0]}, "tuple"),
    ({"method": "BFGS", "options": {"xtol": 1.0}}, "options"),
])
def test_errors(kwargs, match):
    with pytest.raises(secant.SecantError, match=match):
        minimize(rosen, np.zeros(2), **kwargs)
    with pytest.raises(secant.SecantError, match="one-dimensional"):
        minimize(rosen, np.zeros((2, 2)), method="BFGS")

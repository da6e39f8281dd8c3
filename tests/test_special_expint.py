"""scipy.special exp1 / expi / expn (secant/scipy/special_expint.py) and bernoulli against
SciPy to 1e-13 across both methods' ranges and at the edges (0, inf, negative, nan); first and
second derivatives against closed forms and float64 finite differences. (Values at random points,
jit, vmap, grad and jvp: tests/library_cases/scipy_special.py.)"""
import numpy as np
import pytest
import scipy.special as ss

import secant
from secant.scipy import special

X = np.array([0.0, 1e-8, 0.01, 0.5, 1.0, 1.0000001, 1.5, 3.0, 10.0, 35.0, 37.0, 50.0, 200.0,
              700.0, -0.5, -3.0, -40.0, np.nan, np.inf])


@pytest.mark.parametrize("name", ["exp1", "expi"])
def test_values_and_edges(x64, name):
    got, want = np.asarray(getattr(special, name)(X)), getattr(ss, name)(X)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(secant.jit(getattr(special, name))(X)), want,
                               rtol=1e-13)


def test_expn_orders_and_edges(x64):
    n = np.array([0, 1, 2, 3, 5, 10, 30])[:, None]
    x = np.array([0.0, 0.1, 0.9, 1.0, 1.2, 4.0, 20.0, 80.0, np.inf])[None]
    np.testing.assert_allclose(np.asarray(special.expn(n, x)), ss.expn(n, x), rtol=1e-13)
    bad = np.asarray(special.expn(np.array([-1, 2, 1]), np.array([1.0, -1.0, np.nan])))
    assert np.isnan(bad).all()          # negative order, negative x, nan: nan as SciPy


def test_float32(x64_or_not):
    x = np.float32([-1.0, 0.5, 3.0, 20.0])
    np.testing.assert_allclose(np.asarray(special.expi(x)), ss.expi(x.astype(np.float64)),
                               rtol=2e-6)
    np.testing.assert_allclose(np.asarray(special.exp1(x[1:])),
                               ss.exp1(x[1:].astype(np.float64)), rtol=2e-6)


@pytest.mark.parametrize("name, slope, xs", [
    ("exp1", lambda x: -np.exp(-x) / x, [0.3, 1.0, 2.5, 40.0]),
    ("expi", lambda x: np.exp(x) / x, [-2.0, 0.3, 1.0, 2.5, 40.0]),
])
def test_derivatives(x64, name, slope, xs):
    fn = getattr(special, name)
    xs = np.array(xs)
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(fn))(xs)), slope(xs),
                               rtol=1e-13)
    d2 = secant.grad(secant.grad(fn))(1.3)
    g = secant.grad(fn)
    fd = (float(g(1.3 + 1e-5)) - float(g(1.3 - 1e-5))) / 2e-5
    assert float(d2) == pytest.approx(fd, rel=1e-7)


def test_expn_derivative_is_minus_the_next_lower_order(x64):
    x = np.array([0.2, 0.7, 2.0, 6.0])
    for n in (1, 3, 7):
        got = secant.vmap(secant.grad(lambda t, n=n: special.expn(n, t)))(x)
        np.testing.assert_allclose(np.asarray(got), -ss.expn(n - 1, x), rtol=1e-12)
    got = secant.vmap(secant.grad(lambda t: special.expn(0, t)))(x)
    np.testing.assert_allclose(np.asarray(got), -np.exp(-x) * (x + 1) / x ** 2, rtol=1e-12)


def test_expn_order_is_not_differentiable():
    with pytest.raises(secant.SecantError, match="n"):
        secant.grad(lambda n: special.expn(n, 1.5))(2.0)


def test_bernoulli_numbers(x64):
    got = np.asarray(special.bernoulli(12))
    np.testing.assert_allclose(got, ss.bernoulli(12), rtol=1e-11)     # (SciPy's: to 2e-12)
    assert got[4] == -1 / 30 and got[12] == -691 / 2730 and got[1] == -0.5    # exact
    assert np.asarray(special.bernoulli(0)).tolist() == [1.0]
    with pytest.raises(ValueError, match="non-negative"):
        special.bernoulli(-1)

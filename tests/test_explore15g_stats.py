"""secant.scipy.stats at the edges (explore15g): a quantile outside [0, 1] and a nan input give
nan (they gave finite numbers), a Python-float scale of 0 gives SciPy's nan (it raised Python's
ZeroDivisionError from inside secant). Values against scipy.stats, eager and under jit."""
import warnings

import numpy as np
import pytest
import scipy.stats as ss

import secant
from secant.scipy import stats


@pytest.mark.parametrize("name, args", [("expon", ()), ("cauchy", ()), ("pareto", (2.0,)),
                                        ("norm", ()), ("logistic", ()), ("uniform", ())])
@pytest.mark.parametrize("method", ["ppf", "isf"])
def test_quantiles_outside_the_unit_interval_are_nan(x64, name, args, method):
    dist = getattr(stats, name)
    if not hasattr(dist, method):
        pytest.skip(f"{name} has no {method}")
    q = np.array([np.nan, -0.1, 1.1, 0.0, 0.3, 1.0])
    want = getattr(getattr(ss, name), method)(q, *args)
    for f in (getattr(dist, method), secant.jit(getattr(dist, method))):
        np.testing.assert_allclose(np.asarray(f(q, *args)), want, rtol=1e-12)


@pytest.mark.parametrize("method", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"])
def test_pareto_keeps_nan(x64, method):
    # pareto's support test (y >= 1) read nan as outside: logpdf(nan) was -inf, sf(nan) 1
    x = np.array([np.nan, 0.5, 1.0, 3.0, np.inf])
    want = getattr(ss.pareto, method)(x, 2.0)
    for f in (getattr(stats.pareto, method), secant.jit(getattr(stats.pareto, method))):
        np.testing.assert_allclose(np.asarray(f(x, 2.0)), want, rtol=1e-12)


@pytest.mark.parametrize("name, args", [("norm", ()), ("t", (3.0,)), ("gamma", (2.5,)),
                                        ("expon", ()), ("logistic", ()), ("cauchy", ()),
                                        ("laplace", ()), ("chi2", (3.0,)), ("pareto", (2.0,)),
                                        ("gumbel_r", ()), ("gumbel_l", ())])
def test_python_float_scale_zero_is_nan_not_zerodivisionerror(x64, name, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = ss.__dict__[name].logpdf(1.0, *args, 0.0, 0.0)
        got = getattr(stats, name).logpdf(1.0, *args, 0.0, 0.0)
    assert np.isnan(want) and np.isnan(np.asarray(got))


def test_gradient_through_scale_unchanged(x64):
    # d/dscale of norm.logpdf(x, 0, s) = (x^2 / s^2 - 1) / s, against the closed form
    x, s = 1.5, 0.7
    g = float(secant.grad(lambda s: stats.norm.logpdf(x, 0.0, s))(s))
    assert g == pytest.approx((x * x / s ** 2 - 1) / s, rel=1e-12)

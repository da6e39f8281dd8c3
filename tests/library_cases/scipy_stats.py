"""secant.scipy.stats against scipy.stats (tests/test_library_cases.py runs these)."""
import numpy as np
import scipy.stats as st

from secant.scipy import stats
from tests.library_cases import Case, positive


def probability(rng, shape, dtype):
    return rng.uniform(0.05, 0.95, shape).astype(dtype)


def wide(rng, shape, dtype):
    return rng.uniform(-6, 6, shape).astype(dtype)


A3 = np.array([0.5, 2.0, 7.5])          # fixed shape parameters
K3 = np.array([0.0, 2.0, 5.0])          # counts
K01 = np.array([0.0, 1.0, 1.0])
N3 = np.array([3.0, 5.0, 9.0])

_DATA = np.random.default_rng(5).normal(size=(2, 7))
KDE, ST_KDE = stats.gaussian_kde(_DATA), st.gaussian_kde(_DATA)
KDE_1D, ST_KDE_1D = stats.gaussian_kde(_DATA[0], "silverman"), st.gaussian_kde(_DATA[0], "silverman")
_W = np.arange(1.0, 8.0)
KDE_WEIGHTED = stats.gaussian_kde(_DATA, 0.6, weights=_W)
ST_KDE_WEIGHTED = st.gaussian_kde(_DATA, 0.6, weights=_W)


def _family(dist, name, wrap, shapes, make=positive, ref=None, **kw):
    """A case calling secant's and scipy's `dist.name` the same way: wrap(f) returns the lambda
    (so `f` is a closure cell the transforms resolve when they read it)."""
    fn = getattr(getattr(stats, dist), name)
    want = getattr(getattr(st, ref or dist), name)
    return Case(f"scipy.stats.{dist}.{name}", wrap(fn), wrap(want), shapes, make, **kw)


def _location_scale(name, dist, ref, make=positive, **kw):
    """fn(x, loc, scale) of one distribution's function, against scipy's."""
    return _family(dist, name, lambda f: lambda x, loc, scale: f(x, loc, scale),
                   [(3,), (3,), (3,)], make, ref=ref, **kw)


CASES = (
    [_location_scale(n, "norm", "norm") for n in
     ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")]
    + [_location_scale(n, "norm", "norm", probability) for n in ("ppf", "isf")]
    + [Case("scipy.stats.norm.logcdf", lambda x: stats.norm.logcdf(8 * x),
            lambda x: st.norm.logcdf(8 * x), [(2, 3)], wide, id="tails"),
       Case("scipy.stats.norm.logsf", lambda x: stats.norm.logsf(8 * x),
            lambda x: st.norm.logsf(8 * x), [(2, 3)], wide, id="tails")]
    + [_family("t", n, lambda f: lambda x, df, s: f(x, df, 0.3, s), [(3,), (3,), (3,)])
       for n in ("logpdf", "pdf")]
    + [_family("beta", n, lambda f: lambda x, a, b: f(x, a + 1, b + 0.5), [(3,), (3,), (3,)],
               probability) for n in ("logpdf", "pdf")]
    + [_family("gamma", n, lambda f: lambda x, a, s: f(x, a, 0.1, s), [(3,), (3,), (3,)])
       for n in ("logpdf", "pdf")]
    + [_family("gamma", n, lambda f: lambda x, s: f(4 * x, A3, 0.1, s), [(3,), (3,)])
       for n in ("cdf", "logcdf", "sf", "logsf")]
    + [_family("gamma", n, lambda f: lambda x, a: f(4 * x, a), [(3,), (3,)], id="shape") for n in ("cdf", "sf")]
    + [_family("chi2", n, lambda f: lambda x, df, s: f(x, df + 1, 0.1, s), [(3,), (3,), (3,)])
       for n in ("logpdf", "pdf")]
    + [_family("chi2", n, lambda f: lambda x, s: f(4 * x, 2 * A3, 0.1, s), [(3,), (3,)])
       for n in ("cdf", "logcdf", "sf", "logsf")]
    + [_family("dirichlet", n, lambda f: lambda x, alpha: f(x / np.sum(x), alpha), [(3,), (3,)])
       for n in ("logpdf", "pdf")]
    + [Case("scipy.stats.dirichlet.logpdf",
            lambda x, alpha: stats.dirichlet.logpdf(x / np.sum(x, axis=0), alpha),
            lambda x, alpha: np.array([st.dirichlet.logpdf(c / c.sum(), alpha) for c in x.T]),
            [(3, 2), (3,)], positive, id="points"),
       Case("scipy.stats.dirichlet.logpdf",
            lambda x, alpha: stats.dirichlet.logpdf(0.5 * x / np.sum(x), alpha),
            lambda x, alpha: st.dirichlet.logpdf(0.5 * x / np.sum(x), alpha), [(2,), (3,)],
            positive, id="implicit_last")]
    + [_family("poisson", n, lambda f: lambda mu: f(K3, 2 * mu), [(3,)])
       for n in ("logpmf", "pmf", "cdf")]
    + [_family("bernoulli", n, lambda f: lambda p: f(K01, p), [(3,)], probability)
       for n in ("logpmf", "pmf", "cdf")]
    + [Case("scipy.stats.bernoulli.ppf", stats.bernoulli.ppf, st.bernoulli.ppf, [(3,), (3,)],
            probability, differentiable=False)]
    + [_family("binom", n, lambda f: lambda p: f(K3, N3, p), [(3,)], probability)
       for n in ("logpmf", "pmf")]
    + [_family("expon", n, lambda f: lambda x, loc, s: f(x + 2, loc, s), [(3,), (3,), (3,)])
       for n in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")]
    + [_location_scale("ppf", "expon", "expon", probability)]
    + [_family("uniform", n,
               lambda f: lambda x, loc, s: f(loc - 0.6 + x * (s + 0.5), loc - 0.6, s + 0.5),
               [(3,), (3,), (3,)], probability) for n in ("logpdf", "pdf", "cdf")]
    + [_family("uniform", "ppf", lambda f: lambda q, loc, s: f(q, loc - 0.6, s + 0.5),
               [(3,), (3,), (3,)], probability)]
    + [_location_scale(n, "laplace", "laplace") for n in ("logpdf", "pdf", "cdf")]
    + [_location_scale(n, "logistic", "logistic") for n in
       ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")]
    + [_location_scale(n, "logistic", "logistic", probability) for n in ("ppf", "isf")]
    + [_location_scale(n, "cauchy", "cauchy") for n in
       ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")]
    + [_location_scale(n, "cauchy", "cauchy", probability) for n in ("ppf", "isf")]
    + [_family("multivariate_normal", n,
               lambda f: lambda x, mean, a: f(x, mean, a @ a.T + 3 * np.eye(3)),
               [(4, 3), (3,), (3, 3)], None) for n in ("logpdf", "pdf")]
    + [Case("scipy.stats.multivariate_normal.logpdf",
            lambda x, mean, var: stats.multivariate_normal.logpdf(x, mean[0], var[0] + 1),
            lambda x, mean, var: st.multivariate_normal.logpdf(x, mean[0], var[0] + 1),
            [(3,), (1,), (1,)], positive, id="univariate")]
    + [Case("scipy.stats.gaussian_kde.evaluate", KDE.evaluate, ST_KDE.evaluate, [(2, 3)]),
       Case("scipy.stats.gaussian_kde.logpdf", KDE_1D.logpdf, ST_KDE_1D.logpdf, [(3,)],
            id="1d_silverman"),
       Case("scipy.stats.gaussian_kde.pdf", KDE_WEIGHTED.pdf, ST_KDE_WEIGHTED.pdf, [(2, 4)],
            id="weights_factor"),
       Case("scipy.stats.gaussian_kde.integrate_box_1d",
            lambda lo: KDE_1D.integrate_box_1d(lo[0] - 1, lo[0] + 0.5),
            lambda lo: ST_KDE_1D.integrate_box_1d(lo[0] - 1, lo[0] + 0.5), [(1,)])]
)

# jax.scipy.stats' other distributions (secant/scipy/stats/gumbel_r.py, ...)
_ALL6 = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
CASES += (
    [_location_scale(n, d, d) for d in ("gumbel_r", "gumbel_l") for n in _ALL6]
    + [_location_scale("ppf", d, d, probability) for d in ("gumbel_r", "gumbel_l")]
    + [_family("pareto", n, lambda f: lambda x, b, s: f(0.3 + s * (1.1 + x), b + 1, 0.3, s),
               [(3,), (3,), (3,)]) for n in _ALL6]
    + [_family("pareto", "ppf", lambda f: lambda q, b, s: f(q, b + 1, 0.3, s),
               [(3,), (3,), (3,)], probability)]
    # bounds on both sides of 0, in one tail, in the other (the masses' three branches)
    + [_family("truncnorm", n, lambda f, lo=lo, hi=hi: lambda x, loc, s: f(
        loc + s * (lo + (hi - lo) * (0.1 + 0.8 * x)), lo, hi, loc, s),
        [(3,), (3,), (3,)], probability, id=f"{lo}_{hi}")
       for n in _ALL6 for lo, hi in ((-1.0, 2.0), (1.5, 4.0), (-6.0, -4.5))]
    + [Case("scipy.stats.truncnorm.logpdf", lambda x, a, b: stats.truncnorm.logpdf(
        0.5 * x - a, -a - 1, b + 0.5), lambda x, a, b: st.truncnorm.logpdf(0.5 * x - a, -a - 1,
                                                                          b + 0.5),
        [(3,), (3,), (3,)], probability, id="bounds")]
    + [_family("geom", n, lambda f: lambda p: f(K3 + 1, p), [(3,)], probability)
       for n in ("logpmf", "pmf")]
    + [_family("nbinom", n, lambda f: lambda n, p: f(K3, n + 1, p), [(3,), (3,)], probability)
       for n in ("logpmf", "pmf")]
    + [_family("betabinom", n, lambda f: lambda a, b: f(K3, N3, a, b), [(3,), (3,)])
       for n in ("logpmf", "pmf")]
    + [_family("multinomial", n, lambda f: lambda p: f(np.array([[1.0, 2.0, 3.0],
                                                                   [0.0, 0.0, 6.0]]), 6.0,
                                                         p / np.sum(p)), [(3,)])
       for n in ("logpmf", "pmf")]
    + [_family("vonmises", n, lambda f: lambda x, k: f(3 * x, 3 * k), [(3,), (3,)])
       for n in ("logpdf", "pdf")]
    + [_family("wrapcauchy", n, lambda f: lambda x, c: f(6 * x, c), [(3,), (3,)], probability)
       for n in ("logpdf", "pdf")]
    + [_family("gennorm", n, lambda f: lambda x, beta: f(2 * x - 2.1, 2 * beta), [(3,), (3,)])
       for n in ("logpdf", "pdf", "cdf")]
)

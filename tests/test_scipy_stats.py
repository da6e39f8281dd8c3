"""secant.scipy.stats beyond the shared harness (tests/library_cases/scipy_stats.py): values
against scipy over hypothesis-drawn domains and in the tails, derivatives that stay finite where
the naive formula overflows, the refused derivatives, gaussian_kde's bandwidths and weights, and
multivariate_normal's gradient in the covariance."""
import numpy as np
import pytest
import scipy.stats as sst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import secant
import secant.numpy as snp
from secant.scipy import stats

SETTINGS = settings(deadline=None,      # (examples: the profile's, tests/conftest.py)
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def floats(lo, hi):
    return st.lists(st.floats(lo, hi, allow_nan=False, allow_infinity=False), min_size=1,
                    max_size=5).map(np.array)


@SETTINGS
@given(floats(-60, 60), st.floats(-3, 3), st.floats(0.1, 10))
def test_norm_tails_against_scipy(x64, x, loc, scale):
    for name in ("logpdf", "cdf", "logcdf", "sf", "logsf"):
        np.testing.assert_allclose(getattr(stats.norm, name)(x, loc, scale),
                                   getattr(sst.norm, name)(x, loc, scale), rtol=1e-11,
                                   atol=1e-300, err_msg=name)


@SETTINGS
@given(floats(1e-12, 1 - 1e-12))
def test_quantiles_invert_the_cdfs(x64, q):
    for dist, args in ((stats.norm, (0.5, 2.0)), (stats.logistic, (0.5, 2.0)),
                       (stats.cauchy, (0.5, 2.0)), (stats.expon, (0.5, 2.0))):
        want = getattr(sst, dist.__name__.rsplit(".", 1)[1]).ppf(q, *args)
        np.testing.assert_allclose(dist.ppf(q, *args), want, rtol=1e-9, atol=1e-12)


@SETTINGS
@given(floats(-30, 30), st.floats(0.5, 50))
def test_t_logpdf_against_scipy(x64, x, df):
    np.testing.assert_allclose(stats.t.logpdf(x, df, 0.2, 1.5), sst.t.logpdf(x, df, 0.2, 1.5),
                               rtol=1e-11)


@SETTINGS
@given(floats(0, 80), st.floats(0.05, 30))
def test_gamma_and_chi2_against_scipy(x64, x, a):
    for name in ("logpdf", "cdf", "sf"):
        np.testing.assert_allclose(getattr(stats.gamma, name)(x, a), getattr(sst.gamma, name)(x, a),
                                   rtol=1e-9, atol=1e-300, err_msg=name)
        np.testing.assert_allclose(getattr(stats.chi2, name)(x, a), getattr(sst.chi2, name)(x, a),
                                   rtol=1e-9, atol=1e-300, err_msg=name)


def test_log_cdfs_have_finite_gradients_far_in_the_tails(x64):
    x = np.array([-200.0, -40.0, 0.0, 40.0, 200.0])
    g = secant.grad(lambda x: snp.sum(stats.norm.logcdf(x)))(x)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g[:2], -x[:2], rtol=1e-3)       # ~ -x in the lower tail
    g = secant.jit(secant.grad(lambda x: snp.sum(stats.logistic.logcdf(x) + stats.logistic.logpdf(x))))(x)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, 2 - 3 * sst.logistic.cdf(x), atol=1e-12)   # (1 - s) + (1 - 2s)


def test_support_edges(x64):
    assert stats.expon.logpdf(-1.0) == -np.inf
    assert stats.gamma.logpdf(-1.0, 2.0) == -np.inf
    assert stats.beta.logpdf(1.5, 2.0, 2.0) == -np.inf
    assert stats.uniform.logpdf(2.0) == -np.inf
    assert stats.poisson.logpmf(2.5, 1.0) == -np.inf and stats.poisson.logpmf(-1, 1.0) == -np.inf
    assert stats.binom.logpmf(4, 3, 0.5) == -np.inf
    assert stats.bernoulli.logpmf(2, 0.5) == -np.inf
    assert stats.dirichlet.logpdf(np.array([0.5, 0.6, 0.1]), np.ones(3)) == -np.inf
    np.testing.assert_allclose(stats.poisson.pmf(np.arange(5), 2.0), sst.poisson.pmf(np.arange(5), 2.0))
    np.testing.assert_allclose(stats.poisson.cdf(np.array([-1.0, 0.0, 2.5, 7.0]), 2.0),
                               sst.poisson.cdf(np.array([-1.0, 0.0, 2.5, 7.0]), 2.0))


def test_cdf_family_derivatives_in_the_shape_and_the_rate(x64):
    a, h = 2.0, 1e-5
    g = secant.grad(lambda a: stats.gamma.cdf(1.5, a))(a)
    np.testing.assert_allclose(g, (sst.gamma.cdf(1.5, a + h) - sst.gamma.cdf(1.5, a - h)) / (2 * h),
                               rtol=1e-7)
    g = secant.grad(lambda df: stats.chi2.sf(3.0, df))(a)
    np.testing.assert_allclose(g, (sst.chi2.sf(3.0, a + h) - sst.chi2.sf(3.0, a - h)) / (2 * h),
                               rtol=1e-7)
    g = secant.grad(lambda x: stats.gamma.cdf(x, 2.0, 0.0, 1.5))(1.2)
    np.testing.assert_allclose(g, sst.gamma.pdf(1.2, 2.0, 0.0, 1.5), rtol=1e-12)
    g = secant.grad(lambda mu: stats.poisson.cdf(3.0, mu))(2.0)
    np.testing.assert_allclose(g, -sst.poisson.pmf(3, 2.0), rtol=1e-12)


def test_multivariate_normal_gradient_in_the_covariance(x64):
    rng = np.random.default_rng(0)
    x, mean = rng.normal(size=(5, 3)), rng.normal(size=3)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    f = lambda cov: snp.sum(stats.multivariate_normal.logpdf(x, mean, cov))  # noqa: E731
    g = secant.grad(f)(cov)
    # d/dS sum_i log N(x_i; m, S) = 1/2 sum_i (S^-1 d_i d_i^T S^-1 - S^-1)
    inv = np.linalg.inv(cov)
    d = x - mean
    want = 0.5 * (inv @ d.T @ d @ inv - len(x) * inv)
    np.testing.assert_allclose(g + g.T, want + want.T, rtol=1e-10)   # the symmetric part
    np.testing.assert_allclose(secant.jit(secant.grad(f))(cov), g, rtol=1e-12)
    per_mean = secant.vmap(lambda m: stats.multivariate_normal.logpdf(x, m, cov))(x[:2])
    np.testing.assert_allclose(per_mean, [sst.multivariate_normal.logpdf(x, m, cov) for m in x[:2]],
                               rtol=1e-12)


@pytest.mark.parametrize("bw", [None, "scott", "silverman", 0.4, lambda kde: 0.3 * kde.neff ** -0.2])
def test_gaussian_kde_bandwidths_and_weights(x64, bw):
    rng = np.random.default_rng(1)
    data, points = rng.normal(size=(2, 20)), rng.normal(size=(2, 6))
    weights = rng.uniform(0.5, 2, 20)
    for w in (None, weights):
        kde, want = stats.gaussian_kde(data, bw, weights=w), sst.gaussian_kde(data, bw, weights=w)
        np.testing.assert_allclose(kde.factor, want.factor, rtol=1e-12)
        np.testing.assert_allclose(kde.covariance, want.covariance, rtol=1e-12)
        np.testing.assert_allclose(kde(points), want(points), rtol=1e-11)
        np.testing.assert_allclose(kde.logpdf(points), want.logpdf(points), rtol=1e-11)
        np.testing.assert_allclose(secant.jit(kde.logpdf)(points), want.logpdf(points), rtol=1e-11)
    # the score (gradient of the log density) against finite differences
    g = secant.grad(lambda p: snp.sum(kde.logpdf(p)))(points)
    eps = 1e-6
    fd = np.zeros_like(points)
    for idx in np.ndindex(points.shape):
        e = np.zeros_like(points)
        e[idx] = eps
        fd[idx] = (np.sum(want.logpdf(points + e)) - np.sum(want.logpdf(points - e))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


def test_generated_source_reads_like_the_model(x64):
    def nll(mu, sigma, x):
        return -snp.sum(stats.norm.logpdf(x, mu, sigma))

    text = secant.source(secant.grad(nll, argnums=(0, 1)))
    assert "logpdf_vjp(" in text and "dynamic_call" not in text
    x = np.array([0.5, 1.5, 2.0])
    g_mu, g_sigma = secant.grad(nll, argnums=(0, 1))(1.0, 2.0, x)
    np.testing.assert_allclose(g_mu, -np.sum(x - 1.0) / 4.0)
    np.testing.assert_allclose(g_sigma, 3 / 2.0 - np.sum((x - 1.0) ** 2) / 8.0)


def test_transforms_of_a_bound_method_of_a_lowercase_class(x64):
    """`class gaussian_kde` (lower case, as scipy's): its object must not shadow the class in
    the calling function secant writes for vmap/grad of `kde.logpdf`."""
    class model:
        def __init__(self, w):
            self.w = w

        def apply(self, x):
            return snp.sum(self.w * snp.sin(x))

    m = model(np.array([1.0, 2.0]))
    xs = np.array([[0.1, 0.2], [0.3, 0.4]])
    np.testing.assert_allclose(secant.vmap(m.apply)(xs), [m.apply(x) for x in xs])
    np.testing.assert_allclose(secant.grad(m.apply)(xs[0]), m.w * np.cos(xs[0]))
    kde = stats.gaussian_kde(np.array([[0.0, 1.0, 2.5], [1.0, 0.5, -1.0]]))
    points = np.array([[0.2, 0.4, 1.0], [0.1, -0.3, 0.0]])
    np.testing.assert_allclose(secant.vmap(kde.logpdf, in_axes=1)(points)[:, 0],
                               kde.logpdf(points), rtol=1e-12)

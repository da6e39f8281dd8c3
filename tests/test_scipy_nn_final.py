"""betainc and the beta distribution's cdf family, batched multivariate_normal, logsumexp's
`where=` and complex inputs, nn.softmax / log_softmax `where=` (the library harness runs their
Cases in tests/library_cases/scipy_nn_final.py; here: edges, errors, JAX's values and method
sets, and what the harness cannot express)."""
import numpy as np
import pytest
import scipy.special as ss
import scipy.stats as st

import secant
import secant.numpy as snp
from secant import nn
from secant.scipy import special, stats


# --- betainc --------------------------------------------------------------------------------------
def test_betainc_against_scipy_over_a_grid(x64):
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(0.05, 40, 300), [500.0, 1000.0, 0.01, 2000.0, 1e4]])
    b = np.concatenate([rng.uniform(0.05, 40, 300), [1000.0, 500.0, 0.02, 3000.0, 1e4]])
    x = np.concatenate([rng.uniform(0, 1, 300), [0.34, 0.66, 0.5, 0.41, 0.5]])
    want = ss.betainc(a, b, x)
    np.testing.assert_allclose(special.betainc(a, b, x), want, rtol=1e-11, atol=1e-14)
    # XLA's lgamma near 1e4 leaves betaln (a difference of three ~1e5 terms) a few 1e-11 off
    np.testing.assert_allclose(secant.jit(special.betainc)(a, b, x), want, rtol=1e-10,
                               atol=1e-14)


def test_betainc_float32():
    rng = np.random.default_rng(1)
    a, b, x = (rng.uniform(0.1, 30, 100).astype(np.float32) for _ in range(3))
    x = x / 30
    got = special.betainc(a, b, x)
    assert got.dtype == np.float32
    want = ss.betainc(a.astype(float), b.astype(float), x.astype(float))
    np.testing.assert_allclose(got, want, atol=2e-5)
    np.testing.assert_allclose(secant.jit(special.betainc)(a, b, x), want, atol=2e-5)


def test_betainc_edges_as_scipy(x64):
    a = np.array([1.5, 0.0, -1.0, 2.0, 1.5, 1.5, 0.0, 2.0, np.nan, 2.0])
    b = np.array([2.0, 2.0, 2.0, 2.0, 0.0, 2.0, 0.0, 2.0, 2.0, 2.0])
    x = np.array([0.3, 0.3, 0.3, 1.2, 0.3, 0.0, 0.3, 1.0, 0.5, -0.1])
    np.testing.assert_array_equal(special.betainc(a, b, x), ss.betainc(a, b, x))


def test_betainc_derivative_in_x_is_the_beta_density(x64):
    a, b = np.array([0.7, 2.5, 12.0, 300.0]), np.array([3.0, 0.6, 9.0, 200.0])
    x = np.array([0.2, 0.9, 0.55, 0.61])
    want = st.beta.pdf(x, a, b)
    np.testing.assert_allclose(secant.vmap(secant.grad(special.betainc, argnums=2))(a, b, x),
                               want, rtol=1e-10)
    _, tangent = secant.jvp(lambda x: special.betainc(a, b, x), (x,), (np.ones(4),))
    np.testing.assert_allclose(tangent, want, rtol=1e-10)
    eps = 1e-6
    fd = (ss.betainc(a, b, x + eps) - ss.betainc(a, b, x - eps)) / (2 * eps)
    np.testing.assert_allclose(want, fd, rtol=1e-6)


@pytest.mark.parametrize("argnums, name", [(0, "a"), (1, "b")])
def test_betainc_in_a_and_b_is_an_error_naming_the_argument(x64, argnums, name):
    """JAX: 'Betainc gradient with respect to a and b not supported.'"""
    with pytest.raises(secant.SecantError, match=f"with respect to {name}"):
        secant.grad(special.betainc, argnums=argnums)(1.5, 2.0, 0.3)


def test_betainc_generated_gradient_reads_well(x64):
    def f(x, a):
        return special.betainc(a, 2.0, x)
    src = secant.source(secant.grad(f))
    assert "return betainc_vjp(grad_seed(betainc_out), a, 2.0, x)" in src, src


# --- the beta distribution ------------------------------------------------------------------------
def test_beta_has_jaxs_methods():
    """jax.scipy.stats.beta in jax 0.10.2: cdf, logcdf, logpdf, logsf, pdf, sf; t: logpdf, pdf."""
    public = lambda m: sorted(n for n in dir(m) if not n.startswith("_") and callable(getattr(m, n))
                              and getattr(getattr(m, n), "__module__", "") == m.__name__)
    assert public(stats.beta) == ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
    assert public(stats.t) == ["logpdf", "pdf"]


@pytest.mark.parametrize("name", ["cdf", "logcdf", "sf", "logsf"])
def test_beta_cdf_family_against_scipy_outside_and_inside_the_support(x64, name):
    x = np.array([-0.1, 0.0, 0.2, 0.5, 0.9, 0.999, 1.0, 1.2])
    with np.errstate(divide="ignore"):
        want = getattr(st.beta, name)(x, 2.5, 0.7, loc=0.1, scale=0.8)
    got = getattr(stats.beta, name)(x, 2.5, 0.7, 0.1, 0.8)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_beta_sf_is_accurate_where_the_cdf_is_near_one(x64):
    x = np.array([0.999999, 0.99999999])
    np.testing.assert_allclose(stats.beta.sf(x, 2.0, 3.0), st.beta.sf(x, 2.0, 3.0), rtol=1e-8)
    np.testing.assert_allclose(stats.beta.logsf(x, 2.0, 3.0), st.beta.logsf(x, 2.0, 3.0),
                               rtol=1e-8)


def test_beta_logcdf_gradient_in_loc_and_scale(x64):
    def f(x, loc, scale):
        return stats.beta.logcdf(x, 2.0, 3.0, loc, scale)
    args = (0.6, 0.1, 0.9)
    for k in range(3):
        eps = 1e-6
        up = [a + eps * (i == k) for i, a in enumerate(args)]
        down = [a - eps * (i == k) for i, a in enumerate(args)]
        fd = (st.beta.logcdf(up[0], 2.0, 3.0, up[1], up[2])
              - st.beta.logcdf(down[0], 2.0, 3.0, down[1], down[2])) / (2 * eps)
        np.testing.assert_allclose(secant.grad(f, argnums=k)(*args), fd, rtol=1e-6)


# --- multivariate_normal --------------------------------------------------------------------------
def _spd(rng, batch, n):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _loop(x, mean, cov):
    batch = np.broadcast_shapes(x.shape[:-1], mean.shape[:-1], cov.shape[:-2])
    n = mean.shape[-1]
    x, mean = np.broadcast_to(x, batch + (n,)), np.broadcast_to(mean, batch + (n,))
    cov = np.broadcast_to(cov, batch + (n, n))
    return np.array([st.multivariate_normal.logpdf(x[i], mean[i], cov[i])
                     for i in np.ndindex(batch)]).reshape(batch)


@pytest.mark.parametrize("xs, ms, cs", [
    ((5, 3), (3,), ()),            # one distribution, many points
    ((4, 2, 3), (2, 3), (2,)),     # a batch of distributions
    ((3,), (2, 3), (2,)),          # one point, a batch of distributions
    ((4, 1, 3), (3,), (2,)),       # covariances batched only
    ((2, 1, 3), (1, 4, 3), (2, 4)),  # everything broadcast
])
def test_multivariate_normal_batched_against_scipy(x64, xs, ms, cs):
    rng = np.random.default_rng(0)
    x, mean, cov = rng.normal(size=xs), rng.normal(size=ms), _spd(rng, cs, 3)
    want = _loop(x, mean, cov)
    got = stats.multivariate_normal.logpdf(x, mean, cov)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(stats.multivariate_normal.logpdf)(x, mean, cov),
                               want, rtol=1e-12)
    np.testing.assert_allclose(stats.multivariate_normal.pdf(x, mean, cov), np.exp(want),
                               rtol=1e-12)


def test_multivariate_normal_gradients_of_batched_parameters(x64):
    """The covariance's gradient is the symmetrised one (JAX's cholesky symmetrises its input):
    checked against finite differences of symmetric perturbations."""
    rng = np.random.default_rng(1)
    x, mean, cov = rng.normal(size=(4, 2, 3)), rng.normal(size=(2, 3)), _spd(rng, (2,), 3)

    def loss(mean, cov):
        return snp.sum(stats.multivariate_normal.logpdf(x, mean, cov))

    def ref(mean, cov):
        return float(np.sum(_loop(x, mean, cov)))

    eps = 1e-6
    g_cov = secant.grad(loss, argnums=1)(mean, cov)
    np.testing.assert_allclose(g_cov, np.swapaxes(g_cov, -1, -2), rtol=1e-12)
    for seed in range(3):               # directional derivatives along symmetric directions
        d = np.random.default_rng(seed).normal(size=cov.shape)
        d = d + np.swapaxes(d, -1, -2)
        fd = (ref(mean, cov + eps * d) - ref(mean, cov - eps * d)) / (2 * eps)
        np.testing.assert_allclose(np.sum(g_cov * d), fd, rtol=1e-6)
    g_mean = secant.jit(secant.grad(loss))(mean, cov)
    for idx in np.ndindex(mean.shape):
        d = np.zeros_like(mean)
        d[idx] = eps
        fd = (ref(mean + d, cov) - ref(mean - d, cov)) / (2 * eps)
        np.testing.assert_allclose(g_mean[idx], fd, rtol=1e-6)
    # per-distribution gradients by vmap equal the batched gradient
    per = secant.vmap(secant.grad(lambda m, c, xi: snp.sum(
        stats.multivariate_normal.logpdf(xi, m, c))), in_axes=(0, 0, 1))(mean, cov, x)
    np.testing.assert_allclose(per, g_mean, rtol=1e-10)


def test_multivariate_normal_isotropic_and_univariate(x64):
    x = np.array([[0.3, -1.0, 2.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(x, np.zeros(3), 2.0),
                               st.multivariate_normal.logpdf(x, np.zeros(3), 2.0), rtol=1e-13)
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(0.4, 0.1, 2.0),
                               st.norm.logpdf(0.4, 0.1, np.sqrt(2.0)), rtol=1e-13)


def test_multivariate_normal_errors_as_jax():
    with pytest.raises(NotImplementedError, match="allow_singular"):
        stats.multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.eye(2), allow_singular=True)
    with pytest.raises(secant.SecantError, match="incompatible shapes"):
        stats.multivariate_normal.logpdf(np.zeros(3), np.zeros(3), np.eye(2))
    with pytest.raises(secant.SecantError, match="incompatible shapes"):
        stats.multivariate_normal.logpdf(np.zeros(3), np.zeros(3), np.ones(3))


# --- logsumexp: where= and complex inputs ---------------------------------------------------------
Z = np.array([1 + 2j, 0.5 - 1j, -3 + 0.3j])


@pytest.mark.parametrize("lse", [special.logsumexp, nn.logsumexp], ids=["special", "nn"])
def test_logsumexp_complex_as_jax(x64, lse):
    # values printed by jax 0.10.2 (jax.scipy.special.logsumexp, x64)
    np.testing.assert_allclose(lse(Z), 0.10964022790226513 + 1.7444767994052623j, rtol=1e-14)
    out, sign = lse(Z, return_sign=True)
    np.testing.assert_allclose(out, 0.10964022790226513, rtol=1e-14)
    np.testing.assert_allclose(sign, -0.17280861 + 0.98495542j, rtol=1e-8)
    np.testing.assert_allclose(lse(Z[:2], b=np.array([2.0, -1.0])),
                               1.9562300592512054 + 2.0329029075809517j, rtol=1e-14)
    grad = secant.grad(lambda z: snp.real(lse(z)))(Z)
    np.testing.assert_allclose(grad, [2.35691168 + 0.61570453j, -1.36253271 - 0.57144302j,
                                      0.00562102 - 0.04426151j], rtol=1e-7)
    np.testing.assert_allclose(secant.jit(lse)(Z), lse(Z), rtol=1e-14)


@pytest.mark.parametrize("lse", [special.logsumexp, nn.logsumexp], ids=["special", "nn"])
def test_logsumexp_where_as_jax(x64, lse):
    x = np.array([[1.0, 2.0, 3.0], [4.0, -1.0, 0.5]])
    where = np.array([[True, False, True], [False, False, False]])
    got = lse(x, axis=1, where=where)
    np.testing.assert_allclose(got, [3.1269280110429727, -np.inf])
    grad = secant.grad(lambda x: snp.sum(lse(x, axis=1, where=where)[:1]))(x)
    np.testing.assert_allclose(grad, [[0.11920292202211755, 0, 0.8807970779778823], [0, 0, 0]])
    assert np.all(np.isfinite(secant.grad(lambda x: lse(x[1], where=where[1]))(x)))
    batched = secant.vmap(lambda x, w: lse(x, where=w))(x, where)
    np.testing.assert_allclose(batched, got)


# --- softmax and log_softmax where= ---------------------------------------------------------------
def test_softmax_where_as_jax(x64):
    x = np.array([1.0, 2.0, 3.0])
    where = np.array([True, False, True])
    # values and gradients printed by jax 0.10.2
    np.testing.assert_allclose(nn.softmax(x, where=where), [0.11920292, 0.0, 0.88079708],
                               rtol=1e-7)
    np.testing.assert_allclose(nn.log_softmax(x, where=where),
                               [-2.12692801, -np.inf, -0.12692801], rtol=1e-7)
    np.testing.assert_allclose(secant.grad(lambda x: nn.softmax(x, where=where)[0])(x),
                               [0.10499359, 0.0, -0.10499359], rtol=1e-7)
    np.testing.assert_allclose(secant.grad(lambda x: nn.log_softmax(x, where=where)[0])(x),
                               [0.88079708, 0.0, -0.88079708], rtol=1e-7)
    np.testing.assert_allclose(secant.jit(lambda x: nn.log_softmax(x, where=where))(x),
                               nn.log_softmax(x, where=where))


def test_softmax_where_all_masked_gives_zeros_and_finite_gradients(x64):
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    where = np.array([[False, False], [True, False]])
    np.testing.assert_array_equal(nn.softmax(x, where=where), [[0, 0], [1, 0]])
    assert np.all(np.isneginf(nn.log_softmax(x, where=where)[0]))
    g = secant.grad(lambda x: snp.sum(nn.softmax(x, where=where) * np.arange(4.0).reshape(2, 2)))(x)
    np.testing.assert_array_equal(g, np.zeros((2, 2)))


def test_softmax_where_batched_masks(x64):
    x = np.random.default_rng(0).normal(size=(3, 4))
    where = np.random.default_rng(1).uniform(size=(3, 4)) > 0.4
    where[:, 0] = True
    loop = np.stack([np.asarray(nn.softmax(x[i], where=where[i])) for i in range(3)])
    np.testing.assert_allclose(secant.vmap(lambda x, w: nn.softmax(x, where=w))(x, where), loop)
    loop = np.stack([np.asarray(nn.log_softmax(x[i], where=where[i])) for i in range(3)])
    np.testing.assert_allclose(secant.vmap(lambda x, w: nn.log_softmax(x, where=w))(x, where),
                               loop)


# --- gaussian_kde built inside a transformed function ---------------------------------------------
def _kde_fd(ref, data, eps=1e-6):
    g = np.zeros_like(data)
    for i in np.ndindex(data.shape):
        d = np.zeros_like(data)
        d[i] = eps
        g[i] = (ref(data + d) - ref(data - d)) / (2 * eps)
    return g


POINTS = np.random.default_rng(3).normal(size=(2, 3))


def kde_loss(data):
    kde = stats.gaussian_kde(data)
    return snp.sum(kde.logpdf(POINTS))


def test_grad_of_a_function_that_builds_gaussian_kde(x64):
    data = np.random.default_rng(0).normal(size=(2, 7))
    ref = lambda d: float(np.sum(st.gaussian_kde(d).logpdf(POINTS)))
    np.testing.assert_allclose(kde_loss(data), ref(data), rtol=1e-12)
    want = _kde_fd(ref, data)
    np.testing.assert_allclose(secant.grad(kde_loss)(data), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.grad(kde_loss))(data), want, rtol=1e-6,
                               atol=1e-8)
    _, tangent = secant.jvp(kde_loss, (data,), (np.ones_like(data),))
    np.testing.assert_allclose(tangent, np.sum(want), rtol=1e-6)
    src = secant.source(secant.grad(kde_loss))
    assert "kde = stats.gaussian_kde.__secant_functional__.init(data)" in src, src
    assert "# Grad of: kde = stats.gaussian_kde(data)" in src, src


def test_vmap_over_datasets_of_gaussian_kde(x64):
    datas = np.random.default_rng(1).normal(size=(4, 2, 6))
    loop = [float(np.sum(st.gaussian_kde(d).logpdf(POINTS))) for d in datas]
    np.testing.assert_allclose(secant.vmap(kde_loss)(datas), loop, rtol=1e-12)
    grads = secant.vmap(secant.grad(kde_loss))(datas)
    for d, g in zip(datas, grads):
        np.testing.assert_allclose(g, secant.grad(kde_loss)(d), rtol=1e-10)


def test_gaussian_kde_inside_with_weights_bandwidth_and_other_methods(x64):
    rng = np.random.default_rng(2)
    data, w = rng.normal(size=(8,)), rng.uniform(0.5, 2.0, 8)
    points = np.array([-0.5, 0.1, 0.7])

    def f(data, w):
        kde = stats.gaussian_kde(data, "silverman", weights=w)
        return snp.sum(kde.pdf(points)) + kde.integrate_box_1d(-0.3, 0.4)

    def ref(data, w):
        kde = st.gaussian_kde(data, "silverman", weights=w)
        return float(np.sum(kde.pdf(points)) + kde.integrate_box_1d(-0.3, 0.4))

    np.testing.assert_allclose(f(data, w), ref(data, w), rtol=1e-12)
    np.testing.assert_allclose(secant.grad(f)(data, w), _kde_fd(lambda d: ref(d, w), data),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(secant.grad(f, argnums=1)(data, w),
                               _kde_fd(lambda v: ref(data, v), w), rtol=1e-6, atol=1e-9)


def test_gaussian_kde_callable_bandwidth_still_receives_the_estimate(x64):
    data = np.random.default_rng(4).normal(size=(2, 9))
    kde = stats.gaussian_kde(data, lambda k: k.neff ** (-1.0 / (k.d + 4)) / 2)
    want = st.gaussian_kde(data, lambda k: k.neff ** (-1.0 / (k.d + 4)) / 2)
    np.testing.assert_allclose(kde.logpdf(POINTS), want.logpdf(POINTS), rtol=1e-12)


def test_vmap_of_the_gradient_of_a_stack_along_a_negative_axis(x64):
    """The cotangent of snp.stack(..., axis=-1) under vmap is unstacked along the last axis, not
    the batch axis (it was `(-1) + 1`: axis 0, silently wrong when the batch size equals the
    number of stacked items)."""
    def f(a, b):
        return snp.sum(snp.stack([a * a, a * b], axis=-1) * np.array([1.0, 3.0]))
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([5.0, 6.0])
    np.testing.assert_allclose(secant.vmap(secant.grad(f), in_axes=(0, None))(a, b),
                               [2 * a[i] + 3 * b for i in range(2)])


def test_gaussian_kde_inside_called_and_its_fields_read(x64):
    data = np.random.default_rng(5).normal(size=(2, 5))
    grid = np.zeros((2, 2))

    def f(d):
        kde = stats.gaussian_kde(d)
        return snp.sum(kde(grid)) + snp.sum(kde.covariance)

    def ref(d):
        kde = st.gaussian_kde(d)
        return float(np.sum(kde(grid)) + np.sum(kde.covariance))

    np.testing.assert_allclose(f(data), ref(data), rtol=1e-12)
    np.testing.assert_allclose(secant.grad(f)(data), _kde_fd(ref, data), rtol=1e-6, atol=1e-9)
    datas = np.stack([data, 2 * data])
    np.testing.assert_allclose(secant.vmap(f)(datas), [ref(d) for d in datas], rtol=1e-12)

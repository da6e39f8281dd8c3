"""jax.scipy.stats' names secant lacked: mode, rankdata, sem (secant/scipy/stats/_core.py) and
poisson.entropy. Values against SciPy (ties, nan, axes, keepdims, empty), jit against eager,
vmap against a loop, gradients against float64 central differences (rankdata's: zero, as JAX's)."""
import numpy as np
import pytest
import scipy.stats as st

import secant
from secant.scipy import stats

X = np.array([[1, 2, 1, 3, 2, 1], [3, 1, 3, 2, 1, 3], [1, 2, 2, 3, 1, 2]])


@pytest.mark.parametrize("axis", [0, 1, -1, None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_mode_against_scipy(axis, keepdims):
    got = stats.mode(X, axis=axis, keepdims=keepdims)
    want = st.mode(X, axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(np.asarray(got.mode), want.mode)
    np.testing.assert_array_equal(np.asarray(got.count), want.count)
    jitted = secant.jit(lambda x: stats.mode(x, axis=axis, keepdims=keepdims))(X)
    np.testing.assert_array_equal(np.asarray(jitted[0]), want.mode)
    np.testing.assert_array_equal(np.asarray(jitted[1]), want.count)


def test_mode_ties_nan_and_empty():
    assert int(stats.mode(np.array([3, 1, 3, 1])).mode) == 1       # the smallest of the tied
    got = stats.mode(np.array([1.0, np.nan, np.nan, 2.0, 2.0]))      # nans: runs of one
    assert float(got.mode) == 2.0 and int(got.count) == 2
    empty = stats.mode(np.array([], dtype=np.float32))
    assert np.isnan(float(empty.mode)) and float(empty.count) == 0
    with pytest.raises(NotImplementedError):
        stats.mode(X, nan_policy="omit")
    with pytest.raises(ValueError):
        stats.mode(X, nan_policy="bogus")


def test_mode_vmap_against_a_loop():
    got = secant.vmap(lambda row: stats.mode(row).mode)(X)
    np.testing.assert_array_equal(np.asarray(got), [st.mode(r).mode for r in X])


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata_against_scipy(method):
    y = np.array([[3.0, 1, 2, 1, 3, 3], [5, 5, 5, 0, 1, 0]])
    for axis in (None, 0, 1, -1):
        want = st.rankdata(y, method, axis=axis)
        np.testing.assert_array_equal(np.asarray(stats.rankdata(y, method, axis=axis)), want)
    jitted = secant.jit(lambda v: stats.rankdata(v, method, axis=1))(y)
    np.testing.assert_array_equal(np.asarray(jitted), st.rankdata(y, method, axis=1))
    batched = secant.vmap(lambda v: stats.rankdata(v, method))(y)
    np.testing.assert_array_equal(np.asarray(batched), [st.rankdata(r, method) for r in y])


def test_rankdata_nan_dtype_and_gradient():
    assert np.isnan(np.asarray(stats.rankdata(np.array([1.0, np.nan, 2.0])))).all()
    ranks = stats.rankdata(np.array([10, 30, 20]))
    assert ranks.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(ranks), [1.0, 3.0, 2.0])
    with pytest.raises(ValueError, match="unknown method"):
        stats.rankdata(np.array([1.0]), "mean")
    # the ranks are integers: zero gradient (as JAX's)
    g = secant.grad(lambda v: (stats.rankdata(v) * v).sum())(np.float32([3.0, 1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(g), [3.0, 1.0, 2.0])


def test_sem_against_scipy_and_gradient(x64):
    np.testing.assert_allclose(np.asarray(stats.sem(X)), st.sem(X), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(stats.sem(X, axis=1, ddof=0)),
                               st.sem(X, axis=1, ddof=0), rtol=1e-13)
    np.testing.assert_allclose(float(stats.sem(X, axis=None)), st.sem(X, axis=None),
                               rtol=1e-13)
    assert stats.sem(X, axis=1, keepdims=True).shape == (3, 1)
    x2 = np.array([[1, 2, 3, np.nan, 4, 2], [4, 5, 4, 3, np.nan, 1], [7, np.nan, 8, 7, 9, 1]])
    np.testing.assert_allclose(np.asarray(stats.sem(x2, nan_policy="omit")),
                               st.sem(x2, nan_policy="omit"), rtol=1e-13)
    assert np.isnan(np.asarray(stats.sem(x2))[1])
    np.testing.assert_allclose(np.asarray(secant.jit(stats.sem)(X * 1.0)), st.sem(X),
                               rtol=1e-13)
    v = np.array([1.0, 2.0, 4.0, 0.5])
    g = np.asarray(secant.grad(stats.sem)(v))
    fd = [(st.sem(v + e * 1e-6) - st.sem(v - e * 1e-6)) / 2e-6 for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-7)


def test_poisson_entropy(x64):
    mu = np.array([0.0, 1e-3, 1.0, 5.0, 50.0, 150.0, 199.9, 200.0, 1000.0, -1.0, np.nan])
    want = st.poisson.entropy(mu)
    np.testing.assert_allclose(np.asarray(stats.poisson.entropy(mu)), want, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(secant.jit(stats.poisson.entropy)(mu)), want,
                               rtol=1e-9)
    # (SciPy's own sum does not converge at 1e6: the closed form's leading terms)
    big = 1e6
    assert float(stats.poisson.entropy(big)) == pytest.approx(
        0.5 * np.log(2 * np.pi * np.e * big) - 1 / (12 * big), rel=1e-12)
    assert stats.poisson.entropy(np.ones((2, 3)), np.zeros(3)).shape == (2, 3)
    g = secant.grad(stats.poisson.entropy)
    k = np.arange(3000.0)
    for m in (0.7, 5.0, 150.0, 300.0):
        # dH/dmu = -sum_k p'(k) (log p(k) + 1), p'(k) = p(k) (k / mu - 1)
        log_p = st.poisson.logpmf(k, m)
        want = -np.sum(np.exp(log_p) * (k / m - 1) * (log_p + 1))
        assert float(g(m)) == pytest.approx(want, rel=1e-8)
    got = secant.vmap(stats.poisson.entropy)(np.array([0.5, 3.0, 250.0]))
    np.testing.assert_allclose(np.asarray(got), st.poisson.entropy([0.5, 3.0, 250.0]), rtol=1e-9)


def test_poisson_entropy_float32():
    got = stats.poisson.entropy(np.float32([1.0, 10.0, 100.0]))
    assert got.dtype == np.float32
    # (log p(k) = k log mu - log k! - mu cancels in float32: some 1e-5, as JAX's)
    np.testing.assert_allclose(np.asarray(got), st.poisson.entropy([1.0, 10.0, 100.0]),
                               rtol=1e-5)

"""The jax.numpy names added by secant/numpy/more.py, against NumPy (values, dtypes) and, for
the differentiable ones, grad against finite differences and vmap against a loop."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

R = np.random.RandomState(0)
X = R.randn(3, 4)
Y = R.randn(3, 4)


@pytest.fixture(autouse=True)
def x64():
    secant.config.update("enable_x64", True)
    yield
    secant.config.update("enable_x64", False)


def close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def test_values_match_numpy():
    close(snp.trapezoid(X), np.trapezoid(X))
    close(snp.trapezoid(X, dx=0.5, axis=0), np.trapezoid(X, dx=0.5, axis=0))
    xs = np.cumsum(np.abs(R.randn(4)))
    close(snp.trapezoid(X, xs), np.trapezoid(X, xs))
    close(snp.pow(X, 2), X ** 2)
    ints = np.array([1, 5, 12], np.int32)
    assert snp.bitwise_invert(ints).tolist() == np.invert(ints).tolist()
    assert snp.bitwise_left_shift(ints, 2).tolist() == (ints << 2).tolist()
    assert snp.bitwise_right_shift(ints, 1).tolist() == (ints >> 1).tolist()
    m = R.randn(2, 3, 4)
    v = R.randn(2, 4)
    close(snp.matvec(m, v), np.einsum("bmn,bn->bm", m, v))
    w = R.randn(2, 3) + 1j * R.randn(2, 3)
    close(snp.vecmat(w, m), np.einsum("bn,bnm->bm", np.conj(w), m))
    parts = snp.unstack(X, axis=1)
    assert len(parts) == 4
    close(parts[2], X[:, 2])
    close(snp.cov(X), np.cov(X))
    close(snp.cov(X, Y, rowvar=False, bias=True), np.cov(X, Y, rowvar=False, bias=True))
    close(snp.corrcoef(X), np.corrcoef(X))
    assert snp.isin(np.array([1, 2, 3, 4]), [2, 4]).tolist() == [False, True, False, True]
    assert snp.isin(np.array([1, 2]), [2], invert=True).tolist() == [True, False]
    assert bool(snp.array_equal(X, X.copy())) and not bool(snp.array_equal(X, X[:2]))
    assert bool(snp.array_equiv(np.ones((2, 3)), np.ones(3))) and \
        not bool(snp.array_equiv(np.ones((2, 3)), np.ones(2)))
    close(snp.ldexp(X, 3), np.ldexp(X, 3))
    frac, whole = snp.modf(X * 3)
    close(frac, np.modf(X * 3)[0])
    close(whole, np.modf(X * 3)[1])
    p, q = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])
    close(snp.polyadd(p, q), np.polyadd(p, q))
    close(snp.polysub(q, p), np.polysub(q, p))
    close(snp.polymul(p, q), np.polymul(p, q))
    close(snp.polyder(p, 2), np.polyder(p, 2))
    close(snp.polyint(p, 2, k=[1.0, 2.0]), np.polyint(p, 2, k=[1.0, 2.0]))
    filled = snp.fill_diagonal(np.zeros((3, 3)), 5.0, inplace=False)
    expected = np.zeros((3, 3))
    np.fill_diagonal(expected, 5.0)
    close(filled, expected)
    with pytest.raises(secant.SecantError, match="inplace=False"):
        snp.fill_diagonal(np.zeros((3, 3)), 5.0)
    x = np.array([0.2, 6.4, 3.0, 1.6, 2.5])
    for bins in (np.array([0.0, 1.0, 2.5, 4.0, 10.0]), np.array([10.0, 4.0, 2.5, 1.0, 0.0])):
        for right in (False, True):
            assert snp.digitize(x, bins, right).tolist() == np.digitize(x, bins, right).tolist()


def test_static_helpers_match_numpy():
    for got, want in ((snp.tril_indices(4, -1), np.tril_indices(4, -1)),
                      (snp.triu_indices(3, 1, 5), np.triu_indices(3, 1, 5)),
                      (snp.tril_indices_from(X), np.tril_indices_from(X)),
                      (snp.triu_indices_from(X, 1), np.triu_indices_from(X, 1)),
                      (snp.diag_indices(3, 3), np.diag_indices(3, 3)),
                      (snp.diag_indices_from(np.ones((2, 2))), np.diag_indices(2))):
        assert [g.tolist() for g in got] == [w.tolist() for w in want]
        assert all(g.dtype == np.int32 for g in got)
    assert snp.isscalar(3.0) and snp.isscalar(snp.asarray(2.0)) and not snp.isscalar(X)
    assert snp.iterable([1]) and not snp.iterable(1)
    assert X[snp.s_[1:, ::2]].shape == (2, 2) and snp.index_exp[1:] == np.index_exp[1:]
    rows, cols = snp.ix_(np.array([0, 2]), np.array([1, 3]))
    close(snp.asarray(X)[rows, cols], X[np.ix_([0, 2], [1, 3])])
    assert snp.can_cast(np.int32, np.float64) and not snp.can_cast(np.float64, np.int32)
    for name in ("hamming", "hanning", "blackman", "bartlett"):
        close(getattr(snp, name)(7), getattr(np, name)(7))


def test_differentiable_ones_under_grad_and_vmap():
    def f(x):
        return (snp.sum(snp.trapezoid(x ** 2)) + snp.sum(snp.corrcoef(x)) + snp.sum(snp.cov(x))
                + snp.sum(snp.polymul(x[0], x[1])) + snp.sum(snp.modf(3 * x)[0])
                + snp.sum(snp.matvec(x[None, :, :3], x[:, 0])))
    g = secant.grad(f)(X)
    eps = 1e-6
    fd = np.zeros_like(X)
    for i in np.ndindex(X.shape):
        e = np.zeros_like(X)
        e[i] = eps
        fd[i] = (f(X + e) - f(X - e)) / (2 * eps)
    close(g, fd, rtol=1e-5, atol=1e-7)
    close(secant.jit(secant.grad(f))(X), g, rtol=1e-9)
    batch = np.stack([X, Y])
    close(secant.vmap(f)(batch), [f(X), f(Y)])

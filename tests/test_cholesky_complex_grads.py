"""The reverse-mode derivative of a complex Cholesky factorisation (a silent wrong value until
2026-12-07: cholesky_grad transposed with L^H where JAX's convention, the transpose of the
linear map, needs L^T; real matrices read the same either way, so only complex ones were
wrong), and scipy.linalg.cholesky / cho_factor's unsymmetrised input, whose derivative takes
the matrix's tangent as given, as JAX does, so cho_solve(cho_factor(a), b) differentiates as
solve(a, b)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
import secant.scipy.linalg as sla


def _hermitian(n, seed):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
    return m @ m.conj().T + 3 * np.eye(n)


def _loss(chol):
    def loss(x):
        y = chol(x)
        return snp.sum(snp.abs(y - snp.sin(y)) ** 2)
    return loss


def _central_complex(f, x, e=1e-6):
    """JAX's gradient of a real function of a complex matrix: d/dRe - i d/dIm, per entry."""
    g = np.zeros(x.shape, complex)
    for idx in np.ndindex(x.shape):
        d = np.zeros(x.shape, complex)
        d[idx] = e
        g[idx] = (f(x + d) - f(x - d)) / (2 * e) - 1j * (f(x + 1j * d) - f(x - 1j * d)) / (2 * e)
    return g


def _np_cholesky(x):
    return np.linalg.cholesky((x + x.conj().T) / 2)


@pytest.mark.parametrize("wrap", ["eager", "jit"])
def test_complex_cholesky_gradient_against_central_differences(x64, wrap):
    h = _hermitian(3, 0)
    g = secant.grad(_loss(snp.linalg.cholesky))
    g = secant.jit(g) if wrap == "jit" else g
    want = _central_complex(_loss(_np_cholesky), h)
    np.testing.assert_allclose(np.asarray(g(h)), want, rtol=1e-6, atol=1e-7)


def test_complex_cholesky_gradient_under_vmap(x64):
    hs = np.stack([_hermitian(3, 1), _hermitian(3, 2)])
    got = secant.vmap(secant.grad(_loss(snp.linalg.cholesky)))(hs)
    for h, row in zip(hs, np.asarray(got)):
        np.testing.assert_allclose(row, _central_complex(_loss(_np_cholesky), h),
                                   rtol=1e-6, atol=1e-7)


def test_second_derivative_through_a_complex_cholesky(x64):
    """d2/dt2 of loss(cholesky(h + t k)), k Hermitian: grad of grad reads cholesky_grad's
    source, checked against central differences of the first derivative."""
    h, k = _hermitian(3, 3), _hermitian(3, 4) / 10

    def along(t):
        return _loss(snp.linalg.cholesky)(h + t * k)
    d1, d2 = secant.grad(along), secant.grad(secant.grad(along))
    e = 1e-5
    np.testing.assert_allclose(float(d2(0.3)), (float(d1(0.3 + e)) - float(d1(0.3 - e))) / (2 * e),
                               rtol=1e-5)


def test_jax_documentation_example():
    """The JAX autodiff cookbook's holomorphic=True Cholesky example, JAX 0.10.2's values
    (the function is not holomorphic; the value is JAX's convention, not a derivative)."""
    a = snp.array([[5., 2. + 3j, 5j], [2. - 3j, 7., 1. + 7j], [-5j, 1. - 7j, 12.]])

    def f(x):
        chol = snp.linalg.cholesky(x)
        return snp.sum((chol - snp.sin(chol)) ** 2)
    want = np.array([[-0.75341904, -3.0509028 - 10.940545j, 5.9896846 + 3.5423026j],
                     [-3.0509028 + 10.940545j, -8.904491, -5.1351523 - 6.559373j],
                     [5.9896846 - 3.5423026j, -5.1351523 + 6.559373j, 0.01320427]])
    for g in (secant.grad(f, holomorphic=True), secant.jit(secant.grad(f, holomorphic=True))):
        np.testing.assert_allclose(np.asarray(g(a)), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", [float, complex])
def test_cho_solve_agrees_with_solve_along_hermitian_directions(x64, lower, dtype):
    """cho_solve(cho_factor(h), b) is solve(h, b) for Hermitian h, so their derivatives agree
    along Hermitian directions k (a real loss's derivative along k is Re(sum(grad * k)))."""
    h, ks = _hermitian(3, 5), [_hermitian(3, seed) for seed in (6, 7)]
    if dtype is float:
        h, ks = h.real, [k.real for k in ks]
    b = np.arange(6.0).reshape(3, 2) - 2

    def by_factor(x):
        return snp.sum(snp.abs(snp.sin(sla.cho_solve(sla.cho_factor(x, lower=lower), b))) ** 2)

    def by_solve(x):
        return snp.sum(snp.abs(snp.sin(snp.linalg.solve(x, b))) ** 2)
    g_factor = np.asarray(secant.grad(by_factor)(h))
    g_solve = np.asarray(secant.grad(by_solve)(h))
    for k in ks:
        np.testing.assert_allclose(np.sum(g_factor * k).real, np.sum(g_solve * k).real,
                                   rtol=1e-9)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", [float, complex])
def test_scipy_cholesky_reads_one_triangle(x64, lower, dtype):
    """scipy.linalg.cholesky reads the triangle `lower` names (an edit of the other triangle
    leaves the factor as it was), so its gradient is the central differences of that reading:
    nonzero in that triangle only. (Before 2026-12-07 secant symmetrised the input; JAX's
    gradient has entries in the unread triangle, agreeing with this one along Hermitian
    directions.)"""
    h = _hermitian(3, 8)
    h = h.real if dtype is float else h
    other = np.triu(np.full((3, 3), 9.0), 1)
    other = other if lower else other.T
    np.testing.assert_allclose(np.asarray(sla.cholesky(h + other, lower=lower)),
                               np.asarray(sla.cholesky(h, lower=lower)))
    loss = _loss(lambda x: sla.cholesky(x, lower=lower))

    def reading(x):
        x = np.tril(x) if lower else np.triu(x)
        return _loss(lambda y: np.linalg.cholesky(y) if lower else np.linalg.cholesky(y).conj().T)(
            x + np.conj(np.tril(x, -1).T) if lower else x + np.conj(np.triu(x, 1).T))
    want = _central_complex(reading, h) if dtype is complex else _central_complex(reading, h).real
    np.testing.assert_allclose(np.asarray(secant.grad(loss)(h)), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(np.asarray(secant.grad(loss)(h)) * other, 0)

"""jax.scipy.linalg's polar, expm_frechet, eigh_tridiagonal, qr_multiply and special matrices,
and the hessian of numpy.linalg.det at singular matrices: values against SciPy (float64 and
float32), eagerly and under jit, gradients against float64 central differences (or closed
forms), vmap against a loop."""
import numpy as np
import pytest
import scipy.linalg as sl

import secant
import secant.numpy as snp
from secant.scipy import linalg as L
from tests.central_differences import check_unary

pytestmark = pytest.mark.usefixtures("fast_compiles")

rng = np.random.default_rng(151)
M = rng.normal(size=(4, 4))
TALL = rng.normal(size=(5, 3))
E = rng.normal(size=(4, 4))
D = rng.normal(size=5)
OFF = rng.normal(size=4)
V = rng.normal(size=5)

CASES = {
    # f(x), x, SciPy's f: values eager/jit, gradient vs central differences, vmap vs loop
    "polar_u_right": (lambda a: L.polar(a)[0], TALL, lambda a: sl.polar(a)[0]),
    "polar_p_right": (lambda a: L.polar(a, method="svd")[1], TALL, lambda a: sl.polar(a)[1]),
    "polar_u_left_wide": (lambda a: L.polar(a, "left")[0], TALL.T, lambda a: sl.polar(a, "left")[0]),
    "polar_p_left": (lambda a: L.polar(a, "left")[1], M, lambda a: sl.polar(a, "left")[1]),
    "expm_frechet_A": (lambda a: L.expm_frechet(a, E, compute_expm=False), M / 2,
                       lambda a: sl.expm_frechet(a, E, compute_expm=False)),
    "expm_frechet_expm": (lambda a: L.expm_frechet(a, E)[0], M / 2,
                          lambda a: sl.expm_frechet(a, E)[0]),
    "expm_frechet_E": (lambda e: L.expm_frechet(M / 2, e, compute_expm=False), E,
                       lambda e: sl.expm_frechet(M / 2, e, compute_expm=False)),
    "eigh_tridiagonal_d": (lambda d: L.eigh_tridiagonal(d, OFF, eigvals_only=True), D,
                           lambda d: sl.eigh_tridiagonal(d, OFF, eigvals_only=True)),
    "eigh_tridiagonal_e": (lambda e: L.eigh_tridiagonal(D, e, eigvals_only=True, select="i",
                                                        select_range=(1, 3)), OFF,
                           lambda e: sl.eigh_tridiagonal(D, e, eigvals_only=True, select="i",
                                                         select_range=(1, 3))),
    "qr_multiply_right": (lambda c: snp.abs(L.qr_multiply(TALL, c)[0]), rng.normal(size=(2, 5)),
                          lambda c: np.abs(sl.qr_multiply(TALL, c)[0])),
    "qr_multiply_left_a": (lambda a: snp.abs(L.qr_multiply(a, np.eye(3), "left")[0]), TALL,
                           lambda a: np.abs(sl.qr_multiply(a, np.eye(3), "left")[0])),
    "qr_multiply_r_pivoting": (lambda a: L.qr_multiply(a, V, pivoting=True)[1], TALL,
                               lambda a: sl.qr_multiply(a, V, pivoting=True)[1]),
    "fiedler": (L.fiedler, V, sl.fiedler),
    "fiedler_companion": (L.fiedler_companion, V, sl.fiedler_companion),
    "leslie": (lambda f: L.leslie(f, f[1:] * 0.5), V, lambda f: sl.leslie(f, f[1:] * 0.5)),
    "convolution_matrix_full": (lambda a: L.convolution_matrix(a, 3), V,
                                lambda a: sl.convolution_matrix(a, 3)),
    "convolution_matrix_same": (lambda a: L.convolution_matrix(a, 7, "same"), V,
                                lambda a: sl.convolution_matrix(a, 7, "same")),
    "convolution_matrix_valid": (lambda a: L.convolution_matrix(a, 2, "valid"), V,
                                 lambda a: sl.convolution_matrix(a, 2, "valid")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_gradients_and_vmap(name, x64):
    check_unary(*CASES[name], scale=1.5)


@pytest.mark.parametrize("name", ["polar_u_right", "polar_p_left", "expm_frechet_A",
                                  "eigh_tridiagonal_d", "qr_multiply_right", "fiedler_companion",
                                  "convolution_matrix_same"])
def test_float32_values(name):
    f, x, ref = CASES[name]
    x32 = x.astype(np.float32)
    for fn in (f, secant.jit(f)):
        out = fn(x32)
        assert out.dtype == np.float32
        np.testing.assert_allclose(np.asarray(out), ref(x32.astype(np.float64)), rtol=2e-4,
                                   atol=2e-4)


def test_polar_qr_multiply_eigh_tridiagonal_edges(x64):
    u, p = L.polar(TALL + 1j * TALL)
    u0, p0 = sl.polar(TALL + 1j * TALL)
    np.testing.assert_allclose(np.asarray(u), u0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(p), p0, atol=1e-12)
    with pytest.raises(ValueError, match="Unknown polar"):
        L.polar(M, method="newton")
    with pytest.raises(ValueError, match="side"):
        L.polar(M, side="up")
    w, v = L.eigh_tridiagonal(D, OFF)                  # eigenvectors too (SciPy's, not JAX's)
    w0, v0 = sl.eigh_tridiagonal(D, OFF)
    np.testing.assert_allclose(np.asarray(w), w0, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.asarray(v)), np.abs(v0), atol=1e-10)
    with pytest.raises(NotImplementedError, match="select='v'"):
        L.eigh_tridiagonal(D, OFF, eigvals_only=True, select="v", select_range=(0.0, 1.0))
    for mode, c in (("left", rng.normal(size=3)), ("right", V)):
        for conjugate in (False, True):
            a = TALL + 0.5j * TALL[::-1]
            got = L.qr_multiply(a, c, mode, conjugate=conjugate)
            want = sl.qr_multiply(a, c, mode, conjugate=conjugate)
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), w, atol=1e-12)
    with pytest.raises(ValueError, match="not compatible"):
        L.qr_multiply(TALL, np.ones(4))
    big = 40 * M                                       # many squarings of the block
    for got, want in zip(L.expm_frechet(big / 10, E), sl.expm_frechet(big / 10, E)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9)
    stack = np.stack([M, M / 3]) / 2
    _, frechet = secant.jit(L.expm_frechet)(stack, np.stack([E, E]))
    np.testing.assert_allclose(np.asarray(frechet[1]),
                               sl.expm_frechet(M / 6, E, compute_expm=False), rtol=1e-9)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_constant_matrices_against_scipy(n, x64_or_not):
    x64 = secant.config.read("enable_x64") if hasattr(secant.config, "read") else \
        np.asarray(snp.zeros(1)).dtype == np.float64
    tol = 1e-12 if x64 else 1e-6
    cases = [(L.dft(n), sl.dft(n)), (L.dft(n, "sqrtn"), sl.dft(n, "sqrtn")),
             (L.dft(n, "n"), sl.dft(n, "n")), (L.helmert(n), sl.helmert(n)),
             (L.helmert(n, full=True), sl.helmert(n, full=True)),
             (L.invhilbert(n), sl.invhilbert(n))]
    for kind in ("symmetric", "lower", "upper"):
        cases += [(L.pascal(n, kind), sl.pascal(n, kind)),
                  (L.invpascal(n, kind), sl.invpascal(n, kind))]
    if n & (n - 1) == 0:
        cases.append((L.hadamard(n), sl.hadamard(n)))
    for got, want in cases:
        assert np.shape(got) == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)
    assert L.dft(n).dtype == (np.complex128 if x64 else np.complex64)
    assert L.pascal(n).dtype == (np.float64 if x64 else np.float32)
    assert L.hadamard(1).dtype == (np.int64 if x64 else np.int32)
    # exact integers (JAX's pascal is exp(lgamma) and off by ulps)
    np.testing.assert_array_equal(np.asarray(L.pascal(n)), sl.pascal(n))
    np.testing.assert_array_equal(np.asarray(secant.jit(lambda: L.invpascal(n))()),
                                  sl.invpascal(n))


def test_constant_matrix_errors():
    with pytest.raises(ValueError, match="power of 2"):
        L.hadamard(6)
    with pytest.raises(ValueError, match="scale"):
        L.dft(4, "norm")
    with pytest.raises(ValueError, match="kind"):
        L.pascal(3, "diagonal")
    with pytest.raises(ValueError, match="positive"):
        L.helmert(0)
    with pytest.raises(ValueError, match="one less"):
        L.leslie(V, V)
    with pytest.raises(ValueError, match="mode"):
        L.convolution_matrix(V, 3, "circular")
    assert np.shape(L.fiedler_companion(np.ones(1))) == (0, 0)


# --- the hessian of det at singular matrices (JAX: finite, the second derivative of a polynomial)
def _det_hessian_closed_form(a):
    """d2 det / da_ij da_kl: the signed (n-2)-minor without rows i, k and columns j, l."""
    n = a.shape[0]
    h = np.zeros((n, n, n, n))
    for i, j, k, l in np.ndindex(n, n, n, n):
        if i == k or j == l:
            continue
        rows = [r for r in range(n) if r not in (i, k)]
        cols = [c for c in range(n) if c not in (j, l)]
        minor = np.linalg.det(a[np.ix_(rows, cols)]) if rows else 1.0
        sign = (-1) ** (i + j + k + l) * (1 if (i < k) == (j < l) else -1)
        h[i, j, k, l] = sign * minor
    return h


SINGULAR = {"rank_n-1_2x2": np.array([[1.0, 2.0], [2.0, 4.0]]),
            "rank_n-1_3x3": np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]]),
            "rank_n-1_4x4": np.outer(np.arange(1.0, 5.0), np.ones(4)) + np.diag([0, 1.0, 2, 3]),
            "rank_n-2": np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]]),
            "zero": np.zeros((3, 3)), "regular": M}


@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_det_hessian_at_singular_matrices(name, x64):
    a = SINGULAR[name]
    want = _det_hessian_closed_form(a)
    for h in (secant.hessian(snp.linalg.det)(a), secant.jit(secant.hessian(snp.linalg.det))(a),
              secant.jacrev(secant.jacrev(snp.linalg.det))(a),
              secant.jacfwd(secant.jacfwd(snp.linalg.det))(a)):
        assert np.isfinite(np.asarray(h)).all()
        np.testing.assert_allclose(np.asarray(h), want, atol=1e-10)


def test_det_hessian_against_central_differences_and_vmap(x64):
    a = SINGULAR["rank_n-1_3x3"]
    grad_det = secant.grad(snp.linalg.det)
    h = np.asarray(secant.jacfwd(grad_det)(a)).reshape(9, 9)
    fd = np.zeros((9, 9))
    for i in range(9):
        step = np.zeros(9)
        step[i] = 1e-5
        fd[:, i] = (np.asarray(grad_det(a + step.reshape(3, 3))) -
                    np.asarray(grad_det(a - step.reshape(3, 3)))).ravel() / 2e-5
    np.testing.assert_allclose(h, fd, atol=1e-7)
    stack = np.stack([SINGULAR["rank_n-1_3x3"], SINGULAR["rank_n-2"], M[:3, :3]])
    hs = secant.vmap(secant.hessian(snp.linalg.det))(stack)
    for i, x in enumerate(stack):
        np.testing.assert_allclose(np.asarray(hs[i]), _det_hessian_closed_form(x), atol=1e-10)


def test_det_second_derivative_complex_low_rank(x64):
    r = np.random.default_rng(7)
    u, v = r.normal(size=(2, 4)) + 1j * r.normal(size=(2, 4))
    for a in (np.outer(u, v), np.outer(u, v) + np.outer(v, u), M + 1j * M.T):
        e = r.normal(size=(4, 4)) + 1j * r.normal(size=(4, 4))
        second = secant.jvp(lambda x: secant.jvp(snp.linalg.det, (x,), (e,))[1], (a,), (e,))[1]
        # det(a + t e) is a polynomial of degree 4 in t: its t^2 coefficient from 5 values
        ts = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
        coeffs = np.linalg.solve(np.vander(ts, 5, increasing=True),
                                 [np.linalg.det(a + t * e) for t in ts])
        want = 2 * coeffs[2]
        np.testing.assert_allclose(complex(second), want, rtol=1e-5, atol=1e-8)


def test_det_of_empty_matrices():
    empty = np.zeros((0, 0), np.float32)
    assert float(snp.linalg.det(empty)) == 1.0 == float(secant.jit(snp.linalg.det)(empty))
    sign, logdet = snp.linalg.slogdet(empty)
    assert (float(sign), float(logdet)) == (1.0, 0.0)
    np.testing.assert_array_equal(np.asarray(snp.linalg.det(np.zeros((3, 0, 0)))), np.ones(3))
    assert np.shape(secant.grad(snp.linalg.det)(empty)) == (0, 0)

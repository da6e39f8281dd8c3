"""secant.numpy.linalg.det's derivative at a singular matrix (explore15g): it was NaN
(det(a) a^-T = 0 * inf); JAX's rule tr(adj(a) da), with the adjugate from a cofactor solve,
is finite there. Against float64 central differences and closed forms; jit, vmap, second
order, batches and the 1x1 case."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
import secant.scipy.linalg as ssl

RANK2 = np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])           # rank 2: adj(a) != 0
RANK1 = np.array([[1.0, 2, 3], [2, 4, 6], [3, 6, 9]])           # rank 1: adj(a) = 0
GENERAL = np.array([[0.3, -1.2, 0.5], [2.0, 0.1, -0.7], [0.4, 0.9, 1.5]])


def adjugate(a):
    n = a.shape[0]
    cof = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            cof[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return cof.T


def central(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("a", [RANK2, RANK1, GENERAL], ids=["rank2", "rank1", "general"])
@pytest.mark.parametrize("det", [snp.linalg.det, ssl.det], ids=["numpy", "scipy"])
def test_det_gradient_is_the_adjugate_transposed(x64, a, det):
    want = adjugate(a).T                       # d det / d a_ij = adj(a)_ji
    np.testing.assert_allclose(np.asarray(secant.grad(det)(a)), want, atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(det))(a)), want, atol=1e-12)
    np.testing.assert_allclose(want, central(np.linalg.det, a), atol=1e-8)


def test_det_jvp_and_vmap_at_singular(x64):
    t = np.arange(9.0).reshape(3, 3) / 7
    _, tangent = secant.jvp(snp.linalg.det, (RANK2,), (t,))
    assert float(tangent) == pytest.approx(np.trace(adjugate(RANK2) @ t), abs=1e-12)
    stack = np.stack([RANK2, GENERAL, RANK1])
    got = np.asarray(secant.vmap(secant.grad(snp.linalg.det))(stack))
    np.testing.assert_allclose(got, np.stack([adjugate(m).T for m in stack]), atol=1e-12)
    # the batched primitive too (a stack passed whole)
    got = np.asarray(secant.grad(lambda s: snp.sum(snp.linalg.det(s)))(stack))
    np.testing.assert_allclose(got, np.stack([adjugate(m).T for m in stack]), atol=1e-12)


@pytest.mark.parametrize("a", [GENERAL, GENERAL + np.eye(3)], ids=["general", "shifted"])
def test_det_second_derivative(x64, a):
    # (at a singular a the second derivative is still NaN: it goes through LU's derivative,
    # which solves with the singular U; JAX's is finite there)
    f = lambda m: snp.sum(secant.grad(snp.linalg.det)(m))                  # noqa: E731
    want = central(lambda m: np.sum(adjugate(m).T), a, 1e-5)
    np.testing.assert_allclose(np.asarray(secant.grad(f)(a)), want, atol=1e-6)


def test_det_one_by_one_and_integers(x64):
    assert float(secant.grad(lambda m: snp.linalg.det(m))(np.array([[0.0]]))[0, 0]) == 1.0
    assert float(snp.linalg.det(np.array([[2, 1], [1, 3]]))) == pytest.approx(5.0)
    g = secant.grad(snp.linalg.det)(np.array([[2.0, 1], [4, 2]]))          # singular 2x2
    np.testing.assert_allclose(np.asarray(g), [[2.0, -4], [-1, 2]], atol=1e-12)


def test_det_float32():
    g = secant.jit(secant.grad(snp.linalg.det))(RANK2.astype(np.float32))
    assert np.asarray(g).dtype == np.float32
    np.testing.assert_allclose(np.asarray(g), adjugate(RANK2).T, atol=1e-5)


# --- jax.scipy.linalg's matrix constructors that secant lacked ---------------------------------
def test_hankel_circulant_companion_hilbert_against_scipy(x64):
    import scipy.linalg as sl
    c, r = np.array([1.0, 2, 3]), np.array([9.0, 5, 6, 7])
    np.testing.assert_array_equal(np.asarray(ssl.hankel(c)), sl.hankel(c))
    np.testing.assert_array_equal(np.asarray(ssl.hankel(c, r)), sl.hankel(c, r))
    np.testing.assert_array_equal(np.asarray(secant.jit(ssl.hankel)(c, r)), sl.hankel(c, r))
    np.testing.assert_array_equal(np.asarray(ssl.circulant(c)), sl.circulant(c))
    p = np.array([2.0, -3, 1, 5])
    np.testing.assert_allclose(np.asarray(ssl.companion(p)), sl.companion(p), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(ssl.hilbert(4)), sl.hilbert(4), rtol=1e-15)
    # stacks (circulant, companion: leading axes) and vmap (hankel) against loops
    cs = np.stack([c, c + 1])
    np.testing.assert_array_equal(np.asarray(ssl.circulant(cs)), [sl.circulant(v) for v in cs])
    np.testing.assert_array_equal(np.asarray(secant.vmap(ssl.hankel)(cs)),
                                  [sl.hankel(v) for v in cs])
    ps = np.stack([p, p[::-1]])
    np.testing.assert_allclose(np.asarray(ssl.companion(ps)), [sl.companion(v) for v in ps])


def test_companion_gradient(x64):
    # the companion's eigenvalues are the roots: d/dp of sum(roots) = d/dp (-p1 / p0)
    p = np.array([2.0, -3, 1, 5])
    g = secant.grad(lambda q: snp.trace(ssl.companion(q)))(p)
    np.testing.assert_allclose(np.asarray(g), [-p[1] / p[0] ** 2 * -1, -1 / p[0], 0, 0])

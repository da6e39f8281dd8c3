"""jax.scipy.linalg's eigh, qr, svd (SciPy's signatures), block_diag and toeplitz: values
against SciPy in float64, eagerly and under jit, gradients against central differences, vmap
against a loop."""
import numpy as np
import pytest
import scipy.linalg as sl

import secant
import secant.numpy as snp
from tests.central_differences import check_unary
from secant.scipy import linalg as L

rng = np.random.default_rng(5)
M = rng.normal(size=(4, 4))
SYM = M + M.T
TALL = rng.normal(size=(5, 3))
C = rng.normal(size=4)


CASES = {
    # f(x), x, SciPy's f
    # (as JAX's, eigh symmetrizes its input: the gradient is symmetric)
    "eigh_values": (lambda a: L.eigh(a, eigvals_only=True), SYM,
                    lambda a: sl.eigh((a + a.T) / 2, eigvals_only=True)),
    "eigh_upper": (lambda a: L.eigh(a, lower=False)[0], SYM,
                   lambda a: sl.eigh((a + a.T) / 2, lower=False)[0]),
    "qr_full_product": (lambda a: snp.abs(L.qr(a)[1]), TALL, lambda a: np.abs(sl.qr(a)[1])),
    "qr_economic": (lambda a: snp.abs(L.qr(a, mode="economic")[1]), TALL,
                    lambda a: np.abs(sl.qr(a, mode="economic")[1])),
    "qr_r": (lambda a: snp.abs(L.qr(a, mode="r")[0]), TALL,
             lambda a: np.abs(sl.qr(a, mode="r")[0])),
    # geqp3's column order; the factors are those of the permuted matrix, differentiable
    "qr_pivoting_r": (lambda a: L.qr(a, mode="economic", pivoting=True)[1], TALL,
                      lambda a: sl.qr(a, mode="economic", pivoting=True)[1]),
    "qr_pivoting_q_wide": (lambda a: L.qr(a, pivoting=True)[0], TALL.T[:, ::-1],
                           lambda a: sl.qr(a, pivoting=True)[0]),
    "qr_pivoting_r_square": (lambda a: L.qr(a, mode="r", pivoting=True)[0], M,
                             lambda a: sl.qr(a, mode="r", pivoting=True)[0]),
    "svd_values": (lambda a: L.svd(a, compute_uv=False), TALL,
                   lambda a: sl.svd(a, compute_uv=False)),
    "block_diag": (lambda a: L.block_diag(a[:2, :2], a[2], 3.0), M,
                   lambda a: sl.block_diag(a[:2, :2], a[2], 3.0)),
    "toeplitz": (lambda a: L.toeplitz(a), C, lambda a: sl.toeplitz(a)),
    "toeplitz_r": (lambda a: L.toeplitz(a, a[:3] * 2), C, lambda a: sl.toeplitz(a, a[:3] * 2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_gradients_and_vmap(name, x64):
    check_unary(*CASES[name], scale=1.5)


def test_factors_reconstruct_and_errors(x64):
    w, v = L.eigh(SYM)
    np.testing.assert_allclose(np.asarray(v * w) @ np.asarray(v).T, SYM, atol=1e-12)
    q, r = L.qr(TALL)
    assert q.shape == (5, 5) and r.shape == (5, 3)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), TALL, atol=1e-12)
    u, s, vh = L.svd(TALL, full_matrices=False)
    np.testing.assert_allclose((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), TALL, atol=1e-12)
    with pytest.raises(NotImplementedError):
        L.eigh(SYM, SYM)
    for a in (TALL, TALL.T, M):           # the permutation: geqp3's, eagerly and under jit
        np.testing.assert_array_equal(np.asarray(L.qr(a, pivoting=True)[2]),
                                      sl.qr(a, pivoting=True)[2])
        np.testing.assert_array_equal(np.asarray(secant.jit(L.qr, static_argnames="pivoting")(
            a, pivoting=True)[2]), sl.qr(a, pivoting=True)[2])
    q, r, p = L.qr(TALL.T, pivoting=True)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), TALL.T[:, np.asarray(p)],
                               atol=1e-12)
    stack = np.random.default_rng(7).normal(size=(3, 4, 5))
    np.testing.assert_array_equal(np.asarray(L.qr(stack, pivoting=True)[2]),
                                  [sl.qr(a, pivoting=True)[2] for a in stack])

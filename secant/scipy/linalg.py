"""secant.scipy.linalg: scipy.linalg's factorizations and solvers, as jax.scipy.linalg.

Written with secant.numpy and secant.lax.linalg's ops (cholesky, triangular_solve, the LU
factors and pivots), so grad, jvp and vmap read these functions' source. Matrices may be
stacked over leading axes.
"""
import numpy as np

import secant.numpy as snp
from secant.backends.errors import where as _where
from secant import lax
from secant.numpy import linalg as _np_linalg
from secant.numpy.linalg import _constant, _inexact, _permute_rows
from secant.scipy.linalg_sqrtm import sqrtm  # noqa: F401  (jax.scipy.linalg's)
from secant.scipy.linalg_schur import (funm, hessenberg, rsf2csf, schur,  # noqa: F401
                                       solve_sylvester)

__secant_by_source__ = True      # transforms read this module like user code


def _mH(x):
    return snp.conj(snp.swapaxes(x, -1, -2))


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of each Hermitian positive-definite matrix: upper U (a = U^H U) by
    default, lower L (a = L L^H) with lower=True. As scipy and JAX, only the triangle named by
    `lower` is read (not symmetrised), so its derivative is nonzero in that triangle only (JAX's
    also has the other triangle's entries; both agree along Hermitian directions)."""
    a = _inexact(a)
    if lower:
        return lax.linalg.cholesky(a, symmetrize_input=False)
    return _mH(lax.linalg.cholesky(_mH(a), symmetrize_input=False))


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(c, lower) for cho_solve: c the factor (zeros in its other triangle)."""
    return cholesky(a, lower=lower), lower


def _as_matrix(b):
    return b[:, None] if np.ndim(b) == 1 else b


def _as_given(x, b):
    return x[:, 0] if np.ndim(b) == 1 else x


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """x with a x = b, from cho_factor(a): two triangular solves."""
    c, lower = c_and_lower
    rhs = _as_matrix(_inexact(b)).astype(snp.result_type(c, b))
    # both forms, selected: `lower` is a Python bool, but the transforms read what a call
    # returns as values (cho_factor's tuple), so it cannot steer an `if` in a derivative
    y = lax.linalg.triangular_solve(c, rhs, left_side=True, lower=True)     # L L^H x = b
    x_lower = lax.linalg.triangular_solve(c, y, left_side=True, lower=True, transpose_a=True,
                                          conjugate_a=True)
    y = lax.linalg.triangular_solve(c, rhs, left_side=True, lower=False, transpose_a=True,
                                    conjugate_a=True)                       # U^H U x = b
    x_upper = lax.linalg.triangular_solve(c, y, left_side=True, lower=False)
    x = snp.where(lower, x_lower, x_upper)
    return _as_given(x, b)


_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """x with op(a) x = b, a triangular (only its lower or upper triangle is read); trans 0/'N':
    a, 1/'T': a^T, 2/'C': a^H."""
    transpose_a, conjugate_a = _TRANS[trans]
    a = _inexact(a)
    rhs = _as_matrix(_inexact(b))
    dtype = snp.result_type(a, rhs)
    x = lax.linalg.triangular_solve(a.astype(dtype), rhs.astype(dtype), left_side=True,
                                    lower=lower, transpose_a=transpose_a,
                                    conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    return _as_given(x, b)


@_constant
def _permutation_matrix(perm, dtype):
    """P with a = P L U: P[perm[i], i] = 1."""
    n = np.shape(perm)[-1]
    rows = snp.arange(n, dtype=snp.int32)[:, None]
    return (perm[..., None, :] == rows).astype(dtype)


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """(P, L, U) with a = P L U (or (P L, U) with permute_l); a is m x n, k = min(m, n): P
    m x m, L m x k (unit lower), U k x n (upper)."""
    a = _inexact(a)
    factors, _, perm = lax.linalg.lu(a)
    m, n = np.shape(a)[-2:]
    k = min(m, n)
    lower = snp.where(np.tri(m, k, -1, dtype=bool), factors[..., :, :k], 0) + \
        snp.eye(m, k, dtype=a.dtype)
    upper = snp.where(np.tri(k, n, -1, dtype=bool), 0, factors[..., :k, :])
    p = _permutation_matrix(perm, a.dtype)
    if permute_l:
        out = (p @ lower, upper)
    else:
        out = (p, lower, upper)
    return out


def lu_factor(a, overwrite_a=False, check_finite=True):
    """(lu, piv): L and U packed in one matrix, and LAPACK's 0-based row swaps."""
    a = _inexact(a)
    return lax.linalg.lu_factors(a), lax.linalg.lu_pivots(a)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """x with op(a) x = b from lu_factor(a) (trans 0: a, 1: a^T, 2: a^H)."""
    factors, piv = lu_and_piv
    perm = lax.linalg.lu_pivots_to_permutation(piv, np.shape(factors)[-1])
    rhs = _as_matrix(_inexact(b)).astype(snp.result_type(factors, b))
    transpose_a, conjugate_a = _TRANS[trans]
    if not transpose_a:         # x = U^-1 L^-1 P b
        y = lax.linalg.triangular_solve(factors, _permute_rows(rhs, perm), left_side=True,
                                        lower=True, unit_diagonal=True)
        x = lax.linalg.triangular_solve(factors, y, left_side=True, lower=False)
    else:                       # a^T = U^T L^T P: x = P^T L^-T U^-T b
        y = lax.linalg.triangular_solve(factors, rhs, left_side=True, lower=False,
                                        transpose_a=True, conjugate_a=conjugate_a)
        z = lax.linalg.triangular_solve(factors, y, left_side=True, lower=True,
                                        transpose_a=True, conjugate_a=conjugate_a,
                                        unit_diagonal=True)
        x = _permutation_matrix(perm, z.dtype) @ z
    return _as_given(x, b)


def det(a, overwrite_a=False, check_finite=True):
    return _np_linalg.det(a)


def inv(a, overwrite_a=False, check_finite=True):
    return _np_linalg.inv(a)


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a="gen"):
    """x with a x = b: by LU, or by Cholesky for assume_a='pos' (a then read as Hermitian)."""
    if assume_a in ("pos", "positive definite"):
        x = cho_solve(cho_factor(a, lower=lower), b)
    elif assume_a in ("gen", "general", "sym", "symmetric", "her", "hermitian"):
        x = _np_linalg.solve(a, b)
    else:
        raise ValueError(f"solve: assume_a={assume_a!r} is not one of 'gen', 'sym', 'her', "
                         "'pos'")
    return x


# --- expm: Pade approximant of degree 13 with scaling and squaring (Higham 2005) -------------------
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152
_MAX_SQUARINGS = 16     # |a|_1 up to 5.37 * 2**16; beyond, NaN rather than a wrong answer


def expm(A, *, upper_triangular=False, max_squarings=_MAX_SQUARINGS):
    """The matrix exponential of each square matrix: a / 2**s (s from its 1-norm) through the
    [13/13] Pade approximant r = (V - U)^-1 (V + U), then squared s times (s static at most
    max_squarings, as jax.scipy.linalg.expm; NaN where a needs more)."""
    a = _inexact(A)
    n = np.shape(a)[-1]
    if n == 0:      # exp of a 0 x 0 matrix: itself (the 1-norm below has nothing to reduce)
        return a
    b = _PADE13
    norm1 = snp.max(snp.sum(snp.abs(a), axis=-2), axis=-1)
    s = snp.maximum(snp.ceil(snp.log2(norm1 / _THETA13)), 0)
    a = a / (2.0 ** s)[..., None, None]
    ident = snp.eye(n, dtype=a.dtype)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * ident)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
        + b[0] * ident
    r = _np_linalg.solve(v - u, v + u)
    steps = s[..., None, None]
    for i in range(max_squarings):
        r = snp.where(i < steps, r @ r, r)
    return snp.where(steps > max_squarings, np.nan, r)


# --- spectral factorizations with SciPy's signatures, and structured matrices -------------------
def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices, from the `lower` (or
    upper) triangle; the generalized problem (b) is not supported, as in JAX."""
    if b is not None or type != 1 or eigvals is not None:
        raise NotImplementedError("eigh: only b=None, type=1 and eigvals=None are supported (as "
                                  "JAX's)" + _where())
    w, v = _np_linalg.eigh(_inexact(a), UPLO="L" if lower else "U")
    if eigvals_only:
        return w
    return w, v


def _qr_pivots(a):
    """The column permutation of LAPACK's geqp3 (QR with column pivoting): step j swaps into
    place j the column (of those from j on) whose part orthogonal to the columns before it is
    longest, the first of equals. Integers: no derivative."""
    residual = lax.stop_gradient(a)
    m, n = np.shape(a)[-2:]
    columns = snp.arange(n)
    perm = snp.broadcast_to(columns, np.shape(a)[:-2] + (n,))
    for j in range(min(m, n)):
        norms = snp.sum(snp.real(residual * snp.conj(residual)), axis=-2)
        pick = snp.argmax(snp.where(columns < j, -1.0, norms), axis=-1)[..., None]
        swap = snp.where(columns == j, pick, snp.where(columns == pick, j, columns))
        residual = snp.take_along_axis(residual, swap[..., None, :], axis=-1)
        perm = snp.take_along_axis(perm, swap, axis=-1)
        col = residual[..., :, j:j + 1]
        length = snp.sqrt(snp.sum(snp.real(col * snp.conj(col)), axis=-2, keepdims=True))
        unit = col / snp.where(length == 0, 1.0, length)
        residual = residual - unit * snp.sum(snp.conj(unit) * residual, axis=-2, keepdims=True)
    return perm


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """QR factorization: mode 'full' (square Q), 'economic' (reduced) or 'r' (a tuple (r,));
    with `pivoting`, also the column permutation p (geqp3's order) with a[..., p] = q r, the
    factors differentiable as those of a[..., p]."""
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    a = _inexact(a)
    if pivoting:
        p = _qr_pivots(a)
        a = snp.take_along_axis(a, p[..., None, :], axis=-1)
    q, r = _np_linalg.qr(a, "reduced" if mode == "economic" else "complete")
    out = (r,) if mode == "r" else (q, r)
    return out + (p,) if pivoting else out


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """Singular value decomposition (u, s, vh), or s alone without compute_uv."""
    return _np_linalg.svd(_inexact(a), full_matrices=full_matrices, compute_uv=compute_uv)


def block_diag(*arrs):
    """The block-diagonal matrix of the given matrices (scalars and vectors count as 1-row
    matrices)."""
    if not arrs:
        return snp.zeros((1, 0))
    blocks = [snp.atleast_2d(snp.asarray(x)) for x in arrs]
    dtype = snp.result_type(*blocks)
    widths = [b.shape[1] for b in blocks]
    total = sum(widths)
    rows = []
    before = 0
    for b, w in zip(blocks, widths):
        rows.append(snp.concatenate([snp.zeros((b.shape[0], before), dtype), b.astype(dtype),
                                     snp.zeros((b.shape[0], total - before - w), dtype)],
                                    axis=1))
        before = before + w
    return snp.concatenate(rows, axis=0)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column c and first row r (conj(c) when None; r[0] is
    ignored)."""
    c = snp.ravel(snp.asarray(c))
    r = snp.conj(c) if r is None else snp.ravel(snp.asarray(r))
    n, m = c.shape[0], r.shape[0]
    values = snp.concatenate([snp.flip(r[1:]), c])      # r[m-1], ..., r[1], c[0], ..., c[n-1]
    index = np.arange(n)[:, None] - np.arange(m)[None, :] + (m - 1)
    return snp.take(values, index)


def hankel(c, r=None):
    """The Hankel matrix with first column c and last row r (zeros when None; r[0] is
    ignored): H[i, j] = c[i + j] for i + j < n, r[i + j - n + 1] after; c and r are 1-D."""
    c = snp.asarray(c)
    r = snp.zeros_like(c) if r is None else snp.asarray(r)
    n, m = np.shape(c)[-1], np.shape(r)[-1]
    values = snp.concatenate([c, r[1:]], axis=-1)
    return values[np.arange(n)[:, None] + np.arange(m)[None, :]]


def circulant(c):
    """The circulant matrix with first column c: C[i, j] = c[(i - j) mod n], for each c
    stacked over leading axes."""
    c = snp.asarray(c)
    n = np.shape(c)[-1]
    return c[..., (np.arange(n)[:, None] - np.arange(n)[None, :]) % n]


def companion(a):
    """The companion matrix of the polynomial with coefficients a (highest degree first,
    a[0] != 0; stacked over leading axes): first row -a[1:] / a[0], ones below the
    diagonal."""
    a = _inexact(snp.asarray(a))
    n = np.shape(a)[-1]
    if n < 2:
        raise ValueError(f"companion: a needs at least two coefficients, got {n}{_where()}")
    first = -a[..., 1:] / a[..., :1]
    below = np.eye(n - 1, n - 1, -1, dtype=bool)
    rows = snp.where(np.arange(n - 1)[:, None] == 0, first[..., None, :], 0.0)
    return snp.where(below, snp.ones_like(rows), rows)


def hilbert(n):
    """The n x n Hilbert matrix 1 / (i + j + 1), in the default float type."""
    index = np.arange(n)
    return snp.asarray(1.0 / (index[:, None] + index[None, :] + 1), dtype=snp.result_type(0.0))


from secant.scipy.linalg_more import (eigh_tridiagonal, expm_frechet, polar,  # noqa: E402,F401
                                      qr_multiply)
from secant.scipy.linalg_special import (convolution_matrix, dft, fiedler,  # noqa: E402,F401
                                         fiedler_companion, hadamard, helmert, invhilbert,
                                         invpascal, leslie, pascal)

"""scipy.linalg's polar, expm_frechet, eigh_tridiagonal and qr_multiply (re-exported by
secant.scipy.linalg), as jax.scipy.linalg's, written with secant.numpy and the factorizations of
secant.scipy.linalg: the transforms read them as source, so each is differentiable where its
pieces are (polar through the SVD, expm_frechet through expm, eigh_tridiagonal through eigh,
qr_multiply through QR).
"""
import numpy as np

import secant.numpy as snp
import secant.scipy.linalg as _sl
from secant.backends.errors import SecantValueError, UnsupportedError, where as _where
from secant.numpy.linalg import _inexact

__secant_by_source__ = True      # transforms read this module like user code


def _mH(x):
    return snp.conj(snp.swapaxes(x, -1, -2))


def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
    """(u, p) with a = u p (side 'right': p n x n) or a = p u ('left': p m x m), u with
    orthonormal columns (rows when n > m), p Hermitian positive semi-definite. Both methods
    are computed from the SVD a = W diag(s) Vh: u = W Vh, p = V diag(s) Vh (or W diag(s) W^H),
    which QDWH converges to; eps and max_iterations (QDWH's) are accepted and unused."""
    a = _inexact(a)
    if np.ndim(a) < 2:
        raise SecantValueError("polar: the input `a` must be at least a 2-D array" + _where())
    if side not in ("right", "left"):
        raise SecantValueError("polar: the argument `side` must be either 'right' or 'left'"
                               + _where())
    if method not in ("qdwh", "svd"):
        raise SecantValueError(f"Unknown polar decomposition method {method}." + _where())
    w, s, vh = snp.linalg.svd(a, full_matrices=False)
    s = s.astype(w.dtype)
    unitary = w @ vh
    if side == "right":
        posdef = (_mH(vh) * s[..., None, :]) @ vh
    else:
        posdef = (w * s[..., None, :]) @ _mH(w)
    return unitary, posdef


def expm_frechet(A, E, *, method=None, compute_expm=True):
    """(expm(A), L(A, E)), L the Frechet derivative of expm at A in direction E (only L with
    compute_expm=False): the blocks of expm([[A, E], [0, A]]) = [[e^A, L], [0, e^A]]."""
    A, E = _inexact(A), _inexact(E)
    if np.ndim(A) < 2 or np.shape(A)[-1] != np.shape(A)[-2]:
        raise SecantValueError(f"expected A to be a (batched) square matrix, got A.shape="
                               f"{np.shape(A)}{_where()}")
    if np.ndim(E) < 2 or np.shape(E)[-1] != np.shape(E)[-2]:
        raise SecantValueError(f"expected E to be a (batched) square matrix, got E.shape="
                               f"{np.shape(E)}{_where()}")
    if np.shape(A) != np.shape(E):
        raise SecantValueError(f"expected A and E to be the same shape, got A.shape="
                               f"{np.shape(A)} E.shape={np.shape(E)}{_where()}")
    dtype = snp.result_type(A, E)
    A, E = A.astype(dtype), E.astype(dtype)
    n = np.shape(A)[-1]
    block = snp.concatenate([snp.concatenate([A, E], axis=-1),
                             snp.concatenate([snp.zeros_like(A), A], axis=-1)], axis=-2)
    both = _sl.expm(block)
    frechet = both[..., :n, n:]
    if compute_expm:
        return both[..., :n, :n], frechet
    return frechet


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None,
                     key=None):
    """Eigenvalues (ascending) of the real symmetric tridiagonal matrix with diagonal d and
    off-diagonal e (and its eigenvectors, as SciPy's, without eigvals_only); select 'i': those
    of indices select_range[0] to select_range[1] (inclusive). Computed by eigh of the matrix
    (so differentiable in d and e); tol and key are accepted and unused."""
    d, e = _inexact(d), _inexact(e)
    dtype = snp.result_type(d, e)
    if dtype.kind == "c":
        raise SecantValueError("eigh_tridiagonal: d and e must be real" + _where())
    n = np.shape(d)[-1]
    if np.shape(e)[-1] != max(n - 1, 0):
        raise SecantValueError(f"eigh_tridiagonal: e must have one element fewer than d, got "
                               f"shapes {np.shape(d)} and {np.shape(e)}{_where()}")
    if select == "v":
        raise UnsupportedError("eigh_tridiagonal(..., select='v') is not implemented (as in "
                               "JAX)" + _where())
    if select not in ("a", "i"):
        raise SecantValueError(f"eigh_tridiagonal: select must be 'a', 'i' or 'v', got "
                               f"{select!r}{_where()}")
    off = snp.concatenate([e.astype(dtype), snp.zeros(np.shape(e)[:-1] + (1,), dtype)],
                          axis=-1)
    rows = np.arange(n)[:, None]
    cols = np.arange(n)[None, :]
    matrix = (snp.where(rows == cols, d.astype(dtype)[..., None, :], 0)
              + snp.where(cols == rows + 1, off[..., :, None], 0)
              + snp.where(rows == cols + 1, off[..., None, :], 0))
    w, v = snp.linalg.eigh(matrix)
    if select == "i":
        lo, hi = select_range
        w, v = w[..., lo:hi + 1], v[..., lo:hi + 1]
    return w if eigvals_only else (w, v)


def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False,
                overwrite_c=False):
    """(q @ c (mode 'left') or c @ q ('right'), r) with a = q r economic (q m x k, r k x n,
    k = min(m, n)): conj(q) with conjugate; with pivoting, also geqp3's column order p
    (a[..., p] = q r). A 1-D c is a column ('left') or a row ('right'), and so is the product."""
    a, c = _inexact(a), _inexact(c)
    dtype = snp.result_type(a, c)
    a, c = a.astype(dtype), c.astype(dtype)
    if mode not in ("right", "left"):
        raise SecantValueError(f"mode must be 'right' or 'left', got {mode!r}" + _where())
    onedim = np.ndim(c) == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = np.shape(a)[-2:]
    k = min(m, n)
    if mode == "left" and np.shape(c)[-2] != k:
        raise SecantValueError(f"Array shapes are not compatible for Q @ c operation: a has "
                               f"shape {np.shape(a)} so Q has {k} columns, but c has "
                               f"{np.shape(c)[-2]} rows (expected {k}).{_where()}")
    if mode == "right" and np.shape(c)[-1] != m:
        raise SecantValueError(f"Array shapes are not compatible for c @ Q operation: a has "
                               f"shape {np.shape(a)} so Q has {m} rows, but c has "
                               f"{np.shape(c)[-1]} columns (expected {m}).{_where()}")
    factors = _sl.qr(a, mode="economic", pivoting=pivoting)
    q, r = factors[0], factors[1]
    if conjugate:
        q = snp.conj(q)
    product = q @ c if mode == "left" else c @ q
    if onedim:
        product = snp.ravel(product)
    return (product, r, factors[2]) if pivoting else (product, r)

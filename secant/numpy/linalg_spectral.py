"""numpy.linalg's spectral family: qr, eigh, eigvalsh, svd, svdvals, pinv, matrix_rank, lstsq,
eig, eigvals, and the spectral matrix norms (ord 2, -2, 'nuc') for norm.

Every function takes stacks of matrices (leading batch axes, as NumPy) and follows JAX's
semantics (eigh symmetrizes its input by default; pinv's default cutoff is JAX's).

How the transforms see them: each decomposition is written, for grad/jvp/vmap, as a short
source (secant/numpy/linalg_spectral_rules.py) calling one op per output (`eigh_values`,
`eigh_vectors`, `svd_values`, `svd_u`, `svd_vh`, `qr_q`, `qr_r`, `eig_values`, `eig_vectors`,
and `pinv`), each with a derivative rule stated in its docstring there and batched as written
(the primitives take leading batch axes). The values here come from one primitive call
(backends/primitives/linalg_spectral.py: LAPACK under jit).
"""
import sys
from collections import namedtuple

import numpy as np

from secant.backends import dtypes
from secant.backends.core import Tracer, bind
from secant.backends.errors import SecantValueError, UnsupportedError, where
from secant.backends.primitives import linalg_spectral as prim
from secant.numpy import conversion, creation, reductions, ufuncs

_shape = sys.modules["secant.numpy.shape"]   # (secant.numpy.shape is also the function shape)

__all__ = ["qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "matrix_rank", "lstsq", "eig",
           "eigvals", "matrix_norm_spectral", "QRResult", "EighResult", "SVDResult",
           "EigResult", "LstsqResult"]

QRResult = namedtuple("QRResult", "Q R")
EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")
SVDResult = namedtuple("SVDResult", "U S Vh")
EigResult = namedtuple("EigResult", "eigenvalues eigenvectors")
LstsqResult = namedtuple("LstsqResult", "x residuals rank s")


def _matrix(a, name):
    a = conversion.to_inexact(conversion.ensure_array(a))
    if a.ndim < 2:
        raise SecantValueError(f"{name} needs an array of at least 2 dimensions (a stack of "
                               f"matrices), got shape {tuple(a.shape)}" + where())
    if a.dtype in (dtypes.float16, dtypes.bfloat16):
        a = a.astype(dtypes.float32)
    return a


def _square(a, name):
    a = _matrix(a, name)
    if a.shape[-1] != a.shape[-2]:
        raise SecantValueError(f"{name} needs square matrices, got shape {tuple(a.shape)}"
                               + where())
    return a


def _h(x):
    """The conjugate transpose of each matrix."""
    return _shape.conjugate(_shape.swapaxes(x, -1, -2)) if dtypes.is_complex(x.dtype) \
        else _shape.swapaxes(x, -1, -2)


# --- the ops: one output each (what the transforms differentiate and batch) ------------------------
def eigh_values(a):
    """Eigenvalues (ascending, real) of Hermitian matrices `a` (the lower triangle is read)."""
    return bind(prim.eigh_p, a)[0]


def eigh_vectors(a):
    """Eigenvectors (columns) of Hermitian matrices `a`, in eigh_values' order."""
    return bind(prim.eigh_p, a)[1]


def svd_values(a):
    """Singular values of `a`, descending."""
    return bind(prim.svd_p, a, full_matrices=False, compute_uv=False)[0]


def svd_u(a, full_matrices=False):
    """The left singular vectors U of a = U diag(s) Vh."""
    return bind(prim.svd_p, a, full_matrices=full_matrices, compute_uv=True)[1]


def svd_vh(a, full_matrices=False):
    """The right singular vectors Vh of a = U diag(s) Vh (rows)."""
    return bind(prim.svd_p, a, full_matrices=full_matrices, compute_uv=True)[2]


def _qr(a, mode):
    m, n = a.shape[-2:]
    k = min(m, n)
    packed, tau = bind(prim.geqrf_p, a)
    rows = m if mode == "complete" else k
    r = _triu(packed[..., :rows, :])
    if mode == "r":
        return None, r
    if m < n:
        reflectors = packed[..., :, :m]
    elif mode == "complete" and m > n:
        reflectors = _shape.pad(packed, [(0, 0)] * (a.ndim - 1) + [(0, m - n)])
    else:
        reflectors = packed
    return bind(prim.householder_product_p, reflectors, tau)[0], r


def _triu(x):
    """The upper triangle of each matrix (zeros below the diagonal)."""
    return x * (1 - creation.tri(x.shape[-2], x.shape[-1], -1, dtype=x.dtype))


def qr_q(a, mode="reduced"):
    """Q of a = Q R (orthonormal columns; m x min(m, n), or m x m when mode='complete')."""
    return _qr(a, mode)[0]


def qr_r(a, mode="reduced"):
    """R of a = Q R (upper triangular)."""
    return _qr(a, mode)[1]


def eig_values(a):
    """Eigenvalues of complex square matrices `a` (LAPACK's geev order)."""
    return bind(prim.eig_p, a)[0]


def eig_vectors(a):
    """Right eigenvectors (unit columns) of complex square matrices `a`."""
    return bind(prim.eig_p, a)[1]


def default_rtol(shape, dtype, rtol=None):
    """rtol, or JAX's default relative cutoff for singular values: 10 * max(m, n) * eps."""
    if rtol is not None:
        return rtol
    return 10.0 * max(shape[-2:]) * float(dtypes.finfo(_real_dtype(dtype)).eps)


def _real_dtype(dt):
    return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(
        np.dtype(dt), np.dtype(dt))


def _cutoff(s, shape, rtol, rcond):
    rtol = default_rtol(shape, s.dtype, rcond if rcond is not None else rtol)
    return rtol * reductions.max(s, axis=-1, keepdims=True)


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse: V diag(1/s) U^H over the singular values above
    rtol * max(s) (JAX's default rtol: 10 * max(m, n) * eps). hermitian=True: from the
    eigendecomposition a = V diag(w) V^H instead (s = |w|): V diag(1/w) V^H over the w with
    |w| above the cutoff (a is read as (a + a^H) / 2, as JAX)."""
    a = _matrix(a, "pinv")
    if 0 in a.shape[-2:]:       # no singular values: the n x m zeros, as JAX
        return _h(creation.zeros_like(a))
    if hermitian:
        w, v = bind(prim.eigh_p, _hermitian(_square(a, "pinv(hermitian=True)"), None, True))
        s = ufuncs.abs(w)
        cut = _cutoff(s, a.shape, rtol, rcond)
        w_inv = ufuncs.where(s > cut, 1 / ufuncs.where(s > cut, w, 1), 0).astype(w.dtype)
        return (v * _shape.expand_dims(w_inv, -2).astype(v.dtype)) @ _h(v)
    s, u, vh = bind(prim.svd_p, a, full_matrices=False, compute_uv=True)
    cut = _cutoff(s, a.shape, rtol, rcond)
    s_inv = ufuncs.where(s > cut, 1 / ufuncs.where(s > cut, s, 1), 0).astype(s.dtype)
    return _h(vh * _shape.expand_dims(s_inv, -1)) @ _h(u)


# --- the public functions (values; the transforms read their sources) ------------------------------
def _hermitian(a, UPLO, symmetrize_input):
    """The Hermitian matrix eigh decomposes: (a + a^H) / 2 (JAX's default), else the triangle
    `UPLO` ('L' or 'U') mirrored (NumPy's reading)."""
    if symmetrize_input:
        return (a + _h(a)) / 2
    half, strict = triangle_masks(a.shape[-1], UPLO, a.dtype)
    return a * half + _h(a * strict)


def triangle_masks(n, UPLO, dtype):
    """Masks of the triangle `UPLO` ('L' or 'U'; None: 'L') with and without the diagonal."""
    if UPLO in (None, "L"):
        return creation.tri(n, dtype=dtype), creation.tri(n, k=-1, dtype=dtype)
    if UPLO == "U":
        return 1 - creation.tri(n, k=-1, dtype=dtype), 1 - creation.tri(n, dtype=dtype)
    raise SecantValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}" + where())


def eigh(a, UPLO=None, symmetrize_input=True):
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices: EighResult(w, v)."""
    a = _hermitian(_square(a, "eigh"), UPLO, symmetrize_input)
    w, v = bind(prim.eigh_p, a)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
    a = _hermitian(_square(a, "eigvalsh"), UPLO, symmetrize_input)
    return eigh_values(a)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """SVDResult(U, S, Vh) with a = U diag(S) Vh (S descending), or S when not compute_uv.
    hermitian=True: from eigh, as NumPy (linalg_spectral_rules.hermitian_svd)."""
    a = _matrix(a, "svd")
    if hermitian:
        out = hermitian_svd(_square(a, "svd(hermitian=True)"), compute_uv)
        return SVDResult(*out) if compute_uv else out
    if not compute_uv:
        return svd_values(a)
    s, u, vh = bind(prim.svd_p, a, full_matrices=full_matrices, compute_uv=True)
    return SVDResult(u, s, vh)


def svdvals(x, /):
    return svd_values(_matrix(x, "svdvals"))


def qr(a, mode="reduced"):
    """QRResult(Q, R) for mode 'reduced' or 'complete'; R alone for mode 'r'."""
    if mode not in ("reduced", "complete", "r"):
        raise UnsupportedError(f"qr(mode={mode!r}): secant supports 'reduced', 'complete' and "
                               f"'r'" + where())
    a = _matrix(a, "qr")
    q, r = _qr(a, mode)
    return r if mode == "r" else QRResult(q, r)


def _complex(a):
    return a if dtypes.is_complex(a.dtype) else a.astype(
        dtypes.complex128 if a.dtype == dtypes.float64 else dtypes.complex64)


def eig(a):
    """EigResult(w, v) of square matrices (complex results, as JAX; computed on the CPU)."""
    w, v = bind(prim.eig_p, _complex(_square(a, "eig")))
    return EigResult(w, v)


def eigvals(a):
    return eig_values(_complex(_square(a, "eigvals")))


def matrix_rank(M, rtol=None, hermitian=False, *, tol=None):
    """The number of singular values above tol (default rtol * max(s), rtol as in pinv);
    hermitian=True: of the eigenvalues' magnitudes (eigh, as NumPy)."""
    M = conversion.to_inexact(conversion.ensure_array(M))
    if M.ndim < 2:
        return reductions.any(M != 0).astype(dtypes.default_int())
    if hermitian:
        s = ufuncs.abs(eigh_values(_hermitian(_square(M, "matrix_rank(hermitian=True)"), None,
                                              True)))
    else:
        s = svd_values(M)
    if tol is None:
        tol = _cutoff(s, M.shape, rtol, None)
    return reductions.sum(s > tol, axis=-1).astype(dtypes.default_int())


def lstsq(a, b, rcond=None):
    """LstsqResult(x, residuals, rank, s): x minimises |b - a x| (the pseudo-inverse's
    solution); residuals: squared norms per column of b when m > n and a has full rank n, else
    (as NumPy) an empty array; under jit, grad or vmap, where the rank is a traced value and
    cannot choose a shape, a rank-deficient a (m > n) gives NaN residuals instead. rank and
    singular values of a. `rcond` as NumPy: singular values at most rcond * max(s) count as
    zero (None or negative: eps * max(m, n))."""
    a = _matrix(a, "lstsq")
    b = conversion.asarray(b, a.dtype)
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise SecantValueError(f"lstsq needs a of shape (m, n) and b of shape (m,) or (m, k), got "
                               f"{tuple(a.shape)} and {tuple(b.shape)}" + where())
    m, n = a.shape
    rtol = lstsq_rtol(a.shape, a.dtype, rcond)
    p = pinv(a, rtol)
    x = p @ b
    s = svd_values(a)
    rank = matrix_rank(a, rtol)
    if m > n:
        r = b - a @ x
        residuals = reductions.sum(_shape.real(r * _shape.conjugate(r)), axis=0)
        residuals = _shape.reshape(residuals, residual_shape(b.shape))
        if isinstance(rank, Tracer):     # traced: the shape cannot depend on the rank
            residuals = ufuncs.where(rank == n, residuals, np.nan).astype(s.dtype)
        elif int(rank) < n:              # NumPy: none for a rank-deficient a
            residuals = creation.zeros((0,), s.dtype)
    else:
        residuals = creation.zeros((0,), s.dtype)
    return LstsqResult(x, residuals, rank, s)


def matrix_norm_spectral(x, ord, axis=(-2, -1), keepdims=False):
    """The matrix norms from singular values: ord 2 (the largest), -2 (the smallest), 'nuc'
    (their sum), over the two axes `axis`."""
    x = conversion.to_inexact(conversion.ensure_array(x))
    ax = two_axes(axis, x.ndim)
    s = svd_values(_shape.moveaxis(x, ax, (-2, -1)))
    if ord == 2:
        out = reductions.max(s, axis=-1)
    elif ord == -2:
        out = reductions.min(s, axis=-1)
    elif ord == "nuc":
        out = reductions.sum(s, axis=-1)
    else:
        raise SecantValueError(f"matrix_norm_spectral: ord must be 2, -2 or 'nuc', got {ord!r}"
                               + where())
    if keepdims:
        out = _shape.reshape(out, kept_shape(x.shape, ax))
    return out


# --- static helpers the sources and rules call (shapes and checks) ------------------------------------
def lstsq_rtol(shape, dtype, rcond):
    """NumPy's rcond for lstsq (None or negative: eps * max(m, n))."""
    if rcond is None or rcond < 0:
        return float(dtypes.finfo(_real_dtype(dtype)).eps) * max(shape[-2:])
    return rcond


def residual_shape(b_shape):
    return (1,) if len(b_shape) == 1 else (b_shape[-1],)


def two_axes(axis, ndim):
    if len(axis) != 2 or axis[0] % ndim == axis[1] % ndim:
        raise SecantValueError(f"a matrix norm needs two distinct axes, got {axis}" + where())
    return tuple(a % ndim for a in axis)


def kept_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def qr_rule_size(shape):
    """n for qr_q's and qr_r's rules, which need m >= n (qr's source splits wide matrices)."""
    m, n = shape[-2:]
    if m < n:
        raise UnsupportedError(f"qr_q / qr_r have derivatives for m >= n; got shape "
                               f"{tuple(shape)} (numpy.linalg.qr splits wide matrices)")
    return n


from secant.numpy.linalg_spectral_rules import (  # noqa: E402,F401  (the rules, by name for the templates)
    hermitian_svd, eigh_values_jvp, eigh_values_vjp, eigh_vectors_jvp, eigh_vectors_vjp, svd_values_jvp,
    svd_values_vjp, svd_u_jvp, svd_u_vjp, svd_vh_jvp, svd_vh_vjp, qr_q_jvp, qr_q_vjp, qr_r_jvp,
    qr_r_vjp, eig_values_jvp, eig_values_vjp, eig_vectors_jvp, eig_vectors_vjp, pinv_jvp,
    pinv_vjp)

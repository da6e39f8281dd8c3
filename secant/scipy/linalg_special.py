"""scipy.linalg's special matrices (re-exported by secant.scipy.linalg), as jax.scipy.linalg's:
those of a size alone (dft, hadamard, helmert, invhilbert, pascal, invpascal) are exact NumPy
constants in the default float (int, complex) type; those of an array (convolution_matrix,
fiedler, fiedler_companion, leslie) are written with secant.numpy, stacked over leading axes
and differentiable in it.
"""
import math
import operator

import numpy as np

import secant.numpy as snp
from secant.backends.errors import SecantValueError, where as _where
from secant.numpy.linalg import _inexact

__secant_by_source__ = True      # transforms read this module like user code


def _default(kind):
    return snp.result_type({"f": 0.0, "c": 0j, "i": 0}[kind])


def dft(n, scale=None, *, dtype=None):
    """The n x n discrete Fourier transform matrix exp(-2 pi i j k / n) (scale 'sqrtn': divided
    by sqrt(n), 'n': by n), in the default complex type or `dtype`."""
    if scale not in (None, "sqrtn", "n"):
        raise SecantValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}." + _where())
    dtype = _default("c") if dtype is None else np.dtype(dtype)
    if dtype.kind != "c":
        raise SecantValueError(f"dtype must be a complex floating-point type; got {dtype}."
                               + _where())
    k = np.arange(n)
    omegas = np.exp(-2j * np.pi * ((k[:, None] * k[None, :]) % max(n, 1)) / max(n, 1))
    omegas = omegas / {None: 1, "sqrtn": math.sqrt(n), "n": n}[scale]
    return snp.asarray(omegas, dtype=dtype)


def hadamard(n, dtype=int):
    """The n x n Hadamard matrix (Sylvester's construction; n a power of 2)."""
    if n < 1 or n & (n - 1):
        raise SecantValueError(f"n must be a positive power of 2; got {n}." + _where())
    h = np.ones((1, 1), np.int64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    dtype = _default("i") if dtype is int else dtype
    return snp.asarray(h, dtype=dtype)


def helmert(n, full=False):
    """The (n - 1) x n Helmert matrix (n x n with full, its first row 1 / sqrt(n))."""
    n = operator.index(n)
    if n < 1:
        raise SecantValueError(f"n must be a positive integer; got {n}." + _where())
    k = np.arange(1, n)[:, None]
    j = np.arange(n)[None, :]
    denom = np.sqrt(k * (k + 1.0))
    h = np.where(j < k, 1.0 / denom, np.where(j == k, -k / denom, 0.0))
    if full:
        h = np.concatenate([np.full((1, n), 1.0 / np.sqrt(n)), h], axis=0)
    return snp.asarray(h, dtype=_default("f"))


def invhilbert(n):
    """The inverse of the n x n Hilbert matrix (exact integers, as floats)."""
    c = math.comb
    out = [[(-1) ** (i + j) * (i + j + 1) * c(n + i, n - j - 1) * c(n + j, n - i - 1)
            * c(i + j, i) ** 2 for j in range(n)] for i in range(n)]
    return snp.asarray(np.array(out, dtype=float).reshape(n, n), dtype=_default("f"))


def _pascal_lower(n, inverse):
    return np.array([[(-1) ** (i - j) * math.comb(i, j) if inverse else math.comb(i, j)
                      for j in range(n)] for i in range(n)], dtype=float).reshape(n, n)


def _pascal_kind(kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise SecantValueError(f"Expected kind to be one of: ['symmetric', 'lower', 'upper']; "
                               f"got {kind}" + _where())
    return kind


def pascal(n, kind=None):
    """The n x n Pascal matrix: binomial coefficients C(i, j) ('lower'), their transpose
    ('upper'), or C(i + j, i) ('symmetric', the default)."""
    kind = _pascal_kind(kind)
    low = _pascal_lower(n, False)
    out = {"lower": low, "upper": low.T, "symmetric": low @ low.T}[kind]
    return snp.asarray(out, dtype=_default("f"))


def invpascal(n, kind=None):
    """The inverse of pascal(n, kind)."""
    kind = _pascal_kind(kind)
    low = _pascal_lower(n, True)
    out = {"lower": low, "upper": low.T, "symmetric": low.T @ low}[kind]
    return snp.asarray(out, dtype=_default("f"))


def _at_least_1d(a, name):
    a = snp.asarray(a)
    return snp.atleast_1d(a)


def fiedler(a):
    """The symmetric Fiedler matrix |a_i - a_j| of each vector a (leading axes: a stack)."""
    a = _at_least_1d(a, "fiedler")
    return snp.abs(a[..., :, None] - a[..., None, :])


def leslie(f, s):
    """The Leslie matrix: first row the fecundity coefficients f, subdiagonal the survival
    coefficients s (len(f) - 1 of them); leading axes broadcast."""
    f, s = _at_least_1d(f, "leslie"), _at_least_1d(s, "leslie")
    n = np.shape(f)[-1]
    if n < 2:
        raise SecantValueError(f"The length of f along the last axis must be at least 2; got "
                               f"shape {np.shape(f)}.{_where()}")
    if np.shape(s)[-1] != n - 1:
        raise SecantValueError(f"Incorrect lengths for f and s. The length of s along the last "
                               f"axis must be one less than the length of f; got f shape "
                               f"{np.shape(f)} and s shape {np.shape(s)}.{_where()}")
    dtype = snp.result_type(f, s)
    padded = snp.concatenate([s.astype(dtype), snp.zeros(np.shape(s)[:-1] + (1,), dtype)],
                             axis=-1)
    rows = np.arange(n)[:, None]
    cols = np.arange(n)[None, :]
    below = snp.where(rows == cols + 1, padded[..., None, :], snp.zeros((), dtype))
    return snp.where(rows == 0, f.astype(dtype)[..., None, :], below)


def _fiedler_companion_layout(n):
    """(index, ones) for the n x n Fiedler companion matrix of a monic polynomial with
    coefficients 1, a_1, ..., a_n: entry (i, j) is -a[index[i, j]] where index >= 1, 1 where
    ones (SciPy's layout: five-diagonal)."""
    index = np.zeros((n, n), int)
    ones = np.zeros((n, n), bool)
    ones[range(3, n, 2), range(1, n - 2, 2)] = True
    index[range(2, n, 2), range(1, n - 1, 2)] = np.arange(3, n + 1, 2)[:len(range(2, n, 2))]
    ones[range(0, n - 2, 2), range(2, n, 2)] = True
    index[range(0, n - 1, 2), range(1, n, 2)] = np.arange(2, n + 1, 2)[:len(range(0, n - 1, 2))]
    index[0, 0] = 1
    if n > 1:
        ones[1, 0] = True
    return index, ones


def fiedler_companion(a):
    """The Fiedler companion matrix of the polynomial with coefficients a (highest degree
    first), a five-diagonal matrix with the polynomial's roots as eigenvalues (leading axes: a
    stack)."""
    a = _inexact(_at_least_1d(a, "fiedler_companion"))
    size = np.shape(a)[-1]
    if size == 0:
        raise SecantValueError(f"fiedler_companion requires the last axis of 'a' to have nonzero "
                               f"length, but got an array of shape {np.shape(a)}.{_where()}")
    n = size - 1
    if n == 0:
        return snp.zeros(np.shape(a)[:-1] + (0, 0), a.dtype)
    monic = a / a[..., :1]
    index, ones = _fiedler_companion_layout(n)
    values = snp.where(index >= 1, -monic[..., index], snp.zeros((), a.dtype))
    return snp.where(ones, snp.ones((), a.dtype), values)


def convolution_matrix(a, n, mode="full"):
    """The matrix A with A @ v == np.convolve(a, v, mode) for each v of length n (a stacked
    over leading axes): A[i, j] = a[i + start - j] (0 outside a), rows as the mode keeps."""
    n = operator.index(n)
    if n <= 0:
        raise SecantValueError(f"n must be a positive integer; got {n}." + _where())
    a = snp.asarray(a)
    if np.ndim(a) == 0:
        raise SecantValueError("convolution_matrix: a must be at least 1-dimensional, got a "
                               "scalar." + _where())
    m = np.shape(a)[-1]
    if m < 1:
        raise SecantValueError(f"len(a) must be at least 1; got shape {np.shape(a)}." + _where())
    if mode not in ("full", "valid", "same"):
        raise SecantValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}."
                               + _where())
    trim = {"full": 0, "same": min(n, m) - 1, "valid": 2 * (min(n, m) - 1)}[mode]
    start = {"full": 0, "same": trim // 2, "valid": trim // 2}[mode]
    index = np.arange(m + n - 1 - trim)[:, None] + start - np.arange(n)[None, :]
    inside = (index >= 0) & (index < m)
    return snp.where(inside, a[..., np.clip(index, 0, m - 1)], snp.zeros((), a.dtype))

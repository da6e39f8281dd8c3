"""More of jax.numpy, written with secant.numpy's ops and read by the transforms as source
(`__secant_by_source__`), so grad, jvp and vmap follow from the ops' rules: trapezoid, pow, the
bitwise_* spellings, matvec / vecmat, unstack, cov / corrcoef, isin, array_equal /
array_equiv, ldexp, modf, the poly* arithmetic, fill_diagonal, digitize; and the static helpers
JAX programs use for index tables and windows (tril_indices, diag_indices, ix_, hamming, ...),
computed on plain values."""
import numpy as np

import secant.numpy as snp
from secant.backends.errors import SecantValueError, where as _where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["trapezoid", "pow", "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift",
           "matvec", "vecmat", "unstack", "cov", "corrcoef", "isin", "array_equal",
           "array_equiv", "ldexp", "modf", "polyadd", "polysub", "polymul", "polyder",
           "polyint", "fill_diagonal", "digitize", "tril_indices", "triu_indices",
           "tril_indices_from", "triu_indices_from", "diag_indices", "diag_indices_from",
           "isscalar", "iterable", "index_exp", "s_", "ix_", "can_cast", "hamming", "hanning",
           "blackman", "bartlett"]


# --- computations (differentiable where their ops are) ------------------------------------------
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of y by the trapezoidal rule along axis (spacing x, or dx)."""
    y = snp.moveaxis(snp.asarray(y), axis, -1)
    if x is None:
        return snp.sum(y[..., 1:] + y[..., :-1], axis=-1) * (dx * 0.5)
    x = snp.asarray(x)
    if snp.ndim(x) == 1:
        d = x[1:] - x[:-1]
    else:
        d = snp.diff(snp.moveaxis(x, axis, -1), axis=-1)
    return 0.5 * snp.sum(d * (y[..., 1:] + y[..., :-1]), axis=-1)


def pow(x1, x2):
    return snp.power(x1, x2)


def bitwise_invert(x):
    return snp.invert(x)


def bitwise_left_shift(x1, x2):
    return snp.left_shift(x1, x2)


def bitwise_right_shift(x1, x2):
    return snp.right_shift(x1, x2)


def matvec(x1, x2):
    """The matrix-vector product over the last axes: (..., m, n) with (..., n) -> (..., m)."""
    return snp.einsum("...mn,...n->...m", x1, x2)


def vecmat(x1, x2):
    """The vector-matrix product, x1 conjugated: (..., n) with (..., n, m) -> (..., m)."""
    return snp.einsum("...n,...nm->...m", snp.conj(x1), x2)


def unstack(x, axis=0):
    """The slices of x along axis, as a tuple."""
    x = snp.moveaxis(snp.asarray(x), axis, 0)
    return tuple(x[i] for i in range(snp.shape(x)[0]))


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """The covariance matrix of the variables in m (and y); weights are not supported."""
    if fweights is not None or aweights is not None:
        raise SecantValueError("snp.cov: fweights and aweights are not supported by secant yet")
    x = snp.atleast_2d(snp.asarray(m))
    if not rowvar and snp.shape(x)[0] != 1:
        x = x.T
    if y is not None:
        y = snp.atleast_2d(snp.asarray(y))
        if not rowvar and snp.shape(y)[0] != 1:
            y = y.T
        x = snp.concatenate([x, y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    x = x - snp.mean(x, axis=1, keepdims=True)
    n = snp.shape(x)[1]
    c = snp.dot(x, snp.conj(x).T) / (n - ddof)
    return snp.squeeze(c)


def corrcoef(x, y=None, rowvar=True):
    """Pearson correlation coefficients: cov normalised by the standard deviations."""
    c = cov(x, y, rowvar)
    if snp.ndim(c) == 0:
        return c / c
    d = snp.diag(c)
    out = c / snp.sqrt(snp.outer(d, d))
    if snp.issubdtype(snp.result_type(out), snp.complexfloating):
        return snp.clip(snp.real(out), -1, 1) + 1j * snp.clip(snp.imag(out), -1, 1)
    return snp.clip(out, -1, 1)


def isin(element, test_elements, assume_unique=False, invert=False):
    """Whether each element appears in test_elements (its flattened values)."""
    element = snp.asarray(element)
    found = snp.any(element[..., None] == snp.ravel(snp.asarray(test_elements)), axis=-1)
    return ~found if invert else found


def array_equal(a1, a2, equal_nan=False):
    """Whether a1 and a2 have one shape and equal elements (a boolean array)."""
    a1, a2 = snp.asarray(a1), snp.asarray(a2)
    if snp.shape(a1) != snp.shape(a2):
        return snp.asarray(False)
    same = a1 == a2
    if equal_nan:
        same = same | (snp.isnan(a1) & snp.isnan(a2))
    return snp.all(same)


def array_equiv(a1, a2):
    """Whether a1 and a2 broadcast together with equal elements."""
    a1, a2 = snp.asarray(a1), snp.asarray(a2)
    try:
        np.broadcast_shapes(snp.shape(a1), snp.shape(a2))
    except ValueError:
        return snp.asarray(False)
    return snp.all(a1 == a2)


array_equiv.__secant_constant__ = True     # (a comparison: no derivative, as in JAX)


def ldexp(x1, x2):
    """x1 * 2 ** x2 (x2 integers)."""
    if snp.issubdtype(snp.result_type(x1), snp.complexfloating):
        raise SecantValueError("ldexp does not support complex-valued inputs" + _where())
    x1 = snp.asarray(x1)
    if not snp.issubdtype(snp.result_type(x1), snp.inexact):
        x1 = x1.astype(snp.result_type(float))
    return x1 * snp.exp2(snp.asarray(x2).astype(snp.result_type(x1)))


def modf(x):
    """(fractional part, integral part), both with x's sign."""
    whole = snp.trunc(x)
    return x - whole, whole


def _trimmed(p):
    return snp.atleast_1d(snp.asarray(p))


def polyadd(a1, a2):
    a1, a2 = _trimmed(a1), _trimmed(a2)
    n = max(snp.shape(a1)[0], snp.shape(a2)[0])
    return snp.pad(a1, (n - snp.shape(a1)[0], 0)) + snp.pad(a2, (n - snp.shape(a2)[0], 0))


def polysub(a1, a2):
    return polyadd(a1, -_trimmed(a2))


def polymul(a1, a2):
    return snp.convolve(_trimmed(a1), _trimmed(a2))


def polyder(p, m=1):
    """The m-th derivative of the polynomial p (coefficients, highest power first)."""
    if m < 0:
        raise SecantValueError("Order of derivative must be positive")
    p = _trimmed(p)
    for _ in range(m):
        n = snp.shape(p)[0] - 1
        p = p[:-1] * snp.arange(n, 0, -1)
    return p


def polyint(p, m=1, k=None):
    """The m-th antiderivative of p, integration constants k (zeros by default)."""
    if m < 0:
        raise SecantValueError("Order of integral must be positive (see polyder)")
    p = _trimmed(p)
    ks = np.zeros(m) if k is None else np.atleast_1d(np.asarray(k))
    if ks.shape[0] == 1 and m > 1:
        ks = np.full(m, ks[0])
    for j in range(m):
        n = snp.shape(p)[0]
        p = snp.concatenate([p / snp.arange(n, 0, -1), snp.asarray([ks[j]], dtype=p.dtype)])
    return p


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """a with its main diagonal set to val (JAX's: inplace=False is required)."""
    if inplace:
        raise SecantValueError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise SecantValueError("fill_diagonal: wrap=True is not supported by secant yet")
    a = snp.asarray(a)
    n = min(snp.shape(a))
    idx = tuple(snp.arange(n) for _ in range(snp.ndim(a)))
    vals = snp.ravel(snp.asarray(val, dtype=a.dtype))
    if snp.shape(vals)[0] == 1:
        vals = snp.broadcast_to(vals, (n,))
    elif snp.shape(vals)[0] < n:
        raise SecantValueError("fill_diagonal: val must be a scalar or have at least as many "
                               "values as the diagonal")
    return a.at[idx].set(vals[:n])


def digitize(x, bins, right=False):
    """The index of the bin of each x (bins increasing or decreasing)."""
    bins = snp.asarray(bins)
    side = "left" if right else "right"
    n = snp.shape(bins)[0]
    if n == 0:
        return snp.zeros(snp.shape(x), dtype=snp.int32)
    rising = snp.searchsorted(bins, x, side=side)
    falling = n - snp.searchsorted(snp.flip(bins), x, side=side)
    return snp.where(bins[-1] >= bins[0], rising, falling)


# --- static helpers (plain values: no derivative) -----------------------------------------------
def _ints(arrays):
    return tuple(snp.asarray(a, dtype=snp.int32) for a in arrays)


def tril_indices(n, k=0, m=None):
    return _ints(np.tril_indices(n, k, m))


def triu_indices(n, k=0, m=None):
    return _ints(np.triu_indices(n, k, m))


def tril_indices_from(arr, k=0):
    return tril_indices(snp.shape(arr)[-2], k, snp.shape(arr)[-1])


def triu_indices_from(arr, k=0):
    return triu_indices(snp.shape(arr)[-2], k, snp.shape(arr)[-1])


def diag_indices(n, ndim=2):
    return _ints(np.diag_indices(n, ndim))


def diag_indices_from(arr):
    shape = snp.shape(arr)
    if len(shape) < 2 or len(set(shape)) != 1:
        raise SecantValueError("diag_indices_from: input must be at least 2-d and have equal "
                               "dimensions")
    return diag_indices(shape[0], len(shape))


def isscalar(element):
    """True for Python scalars and 0-d arrays (as jax.numpy's, unlike NumPy's)."""
    if isinstance(element, (bool, int, float, complex, np.generic)):
        return True
    return hasattr(element, "shape") and hasattr(element, "dtype") and snp.ndim(element) == 0


def iterable(y):
    """Whether y can be iterated over: an array when it has an axis (as JAX's; a question
    about the value's kind, so a constant for grad, and per example under vmap)."""
    return snp.ndim(y) > 0 if _has_ndim(y) else _python_iterable(y)


def _has_ndim(y):
    return hasattr(y, "ndim")


def _python_iterable(y):
    return np.iterable(y)


_has_ndim.__secant_static_query__ = _python_iterable.__secant_static_query__ = True


index_exp = np.index_exp
s_ = np.s_


def ix_(*args):
    """Open-mesh index arrays: the k-th argument shaped to lie along axis k."""
    n = len(args)
    out = []
    for k, a in enumerate(args):
        a = snp.asarray(a)
        if snp.ndim(a) != 1:
            raise SecantValueError("Arguments to jax.numpy.ix_ must be 1-dimensional, got "
                                   f"shape {snp.shape(a)}")
        out.append(snp.reshape(a, (1,) * k + (snp.shape(a)[0],) + (1,) * (n - k - 1)))
    return tuple(out)


def can_cast(from_, to, casting="safe"):
    if hasattr(from_, "dtype") and not isinstance(from_, type):    # an array: its dtype
        from_ = from_.dtype
    return bool(np.can_cast(from_, to, casting=casting))


def _window(values):
    return snp.asarray(values, dtype=snp.result_type(float))


def hamming(M):
    return _window(np.hamming(M))


def hanning(M):
    return _window(np.hanning(M))


def blackman(M):
    return _window(np.blackman(M))


def bartlett(M):
    return _window(np.bartlett(M))

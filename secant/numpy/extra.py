"""More of NumPy's API, as jax.numpy has it: comparisons with tolerances, inserting and deleting,
differences and gradients, piecewise selection, interpolation, searching, convolution,
polynomials, unique values, counts and histograms.

Each function checks its arguments here and computes its value with its source in
secant/numpy/sources_extra.py, a composition of ops that have rules: grad, jvp and vmap read that
source (secant/numpy/composite.py), so they need no rules of their own. Shapes that depend on
data (`unique`, `bincount`, `histogram` with computed edges) take a static `size=`/`length=`, as
in JAX; without it the value is computed eagerly and jit raises a ConcretizationError.
"""
import math
import operator

import numpy as np

from secant.backends import dtypes
from secant.backends.core import Tracer
from secant.backends.errors import (ConcretizationError, SecantTypeError, SecantValueError,
                                    where)
from secant.numpy.conversion import ensure_array, result_type


def _src():
    from secant.numpy import sources_extra
    return sources_extra


def _static(value, what):
    if isinstance(value, Tracer):
        raise ConcretizationError(f"{what} must be static (known before tracing), got a traced "
                                  f"value{where()}")
    return value


def _concrete(x, what):
    """The NumPy value of x, which must be known (not traced under jit)."""
    if isinstance(x, Tracer):
        raise ConcretizationError(f"{what}{where()}")
    return np.asarray(ensure_array(x)) if not isinstance(x, np.ndarray) else x


# --- static helpers the sources call (plain values in, plain values out) -------------------------
def _inexact(dtype):
    """The dtype a function that computes in floating point gives for inputs of `dtype`."""
    dtype = np.dtype(dtype)
    return dtype if dtypes.is_inexact(dtype) else np.dtype(dtypes.default_float())


def _is_complex(dtype):
    return np.dtype(dtype).kind == "c"


def _is_bool(dtype):
    return np.dtype(dtype) == np.bool_


def _axis(axis, ndim):
    axis = operator.index(_static(axis, "axis"))
    if not -ndim <= axis < max(ndim, 1):
        raise SecantValueError(f"axis {axis} is out of bounds for an array of dimension {ndim}"
                               f"{where()}")
    return axis % max(ndim, 1)


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(_axis(a, ndim) for a in axis)
    return (_axis(axis, ndim),)


def _along(ndim, axis, start, stop):
    """The index tuple `[:, ..., start:stop, ...]` selecting start:stop along `axis`."""
    return (slice(None),) * axis + (slice(start, stop),)


def _with_axis(shape, axis, n):
    return tuple(shape[:axis]) + (n,) + tuple(shape[axis + 1:])


def _insert_index(shape, obj, values_shape, axis):
    """Where each element of np.insert(arr, obj, values, axis) comes from, as indices into
    concatenate([ravel(arr), ravel(values broadcast)]): NumPy's own insert applied to labels, so
    every rule of NumPy's (scalar or sequence obj, block insertion, broadcasting) holds."""
    obj = _static(obj, "insert: obj")
    obj = _concrete(obj, "insert: obj must be static") if not isinstance(obj, (int, slice)) \
        else obj
    size = math.prod(shape)
    labels = np.arange(size).reshape(shape)
    vsize = math.prod(values_shape)
    vlabels = size + np.arange(vsize).reshape(values_shape)
    return np.insert(labels, obj, vlabels, axis=axis)


def _delete_index(shape, obj, axis):
    """Indices into ravel(arr) of np.delete(arr, obj, axis) (NumPy's delete on labels)."""
    obj = _static(obj, "delete: obj")
    obj = _concrete(obj, "delete: obj must be static") if not isinstance(obj, (int, slice)) \
        else obj
    labels = np.arange(math.prod(shape)).reshape(shape)
    return np.delete(labels, obj, axis=axis)


def _convolve_index(n, m, mode):
    """Row k of the result reads padded[idx[k]] (padded: m-1 zeros each side of the longer
    array of length n; v, of length m <= n, flipped): NumPy's full, same and valid modes."""
    if mode == "full":
        start, count = 0, n + m - 1
    elif mode == "same":
        start, count = (m - 1) // 2, n
    elif mode == "valid":
        start, count = m - 1, n - m + 1
    else:
        raise SecantValueError(f"mode must be 'full', 'same' or 'valid', got {mode!r}{where()}")
    return np.arange(start, start + count)[:, None] + np.arange(m)[None, :]


def _line(ndim, axis, n):
    """The shape of a 1-D array of length n laid along `axis` of an ndim-array."""
    return tuple(n if i == axis else 1 for i in range(ndim))


def _index_directive(directive):
    """(axis, ndmin, trans1d) of an r_/c_ directive string ('0', '0,2', '-1,2,0')."""
    parts = directive.split(",")
    if parts[0] in ("r", "c") or len(parts) > 3:
        raise SecantValueError(f"the directive {directive!r} (matrix output) is not supported "
                               f"by secant's r_/c_{where()}")
    try:
        vals = [int(p) for p in parts]
    except ValueError:
        raise SecantValueError(f"unknown r_/c_ directive {directive!r}{where()}") from None
    return tuple(vals + [1, -1][len(vals) - 1:])


def _diff_terms(ndim, axis, n, length):
    """[(coefficient, index)]: the n-th difference along axis is sum(c * a[index])."""
    return [((-1) ** (n - k) * math.comb(n, k), _along(ndim, axis, k, length - n + k))
            for k in range(n + 1)]


def _slice_values(s):
    """The array an r_/c_ slice stands for: arange, or linspace for an imaginary step."""
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    for v in (start, s.stop, step):
        _static(v, "r_/c_ slice bounds")
    if isinstance(step, complex):
        return np.linspace(start, s.stop, int(abs(step)))
    return np.arange(start, s.stop, step)


def _ndmin_axes(ndim, ndmin, trans1d):
    """(shape prefix length, axes) as NumPy's r_ reshapes an item with fewer than ndmin axes."""
    k2 = ndmin - ndim
    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
    axes = list(range(ndmin))
    return axes[:k1] + axes[k2:] + axes[k1:k2]


def _spacing_eps(dtype):
    return float(np.spacing(np.finfo(np.dtype(dtype)).eps))


def _smaller(n, m):
    return min(n, m)


def _larger(n, m):
    return max(n, m)


def _bind_arguments(funclist, args, kw):
    """piecewise's extra arguments bound into each function of funclist."""
    import functools
    return [functools.partial(f, *args, **kw) if callable(f) else f for f in funclist]


# they read dtypes, strings and slices only (never an array's values): constants for transforms
for _f in (_inexact, _is_complex, _is_bool, _index_directive):
    _f.__secant_static_query__ = True


# --- comparisons --------------------------------------------------------------------------------
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b| elementwise (infinities equal only to themselves; NaNs equal
    each other when equal_nan). No derivative: a comparison."""
    return _src().isclose(ensure_array(a), ensure_array(b), rtol, atol, equal_nan)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether isclose holds everywhere (a boolean scalar array)."""
    return _src().allclose(ensure_array(a), ensure_array(b), rtol, atol, equal_nan)


def iscomplex(x):
    """Elementwise: a nonzero imaginary part (all False for real arrays)."""
    return _src().iscomplex(ensure_array(x))


def isreal(x):
    """Elementwise: a zero imaginary part (all True for real arrays)."""
    return _src().isreal(ensure_array(x))


def real_if_close(a, tol=100):
    """a's real part when every imaginary part is below tol machine epsilons, else a. The result
    type depends on the values: eager only for complex inputs (JAX's is too)."""
    a = ensure_array(a)
    if _is_complex(result_type(a)) and isinstance(a, Tracer):
        raise ConcretizationError("real_if_close of a traced complex array: its result type "
                                  f"depends on the values; use snp.real{where()}")
    return _src().real_if_close(a, tol)


def logaddexp2(x1, x2):
    """log2(2**x1 + 2**x2), computed without overflow."""
    return _src().logaddexp2(ensure_array(x1), ensure_array(x2))


# --- inserting, deleting, joining ---------------------------------------------------------------
def append(arr, values, axis=None):
    """arr with values appended (both flattened when axis is None)."""
    return _src().append(ensure_array(arr), ensure_array(values), axis)


def insert(arr, obj, values, axis=None):
    """values inserted before the static index/indices obj along axis (arr flattened when axis is
    None), as NumPy's insert; values are cast to arr's dtype."""
    arr = ensure_array(arr)
    if axis is not None:
        _axis(axis, arr.ndim)
    return _src().insert(arr, obj, ensure_array(values), axis)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """arr without the entries at the static index/indices/slice/mask obj along axis."""
    arr = ensure_array(arr)
    if axis is not None:
        _axis(axis, arr.ndim)
    return _src().delete(arr, obj, axis)


class _IndexConcat:
    """`r_[...]` and `c_[...]`: arrays, scalars and slices (`1:4`, `0:1:5j`) joined along an
    axis, with NumPy's directive strings ('0,2', '-1,2,0') first. `r_["0,2", a, 1:3]` is
    `r_.concat(a, r_.range(1, 3, None), directive="0,2")`, which is also how the transforms read
    it (transformer/index_calls.py); concat's source is in sources_extra."""

    def __init__(self, name, concat):
        self.name = name
        self.concat = concat            # instance attributes: plain functions, not bound
        self.range = _slice_range
        self.array = ensure_array
        self.__secant_index_call__ = "concat"

    def __getitem__(self, key):
        items = list(key) if isinstance(key, tuple) else [key]
        directive = items.pop(0) if items and isinstance(items[0], str) else None
        items = [_slice_range(i.start, i.stop, i.step) if isinstance(i, slice) else i
                 for i in items]
        return self.concat(*items, directive=directive)

    def __len__(self):
        return 0

    def __repr__(self):
        return f"secant.numpy.{self.name}"


def _slice_range(start, stop, step):
    """The array a slice in r_/c_ stands for: arange, or linspace for an imaginary step."""
    return ensure_array(_slice_values(slice(start, stop, step)))


def _check_items(items, directive):
    if directive is not None:
        _index_directive(directive)
    for item in items:
        if isinstance(item, (str, slice)):
            raise SecantValueError(f"r_/c_: a directive string must come first, got {item!r}"
                                   f"{where()}")
    if not items:
        raise SecantValueError(f"r_/c_ need at least one array or slice{where()}")


def _r_concat(*items, directive=None):
    """What `r_[items]` computes: items joined along their first axis (or a directive's)."""
    _check_items(items, directive)
    return _src().r_(*[ensure_array(i) for i in items], directive=directive)


def _c_concat(*items, directive=None):
    """What `c_[items]` computes: items as columns (1-D arrays become (n, 1)), joined along
    the last axis."""
    _check_items(items, directive)
    return _src().c_(*[ensure_array(i) for i in items], directive=directive)


r_ = _IndexConcat("r_", _r_concat)
c_ = _IndexConcat("c_", _c_concat)


# --- differences --------------------------------------------------------------------------------
def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The n-th discrete difference along axis (prepend/append joined first, as NumPy)."""
    a = ensure_array(a)
    n = operator.index(_static(n, "diff: n"))
    if n < 0:
        raise SecantValueError(f"diff: order n must be non-negative, got {n}{where()}")
    if a.ndim == 0:
        raise SecantValueError(f"diff requires an input of at least one dimension{where()}")
    _axis(axis, a.ndim)
    return _src().diff(a, n, axis, prepend, append)


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened array, with to_begin/to_end."""
    return _src().ediff1d(ensure_array(ary), to_end, to_begin)


def gradient(f, *varargs, axis=None, edge_order=None):
    """Second-order central differences inside, one-sided (edge_order 1 or 2) at the ends;
    spacings are scalars or 1-D coordinate arrays per axis. One array for one axis, a list
    otherwise (as NumPy)."""
    f = ensure_array(f)
    axes = _axes(axis, f.ndim)
    order = 1 if edge_order is None else edge_order
    if order not in (1, 2):
        raise SecantValueError(f"gradient: edge_order must be 1 or 2, got {edge_order}{where()}")
    if len(varargs) not in (0, 1, len(axes)):
        raise SecantTypeError(f"gradient: expected 0, 1 or {len(axes)} spacings, got "
                              f"{len(varargs)}{where()}")
    for ax in axes:
        if f.shape[ax] < order + 1:
            raise SecantValueError(f"gradient: the array needs at least {order + 1} elements "
                                   f"along axis {ax} for edge_order {order}{where()}")
    for h in varargs:
        if np.ndim(h) > 1 or (np.ndim(h) == 1 and len(varargs) == 1 and len(axes) > 1):
            raise SecantValueError(f"gradient: a spacing must be a scalar or one 1-D coordinate "
                                   f"array per axis{where()}")
    return _src().gradient(f, *varargs, axis=axis, edge_order=edge_order)


# --- choosing -----------------------------------------------------------------------------------
def select(condlist, choicelist, default=0):
    """choicelist[k] where condlist[k] is the first true condition, default where none is."""
    if len(condlist) != len(choicelist):
        raise SecantValueError(f"select: condlist and choicelist must have the same length, got "
                               f"{len(condlist)} and {len(choicelist)}{where()}")
    if len(condlist) == 0:
        raise SecantValueError(f"select: condlist must be non-empty{where()}")
    for c in condlist:
        if not _is_bool(result_type(c)):
            raise SecantTypeError(f"select: condlist entries must be boolean arrays, got "
                                  f"{result_type(c)}{where()}")
    return _src().select(list(condlist), list(choicelist), default)


def piecewise(x, condlist, funclist, *args, **kw):
    """funclist[k](x) (or the constant funclist[k]) where condlist[k] holds, the last true
    condition winning; an extra last entry of funclist is used where no condition holds, else
    0. Every function is evaluated on all of x (as in JAX), so it must accept every element."""
    x = ensure_array(x)
    conds = _piecewise_conds(x, condlist)
    if len(funclist) not in (len(conds), len(conds) + 1):
        raise SecantValueError(f"piecewise: with {len(conds)} conditions, funclist must have "
                               f"{len(conds)} or {len(conds) + 1} entries, got "
                               f"{len(funclist)}{where()}")
    return _src().piecewise(x, conds, list(funclist), *args, **kw)


def _piecewise_conds(x, condlist):
    if isinstance(condlist, (list, tuple)):
        return list(condlist)
    return [condlist] if np.ndim(condlist) == x.ndim else list(condlist)


# --- sorting and searching ----------------------------------------------------------------------
def partition(a, kth, axis=-1):
    """The kth element in its sorted place, smaller ones before (ascending) and larger ones after
    (descending), JAX's order. Differentiable: it is a sort."""
    a = ensure_array(a)
    ax = _axis(axis, a.ndim)
    _kth(kth, a.shape[ax])
    return _src().partition(a, kth, axis)


def argpartition(a, kth, axis=-1):
    """The indices that partition a (JAX's order, see partition)."""
    a = ensure_array(a)
    ax = _axis(axis, a.ndim)
    _kth(kth, a.shape[ax])
    return _src().argpartition(a, kth, axis)


def _kth(kth, n):
    kth = operator.index(_static(kth, "kth"))
    if not -n <= kth < n:
        raise SecantValueError(f"kth {kth} is out of bounds for an axis of size {n}{where()}")
    return kth % n


def searchsorted(a, v, side="left", sorter=None, *, method="compare_all"):
    """Indices (int32) where v's elements would be inserted into the sorted 1-D a to keep it
    sorted: every element compared with every one of a. No derivative."""
    a = ensure_array(a)
    if a.ndim != 1:
        raise SecantValueError(f"searchsorted: a must be 1-D, got shape {a.shape}{where()}")
    v = ensure_array(v)
    if side not in ("left", "right"):
        raise SecantValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}"
                               f"{where()}")
    return _src().searchsorted(a, v, side, sorter)


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at x (xp increasing); differentiable in x, xp
    and fp. left/right: the values beyond the ends (fp's end values by default)."""
    xp, fp = ensure_array(xp), ensure_array(fp)
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape != fp.shape:
        raise SecantValueError(f"interp: xp and fp must be 1-D of the same length, got shapes "
                               f"{xp.shape} and {fp.shape}{where()}")
    if period is not None and (left is not None or right is not None):
        raise SecantValueError(f"interp: left and right are ignored with a period{where()}")
    return _src().interp(ensure_array(x), xp, fp, left, right, period)


# --- convolution and polynomials ----------------------------------------------------------------
def _conv_check(name, a, v):
    if a.ndim != 1 or v.ndim != 1:
        raise SecantValueError(f"{name}: a and v must be 1-D, got shapes {a.shape} and {v.shape}"
                               f"{where()}")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise SecantValueError(f"{name}: a and v cannot be empty{where()}")


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """The discrete linear convolution of 1-D a and v (modes 'full', 'same', 'valid')."""
    a, v = ensure_array(a), ensure_array(v)
    _conv_check("convolve", a, v)
    _convolve_index(1, 1, mode)
    return _src().convolve(a, v, mode)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation sum_n a[n + k] * conj(v[n]) of 1-D a and v (NumPy's)."""
    a, v = ensure_array(a), ensure_array(v)
    _conv_check("correlate", a, v)
    _convolve_index(1, 1, mode)
    return _src().correlate(a, v, mode)


def polyval(p, x, *, unroll=16):
    """p[0] * x**(n-1) + ... + p[n-1] by Horner's rule."""
    p = ensure_array(p)
    if p.ndim != 1:
        raise SecantValueError(f"polyval: p must be 1-D, got shape {p.shape}{where()}")
    return _src().polyval(p, ensure_array(x))


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of 1-D x: columns x**(N-1), ..., x, 1 (or increasing)."""
    x = ensure_array(x)
    if x.ndim != 1:
        raise SecantValueError(f"vander: x must be 1-D, got shape {x.shape}{where()}")
    if N is not None and operator.index(_static(N, "vander: N")) < 0:
        raise SecantValueError(f"vander: N must be non-negative, got {N}{where()}")
    return _src().vander(x, N, increasing)


# --- unique values, counts, histograms ----------------------------------------------------------
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None):
    """The sorted unique values of the flattened ar (with first indices, the inverse and counts
    on request). With a static `size` the result has that length (padded with fill_value, by
    default the smallest value; indices padded with that value's, counts with 0): this works
    under jit, grad and vmap. Without it, eager only."""
    if axis is not None:
        raise SecantValueError(f"unique: only axis=None (the flattened array) is supported"
                               f"{where()}")
    ar = ensure_array(ar)
    if size is None:
        values = _concrete(ar, "unique without size= has a shape that depends on the values; "
                               "pass a static size= under jit")
        n = len(np.unique(values.ravel(), equal_nan=equal_nan)) if values.size else 0
        size = n
    size = operator.index(_static(size, "unique: size"))
    if size < 0 or ar.size == 0:
        raise SecantValueError(f"unique: size must be non-negative and ar non-empty{where()}")
    return _src().unique(ar, return_index, return_inverse, return_counts, axis,
                         equal_nan=equal_nan, size=size, fill_value=fill_value)


def _unique_size(size):
    """unique's static size= in its source (grad, jvp, vmap); None refused at the user's line."""
    if size is not None:
        return size
    raise SecantValueError(
        "unique (and union1d, setdiff1d, setxor1d, intersect1d, unique_values, unique_counts, "
        "unique_inverse, built on it) under grad, jvp or vmap needs a static size=: without "
        f"it the result's length depends on the values{where()}")


_unique_size.__secant_static_query__ = True


def bincount(x, weights=None, minlength=0, *, length=None):
    """Counts (or summed weights) of each non-negative int in x, length `length` (static; eager:
    max(x) + 1 or minlength). Negative values count as 0 and values past the end are dropped, as
    in JAX. Differentiable in weights."""
    x = ensure_array(x)
    if not dtypes.is_int(x.dtype):
        raise SecantTypeError(f"bincount: x must be an integer array, got {x.dtype}{where()}")
    if x.ndim != 1:
        raise SecantValueError(f"bincount: x must be 1-D, got shape {x.shape}{where()}")
    minlength = operator.index(_static(minlength, "bincount: minlength"))
    if length is None:
        values = _concrete(x, "bincount without length= has a shape that depends on the values; "
                              "pass a static length= under jit")
        length = max(minlength, int(values.max()) + 1 if values.size else 0)
    length = operator.index(_static(length, "bincount: length"))
    return _src().bincount(x, weights, minlength, length=length)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """bins + 1 equal-width edges over `range` (by default a's min and max), or bins itself
    when it is a 1-D array of edges."""
    a = ensure_array(a)
    _bins(bins)
    return _src().histogram_bin_edges(a, bins, range, weights)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """(counts, edges): the (weighted) count of a's elements in each bin, the last bin closed;
    counts have the weights' dtype (a's without weights), as JAX. Differentiable in weights."""
    a = ensure_array(a)
    _bins(bins)
    if weights is not None and np.shape(weights) != a.shape:
        raise SecantValueError(f"histogram: weights must have a's shape {a.shape}, got "
                               f"{np.shape(weights)}{where()}")
    return _src().histogram(a, bins, range, weights, density)


def _bins(bins):
    if np.ndim(bins) == 0:
        b = operator.index(_static(bins, "histogram: bins"))
        if b < 1:
            raise SecantValueError(f"histogram: bins must be positive, got {b}{where()}")
    elif np.ndim(bins) != 1:
        raise SecantValueError(f"histogram: bins must be an int or 1-D edges{where()}")


# Comparisons and searches: no derivative (results are constants for grad and jvp, as a
# comparison's are in JAX); vmap still batches them through their sources
for _f in (isclose, allclose, iscomplex, isreal, argpartition, searchsorted, _slice_range):
    _f.__secant_constant__ = True

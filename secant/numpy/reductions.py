"""Reductions (sum, mean, var, max, argmax, all, ...), cumulative sums, order statistics.

Dtype rules follow jax.numpy: sums and products of booleans and narrow integers accumulate in the
default integer type, means and variances of integers are default floats, and float16/bfloat16
accumulate in float32 before rounding back.
"""
import builtins
import math

import numpy as np

from secant.backends import dtypes
from secant.backends.array import Array
from secant.backends.core import FAST_FLOATS, Tracer, quiet_call
from secant.backends.errors import SecantTypeError, SecantValueError, UnsupportedError
from secant.backends.errors import where as _where
from secant.backends.primitives import elementwise as ew
from secant.backends.primitives import structural as st
from secant.backends.primitives import complex as cx
from secant.numpy.conversion import convert, ensure_array, promote_inexact, to_inexact
from secant.numpy.shape import (_canonical_axes, _normalize_axis, _slice_axis, broadcast_to,
                                moveaxis, ravel, reshape, sort, squeeze, stack)
from secant.numpy.ufuncs import (equal, isnan, logical_and, logical_not, maximum, minimum,
                                 subtract, where as _select)


# --- helpers -------------------------------------------------------------------------------------
def _no_out(out, name):
    if out is not None:
        raise UnsupportedError(f"{name}(out=...): secant arrays are immutable; use the return "
                               f"value{_where()}")


def _default_uint():
    return dtypes.uint64 if dtypes.x64_enabled() else dtypes.uint32


def _accumulator_dtype(dt):
    """sum/prod/cumsum's result dtype when none is given (jnp's promote_integers rule)."""
    if dtypes.is_bool(dt):
        return dtypes.default_int()
    if dtypes.is_unsigned(dt) and dt.itemsize < _default_uint().itemsize:
        return _default_uint()
    if dtypes.is_int(dt) and dt.itemsize < dtypes.default_int().itemsize:
        return dtypes.default_int()
    return dt


def _computation_dtype(dt):
    """float16/bfloat16 accumulate in float32 (as jnp does), everything else in itself."""
    return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


def _cast(x, dt):
    return x if x.dtype == dt else convert(x, dt)


def _keep(out, axes, keepdims):
    if keepdims and axes:
        return st.expand_dims_p.bind(out, dimensions=axes)
    return out


def _mask(a, mask, neutral):
    """Masked-out elements (where=False) replaced by the reduction's identity."""
    if mask is None:
        return a
    return _select(mask, a, convert(neutral, a.dtype))


def _reduce(prim, x, axes):
    return prim.bind(x, axes=axes) if axes else x


def _count(a, axes, mask):
    """How many elements each reduction sees (an int, or an array when `where` masks some)."""
    if mask is None:
        return math.prod(a.shape[i] for i in axes)
    m = _select(mask, convert(1, dtypes.default_int()), convert(0, dtypes.default_int()))
    return _reduce(st.reduce_sum_p, broadcast_to(m, a.shape), axes)


# --- sums and products ---------------------------------------------------------------------------
def _sum_like(name, prim, neutral, combine, a, axis, dtype, out, keepdims, initial, mask,
              promote_integers):
    _no_out(out, name)
    a = ensure_array(a)
    if dtype is not None:
        dt = dtypes.canonicalize_dtype(dtype)
    else:
        dt = _accumulator_dtype(a.dtype) if promote_integers else a.dtype
    if dtypes.is_bool(dt):          # jnp's: counted in the default int, then cast (any, all)
        r = _sum_like(name, prim, neutral, combine, _cast(a, dt), axis, None, None, keepdims,
                      initial, mask, True)
        return _cast(r, dt)
    axes = _canonical_axes(axis, a.ndim)
    x = _mask(_cast(a, _computation_dtype(dt)), mask, neutral)
    r = _reduce(prim, x, axes)
    if initial is not None:
        r = combine(r, convert(initial, r.dtype))
    return _keep(_cast(r, dt), axes, keepdims)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
    if type(a) is Array and dtype is None and out is None and initial is None and where is None:
        v = a._npy      # an eager float array: reduce_sum's impl (np.sum's ufunc.reduce) directly
        if type(v) is np.ndarray and v.dtype in FAST_FLOATS:
            axes = _canonical_axes(axis, v.ndim)
            if not axes:
                return a
            return Array._wrap_ndarray(quiet_call(np.add.reduce, v, axis=axes, dtype=v.dtype,
                                                  keepdims=bool(keepdims)), a.weak_type)
    return _sum_like("sum", st.reduce_sum_p, 0, ew.add_p.bind, a, axis, dtype, out, keepdims,
                     initial, where, promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    return _sum_like("prod", st.reduce_prod_p, 1, ew.mul_p.bind, a, axis, dtype, out, keepdims,
                     initial, where, promote_integers)


product = prod


# --- extrema -------------------------------------------------------------------------------------
def _extremum(name, prim, neutral_of, combine, a, axis, out, keepdims, initial, mask):
    _no_out(out, name)
    a = ensure_array(a)
    axes = _canonical_axes(axis, a.ndim)
    if initial is None:
        if builtins.any(a.shape[i] == 0 for i in axes):
            raise SecantValueError(f"zero-size array to reduction operation {name} which has no "
                                   f"identity (pass initial=...){_where()}")
        if mask is not None:
            raise SecantValueError(f"{name} with where=... needs initial=... (a fully masked "
                                   f"reduction has no value otherwise){_where()}")
    if dtypes.is_complex(a.dtype):
        r = _complex_reduce(prim, _mask(a, mask, complex(neutral_of(dtypes.float32),
                                                          neutral_of(dtypes.float32))), axes)
    else:
        r = _reduce(prim, _mask(a, mask, neutral_of(a.dtype)), axes)
    if initial is not None:
        r = combine(r, convert(initial, r.dtype))
    return _keep(r, axes, keepdims)


def _complex_reduce(prim, a, axes):
    """max/min of complex `a` over `axes` in NumPy's (and JAX's) order: by real part, then by
    imaginary part; a NaN real part makes the result NaN."""
    if not axes:
        return a
    re, im = cx.real_p.bind(a), cx.imag_p.bind(a)
    best_re = prim.bind(re, axes=axes)
    on_best = equal(re, st.expand_dims_p.bind(best_re, dimensions=axes))
    best_im = prim.bind(_select(on_best, im, convert(st.lowest(re.dtype) if prim is
                                                     st.reduce_max_p else st.highest(re.dtype),
                                                     re.dtype)), axes=axes)
    best_im = _select(isnan(best_re), best_re, best_im)
    return cx.complex_p.bind(best_re, best_im)


def _fast_extremum(ufunc, a, axis, keepdims):
    """amax/amin of an eager float array over non-empty axes: reduce_max's (reduce_min's) impl
    (NumPy's max, NaN propagating; its `initial` changes no non-empty result) and expand_dims
    for keepdims, as one ufunc.reduce; None for anything else (the general path)."""
    v = a._npy
    if type(v) is not np.ndarray or v.dtype not in FAST_FLOATS:
        return None
    axes = _canonical_axes(axis, v.ndim)
    if not axes:
        return a
    shape = v.shape
    for i in axes:
        if not shape[i]:
            return None         # (an empty reduction: the general path's error)
    return Array._wrap_ndarray(quiet_call(ufunc.reduce, v, axis=axes, keepdims=bool(keepdims)),
                               a.weak_type)


def amax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    if type(a) is Array and out is None and initial is None and where is None:
        r = _fast_extremum(np.maximum, a, axis, keepdims)
        if r is not None:
            return r
    return _extremum("max", st.reduce_max_p, st.lowest, maximum, a, axis, out, keepdims,
                     initial, where)


def amin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    if type(a) is Array and out is None and initial is None and where is None:
        r = _fast_extremum(np.minimum, a, axis, keepdims)
        if r is not None:
            return r
    return _extremum("min", st.reduce_min_p, st.highest, minimum, a, axis, out, keepdims,
                     initial, where)


max = amax
min = amin


def ptp(a, axis=None, out=None, keepdims=False):
    return subtract(amax(a, axis, out, keepdims), amin(a, axis, out, keepdims))


def _arg_extremum(name, prim, a, axis, out, keepdims):
    _no_out(out, name)
    a = ensure_array(a)
    if axis is None:
        flat = ravel(a)
        if flat.size == 0:
            raise SecantValueError(f"attempt to get {name} of an empty sequence{_where()}")
        r = prim.bind(flat, axis=0, index_dtype=dtypes.default_int())
        return st.reshape_p.bind(r, new_sizes=(1,) * a.ndim) if keepdims and a.ndim else r
    ax = _normalize_axis(axis, a.ndim)
    if a.shape[ax] == 0:
        raise SecantValueError(f"attempt to get {name} of an empty sequence{_where()}")
    return _keep(prim.bind(a, axis=ax, index_dtype=dtypes.default_int()), (ax,), keepdims)


def argmax(a, axis=None, out=None, keepdims=None):
    return _arg_extremum("argmax", st.argmax_p, a, axis, out, keepdims)


def argmin(a, axis=None, out=None, keepdims=None):
    return _arg_extremum("argmin", st.argmin_p, a, axis, out, keepdims)


# --- logical -------------------------------------------------------------------------------------
def all(a, axis=None, out=None, keepdims=False, *, where=None):
    _no_out(out, "all")
    a = _cast(ensure_array(a), dtypes.bool_)
    axes = _canonical_axes(axis, a.ndim)
    return _keep(_reduce(st.reduce_and_p, _mask(a, where, True), axes), axes, keepdims)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    _no_out(out, "any")
    a = _cast(ensure_array(a), dtypes.bool_)
    axes = _canonical_axes(axis, a.ndim)
    return _keep(_reduce(st.reduce_or_p, _mask(a, where, False), axes), axes, keepdims)


def count_nonzero(a, axis=None, keepdims=False):
    a = ensure_array(a)
    nonzero = _cast(a, dtypes.bool_)
    return sum(nonzero, axis, dtypes.default_int(), keepdims=keepdims)


# --- moments -------------------------------------------------------------------------------------
def _mean_dtypes(a, dtype):
    """(result dtype, computation dtype) of mean/var: integers average as default floats."""
    if dtype is not None:
        dt = dtypes.canonicalize_dtype(dtype)
    elif dtypes.is_inexact(a.dtype):
        dt = a.dtype
    else:
        dt = dtypes.default_float()
    return dt, _computation_dtype(dt if dtypes.is_inexact(dt) else dtypes.default_float())


def _divide(total, count):
    return ew.div_p.bind(total, convert(count, total.dtype))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _no_out(out, "mean")
    a = ensure_array(a)
    dt, calc = _mean_dtypes(a, dtype)
    axes = _canonical_axes(axis, a.ndim)
    total = _reduce(st.reduce_sum_p, _mask(_cast(a, calc), where, 0), axes)
    r = _divide(total, _count(a, axes, where))
    return _keep(_cast(r, dt), axes, keepdims)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    _no_out(out, "var")
    if correction is not None:
        ddof = correction
    a = ensure_array(a)
    dt, calc = _mean_dtypes(a, dtype)
    axes = _canonical_axes(axis, a.ndim)
    x = _cast(a, calc)
    count = _count(a, axes, where)
    centre = _divide(_reduce(st.reduce_sum_p, _mask(x, where, 0), axes), count)
    centred = ew.sub_p.bind(x, st.expand_dims_p.bind(centre, dimensions=axes) if axes else centre)
    if dtypes.is_complex(calc):          # |x - mean|^2, real (as NumPy)
        dt = cx.real_dtype(dt)
        re, im = cx.real_p.bind(centred), cx.imag_p.bind(centred)
        squares = _mask(ew.add_p.bind(ew.mul_p.bind(re, re), ew.mul_p.bind(im, im)), where, 0)
    else:
        squares = _mask(ew.mul_p.bind(centred, centred), where, 0)
    total = _reduce(st.reduce_sum_p, squares, axes)
    # As jnp: the divisor is clipped at 0, so ddof >= n gives inf (or nan for 0/0).
    if isinstance(count, int):
        dof = builtins.max(count - ddof, 0)
    else:
        dof = maximum(ew.sub_p.bind(count, convert(ddof, count.dtype)), 0)
    r = _divide(total, dof)
    return _keep(_cast(r, dt), axes, keepdims)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
    v = var(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction)
    calc = _computation_dtype(v.dtype)
    return _cast(ew.sqrt_p.bind(_cast(v, calc)), v.dtype)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    a = ensure_array(a)
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        axes = _canonical_axes(axis, a.ndim)
        n = math.prod(a.shape[i] for i in axes)
        return (avg, broadcast_to(convert(n, avg.dtype), avg.shape)) if returned else avg
    a, w = promote_inexact(a, weights)
    if w.shape != a.shape:
        if axis is None or w.ndim != 1:
            raise SecantTypeError(f"average: weights of shape {w.shape} differ from the array's "
                                  f"{a.shape}; 1-D weights need an axis{_where()}")
        ax = _normalize_axis(axis, a.ndim)
        if w.shape[0] != a.shape[ax]:
            raise SecantValueError(f"average: {w.shape[0]} weights for axis {ax} of size "
                                   f"{a.shape[ax]}{_where()}")
        w = broadcast_to(reshape(w, tuple(w.shape[0] if i == ax else 1 for i in range(a.ndim))),
                         a.shape)
    wsum = sum(w, axis, keepdims=keepdims)
    avg = ew.div_p.bind(sum(ew.mul_p.bind(a, w), axis, keepdims=keepdims), wsum)
    return (avg, wsum) if returned else avg


# --- NaN-ignoring variants -----------------------------------------------------------------------
def _nan_to(a, value):
    a = ensure_array(a)
    if not dtypes.is_inexact(a.dtype):
        return a
    return _select(isnan(a), convert(value, a.dtype), a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    return sum(_nan_to(a, 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    return prod(_nan_to(a, 1), axis, dtype, out, keepdims, initial, where)


def _not_nan(a, where=None):
    """The elements a NaN-ignoring reduction keeps: not NaN (and in `where`, if given)."""
    keep = logical_not(isnan(a))
    return keep if where is None else logical_and(keep, where)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """max ignoring NaNs; all-NaN slices give NaN."""
    a = ensure_array(a)
    if not dtypes.is_inexact(a.dtype):
        return amax(a, axis, out, keepdims, initial, where)
    r = amax(_nan_to(a, -np.inf), axis, out, keepdims, initial, where)
    return _select(all(isnan(a), axis, keepdims=keepdims), convert(np.nan, r.dtype), r)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    a = ensure_array(a)
    if not dtypes.is_inexact(a.dtype):
        return amin(a, axis, out, keepdims, initial, where)
    r = amin(_nan_to(a, np.inf), axis, out, keepdims, initial, where)
    return _select(all(isnan(a), axis, keepdims=keepdims), convert(np.nan, r.dtype), r)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    a = ensure_array(a)
    if not dtypes.is_inexact(a.dtype):
        return mean(a, axis, dtype, out, keepdims, where=where)
    return mean(a, axis, dtype, out, keepdims, where=_not_nan(a, where))


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    a = ensure_array(a)
    if not dtypes.is_inexact(a.dtype):
        return var(a, axis, dtype, out, ddof, keepdims, where=where)
    return var(a, axis, dtype, out, ddof, keepdims, where=_not_nan(a, where))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    a = ensure_array(a)
    if not dtypes.is_inexact(a.dtype):
        return std(a, axis, dtype, out, ddof, keepdims, where=where)
    return std(a, axis, dtype, out, ddof, keepdims, where=_not_nan(a, where))


def nanargmax(a, axis=None, out=None, keepdims=None):
    return argmax(_nan_to(a, -np.inf), axis, out, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
    return argmin(_nan_to(a, np.inf), axis, out, keepdims)


# --- cumulative ----------------------------------------------------------------------------------
def _cumulative(name, prim, a, axis, dtype, reverse=False, promote_integers=False):
    """jnp's cumulative reductions: a small integer keeps its dtype (int8's cumsum wraps in
    int8) unless `promote_integers` (cumulative_sum); bool counts in the default int; float16
    and bfloat16 accumulate in themselves (jnp's sum adds them in float32, its cumsum not)."""
    a = ensure_array(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _normalize_axis(axis, a.ndim)
    if dtype is not None:
        dt = dtypes.canonicalize_dtype(dtype)
    elif promote_integers or dtypes.is_bool(a.dtype):
        dt = _accumulator_dtype(a.dtype)
    else:
        dt = a.dtype
    if dtypes.is_bool(dt):          # dtype=bool: counted in the default int, then cast (jnp's)
        a, dt = _cast(a, dt), dtypes.default_int()
    r = prim.bind(_cast(a, dt), axis=axis, reverse=reverse)  # (float16 adds in float16, as
    return _cast(r, dtypes.bool_ if dtype is not None and dtypes.is_bool(
        dtypes.canonicalize_dtype(dtype)) else dt)


def cumsum(a, axis=None, dtype=None, out=None):
    _no_out(out, "cumsum")
    return _cumulative("cumsum", st.cumsum_p, a, axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    _no_out(out, "cumprod")
    return _cumulative("cumprod", st.cumprod_p, a, axis, dtype)


def _array_api_axis(name, a, axis):
    """The array API's cumulative functions (jnp's cumulative_sum/prod) flatten nothing: an
    array of more than one dimension needs its axis, as JAX's ValueError says."""
    if axis is None and np.ndim(a) > 1:
        raise SecantValueError(f"{name}: the input array has rank {np.ndim(a)}, so axis must be "
                               f"given{_where()}")
    return axis


_array_api_axis.__secant_static_query__ = True


def cumulative_sum(a, axis=None, dtype=None, out=None):
    _no_out(out, "cumulative_sum")
    axis = _array_api_axis("cumulative_sum", a, axis)
    return _cumulative("cumulative_sum", st.cumsum_p, a, axis, dtype, promote_integers=True)


def cumulative_prod(a, axis=None, dtype=None, out=None):
    return cumprod(a, _array_api_axis("cumulative_prod", a, axis), dtype, out)


def nancumsum(a, axis=None, dtype=None, out=None):
    return cumsum(_nan_to(a, 0), axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    return cumprod(_nan_to(a, 1), axis, dtype, out)


# --- order statistics ----------------------------------------------------------------------------
_QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """Quantiles at static `q` (a number or 1-D sequence in [0, 1]) by sorting; NaN propagates."""
    _no_out(out, "quantile")
    if isinstance(q, Tracer):
        raise UnsupportedError("quantile needs static q (numbers), not a traced array" + _where())
    if method not in _QUANTILE_METHODS:
        raise SecantValueError(f"quantile method must be one of {_QUANTILE_METHODS}, got "
                               f"{method!r}{_where()}")
    qs = np.asarray(q, dtype=np.float64)
    if qs.ndim > 1 or np.any((qs < 0) | (qs > 1)):
        raise SecantValueError(f"quantiles must be a number or 1-D sequence in [0, 1], got {q}"
                               f"{_where()}")
    a = to_inexact(ensure_array(a))
    axes = _canonical_axes(axis, a.ndim)
    # Gather the reduced axes into one trailing axis, then sort along it.
    rest = [i for i in range(a.ndim) if i not in axes]
    moved = moveaxis(a, axes, tuple(range(len(rest), a.ndim))) if axes else a
    kept_shape = tuple(a.shape[i] for i in rest)
    n = math.prod(a.shape[i] for i in axes)
    if n == 0:
        raise SecantValueError("quantile of an empty array" + _where())
    ordered = sort(reshape(moved, kept_shape + (n,)), axis=-1)
    has_nan = any(isnan(ordered), axis=-1)
    results = [_quantile_at(ordered, float(p), n, method) for p in np.atleast_1d(qs)]
    results = [_select(has_nan, convert(np.nan, r.dtype), r) for r in results]
    if keepdims:
        full_shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape))
        results = [reshape(r, full_shape) for r in results]
    return results[0] if qs.ndim == 0 else stack(results)


def _quantile_at(ordered, p, n, method):
    pos = p * (n - 1)
    lo, hi = math.floor(pos), math.ceil(pos)

    def take(i):
        return squeeze(_slice_axis(ordered, ordered.ndim - 1, i, i + 1), -1)

    if method == "lower" or (method == "linear" and lo == hi):
        return take(lo)
    if method == "higher":
        return take(hi)
    if method == "nearest":
        return take(int(np.round(pos)))
    frac = 0.5 if method == "midpoint" else pos - lo
    below, above = take(lo), take(hi)
    step = ew.mul_p.bind(ew.sub_p.bind(above, below), convert(frac, below.dtype))
    return ew.add_p.bind(below, step)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False):
    if isinstance(q, Tracer):
        raise UnsupportedError("percentile needs static q (numbers), not a traced array" + _where())
    return quantile(a, np.asarray(q, dtype=np.float64) / 100, axis, out, overwrite_input, method,
                    keepdims)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return quantile(a, 0.5, axis, out, overwrite_input, "linear", keepdims)

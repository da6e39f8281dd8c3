"""Creating arrays: constants of a shape, ranges, identity-like matrices, triangles, grids.

Eagerly they are NumPy arrays. Under jit a constant of a shape (zeros, ones, full, the *_like
functions) is one scalar constant broadcast (`stablehlo.broadcast_in_dim`), and a large range,
identity or triangle is built from `iota`: the trace never allocates an array the size of the
result on the host, nor writes it into the module as a dense constant. Small ranges and
matrices stay NumPy constants under jit, so code that reads them at trace time keeps working.
"""
import builtins
import math
import operator

import numpy as np

from secant.backends import dtypes
from secant.backends.array import Array
from secant.backends.core import Tracer
from secant.backends.errors import ConcretizationError, SecantValueError, where
from secant.backends.primitives import elementwise as ew
from secant.backends.primitives import structural as st
from secant.backends.tracer import active_trace
from secant.numpy.conversion import convert, dtype_weak, ensure_array, result_type
from secant.numpy.shape import (_normalize_axis, _shape_tuple, _slice_axis, broadcast_shapes,
                                broadcast_to, concatenate, moveaxis, reshape)
from secant.numpy.ufuncs import where as _select


def _dtype_or(dtype, default):
    return dtypes.canonicalize_dtype(dtype) if dtype is not None else default


# a range, identity or triangle with more elements than this is built from iota under jit
_IOTA_ABOVE = 1 << 16


def _filled(shape, value, dt, weak=False):
    """An array of `shape` holding `value` (a scalar or an array that broadcasts to `shape`):
    NumPy's eagerly; under jit the broadcast of a constant, never a host array of `shape`."""
    trace = active_trace()
    if trace is None:
        return Array._wrap(np.full(shape, value, dtype=dt), weak)
    return broadcast_to(trace.lift(Array._wrap(np.asarray(value, dtype=dt), weak)), shape)


def _iota(trace, dt, shape, dimension):
    return trace.emit(st.iota_p, (), dict(dtype=dt, shape=shape, dimension=dimension))


def _abstract_trace(shape):
    """The active trace when an array of `shape` is large enough to build from iota, else None."""
    trace = active_trace()
    if trace is None or math.prod(shape) <= _IOTA_ABOVE:
        return None
    return trace


# --- constants of a shape ------------------------------------------------------------------------
def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with `fill_value` (which may be an array that broadcasts)."""
    shape = _shape_tuple(shape)
    fdt, fweak = dtype_weak(fill_value)
    dt = _dtype_or(dtype, fdt)
    weak = dtype is None and fweak
    if isinstance(fill_value, Tracer):
        return broadcast_to(convert(fill_value, dt, weak), shape)
    value = fill_value._value() if type(fill_value) is Array else fill_value
    return _filled(shape, value, dt, weak)


def zeros(shape, dtype=None):
    return _filled(_shape_tuple(shape), 0, _dtype_or(dtype, dtypes.default_float()))


def ones(shape, dtype=None):
    return _filled(_shape_tuple(shape), 1, _dtype_or(dtype, dtypes.default_float()))


empty = zeros


def _like(a, fill_value, dtype, shape):
    """full_like's rule: the result takes `a`'s dtype and weak type unless `dtype` is given."""
    a = ensure_array(a)
    adt, aweak = dtype_weak(a)
    dt = _dtype_or(dtype, adt)
    out_shape = _shape_tuple(shape) if shape is not None else a.shape
    weak = dtype is None and aweak
    if isinstance(fill_value, Tracer):
        return broadcast_to(convert(fill_value, dt, weak), out_shape)
    value = fill_value._value() if type(fill_value) is Array else fill_value
    return _filled(out_shape, value, dt, weak)


def zeros_like(a, dtype=None, shape=None):
    if getattr(a, "__secant_undefined__", False):
        # the cotangent of a variable a branch never assigned (a derivative of a staged if on
        # a concrete test): undefined too, an error wherever it is read; that of a derivative's
        # residual (backends/placeholder.py Unset) is a symbolic zero
        from secant.backends.placeholder import Unset, UnsetCotangent
        return UnsetCotangent(a.name) if isinstance(a, Unset) else a
    return _like(a, 0, dtype, shape)


def ones_like(a, dtype=None, shape=None):
    return _like(a, 1, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    return _like(a, fill_value, dtype, shape)


empty_like = zeros_like


# --- ranges --------------------------------------------------------------------------------------
def _concrete_scalar(x, name):
    if isinstance(x, Tracer):
        raise ConcretizationError(f"arange's {name} must be concrete: the result's length depends "
                                  f"on it (inside jit use a static argument or linspace){where()}")
    if type(x) is Array:
        return x.item()
    return x


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in [start, stop): int32 for Python ints, float32 for floats."""
    start = _concrete_scalar(start, "start")
    stop = _concrete_scalar(stop, "stop") if stop is not None else None
    step = _concrete_scalar(step, "step") if step is not None else None
    if step == 0:
        raise SecantValueError("arange: step may not be zero" + where())
    if dtype is None:
        dtype = result_type(*[v for v in (start, stop, step) if v is not None])
    dt = dtypes.canonicalize_dtype(dtype)
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    trace = None
    if active_trace() is not None:
        trace = _abstract_trace((builtins.max(0, math.ceil((stop - start) / step)),))
    if trace is None:
        return Array._wrap(np.arange(start, stop, step, dtype=dt))
    n = builtins.max(0, math.ceil((stop - start) / step))
    out = _iota(trace, dt, (n,), 0)                     # start + i * step, as NumPy computes it
    if step != 1:
        out = ew.mul_p.bind(out, convert(step, dt))
    if start != 0:
        out = ew.add_p.bind(out, convert(start, dt))
    return out


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """`num` evenly spaced samples from start to stop; start and stop may be (traced) arrays."""
    num = operator.index(num)
    if num < 0:
        raise SecantValueError(f"linspace: num must be non-negative, got {num}{where()}")
    out_dt = _dtype_or(dtype, result_type(start, stop, float))
    calc_dt = out_dt if dtypes.is_inexact(out_dt) else dtypes.default_float()
    start, stop = (convert(ensure_array(v), calc_dt) for v in (start, stop))
    bshape = broadcast_shapes(start.shape, stop.shape)
    start, stop = broadcast_to(start, bshape), broadcast_to(stop, bshape)
    axis = _normalize_axis(axis, len(bshape) + 1)
    out_shape = bshape[:axis] + (num,) + bshape[axis:]
    div = num - 1 if endpoint else num
    lo = _insert_axis(start, axis)
    hi = _insert_axis(stop, axis)
    delta = ew.sub_p.bind(hi, lo)
    if div > 0:
        step = ew.div_p.bind(delta, convert(div, calc_dt))
        steps = st.iota_p.bind(dtype=calc_dt, shape=out_shape, dimension=axis)
        out = ew.add_p.bind(ew.mul_p.bind(steps, step), lo)
        if endpoint:
            # The last sample is exactly `stop`, not start + (num-1) * step.
            out = concatenate([_slice_axis(out, axis, 0, num - 1), hi], axis)
    else:
        step = full(bshape, np.nan, calc_dt)
        out = broadcast_to(lo, out_shape)
    if dtypes.is_int(out_dt) and not dtypes.is_int(calc_dt):
        out = ew.floor_p.bind(out)
    out = convert(out, out_dt)
    return (out, reshape(step, bshape)) if retstep else out


def _insert_axis(x, axis):
    return reshape(x, x.shape[:axis] + (1,) + x.shape[axis:])


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    from secant.numpy.ufuncs import power
    lin = linspace(start, stop, num, endpoint, dtype=None, axis=axis)
    out = power(convert(base, lin.dtype), lin)
    return convert(out, dtypes.canonicalize_dtype(dtype)) if dtype is not None else out


# --- matrices ------------------------------------------------------------------------------------
def _diagonal_mask(trace, rows, cols, k, compare):
    """The bool[rows, cols] array `compare(col - row, k)`, from iota (eye: ==, tri: <=)."""
    shape = (rows, cols)
    diff = ew.sub_p.bind(_iota(trace, np.dtype(np.int32), shape, 1),
                         _iota(trace, np.dtype(np.int32), shape, 0))
    return compare(diff, convert(k, np.dtype(np.int32)))


def eye(N, M=None, k=0, dtype=None):
    dt = _dtype_or(dtype, dtypes.default_float())
    rows = operator.index(N)
    cols = rows if M is None else operator.index(M)
    trace = _abstract_trace((rows, cols))
    if trace is None:
        return Array._wrap(np.eye(rows, cols, operator.index(k), dtype=dt))
    return convert(_diagonal_mask(trace, rows, cols, operator.index(k), ew.eq_p.bind), dt)


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    dt = _dtype_or(dtype, dtypes.default_float())
    return convert(_tri_mask(operator.index(N), None if M is None else operator.index(M),
                             operator.index(k)), dt)


def _tri_mask(rows, cols, k):
    """bool[rows, cols]: True at and below the k-th diagonal (NumPy's tri)."""
    cols = rows if cols is None else cols
    trace = _abstract_trace((rows, cols))
    if trace is None:
        return Array._wrap(np.tri(rows, cols, k, dtype=bool))
    return _diagonal_mask(trace, rows, cols, k, ew.le_p.bind)


def _triangle(m, k, lower, name):
    m = ensure_array(m)
    if m.ndim < 2:
        raise SecantValueError(f"{name} needs an array of at least 2 dimensions, got shape "
                               f"{m.shape}{where()}")
    rows, cols = m.shape[-2:]
    k = operator.index(k)
    if lower:
        return _select(_tri_mask(rows, cols, k), m, convert(0, m.dtype, m.weak_type))
    return _select(_tri_mask(rows, cols, k - 1), convert(0, m.dtype, m.weak_type), m)


def tril(m, k=0):
    return _triangle(m, k, True, "tril")


def triu(m, k=0):
    return _triangle(m, k, False, "triu")


def diag(v, k=0):
    """The k-th diagonal of a 2-D array, or a 2-D array with 1-D `v` on its k-th diagonal."""
    v = ensure_array(v)
    k = operator.index(k)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise SecantValueError(f"diag needs a 1-D or 2-D input, got shape {v.shape}{where()}")
    n = v.shape[0] + builtins.abs(k)
    zero = convert(0, v.dtype, v.weak_type)
    padded = st.pad_p.bind(v, convert(0, v.dtype), padding_config=((0, builtins.abs(k), 0),))
    # Row i of the result holds v[i] when k >= 0 (column j holds v[j] when k < 0).
    spread = reshape(padded, (n, 1) if k >= 0 else (1, n))
    mask = Array._wrap(np.eye(n, n, k, dtype=bool))
    return _select(mask, spread, zero)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of the (axis1, axis2) planes, as the last axis of the result."""
    a = ensure_array(a)
    if a.ndim < 2:
        raise SecantValueError(f"diagonal needs at least 2 dimensions, got shape {a.shape}"
                               f"{where()}")
    i, j = _normalize_axis(axis1, a.ndim, "axis1"), _normalize_axis(axis2, a.ndim, "axis2")
    if i == j:
        raise SecantValueError(f"diagonal: axis1 and axis2 must differ, got {i}{where()}")
    offset = operator.index(offset)
    x = moveaxis(a, (i, j), (-2, -1))
    *lead, n, m = x.shape
    length = builtins.max(0, builtins.min(n, m - offset) if offset >= 0
                          else builtins.min(n + offset, m))
    # In the row-major flattened plane, element (r, r + offset) sits at start + r * (m + 1).
    flat = reshape(x, (*lead, n * m))
    start = offset if offset >= 0 else -offset * m
    if length == 0:
        return _slice_axis(flat, len(lead), 0, 0)
    return _slice_axis(flat, len(lead), start, start + (length - 1) * (m + 1) + 1, m + 1)


def diagflat(v, k=0):
    return diag(reshape(ensure_array(v), (-1,)), k)


# --- grids ---------------------------------------------------------------------------------------
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate grids; 'xy' (Cartesian) swaps the roles of the first two axes, as NumPy."""
    if indexing not in ("xy", "ij"):
        raise SecantValueError(f"meshgrid indexing must be 'xy' or 'ij', got {indexing!r}"
                               f"{where()}")
    xs = [ensure_array(x) for x in xi]
    if any(x.ndim != 1 for x in xs):    # as JAX (NumPy flattens them)
        raise SecantValueError(f"meshgrid arguments must be 1-D, got shapes "
                               f"{[tuple(x.shape) for x in xs]}{where()}")
    dims = list(range(len(xs)))
    if indexing == "xy" and len(xs) >= 2:
        dims[0], dims[1] = 1, 0
    out_shape = [0] * len(xs)
    for x, d in zip(xs, dims):
        out_shape[d] = x.shape[0]
    out = []
    for x, d in zip(xs, dims):
        if sparse:
            out.append(reshape(x, tuple(x.shape[0] if i == d else 1 for i in range(len(xs)))))
        else:
            out.append(st.broadcast_in_dim_p.bind(x, shape=tuple(out_shape),
                                                  broadcast_dimensions=(d,)))
    return out


def indices(dimensions, dtype=None, sparse=False):
    dims = _shape_tuple(dimensions, "dimensions")
    dt = _dtype_or(dtype, dtypes.default_int())
    grids = np.indices(dims, dtype=dt, sparse=sparse)
    if sparse:
        return tuple(Array._wrap(g) for g in grids)
    return Array._wrap(grids)

"""Shapes and arrangement: reshape, transpose, broadcasting, joining, splitting, flipping, sorting.

Every function reads only static shape information from its inputs, so each works the same on
eager arrays and on Tracers inside jit.
"""
import builtins
import math
import operator

import numpy as np

from secant.backends import dtypes
from secant.backends.core import Tracer
from secant.backends.errors import (ConcretizationError, SecantTypeError, SecantValueError,
                                    ShapeError, UnsupportedError, where)
from secant.backends.array import Array
from secant.backends.primitives import structural as st
from secant.backends.primitives import complex as cx
from secant.backends.tracer import active_trace
from secant.numpy.conversion import convert, ensure_array, promote


# --- axis helpers shared by the other secant.numpy families --------------------------------------
def _static_int(value, what):
    """A Python int from a static argument, with a clear error for traced or fractional values."""
    if isinstance(value, Tracer):
        raise ConcretizationError(f"{what} must be static (a Python int), got a traced value"
                                  f"{where()}")
    try:
        return operator.index(value)
    except TypeError:
        raise SecantTypeError(f"{what} must be an integer, got {value!r}{where()}") from None


def _normalize_axis(axis, ndim, name="axis"):
    axis = _static_int(axis, name)
    if not -ndim <= axis < ndim:
        raise SecantValueError(f"{name} {axis} is out of bounds for an array of dimension {ndim}"
                               f"{where()}")
    return axis % ndim


def _canonical_axes(axis, ndim, name="axis"):
    """axis=None/int/sequence -> a sorted tuple of distinct non-negative axes."""
    if type(axis) is int and -ndim <= axis < ndim:
        return (axis % ndim,)       # (the common case, at once)
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(_normalize_axis(a, ndim, name) for a in axis)
    else:
        axes = (_normalize_axis(axis, ndim, name),)
    if len(set(axes)) != len(axes):
        raise SecantValueError(f"repeated {name} in {axis!r}{where()}")
    return tuple(sorted(axes))


def _shape_tuple(shape, name="shape"):
    if type(shape) is tuple:        # (a tuple of non-negative ints, the common case: itself)
        for d in shape:
            if type(d) is not int or d < 0:
                break
        else:
            return shape
    if isinstance(shape, (tuple, list)):
        dims = tuple(_static_int(d, f"{name} entries") for d in shape)
    else:
        dims = (_static_int(shape, name),)
    if any(d < 0 for d in dims):
        raise SecantValueError(f"negative dimensions are not allowed in {name} {dims}{where()}")
    return dims


# --- queries -------------------------------------------------------------------------------------
def shape(a):
    return tuple(ensure_array(a).shape)


def ndim(a):
    return len(shape(a))


def size(a, axis=None):
    s = shape(a)
    if axis is None:
        return math.prod(s)
    return s[_normalize_axis(axis, len(s))]


# --- reshaping -----------------------------------------------------------------------------------
_RESOLVED = {}      # (newshape of ints, old shape) -> the shape it names: reshape's eager path


def _resolve_shape(newshape, total, old_shape):
    t = type(newshape)
    if t is tuple and all(type(d) is int for d in newshape) or t is int:
        key = (newshape, old_shape)
        new = _RESOLVED.get(key)
        if new is None:
            new = _resolve_dims(newshape, total, old_shape)
            if len(_RESOLVED) < 4096:
                _RESOLVED[key] = new
        return new
    return _resolve_dims(newshape, total, old_shape)


def _resolve_dims(newshape, total, old_shape):
    if not isinstance(newshape, (tuple, list)):
        newshape = (newshape,)
    dims = [_static_int(d, "reshape dimensions") for d in newshape]
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in dims):
        raise SecantValueError(f"reshape to {tuple(dims)}: only one -1 and no other negative "
                               f"dimensions are allowed{where()}")
    known = math.prod(d for d in dims if d != -1)
    if unknown:
        if known == 0 or total % known:
            raise ShapeError(f"cannot reshape array of shape {old_shape} (size {total}) into "
                             f"shape {tuple(dims)}{where()}")
        dims[unknown[0]] = total // known
    elif known != total:
        raise ShapeError(f"cannot reshape array of shape {old_shape} (size {total}) into "
                         f"shape {tuple(dims)}{where()}")
    return tuple(dims)


def reshape(a, shape=None, order="C", *, newshape=None):
    """Row-major reshape; one dimension may be -1 (inferred)."""
    if order != "C":
        raise UnsupportedError(f"reshape supports order='C' only, got {order!r}{where()}")
    if shape is None:
        shape = newshape
    if type(a) is Array and a._npy is not None:
        # an eager value: NumPy's reshape (what bind would run) without bind's generic work,
        # the shape checked as below (issue 19: ODE solvers ravel and unravel their state at
        # each step, a tenth of a third derivative's eager time)
        v = a._npy
        old = v.shape
        new = _resolve_shape(shape, math.prod(old), old)
        return a if new == old else Array._wrap(np.reshape(v, new), a.weak_type)
    a = ensure_array(a)
    new = _resolve_shape(shape, a.size, a.shape)
    if new == a.shape:
        return a
    return st.reshape_p.bind(a, new_sizes=new)


def ravel(a, order="C"):
    return reshape(a, (-1,), order)


def transpose(a, axes=None):
    if axes is None and type(a) is Array:
        v = a._npy      # an eager array: transpose_p's impl (NumPy's view), as bind computes it
        if type(v) is np.ndarray:
            return Array._wrap_ndarray(v.transpose(), a.weak_type) if v.ndim > 1 else a
    a = ensure_array(a)
    if axes is None:
        perm = tuple(range(a.ndim))[::-1]
    else:
        perm = tuple(_normalize_axis(ax, a.ndim, "axes entry") for ax in axes)
        if sorted(perm) != list(range(a.ndim)):
            raise SecantValueError(f"axes {tuple(axes)} is not a permutation of the "
                                   f"{a.ndim} axes{where()}")
    if perm == tuple(range(a.ndim)):
        return a
    return st.transpose_p.bind(a, permutation=perm)


def permute_dims(a, axes=None):
    return transpose(a, axes)


def matrix_transpose(x, /):
    x = ensure_array(x)
    if x.ndim < 2:
        raise SecantValueError(f"matrix_transpose needs at least 2 dimensions, got {x.ndim}"
                               f"{where()}")
    return swapaxes(x, -1, -2)


def swapaxes(a, axis1, axis2):
    if type(a) is Array and type(axis1) is int and type(axis2) is int:
        v = a._npy      # an eager array: transpose_p's impl (NumPy's view), as bind computes it
        if type(v) is np.ndarray:
            n = v.ndim
            if -n <= axis1 < n and -n <= axis2 < n:
                i, j = axis1 % n, axis2 % n
                return a if i == j else Array._wrap_ndarray(v.swapaxes(i, j), a.weak_type)
    a = ensure_array(a)
    i, j = _normalize_axis(axis1, a.ndim), _normalize_axis(axis2, a.ndim)
    perm = list(range(a.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a, source, destination):
    a = ensure_array(a)
    src = source if isinstance(source, (tuple, list)) else (source,)
    dst = destination if isinstance(destination, (tuple, list)) else (destination,)
    if len(src) != len(dst):
        raise SecantValueError(f"moveaxis: source {source} and destination {destination} need the "
                               f"same number of axes{where()}")
    src = [_normalize_axis(s, a.ndim, "source") for s in src]
    dst = [_normalize_axis(d, a.ndim, "destination") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise SecantValueError(f"moveaxis: repeated axes in {source} or {destination}{where()}")
    rest = [i for i in range(a.ndim) if i not in src]
    perm = [None] * a.ndim
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    perm = [p if p is not None else next(it) for p in perm]
    return transpose(a, perm)


def rollaxis(a, axis, start=0):
    a = ensure_array(a)
    axis = _normalize_axis(axis, a.ndim)
    start = _static_int(start, "start")
    start = start + a.ndim if start < 0 else start
    if start > axis:
        start -= 1
    return moveaxis(a, axis, start)


def squeeze(a, axis=None):
    a = ensure_array(a)
    if axis is None:
        dims = tuple(i for i, d in enumerate(a.shape) if d == 1)
    else:
        dims = _canonical_axes(axis, a.ndim)
        bad = [i for i in dims if a.shape[i] != 1]
        if bad:
            raise SecantValueError(f"cannot squeeze axis {bad[0]} of shape {a.shape}: its size is "
                                   f"not 1{where()}")
    if not dims:
        return a
    return st.squeeze_p.bind(a, dimensions=dims)


def expand_dims(a, axis):
    a = ensure_array(a)
    n = len(axis) if isinstance(axis, (tuple, list)) else 1
    dims = _canonical_axes(axis, a.ndim + n)
    if type(a) is Array and a._npy is not None:     # eager: the impl on the checked axes
        v = a._npy      # (a 0-d value, as a reduction's cotangent: all ones, by reshape)
        out = np.asarray(v).reshape((1,) * n) if not v.ndim else np.expand_dims(v, dims)
        return Array._wrap_ndarray(out, a.weak_type)
    return st.expand_dims_p.bind(a, dimensions=dims)


# --- broadcasting --------------------------------------------------------------------------------
def broadcast_shapes(*shapes):
    shapes = [_shape_tuple(s) for s in shapes]
    if not shapes:
        return ()
    first = shapes[0]
    for s in shapes:
        if s != first:
            break
    else:
        return first        # (one shape: itself)
    nd = builtins.max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (nd - len(s)) + s for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ShapeError("shapes " + ", ".join(map(str, shapes))
                             + f" cannot be broadcast together{where()}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_to(array, shape):
    """NumPy's one-way broadcast: each input dimension must be 1 or the target size."""
    x = ensure_array(array)
    shape = _shape_tuple(shape)
    lead = len(shape) - x.ndim
    if lead < 0 or any(d != 1 and d != s for d, s in zip(x.shape, shape[lead:])):
        raise ShapeError(f"cannot broadcast an array of shape {x.shape} to shape {shape}"
                         f"{where()}")
    if x.shape == shape:
        return x
    trace = active_trace()
    if type(x) is Array:
        if trace is not None:
            x = trace.lift(x)   # under jit a broadcast op, never a host array of `shape`
        elif x._npy is not None:    # eager, the shapes checked: a read-only view (the impl's)
            return Array._wrap_ndarray(_broadcast_view(x._npy, shape), x.weak_type)
    return st.broadcast_in_dim_p.bind(x, shape=shape,
                                      broadcast_dimensions=tuple(range(lead, len(shape))))


def _broadcast_view(v, shape):
    """np.broadcast_to(v, shape) for shapes already checked: a one-element value (a reduction's
    cotangent, say) as a read-only view of its element with all strides 0, built directly (the
    same array np.broadcast_to makes, in a quarter of its time); others by np.broadcast_to."""
    if v.size != 1:
        return np.broadcast_to(v, shape)
    if type(v) is not np.ndarray:
        v = np.asarray(v)
    out = np.ndarray(shape, v.dtype, v, 0, (0,) * len(shape))
    out.flags.writeable = False
    return out


def broadcast_arrays(*args):
    args = [ensure_array(a) for a in args]
    target = broadcast_shapes(*[a.shape for a in args])
    return [broadcast_to(a, target) for a in args]


def atleast_1d(*arys):
    out = [a if a.ndim >= 1 else reshape(a, (1,)) for a in map(ensure_array, arys)]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for a in map(ensure_array, arys):
        out.append(a if a.ndim >= 2 else reshape(a, (1,) * (2 - a.ndim) + a.shape))
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    out = []
    for a in map(ensure_array, arys):
        if a.ndim == 0:
            a = reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = reshape(a, (1,) + a.shape + (1,))
        elif a.ndim == 2:
            a = reshape(a, a.shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


# --- joining -------------------------------------------------------------------------------------
def _promote_all(arrays, dtype):
    if isinstance(arrays, (Array, Tracer)):
        arrays = list(arrays)
    arrays = [ensure_array(a) for a in arrays]
    if not arrays:
        raise SecantValueError("need at least one array to join" + where())
    if dtype is not None:
        return [convert(a, dtypes.canonicalize_dtype(dtype)) for a in arrays]
    return list(promote(*arrays))


def concatenate(arrays, axis=0, dtype=None):
    arrays = _promote_all(arrays, dtype)
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    nd = arrays[0].ndim
    if nd == 0:
        raise SecantValueError("zero-dimensional arrays cannot be concatenated" + where())
    if any(a.ndim != nd for a in arrays):
        raise ShapeError("concatenate needs arrays with the same number of dimensions, got "
                         + ", ".join(str(a.shape) for a in arrays) + where())
    axis = _normalize_axis(axis, nd)
    base = arrays[0].shape
    for a in arrays[1:]:
        if any(a.shape[i] != base[i] for i in range(nd) if i != axis):
            raise ShapeError(f"concatenate: shapes {base} and {a.shape} differ outside axis "
                             f"{axis}{where()}")
    if len(arrays) == 1:
        return arrays[0]
    return st.concatenate_p.bind(*arrays, dimension=axis)


concat = concatenate


def stack(arrays, axis=0, dtype=None):
    arrays = _promote_all(arrays, dtype)
    first = arrays[0].shape
    if any(a.shape != first for a in arrays):
        raise ShapeError("stack needs arrays of one shape, got "
                         + ", ".join(str(a.shape) for a in arrays) + where())
    axis = _normalize_axis(axis, len(first) + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis)


def vstack(tup, dtype=None):
    return concatenate([atleast_2d(a) for a in tup], 0, dtype)


row_stack = vstack


def hstack(tup, dtype=None):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype)


def dstack(tup, dtype=None):
    return concatenate([atleast_3d(a) for a in tup], 2, dtype)


def column_stack(tup):
    arrs = []
    for a in map(ensure_array, tup):
        arrs.append(reshape(a, (a.size, 1)) if a.ndim < 2 else a)
    return concatenate(arrs, 1)


# --- splitting -----------------------------------------------------------------------------------
def _slice_axis(a, axis, start, stop, step=1):
    """a[..., start:stop:step, ...] along one axis, for static non-negative bounds."""
    if start == 0 and stop == a.shape[axis] and step == 1:
        return a
    starts = [0] * a.ndim
    limits = list(a.shape)
    strides = [1] * a.ndim
    starts[axis], limits[axis], strides[axis] = start, builtins.max(start, stop), step
    return st.slice_p.bind(a, start_indices=tuple(starts), limit_indices=tuple(limits),
                           strides=None if step == 1 else tuple(strides))


def _split(ary, indices_or_sections, axis, even):
    a = ensure_array(ary)
    axis = _normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if isinstance(indices_or_sections, (tuple, list, np.ndarray)):
        cuts = [_static_int(i, "split indices") for i in indices_or_sections]
        cuts = [builtins.min(builtins.max(c + n if c < 0 else c, 0), n) for c in cuts]
    else:
        sections = _static_int(indices_or_sections, "number of sections")
        if sections <= 0:
            raise SecantValueError(f"number of sections must be positive, got {sections}"
                                   f"{where()}")
        if even and n % sections:
            raise SecantValueError(f"array split does not result in an equal division: axis of "
                                   f"size {n} into {sections} sections{where()}")
        size_, extra = divmod(n, sections)
        sizes = [size_ + 1] * extra + [size_] * (sections - extra)
        cuts = list(np.cumsum(sizes[:-1]).tolist())
    bounds = [0] + cuts + [n]
    return [_slice_axis(a, axis, lo, builtins.max(lo, hi)) for lo, hi in zip(bounds, bounds[1:])]


def split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, even=True)


def array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, even=False)


def hsplit(ary, indices_or_sections):
    a = ensure_array(ary)
    return split(a, indices_or_sections, 0 if a.ndim == 1 else 1)


def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, 2)


# --- rearranging ---------------------------------------------------------------------------------
def flip(m, axis=None):
    m = ensure_array(m)
    dims = _canonical_axes(axis, m.ndim)
    if not dims:
        return m
    return st.rev_p.bind(m, dimensions=dims)


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
    m = ensure_array(m)
    ax0, ax1 = (_normalize_axis(ax, m.ndim) for ax in axes)
    if ax0 == ax1:
        raise SecantValueError(f"rot90 needs two different axes, got {axes}{where()}")
    k = _static_int(k, "k") % 4
    if k == 0:
        return m
    if k == 2:
        return flip(m, (ax0, ax1))
    if k == 1:
        return swapaxes(flip(m, ax1), ax0, ax1)
    return flip(swapaxes(m, ax0, ax1), ax1)


def roll(a, shift, axis=None):
    """Elements shifted by a static amount along `axis`, wrapping around."""
    a = ensure_array(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise SecantValueError(f"roll: shift {shift} and axis {axis} differ in length{where()}")
    for s, ax in zip(shifts, axes):
        ax = _normalize_axis(ax, a.ndim)
        n = a.shape[ax]
        s = _static_int(s, "shift") % n if n else 0
        if s:
            a = concatenate([_slice_axis(a, ax, n - s, n), _slice_axis(a, ax, 0, n - s)], ax)
    return a


def tile(A, reps):
    A = ensure_array(A)
    reps = _shape_tuple(reps if isinstance(reps, (tuple, list)) else (reps,), "reps")
    nd = builtins.max(A.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    A = reshape(A, (1,) * (nd - A.ndim) + A.shape)
    # Interleave a repeat axis before each data axis: (r0, d0, r1, d1, ...), then merge the pairs.
    inter = tuple(x for pair in zip(reps, A.shape) for x in pair)
    b = st.broadcast_in_dim_p.bind(A, shape=inter,
                                   broadcast_dimensions=tuple(range(1, 2 * nd, 2)))
    return reshape(b, tuple(r * d for r, d in zip(reps, A.shape)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Each element repeated a static number of times (an int, or one count per element)."""
    a = ensure_array(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _normalize_axis(axis, a.ndim)
    if total_repeat_length is not None and np.ndim(repeats) == 1:
        return _repeat_to_length(a, repeats, axis, _static_int(total_repeat_length,
                                                               "total_repeat_length"))
    if isinstance(repeats, Tracer):
        raise ConcretizationError("repeat needs static repeats (the output shape depends on them)"
                                  " or a total_repeat_length" + where())
    counts = np.asarray(repeats)
    if counts.ndim == 0 or counts.size == 1:
        r = _static_int(counts.reshape(()).item(), "repeats")
        if r < 0:
            raise SecantValueError(f"repeats may not be negative, got {r}{where()}")
        out = _repeat_uniform(a, axis, r)
    else:
        if counts.dtype.kind not in "iub":        # (JAX: "Indexer must have integer type")
            raise SecantTypeError(f"repeat: repeats must be integers, got {counts.dtype}"
                                  f"{where()}")
        if counts.shape != (a.shape[axis],):
            raise SecantValueError(f"repeat: {counts.size} repeat counts for an axis of size "
                                   f"{a.shape[axis]}{where()}")
        pieces = [_repeat_uniform(_slice_axis(a, axis, i, i + 1), axis, int(r))
                  for i, r in enumerate(counts.tolist()) if r > 0]
        out = concatenate(pieces, axis) if pieces else _slice_axis(a, axis, 0, 0)
    if total_repeat_length is not None and out.shape[axis] != total_repeat_length:
        raise SecantValueError(f"repeat produced {out.shape[axis]} elements along axis {axis}, "
                               f"not total_repeat_length={total_repeat_length}{where()}")
    return out


def _repeat_to_length(a, repeats, axis, total):
    """Element i of the axis repeats[i] times, in `total` places (as JAX: the last element
    fills any places left over, elements beyond them are dropped); repeats may be traced."""
    from secant import numpy as snp
    n = a.shape[axis]
    if np.shape(repeats) != (n,):
        raise SecantValueError(f"repeat: {np.shape(repeats)[0]} repeat counts for an axis of size "
                               f"{n}{where()}")
    ends = snp.cumsum(ensure_array(repeats))
    index = snp.searchsorted(ends, snp.arange(total), side="right")
    return snp.take(a, snp.minimum(index, n - 1), axis=axis)


def _repeat_uniform(a, axis, r):
    if r == 1:
        return a
    expanded = a.shape[:axis + 1] + (r,) + a.shape[axis + 1:]
    dims = tuple(range(axis + 1)) + tuple(range(axis + 2, a.ndim + 1))
    b = st.broadcast_in_dim_p.bind(a, shape=expanded, broadcast_dimensions=dims)
    return reshape(b, a.shape[:axis] + (a.shape[axis] * r,) + a.shape[axis + 1:])


def pad(array, pad_width, mode="constant", constant_values=0, *, stat_length=None,
        end_values=0, reflect_type="even"):
    """np.pad: pad_width as NumPy accepts it; every NumPy mode (constant, empty, edge, reflect,
    symmetric, wrap, linear_ramp, maximum, minimum, mean, median; reflect_type 'even'/'odd').
    A mode other than 'constant' is computed by secant/numpy/pad_sources.py, which is also what
    the transforms read for it (gathers, a linear map, statistics of the edges)."""
    if mode != "constant" or stat_length is not None or end_values != 0 \
            or reflect_type != "even":
        from secant.numpy import pad_sources
        return pad_sources.pad(array, pad_width, mode, constant_values, stat_length=stat_length,
                               end_values=end_values, reflect_type=reflect_type)
    x = ensure_array(array)
    widths = _pad_widths(x.shape, pad_width)
    value = convert(reshape(ensure_array(constant_values), ()), x.dtype)
    return st.pad_p.bind(x, value, padding_config=tuple((lo, hi, 0) for lo, hi in widths))


_PAD_MODES = ("constant", "empty", "edge", "reflect", "symmetric", "wrap", "linear_ramp",
              "maximum", "minimum", "mean", "median")


def _pad_widths(shape, pad_width, what="pad widths"):
    """pad_width (an int, a pair, or one pair per axis) as one (before, after) pair per axis."""
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (len(shape), 2)).tolist()
    except (ValueError, TypeError):
        raise SecantValueError(f"{what} {pad_width!r} do not fit an array of {len(shape)} axes"
                               f"{where()}") from None
    if any(w < 0 for pair in widths for w in pair):
        raise SecantValueError(f"{what} must be non-negative, got {pad_width}{where()}")
    return widths


def _pad_plan(shape, pad_width, mode, stat_length, end_values, reflect_type):
    """Static work of pad_sources.pad: for each axis that grows, (axis, kind, table, left,
    right): kind 'take' (table: the index of each output entry along the axis), 'linear'
    (table: the output as a matrix times the input along the axis, left: the offset the
    end_values add), or 'stat' (table: the before and after regions' indices; left, right:
    the widths)."""
    if not isinstance(mode, str) or mode not in _PAD_MODES:
        raise SecantValueError(f"pad: mode must be one of {_PAD_MODES}, got {mode!r}{where()}")
    if reflect_type not in ("even", "odd"):
        raise SecantValueError(f"pad: reflect_type must be 'even' or 'odd', got "
                               f"{reflect_type!r}{where()}")
    widths = _pad_widths(shape, pad_width)
    stats = None if stat_length is None else _pad_widths(shape, stat_length, "stat_length")
    try:
        ends = np.broadcast_to(np.asarray(end_values, dtype=np.float64), (len(shape), 2))
    except (ValueError, TypeError):
        raise SecantValueError(f"pad: end_values must be numbers (one, a pair, or a pair per "
                               f"axis), got {end_values!r}{where()}") from None
    plan = []
    for axis, ((lo, hi), n) in enumerate(zip(widths, shape)):
        if lo == hi == 0:
            continue
        if n == 0:
            raise SecantValueError(f"pad: cannot pad an empty axis with mode={mode!r} (axis "
                                   f"{axis} has size 0){where()}")
        if mode in ("edge", "wrap") or mode in ("reflect", "symmetric") and reflect_type == "even":
            plan.append((axis, "take", np.pad(np.arange(n), (lo, hi), mode), None, None))
        elif mode in ("reflect", "symmetric", "linear_ramp"):
            kw = {"reflect_type": reflect_type} if mode != "linear_ramp" else {"end_values": 0}
            matrix = np.pad(np.eye(n), ((lo, hi), (0, 0)), mode, **kw)
            offset = None
            if mode == "linear_ramp":
                offset = np.pad(np.zeros(n), (lo, hi), mode, end_values=tuple(ends[axis]))
            plan.append((axis, "linear", matrix, offset, None))
        else:
            before, after = (n, n) if stats is None else (min(stats[axis][0], n),
                                                          min(stats[axis][1], n))
            if before == 0 or after == 0:
                raise SecantValueError(f"pad: stat_length 0 leaves no value for mode={mode!r}"
                                       f"{where()}")
            plan.append((axis, "stat", (np.arange(before), np.arange(n - after, n)), lo, hi))
    return plan


def _pad_shape(shape, axis, size):
    """`shape` with its axis `axis` of size `size`."""
    return tuple(shape[:axis]) + (size,) + tuple(shape[axis + 1:])


# --- sorting -------------------------------------------------------------------------------------
def _sort_axis(a, axis):
    a = ensure_array(a)
    if axis is None:
        return ravel(a), 0
    if a.ndim == 0:
        raise SecantValueError("cannot sort a 0-d array along an axis" + where())
    return a, _normalize_axis(axis, a.ndim)


def _sort_keys(keys):
    """The sort keys `keys` as sort_p takes them: a complex key becomes two, its real part then
    its imaginary part (NumPy's and JAX's lexicographic order of complex numbers)."""
    out = []
    for k in keys:
        out.extend((cx.real_p.bind(k), cx.imag_p.bind(k)) if dtypes.is_complex(k.dtype) else (k,))
    return out


def sort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Sorted copy; NaNs go last (first when descending), as in NumPy."""
    if order is not None:
        raise UnsupportedError("sort(order=...) needs structured arrays" + where())
    a, axis = _sort_axis(a, axis)
    if dtypes.is_complex(a.dtype):
        keys = _sort_keys([a])
        out = st.sort_p.bind(*keys, a, dimension=axis, is_stable=True, num_keys=len(keys))[-1]
    else:
        out, = st.sort_p.bind(a, dimension=axis, is_stable=True, num_keys=1)
    return flip(out, axis) if descending else out


def argsort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    """Indices that sort `a` (stable: equal elements keep their order, also when descending)."""
    if order is not None:
        raise UnsupportedError("argsort(order=...) needs structured arrays" + where())
    a, axis = _sort_axis(a, axis)
    iota = st.iota_p.bind(dtype=dtypes.default_int(), shape=a.shape, dimension=axis)
    if descending:
        # Sorting the reversed data and reversing back keeps ties in their original order.
        keys = _sort_keys([flip(a, axis)])
        idx = st.sort_p.bind(*keys, flip(iota, axis), dimension=axis, is_stable=True,
                             num_keys=len(keys))[-1]
        return flip(idx, axis)
    keys = _sort_keys([a])
    return st.sort_p.bind(*keys, iota, dimension=axis, is_stable=True, num_keys=len(keys))[-1]


# --- complex parts (real arrays: the value itself, or zeros) -------------------------------------
def real(val, /):
    """The real part (a real array's is itself), of the matching real dtype."""
    x = ensure_array(val)
    if dtypes.is_complex(x.dtype):
        return cx.real_p.bind(x)
    return x


def imag(val, /):
    """The imaginary part (zeros for a real array), of the matching real dtype."""
    x = ensure_array(val)
    if dtypes.is_complex(x.dtype):
        return cx.imag_p.bind(x)
    zero = convert(0, x.dtype, x.weak_type)
    return broadcast_to(zero, x.shape)


def conjugate(x, /):
    """The complex conjugate (a real array is its own)."""
    x = ensure_array(x)
    if dtypes.is_complex(x.dtype):
        return cx.conj_p.bind(x)
    return x


conj = conjugate


def angle(z, deg=False):
    """The argument of z, atan2(imag(z), real(z)), in radians (degrees with deg=True); a real
    array's is 0 or pi, as NumPy's (its derivative through the source, secant/numpy/complex_sources.py)."""
    from secant.numpy import ufuncs
    z = ensure_array(z)
    if not dtypes.is_inexact(z.dtype):
        z = convert(z, dtypes.default_float())
    out = ufuncs.arctan2(imag(z), real(z))
    if deg:
        out = ufuncs.multiply(out, 180.0 / np.pi)
    return out


def iscomplexobj(x):
    return dtypes.is_complex(ensure_array(x).dtype)


def isrealobj(x):
    return not iscomplexobj(x)


# they read a dtype only (never an array's values): constants for transforms
iscomplexobj.__secant_static_query__ = isrealobj.__secant_static_query__ = True

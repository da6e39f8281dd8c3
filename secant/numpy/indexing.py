"""NumPy indexing with JAX's semantics: `x[idx]`, `x.at[idx].set/add/...`, take, take_along_axis,
nonzero.

Basic indexing (ints, slices, None, Ellipsis) becomes static slice/rev/squeeze ops. Anything with
an integer array or a traced integer becomes ONE gather (one scatter for `.at` updates), built from
an index plan: step-1 slices stay gather windows, strided slices and integer arrays become columns
of the index array, laid out by NumPy's advanced-indexing placement rule. Negative indices are
normalised here because XLA clamps (gather) or drops (scatter) out-of-range ones.
"""
import operator

import numpy as np

from secant.backends import dtypes
from secant.backends.array import Array
from secant.backends.core import Tracer
from secant.backends.errors import (ConcretizationError, NonConcreteBooleanIndexError,
                                    SecantError, SecantTypeError, SecantValueError, ShapeError,
                                    where)
from secant.backends.primitives import elementwise as ew
from secant.backends.primitives import structural as st
from secant.backends.primitives.indexing import (GatherDimensionNumbers, ScatterDimensionNumbers,
                                                 gather_p, scatter_add_p, scatter_max_p,
                                                 scatter_min_p, scatter_mul_p, scatter_p)
from secant.numpy.conversion import asarray, convert, ensure_array


class _OutOfBoundsError(SecantError, IndexError):
    """An index that does not fit the array (NumPy and JAX raise IndexError too)."""


# --- parsing an index into one entry per dimension ------------------------------------------------
def _index_dtype(arrays):
    """int32 indices unless x64 is on and some index array is 64-bit."""
    wide = dtypes.x64_enabled() and any(np.dtype(a.dtype).itemsize == 8 for a in arrays)
    return dtypes.int64 if wide else dtypes.int32


def _as_index_array(e):
    """An array-like index entry as a NumPy array (concrete) or a Tracer, checked for kind."""
    if isinstance(e, (list, tuple)) and _holds_arrays(e):
        e = asarray(e)              # x[[i, j]] with traced i, j: stacked into one index array
    if isinstance(e, Tracer):
        v = e
    elif type(e) is Array:
        v = e._value()
    else:
        v = np.asarray(e)
        if v.size == 0 and v.dtype.kind == "f":      # x[[]]: an empty integer index, as NumPy
            v = v.astype(np.intp)
    dt = np.dtype(v.dtype)
    if not (dtypes.is_int(dt) or dtypes.is_bool(dt)):
        raise SecantTypeError(f"indices must be integers or booleans, got an array of {dt.name}"
                              + where())
    return v


def _holds_arrays(seq):
    return any(isinstance(e, (Tracer, Array)) or (isinstance(e, (list, tuple)) and _holds_arrays(e))
               for e in seq)


def _mask_error():
    raise NonConcreteBooleanIndexError(
        "indexing with a traced boolean mask inside jit: the result's shape would depend on the "
        "mask's values, which are not known while tracing." + where()
        + "\n  Use snp.where(mask, x, 0) to keep the shape, or snp.nonzero(mask, size=N).")


def _classify(e):
    """One index entry -> (kind, value, dims consumed): kinds none/ellipsis/int/slice/array/mask."""
    if e is None:
        return "none", None, 0
    if e is Ellipsis:
        return "ellipsis", None, 0
    if isinstance(e, slice):
        try:
            parts = [None if p is None else operator.index(p) for p in (e.start, e.stop, e.step)]
        except TypeError:
            raise SecantTypeError(f"slice bounds must be integers or None, got {e}"
                                  + where()) from None
        return "slice", slice(*parts), 1
    if isinstance(e, (bool, np.bool_)):
        raise SecantTypeError("a scalar boolean index (x[True]) is not supported; use x[None] or "
                              "snp.where" + where())
    if isinstance(e, (int, np.integer)):
        return "int", int(e), 1
    if isinstance(e, (Tracer, Array, np.ndarray, list, tuple)):
        v = _as_index_array(e)
        if dtypes.is_bool(v.dtype):
            if isinstance(v, Tracer):
                _mask_error()
            if v.ndim == 0:
                raise SecantTypeError("a 0-d boolean index is not supported" + where())
            return "mask", v, v.ndim
        if v.ndim == 0 and not isinstance(v, Tracer):
            return "int", int(v), 1
        return "array", v, 1
    raise SecantTypeError(f"index of type {type(e).__name__} is not supported: use integers, "
                          f"slices, None, Ellipsis, integer arrays or boolean masks" + where())


def _parse(shape, idx):
    """(shape with the None axes inserted, positions of those axes, one entry per dim of it).

    Entries are ints, slices, or integer index arrays (NumPy arrays or Tracers); boolean masks
    are already turned into their nonzero() index arrays.
    """
    items = [_classify(e) for e in (idx if isinstance(idx, tuple) else (idx,))]
    n_ellipsis = sum(k == "ellipsis" for k, _, _ in items)
    if n_ellipsis > 1:
        raise SecantTypeError("an index can only have a single ellipsis ('...')" + where())
    used = sum(n for _, _, n in items)
    if used > len(shape):
        raise _OutOfBoundsError(f"too many indices for array: array is {len(shape)}-dimensional, "
                                f"but {used} were indexed" + where())
    fill = [("slice", slice(None), 1)] * (len(shape) - used)
    if n_ellipsis:
        at = next(i for i, (k, _, _) in enumerate(items) if k == "ellipsis")
        items = items[:at] + fill + items[at + 1:]
    else:
        items = items + fill
    new_shape, new_axes, entries, d = [], [], [], 0
    for kind, v, n in items:
        if kind == "none":
            new_axes.append(len(new_shape))
            new_shape.append(1)
            entries.append(slice(None))
            continue
        if kind == "mask":
            if tuple(v.shape) != tuple(shape[d:d + n]):
                raise _OutOfBoundsError(f"boolean index of shape {v.shape} does not match the "
                                        f"indexed dims {tuple(shape[d:d + n])}" + where())
            entries.extend(np.nonzero(v))
        else:
            entries.append(v)
        new_shape.extend(shape[d:d + n])
        d += n
    return tuple(new_shape), tuple(new_axes), entries


def _static_int(i, n, axis):
    if not -n <= i < n:
        raise _OutOfBoundsError(f"index {i} is out of bounds for axis {axis} with size {n}"
                                + where())
    return i + n if i < 0 else i


def _out_of_range_ints(shape, entries):
    """Entries with each out-of-range static int made a 0-d index array, so that (as JAX) a
    read clamps it and an update drops it, instead of raising; an axis of size 0 still raises.
    Negative ints in range keep Python's meaning."""
    if not any(isinstance(e, int) and not -n <= e < n for e, n in zip(entries, shape)):
        return entries
    out = []
    for d, (e, n) in enumerate(zip(entries, shape)):
        if isinstance(e, int) and not -n <= e < n:
            if n == 0:
                _static_int(e, n, d)
            e = np.asarray(e, np.int64 if dtypes.x64_enabled() else np.int32)
        out.append(e)
    return out


def _slice_params(s, n):
    """(start, step, length) of a slice over a dimension of size n, as NumPy reads it."""
    if s.step == 0:
        raise SecantValueError("slice step cannot be zero" + where())
    start, stop, step = s.indices(n)
    return start, step, len(range(start, stop, step))


# --- basic indexing: static slices -------------------------------------------------------------
def _basic(x, entries):
    starts, limits, strides, flipped, dropped = [], [], [], [], []
    for d, (e, n) in enumerate(zip(entries, x.shape)):
        if isinstance(e, int):
            i = _static_int(e, n, d)
            starts.append(i), limits.append(i + 1), strides.append(1), dropped.append(d)
            continue
        start, step, length = _slice_params(e, n)
        if length == 0:
            starts.append(0), limits.append(0), strides.append(1)
        elif step > 0:
            starts.append(start), limits.append(start + (length - 1) * step + 1)
            strides.append(step)
        else:       # walk the same elements forwards, then reverse them
            last = start + (length - 1) * step
            starts.append(last), limits.append(start + 1), strides.append(-step)
            flipped.append(d)
    out = x
    if starts != [0] * x.ndim or limits != list(x.shape) or strides != [1] * x.ndim:
        out = st.slice_p.bind(out, start_indices=tuple(starts), limit_indices=tuple(limits),
                              strides=None if strides == [1] * x.ndim else tuple(strides))
    if flipped:
        out = st.rev_p.bind(out, dimensions=tuple(flipped))
    if dropped:
        out = st.squeeze_p.bind(out, dimensions=tuple(dropped))
    return out


# --- advanced indexing: the plan of one gather or scatter -----------------------------------------
class _Plan:
    """How NumPy's result of x[idx] maps onto one gather/scatter over x.

    out_shape: the result's shape. offset_dims: result dims that are gather windows (step-1
    slices). batch_shape: the other result dims, in order (advanced-index block, strided slices).
    columns: (operand dim, index array, batch dims it spans, whether it can be out of range).
    """

    def __init__(self, shape, entries):
        self.shape = shape
        self.out_shape, self.batch_shape, self.offset_dims = [], [], []
        self.collapsed, self.columns = [], []
        self.slice_sizes = [1] * len(shape)
        arrays = {d: e for d, e in enumerate(entries) if not isinstance(e, slice)}
        for d, e in arrays.items():
            if isinstance(e, int):
                arrays[d] = np.asarray(_static_int(e, shape[d], d), np.int32)
            elif shape[d] == 0:
                raise _OutOfBoundsError(f"cannot index axis {d} of size 0 with an integer array"
                                        + where())
        self.index_dtype = _index_dtype(list(arrays.values()))
        try:
            block = np.broadcast_shapes(*[a.shape for a in arrays.values()])
        except ValueError:
            raise _OutOfBoundsError("shape mismatch: indexing arrays could not be broadcast "
                                    "together with shapes "
                                    + " ".join(str(tuple(a.shape)) for a in arrays.values())
                                    + where()) from None
        adv = sorted(arrays)
        slices = [d for d in range(len(shape)) if d not in arrays]
        adjacent = bool(adv) and adv == list(range(adv[0], adv[-1] + 1))
        before = [d for d in slices if adjacent and d < adv[0]]
        for d in before:
            self._slice(d, entries[d])
        first = len(self.batch_shape)
        self.out_shape.extend(block)
        self.batch_shape.extend(block)
        for d in adv:
            a = arrays[d]
            axes = tuple(range(first + len(block) - a.ndim, first + len(block)))
            self.columns.append((d, self._normalised(a, shape[d]), axes, True))
            self.collapsed.append(d)
        for d in slices:
            if d not in before:
                self._slice(d, entries[d])
        self.columns.sort(key=lambda c: c[0])
        self.collapsed.sort()

    def _slice(self, d, s):
        start, step, length = _slice_params(s, self.shape[d])
        q = len(self.out_shape)
        self.out_shape.append(length)
        if step == 1 or length <= 1:
            self.offset_dims.append(q)
            self.slice_sizes[d] = length
            if start and length:
                self.columns.append((d, np.asarray(start), (), False))
        else:
            axis = len(self.batch_shape)
            self.batch_shape.append(length)
            self.collapsed.append(d)
            self.columns.append((d, np.arange(start, start + length * step, step), (axis,), False))

    def _normalised(self, a, n):
        """Negative indices count from the end; out-of-range ones stay out of range."""
        dt = self.index_dtype
        if isinstance(a, Tracer):
            a = convert(a, dt)
            zero = np.zeros((), dt)
            return ew.select_p.bind(ew.lt_p.bind(a, zero), ew.add_p.bind(a, np.asarray(n, dt)), a)
        a = np.asarray(a, np.int64)
        return np.clip(np.where(a < 0, a + n, a), -1, n).astype(dt)

    # --- building the index array -------------------------------------------------------------
    def _placed(self, a, axes):
        """A concrete column reshaped so its dims sit at `axes` of the batch dims."""
        shape = [1] * len(self.batch_shape)
        for ax, size in zip(axes, a.shape):
            shape[ax] = size
        return np.broadcast_to(a.reshape(shape), self.batch_shape)

    def columns_clipped(self):
        """The columns with every index clamped into range (mode='clip' for updates)."""
        out = []
        for d, a, axes, may_be_out in self.columns:
            if may_be_out:
                hi = self.shape[d] - 1
                a = (ew.clamp_p.bind(np.zeros((), a.dtype), a, np.asarray(hi, a.dtype))
                     if isinstance(a, Tracer) else np.clip(a, 0, hi))
            out.append((d, a, axes, may_be_out))
        return out

    def indices(self, columns=None):
        columns = self.columns if columns is None else columns
        dt, nb = self.index_dtype, len(self.batch_shape)
        batch = tuple(self.batch_shape)
        if not any(isinstance(a, Tracer) for _, a, _, _ in columns):
            cols = [self._placed(np.asarray(a, dt), axes) for _, a, axes, _ in columns]
            return np.stack(cols, -1) if cols else np.zeros(batch + (0,), dt)
        parts = []
        for _, a, axes, _ in columns:
            if isinstance(a, Tracer):
                parts.append(st.broadcast_in_dim_p.bind(a, shape=batch + (1,),
                                                        broadcast_dimensions=axes))
            else:
                parts.append(self._placed(np.asarray(a, dt), axes)[..., None])
        return parts[0] if len(parts) == 1 else st.concatenate_p.bind(*parts, dimension=nb)

    def index_map(self):
        return tuple(d for d, _, _, _ in self.columns)

    def gather(self, x):
        dn = GatherDimensionNumbers(offset_dims=tuple(self.offset_dims),
                                    collapsed_slice_dims=tuple(self.collapsed),
                                    start_index_map=self.index_map())
        return gather_p.bind(x, self.indices(), dimension_numbers=dn,
                             slice_sizes=tuple(self.slice_sizes))

    def scatter(self, prim, x, updates, columns=None, indices_are_sorted=False,
                unique_indices=False):
        dn = ScatterDimensionNumbers(update_window_dims=tuple(self.offset_dims),
                                     inserted_window_dims=tuple(self.collapsed),
                                     scatter_dims_to_operand_dims=self.index_map())
        return prim.bind(x, self.indices(columns), updates, dimension_numbers=dn,
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices))

    def in_bounds(self):
        """A boolean mask over the result: False where an index array was out of range."""
        mask = None
        for d, a, axes, may_be_out in self.columns:
            if not may_be_out:
                continue
            n = self.shape[d]
            if isinstance(a, Tracer):
                ok = ew.and_p.bind(ew.ge_p.bind(a, np.zeros((), a.dtype)),
                                   ew.lt_p.bind(a, np.asarray(n, a.dtype)))
                ok = st.broadcast_in_dim_p.bind(ok, shape=tuple(self.batch_shape),
                                                broadcast_dimensions=axes)
            else:
                ok = self._placed((a >= 0) & (a < n), axes)
            mask = ok if mask is None else ew.and_p.bind(mask, ok)
        if mask is None:
            return None
        batch_dims = tuple(q for q in range(len(self.out_shape)) if q not in self.offset_dims)
        return st.broadcast_in_dim_p.bind(mask, shape=tuple(self.out_shape),
                                          broadcast_dimensions=batch_dims)


def _parse_for_gather(x, idx):
    """(x with the None axes added, its new axes, the entries) for an index."""
    shape, new_axes, entries = _parse(x.shape, idx)
    if new_axes:
        x = st.expand_dims_p.bind(x, dimensions=new_axes)
    return x, new_axes, entries


_BOUND = (int, type(None))


def _plain(idx, shape):
    """Whether the tuple `idx` holds only in-range ints, unit-step slices of ints and at most one
    Ellipsis, no more entries than `shape` has axes: indexing NumPy and JAX read alike."""
    if len(idx) > len(shape) + 1:
        return False
    after = None            # (entries after an Ellipsis: counted from the last axis)
    for k, e in enumerate(idx):
        t = type(e)
        if t is int:
            if after is None and k >= len(shape):
                return False
            d = shape[k] if after is None else shape[k - len(idx)]
            if not -d <= e < d:
                return False
        elif t is slice:
            if e.step is not None or type(e.start) not in _BOUND or type(e.stop) not in _BOUND:
                return False
        elif e is Ellipsis and after is None:
            after = k
        else:
            return False
    return after is not None or len(idx) <= len(shape)


def getitem(x, idx):
    """x[idx] with NumPy's indexing rules; out-of-range integers (static or array entries) are
    clamped, as JAX's gathers."""
    if type(x) is Array:
        # an eager value read at an in-range int or a unit-step slice of ints (a row, a state
        # vector's piece): NumPy's own indexing gives what slice + squeeze do, without their
        # binds (issue 19: ODE solvers read their state's pieces at each step)
        v = x._npy
        if type(v) is np.ndarray and v.ndim:
            t = type(idx)
            if t is int and -v.shape[0] <= idx < v.shape[0] or t is slice \
                    and idx.step is None and type(idx.start) in _BOUND \
                    and type(idx.stop) in _BOUND or t is tuple and _plain(idx, v.shape):
                return Array._wrap_ndarray(v[idx], x.weak_type)
    x = ensure_array(x)
    x, _, entries = _parse_for_gather(x, idx)
    entries = _out_of_range_ints(x.shape, entries)
    if not any(isinstance(e, (np.ndarray, Tracer)) for e in entries):
        return _basic(x, entries)
    return _Plan(x.shape, entries).gather(x)


# --- x.at[idx] -----------------------------------------------------------------------------------
_GET_MODES = (None, "promise_in_bounds", "clip", "fill")
_UPDATE_MODES = (None, "promise_in_bounds", "drop", "fill", "clip")


def _check_mode(mode, allowed):
    if mode not in allowed:
        raise SecantValueError(f"mode={mode!r} is not one of {allowed}" + where())


def _default_fill(dtype):
    """JAX's fill for out-of-range gathers: NaN, the most negative int, the largest uint, True."""
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtypes.is_bool(dtype):
        return True
    info = np.iinfo(dtype)
    return info.max if dtypes.is_unsigned(dtype) else info.min


def _filled(out, valid, fill_value):
    """select(valid, out, fill) where `valid` (a mask over out, or None) says what was in range."""
    if valid is None:
        return out
    fill = _default_fill(out.dtype) if fill_value is None else fill_value
    fill = np.asarray(np.asarray(fill).astype(out.dtype))
    return ew.select_p.bind(valid, out, fill)


def _broadcast_values(values, shape, dtype):
    """Update values cast to x's dtype and broadcast NumPy-style to the indexed shape."""
    values = ensure_array(values)
    if values.dtype != dtype or values.weak_type:
        values = convert(values, dtype)
    vshape = tuple(values.shape)
    while len(vshape) > len(shape) and vshape[0] == 1:
        vshape = vshape[1:]
    lead = len(shape) - len(vshape)
    if lead < 0 or any(v != 1 and v != s for v, s in zip(vshape, shape[lead:])):
        raise ShapeError(f"cannot broadcast update values of shape {values.shape} to the "
                         f"indexed shape {tuple(shape)}" + where())
    if vshape != tuple(values.shape):
        values = st.reshape_p.bind(values, new_sizes=vshape)
    if vshape != tuple(shape):
        values = st.broadcast_in_dim_p.bind(values, shape=tuple(shape),
                                            broadcast_dimensions=tuple(range(lead, len(shape))))
    return values


class AtIndexer:
    """`x.at`: indexing it (`x.at[idx]`) gives the functional updates of x[idx], as in JAX."""
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, idx):
        return _AtRef(self.array, idx)

    def __repr__(self):
        return f"AtIndexer({self.array!r})"


class _AtRef:
    """x.at[idx]: .get() reads x[idx]; .set/.add/.mul/.min/.max/... return an updated copy of x.

    Updates with repeated indices accumulate for add/mul/min/max; for set, one of them wins.
    Out-of-range entries of index arrays are dropped (mode='clip' clamps them instead).
    """
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = ensure_array(array)
        self.index = index

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
        _check_mode(mode, _GET_MODES)
        x, _, entries = _parse_for_gather(self.array, self.index)
        entries = _out_of_range_ints(x.shape, entries)
        if not any(isinstance(e, (np.ndarray, Tracer)) for e in entries):
            return _basic(x, entries)
        plan = _Plan(x.shape, entries)
        out = plan.gather(x)
        return _filled(out, plan.in_bounds(), fill_value) if mode == "fill" else out

    def _update(self, prim, values, indices_are_sorted, unique_indices, mode):
        _check_mode(mode, _UPDATE_MODES)
        x = self.array
        shape, new_axes, entries = _parse(x.shape, self.index)
        entries = _out_of_range_ints(shape, entries)
        operand = st.expand_dims_p.bind(x, dimensions=new_axes) if new_axes else x
        plan = _Plan(shape, entries)
        updates = _broadcast_values(values, plan.out_shape, x.dtype)
        columns = plan.columns_clipped() if mode == "clip" else None
        out = plan.scatter(prim, operand, updates, columns, indices_are_sorted, unique_indices)
        return st.squeeze_p.bind(out, dimensions=new_axes) if new_axes else out

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return self._update(scatter_p, values, indices_are_sorted, unique_indices, mode)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return self._update(scatter_add_p, values, indices_are_sorted, unique_indices, mode)

    def mul(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return self._update(scatter_mul_p, values, indices_are_sorted, unique_indices, mode)

    multiply = mul

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return self._update(scatter_min_p, values, indices_are_sorted, unique_indices, mode)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        return self._update(scatter_max_p, values, indices_are_sorted, unique_indices, mode)

    def _factors(self, values, indices_are_sorted, unique_indices, mode):
        """Ones, with the product of the values that land on each indexed element (JAX's way)."""
        x = self.array
        ones = st.broadcast_in_dim_p.bind(np.ones((), x.dtype), shape=tuple(x.shape),
                                          broadcast_dimensions=())
        return _AtRef(ones, self.index).mul(values, indices_are_sorted=indices_are_sorted,
                                            unique_indices=unique_indices, mode=mode)

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        from secant.numpy.ufuncs import true_divide
        return true_divide(self.array, self._factors(values, indices_are_sorted, unique_indices,
                                                     mode))

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        from secant.numpy.ufuncs import power
        return power(self.array, self._factors(values, indices_are_sorted, unique_indices, mode))

    def __repr__(self):
        return f"_AtRef({self.array!r}, {self.index!r})"


# --- take / take_along_axis -----------------------------------------------------------------------
def _axis(axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise SecantValueError(f"axis {axis} is out of bounds for an array of dimension {ndim}"
                               + where())
    return axis % ndim


def _ravel(a):
    return st.reshape_p.bind(a, new_sizes=(a.size,)) if a.ndim != 1 else a


def _integer_indices(indices):
    v = _as_index_array(indices)
    if dtypes.is_bool(v.dtype):
        raise SecantTypeError("take needs integer indices, got booleans" + where())
    return v


def _moded(ind, n, mode, dt):
    """Indices for `mode` ('fill', 'clip' or 'wrap'), in dtype dt, and their in-range mask."""
    if isinstance(ind, Tracer):
        ind = convert(ind, dt)
        size = np.asarray(n, dt)
        if mode == "wrap":
            r = ew.rem_p.bind(ind, size)
            negative = ew.lt_p.bind(r, np.zeros((), dt))
            return ew.select_p.bind(negative, ew.add_p.bind(r, size), r), None
        if mode == "clip":
            return ew.clamp_p.bind(np.zeros((), dt), ind, np.asarray(n - 1, dt)), None
        ind = ew.select_p.bind(ew.lt_p.bind(ind, np.zeros((), dt)), ew.add_p.bind(ind, size), ind)
        valid = ew.and_p.bind(ew.ge_p.bind(ind, np.zeros((), dt)), ew.lt_p.bind(ind, size))
        return ind, valid
    ind = np.asarray(ind, np.int64)
    if mode == "wrap":
        return np.mod(ind, n).astype(dt), None
    if mode == "clip":
        return np.clip(ind, 0, n - 1).astype(dt), None
    if mode == "raise":
        if ind.size and (ind.min() < -n or ind.max() >= n):
            raise _OutOfBoundsError(f"index out of range for an axis of size {n}" + where())
        return np.where(ind < 0, ind + n, ind).astype(dt), None
    ind = np.where(ind < 0, ind + n, ind)
    return np.clip(ind, -1, n).astype(dt), (ind >= 0) & (ind < n)


def _take_mode(mode, ind):
    mode = "fill" if mode is None else mode
    if mode not in ("fill", "clip", "wrap", "raise"):
        raise SecantValueError(f"mode={mode!r} is not one of 'fill', 'clip', 'wrap', 'raise'"
                               + where())
    if mode == "raise" and isinstance(ind, Tracer):
        raise ConcretizationError("take(mode='raise') cannot check traced indices inside jit; use "
                                  "mode='fill', 'clip' or 'wrap'" + where())
    return mode


def take(a, indices, axis=None, mode=None, fill_value=None):
    """jnp.take: out-of-range indices give fill_value by default (mode='fill', JAX's default)."""
    a = ensure_array(a)
    if axis is None:
        a, axis = _ravel(a), 0
    axis = _axis(axis, a.ndim)
    ind = _integer_indices(indices)
    mode = _take_mode(mode, ind)
    n = a.shape[axis]
    if n == 0:
        raise _OutOfBoundsError(f"cannot take from axis {axis} of size 0" + where())
    ind, valid = _moded(ind, n, mode, _index_dtype([ind]))
    k = ind.ndim
    idx = (st.expand_dims_p.bind(ind, dimensions=(k,)) if isinstance(ind, Tracer)
           else ind[..., None])
    dn = GatherDimensionNumbers(
        offset_dims=tuple(range(axis)) + tuple(range(axis + k, a.ndim - 1 + k)),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    sizes = tuple(1 if d == axis else s for d, s in enumerate(a.shape))
    out = gather_p.bind(a, idx, dimension_numbers=dn, slice_sizes=sizes)
    if valid is None or (not isinstance(valid, Tracer) and valid.all()):
        return out
    valid = st.broadcast_in_dim_p.bind(valid, shape=tuple(out.shape),
                                       broadcast_dimensions=tuple(range(axis, axis + k)))
    return _filled(out, valid, fill_value)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    """np.take_along_axis as one gather whose other dims are batching dims."""
    arr = ensure_array(arr)
    ind = _integer_indices(indices)
    if axis is None:
        if ind.ndim != 1:
            raise SecantValueError("take_along_axis with axis=None needs 1-d indices" + where())
        arr, axis = _ravel(arr), 0
    axis = _axis(axis, arr.ndim)
    if ind.ndim != arr.ndim:
        raise SecantValueError(f"take_along_axis: indices of rank {ind.ndim} must have the rank "
                               f"of the array ({arr.ndim})" + where())
    mode = _take_mode(mode, ind)
    n = arr.shape[axis]
    try:
        out_shape = tuple(ind.shape[d] if d == axis else
                          np.broadcast_shapes((arr.shape[d],), (ind.shape[d],))[0]
                          for d in range(arr.ndim))
    except ValueError:
        raise ShapeError(f"take_along_axis: shapes {arr.shape} and {ind.shape} do not "
                         f"broadcast outside axis {axis}" + where()) from None
    if 0 in out_shape:      # nothing to take (an empty batch): gather needs nonempty dims
        return st.broadcast_in_dim_p.bind(np.zeros((), arr.dtype), shape=out_shape,
                                          broadcast_dimensions=())
    if n == 0:
        raise _OutOfBoundsError(f"cannot take from axis {axis} of size 0" + where())
    ind, valid = _moded(ind, n, mode, _index_dtype([ind]))
    every = tuple(range(arr.ndim))
    arr_shape = tuple(n if d == axis else s for d, s in enumerate(out_shape))
    if tuple(arr.shape) != arr_shape:
        arr = st.broadcast_in_dim_p.bind(arr, shape=arr_shape, broadcast_dimensions=every)
    if isinstance(ind, Tracer):
        if tuple(ind.shape) != out_shape:
            ind = st.broadcast_in_dim_p.bind(ind, shape=out_shape, broadcast_dimensions=every)
        idx = st.expand_dims_p.bind(ind, dimensions=(arr.ndim,))
    else:
        idx = np.broadcast_to(ind, out_shape)[..., None]
    others = tuple(d for d in every if d != axis)
    dn = GatherDimensionNumbers(collapsed_slice_dims=(axis,), start_index_map=(axis,),
                                operand_batching_dims=others, start_indices_batching_dims=others)
    out = gather_p.bind(arr, idx, dimension_numbers=dn, slice_sizes=(1,) * arr.ndim)
    if valid is None or (not isinstance(valid, Tracer) and valid.all()):
        return out
    if tuple(valid.shape) != out_shape:
        valid = st.broadcast_in_dim_p.bind(valid, shape=out_shape, broadcast_dimensions=every)
    return _filled(out, valid, fill_value)


# --- nonzero and friends -------------------------------------------------------------------------
def _fill_values(fill_value, ndim):
    if fill_value is None:
        return (0,) * ndim
    if np.ndim(fill_value) == 0:
        return (fill_value,) * ndim
    fill = tuple(fill_value)
    if len(fill) != ndim:
        raise SecantValueError(f"fill_value needs one value per dimension ({ndim}), got {fill}"
                               + where())
    return fill


def _static_size(size):
    try:
        return operator.index(size)
    except TypeError:
        raise SecantTypeError(f"size must be a static Python int, got {size!r}" + where()) from None


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements, one array per dimension.

    On a concrete array the result is computed eagerly. A traced array needs `size=`: the result
    has exactly that many entries, padded with `fill_value` (default 0) or truncated.
    """
    if a is None:
        raise SecantTypeError("nonzero needs an array" + where())
    dt = dtypes.default_int()
    if not isinstance(a, Tracer):
        v = np.asarray(a._value() if type(a) is Array else a)
        if v.ndim == 0:
            raise SecantValueError("nonzero of a 0-d array is not allowed; use atleast_1d first"
                                   + where())
        found = np.nonzero(v)
        if size is not None:
            size = _static_size(size)
            fills = _fill_values(fill_value, v.ndim)
            found = [np.concatenate([f[:size], np.full(max(size - len(f), 0), fv)])
                     for f, fv in zip(found, fills)]
        return tuple(Array._wrap(np.asarray(f, dt)) for f in found)
    if size is None:
        raise ConcretizationError(
            f"nonzero of a traced array {a.aval.str_short()} inside jit needs size=: the number "
            f"of nonzero elements is not known while tracing." + where()
            + "\n  Pass size=N (and fill_value=) for a fixed-size result, or use "
              "snp.where(c, x, y).")
    if a.ndim == 0:
        raise SecantValueError("nonzero of a 0-d array is not allowed; use atleast_1d first"
                               + where())
    return _traced_nonzero(a, _static_size(size), _fill_values(fill_value, a.ndim), dt)


def _traced_nonzero(a, size, fills, dt):
    """Each nonzero element's flat position is scattered to its rank among the nonzeros."""
    flat = _ravel(a)
    mask = flat if dtypes.is_bool(flat.dtype) else ew.ne_p.bind(flat, np.zeros((), flat.dtype))
    rank = ew.sub_p.bind(st.cumsum_p.bind(convert(mask, dt), axis=0), np.ones((), dt))
    slot = ew.select_p.bind(mask, rank, np.asarray(size, dt))   # zeros go out of range: dropped
    positions = st.iota_p.bind(dtype=dt, shape=(flat.size,), dimension=0)
    empty = st.broadcast_in_dim_p.bind(np.asarray(-1, dt), shape=(size,), broadcast_dimensions=())
    dn = ScatterDimensionNumbers(inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    found = scatter_p.bind(empty, st.expand_dims_p.bind(slot, dimensions=(1,)), positions,
                           dimension_numbers=dn, indices_are_sorted=False, unique_indices=False)
    unused = ew.lt_p.bind(found, np.zeros((), dt))
    out, stride = [], a.size
    for n, fv in zip(a.shape, fills):
        stride //= max(n, 1)
        coord = ew.div_p.bind(found, np.asarray(max(stride, 1), dt))
        coord = ew.rem_p.bind(coord, np.asarray(max(n, 1), dt))
        out.append(ew.select_p.bind(unused, np.asarray(fv, dt), coord))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    """Indices of the nonzero elements of the flattened array (size= rules as nonzero)."""
    return nonzero(_ravel(ensure_array(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """The (N, ndim) array of the indices of nonzero elements (size= rules as nonzero)."""
    a = ensure_array(a)
    if a.ndim == 0:     # NumPy: one row (or none) with no columns
        found = nonzero(st.reshape_p.bind(a, new_sizes=(1,)), size=size, fill_value=fill_value)[0]
        return st.slice_p.bind(st.expand_dims_p.bind(found, dimensions=(1,)), start_indices=(0, 0),
                               limit_indices=(found.shape[0], 0))
    cols = [st.expand_dims_p.bind(c, dimensions=(1,))
            for c in nonzero(a, size=size, fill_value=fill_value)]
    return cols[0] if len(cols) == 1 else st.concatenate_p.bind(*cols, dimension=1)

"""Structural primitives: shape changes, reductions, contractions, slicing, padding, scans, sort.

They follow lax's definitions (static axes as tuples of non-negative ints; secant.numpy normalises
negative axes before binding). Where XLA and NumPy disagree (clamped dynamic-slice starts,
reductions over empty axes, NaN ordering), the NumPy implementation does what XLA does.
"""
import math

import numpy as np

from secant.backends import dtypes
from secant.backends.core import Primitive, ShapedArray, aval_of, register
from secant.backends.primitives.common import (_check_kind, _low_precision, _same_dtypes,
                                               shape_error, type_error)


def define(name, rule, impl, cached=True, **options):
    """Register a primitive whose eager implementation checks the shape rule first.

    Eager bind runs only the implementation, and NumPy would quietly accept much that the rule
    rejects (negative axes, mixed dtypes, -1 in a shape), so eager and jit would disagree.
    cached=False: the rule runs every time (a cheap rule whose parameters are positions, as
    slice's: a loop reading row i would fill the cache with one key per row, up to
    _RULE_CACHE_SIZE of them held, issue 20's loop memory, and never hit it)."""
    passed = set()          # keys of argument signatures the rule accepted (_rule_key)

    def checked_impl(*args, **params):
        key = _rule_key(args, params) if cached else None
        if key is None or key not in passed:
            rule(*[aval_of(a) for a in args], **params)
            if key is not None:
                if len(passed) >= _RULE_CACHE_SIZE:
                    passed.clear()
                passed.add(key)
        return impl(*args, **params)
    return register(Primitive(name, rule, checked_impl, **options))


_RULE_CACHE_SIZE = 4096
_PLAIN = frozenset([int, bool, str, type(None)])
_INT = frozenset([int])


def _typed(v):
    """v as a hashable key that tells apart values == confuses (1, 1.0, True): ints, bools,
    strings, None, dtypes, and tuples of them; anything else: TypeError (not cached)."""
    t = type(v)
    if t in _PLAIN:
        return t, v
    if t is tuple:
        if set(map(type, v)) <= _INT:     # ints only (the common case): the tuple itself
            return v
        return tuple, tuple(map(_typed, v))
    if isinstance(v, np.dtype):
        return np.dtype, v
    raise TypeError


def _rule_key(args, params):
    """What a structural shape rule reads of eager NumPy arguments (shapes and dtypes) and of its
    parameters, as a hashable key; None when something in them is not plain (no caching).
    The rules only validate here, so a key seen once is known to pass (issue 19: the rule's
    checks cost more than many of the NumPy kernels they guard)."""
    key = [dtypes.X64[0]]          # (x64_enabled(), kept current without a config look-up)
    for a in args:
        if type(a) is not np.ndarray:
            return None
        key.append(a.shape)
        key.append(a.dtype)
    try:
        for k, v in params.items():
            key.append(k)
            key.append(_typed(v))
    except TypeError:
        return None
    return tuple(key)


# --- rule helpers ---------------------------------------------------------------------------------
def _check_axes(name, axes, ndim, what="axes"):
    """`axes` must be distinct ints in [0, ndim)."""
    axes = tuple(axes)
    if any(not isinstance(a, (int, np.integer)) or not 0 <= a < ndim for a in axes):
        type_error(f"{name}: {what} {axes} out of range for an array of rank {ndim} "
                   f"(expected distinct ints in [0, {ndim}))")
    if len(set(axes)) != len(axes):
        type_error(f"{name}: repeated entries in {what} {axes}")
    return axes


def _check_axis(name, axis, ndim):
    if not isinstance(axis, (int, np.integer)) or not 0 <= axis < ndim:
        type_error(f"{name}: axis {axis} out of range for an array of rank {ndim}")
    return int(axis)


def _check_sizes(name, sizes, what):
    if any(not isinstance(d, (int, np.integer)) or d < 0 for d in sizes):
        type_error(f"{name}: {what} must be non-negative ints, got {tuple(sizes)}")


def _check_real(name, dt):
    if dtypes.is_complex(dt):
        type_error(f"{name} is not defined for complex arrays, got {np.dtype(dt).name}")


def _check_index_scalars(name, avals):
    for a in avals:
        if a.shape != () or not dtypes.is_int(a.dtype):
            type_error(f"{name}: start indices must be 0-d integer arrays, got {a.str_short()}")


def _clamped_starts(starts, shape, sizes):
    """XLA clamps each start so the window [start, start + size) lies inside the array."""
    return [min(max(int(s), 0), d - n) for s, d, n in zip(starts, shape, sizes)]


# --- shape changes --------------------------------------------------------------------------------
def _broadcast_in_dim_rule(x, shape, broadcast_dimensions):
    _check_sizes("broadcast_in_dim", shape, "shape")
    bdims = tuple(broadcast_dimensions)
    if len(bdims) != x.ndim:
        type_error(f"broadcast_in_dim: broadcast_dimensions {bdims} must have one entry per "
                   f"operand dimension (operand shape {x.shape})")
    _check_axes("broadcast_in_dim", bdims, len(shape), "broadcast_dimensions")
    if list(bdims) != sorted(bdims):
        type_error(f"broadcast_in_dim: broadcast_dimensions {bdims} must be increasing")
    for d, b in zip(x.shape, bdims):
        if d != 1 and d != shape[b]:
            shape_error(f"broadcast_in_dim: operand shape {x.shape} cannot be broadcast to "
                        f"{tuple(shape)} along dimensions {bdims}")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim(x, shape, broadcast_dimensions):
    kept = [1] * len(shape)
    for d, b in zip(x.shape, broadcast_dimensions):
        kept[b] = d
    return np.broadcast_to(np.reshape(x, kept), shape)


broadcast_in_dim_p = define("broadcast_in_dim", _broadcast_in_dim_rule, _broadcast_in_dim)


def _reshape_rule(x, new_sizes):
    _check_sizes("reshape", new_sizes, "new_sizes")
    size = math.prod(x.shape)   # not x.size: np.prod is slow on the eager path
    if math.prod(new_sizes) != size:
        shape_error(f"reshape: cannot reshape an array of shape {x.shape} ({size} elements) to "
                    f"{tuple(new_sizes)}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape_p = define("reshape", _reshape_rule, lambda x, new_sizes: np.reshape(x, new_sizes))


def _transpose_rule(x, permutation):
    perm = tuple(permutation)
    if sorted(perm) != list(range(x.ndim)):
        type_error(f"transpose: permutation {perm} is not a permutation of the {x.ndim} axes of an "
                   f"array of shape {x.shape}")
    return ShapedArray([x.shape[p] for p in perm], x.dtype, x.weak_type)


transpose_p = define("transpose", _transpose_rule,
                     lambda x, permutation: np.transpose(x, permutation))


def _rev_rule(x, dimensions):
    _check_axes("rev", dimensions, x.ndim, "dimensions")
    return x


rev_p = define("rev", _rev_rule,
               lambda x, dimensions: np.flip(x, dimensions) if dimensions else x)


def _squeeze_rule(x, dimensions):
    dims = _check_axes("squeeze", dimensions, x.ndim, "dimensions")
    if any(x.shape[d] != 1 for d in dims):
        type_error(f"squeeze: dimensions {dims} of an array of shape {x.shape} must all have "
                   "size 1")
    return ShapedArray([d for i, d in enumerate(x.shape) if i not in dims], x.dtype, x.weak_type)


squeeze_p = define("squeeze", _squeeze_rule,
                   lambda x, dimensions: np.squeeze(x, tuple(dimensions)))


def _expand_dims_rule(x, dimensions):
    out_ndim = x.ndim + len(dimensions)
    dims = _check_axes("expand_dims", dimensions, out_ndim, "dimensions")
    sizes = iter(x.shape)
    return ShapedArray([1 if i in dims else next(sizes) for i in range(out_ndim)], x.dtype,
                       x.weak_type)


expand_dims_p = define("expand_dims", _expand_dims_rule,
                       lambda x, dimensions: np.expand_dims(x, tuple(dimensions)))


# --- reductions -----------------------------------------------------------------------------------
def _reduced_shape(shape, axes):
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduction_rule(name, kind):
    def rule(x, axes):
        axes = _check_axes(name, axes, x.ndim)
        if kind == "bool":
            if not dtypes.is_bool(x.dtype):
                type_error(f"{name} requires a boolean array, got {x.dtype.name}")
        elif kind == "real":
            _check_real(name, x.dtype)
        else:
            _check_kind(name, kind, x.dtype)
        return ShapedArray(_reduced_shape(x.shape, axes), x.dtype, x.weak_type)
    return rule


def lowest(dtype):
    """The identity of max: -inf, the smallest integer, or False."""
    dt = np.dtype(dtype)
    if dtypes.is_float(dt):
        return -np.inf
    if dtypes.is_int(dt):
        return np.iinfo(dt).min
    return False


def highest(dtype):
    """The identity of min: +inf, the largest integer, or True."""
    dt = np.dtype(dtype)
    if dtypes.is_float(dt):
        return np.inf
    if dtypes.is_int(dt):
        return np.iinfo(dt).max
    return True


def _reduce_sum(x, axes):
    return np.sum(x, axis=tuple(axes), dtype=x.dtype)


def _reduce_prod(x, axes):
    return np.prod(x, axis=tuple(axes), dtype=x.dtype)


def _reduce_max(x, axes):   # `initial` makes an empty reduction give the identity, as XLA does
    return np.max(x, axis=tuple(axes), initial=lowest(x.dtype))


def _reduce_min(x, axes):
    return np.min(x, axis=tuple(axes), initial=highest(x.dtype))


reduce_sum_p = define("reduce_sum", _reduction_rule("reduce_sum", "num"),
                      _low_precision(_reduce_sum))
reduce_prod_p = define("reduce_prod", _reduction_rule("reduce_prod", "num"),
                       _low_precision(_reduce_prod))
reduce_max_p = define("reduce_max", _reduction_rule("reduce_max", "real"), _reduce_max)
reduce_min_p = define("reduce_min", _reduction_rule("reduce_min", "real"), _reduce_min)
reduce_and_p = define("reduce_and", _reduction_rule("reduce_and", "bool"),
                      lambda x, axes: np.all(x, axis=tuple(axes)),
                      differentiable=False)
reduce_or_p = define("reduce_or", _reduction_rule("reduce_or", "bool"),
                     lambda x, axes: np.any(x, axis=tuple(axes)),
                     differentiable=False)


def _argminmax_rule(name):
    def rule(x, axis, index_dtype):
        axis = _check_axis(name, axis, x.ndim)
        _check_real(name, x.dtype)
        if not dtypes.is_int(index_dtype):
            type_error(f"{name}: index_dtype must be an integer dtype, got {np.dtype(index_dtype)}")
        if x.shape[axis] == 0:
            type_error(f"{name}: the reduced axis {axis} of shape {x.shape} is empty")
        return ShapedArray(_reduced_shape(x.shape, (axis,)), index_dtype, False)
    return rule


# np.argmax/argmin return the first occurrence and let NaN win, which is jnp's behaviour.
argmax_p = define(
    "argmax", _argminmax_rule("argmax"),
    lambda x, axis, index_dtype: np.argmax(x, axis=axis).astype(index_dtype),
    weak="never", differentiable=False)
argmin_p = define(
    "argmin", _argminmax_rule("argmin"),
    lambda x, axis, index_dtype: np.argmin(x, axis=axis).astype(index_dtype),
    weak="never", differentiable=False)


# --- dot_general ----------------------------------------------------------------------------------
def _dot_general_rule(lhs, rhs, dimension_numbers, preferred_element_type=None):
    name = "dot_general"
    dt = _same_dtypes(name, (lhs, rhs))
    _check_kind(name, "num", dt)
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        type_error(f"{name}: dimension_numbers must be ((lhs_contract, rhs_contract), "
                   f"(lhs_batch, rhs_batch)), got {dimension_numbers}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        type_error(f"{name}: lhs and rhs need as many contracting and batch dimensions, got "
                   f"{dimension_numbers}")
    _check_axes(name, tuple(lc) + tuple(lb), lhs.ndim, "lhs contracting + batch dimensions")
    _check_axes(name, tuple(rc) + tuple(rb), rhs.ndim, "rhs contracting + batch dimensions")
    for what, ld, rd in (("contracting", lc, rc), ("batch", lb, rb)):
        if any(lhs.shape[i] != rhs.shape[j] for i, j in zip(ld, rd)):
            shape_error(f"{name}: {what} dimensions have different sizes: lhs {lhs.shape} along "
                        f"{tuple(ld)}, rhs {rhs.shape} along {tuple(rd)}")
    lhs_free = [d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb]
    rhs_free = [d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb]
    shape = [lhs.shape[i] for i in lb] + lhs_free + rhs_free
    if preferred_element_type is not None:
        _check_kind(name, "num", preferred_element_type)
        dt = np.dtype(preferred_element_type)
    return ShapedArray(shape, dt, lhs.weak_type and rhs.weak_type)


def _dot_general(lhs, rhs, dimension_numbers, preferred_element_type=None):
    """Move dims to (batch, free, contract) x (batch, contract, free) and use one matmul."""
    (lc, rc), (lb, rb) = dimension_numbers
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    compute = dtypes.float32 if out_dtype in (dtypes.bfloat16, dtypes.float16) else out_dtype
    lhs, rhs = lhs.astype(compute, copy=False), rhs.astype(compute, copy=False)
    lf = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rf = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    batch = [lhs.shape[i] for i in lb]
    lfree, rfree = [lhs.shape[i] for i in lf], [rhs.shape[i] for i in rf]
    k = math.prod(lhs.shape[i] for i in lc)
    a = np.transpose(lhs, list(lb) + lf + list(lc)).reshape(batch + [math.prod(lfree), k])
    b = np.transpose(rhs, list(rb) + list(rc) + rf).reshape(batch + [k, math.prod(rfree)])
    return np.matmul(a, b).reshape(batch + lfree + rfree).astype(out_dtype, copy=False)


dot_general_p = define("dot_general", _dot_general_rule, _dot_general)


# --- slicing --------------------------------------------------------------------------------------
def _slice_rule(x, start_indices, limit_indices, strides=None):
    strides = (1,) * x.ndim if strides is None else tuple(strides)
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        type_error(f"slice: start_indices {tuple(start_indices)}, limit_indices "
                   f"{tuple(limit_indices)} and strides {strides} need one entry per dimension "
                   f"of shape {x.shape}")
    shape = []
    for s, l, st, d in zip(start_indices, limit_indices, strides, x.shape):
        if not 0 <= s <= l <= d or st < 1:
            type_error(f"slice: invalid slice [{s}:{l}:{st}] of a dimension of size {d} (need "
                       f"0 <= start <= limit <= size and stride >= 1; shape {x.shape})")
        shape.append(-(-(l - s) // st))
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    return x[tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


slice_p = define("slice", _slice_rule, _slice, cached=False)


def _dynamic_slice_rule(x, *start_indices, slice_sizes):
    if len(start_indices) != x.ndim or len(slice_sizes) != x.ndim:
        type_error(f"dynamic_slice: need one start index and one slice size per dimension of shape "
                   f"{x.shape}, got {len(start_indices)} and {tuple(slice_sizes)}")
    _check_index_scalars("dynamic_slice", start_indices)
    _check_sizes("dynamic_slice", slice_sizes, "slice_sizes")
    if any(n > d for n, d in zip(slice_sizes, x.shape)):
        type_error(f"dynamic_slice: slice_sizes {tuple(slice_sizes)} exceed the shape {x.shape}")
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _dynamic_slice(x, *start_indices, slice_sizes):
    starts = _clamped_starts(start_indices, x.shape, slice_sizes)
    return x[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))]


dynamic_slice_p = define("dynamic_slice", _dynamic_slice_rule, _dynamic_slice, weak="first")


def _dynamic_update_slice_rule(x, update, *start_indices):
    _same_dtypes("dynamic_update_slice", (x, update))
    if update.ndim != x.ndim or any(u > d for u, d in zip(update.shape, x.shape)):
        shape_error(f"dynamic_update_slice: update of shape {update.shape} does not fit in an array "
                    f"of shape {x.shape}")
    if len(start_indices) != x.ndim:
        type_error(f"dynamic_update_slice: need one start index per dimension of shape {x.shape}, "
                   f"got {len(start_indices)}")
    _check_index_scalars("dynamic_update_slice", start_indices)
    return ShapedArray(x.shape, x.dtype, x.weak_type and update.weak_type)


def _dynamic_update_slice(x, update, *start_indices):
    starts = _clamped_starts(start_indices, x.shape, update.shape)
    out = np.array(x, copy=True)
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return out


dynamic_update_slice_p = define("dynamic_update_slice", _dynamic_update_slice_rule,
                                _dynamic_update_slice, weak="first")


def _concatenate_rule(*operands, dimension):
    if not operands:
        type_error("concatenate needs at least one operand")
    dt = _same_dtypes("concatenate", operands)
    first = operands[0]
    _check_axis("concatenate", dimension, first.ndim)
    for o in operands[1:]:
        if o.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(o.shape, first.shape))
                                       if i != dimension):
            shape_error(f"concatenate: shapes {', '.join(str(o.shape) for o in operands)} differ "
                        f"outside dimension {dimension}")
    shape = list(first.shape)
    shape[dimension] = sum(o.shape[dimension] for o in operands)
    return ShapedArray(shape, dt, all(o.weak_type for o in operands))


concatenate_p = define("concatenate", _concatenate_rule,
                       lambda *operands, dimension: np.concatenate(operands, dimension))


def _padded_size(d, lo, hi, interior):
    return lo + hi + d + max(d - 1, 0) * interior


def _pad_rule(x, padding_value, padding_config):
    _same_dtypes("pad", (x, padding_value))
    if padding_value.shape != ():
        type_error(f"pad: padding_value must be 0-d, got shape {padding_value.shape}")
    if len(padding_config) != x.ndim:
        type_error(f"pad: padding_config needs one (lo, hi, interior) per dimension of shape "
                   f"{x.shape}, got {tuple(padding_config)}")
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        n = _padded_size(d, lo, hi, interior)
        if interior < 0 or n < 0:
            type_error(f"pad: padding {(lo, hi, interior)} of a dimension of size {d} is invalid "
                       f"(interior must be >= 0 and the result size {n} non-negative)")
        shape.append(n)
    return ShapedArray(shape, x.dtype, x.weak_type and padding_value.weak_type)


def _pad(x, padding_value, padding_config):
    """Place x with its interior gaps and positive edge padding, then cut negative edges off."""
    grown = [_padded_size(d, max(lo, 0), max(hi, 0), it)
             for d, (lo, hi, it) in zip(x.shape, padding_config)]
    out = np.full(grown, padding_value, dtype=x.dtype)
    out[tuple(slice(max(lo, 0), max(lo, 0) + d * (it + 1), it + 1)
              for d, (lo, _, it) in zip(x.shape, padding_config))] = x
    return out[tuple(slice(max(-lo, 0), n - max(-hi, 0))
                     for n, (lo, hi, _) in zip(grown, padding_config))]


pad_p = define("pad", _pad_rule, _pad, weak="first")


def _iota_rule(dtype, shape, dimension):
    _check_sizes("iota", shape, "shape")
    _check_axis("iota", dimension, len(shape))
    _check_kind("iota", "num", dtype)
    return ShapedArray(shape, dtype, False)


def _iota(dtype, shape, dimension):
    steps = np.arange(shape[dimension], dtype=dtype)
    return _broadcast_in_dim(steps, shape, (dimension,))


iota_p = define("iota", _iota_rule, _iota, weak="never", differentiable=False)


# --- cumulative reductions ------------------------------------------------------------------------
def _cumulative(name, accumulate, kind):
    def rule(x, axis, reverse=False):
        _check_axis(name, axis, x.ndim)
        if kind == "real":
            _check_real(name, x.dtype)
        else:
            _check_kind(name, kind, x.dtype)
        return x

    def impl(x, axis, reverse=False):
        if reverse:
            return np.flip(accumulate(np.flip(x, axis), axis), axis)
        return accumulate(x, axis)

    return define(name, rule, _low_precision(impl) if kind == "num" else impl)


cumsum_p = _cumulative("cumsum", lambda x, axis: np.cumsum(x, axis, dtype=x.dtype), "num")
cumprod_p = _cumulative("cumprod", lambda x, axis: np.cumprod(x, axis, dtype=x.dtype), "num")
cummax_p = _cumulative("cummax", lambda x, axis: np.maximum.accumulate(x, axis), "real")
cummin_p = _cumulative("cummin", lambda x, axis: np.minimum.accumulate(x, axis), "real")


# --- sort -----------------------------------------------------------------------------------------
def _sort_rule(*operands, dimension, is_stable, num_keys):
    if not operands:
        type_error("sort needs at least one operand")
    shape = operands[0].shape
    if any(o.shape != shape for o in operands):
        type_error("sort: operands must share one shape, got "
                   + ", ".join(str(o.shape) for o in operands))
    _check_axis("sort", dimension, len(shape))
    if not 1 <= num_keys <= len(operands):
        type_error(f"sort: num_keys={num_keys} must be between 1 and the {len(operands)} operands")
    for k in operands[:num_keys]:
        _check_real("sort", k.dtype)
    return list(operands)


def _sort(*operands, dimension, is_stable, num_keys):
    """A stable lexicographic sort by the keys (NumPy's order: NaN last, -0.0 == 0.0)."""
    keys = operands[:num_keys]
    if num_keys == 1:
        order = np.argsort(keys[0], axis=dimension, kind="stable")
    else:
        order = np.lexsort(keys[::-1], axis=dimension)
    return [np.take_along_axis(o, order, axis=dimension) for o in operands]


sort_p = define("sort", _sort_rule, _sort, multiple_results=True)


# --- scheduling ------------------------------------------------------------------------------------
# the identity that XLA may not look through: a value that comes out of it is not the value that
# went in, so computations on it are not merged with the same computations on the original
# (secant.checkpoint's recomputation stays a recomputation)
optimization_barrier_p = define("optimization_barrier", lambda x: x, lambda x: x)

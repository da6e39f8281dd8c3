"""secant.lax: the primitives under their lax names (lax.add, lax.dot_general, ...).

Unlike secant.numpy, lax never promotes: operands must share a dtype, and only Python scalars
adapt, taking the dtype of the array operands (as in JAX's lax).
"""
import enum
import operator
import sys
from collections.abc import Sequence
from typing import Union

import numpy as np

from secant import tree_util
from secant.backends import dtypes
from secant.backends.errors import SecantTypeError, SecantValueError, UnsupportedError, where
from secant.backends.primitives import elementwise as ew
from secant.backends.primitives import indexing as ix
from secant.backends.primitives import structural as st
from secant.backends.primitives.indexing import GatherDimensionNumbers, ScatterDimensionNumbers
from secant.numpy.conversion import asarray, convert, dtype_weak, ensure_array
from secant.numpy.shape import _sort_keys

_PY_SCALARS = (bool, int, float, complex)


def _is_py_scalar(x):
    return type(x) in _PY_SCALARS


def _operands(name, *xs):
    """Arrays must share one dtype; Python scalars take that dtype when it can hold them."""
    arrays = [x for x in xs if not _is_py_scalar(x)]
    if not arrays:
        return [asarray(x) for x in xs]
    array_dtypes = [dtype_weak(x)[0] for x in arrays]
    target = array_dtypes[0]
    if any(dt != target for dt in array_dtypes[1:]):
        # Checked here as well as in the primitive's rule, which eager mode does not run.
        raise SecantTypeError(f"lax.{name} requires arguments of the same dtype, got "
                              + ", ".join(dt.name for dt in array_dtypes) + where())
    out = []
    for x in xs:
        if _is_py_scalar(x):
            scalar_dtype = dtypes.python_scalar_dtype(x)
            if dtypes.promote((target, False), (scalar_dtype, not isinstance(x, bool)))[0] != target:
                raise SecantTypeError(f"lax.{name}: Python scalar {x!r} does not fit the "
                                      f"operands' dtype {target.name}{where()}")
            out.append(convert(x, target, weak_type=True))
        else:
            out.append(ensure_array(x))
    return out


def _axis(axis, ndim):
    return int(axis) + ndim if axis < 0 else int(axis)


def _ints(seq):
    return tuple(int(i) for i in seq)


# --- elementwise, generated from one table per arity ------------------------------------------------
_UNARY = {
    "neg": ew.neg_p, "abs": ew.abs_p, "sign": ew.sign_p, "floor": ew.floor_p, "ceil": ew.ceil_p,
    "sqrt": ew.sqrt_p, "rsqrt": ew.rsqrt_p, "cbrt": ew.cbrt_p, "exp": ew.exp_p, "exp2": ew.exp2_p,
    "log": ew.log_p, "log1p": ew.log1p_p, "expm1": ew.expm1_p, "sin": ew.sin_p, "cos": ew.cos_p,
    "tan": ew.tan_p, "asin": ew.asin_p, "acos": ew.acos_p, "atan": ew.atan_p, "sinh": ew.sinh_p,
    "cosh": ew.cosh_p, "tanh": ew.tanh_p, "asinh": ew.asinh_p, "acosh": ew.acosh_p,
    "atanh": ew.atanh_p, "logistic": ew.logistic_p, "erf": ew.erf_p, "erf_inv": ew.erf_inv_p,
    "lgamma": ew.lgamma_p, "digamma": ew.digamma_p, "is_finite": ew.is_finite_p,
    "bitwise_not": ew.not_p, "population_count": ew.population_count_p, "clz": ew.clz_p,
}
_BINARY = {
    "add": ew.add_p, "sub": ew.sub_p, "mul": ew.mul_p, "div": ew.div_p, "rem": ew.rem_p,
    "pow": ew.pow_p, "max": ew.max_p, "min": ew.min_p, "atan2": ew.atan2_p,
    "nextafter": ew.nextafter_p, "eq": ew.eq_p, "ne": ew.ne_p, "lt": ew.lt_p, "le": ew.le_p,
    "gt": ew.gt_p, "ge": ew.ge_p, "bitwise_and": ew.and_p, "bitwise_or": ew.or_p,
    "bitwise_xor": ew.xor_p, "shift_left": ew.shift_left_p,
    "shift_right_logical": ew.shift_right_logical_p,
    "shift_right_arithmetic": ew.shift_right_arithmetic_p,
}


def _make_unary(name, prim):
    def f(x):
        return prim.bind(*_operands(name, x))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name} (the `{prim.name}` primitive); no dtype promotion."
    return f


def _make_binary(name, prim):
    def f(x, y):
        return prim.bind(*_operands(name, x, y))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name} (the `{prim.name}` primitive); operands share one dtype."
    return f


_module = sys.modules[__name__]
for _name, _prim in _UNARY.items():
    setattr(_module, _name, _make_unary(_name, _prim))
for _name, _prim in _BINARY.items():
    setattr(_module, _name, _make_binary(_name, _prim))


class RoundingMethod(enum.IntEnum):
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1

    def __repr__(self):         # (as generated code spells it: a traced function's static)
        return f"lax.RoundingMethod.{self.name}"


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    return ew.round_p.bind(*_operands("round", x), rounding_method=int(rounding_method))


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """operand rounded to a float format of `exponent_bits` and `mantissa_bits` (XLA's
    ReducePrecision: to nearest even, overflow to inf, underflow to zero), kept in its dtype."""
    return ew.reduce_precision_p.bind(*_operands("reduce_precision", operand),
                                      exponent_bits=operator.index(exponent_bits),
                                      mantissa_bits=operator.index(mantissa_bits))


def integer_pow(x, y):
    return ew.integer_pow_p.bind(*_operands("integer_pow", x), y=int(y))


def select(pred, on_true, on_false):
    on_true, on_false = _operands("select", on_true, on_false)
    return ew.select_p.bind(ensure_array(pred), on_true, on_false)


def clamp(min, x, max):
    x, lo, hi = _operands("clamp", x, min, max)
    return ew.clamp_p.bind(lo, x, hi)


def convert_element_type(operand, new_dtype):
    return convert(ensure_array(operand), dtypes.canonicalize_dtype(new_dtype))


def bitcast_convert_type(operand, new_dtype):
    return ew.bitcast_convert_type_p.bind(ensure_array(operand),
                                          new_dtype=dtypes.canonicalize_dtype(new_dtype))


# --- shapes ----------------------------------------------------------------------------------------
def broadcast_in_dim(operand, shape, broadcast_dimensions):
    return st.broadcast_in_dim_p.bind(ensure_array(operand), shape=_ints(shape),
                                      broadcast_dimensions=_ints(broadcast_dimensions))


def broadcast(operand, sizes):
    """Adds leading dimensions of `sizes` to the operand."""
    operand = ensure_array(operand)
    sizes = _ints(sizes)
    return broadcast_in_dim(operand, sizes + operand.shape,
                            range(len(sizes), len(sizes) + operand.ndim))


def reshape(operand, new_sizes, dimensions=None):
    """Row-major reshape; `dimensions` first transposes the operand into that order."""
    operand = ensure_array(operand)
    if dimensions is not None:
        operand = transpose(operand, dimensions)
    return st.reshape_p.bind(operand, new_sizes=_ints(new_sizes))


def transpose(operand, permutation):
    return st.transpose_p.bind(ensure_array(operand), permutation=_ints(permutation))


def rev(operand, dimensions):
    return st.rev_p.bind(ensure_array(operand), dimensions=_ints(dimensions))


def squeeze(array, dimensions):
    array = ensure_array(array)
    return st.squeeze_p.bind(array, dimensions=tuple(sorted(_axis(d, array.ndim)
                                                            for d in dimensions)))


def expand_dims(array, dimensions):
    """`dimensions` are positions of the new size-1 axes in the result."""
    array = ensure_array(array)
    out_ndim = array.ndim + len(dimensions)
    return st.expand_dims_p.bind(array, dimensions=tuple(sorted(_axis(d, out_ndim)
                                                                for d in dimensions)))


def _make_reduce(name, prim):
    def f(operand, axes):
        operand = ensure_array(operand)
        return prim.bind(operand, axes=tuple(sorted(_axis(a, operand.ndim) for a in axes)))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Reduces `operand` over `axes` (the `{prim.name}` primitive)."
    return f


for _name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or"):
    setattr(_module, _name, _make_reduce(_name, getattr(st, _name + "_p")))


def argmax(operand, axis, index_dtype):
    operand = ensure_array(operand)
    return st.argmax_p.bind(operand, axis=_axis(axis, operand.ndim),
                            index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand, axis, index_dtype):
    operand = ensure_array(operand)
    return st.argmin_p.bind(operand, axis=_axis(axis, operand.ndim),
                            index_dtype=dtypes.canonicalize_dtype(index_dtype))


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """Contracts and batches lhs with rhs; output dims: batch, lhs free, rhs free. `precision`
    is accepted for compatibility and ignored (CPU XLA computes at full precision)."""
    (lc, rc), (lb, rb) = dimension_numbers
    dims = ((_ints(lc), _ints(rc)), (_ints(lb), _ints(rb)))
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize_dtype(preferred_element_type)
    lhs, rhs = _operands("dot_general", lhs, rhs)
    return st.dot_general_p.bind(lhs, rhs, dimension_numbers=dims,
                                 preferred_element_type=preferred_element_type)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix products: contracts the last axis of lhs with the first of rhs."""
    lhs, rhs = _operands("dot", lhs, rhs)
    if lhs.ndim not in (1, 2) or rhs.ndim not in (1, 2):
        raise SecantTypeError(f"lax.dot takes 1-d or 2-d operands, got shapes {lhs.shape} and "
                              f"{rhs.shape}; use lax.dot_general{where()}")
    return dot_general(lhs, rhs, (((lhs.ndim - 1,), (0,)), ((), ())),
                       precision, preferred_element_type)


# --- slicing -----------------------------------------------------------------------------------------
def slice(operand, start_indices, limit_indices, strides=None):
    return st.slice_p.bind(ensure_array(operand), start_indices=_ints(start_indices),
                           limit_indices=_ints(limit_indices),
                           strides=None if strides is None else _ints(strides))


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    operand = ensure_array(operand)
    axis = _axis(axis, operand.ndim)
    size = operand.shape[axis]
    start = 0 if start_index is None else _axis(start_index, size)
    limit = size if limit_index is None else _axis(limit_index, size)
    starts = [0] * operand.ndim
    limits = list(operand.shape)
    strides = [1] * operand.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
    return slice(operand, starts, limits, strides)


def _index_scalars(indices):
    """Start indices become 0-d arrays of one integer dtype (Python ints take the default)."""
    out = [asarray(i) if _is_py_scalar(i) else ensure_array(i) for i in indices]
    for i in out:
        if i.ndim != 0 or not dtypes.is_int(i.dtype):
            raise SecantTypeError(f"start indices must be integer scalars, got "
                                  f"{i.dtype.name}{list(i.shape)}{where()}")
    dt = dtypes.promote(*[(i.dtype, i.weak_type) for i in out])[0] if out else None
    return [convert(i, dt) for i in out]


def dynamic_slice(operand, start_indices, slice_sizes):
    """Start indices are clamped so the slice fits (XLA semantics)."""
    return st.dynamic_slice_p.bind(ensure_array(operand), *_index_scalars(start_indices),
                                   slice_sizes=_ints(slice_sizes))


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    operand = ensure_array(operand)
    axis = _axis(axis, operand.ndim)
    starts = [0] * operand.ndim
    sizes = list(operand.shape)
    starts[axis], sizes[axis] = start_index, int(slice_size)
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    operand = ensure_array(operand)
    axis = _axis(axis, operand.ndim)
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice(operand, update, start_indices):
    operand, update = _operands("dynamic_update_slice", operand, update)
    return st.dynamic_update_slice_p.bind(operand, update, *_index_scalars(start_indices))


def dynamic_update_index_in_dim(operand, update, index, axis):
    """operand with its slice `index` along `axis` replaced by `update`."""
    operand = ensure_array(operand)
    axis = _axis(axis, operand.ndim)
    update = ensure_array(update)
    if update.ndim == operand.ndim - 1:
        update = expand_dims(update, (axis,))
    starts = [0] * operand.ndim
    starts[axis] = index
    return dynamic_update_slice(operand, update, starts)


def concatenate(operands, dimension):
    operands = [ensure_array(x) for x in operands]
    if not operands:
        raise SecantTypeError("lax.concatenate needs at least one operand" + where())
    return st.concatenate_p.bind(*operands, dimension=_axis(dimension, operands[0].ndim))


def pad(operand, padding_value, padding_config):
    operand, padding_value = _operands("pad", operand, padding_value)
    return st.pad_p.bind(operand, padding_value,
                         padding_config=tuple(_ints(c) for c in padding_config))


# --- creation ----------------------------------------------------------------------------------------
def iota(dtype, size):
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension):
    shape = _ints(shape)
    return st.iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=shape,
                          dimension=_axis(dimension, len(shape)))


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with `fill_value` (weakly typed when both are unspecified)."""
    if dtype is None:
        dtype, weak = dtype_weak(fill_value)
    else:
        dtype, weak = dtypes.canonicalize_dtype(dtype), False
    fill = convert(fill_value, dtype, weak)
    if np.ndim(fill) != 0:
        raise SecantTypeError(f"lax.full needs a scalar fill_value, got shape "
                              f"{np.shape(fill)}{where()}")
    return broadcast_in_dim(fill, shape, ())


def full_like(x, fill_value, dtype=None, shape=None):
    dt, weak = dtype_weak(x)
    if dtype is not None:
        dt, weak = dtypes.canonicalize_dtype(dtype), False
    return broadcast_in_dim(convert(fill_value, dt, weak), np.shape(x) if shape is None else shape,
                            ())


def zeros_like_array(x):
    return full_like(x, 0)


# --- scans and sorting -------------------------------------------------------------------------------
def _make_cumulative(name, prim):
    def f(operand, axis=0, reverse=False):
        operand = ensure_array(operand)
        return prim.bind(operand, axis=_axis(axis, operand.ndim), reverse=bool(reverse))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Cumulative {name[3:]} along `axis` (from the end when `reverse`)."
    return f


for _name in ("cumsum", "cumprod", "cummax", "cummin"):
    setattr(_module, _name, _make_cumulative(_name, getattr(st, _name + "_p")))


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Sorts one array, or a sequence of arrays by its first `num_keys` (returned as a tuple)."""
    single = not isinstance(operand, (tuple, list))
    operands = [ensure_array(x) for x in ([operand] if single else operand)]
    num_keys = int(num_keys)
    keys = _sort_keys(operands[:num_keys])       # (a complex key: its real part, then imaginary)
    if len(keys) > num_keys:
        out = st.sort_p.bind(*keys, *operands, dimension=_axis(dimension, operands[0].ndim),
                             is_stable=bool(is_stable), num_keys=len(keys))[len(keys):]
    else:
        out = st.sort_p.bind(*operands, dimension=_axis(dimension, operands[0].ndim),
                             is_stable=bool(is_stable), num_keys=num_keys)
    return out[0] if single else tuple(out)


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    return sort((keys, values), dimension, is_stable, num_keys=1)


# --- gather and scatter ------------------------------------------------------------------------------
def _dimension_numbers(cls, dn):
    return cls(*(_ints(field) for field in dn))


def check_gather_mode(mode, fill_value=None):
    """lax.gather's modes (its source, secant/lax_scatter_sources.py, checks them too)."""
    if mode not in (None, "clip", "promise_in_bounds", "fill", "drop"):
        raise UnsupportedError(f"lax.gather supports modes 'clip', 'promise_in_bounds' (both "
                               f"clamp, as does the default None) and 'fill', got mode={mode!r}"
                               + where())


def gather_fill_value(mode, fill_value, dtype):
    """The value of an out-of-range window under mode 'fill' (JAX's defaults: NaN for inexact
    types, the most negative / largest value for signed / unsigned integers, True for bool);
    None where the mode clamps (None, as JAX's lax.gather, means 'promise_in_bounds': XLA
    clamps)."""
    if mode not in ("fill", "drop"):
        return None
    if fill_value is not None:
        return fill_value
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.inexact):
        return np.nan
    if np.issubdtype(dtype, np.integer):
        return np.iinfo(dtype).min if np.issubdtype(dtype, np.signedinteger) else \
            np.iinfo(dtype).max
    return True


def check_scatter_mode(name, mode):
    if mode not in (None, "drop", "fill", "promise_in_bounds", "clip"):
        raise UnsupportedError(f"lax.{name} supports modes 'drop' (the default: out-of-range "
                               f"updates are dropped) and 'clip', got mode={mode!r}{where()}")


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, indices_are_sorted=False,
           unique_indices=False, mode=None, fill_value=None):
    """XLA gather (the index vector is the last axis of `start_indices`). Out-of-range starts are
    clamped (mode None, as JAX's lax.gather, is 'promise_in_bounds', which XLA clamps, and
    'clip'); mode 'fill' gives a window not wholly in the operand `fill_value`."""
    check_gather_mode(mode, fill_value)
    if mode in ("fill", "drop"):        # (its source masks the clamped windows)
        return _scatter_sources.gather(ensure_array(operand), ensure_array(start_indices),
                                       dimension_numbers, slice_sizes, mode=mode,
                                       fill_value=fill_value)
    return ix.gather_p.bind(ensure_array(operand), ensure_array(start_indices),
                            dimension_numbers=_dimension_numbers(GatherDimensionNumbers,
                                                                 dimension_numbers),
                            slice_sizes=_ints(slice_sizes))


def _make_scatter(name, prim):
    def f(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
          unique_indices=False, mode=None):
        check_scatter_mode(name, mode)
        operand, updates = _operands(name, operand, updates)
        if mode == "clip":              # (its source clamps the windows' starts)
            return getattr(_scatter_sources, name)(operand, ensure_array(scatter_indices),
                                                   updates, dimension_numbers, mode=mode)
        return prim.bind(operand, ensure_array(scatter_indices), updates,
                         dimension_numbers=_dimension_numbers(ScatterDimensionNumbers,
                                                              dimension_numbers),
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"XLA {name}: combines `updates` into windows of `operand` chosen by "
                 "`scatter_indices` (last axis is the index vector); out-of-range windows are dropped.")
    return f


for _name in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"):
    setattr(_module, _name, _make_scatter(_name, getattr(ix, _name + "_p")))


# --- autodiff markers --------------------------------------------------------------------------------
def stop_gradient(x):
    """Identity on values; marks every array leaf of the pytree `x` as having zero derivative."""
    return tree_util.tree_map(ensure_array, x)


def optimization_barrier(operand):
    """Identity on each array leaf of `operand` that XLA cannot see through, so work done on the
    result is not merged with the same work on the input (what secant.checkpoint relies on)."""
    return tree_util.tree_map(lambda x: st.optimization_barrier_p.bind(ensure_array(x)), operand)


from secant.lax_control_flow import cond, fori_loop, map, scan, switch, while_loop  # noqa: E402,F401


# --- collectives over a named mapped axis --------------------------------------------------------
# Inside vmap(..., axis_name=name) the transform writes each of these as a reduction over the
# mapped axis, so these bodies never run for vmap's name. Inside pmap(..., axis_name=name) they bind
# the collective primitives (one StableHLO collective between the replicas); anywhere else the
# axis name is unbound.
def _unbound(fn_name, axis_name):
    from secant.backends.errors import UnboundAxisNameError, where
    raise UnboundAxisNameError(f"unbound axis name: {axis_name!r}: lax.{fn_name} reduces over a "
                           "mapped axis, so it must run inside secant.vmap(f, axis_name="
                           f"{axis_name!r}) or secant.pmap(f, axis_name={axis_name!r}){where()}")


def _pmap_axis(fn_name, axis_name):
    """The replica groups of the pmap axis `axis_name` (every replica, in order)."""
    from secant import axis_env
    name = axis_name
    if isinstance(name, (tuple, list)):
        if len(name) != 1:
            raise UnsupportedError(f"lax.{fn_name} over several axes {tuple(name)!r}: secant's "
                                   "pmap binds one axis name" + where())
        name = name[0]
    try:
        n = axis_env.size(name)
    except TypeError:           # an unhashable name
        n = None
    if n is None:
        _unbound(fn_name, axis_name)
    return (tuple(range(n)),)


def _emit(prim, *args, **params):
    """Bind a collective: recorded into pmap's trace even when every operand is a constant
    (bind would otherwise run the eager implementation, which has one replica only)."""
    from secant.backends.core import Tracer
    from secant.backends.tracer import active_trace
    if any(isinstance(a, Tracer) for a in args):
        return prim.bind(*args, **params)
    return active_trace().emit(prim, [ensure_array(a) for a in args], params)


def _each(x, fn):
    return tree_util.tree_map(fn, x)


def _all_reduce(fn_name, x, axis_name, reducer):
    from secant.backends.primitives.collectives import all_reduce_p
    groups = _pmap_axis(fn_name, axis_name)
    return _each(x, lambda v: _emit(all_reduce_p, asarray(v), reducer=reducer, groups=groups))


def psum(x, axis_name):
    """The sum of x over the mapped axis `axis_name` (the same value for every example)."""
    return _all_reduce("psum", x, axis_name, "add")


def pmean(x, axis_name):
    """The mean of x over the mapped axis `axis_name`."""
    n = len(_pmap_axis("pmean", axis_name)[0])
    return _each(psum(x, axis_name), lambda v: v / n)


def pmax(x, axis_name):
    """The maximum of x over the mapped axis `axis_name`."""
    return _all_reduce("pmax", x, axis_name, "max")


def pmin(x, axis_name):
    """The minimum of x over the mapped axis `axis_name`."""
    return _all_reduce("pmin", x, axis_name, "min")


def all_gather(x, axis_name, axis=0, tiled=False):
    """Every example's x, stacked along a new axis `axis` (concatenated along it, tiled)."""
    from secant.backends.primitives.collectives import all_gather_p
    groups = _pmap_axis("all_gather", axis_name)

    def gather(v):
        v = asarray(v)
        return _emit(all_gather_p, v, axis=_axis(axis, v.ndim if tiled else v.ndim + 1),
                     tiled=bool(tiled), groups=groups)
    return _each(x, gather)


def ppermute(x, axis_name, perm):
    """x sent along the mapped axis: for each (source, target) in `perm`, the example at index
    target receives source's x; an index no pair targets receives zeros."""
    from secant.backends.primitives.collectives import collective_permute_p
    n = len(_pmap_axis("ppermute", axis_name)[0])
    pairs = tuple((int(s), int(t)) for s, t in perm)
    return _each(x, lambda v: _emit(collective_permute_p, asarray(v), pairs=pairs, n=n))


def all_to_all(x, axis_name, split_axis, concat_axis, *, tiled=False):
    """Each example splits x along `split_axis` into one piece per example and sends piece j to
    example j, which concatenates what it receives along `concat_axis` (as JAX's)."""
    from secant.backends.primitives.collectives import all_to_all_p
    groups = _pmap_axis("all_to_all", axis_name)

    def exchange(v):
        v = asarray(v)
        return _emit(all_to_all_p, v, split_axis=_axis(split_axis, v.ndim),
                     concat_axis=_axis(concat_axis, v.ndim), tiled=bool(tiled), groups=groups)
    return _each(x, exchange)


def axis_size(axis_name):
    """The number of examples (replicas) along the mapped axis `axis_name`: a Python int."""
    return len(_pmap_axis("axis_size", axis_name)[0])


def psum_scatter(x, axis_name, *, scatter_dimension=0, tiled=False):
    """psum of x over the mapped axis `axis_name`, scattered: example i keeps block i of the
    sum along `scatter_dimension` (dropped, or of size x.shape[d] / axis size when tiled)."""
    n = axis_size(axis_name)

    def scatter(v):
        v = asarray(v)
        d = scatter_dimension_of(v, scatter_dimension, n, tiled)
        total, i = psum(v, axis_name), axis_index(axis_name)
        if tiled:
            m = v.shape[d] // n
            return dynamic_slice_in_dim(total, i * m, m, axis=d)
        return dynamic_index_in_dim(total, i, axis=d, keepdims=False)
    return _each(x, scatter)


def scatter_dimension_of(x, scatter_dimension, n, tiled):
    """psum_scatter's scatter_dimension as an axis of x, checked against the axis size n (as
    JAX checks it)."""
    shape = np.shape(x)
    if not -len(shape) <= scatter_dimension < len(shape):
        raise SecantValueError(f"psum_scatter: scatter_dimension {scatter_dimension} is out of "
                               f"range for an operand of shape {shape}" + where())
    d = scatter_dimension % len(shape)
    if shape[d] % n if tiled else shape[d] != n:
        raise SecantValueError(f"psum_scatter: dimension {d} of the operand has size "
                               f"{shape[d]}, which must {'be a multiple of' if tiled else 'equal'}"
                               f" the axis size {n}" + where())
    return d


scatter_dimension_of.__secant_constant__ = True     # (an axis: a constant to derivatives)


def axis_index(axis_name):
    """The position of this example along the mapped axis `axis_name`."""
    from secant.backends.primitives.collectives import replica_id_p
    _pmap_axis("axis_index", axis_name)
    return _emit(replica_id_p)


# --- windowed operations: convolutions and reduce_window (secant/lax_windows.py) ------------------
from secant.lax_windows import (ConvDimensionNumbers, conv_dimension_numbers,  # noqa: E402,F401
                                conv_general_dilated, conv_general_permutations,
                                conv_general_shape_tuple, padtype_to_pads, reduce_window)
from secant.lax_windows_sources import conv, conv_transpose, conv_with_general_padding  # noqa: E402,F401,E501
from secant.lax_fft import FftType, complex, conj, fft, imag, real  # noqa: E402,F401
from secant import lax_linalg as linalg  # noqa: E402,F401  (secant.lax.linalg, as jax.lax.linalg)


# --- issue 18: programs written for jax.lax -------------------------------------------------------
class Precision(enum.Enum):
    """jax.lax.Precision: accepted by every `precision=` argument and ignored (CPU XLA computes
    float32 products in float32, JAX's DEFAULT there). Precision('highest') and Precision(2)
    name the members too."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str):
            names = {"default": cls.DEFAULT, "fastest": cls.DEFAULT, "bfloat16": cls.DEFAULT,
                     "high": cls.HIGH, "bfloat16_3x": cls.HIGH, "tensorfloat32": cls.HIGH,
                     "highest": cls.HIGHEST, "float32": cls.HIGHEST}
            return names.get(value.lower())
        return None

    def __str__(self):
        return self.name


class GatherScatterMode(str, enum.Enum):
    """jax.lax.GatherScatterMode, its members equal to the `mode=` strings secant's gather and
    scatter take (a mode they do not support is refused there by name)."""
    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "promise_in_bounds"
    ONE_HOT = "one_hot"

    @staticmethod
    def from_any(s):
        if isinstance(s, GatherScatterMode):
            return s
        if s is None or s in ("fill", "drop"):
            return GatherScatterMode.FILL_OR_DROP
        for member in GatherScatterMode:
            if s == member.value:
                return member
        raise ValueError(f"Unknown gather mode {s!r}")


# the type aliases of jax.lax's signatures (for annotations)
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision]]
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]


from secant.lax_extras import associative_scan, reduce, top_k  # noqa: E402,F401
from secant.lax_implicit import custom_linear_solve, custom_root  # noqa: E402,F401
from secant import lax_scatter_sources as _scatter_sources  # noqa: E402,F401  (their sources)
import secant.lax_sort_sources  # noqa: E402,F401  (sort of several operands: by source)

"""Lowerings of the structural primitives (shape changes, reductions, dot_general, slicing, padding,
cumulative reductions, sort). Ops with a written-out region (argmax's variadic reduce,
reduce_window, sort) use MLIR's generic syntax, whose block-argument order is the StableHLO
spec's."""
import numpy as np

from secant.backends import dtypes
from secant.backends.emitter import Body, tensor_type, ttype
from secant.backends.lowering.common import compare_type, lowering
from secant.backends.primitives.structural import highest, lowest


def _i64s(values):
    """A dense i64 array attribute: `array<i64: 1, 2>` (or `array<i64>` when empty)."""
    values = [int(v) for v in values]
    return f"array<i64: {', '.join(map(str, values))}>" if values else "array<i64>"


def _scalar(dtype):
    return tensor_type((), dtype)


def _region(b, arg_dtypes, result_dtypes, build):
    """The text `({ ^bb0(...): ... stablehlo.return ... })` of a region over 0-d tensors.

    build(region_body, *arg_names) emits the region's ops and returns the names to return."""
    sub = Body(b.namer, indent=b.indent + "    ")
    sub.loc = b.loc
    args = [sub.fresh() for _ in arg_dtypes]
    results = build(sub, *args)
    types = [_scalar(dt) for dt in arg_dtypes]
    result_types = ", ".join(_scalar(dt) for dt in result_dtypes)
    sub.line(f"stablehlo.return {', '.join(results)} : {result_types}")
    header = ", ".join(f"{a}: {t}" for a, t in zip(args, types))
    return f"({{\n{b.indent}  ^bb0({header}):\n{sub.text()}\n{b.indent}}})"


# --- shape changes --------------------------------------------------------------------------------
@lowering("broadcast_in_dim")
def _broadcast_in_dim(b, avals, out, x, shape, broadcast_dimensions):
    if avals[0].shape == out.shape:
        return x
    return b.op(f"stablehlo.broadcast_in_dim {x}, dims = {list(broadcast_dimensions)} : "
                f"({ttype(avals[0])}) -> {ttype(out)}")


@lowering("reshape", "squeeze", "expand_dims")
def _reshape(b, avals, out, x, **params):
    return b.reshape(x, avals[0], out.shape)


@lowering("transpose")
def _transpose(b, avals, out, x, permutation):
    if list(permutation) == sorted(permutation):
        return x
    return b.op(f"stablehlo.transpose {x}, dims = {list(permutation)} : "
                f"({ttype(avals[0])}) -> {ttype(out)}")


@lowering("rev")
def _rev(b, avals, out, x, dimensions):
    if not dimensions:
        return x
    return b.op(f"stablehlo.reverse {x}, dims = {list(dimensions)} : {ttype(out)}")


# --- reductions -----------------------------------------------------------------------------------
def _combiner(kind, dtype):
    """The elementwise op that folds two values for a reduction `kind` (booleans use and/or)."""
    if dtypes.is_bool(dtype):
        return {"max": "stablehlo.or", "min": "stablehlo.and", "and": "stablehlo.and",
                "or": "stablehlo.or"}[kind]
    return {"sum": "stablehlo.add", "prod": "stablehlo.multiply", "max": "stablehlo.maximum",
            "min": "stablehlo.minimum"}[kind]


def _identity(kind, dtype):
    return {"sum": 0, "prod": 1, "max": lowest(dtype), "min": highest(dtype), "and": True,
            "or": False}[kind]


def _reduction(kind):
    def lower(b, avals, out, x, axes):
        if not axes:
            return x
        init = b.constant(_identity(kind, out.dtype), out.dtype)
        return b.op(f"stablehlo.reduce({x} init: {init}) applies {_combiner(kind, out.dtype)} "
                    f"across dimensions = {list(axes)} : ({ttype(avals[0])}, "
                    f"{_scalar(out.dtype)}) -> {ttype(out)}")
    return lower


for _kind in ("sum", "prod", "max", "min", "and", "or"):
    lowering(f"reduce_{_kind}")(_reduction(_kind))


def _compare(b, direction, x, y, dtype):
    t = _scalar(dtype)
    return b.op(f"stablehlo.compare {direction}, {x}, {y}, {compare_type(dtype)} : "
                f"({t}, {t}) -> {_scalar(np.bool_)}")


def _logical(b, op, x, y):
    return b.op(f"stablehlo.{op} {x}, {y} : {_scalar(np.bool_)}")


def _is_nan(b, x, dtype):
    return _compare(b, "NE", x, x, dtype)


def _nan_flags(b, x, y, dtype):
    """(isnan(x), isnan(y)) for floats, None for types without NaN."""
    return (_is_nan(b, x, dtype), _is_nan(b, y, dtype)) if dtypes.is_inexact(dtype) else None


def _sort_less(b, x, y, dtype, nans):
    """x < y in NumPy's sort order, where NaN is above every number."""
    lt = _compare(b, "LT", x, y, dtype)
    if nans is None:
        return lt
    x_num = b.op(f"stablehlo.not {nans[0]} : {_scalar(np.bool_)}")
    return _logical(b, "or", lt, _logical(b, "and", x_num, nans[1]))


def _sort_equal(b, x, y, dtype, nans):
    """x == y in NumPy's sort order, where NaNs equal each other."""
    eq = _compare(b, "EQ", x, y, dtype)
    if nans is None:
        return eq
    return _logical(b, "or", eq, _logical(b, "and", *nans))


def _argminmax(direction, init_of):
    def lower(b, avals, out, x, axis, index_dtype):
        xa = avals[0]
        dt, it = xa.dtype, np.dtype(index_dtype)
        iota = b.op(f"stablehlo.iota dim = {axis} : {tensor_type(xa.shape, it)}")
        init_v, init_i = b.constant(init_of(dt), dt), b.constant(0, it)

        def choose(r, v1, i1, v2, i2):
            # Take (v1, i1) when v1 is strictly better, or as good and first; NaN beats numbers.
            better = _compare(r, direction, v1, v2, dt)
            same = _compare(r, "EQ", v1, v2, dt)
            if dtypes.is_inexact(dt):
                nan1, nan2 = _is_nan(r, v1, dt), _is_nan(r, v2, dt)
                num2 = r.op(f"stablehlo.not {nan2} : {_scalar(np.bool_)}")
                better = _logical(r, "or", better, _logical(r, "and", nan1, num2))
                same = _logical(r, "or", same, _logical(r, "and", nan1, nan2))
            first = _compare(r, "LT", i1, i2, it)
            take = _logical(r, "or", better, _logical(r, "and", same, first))
            v = r.op(f"stablehlo.select {take}, {v1}, {v2} : {_scalar(np.bool_)}, {_scalar(dt)}")
            i = r.op(f"stablehlo.select {take}, {i1}, {i2} : {_scalar(np.bool_)}, {_scalar(it)}")
            return [v, i]

        region = _region(b, [dt, it, dt, it], [dt, it], choose)
        value_t = tensor_type(out.shape, dt)
        res = b.op_multi(
            f'"stablehlo.reduce"({x}, {iota}, {init_v}, {init_i}) {region} '
            f"{{dimensions = {_i64s([axis])}}} : ({ttype(xa)}, {tensor_type(xa.shape, it)}, "
            f"{_scalar(dt)}, {_scalar(it)}) -> ({value_t}, {ttype(out)})", 2)
        return res[1]
    return lower


lowering("argmax")(_argminmax("GT", lowest))
lowering("argmin")(_argminmax("LT", highest))


# --- dot_general ----------------------------------------------------------------------------------
@lowering("dot_general")
def _dot_general(b, avals, out, lhs, rhs, dimension_numbers, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    la, ra = avals
    # Convert first so the dot itself has one element type, as in the NumPy implementation.
    lhs, rhs = b.convert(lhs, la, out.dtype), b.convert(rhs, ra, out.dtype)
    la, ra = la.update(dtype=out.dtype), ra.update(dtype=out.dtype)
    batching = f"batching_dims = {list(lb)} x {list(rb)}, " if lb else ""
    return b.op(f"stablehlo.dot_general {lhs}, {rhs}, {batching}contracting_dims = {list(lc)} x "
                f"{list(rc)} : ({ttype(la)}, {ttype(ra)}) -> {ttype(out)}")


# --- slicing --------------------------------------------------------------------------------------
@lowering("slice")
def _slice(b, avals, out, x, start_indices, limit_indices, strides=None):
    if avals[0].shape == out.shape:       # only a full slice keeps every size
        return x
    strides = strides or (1,) * len(start_indices)
    ranges = ", ".join(f"{s}:{l}:{st}" for s, l, st in zip(start_indices, limit_indices, strides))
    return b.op(f"stablehlo.slice {x} [{ranges}] : ({ttype(avals[0])}) -> {ttype(out)}")


def _common_index_type(b, avals, names):
    """StableHLO needs every start index of one type: widen them all to the widest."""
    idx = max((a.dtype for a in avals), key=lambda d: d.itemsize)
    return [b.convert(n, a, idx) for a, n in zip(avals, names)], tensor_type((), idx)


@lowering("dynamic_slice")
def _dynamic_slice(b, avals, out, x, *start_indices, slice_sizes):
    if not start_indices:
        return x
    starts, it = _common_index_type(b, avals[1:], start_indices)
    return b.op(f"stablehlo.dynamic_slice {x}, {', '.join(starts)}, sizes = {list(slice_sizes)} : "
                f"({ttype(avals[0])}, {', '.join([it] * len(starts))}) -> {ttype(out)}")


@lowering("dynamic_update_slice")
def _dynamic_update_slice(b, avals, out, x, update, *start_indices):
    if not start_indices:
        return update
    starts, it = _common_index_type(b, avals[2:], start_indices)
    return b.op(f"stablehlo.dynamic_update_slice {x}, {update}, {', '.join(starts)} : "
                f"({ttype(avals[0])}, {ttype(avals[1])}, {', '.join([it] * len(starts))}) -> "
                f"{ttype(out)}")


@lowering("concatenate")
def _concatenate(b, avals, out, *operands, dimension):
    if len(operands) == 1:
        return operands[0]
    return b.op(f"stablehlo.concatenate {', '.join(operands)}, dim = {dimension} : "
                f"({', '.join(ttype(a) for a in avals)}) -> {ttype(out)}")


@lowering("pad")
def _pad(b, avals, out, x, padding_value, padding_config):
    if not padding_config:
        return x
    lo, hi, interior = ([c[i] for c in padding_config] for i in range(3))
    return b.op(f"stablehlo.pad {x}, {padding_value}, low = {lo}, high = {hi}, "
                f"interior = {interior} : ({ttype(avals[0])}, {ttype(avals[1])}) -> {ttype(out)}")


@lowering("iota")
def _iota(b, avals, out, dtype, shape, dimension):
    return b.op(f"stablehlo.iota dim = {dimension} : {ttype(out)}")


# --- cumulative reductions: a window over everything before (or after) each element ---------------
def _cumulative(kind):
    def lower(b, avals, out, x, axis, reverse=False):
        n = out.shape[axis]
        if n <= 1 or out.size == 0:
            return x
        dt = out.dtype
        init = b.constant(_identity(kind, dt), dt)
        combine = _combiner(kind, dt)
        region = _region(b, [dt, dt], [dt],
                         lambda r, p, q: [r.op(f"{combine} {p}, {q} : {_scalar(dt)}")])
        window = [n if d == axis else 1 for d in range(out.ndim)]
        before = [0, n - 1] if reverse else [n - 1, 0]
        padding = [before if d == axis else [0, 0] for d in range(out.ndim)]
        return b.op(f'"stablehlo.reduce_window"({x}, {init}) {region} '
                    f"{{window_dimensions = {_i64s(window)}, window_strides = "
                    f"{_i64s([1] * out.ndim)}, padding = dense<{padding}> : "
                    f"tensor<{out.ndim}x2xi64>}} : ({ttype(out)}, {_scalar(dt)}) -> {ttype(out)}")
    return lower


for _name, _kind in (("cumsum", "sum"), ("cumprod", "prod"), ("cummax", "max"), ("cummin", "min")):
    lowering(_name)(_cumulative(_kind))


# --- sort -----------------------------------------------------------------------------------------
@lowering("sort")
def _sort(b, avals, outs, *operands, dimension, is_stable, num_keys):
    element_types = [a.dtype for a in avals]

    def comparator(r, *args):
        # args = (lhs_0, rhs_0, lhs_1, rhs_1, ...); lexicographic "lhs < rhs" over the keys.
        less = None
        for k in reversed(range(num_keys)):
            x, y, dt = args[2 * k], args[2 * k + 1], element_types[k]
            nans = _nan_flags(r, x, y, dt)
            lt = _sort_less(r, x, y, dt, nans)
            if less is not None:
                tie_then_less = _logical(r, "and", _sort_equal(r, x, y, dt, nans), less)
                lt = _logical(r, "or", lt, tie_then_less)
            less = lt
        return [less]

    region = _region(b, [dt for dt in element_types for _ in (0, 1)], [np.bool_], comparator)
    in_types = ", ".join(ttype(a) for a in avals)
    text = (f'"stablehlo.sort"({", ".join(operands)}) {region} {{dimension = {dimension} : i64, '
            f"is_stable = {str(bool(is_stable)).lower()}}} : ({in_types}) -> ({in_types})")
    if len(operands) == 1:
        return [b.op(text)]
    return b.op_multi(text, len(operands))


@lowering("optimization_barrier")
def _optimization_barrier(b, avals, out, x):
    return b.op(f"stablehlo.optimization_barrier {x} : {ttype(out)}")

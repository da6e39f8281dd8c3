"""The source of snp.pad's modes other than 'constant' (secant/numpy/shape.py pad computes its
values with it, and the transforms read it for a call whose mode is not 'constant': its
`__secant_source_by_call__`). Each axis is padded in turn, as NumPy does: edge, wrap and even
reflect/symmetric gather the input (snp.take of a static index table, whose vjp is a
scatter-add); odd reflect/symmetric and linear_ramp are a static matrix times the input along
the axis (plus the end values' ramp); maximum, minimum, mean and median are the statistic of
the edge regions (stat_length), broadcast over the padding. Static work: shape._pad_plan."""
import importlib

import gast

import secant.numpy as snp

library = importlib.import_module("secant.numpy.shape")     # (snp.shape is the function)

__secant_by_source__ = True      # transforms read this module like user code


def pad(array, pad_width, mode="constant", constant_values=0, stat_length=None, end_values=0,
        reflect_type="even"):
    array = snp.asarray(array)
    if mode == "empty":     # (JAX's: the padding holds zeros)
        out = snp.pad(array, pad_width, "constant", 0)
    elif mode == "constant":
        out = snp.pad(array, pad_width, "constant", constant_values)
    else:
        out = array
        plan = library._pad_plan(snp.shape(array), pad_width, mode, stat_length, end_values,
                                 reflect_type)
        for axis, kind, table, left, right in plan:
            if kind == "take":
                out = snp.take(out, table, axis=axis)
            elif kind == "linear":
                out = _linear(out, table, left, axis)
            else:
                out = _stat(out, mode, table[0], table[1], left, right, axis)
    return out


def _linear(x, matrix, offset, axis):
    dtype = snp.result_type(x)
    real = dtype if snp.issubdtype(dtype, snp.inexact) else snp.float32
    moved = snp.tensordot(snp.asarray(matrix, dtype=real), x, axes=([1], [axis]))
    if offset is not None:
        moved = moved + snp.reshape(snp.asarray(offset, dtype=real),
                                    (-1,) + (1,) * (snp.ndim(x) - 1))
    if real != dtype:
        moved = snp.round(moved)
    return snp.moveaxis(moved, 0, axis).astype(dtype)


def _stat(x, mode, before, after, left, right, axis):
    parts = []
    if left:
        parts.append(snp.broadcast_to(_statistic(snp.take(x, before, axis=axis), mode, axis),
                                      library._pad_shape(snp.shape(x), axis, left)))
    parts.append(x)
    if right:
        parts.append(snp.broadcast_to(_statistic(snp.take(x, after, axis=axis), mode, axis),
                                      library._pad_shape(snp.shape(x), axis, right)))
    return snp.concatenate(parts, axis=axis)


def _statistic(region, mode, axis):
    dtype = snp.result_type(region)
    if mode == "maximum":
        out = snp.max(region, axis=axis, keepdims=True)
    elif mode == "minimum":
        out = snp.min(region, axis=axis, keepdims=True)
    else:
        if mode == "mean":
            out = snp.mean(region, axis=axis, keepdims=True)
        else:
            out = snp.median(region, axis=axis, keepdims=True)
        if not snp.issubdtype(dtype, snp.inexact):
            out = snp.round(out).astype(dtype)
    return out


def _read_by_call(node, resolve):
    """What the transforms read for a call `snp.pad(...)` (gast node): this module's pad when
    its mode is not the literal 'constant' (or other keywords of the modes are given), else
    None (the pad op and its rules)."""
    mode = node.args[2] if len(node.args) > 2 else None
    for k in node.keywords:
        if k.arg in ("stat_length", "end_values", "reflect_type") or k.arg is None:
            return pad
        if k.arg == "mode":
            mode = k.value
    if any(isinstance(a, gast.Starred) for a in node.args):
        return pad
    if mode is None or isinstance(mode, gast.Constant) and mode.value == "constant":
        return None
    return pad


library.pad.__secant_source_by_call__ = _read_by_call

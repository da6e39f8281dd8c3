"""Windowed primitives: conv_general_dilated (lax's general convolution) and reduce_window
(sum/max/min pooling), with the static planning both need (dimension numbers, padding strings),
shared by secant.lax, the derivative helpers and the batching helpers.

Conventions (as JAX's lax): `dimension_numbers` is canonical here, a ConvDimensionNumbers of
three tuples (lhs_spec, rhs_spec, out_spec): lhs_spec = (batch dim, feature dim, spatial dims...),
rhs_spec = (out-feature dim, in-feature dim, spatial dims...), out_spec like lhs_spec; `padding`
is a tuple of (low, high) pairs (negative values crop), one per spatial dimension.
"""
from collections import namedtuple

import numpy as np

from secant.backends import dtypes
from secant.backends.core import ShapedArray
from secant.backends.primitives.common import _check_kind, _same_dtypes, type_error
from secant.backends.primitives.structural import define, lowest, highest

ConvDimensionNumbers = namedtuple("ConvDimensionNumbers", "lhs_spec rhs_spec out_spec")


# --- static planning ------------------------------------------------------------------------------
def conv_general_permutations(dimension_numbers):
    """('NCHW', 'OIHW', 'NCHW')-style strings -> the three specs (spatial dims in rhs order)."""
    lhs_s, rhs_s, out_s = dimension_numbers
    for i, (spec, (a, b)) in enumerate(zip(dimension_numbers, (("N", "C"), ("O", "I"),
                                                               ("N", "C")))):
        if spec.count(a) != 1 or spec.count(b) != 1 or len(set(spec)) != len(spec):
            type_error(f"conv_general_dilated: dimension_numbers[{i}] must contain {a!r} and "
                       f"{b!r} exactly once and no repeated characters, got {spec!r}")
    if not set(lhs_s) - {"N", "C"} == set(rhs_s) - {"O", "I"} == set(out_s) - {"N", "C"}:
        type_error("conv_general_dilated: dimension_numbers must each have the same spatial "
                   f"characters, got {tuple(dimension_numbers)}")

    def perm(spec, pair):
        spatial = [i for i, c in enumerate(spec) if c not in pair]
        if spec is not rhs_s:
            spatial.sort(key=lambda i: rhs_s.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)
    return (perm(lhs_s, ("N", "C")), perm(rhs_s, ("O", "I")), perm(out_s, ("N", "C")))


def conv_dimension_numbers(ndim, dimension_numbers):
    """Any of JAX's forms (None, three strings, ConvDimensionNumbers or three int tuples) as a
    ConvDimensionNumbers of int tuples."""
    if dimension_numbers is None:
        iota = tuple(range(ndim))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (tuple, list)) or len(dimension_numbers) != 3:
        type_error("conv_general_dilated: dimension_numbers must be None, a "
                   "ConvDimensionNumbers or three strings like ('NCHW', 'OIHW', 'NCHW'), got "
                   f"{dimension_numbers!r}")
    if all(isinstance(s, str) for s in dimension_numbers):
        for s in dimension_numbers:
            if len(s) != ndim:
                type_error(f"conv_general_dilated: dimension_numbers {tuple(dimension_numbers)}"
                           f" need {ndim} characters each (the operands' rank)")
        return ConvDimensionNumbers(*conv_general_permutations(tuple(dimension_numbers)))
    specs = tuple(tuple(int(d) for d in s) for s in dimension_numbers)
    if any(sorted(s) != list(range(ndim)) for s in specs):
        type_error(f"conv_general_dilated: dimension_numbers {specs} must each be a permutation "
                   f"of range({ndim})")
    return ConvDimensionNumbers(*specs)


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """'SAME', 'SAME_LOWER' or 'VALID' as (low, high) pairs, as lax.padtype_to_pads."""
    kind = padding.upper()
    if kind == "VALID":
        return tuple((0, 0) for _ in in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        type_error(f"unknown padding {padding!r}: 'SAME', 'SAME_LOWER', 'VALID' or a sequence "
                   "of (low, high) pairs")
    out = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        total = max(0, (-(-n // s) - 1) * s + k - n)
        small, big = total // 2, total - total // 2
        out.append((small, big) if kind == "SAME" else (big, small))
    return tuple(out)


def _pairs(padding, n, name):
    try:
        pads = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        type_error(f"{name}: padding must be a string or a sequence of (low, high) pairs, got "
                   f"{padding!r}")
    if len(pads) != n:
        type_error(f"{name}: padding {pads} needs {n} (low, high) pairs")
    return pads


def conv_params(lhs_shape, rhs_shape, window_strides, padding, lhs_dilation=None,
                rhs_dilation=None, dimension_numbers=None):
    """lax.conv_general_dilated's arguments in canonical form: (window_strides, padding pairs,
    lhs_dilation, rhs_dilation, ConvDimensionNumbers)."""
    ndim = len(lhs_shape)
    if len(rhs_shape) != ndim:
        type_error(f"conv_general_dilated: lhs and rhs must have the same rank, got shapes "
                   f"{tuple(lhs_shape)} and {tuple(rhs_shape)}")
    dn = conv_dimension_numbers(ndim, dimension_numbers)
    n = ndim - 2
    strides = tuple(int(s) for s in window_strides)
    lhs_dilation = (1,) * n if lhs_dilation is None else tuple(int(d) for d in lhs_dilation)
    rhs_dilation = (1,) * n if rhs_dilation is None else tuple(int(d) for d in rhs_dilation)
    for what, v in (("window_strides", strides), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation)):
        if len(v) != n or any(d < 1 for d in v):
            type_error(f"conv_general_dilated: {what} {v} needs {n} positive integers")
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            type_error("conv_general_dilated: string padding is not implemented with "
                       "lhs_dilation; give explicit (low, high) pairs or use conv_transpose")
        window = [(rhs_shape[d] - 1) * r + 1 for d, r in zip(dn.rhs_spec[2:], rhs_dilation)]
        pads = padtype_to_pads([lhs_shape[d] for d in dn.lhs_spec[2:]], window, strides,
                               padding)
    else:
        pads = _pairs(padding, n, "conv_general_dilated")
    return strides, pads, lhs_dilation, rhs_dilation, dn


def _dilate(n, d):
    return 0 if n == 0 else 1 + d * (n - 1)


# --- conv_general_dilated -------------------------------------------------------------------------
def _conv_rule(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
               feature_group_count=1, batch_group_count=1, preferred_element_type=None):
    name = "conv_general_dilated"
    dt = _same_dtypes(name, (lhs, rhs))
    _check_kind(name, "num", dt)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        type_error(f"{name}: lhs and rhs need the same rank (at least 2), got shapes "
                   f"{lhs.shape} and {rhs.shape}")
    g, b = feature_group_count, batch_group_count
    if g < 1 or b < 1 or (g > 1 and b > 1):
        type_error(f"{name}: feature_group_count {g} and batch_group_count {b} must be positive,"
                   " and at most one of them above 1")
    c, i, o = lhs.shape[lhs_spec[1]], rhs.shape[rhs_spec[1]], rhs.shape[rhs_spec[0]]
    if c % g or c // g != i:
        type_error(f"{name}: lhs features ({c}) divided by feature_group_count ({g}) must equal "
                   f"the rhs input features ({i}); shapes {lhs.shape} and {rhs.shape}")
    if o % g or o % b or lhs.shape[lhs_spec[0]] % b:
        type_error(f"{name}: the rhs output features ({o}) and (for batch groups) the lhs batch "
                   f"({lhs.shape[lhs_spec[0]]}) must be multiples of the group count")
    shape = [0] * lhs.ndim
    shape[out_spec[0]] = lhs.shape[lhs_spec[0]] // b
    shape[out_spec[1]] = o
    for k, (ld, rd, od) in enumerate(zip(lhs_spec[2:], rhs_spec[2:], out_spec[2:])):
        lo, hi = padding[k]
        size = _dilate(lhs.shape[ld], lhs_dilation[k]) + lo + hi
        window = _dilate(rhs.shape[rd], rhs_dilation[k])
        if size < 0:
            type_error(f"{name}: negative padding {padding[k]} is larger than the dimension")
        shape[od] = 0 if size < window or window == 0 else (size - window) // window_strides[k] + 1
    out_dtype = dt if preferred_element_type is None else np.dtype(preferred_element_type)
    return ShapedArray(shape, out_dtype, lhs.weak_type and rhs.weak_type)


def _dilate_pad(x, axes, dilation, padding, value=0):
    """x dilated (value between elements) and padded (negative: cropped) along `axes`."""
    for ax, d, (lo, hi) in zip(axes, dilation, padding):
        n = x.shape[ax]
        if d > 1 and n > 0:
            shape = list(x.shape)
            shape[ax] = _dilate(n, d)
            y = np.full(shape, value, x.dtype)
            index = [slice(None)] * x.ndim
            index[ax] = slice(None, None, d)
            y[tuple(index)] = x
            x = y
        widths = [(0, 0)] * x.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths, constant_values=value)
        index = [slice(None)] * x.ndim
        index[ax] = slice(max(-lo, 0), x.shape[ax] - max(-hi, 0))
        x = x[tuple(index)]
    return x


def _windows(x, axes, window, strides, dilation):
    """Every window of x along `axes` (sizes `window`, elements `dilation` apart, windows
    `strides` apart), the window offsets appended as new trailing axes."""
    spans = [_dilate(k, d) for k, d in zip(window, dilation)]
    out = np.lib.stride_tricks.sliding_window_view(x, spans, axis=axes)
    index = [slice(None)] * x.ndim
    for ax, s in zip(axes, strides):
        index[ax] = slice(None, None, s)
    index += [slice(None, None, d) for d in dilation]
    return out[tuple(index)]


def _conv(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
          feature_group_count=1, batch_group_count=1, preferred_element_type=None):
    """Canonical layouts (N, C, spatial) x (O, I, spatial), windows of the dilated, padded
    lhs, one einsum per group."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    compute = dtypes.float32 if out_dtype in (dtypes.bfloat16, dtypes.float16) else out_dtype
    x = np.transpose(lhs, lhs_spec).astype(compute, copy=False)
    w = np.transpose(rhs, rhs_spec).astype(compute, copy=False)
    n_sp = x.ndim - 2
    spatial = tuple(range(2, 2 + n_sp))
    x = _dilate_pad(x, spatial, lhs_dilation, padding)
    out_sizes = [0 if x.shape[2 + k] < _dilate(w.shape[2 + k], rhs_dilation[k])
                 else (x.shape[2 + k] - _dilate(w.shape[2 + k], rhs_dilation[k]))
                 // window_strides[k] + 1 for k in range(n_sp)]
    g, b = feature_group_count, batch_group_count
    n_out = x.shape[0] // b
    out = np.zeros((n_out, w.shape[0]) + tuple(out_sizes), compute)
    if out.size and x.shape[1] and all(w.shape[2:]):
        wins = _windows(x, spatial, w.shape[2:], window_strides, rhs_dilation) if n_sp else x
        letters = "defghijklm"[:n_sp]   # not n, c or o
        spec = f"nc{letters.upper()}{letters},oc{letters}->no{letters.upper()}"
        groups = max(g, b)
        og = w.shape[0] // groups
        cg = x.shape[1] // g
        for k in range(groups):
            ws = w[k * og:(k + 1) * og]
            if g > 1:
                xs = wins[:, k * cg:(k + 1) * cg]
            else:
                xs = wins[k * n_out:(k + 1) * n_out] if b > 1 else wins
            out[:, k * og:(k + 1) * og] = np.einsum(spec, xs, ws)
    return np.transpose(out, np.argsort(out_spec)).astype(out_dtype, copy=False)


conv_general_dilated_p = define("conv_general_dilated", _conv_rule, _conv)


# --- reduce_window --------------------------------------------------------------------------------
REDUCE_WINDOW_KINDS = ("sum", "max", "min")


def _reduce_window_rule(x, kind, window_dimensions, window_strides, padding,
                        base_dilation, window_dilation):
    name = "reduce_window"
    if kind not in REDUCE_WINDOW_KINDS:
        type_error(f"{name}: the reduction must be one of {REDUCE_WINDOW_KINDS}, got {kind!r}")
    _check_kind(name, "num" if kind == "sum" else "any", x.dtype)
    for what, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                    ("base_dilation", base_dilation), ("window_dilation", window_dilation),
                    ("padding", padding)):
        if len(v) != x.ndim:
            type_error(f"{name}: {what} {tuple(v)} needs one entry per dimension of shape "
                       f"{x.shape}")
    shape = []
    for n, k, s, (lo, hi), bd, wd in zip(x.shape, window_dimensions, window_strides, padding,
                                         base_dilation, window_dilation):
        if k < 1 or s < 1 or bd < 1 or wd < 1:
            type_error(f"{name}: window sizes, strides and dilations must be positive")
        size = _dilate(n, bd) + lo + hi
        window = _dilate(k, wd)
        shape.append(0 if size < window else (size - window) // s + 1)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _identity(kind, dtype):
    return {"sum": 0, "max": lowest(dtype), "min": highest(dtype)}[kind]


def _reduce_window(x, kind, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation):
    init = _identity(kind, x.dtype)
    axes = tuple(range(x.ndim))
    y = _dilate_pad(x, axes, base_dilation, padding, init)
    if any(y.shape[a] < _dilate(k, d) for a, k, d in zip(axes, window_dimensions,
                                                         window_dilation)) or y.size == 0:
        shape = _reduce_window_rule(ShapedArray(x.shape, x.dtype), kind, window_dimensions,
                                    window_strides, padding, base_dilation,
                                    window_dilation).shape
        return np.full(shape, init, x.dtype)
    wins = _windows(y, axes, window_dimensions, window_strides, window_dilation)
    inner = tuple(range(x.ndim, 2 * x.ndim))
    reduce = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    return reduce(wins, axis=inner).astype(x.dtype, copy=False)


# (differentiated and batched through the source of lax.reduce_window, secant/lax_windows.py,
# never as a primitive: no op names it)
reduce_window_p = define("reduce_window", _reduce_window_rule, _reduce_window,
                         differentiable=False)


def reduce_window_shape(shape, window_dimensions, window_strides, padding):
    return tuple(0 if n + lo + hi < k else (n + lo + hi - k) // s + 1
                 for n, k, s, (lo, hi) in zip(shape, window_dimensions, window_strides, padding))


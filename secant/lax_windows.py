"""secant.lax's windowed operations: conv_general_dilated (one primitive, lowered to
stablehlo.convolution, with derivative and batching rules: ad/conv_helpers.py,
batching/conv_helpers.py) and reduce_window (sum/max/min pooling: one primitive lowered to
stablehlo.reduce_window, differentiated and batched through its source in
secant/lax_windows_sources.py). conv, conv_with_general_padding and conv_transpose are written
with conv_general_dilated in that module too."""
import numpy as np

from secant.backends import dtypes
from secant.backends.errors import SecantTypeError, SecantValueError, where
from secant.backends.primitives import conv as cv
from secant.backends.primitives.conv import (ConvDimensionNumbers,  # noqa: F401 (lax API)
                                             conv_general_permutations, padtype_to_pads)
from secant.numpy.conversion import dtype_weak, ensure_array


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """jax.lax.conv_dimension_numbers: `dimension_numbers` (None, three strings like ('NHWC',
    'HWIO', 'NHWC') or a ConvDimensionNumbers) as a ConvDimensionNumbers of int tuples, for
    operands of these shapes."""
    if len(lhs_shape) != len(rhs_shape):
        raise SecantTypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                              f"{len(lhs_shape)} and {len(rhs_shape)}{where()}")
    return cv.conv_dimension_numbers(len(lhs_shape), dimension_numbers)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         precision=None, preferred_element_type=None):
    """General n-d convolution (lax's): `padding` 'SAME'/'SAME_LOWER'/'VALID' or (low, high)
    pairs; `dimension_numbers` None (NCHW/OIHW), three strings like ('NHWC', 'HWIO', 'NHWC')
    or a ConvDimensionNumbers. `precision` is accepted and ignored."""
    lhs, rhs = ensure_array(lhs), ensure_array(rhs)
    if dtype_weak(lhs)[0] != dtype_weak(rhs)[0]:
        raise SecantTypeError("lax.conv_general_dilated requires arguments of the same dtype, "
                              f"got {lhs.dtype.name} and {rhs.dtype.name}{where()}")
    strides, pads, lhs_d, rhs_d, dn = cv.conv_params(
        lhs.shape, rhs.shape, window_strides, padding, lhs_dilation, rhs_dilation,
        dimension_numbers)
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize_dtype(preferred_element_type)
    return cv.conv_general_dilated_p.bind(
        lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=lhs_d,
        rhs_dilation=rhs_d, dimension_numbers=dn,
        feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count),
        preferred_element_type=preferred_element_type)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    strides, pads, lhs_d, rhs_d, dn = cv.conv_params(lhs_shape, rhs_shape, window_strides,
                                                     padding, None, None, dimension_numbers)
    from secant.backends.core import ShapedArray
    aval = cv._conv_rule(ShapedArray(lhs_shape, np.float32), ShapedArray(rhs_shape, np.float32),
                         strides, pads, lhs_d, rhs_d, dn)
    return tuple(aval.shape)


# --- reduce_window --------------------------------------------------------------------------------
def reduce_window_kind(computation):
    """'sum', 'max' or 'min' for lax.add/max/min (or numpy's add/maximum/minimum)."""
    import secant.numpy as snp
    from secant import lax
    for kind, fns in (("sum", (lax.add, snp.add, np.add)),
                      ("max", (lax.max, snp.maximum, np.maximum)),
                      ("min", (lax.min, snp.minimum, np.minimum))):
        if any(computation is f for f in fns):
            return kind
    raise SecantValueError("lax.reduce_window: the computation must be lax.add, lax.max or "
                           f"lax.min (sum, max or min pooling), got {computation!r}{where()}")


def reduce_window_params(shape, computation, window_dimensions, window_strides, padding,
                         base_dilation=None, window_dilation=None):
    """(kind, window, strides, padding pairs, base_dilation, window_dilation), canonical."""
    n = len(shape)
    kind = reduce_window_kind(computation)
    window = tuple(int(k) for k in window_dimensions)
    strides = tuple(int(s) for s in window_strides)
    base = (1,) * n if base_dilation is None else tuple(int(d) for d in base_dilation)
    wdil = (1,) * n if window_dilation is None else tuple(int(d) for d in window_dilation)
    if len(window) != n or len(strides) != n:
        raise SecantTypeError(f"lax.reduce_window: window_dimensions {window} and "
                              f"window_strides {strides} need one entry per dimension of "
                              f"shape {tuple(shape)}{where()}")
    if isinstance(padding, str):
        spans = [cv._dilate(k, d) for k, d in zip(window, wdil)]
        pads = padtype_to_pads([cv._dilate(s, b) for s, b in zip(shape, base)], spans, strides,
                               padding)
    else:
        pads = cv._pairs(padding, n, "lax.reduce_window")
    return kind, window, strides, pads, base, wdil


def _check_init(kind, init_value, dtype):
    """The init value must be the reduction's identity (0, -inf, +inf) or, for max/min, any
    value (folded in afterwards)."""
    value = np.asarray(init_value)
    if value.ndim:
        raise SecantTypeError("lax.reduce_window: init_value must be a scalar" + where())
    if kind == "sum":
        try:
            ok = float(value) == 0
        except TypeError:     # a traced value
            ok = False
        if not ok:
            raise SecantValueError("lax.reduce_window: a sum needs init_value 0 (got "
                                   f"{init_value!r}); add a constant to the result"
                                   + where())
        return None
    try:
        identity = cv._identity(kind, dtype)
        return None if float(value) == float(identity) else init_value
    except TypeError:
        return init_value


def reduce_window(operand, init_value, computation, window_dimensions, window_strides,
                  padding, base_dilation=None, window_dilation=None):
    """lax.reduce_window for computation lax.add (init 0), lax.max or lax.min: the reduction of
    every window (sizes window_dimensions, window_strides apart, the operand padded with
    init_value by `padding`: 'SAME', 'VALID' or (low, high) pairs)."""
    from secant import lax
    operand = ensure_array(operand)
    kind, window, strides, pads, base, wdil = reduce_window_params(
        operand.shape, computation, window_dimensions, window_strides, padding, base_dilation,
        window_dilation)
    extra = _check_init(kind, init_value, operand.dtype)
    out = cv.reduce_window_p.bind(operand, kind=kind, window_dimensions=window,
                                  window_strides=strides, padding=pads, base_dilation=base,
                                  window_dilation=wdil)
    if extra is not None:
        out = (lax.max if kind == "max" else lax.min)(out, extra)
    return out

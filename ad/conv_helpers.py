"""Derivative helpers of lax.conv_general_dilated (generated code calls them by name: the rules in
ad/vjp_rules.py). A convolution is bilinear, and its transposes are convolutions (JAX's rules):
- lhs: the cotangent convolved with the spatially reversed kernel, its feature axes swapped,
  lhs dilated by the forward strides and padded so each input position meets every output it fed;
- rhs: the input convolved with the cotangent as a kernel (batch and feature axes swapped),
  the forward strides becoming the kernel's dilation.
Feature groups become batch groups in the rhs transpose and vice versa. Written with secant.lax
ops in a by-source module, so derivatives of these derivatives follow from the same rules; the
static planning is `constant`."""
import numpy as np

from secant import lax
from secant.ad.helpers import constant
from secant.backends.primitives import conv as cv

__secant_by_source__ = True      # transforms read this module like the other helpers


@constant
def _dilated(sizes, dilation):
    return [0 if n == 0 else (n - 1) * d + 1 for n, d in zip(sizes, dilation)]


@constant
def _axis_out_of(shape, src, size1):
    """The shape with axis src split into (size1, rest)."""
    shape = list(shape)
    return tuple(shape[:src] + [size1, shape[src] // size1] + shape[src + 1:])


@constant
def _axis_into(shape, src, dst):
    """(permutation, shape): axis src moved next to (before) axis dst and merged into it (dst
    counted without src), as JAX's _reshape_axis_into."""
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [shape[i] for i in range(len(shape)) if i != src]
    new_shape[dst] *= shape[src]
    return tuple(perm), tuple(new_shape)


def reshape_axis_into(src, dst, x):
    perm, shape = _axis_into(np.shape(x), src, dst)
    return lax.reshape(lax.transpose(x, perm), shape)


def reshape_axis_out_of(src, size1, x):
    return lax.reshape(x, _axis_out_of(np.shape(x), src, size1))


@constant
def _lhs_plan(lhs_shape, rhs_shape, g_shape, window_strides, padding, lhs_dilation,
              rhs_dilation, dimension_numbers):
    strides, pads, lhs_d, rhs_d, dn = cv.conv_params(lhs_shape, rhs_shape, window_strides,
                                                     padding, lhs_dilation, rhs_dilation,
                                                     dimension_numbers)
    lhs_spec, rhs_spec, out_spec = dn
    in_sizes = _dilated([lhs_shape[d] for d in lhs_spec[2:]], lhs_d)
    k_sizes = _dilated([rhs_shape[d] for d in rhs_spec[2:]], rhs_d)
    out_sizes = _dilated([g_shape[d] for d in out_spec[2:]], strides)
    before = [k - lo - 1 for k, (lo, _) in zip(k_sizes, pads)]
    after = [i + k - 1 - o - b for i, k, o, b in zip(in_sizes, k_sizes, out_sizes, before)]
    trans_dn = cv.ConvDimensionNumbers(out_spec, (rhs_spec[1], rhs_spec[0]) + rhs_spec[2:],
                                       lhs_spec)
    return dn, strides, tuple(zip(before, after)), lhs_d, rhs_d, trans_dn


def conv_grad_lhs(g, lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                  dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                  precision=None, preferred_element_type=None):
    """Cotangent of lhs in lax.conv_general_dilated(lhs, rhs, ...)."""
    dn, strides, pads, lhs_d, rhs_d, trans_dn = _lhs_plan(
        np.shape(lhs), np.shape(rhs), np.shape(g), window_strides, padding, lhs_dilation,
        rhs_dilation, dimension_numbers)
    groups = max(feature_group_count, batch_group_count)
    if groups > 1:
        # the group axis moves from the kernel's output features to its input features
        rhs = reshape_axis_out_of(dn.rhs_spec[0], groups, rhs)
        rhs = reshape_axis_into(dn.rhs_spec[0], dn.rhs_spec[1], rhs)
    kernel = lax.rev(rhs, dn.rhs_spec[2:]).astype(g.dtype)
    out = lax.conv_general_dilated(g, kernel, lhs_d, pads, strides, rhs_d, trans_dn, groups)
    if batch_group_count > 1:
        out = reshape_axis_out_of(dn.lhs_spec[1], batch_group_count, out)
        out = reshape_axis_into(dn.lhs_spec[1], dn.lhs_spec[0], out)
    return out.astype(lhs.dtype)


@constant
def _rhs_plan(lhs_shape, rhs_shape, g_shape, window_strides, padding, lhs_dilation,
              rhs_dilation, dimension_numbers):
    strides, pads, lhs_d, rhs_d, dn = cv.conv_params(lhs_shape, rhs_shape, window_strides,
                                                     padding, lhs_dilation, rhs_dilation,
                                                     dimension_numbers)
    lhs_spec, rhs_spec, out_spec = dn
    in_sizes = _dilated([lhs_shape[d] for d in lhs_spec[2:]], lhs_d)
    k_sizes = _dilated([rhs_shape[d] for d in rhs_spec[2:]], rhs_d)
    out_sizes = _dilated([g_shape[d] for d in out_spec[2:]], strides)
    lows = [lo for lo, _ in pads]
    highs = [o - i + k - lo - 1 for o, i, k, lo in zip(out_sizes, in_sizes, k_sizes, lows)]

    def swap(spec):
        return (spec[1], spec[0]) + tuple(spec[2:])
    trans_dn = cv.ConvDimensionNumbers(swap(lhs_spec), swap(out_spec), swap(rhs_spec))
    return strides, tuple(zip(lows, highs)), lhs_d, rhs_d, trans_dn


def conv_grad_rhs(g, lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                  dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                  precision=None, preferred_element_type=None):
    """Cotangent of rhs in lax.conv_general_dilated(lhs, rhs, ...)."""
    strides, pads, lhs_d, rhs_d, trans_dn = _rhs_plan(
        np.shape(lhs), np.shape(rhs), np.shape(g), window_strides, padding, lhs_dilation,
        rhs_dilation, dimension_numbers)
    out = lax.conv_general_dilated(lhs.astype(g.dtype), g, rhs_d, pads, lhs_d, strides,
                                   trans_dn, batch_group_count, feature_group_count)
    return out.astype(rhs.dtype)


NAMES = ("conv_grad_lhs", "conv_grad_rhs")

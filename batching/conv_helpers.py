"""Batching of lax.conv_general_dilated (batching/rules.py calls conv_batched by name): the batch
axis (axis 0 of a batched operand) is folded into the convolution, as JAX's rule does: into the
lhs batch for a batched lhs, into the kernel's output features for a batched rhs, and, when both
are, into feature groups (each example's input meets only its own kernel). Written with
secant.lax ops in a by-source module, so batched code can be transformed again."""
import numpy as np

from secant import lax
from secant.ad.conv_helpers import reshape_axis_into, reshape_axis_out_of
from secant.backends.errors import SecantError, where  # noqa: F401
from secant.backends.primitives import conv as cv

__secant_by_source__ = True      # transforms read this module like the other helpers


def _constant(fn):
    fn.__secant_constant__ = True
    return fn


@_constant
def _plan(lhs_shape, rhs_shape, window_strides, padding, lhs_dilation, rhs_dilation,
          dimension_numbers):
    return cv.conv_params(lhs_shape, rhs_shape, window_strides, padding, lhs_dilation,
                          rhs_dilation, dimension_numbers)


def conv_batched(lhs, rhs, lhs_batched, rhs_batched, window_strides, padding, lhs_dilation=None,
                 rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                 batch_group_count=1, precision=None, preferred_element_type=None):
    """lax.conv_general_dilated of each example, batch axis first in and out."""
    lhs_one = np.shape(lhs)[1:] if lhs_batched else np.shape(lhs)
    rhs_one = np.shape(rhs)[1:] if rhs_batched else np.shape(rhs)
    strides, pads, lhs_d, rhs_d, dn = _plan(lhs_one, rhs_one, window_strides, padding,
                                            lhs_dilation, rhs_dilation, dimension_numbers)
    lhs_spec, rhs_spec, out_spec = dn
    size = np.shape(lhs)[0] if lhs_batched else np.shape(rhs)[0]
    groups = feature_group_count
    batch_groups = batch_group_count
    if lhs_batched and rhs_batched:
        if batch_group_count > 1:
            lhs = reshape_axis_into(0, lhs_spec[0], lhs)
            batch_groups = batch_group_count * size
        else:
            lhs = reshape_axis_into(0, lhs_spec[1], lhs)
            groups = feature_group_count * size
        rhs = reshape_axis_into(0, rhs_spec[0], rhs)
        out = lax.conv_general_dilated(lhs, rhs, strides, pads, lhs_d, rhs_d, dn, groups,
                                       batch_groups, preferred_element_type=preferred_element_type)
        out = _batch_first(reshape_axis_out_of(out_spec[1], size, out), out_spec[1])
    elif lhs_batched:
        if batch_group_count == 1:
            lhs = reshape_axis_into(0, lhs_spec[0], lhs)
        else:
            # the batch groups stay outermost: (groups, examples, rest) folded together
            lhs = reshape_axis_out_of(lhs_spec[0] + 1, batch_group_count, lhs)
            lhs = reshape_axis_into(0, lhs_spec[0] + 1, lhs)
            lhs = reshape_axis_into(lhs_spec[0], lhs_spec[0], lhs)
        out = lax.conv_general_dilated(lhs, rhs, strides, pads, lhs_d, rhs_d, dn, groups,
                                       batch_groups, preferred_element_type=preferred_element_type)
        out = _batch_first(reshape_axis_out_of(out_spec[0], size, out), out_spec[0])
    else:
        if feature_group_count == 1 and batch_group_count == 1:
            rhs = reshape_axis_into(0, rhs_spec[0], rhs)
            out = lax.conv_general_dilated(lhs, rhs, strides, pads, lhs_d, rhs_d, dn, groups,
                                           batch_groups,
                                           preferred_element_type=preferred_element_type)
            out = _batch_first(reshape_axis_out_of(out_spec[1], size, out), out_spec[1])
        else:
            count = max(feature_group_count, batch_group_count)
            rhs = reshape_axis_out_of(rhs_spec[0] + 1, count, rhs)
            rhs = reshape_axis_into(0, rhs_spec[0] + 1, rhs)
            rhs = reshape_axis_into(rhs_spec[0], rhs_spec[0], rhs)
            out = lax.conv_general_dilated(lhs, rhs, strides, pads, lhs_d, rhs_d, dn, groups,
                                           batch_groups,
                                           preferred_element_type=preferred_element_type)
            out = reshape_axis_out_of(out_spec[1], count, out)
            out = reshape_axis_out_of(out_spec[1] + 1, size, out)
            out = _batch_first(reshape_axis_into(out_spec[1], out_spec[1] + 1, out),
                               out_spec[1])
    return out


@_constant
def _to_front(ndim, axis):
    return (axis,) + tuple(i for i in range(ndim) if i != axis)


def _batch_first(x, axis):
    return lax.transpose(x, _to_front(np.ndim(x), axis))


NAMES = ("conv_batched",)

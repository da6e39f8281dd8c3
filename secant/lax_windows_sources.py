"""Sources the transforms read (a by-source module, secant/numpy/composite.py): lax.conv,
conv_with_general_padding and conv_transpose are conv_general_dilated with other arguments, and
lax.reduce_window is differentiated and batched through a composition of ops: the operand padded
(and dilated) with the reduction's identity, then one strided slice per window offset, combined
with +, maximum or minimum. Its derivative is exact away from ties; at a tie within a window max
and min split the cotangent (maximum's rule) where JAX gives it all to one element."""
import itertools

import numpy as np

import secant.numpy as snp
from secant import lax
from secant.backends.primitives import conv as _cv
from secant.numpy.composite import source_for
from secant.lax_windows import conv_general_dilated, reduce_window_params
from secant.lax_windows import reduce_window as library_reduce_window

__secant_by_source__ = True      # transforms read this module like user code


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """conv_general_dilated with NCHW / OIHW layouts and no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation,
                                preferred_element_type=preferred_element_type)


def _default_transpose_dimension_numbers(ndim):
    return {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
            5: ("NHWDC", "HWDIO", "NHWDC")}[ndim]


def _conv_transpose_padding(k, s, padding):
    """(before, after) padding of one dimension of a transposed convolution (JAX's)."""
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else int(np.ceil(pad_len / 2))
    elif padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    else:
        pads = tuple(k - p - 1 for p in padding)
        pad_a = pads[0]
        pad_len = sum(pads)
    return pad_a, pad_len - pad_a


def _conv_transpose_pads(rhs_shape, dn, strides, padding, rhs_dilation, use_consistent_padding):
    kernel = [rhs_shape[d] for d in dn.rhs_spec[2:]]
    if rhs_dilation is None:
        rhs_dilation = (1,) * len(kernel)
    if use_consistent_padding or isinstance(padding, str):
        each = [padding] * len(strides) if isinstance(padding, str) else list(padding)
        pads = tuple(_conv_transpose_padding((k - 1) * r + 1, s, tuple(p) if not isinstance(
            p, str) else p) for k, r, s, p in zip(kernel, rhs_dilation, strides, each))
    else:
        pads = tuple(tuple(p) for p in padding)
    return pads


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """The transposed ("fractionally strided") convolution of lax.conv_transpose: lhs dilated
    by `strides`; layouts default to NHWC / HWIO (TensorFlow's); transpose_kernel flips the
    kernel's spatial axes and swaps its feature axes (the gradient of a forward conv)."""
    ndim = np.ndim(lhs)
    if dimension_numbers is None:
        dimension_numbers = _default_transpose_dimension_numbers(ndim)
    dn = _cv.conv_dimension_numbers(ndim, dimension_numbers)
    pads = _conv_transpose_pads(np.shape(rhs), dn, strides, padding, rhs_dilation,
                                use_consistent_padding)
    if transpose_kernel:
        rhs = snp.swapaxes(lax.rev(rhs, dn.rhs_spec[2:]), dn.rhs_spec[0], dn.rhs_spec[1])
    return conv_general_dilated(lhs, rhs, (1,) * (ndim - 2), pads, strides, rhs_dilation, dn,
                                preferred_element_type=preferred_element_type)


# --- reduce_window ---------------------------------------------------------------------------------
def _window_slices(shape, window, strides, dilation):
    """(start, limit) of the strided slice that reads window offset `k` of every window, for
    each offset of the window (in row-major order)."""
    out_shape = _cv.reduce_window_shape(shape, [(k - 1) * d + 1 for k, d in
                                                zip(window, dilation)],
                                        strides, [(0, 0)] * len(shape))
    out = []
    for offset in itertools.product(*[range(k) for k in window]):
        start = tuple(o * d for o, d in zip(offset, dilation))
        limit = tuple(s + (n - 1) * st + 1 for s, n, st in zip(start, out_shape, strides))
        out.append((start, limit))
    return out


def _padded_shape(shape, pads, base):
    return tuple((n - 1) * b + 1 + lo + hi if n else lo + hi
                 for n, (lo, hi), b in zip(shape, pads, base))


@source_for(library_reduce_window)
def reduce_window(operand, init_value, computation, window_dimensions, window_strides, padding,
                  base_dilation=None, window_dilation=None):
    kind, window, strides, pads, base, wdil = reduce_window_params(
        np.shape(operand), computation, window_dimensions, window_strides, padding,
        base_dilation, window_dilation)
    identity = _cv._identity(kind, snp.result_type(operand))
    padded = lax.pad(operand, snp.asarray(identity, snp.result_type(operand)),
                     tuple((lo, hi, b - 1) for (lo, hi), b in zip(pads, base)))
    slices = _window_slices(_padded_shape(np.shape(operand), pads, base), window, strides, wdil)
    out = lax.slice(padded, slices[0][0], slices[0][1], strides)
    for start, limit in slices[1:]:
        piece = lax.slice(padded, start, limit, strides)
        if kind == "sum":
            out = out + piece
        elif kind == "max":
            out = snp.maximum(out, piece)
        else:
            out = snp.minimum(out, piece)
    if kind != "sum":
        out = snp.maximum(out, init_value) if kind == "max" else snp.minimum(out, init_value)
    return out

"""More of jax.lax (names bench/jax_api_coverage.txt found missing), written with secant's ops
and read by the transforms as source (`__secant_by_source__`): mulhi, reduce_xor, scatter_sub,
approx_max_k / approx_min_k (exact: lax.top_k, which meets any recall target), index_take,
the shape helpers conv_shape_tuple, conv_transpose_shape_tuple and reduce_window_shape_tuple,
the single-device no-ops with_sharding_constraint, composite and platform_dependent, and
dtype.
secant/__init__.py adds them to secant.lax."""
import numpy as np

import secant.numpy as snp
from secant import lax
from secant.backends import runtime
from secant.backends.errors import SecantTypeError, SecantValueError, where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["mulhi", "reduce_xor", "scatter_sub", "approx_max_k", "approx_min_k", "index_take",
           "conv_general_dilated_patches",
           "conv_shape_tuple", "conv_transpose_shape_tuple", "reduce_window_shape_tuple",
           "with_sharding_constraint", "composite", "platform_dependent", "dtype",
           "conv_general_dilated_local"]


def dtype(x):
    """The dtype x has as a secant array (jax.lax.dtype: Python scalars at the default width)."""
    if isinstance(x, (list, tuple)):
        raise SecantTypeError(f"Cannot determine dtype of {x}{where()}")
    return snp.asarray(x).dtype


dtype.__secant_static_query__ = True        # (a dtype, whatever x's values)


# --- integer arithmetic ------------------------------------------------------------------------
def _unsigned_mulhi(a, b, bits):
    """The high `bits` bits of a * b for unsigned a, b, in `bits`-bit arithmetic (halves)."""
    half = bits // 2
    mask = (1 << half) - 1
    a_lo, a_hi = lax.bitwise_and(a, mask), lax.shift_right_logical(a, half)
    b_lo, b_hi = lax.bitwise_and(b, mask), lax.shift_right_logical(b, half)
    lo_lo = a_lo * b_lo
    hi_lo = a_hi * b_lo
    cross = (lax.shift_right_logical(lo_lo, half) + lax.bitwise_and(hi_lo, mask)
             + a_lo * b_hi)
    return (a_hi * b_hi + lax.shift_right_logical(hi_lo, half)
            + lax.shift_right_logical(cross, half))


def mulhi(x, y, /):
    """The high N bits of the 2N-bit product of N-bit integers x and y (of one dtype)."""
    x, y = snp.asarray(x), snp.asarray(y)
    if x.dtype != y.dtype or x.dtype.kind not in "iu":
        raise SecantTypeError("mulhi requires integer arguments of one dtype, got "
                              f"{x.dtype.name} and {y.dtype.name}" + where())
    shape = snp.broadcast_shapes(snp.shape(x), snp.shape(y))
    x, y = snp.broadcast_to(x, shape), snp.broadcast_to(y, shape)
    bits = x.dtype.itemsize * 8
    if x.dtype.kind == "u":
        return _unsigned_mulhi(x, y, bits)
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    ux = lax.bitcast_convert_type(x, unsigned)
    uy = lax.bitcast_convert_type(y, unsigned)
    # signed from unsigned: minus y where x < 0 and minus x where y < 0 (mod 2^N)
    high = _unsigned_mulhi(ux, uy, bits)
    high = high - snp.where(x < 0, uy, snp.zeros_like(uy)) - snp.where(y < 0, ux, snp.zeros_like(ux))
    return lax.bitcast_convert_type(high, x.dtype)


def reduce_xor(operand, axes):
    """The bitwise XOR of operand's elements over `axes` (integers or booleans)."""
    operand = snp.asarray(operand)
    if operand.dtype.kind not in "iub":
        raise SecantTypeError(f"reduce_xor requires integer or boolean arguments, got "
                              f"{operand.dtype.name}" + where())
    zero = np.zeros((), operand.dtype)
    return lax.reduce(operand, zero, lax.bitwise_xor, tuple(axes))


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
    """lax.scatter_add of the negated updates."""
    return lax.scatter_add(operand, scatter_indices, -snp.asarray(updates), dimension_numbers,
                           indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode)


# --- top k ---------------------------------------------------------------------------------------
def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """(values, indices) of the k largest entries along `reduction_dimension`: the exact
    top k (recall 1, which meets every recall_target; aggregate_to_topk=False is the same on
    one device)."""
    return lax.top_k(operand, k, axis=reduction_dimension)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """(values, indices) of the k smallest entries along `reduction_dimension` (exact)."""
    values, indices = lax.top_k(-snp.asarray(operand), k, axis=reduction_dimension)
    return -values, indices


def index_take(src, idxs, axes):
    """src at the points idxs[0][i], idxs[1][i], ... of `axes` (each index modulo its axis'
    size, as JAX's): shape (len(idxs[0]), *the other axes of src)."""
    src = snp.asarray(src)
    axes = tuple(int(a) for a in axes)
    if len(idxs) != len(axes):
        raise SecantValueError(f"index_take: {len(idxs)} index arrays for {len(axes)} axes"
                               + where())
    front = snp.moveaxis(src, axes, tuple(range(len(axes))))
    # one index into the taken axes flattened (a tuple of index arrays built by a generator
    # reached grad's getitem rule as one stacked array)
    flat = 0
    for index, axis in zip(idxs, axes):
        flat = flat * src.shape[axis] + snp.asarray(index) % src.shape[axis]
    return snp.reshape(front, (-1,) + front.shape[len(axes):])[flat]


# --- image patches -------------------------------------------------------------------------------
def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The patches conv_general_dilated's windows see, flattened into the output's feature
    dimension (ordered channel first, then the window's positions in the rhs spec's spatial
    order), by a grouped convolution with an identity kernel, as JAX's."""
    lhs = snp.asarray(lhs)
    filter_shape = tuple(int(d) for d in filter_shape)
    dn = lax.conv_dimension_numbers(lhs.shape, lhs.shape, dimension_numbers)
    spatial_size = int(np.prod(filter_shape))
    channels = lhs.shape[dn.lhs_spec[1]]
    eye = snp.eye(spatial_size, dtype=lhs.dtype)
    rhs = snp.reshape(snp.broadcast_to(eye, (channels, spatial_size, spatial_size)),
                      (channels * spatial_size, 1) + filter_shape)
    rhs = snp.moveaxis(rhs, (0, 1), (dn.rhs_spec[0], dn.rhs_spec[1]))
    return lax.conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                    rhs_dilation=rhs_dilation, dimension_numbers=dn,
                                    feature_group_count=channels,
                                    preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """The unshared (locally connected) convolution: a separate kernel at each output
    position, rhs's spatial axes being the output's and its I axis the input channels fused
    with the window positions (as conv_general_dilated_patches orders them), as JAX's: the
    patches contracted with rhs, one dot per output position."""
    lhs = snp.asarray(lhs)
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers)
    dn = lax.conv_dimension_numbers(lhs.shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    lhs_spec, rhs_spec, out_spec = dn
    lhs_batch = list(out_spec[2:])
    rhs_batch = list(rhs_spec[2:])
    order = sorted(range(len(rhs_batch)), key=lambda i: lhs_batch[i])
    rhs_batch = [rhs_batch[i] for i in order]
    lhs_batch = sorted(lhs_batch)
    out = lax.dot_general(patches, rhs, (([out_spec[1]], [rhs_spec[1]]), (lhs_batch, rhs_batch)))
    return snp.moveaxis(out, (-2, -1), (out_spec[0], out_spec[1]))


# --- shapes ------------------------------------------------------------------------------------------
def _stride_dim(d, window, stride):
    return max(0, (d - window) // stride + 1) if d >= window else 0


def _pads(in_shape, window, strides, padding):
    if isinstance(padding, str):
        return lax.padtype_to_pads(in_shape, window, strides, padding)
    return [tuple(p) for p in padding]


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The output shape (N, O, spatial...) of a convolution in canonical (NCHW, OIHW) order."""
    pads = _pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError(f"Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
    space = tuple(_stride_dim(d, w, s) for d, w, s in zip(padded, rhs_shape[2:], strides))
    first = lhs_shape[0] // batch_group_count if batch_group_count > 1 else lhs_shape[0]
    return (first, rhs_shape[0]) + space


def _permutations(dimension_numbers, ndim):
    dn = lax.conv_dimension_numbers((1,) * ndim, (1,) * ndim, dimension_numbers)
    return dn.lhs_spec, dn.rhs_spec, dn.out_spec


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    """The output shape of lax.conv_transpose (JAX's helper)."""
    lhs_perm, rhs_perm, out_perm = _permutations(dimension_numbers, len(lhs_shape))
    lhs = [lhs_shape[i] for i in lhs_perm]
    rhs = [rhs_shape[i] for i in rhs_perm]
    if isinstance(padding, str):
        totals = []
        for k, s in zip(rhs[2:], window_strides):
            if padding == "SAME":
                totals.append(k + s - 2)
            elif padding == "VALID":
                totals.append(k + s - 2 + max(k - s, 0))
            else:
                raise ValueError(f"Padding '{padding}' not implemented." + where())
    else:
        totals = [sum(p) for p in padding]
    space = [(i - 1) * s - k + 2 + p for i, k, s, p in zip(lhs[2:], rhs[2:], window_strides,
                                                           totals)]
    out = [lhs[0], rhs[0]] + space
    return tuple(out[int(i)] for i in np.argsort(out_perm))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The output shape of lax.reduce_window with explicit (low, high) padding."""
    if base_dilation is not None:
        operand_shape = tuple(0 if d == 0 else 1 + b * (d - 1)
                              for d, b in zip(operand_shape, base_dilation))
    if window_dilation is not None:
        window_dimensions = tuple(0 if d == 0 else 1 + b * (d - 1)
                                  for d, b in zip(window_dimensions, window_dilation))
    padded = tuple(d + lo + hi for d, (lo, hi) in zip(operand_shape, padding))
    return tuple(_stride_dim(d, w, s) for d, w, s in zip(padded, window_dimensions,
                                                          window_strides))


# --- single-device no-ops ------------------------------------------------------------------------
def with_sharding_constraint(x, shardings):
    """x itself: secant runs one device per program, where every sharding is the whole array."""
    return x


def composite(decomposition, name, version=0):
    """The function `decomposition` itself (JAX stages it as a named stablehlo.composite with
    the same semantics; secant's StableHLO calls the decomposition)."""
    return decomposition


def platform_dependent(*args, default=None, **per_platform):
    """The branch for the platform secant runs on ("cpu", else "cuda" or "rocm" when the
    default device is a GPU), else `default`, called with args."""
    platform = runtime.devices()[0].platform
    branch = per_platform.get(platform, per_platform.get("gpu" if platform in ("cuda", "rocm")
                                                         else platform, default))
    if branch is None:
        raise NotImplementedError(f"platform_dependent: no branch for {platform!r} and no "
                                  "default" + where())
    return branch(*args)


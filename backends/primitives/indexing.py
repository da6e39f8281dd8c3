"""Gather and scatter with XLA's general semantics (batching dimensions included).

The index vector is always the LAST dimension of `indices`; every other dimension of `indices` is a
batch dimension. Gather clamps each window start so the whole window lies inside the operand;
scatter drops every window that would not fit (XLA's behaviour on CPU and GPU). secant.numpy
normalises negative indices before it gets here.
"""
from typing import NamedTuple

import numpy as np

from secant.backends import dtypes
from secant.backends.core import ShapedArray
from secant.backends.primitives.common import _same_dtypes, type_error
from secant.backends.primitives.structural import define


class GatherDimensionNumbers(NamedTuple):
    """Which operand dims a gather indexes, collapses and batches, and where the windows land.

    offset_dims: output positions of the window dims (the operand dims neither collapsed nor
    batching), in increasing order. collapsed_slice_dims: operand dims of slice size 1 dropped from
    the output. start_index_map: the operand dim each entry of an index vector starts.
    operand_batching_dims / start_indices_batching_dims: operand dims paired with batch dims of
    `indices` (the i-th output row along them reads the i-th operand row).
    """
    offset_dims: tuple = ()
    collapsed_slice_dims: tuple = ()
    start_index_map: tuple = ()
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """The scatter mirror of GatherDimensionNumbers.

    update_window_dims: dims of `updates` that are window dims (in increasing order); the others
    are scatter dims matching the batch dims of `indices`. inserted_window_dims: operand dims of
    window size 1 that `updates` leaves out. scatter_dims_to_operand_dims: the operand dim each
    entry of an index vector starts.
    """
    update_window_dims: tuple = ()
    inserted_window_dims: tuple = ()
    scatter_dims_to_operand_dims: tuple = ()
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


# --- checks shared by both rules ---------------------------------------------------------------
def _int_tuple(name, field, value):
    if not isinstance(value, tuple) or any(type(v) is not int for v in value):
        type_error(f"{name}: {field} must be a tuple of Python ints, got {value!r}")
    return value


def _dims_in(name, field, dims, rank, what, sorted_=True):
    if any(not 0 <= d < rank for d in dims):
        type_error(f"{name}: {field} {dims} must lie in [0, {rank}) ({what} has rank {rank})")
    if len(set(dims)) != len(dims):
        type_error(f"{name}: {field} {dims} has repeated dimensions")
    if sorted_ and list(dims) != sorted(dims):
        type_error(f"{name}: {field} {dims} must be sorted")


def _disjoint(name, a_field, a, b_field, b):
    both = set(a) & set(b)
    if both:
        type_error(f"{name}: dims {sorted(both)} appear in both {a_field} and {b_field}")


def _check_indices(name, indices):
    if not dtypes.is_int(indices.dtype):
        type_error(f"{name}: indices must be integers, got {indices.dtype.name}")
    if indices.ndim == 0:
        type_error(f"{name}: indices need at least one dimension (the index vector is the last)")


def _check_batching(name, operand, indices, operand_batching_dims, indices_field, indices_dims):
    """Operand batching dims pair with batch dims of `indices` (never the index vector dim)."""
    _dims_in(name, "operand_batching_dims", operand_batching_dims, operand.ndim, "operand")
    _dims_in(name, indices_field, indices_dims, indices.ndim - 1,
             "indices without its index vector dim", sorted_=False)
    if len(indices_dims) != len(operand_batching_dims):
        type_error(f"{name}: operand_batching_dims {operand_batching_dims} and {indices_field} "
                   f"{indices_dims} must have the same length")
    for od, idim in zip(operand_batching_dims, indices_dims):
        if operand.shape[od] != indices.shape[idim]:
            type_error(f"{name}: operand batching dim {od} has size {operand.shape[od]} but "
                       f"indices dim {idim} has size {indices.shape[idim]}")


# --- gather ------------------------------------------------------------------------------------
def _gather_rule(operand, indices, dimension_numbers, slice_sizes):
    name = "gather"
    if not isinstance(dimension_numbers, GatherDimensionNumbers):
        type_error(f"{name}: dimension_numbers must be a GatherDimensionNumbers, "
                   f"got {type(dimension_numbers).__name__}")
    for field, value in zip(dimension_numbers._fields, dimension_numbers):
        _int_tuple(name, field, value)
    _int_tuple(name, "slice_sizes", slice_sizes)
    dn = dimension_numbers
    _check_indices(name, indices)
    rank = operand.ndim
    if len(slice_sizes) != rank:
        type_error(f"{name}: slice_sizes {slice_sizes} needs one entry per operand dim "
                   f"(operand shape {operand.shape})")
    for d, (size, n) in enumerate(zip(slice_sizes, operand.shape)):
        if not 0 <= size <= n:
            type_error(f"{name}: slice_sizes[{d}] = {size} must lie in [0, {n}] "
                       f"(operand shape {operand.shape})")
    _dims_in(name, "collapsed_slice_dims", dn.collapsed_slice_dims, rank, "operand")
    _dims_in(name, "start_index_map", dn.start_index_map, rank, "operand", sorted_=False)
    _check_batching(name, operand, indices, dn.operand_batching_dims,
                    "start_indices_batching_dims", dn.start_indices_batching_dims)
    _disjoint(name, "collapsed_slice_dims", dn.collapsed_slice_dims,
              "operand_batching_dims", dn.operand_batching_dims)
    _disjoint(name, "start_index_map", dn.start_index_map,
              "operand_batching_dims", dn.operand_batching_dims)
    for d in dn.collapsed_slice_dims + dn.operand_batching_dims:
        if slice_sizes[d] > 1:
            type_error(f"{name}: collapsed or batching dim {d} needs slice size 0 or 1, "
                       f"got {slice_sizes[d]}")
    if indices.shape[-1] != len(dn.start_index_map):
        type_error(f"{name}: the index vector (last dim of indices, size {indices.shape[-1]}) must "
                   f"have one entry per start_index_map dim {dn.start_index_map}")
    window_dims = _window_dims(rank, dn.collapsed_slice_dims, dn.operand_batching_dims)
    if len(dn.offset_dims) != len(window_dims):
        type_error(f"{name}: offset_dims {dn.offset_dims} needs one entry per window dim "
                   f"{tuple(window_dims)} (operand dims neither collapsed nor batching)")
    batch_shape = indices.shape[:-1]
    out_rank = len(batch_shape) + len(window_dims)
    _dims_in(name, "offset_dims", dn.offset_dims, out_rank, "the output")
    windows = iter(slice_sizes[d] for d in window_dims)
    batches = iter(batch_shape)
    shape = [next(windows) if q in dn.offset_dims else next(batches) for q in range(out_rank)]
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _window_dims(rank, dropped, batching):
    return [d for d in range(rank) if d not in dropped and d not in batching]


def _window_offsets(n_batch, window_sizes):
    """Per window dim, an arange shaped to broadcast over batch_shape + window_sizes."""
    n_win = len(window_sizes)
    return [np.arange(size).reshape((1,) * (n_batch + k) + (size,) + (1,) * (n_win - k - 1))
            for k, size in enumerate(window_sizes)]


def _batch_iota(batch_shape, dim):
    n = batch_shape[dim]
    return np.arange(n).reshape((1,) * dim + (n,) + (1,) * (len(batch_shape) - dim - 1))


def _starts(indices, index_map, operand_batching_dims, indices_batching_dims):
    """Per operand dim, the window start over the batch dims (0 where nothing sets it)."""
    batch_shape = indices.shape[:-1]
    starts = {}
    for k, d in enumerate(index_map):
        starts[d] = indices[..., k].astype(np.int64)
    for od, idim in zip(operand_batching_dims, indices_batching_dims):
        starts[od] = _batch_iota(batch_shape, idim)
    return starts


def _full_indices(starts, rank, window_dims, window_sizes, batch_shape):
    """Operand index arrays of shape batch_shape + window_sizes, one per operand dim."""
    n_batch, n_win = len(batch_shape), len(window_sizes)
    offsets = dict(zip(window_dims, _window_offsets(n_batch, window_sizes)))
    target = tuple(batch_shape) + tuple(window_sizes)
    out = []
    for d in range(rank):
        s = np.asarray(starts.get(d, 0))
        s = s.reshape(s.shape + (1,) * n_win) if s.ndim else s
        out.append(np.broadcast_to(s + offsets.get(d, 0), target))
    return out


def _gather(operand, indices, dimension_numbers, slice_sizes):
    dn = dimension_numbers
    rank = operand.ndim
    batch_shape = indices.shape[:-1]
    window_dims = _window_dims(rank, dn.collapsed_slice_dims, dn.operand_batching_dims)
    window_sizes = [slice_sizes[d] for d in window_dims]
    starts = _starts(indices, dn.start_index_map, dn.operand_batching_dims,
                     dn.start_indices_batching_dims)
    for d in dn.start_index_map:            # XLA clamps so the whole window fits
        starts[d] = np.clip(starts[d], 0, operand.shape[d] - slice_sizes[d])
    target = tuple(batch_shape) + tuple(window_sizes)
    if rank == 0:
        result = np.broadcast_to(operand, target).copy()
    else:
        result = operand[tuple(_full_indices(starts, rank, window_dims, window_sizes, batch_shape))]
    # result dims are (batch..., window...); the window dims go to offset_dims
    batch_axes = iter(range(len(batch_shape)))
    out_rank = len(target)
    perm = [len(batch_shape) + dn.offset_dims.index(q) if q in dn.offset_dims else next(batch_axes)
            for q in range(out_rank)]
    return np.transpose(result, perm)


gather_p = define("gather", _gather_rule, _gather, weak="first")


# --- scatter -----------------------------------------------------------------------------------
def _scatter_rule_for(name, kind):
    def rule(operand, indices, updates, dimension_numbers, indices_are_sorted=False,
             unique_indices=False):
        if not isinstance(dimension_numbers, ScatterDimensionNumbers):
            type_error(f"{name}: dimension_numbers must be a ScatterDimensionNumbers, "
                       f"got {type(dimension_numbers).__name__}")
        for field, value in zip(dimension_numbers._fields, dimension_numbers):
            _int_tuple(name, field, value)
        dn = dimension_numbers
        _check_indices(name, indices)
        _same_dtypes(name, (operand, updates))
        if kind == "order" and dtypes.is_complex(operand.dtype):
            type_error(f"{name} is not defined for complex numbers")
        rank = operand.ndim
        _dims_in(name, "update_window_dims", dn.update_window_dims, updates.ndim, "updates")
        _dims_in(name, "inserted_window_dims", dn.inserted_window_dims, rank, "operand")
        _dims_in(name, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims, rank,
                 "operand", sorted_=False)
        _check_batching(name, operand, indices, dn.operand_batching_dims,
                        "scatter_indices_batching_dims", dn.scatter_indices_batching_dims)
        _disjoint(name, "inserted_window_dims", dn.inserted_window_dims,
                  "operand_batching_dims", dn.operand_batching_dims)
        _disjoint(name, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims,
                  "operand_batching_dims", dn.operand_batching_dims)
        if indices.shape[-1] != len(dn.scatter_dims_to_operand_dims):
            type_error(f"{name}: the index vector (last dim of indices, size {indices.shape[-1]}) "
                       f"must have one entry per scatter_dims_to_operand_dims dim "
                       f"{dn.scatter_dims_to_operand_dims}")
        window_dims = _window_dims(rank, dn.inserted_window_dims, dn.operand_batching_dims)
        if len(dn.update_window_dims) != len(window_dims):
            type_error(f"{name}: update_window_dims {dn.update_window_dims} needs one entry per "
                       f"operand window dim {tuple(window_dims)} (neither inserted nor batching)")
        batch_shape = indices.shape[:-1]
        scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
        update_batch = tuple(updates.shape[d] for d in scatter_dims)
        if update_batch != batch_shape:
            type_error(f"{name}: updates of shape {updates.shape} have scatter dims of sizes "
                       f"{update_batch}, which must equal the batch dims of indices {batch_shape}")
        for ud, od in zip(dn.update_window_dims, window_dims):
            if updates.shape[ud] > operand.shape[od]:
                type_error(f"{name}: updates window dim {ud} (size {updates.shape[ud]}) is larger "
                           f"than operand dim {od} (size {operand.shape[od]})")
        return ShapedArray(operand.shape, operand.dtype, operand.weak_type)
    return rule


def _set_at(out, index, values):
    out[index] = values


def _scatter_impl(combine):
    def impl(operand, indices, updates, dimension_numbers, indices_are_sorted=False,
             unique_indices=False):
        dn = dimension_numbers
        rank = operand.ndim
        batch_shape = indices.shape[:-1]
        window_dims = _window_dims(rank, dn.inserted_window_dims, dn.operand_batching_dims)
        window_sizes = [updates.shape[d] for d in dn.update_window_dims]
        scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
        updates = np.transpose(updates, scatter_dims + list(dn.update_window_dims))
        starts = _starts(indices, dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                         dn.scatter_indices_batching_dims)
        # a window that does not fit entirely is dropped, as XLA does
        sizes = dict(zip(window_dims, window_sizes))
        fits = np.ones(batch_shape, bool)
        for d, s in starts.items():
            fits &= (s >= 0) & (s <= operand.shape[d] - sizes.get(d, 1))
        out = operand.copy()
        if rank == 0:   # give a 0-d operand one dim so the .at ufuncs have something to index
            target, index = out.reshape(1), (np.zeros(updates[fits].shape, np.intp),)
        else:
            target = out
            index = tuple(i[fits] for i in _full_indices(starts, rank, window_dims, window_sizes,
                                                         batch_shape))
        combine(target, index, updates[fits])
        return out
    return impl


def _scatter(name, combine, kind="any"):
    return define(name, _scatter_rule_for(name, kind), _scatter_impl(combine), weak="first")


scatter_p = _scatter("scatter", _set_at)
scatter_add_p = _scatter("scatter_add", np.add.at)
scatter_mul_p = _scatter("scatter_mul", np.multiply.at)
scatter_min_p = _scatter("scatter_min", np.minimum.at, "order")
scatter_max_p = _scatter("scatter_max", np.maximum.at, "order")

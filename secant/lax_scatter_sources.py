"""Sources the transforms read (a by-source module, secant/numpy/composite.py) for lax.gather and
lax.scatter, scatter_add, scatter_mul, scatter_min and scatter_max: each is an indexing op of the
operand with one integer index array per operand axis, of the shape of the result (a gather) or
of the updates (a scatter), built from the start indices, the dimension numbers and each window's
offsets. So grad, jvp and vmap of them follow from the rules of x[idx] and x.at[idx].set / add /
mul / min / max (ad/vjp_rules.py, ad/jvp_rules.py, batching/rules.py), at any order, with in_axes
on the operand, the indices or the updates.

Out-of-range starts: a gather clamps each start so that its window lies in the operand (XLA's
rule; lax.gather's modes None and 'clip'; mode 'fill' then replaces a window not wholly in the
operand by fill_value); a scatter drops a window that does not lie wholly in the operand (its
elements' indices are set past the end and the update is written with mode='drop'), or with mode
'clip' clamps its start as a gather does."""
import numpy as np

import secant.numpy as snp
from secant import lax as library_lax
from secant.backends.primitives.indexing import GatherDimensionNumbers, ScatterDimensionNumbers
from secant.lax import check_gather_mode, check_scatter_mode, gather_fill_value
from secant.numpy.composite import source_for

__secant_by_source__ = True      # transforms read this module like user code


def _numbers(cls, dn):
    if isinstance(dn, dict):
        dn = cls(**dn)
    return cls(*(tuple(int(d) for d in field) for field in dn))


def _plan(operand_shape, indices_shape, out_shape, window_out_dims, collapsed, batching,
          indices_batching, index_map):
    """Per operand axis d: (column of the index vector giving its start or None, the indices'
    axis it is batched with or None, the result/updates axis its window runs along or None)."""
    window_operand = [d for d in range(len(operand_shape)) if d not in collapsed
                      and d not in batching]
    plan = []
    for d in range(len(operand_shape)):
        column = index_map.index(d) if d in index_map else None
        batch = indices_batching[batching.index(d)] if d in batching else None
        window = window_out_dims[window_operand.index(d)] if d in window_operand else None
        plan.append((column, batch, window))
    return plan


def _batch_iota(indices_shape, axis, window_out_dims):
    """Positions along the indices' batch axis `axis`, shaped to broadcast against the result."""
    batch_shape = tuple(indices_shape[:-1])
    shape = tuple(n if i == axis else 1 for i, n in enumerate(batch_shape))
    return snp.expand_dims(snp.arange(batch_shape[axis]).reshape(shape), window_out_dims)


def _window_iota(out_shape, axis):
    shape = tuple(n if i == axis else 1 for i, n in enumerate(out_shape))
    return snp.arange(out_shape[axis]).reshape(shape)


@source_for(library_lax.gather)
def gather(operand, start_indices, dimension_numbers, slice_sizes, *, indices_are_sorted=False,
           unique_indices=False, mode=None, fill_value=None):
    check_gather_mode(mode, fill_value)
    fill = gather_fill_value(mode, fill_value, snp.result_type(operand))
    out = operand[_gather_index(np.shape(operand), start_indices, dimension_numbers,
                                slice_sizes)]
    if fill is None:
        return out
    inside = _gather_inside(np.shape(operand), start_indices, dimension_numbers, slice_sizes)
    return snp.where(inside, out, snp.asarray(fill, snp.result_type(operand)))


def _gather_inside(shape, start_indices, dimension_numbers, slice_sizes):
    """Whether each window of a gather lies wholly in the operand (mode 'fill'), shaped to
    broadcast against the result."""
    dn = _numbers(GatherDimensionNumbers, dimension_numbers)
    inside = snp.ones(np.shape(start_indices)[:-1], bool)
    for column, d in enumerate(dn.start_index_map):
        start = start_indices[..., column]
        inside = inside & (start >= 0) & (start <= shape[d] - int(slice_sizes[d]))
    return snp.expand_dims(inside, dn.offset_dims)


def _gather_index(shape, start_indices, dimension_numbers, slice_sizes):
    """The index (one array per axis of the operand, of shape `shape`, each of the result's
    shape) of each element the gather reads, its starts clamped into the operand."""
    dn = _numbers(GatherDimensionNumbers, dimension_numbers)
    ishape = np.shape(start_indices)
    sizes = tuple(int(s) for s in slice_sizes)
    offset_dims = dn.offset_dims
    window_sizes = [sizes[d] for d in range(len(shape))
                    if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    out_shape = _gather_shape(ishape, offset_dims, window_sizes)
    plan = _plan(shape, ishape, out_shape, offset_dims, dn.collapsed_slice_dims,
                 dn.operand_batching_dims, dn.start_indices_batching_dims, dn.start_index_map)
    index = []
    for d, (column, batch, window) in enumerate(plan):
        at = snp.zeros(out_shape, "int32")
        if column is not None:
            start = snp.clip(start_indices[..., column], 0, shape[d] - sizes[d])
            at = at + snp.expand_dims(start, offset_dims).astype("int32")
        if batch is not None:
            at = at + _batch_iota(ishape, batch, offset_dims)
        if window is not None:
            at = at + _window_iota(out_shape, window)
        index.append(at)
    return tuple(index)


def _gather_shape(indices_shape, offset_dims, window_sizes):
    batch = list(indices_shape[:-1])
    out = []
    for i in range(len(batch) + len(offset_dims)):
        if i in offset_dims:
            out.append(window_sizes[offset_dims.index(i)])
        else:
            out.append(batch.pop(0))
    return tuple(out)


def _scatter_index(shape, scatter_indices, ushape, dimension_numbers, clip=False):
    """The index (one array per axis of the operand, of shape `shape`, each of the updates'
    shape `ushape` with the window axes last) each update lands on, and that order of the
    updates' axes; a window not wholly inside the operand gets indices past the end (dropped)."""
    dn = _numbers(ScatterDimensionNumbers, dimension_numbers)
    ishape = np.shape(scatter_indices)
    window_dims = dn.update_window_dims
    plan = _plan(shape, ishape, ushape, window_dims, dn.inserted_window_dims,
                 dn.operand_batching_dims, dn.scatter_indices_batching_dims,
                 dn.scatter_dims_to_operand_dims)
    # (the updates' window axes last: they are written in XLA's order, window by window, so
    # that where windows overlap the same update wins as in lax.scatter's own value)
    order = tuple(u for u in range(len(ushape)) if u not in window_dims) + tuple(window_dims)
    inside = snp.ones(ishape[:-1], bool)
    starts = []
    for d, (column, batch, window) in enumerate(plan):
        start = None
        if column is not None:
            size = ushape[window] if window is not None else 1
            start = scatter_indices[..., column]
            if clip:        # (mode 'clip': each window moved wholly into the operand)
                start = snp.clip(start, 0, shape[d] - size)
            inside = inside & (start >= 0) & (start <= shape[d] - size)
        starts.append(start)
    inside = snp.expand_dims(inside, window_dims)
    index = []
    for d, (column, batch, window) in enumerate(plan):
        at = snp.zeros(ushape, "int32")
        if column is not None:
            at = at + snp.expand_dims(starts[d], window_dims).astype("int32")
        if batch is not None:
            at = at + _batch_iota(ishape, batch, window_dims)
        if window is not None:
            at = at + _window_iota(ushape, window)
        index.append(snp.transpose(snp.where(inside, at, shape[d]), order))
    return tuple(index), order


def _scatter_parts(name, operand, scatter_indices, updates, dimension_numbers, mode):
    """The index tuple of `operand` each update lands on, and the updates in that order."""
    check_scatter_mode(name, mode)
    index, order = _scatter_index(np.shape(operand), scatter_indices, np.shape(updates),
                                  dimension_numbers, mode == "clip")
    return index, snp.transpose(updates, order)


@source_for(library_lax.scatter)
def scatter(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
            unique_indices=False, mode=None):
    index, values = _scatter_parts("scatter", operand, scatter_indices, updates,
                                   dimension_numbers, mode)
    return operand.at[index].set(values, unique_indices=unique_indices, mode="drop")


@source_for(library_lax.scatter_add)
def scatter_add(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
    index, values = _scatter_parts("scatter_add", operand, scatter_indices, updates,
                                   dimension_numbers, mode)
    return operand.at[index].add(values, unique_indices=unique_indices, mode="drop")


@source_for(library_lax.scatter_mul)
def scatter_mul(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
    index, values = _scatter_parts("scatter_mul", operand, scatter_indices, updates,
                                   dimension_numbers, mode)
    return operand.at[index].mul(values, unique_indices=unique_indices, mode="drop")


@source_for(library_lax.scatter_min)
def scatter_min(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
    index, values = _scatter_parts("scatter_min", operand, scatter_indices, updates,
                                   dimension_numbers, mode)
    return operand.at[index].min(values, unique_indices=unique_indices, mode="drop")


@source_for(library_lax.scatter_max)
def scatter_max(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
                unique_indices=False, mode=None):
    index, values = _scatter_parts("scatter_max", operand, scatter_indices, updates,
                                   dimension_numbers, mode)
    return operand.at[index].max(values, unique_indices=unique_indices, mode="drop")

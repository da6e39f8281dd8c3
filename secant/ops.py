"""secant.ops: jax.ops's segment reductions (segment_sum, segment_prod, segment_max,
segment_min).

Each is written with secant.numpy ops that have rules (`.at[ids].add/mul/max/min` of an array
filled with the reduction's identity), and this module sets `__secant_by_source__`: grad, jvp and
vmap read these sources as they read a user's helper (secant/numpy/composite.py). As in JAX,
ids outside [0, num_segments) (negative ones too) are dropped, an empty segment holds the
identity (0, 1, -inf / the dtype's minimum, +inf / its maximum), and `num_segments` must be a
concrete int under jit (without it, it is max(segment_ids) + 1, read from concrete ids).
"""
import numpy as np

import secant.numpy as snp

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Sum of the rows of `data` (axis 0) whose `segment_ids` are equal, as jax.ops.segment_sum."""
    out, ids = _start(data, segment_ids, num_segments, 0)
    return out.at[ids].add(data, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None):
    """Product of the rows of `data` in each segment (1 for an empty one)."""
    out, ids = _start(data, segment_ids, num_segments, 1)
    return out.at[ids].mul(data, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Maximum of the rows of `data` in each segment (-inf, or the dtype's minimum, if empty)."""
    out, ids = _start(data, segment_ids, num_segments, _lowest(snp.result_type(data)))
    return out.at[ids].max(data, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Minimum of the rows of `data` in each segment (+inf, or the dtype's maximum, if empty)."""
    out, ids = _start(data, segment_ids, num_segments, _highest(snp.result_type(data)))
    return out.at[ids].min(data, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode)


def _start(data, segment_ids, num_segments, identity):
    """The output filled with `identity`, and the ids with negative ones moved out of range
    (JAX drops them; NumPy-style indexing would count them from the end)."""
    if num_segments is None:
        num_segments = int(snp.max(segment_ids)) + 1
    num_segments = _count(num_segments)
    data = snp.asarray(data)
    out = snp.full((num_segments,) + snp.shape(data)[1:], identity, dtype=snp.result_type(data))
    ids = snp.where(segment_ids < 0, num_segments, segment_ids)
    return out, ids


def _count(num_segments):
    return int(num_segments)


def _lowest(dtype):
    if snp.issubdtype(dtype, snp.inexact):
        return -np.inf
    if dtype == np.bool_:
        return False
    return snp.iinfo(dtype).min


def _highest(dtype):
    if snp.issubdtype(dtype, snp.inexact):
        return np.inf
    if dtype == np.bool_:
        return True
    return snp.iinfo(dtype).max

"""secant.scipy.ndimage.map_coordinates, as jax.scipy.ndimage's: interpolation of an array at
coordinates, order 0 (nearest) or 1 (linear), with scipy.ndimage's modes ('constant',
'nearest', 'wrap', 'mirror', 'reflect'). Written with secant.numpy's ops (indexing, where,
floor), so grad (in the input and, for order 1, in the coordinates), jvp and vmap read it."""
import itertools

import numpy as np

import secant.numpy as snp
from secant.backends.errors import SecantValueError, UnsupportedError, where

__secant_by_source__ = True      # the transforms read this module like user code


def _mirror_index(index, size):
    s = size - 1                # the half-wavelength of the triangular wave
    return snp.abs((index + s) % (2 * s) - s) if s > 0 else index * 0


def _reflect_index(index, size):
    return snp.floor_divide(_mirror_index(2 * index + 1, 2 * size + 1) - 1, 2)


def _fixed_index(mode, index, size):
    """The index mode reads in an axis of `size` for an index that may fall outside it."""
    if mode == "nearest":
        return snp.clip(index, 0, size - 1)
    if mode == "wrap":
        return index % size
    if mode == "mirror":
        return _mirror_index(index, size)
    if mode == "reflect":
        return _reflect_index(index, size)
    return index


def _round_half_away(x):
    """lax.round's default: halves away from zero (a step: no derivative)."""
    return snp.sign(x) * snp.floor(snp.abs(x) + 0.5)


def _node(coordinate, order, which):
    """(index, weight) of node `which` of one axis: the nearest point (rounded half away from
    zero), or (which 0, 1) the lower and upper neighbours with linear weights."""
    if order == 0:
        return _round_half_away(coordinate).astype(np.int32), 1.0
    lower = snp.floor(coordinate)
    upper_weight = coordinate - lower
    if which == 0:
        return lower.astype(np.int32), 1 - upper_weight
    return lower.astype(np.int32) + 1, upper_weight


def _inexact(coordinate):
    coordinate = snp.asarray(coordinate)
    if not snp.issubdtype(coordinate.dtype, snp.inexact):
        coordinate = coordinate.astype(snp.result_type(float))
    return coordinate


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):
    """input's values at `coordinates` (one array per axis of input, all of one shape)."""
    input_arr = snp.asarray(input)
    if len(coordinates) != np.ndim(input_arr):
        raise SecantValueError(f"coordinates must be a sequence of length input.ndim, but "
                               f"{len(coordinates)} != {np.ndim(input_arr)}{where()}")
    if mode not in ("constant", "nearest", "wrap", "mirror", "reflect"):
        raise UnsupportedError(f"jax.scipy.ndimage.map_coordinates does not yet support mode "
                               f"{mode}{where()}")
    if order not in (0, 1):
        raise UnsupportedError("jax.scipy.ndimage.map_coordinates currently requires order<=1"
                               + where())
    ndim = len(coordinates)
    result = 0.0
    for combo in itertools.product(range(order + 1), repeat=ndim):
        indices = []
        valid = True
        weight = 1.0
        for axis in range(ndim):
            coordinate = _inexact(coordinates[axis])
            size = np.shape(input_arr)[axis]
            index, w = _node(coordinate, order, combo[axis])
            indices.append(_fixed_index(mode, index, size))
            valid = (index >= 0) & (index < size) & valid
            weight = weight * w
        value = input_arr[tuple(indices)]
        if mode == "constant":
            value = snp.where(valid, value, snp.asarray(cval, input_arr.dtype))
        result = result + weight * value
    if snp.issubdtype(input_arr.dtype, snp.integer):
        result = _round_half_away(result)
    return snp.asarray(result).astype(input_arr.dtype)

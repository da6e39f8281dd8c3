"""jax.numpy's packbits and unpackbits, written with secant.numpy's ops and read by the
transforms as source (`__secant_by_source__`), so jit and vmap follow from the ops' rules (the
results are integers: no derivative, as in JAX). As JAX's: packbits packs the nonzero-ness of
integer or boolean elements into uint8, padding the last byte with zeros; unpackbits takes a
uint8 array; `axis=None` flattens; `count` keeps that many bits (pads with zeros when larger,
trims from the end when negative)."""
import numpy as np

import secant.numpy as snp
from secant.backends.errors import SecantTypeError, SecantValueError, where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["packbits", "unpackbits"]


def _bit_weights(bitorder):
    """1, 2, 4, ..., 128 in the order of the bits in a byte (most significant first: big)."""
    if bitorder not in ("little", "big"):
        raise SecantValueError(f"'order' must be either 'little' or 'big', got "
                               f"{bitorder!r}{where()}")
    weights = np.arange(8, dtype=np.uint8)
    return weights[::-1].copy() if bitorder == "big" else weights


def packbits(a, axis=None, bitorder="big"):
    """The elements' nonzero-ness packed eight to a uint8 along axis (flattened when None)."""
    a = snp.asarray(a)
    if not snp.issubdtype(a.dtype, snp.integer):
        if a.dtype != np.bool_:
                raise SecantTypeError(f"packbits: expected an input array of integer or boolean "
                                  f"data type, got {a.dtype}{where()}")
    shifts = _bit_weights(bitorder)
    bits = (a != 0).astype(np.uint8)
    if axis is None:
        bits = snp.ravel(bits)
        axis = 0
    bits = snp.swapaxes(bits, axis, -1)
    remainder = snp.shape(bits)[-1] % 8
    if remainder:
        bits = snp.pad(bits, [(0, 0)] * (snp.ndim(bits) - 1) + [(0, 8 - remainder)])
    shape = snp.shape(bits)
    bits = snp.reshape(bits, shape[:-1] + (shape[-1] // 8, 8))
    packed = snp.sum(bits << shifts, axis=-1).astype(np.uint8)
    return snp.swapaxes(packed, axis, -1)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of a uint8 array (0 or 1, uint8), eight per element along axis (flattened
    when None); count keeps that many (zeros past the end), or drops -count from the end."""
    a = snp.asarray(a)
    if a.dtype != np.uint8:
        raise SecantTypeError(f"unpackbits: expected an input array of unsigned byte data "
                              f"type (uint8), got {a.dtype}{where()}")
    masks = (np.uint8(1) << _bit_weights(bitorder)).astype(np.uint8)
    if axis is None:
        a = snp.ravel(a)
        axis = 0
    a = snp.swapaxes(a, axis, -1)
    unpacked = ((a[..., None] & masks) > 0).astype(np.uint8)
    unpacked = snp.reshape(unpacked, snp.shape(unpacked)[:-2] + (-1,))
    if count is not None:
        n = snp.shape(unpacked)[-1]
        if count > n:
            unpacked = snp.pad(unpacked, [(0, 0)] * (snp.ndim(unpacked) - 1) + [(0, count - n)])
        else:
            unpacked = unpacked[..., :count]
    return snp.swapaxes(unpacked, axis, -1)

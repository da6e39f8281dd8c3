"""The sources transforms read for secant.numpy functions that are compositions of ops
(secant/numpy/composite.py): each computes what its library function does, with ops that have
rules, so its derivatives and batched form need no rules of their own."""
import secant.numpy as snp
from secant.numpy.shape import roll as library_roll
from secant.numpy.composite import source_for

__secant_by_source__ = True      # transforms read this module like user code


@source_for(library_roll)
def roll(a, shift, axis=None):
    if axis is None:
        out = snp.reshape(_roll_axes(snp.ravel(a), shift, 0), snp.shape(a))
    else:
        out = _roll_axes(a, shift, axis)
    return out


def _roll_axes(a, shift, axis):
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = axes * len(shifts)
    for s, ax in zip(shifts, axes):
        n = a.shape[ax]
        s = s % n if n else 0
        if s:
            a = snp.concatenate([snp.take(a, snp.arange(n - s, n), axis=ax),
                                 snp.take(a, snp.arange(0, n - s), axis=ax)], axis=ax)
    return a

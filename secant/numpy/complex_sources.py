"""The sources transforms read for secant.numpy's complex-number functions that are
compositions of ops (secant/numpy/composite.py)."""
import numpy as np

import secant.numpy as snp
from secant.numpy.composite import source_for
from secant.numpy.shape import angle as library_angle

__secant_by_source__ = True      # transforms read this module like user code


@source_for(library_angle)
def angle(z, deg=False):
    out = snp.arctan2(snp.imag(z), snp.real(z))
    if deg:
        out = out * (180.0 / np.pi)
    return out

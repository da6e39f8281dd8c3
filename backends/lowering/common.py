"""The lowering table and helpers shared by the lowering families."""
import numpy as np

from secant.backends import dtypes

LOWERINGS = {}


def lowering(*names):
    def deco(fn):
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return deco


def compare_type(dtype):
    if dtypes.is_inexact(dtype):
        return "FLOAT"
    return "SIGNED" if np.dtype(dtype).kind == "i" else "UNSIGNED"

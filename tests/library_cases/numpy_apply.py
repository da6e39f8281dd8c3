"""secant.numpy.apply_along_axis / apply_over_axes against NumPy's (tests/test_library_cases.py
runs these: values, jit, vmap, grad and jvp against finite differences)."""
import numpy as np

import secant.numpy as snp
from tests.library_cases import Case


def _norm_times_first(a, scale=1.0):
    return snp.sum(a ** 2) * a[0] * scale


def _np_norm_times_first(a, scale=1.0):
    return np.sum(a ** 2) * a[0] * scale


CASES = [
    Case("numpy.apply_along_axis", lambda a: snp.apply_along_axis(_norm_times_first, 1, a),
         lambda a: np.apply_along_axis(_np_norm_times_first, 1, a), [(2, 3, 4)], id="scalar"),
    Case("numpy.apply_along_axis",
         lambda a: snp.apply_along_axis(lambda r: snp.outer(r, snp.cumsum(r)), -1, a),
         lambda a: np.apply_along_axis(lambda r: np.outer(r, np.cumsum(r)), -1, a),
         [(2, 3)], id="matrix_result"),
    Case("numpy.apply_along_axis",
         lambda a, s: snp.apply_along_axis(_norm_times_first, 0, a, scale=s[0]),
         lambda a, s: np.apply_along_axis(_np_norm_times_first, 0, a, scale=s[0]),
         [(3, 2), (1,)], id="kwargs"),
    Case("numpy.apply_over_axes", lambda a: snp.apply_over_axes(snp.sum, a ** 2, [0, 2]),
         lambda a: np.apply_over_axes(np.sum, a ** 2, [0, 2]), [(2, 3, 4)]),
    Case("numpy.apply_over_axes", lambda a: snp.apply_over_axes(snp.cumsum, a, 1),
         lambda a: np.apply_over_axes(np.cumsum, a, 1), [(2, 3)], id="same_rank"),
]

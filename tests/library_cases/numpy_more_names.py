"""secant/numpy/more_names.py against NumPy (tests/test_library_cases.py runs these: values,
jit, vmap, and grad / jvp against finite differences where differentiable)."""
import numpy as np

import secant.numpy as snp
from tests.library_cases import Case

IDX = np.array([[0, 2], [1, 0], [2, 3]])     # (no index twice in a row: one value each)
SMALL_INTS = np.array([0, 3, 3, 1, 7, 1])


def _np_put(a, ind, v, mode="raise"):
    out = a.copy()
    np.put(out, ind, v, mode=mode)
    return out


def _np_put_along_axis(a, ind, v, axis):
    out = a.copy()
    np.put_along_axis(out, ind, v, axis)
    return out


def _np_place(a, mask, v):
    out = a.copy()
    np.place(out, mask, v)
    return out


def _grid(i, j, a):
    return a[0] * i + a[1] * j ** 2


def _four_distinct(rng, shape, dtype):
    """A shuffle of SMALL_INTS (four distinct values, repeated)."""
    return rng.permutation(SMALL_INTS).astype(dtype)


def _distinct(rng, shape, dtype):
    """Distinct small integers (as floats): setxor1d's assume_unique inputs (along the last
    axis only: other shapes repeat them, and NumPy's reference is then told assume_unique too,
    whose answer for repeated values is defined by the same sort-and-compare)."""
    return rng.permutation(6)[:shape[-1]].astype(dtype) + np.zeros(shape)


def _counts(rng, shape, dtype):
    """Small integers (as floats) with repeats: unique's inputs."""
    return rng.integers(0, 4, shape).astype(dtype)


CASES = [
    Case("numpy.copy", snp.copy, np.copy, [(2, 3)]),
    Case("numpy.astype", lambda a: snp.astype(a, snp.float32) * 1.0,
         lambda a: a.astype(np.float32) * 1.0, [(3,)], rtol=1e-6, differentiable=False),
    Case("numpy.astype", lambda a: snp.astype(a, snp.complex128),
         lambda a: a.astype(np.complex128), [(3,)], id="complex"),
    Case("numpy.put", lambda a, v: snp.put(a, np.array([0, 4, 5]), v, inplace=False),
         lambda a, v: _np_put(a, np.array([0, 4, 5]), v), [(2, 3), (3,)]),
    Case("numpy.put", lambda a, v: snp.put(a, np.array([-7, 9]), v, mode="wrap", inplace=False),
         lambda a, v: _np_put(a, np.array([-7, 9]), v, mode="wrap"), [(2, 3), (2,)],
         id="wrap"),
    Case("numpy.put", lambda a, v: snp.put(a, np.array([1, 30]), v, mode="clip", inplace=False),
         lambda a, v: _np_put(a, np.array([1, 30]), v, mode="clip"), [(2, 3), (2,)],
         id="clip"),
    Case("numpy.put_along_axis",
         lambda a, v: snp.put_along_axis(a, IDX, v, axis=1, inplace=False),
         lambda a, v: _np_put_along_axis(a, IDX, v, 1), [(3, 4), (3, 2)]),
    Case("numpy.put_along_axis",
         lambda a, v: snp.put_along_axis(a, IDX.T[:1], v, axis=0, inplace=False),
         lambda a, v: _np_put_along_axis(a, IDX.T[:1], v, 0), [(3, 3), (1,)], id="axis0"),
    Case("numpy.place", lambda a, v: snp.place(a, a > 0, v, inplace=False),
         lambda a, v: _np_place(a, a > 0, v), [(2, 3), (2,)]),
    Case("numpy.poly", snp.poly, np.poly, [(3,)]),
    Case("numpy.poly", lambda a: snp.poly(a @ a.T), lambda a: np.poly(a @ a.T), [(3, 3)],
         id="matrix"),
    Case("numpy.polydiv", lambda u, v: snp.polydiv(u, v + np.array([2.0, 0.0]))[0],
         lambda u, v: np.polydiv(u, v + np.array([2.0, 0.0]))[0], [(4,), (2,)]),
    Case("numpy.polydiv", lambda u, v: snp.polydiv(u, v + np.array([2.0, 0.0, 0.0]))[1],
         lambda u, v: np.concatenate([np.zeros(2), np.polydiv(u, v + np.array([2.0, 0, 0]))[1]]),
         [(4,), (3,)], id="remainder"),
    Case("numpy.sort_complex", snp.sort_complex, np.sort_complex, [(5,)]),
    Case("numpy.sort_complex", snp.sort_complex, np.sort_complex, [(5,)], complex=True,
         differentiable=False, id="complex"),
    Case("numpy.spacing", snp.spacing, np.spacing, [(2, 3)], differentiable=False),
    Case("numpy.bitwise_count", lambda a: snp.bitwise_count((a * 1000).astype(np.int32)),
         lambda a: np.bitwise_count((a * 1000).astype(np.int32)), [(2, 3)],
         differentiable=False),
    Case("numpy.fromfunction", lambda a: snp.fromfunction(_grid, (2, 3), a=a),
         lambda a: np.fromfunction(_grid, (2, 3), a=a), [(2,)]),
    Case("numpy.kaiser", lambda b: snp.kaiser(6, 4 * b[0]), lambda b: np.kaiser(6, 4 * b[0]),
         [(1,)]),
    Case("numpy.unique_values", lambda a: snp.unique_values(a, size=6, fill_value=-1.0),
         lambda a: np.pad(np.unique(a), (0, 6 - len(np.unique(a))), constant_values=-1.0),
         [(6,)], _counts, differentiable=False),
    Case("numpy.unique_counts", lambda a: snp.unique_counts(a, size=6, fill_value=0)[1],
         lambda a: np.pad(np.unique_counts(a).counts, (0, 6 - len(np.unique(a)))), [(6,)],
         _counts, differentiable=False),
    Case("numpy.unique_inverse", lambda a: snp.unique_inverse(a, size=6)[1],
         lambda a: np.unique_inverse(a).inverse_indices, [(2, 3)], _counts,
         differentiable=False),
    Case("numpy.setxor1d",
         lambda a, b: snp.setxor1d(a, b + 1, assume_unique=True, size=8, fill_value=9.0),
         lambda a, b: np.pad(xor := np.setxor1d(a, b + 1, assume_unique=True),
                             (0, 8 - len(xor)), constant_values=9.0), [(4,), (4,)], _distinct,
         differentiable=False),
    Case("numpy.block", lambda a, b: snp.block([[a, b], [b, a]]),
         lambda a, b: np.block([[a, b], [b, a]]), [(2, 3), (2, 2)]),
    Case("numpy.block", lambda a, b: snp.block([[a, b], [b, a]]),
         lambda a, b: np.block([[a, b], [b, a]]), [(3,), (2,)], id="promoted"),
    Case("numpy.block", lambda a, b: snp.block([[[a]], [[b]]]),
         lambda a, b: np.block([[[a]], [[b]]]), [(2, 3), (2, 3)], id="depth-3"),
]

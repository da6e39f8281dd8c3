"""secant.numpy functions differentiated and batched through their sources
(secant/numpy/sources_existing.py), and array()/asarray() of traced values, against NumPy."""
import numpy as np

import secant.numpy as snp
from tests.library_cases import Case, positive


def _with_nans(rng, shape, dtype):
    x = rng.uniform(-1, 1, shape).astype(dtype)
    x.flat[::3] = np.nan
    return x


def _with_specials(rng, shape, dtype):
    x = rng.uniform(-1, 1, shape).astype(dtype)
    x.flat[::4] = np.nan
    x.flat[1::4] = np.inf
    x.flat[2::5] = -np.inf
    return x


def _distinct(rng, shape, dtype):
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) / max(n, 1) + 0.1).astype(dtype)


def _ints(rng, shape, dtype):
    return rng.integers(-3, 4, shape).astype(np.int32)


def _naturals(rng, shape, dtype):
    return rng.integers(0, 8, shape).astype(np.int32)


def _bools(rng, shape, dtype):
    return rng.integers(0, 2, shape).astype(bool)




CASES = [
    # array / asarray of traced values
    Case("numpy.array", lambda a: snp.array([a, 2 * a]), lambda a: np.array([a, 2 * a]),
         [(2, 3)]),
    Case("numpy.array", lambda a, b: snp.array([[a[0], b[1]], [b[0], a[1]]]),
         lambda a, b: np.array([[a[0], b[1]], [b[0], a[1]]]), [(2,), (2,)], id="nested"),
    Case("numpy.asarray", lambda a: snp.asarray(a), np.asarray, [(2, 3)]),
    Case("numpy.asarray", lambda a: snp.asarray([a, a * a]), lambda a: np.asarray([a, a * a]),
         [(3,)], id="list"),
    # elementwise
    Case("numpy.degrees", snp.degrees, np.degrees, [(2, 3)]),
    Case("numpy.radians", snp.radians, np.radians, [(2, 3)]),
    Case("numpy.deg2rad", snp.deg2rad, np.deg2rad, [(2, 3)]),
    Case("numpy.rad2deg", snp.rad2deg, np.rad2deg, [(2, 3)]),
    Case("numpy.deg2rad", snp.deg2rad, np.deg2rad, [(2, 3)], _ints, differentiable=False,
         id="int"),
    Case("numpy.sinc", snp.sinc, np.sinc, [(2, 3)]),
    Case("numpy.sinc", lambda a: snp.sinc(a * 0), lambda a: np.sinc(a * 0), [(3,)], id="zero"),
    Case("numpy.copysign", snp.copysign, np.copysign, [(2, 3), (2, 3)]),
    Case("numpy.copysign", lambda a: snp.copysign(a, -1.0), lambda a: np.copysign(a, -1.0),
         [(3,)], id="scalar"),
    Case("numpy.fmax", snp.fmax, np.fmax, [(2, 3), (2, 3)]),
    Case("numpy.fmin", snp.fmin, np.fmin, [(2, 3), (3,)]),
    Case("numpy.fmax", snp.fmax, np.fmax, [(2, 3), (2, 3)], _with_nans, differentiable=False,
         id="nans"),
    Case("numpy.fmin", snp.fmin, np.fmin, [(2, 3), (2, 3)], _with_nans, differentiable=False,
         id="nans"),
    Case("numpy.fmod", snp.fmod, np.fmod, [(2, 3), (2, 3)], positive),
    Case("numpy.fmod", lambda a: snp.fmod(a, -0.7), lambda a: np.fmod(a, -0.7), [(2, 3)],
         id="scalar"),
    Case("numpy.fmod", snp.fmod, np.fmod, [(2, 3), (2, 3)], _ints, differentiable=False,
         id="int"),
    Case("numpy.left_shift", lambda a, b: snp.left_shift(a, b & 3),
         lambda a, b: np.left_shift(a, b & 3), [(2, 3), (2, 3)], _naturals,
         differentiable=False),
    Case("numpy.right_shift", lambda a, b: snp.right_shift(a, b & 3),
         lambda a, b: np.right_shift(a, b & 3), [(2, 3), (2, 3)], _ints, differentiable=False),
    Case("numpy.nextafter", snp.nextafter, np.nextafter, [(2, 3), (2, 3)],
         differentiable=False),
    Case("numpy.heaviside", lambda a, b: snp.heaviside(a, b), np.heaviside, [(2, 3), (2, 3)]),
    Case("numpy.float_power", snp.float_power, np.float_power, [(2, 3), (2, 3)], positive),
    Case("numpy.nan_to_num", snp.nan_to_num, np.nan_to_num, [(2, 3)]),
    Case("numpy.nan_to_num", lambda a: snp.nan_to_num(a, nan=1.0, posinf=2.0, neginf=-2.0),
         lambda a: np.nan_to_num(a, nan=1.0, posinf=2.0, neginf=-2.0), [(4, 5)],
         _with_specials, differentiable=False, id="specials"),
    Case("numpy.isposinf", snp.isposinf, np.isposinf, [(4, 5)], _with_specials,
         differentiable=False),
    Case("numpy.isneginf", snp.isneginf, np.isneginf, [(4, 5)], _with_specials,
         differentiable=False),
    Case("numpy.logical_and", snp.logical_and, np.logical_and, [(2, 3), (2, 3)], _ints,
         differentiable=False),
    Case("numpy.logical_or", snp.logical_or, np.logical_or, [(2, 3), (2, 3)], _ints,
         differentiable=False),
    Case("numpy.logical_xor", snp.logical_xor, np.logical_xor, [(2, 3), (2, 3)], _bools,
         differentiable=False),
    Case("numpy.logical_not", snp.logical_not, np.logical_not, [(2, 3)], _ints,
         differentiable=False),
    Case("numpy.bitwise_not", snp.bitwise_not, np.bitwise_not, [(2, 3)], _ints,
         differentiable=False),
    Case("numpy.invert", snp.invert, np.invert, [(2, 3)], _bools, differentiable=False),
    Case("numpy.divmod", lambda a, b: snp.divmod(a, b)[1], lambda a, b: np.divmod(a, b)[1],
         [(2, 3), (2, 3)], positive),
    Case("numpy.divmod", lambda a, b: snp.divmod(a, b)[0], lambda a, b: np.divmod(a, b)[0],
         [(2, 3), (2, 3)], _ints, differentiable=False, id="quotient"),
    # creation from traced values
    Case("numpy.full", lambda a: snp.full((2, 3), a), lambda a: np.full((2, 3), a), [()]),
    Case("numpy.full", lambda a: snp.full((2, 3), a), lambda a: np.full((2, 3), a), [(3,)],
         id="row"),
    Case("numpy.full_like", lambda a, b: snp.full_like(a, b), lambda a, b: np.full_like(a, b),
         [(2, 3), ()]),
    Case("numpy.linspace", lambda a, b: snp.linspace(a, b, 5),
         lambda a, b: np.linspace(a, b, 5), [(), ()]),
    Case("numpy.linspace", lambda a, b: snp.linspace(a, b, 4, endpoint=False, axis=1),
         lambda a, b: np.linspace(a, b, 4, endpoint=False, axis=1), [(3,), (3,)], id="axis"),
    Case("numpy.linspace", lambda a, b: snp.linspace(a, b, 3, retstep=True)[1],
         lambda a, b: np.linspace(a, b, 3, retstep=True)[1], [(2,), (2,)], id="retstep"),
    Case("numpy.logspace", lambda a, b: snp.logspace(a, b, 4),
         lambda a, b: np.logspace(a, b, 4), [(), ()]),
    Case("numpy.meshgrid", lambda a, b: snp.meshgrid(a, b)[0], lambda a, b: np.meshgrid(a, b)[0],
         [(3,), (4,)]),
    Case("numpy.meshgrid", lambda a, b: snp.meshgrid(a, b, indexing="ij")[1],
         lambda a, b: np.meshgrid(a, b, indexing="ij")[1], [(3,), (4,)], id="ij"),
    Case("numpy.meshgrid", lambda a, b: snp.meshgrid(a, b, sparse=True)[1],
         lambda a, b: np.meshgrid(a, b, sparse=True)[1], [(3,), (4,)], id="sparse"),
    Case("numpy.meshgrid", lambda a, b, c: snp.meshgrid(a, b, c)[2],
         lambda a, b, c: np.meshgrid(a, b, c)[2], [(2,), (3,), (4,)], id="three"),
    Case("numpy.broadcast_arrays", lambda a, b: snp.broadcast_arrays(a, b)[0],
         lambda a, b: np.broadcast_arrays(a, b)[0], [(3, 1), (4,)]),
    Case("numpy.broadcast_arrays", lambda a, b: snp.broadcast_arrays(a, b)[1],
         lambda a, b: np.broadcast_arrays(a, b)[1], [(3, 1), (4,)], id="second"),
    # matrices
    Case("numpy.tril", snp.tril, np.tril, [(3, 4)]),
    Case("numpy.tril", lambda a: snp.tril(a, -1), lambda a: np.tril(a, -1), [(2, 3, 3)],
         id="batched"),
    Case("numpy.triu", snp.triu, np.triu, [(4, 3)]),
    Case("numpy.triu", lambda a: snp.triu(a, 1), lambda a: np.triu(a, 1), [(2, 3, 3)],
         id="batched"),
    Case("numpy.diag", snp.diag, np.diag, [(3, 4)]),
    Case("numpy.diag", lambda a: snp.diag(a, 1), lambda a: np.diag(a, 1), [(3, 4)],
         id="offset"),
    Case("numpy.diag", snp.diag, np.diag, [(3,)], id="vector"),
    Case("numpy.diag", lambda a: snp.diag(a, -2), lambda a: np.diag(a, -2), [(3,)],
         id="vector_offset"),
    Case("numpy.diagonal", snp.diagonal, np.diagonal, [(3, 4)]),
    Case("numpy.diagonal", lambda a: snp.diagonal(a, -1, 0, 2),
         lambda a: np.diagonal(a, -1, 0, 2), [(3, 2, 4)], id="axes"),
    Case("numpy.diagflat", snp.diagflat, np.diagflat, [(2, 2)]),
    Case("numpy.trace", snp.trace, np.trace, [(3, 4)]),
    Case("numpy.trace", lambda a: snp.trace(a, 1, 1, 2), lambda a: np.trace(a, 1, 1, 2),
         [(2, 3, 3)], id="axes"),
    # shapes
    Case("numpy.permute_dims", lambda a: snp.permute_dims(a, (2, 0, 1)),
         lambda a: np.transpose(a, (2, 0, 1)), [(2, 3, 4)]),
    Case("numpy.matrix_transpose", snp.matrix_transpose, lambda a: np.swapaxes(a, -1, -2),
         [(2, 3, 4)]),
    Case("numpy.rollaxis", lambda a: snp.rollaxis(a, 2), lambda a: np.rollaxis(a, 2),
         [(2, 3, 4)]),
    Case("numpy.rollaxis", lambda a: snp.rollaxis(a, 0, 3), lambda a: np.rollaxis(a, 0, 3),
         [(2, 3, 4)], id="start"),
    Case("numpy.rot90", snp.rot90, np.rot90, [(3, 4)]),
    Case("numpy.rot90", lambda a: snp.rot90(a, 2), lambda a: np.rot90(a, 2), [(3, 4)], id="k2"),
    Case("numpy.rot90", lambda a: snp.rot90(a, -1, (1, 2)), lambda a: np.rot90(a, -1, (1, 2)),
         [(2, 3, 4)], id="axes"),
    Case("numpy.atleast_1d", lambda a: snp.atleast_1d(a), np.atleast_1d, [()]),
    Case("numpy.atleast_2d", lambda a: snp.atleast_2d(a), np.atleast_2d, [(3,)]),
    Case("numpy.atleast_3d", lambda a: snp.atleast_3d(a), np.atleast_3d, [(3,)]),
    Case("numpy.atleast_3d", lambda a: snp.atleast_3d(a), np.atleast_3d, [(2, 3)], id="matrix"),
    Case("numpy.atleast_2d", lambda a, b: snp.atleast_2d(a, b)[1],
         lambda a, b: np.atleast_2d(a, b)[1], [(2, 3), ()], id="several"),
    Case("numpy.vstack", lambda a, b: snp.vstack([a, b]), lambda a, b: np.vstack([a, b]),
         [(3,), (2, 3)]),
    Case("numpy.row_stack", lambda a, b: snp.row_stack([a, b]), lambda a, b: np.vstack([a, b]),
         [(3,), (3,)]),
    Case("numpy.hstack", lambda a, b: snp.hstack([a, b]), lambda a, b: np.hstack([a, b]),
         [(3,), (2,)]),
    Case("numpy.hstack", lambda a, b: snp.hstack((a, b)), lambda a, b: np.hstack((a, b)),
         [(2, 3), (2, 1)], id="matrices"),
    Case("numpy.dstack", lambda a, b: snp.dstack([a, b]), lambda a, b: np.dstack([a, b]),
         [(2, 3), (2, 3)]),
    Case("numpy.column_stack", lambda a, b: snp.column_stack([a, b]),
         lambda a, b: np.column_stack([a, b]), [(3,), (3, 2)]),
    Case("numpy.tile", lambda a: snp.tile(a, 2), lambda a: np.tile(a, 2), [(3,)]),
    Case("numpy.tile", lambda a: snp.tile(a, (2, 1, 3)), lambda a: np.tile(a, (2, 1, 3)),
         [(2, 3)], id="reps"),
    Case("numpy.repeat", lambda a: snp.repeat(a, 2), lambda a: np.repeat(a, 2), [(2, 3)]),
    Case("numpy.repeat", lambda a: snp.repeat(a, 3, axis=1), lambda a: np.repeat(a, 3, axis=1),
         [(2, 3)], id="axis"),
    Case("numpy.repeat", lambda a: snp.repeat(a, [1, 0, 2], axis=-1),
         lambda a: np.repeat(a, [1, 0, 2], axis=-1), [(2, 3)], id="counts"),
    # products
    Case("numpy.inner", snp.inner, np.inner, [(2, 3), (4, 3)]),
    Case("numpy.inner", snp.inner, np.inner, [(3,), ()], id="scalar"),
    Case("numpy.vdot", snp.vdot, np.vdot, [(2, 3), (3, 2)]),
    Case("numpy.vecdot", snp.vecdot, lambda a, b: np.sum(a * b, axis=-1), [(2, 3), (3,)]),
    Case("numpy.vecdot", lambda a, b: snp.vecdot(a, b, axis=0),
         lambda a, b: np.sum(a * b, axis=0), [(3, 2), (3, 2)], id="axis"),
    Case("numpy.kron", snp.kron, np.kron, [(2, 3), (2, 2)]),
    Case("numpy.kron", snp.kron, np.kron, [(3,), (2, 2)], id="ranks"),
    Case("numpy.cross", snp.cross, np.cross, [(4, 3), (4, 3)]),
    Case("numpy.cross", snp.cross, np.cross, [(3,), (2, 2)], id="two_three"),
    Case("numpy.cross", snp.cross, np.cross, [(4, 2), (4, 2)], id="planar"),
    Case("numpy.cross", lambda a, b: snp.cross(a, b, axis=0),
         lambda a, b: np.cross(a, b, axis=0), [(3, 4), (3, 4)], id="axis"),
    # reductions
    Case("numpy.ptp", snp.ptp, np.ptp, [(3, 4)], _distinct),
    Case("numpy.ptp", lambda a: snp.ptp(a, axis=1), lambda a: np.ptp(a, axis=1), [(3, 4)],
         _distinct, id="axis"),
    Case("numpy.average", snp.average, np.average, [(3, 4)]),
    Case("numpy.average", lambda a, w: snp.average(a, 1, w), lambda a, w: np.average(a, 1, w),
         [(3, 4), (4,)], positive, id="weights"),
    Case("numpy.average", lambda a, w: snp.average(a, None, w, returned=True)[1],
         lambda a, w: np.average(a, None, w, returned=True)[1], [(3, 4), (3, 4)], positive,
         id="returned"),
    Case("numpy.count_nonzero", lambda a: snp.count_nonzero(a, axis=0),
         lambda a: np.count_nonzero(a, axis=0), [(3, 4)], _ints, differentiable=False),
    Case("numpy.quantile", lambda a: snp.quantile(a, 0.3), lambda a: np.quantile(a, 0.3),
         [(3, 4)], _distinct),
    Case("numpy.quantile", lambda a: snp.quantile(a, [0.25, 0.5], axis=1, keepdims=True),
         lambda a: np.quantile(a, [0.25, 0.5], axis=1, keepdims=True), [(3, 4)], _distinct,
         id="axis"),
    Case("numpy.quantile", lambda a: snp.quantile(a, 0.4, axis=0, method="nearest"),
         lambda a: np.quantile(a, 0.4, axis=0, method="nearest"), [(5, 2)], _distinct,
         id="nearest"),
    Case("numpy.percentile", lambda a: snp.percentile(a, 70, axis=0),
         lambda a: np.percentile(a, 70, axis=0), [(5, 3)], _distinct),
    Case("numpy.median", snp.median, np.median, [(3, 4)], _distinct),
    Case("numpy.median", lambda a: snp.median(a, axis=1), lambda a: np.median(a, axis=1),
         [(3, 5)], _distinct, id="axis"),
]

# NaN-ignoring reductions: values (with NaNs) and derivatives (without: at a NaN the
# derivative of the value is not a finite difference)
for _name in ("nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
              "nancumsum", "nancumprod"):
    CASES.append(Case("numpy." + _name, getattr(snp, _name), getattr(np, _name), [(3, 4)],
                      _distinct))
    CASES.append(Case("numpy." + _name, getattr(snp, _name), getattr(np, _name), [(3, 4)],
                      _with_nans, differentiable=False, id="nans"))
CASES += [
    Case("numpy.nanmean", lambda a: snp.nanmean(a, axis=1), lambda a: np.nanmean(a, axis=1),
         [(3, 4)], id="axis"),
    Case("numpy.nanvar", lambda a: snp.nanvar(a, axis=0, ddof=1),
         lambda a: np.nanvar(a, axis=0, ddof=1), [(3, 4)], id="ddof"),
    Case("numpy.nanargmax", snp.nanargmax, np.nanargmax, [(3, 4)], _with_nans,
         differentiable=False),
    Case("numpy.nanargmin", lambda a: snp.nanargmin(a, axis=1),
         lambda a: np.nanargmin(a, axis=1), [(3, 4)], _with_nans, differentiable=False),
]
CASES += [
    Case("numpy.nonzero", lambda a: snp.nonzero(a > 0, size=4)[1],
         lambda a: np.concatenate([np.nonzero(a > 0)[1], [0] * 6])[:4], [(3, 4)],
         differentiable=False),
    Case("numpy.nonzero", lambda a: snp.nonzero(a > 0.5, size=12, fill_value=-1)[0],
         lambda a: np.concatenate([np.nonzero(a > 0.5)[0], [-1] * 12])[:12], [(3, 4)],
         differentiable=False, id="fill"),
    Case("numpy.flatnonzero", lambda a: snp.flatnonzero(a > 0, size=5),
         lambda a: np.concatenate([np.flatnonzero(a > 0), [0] * 5])[:5], [(3, 4)],
         differentiable=False),
    Case("numpy.argwhere", lambda a: snp.argwhere(a > 0, size=3),
         lambda a: np.concatenate([np.argwhere(a > 0), np.zeros((3, 2), int)])[:3], [(2, 3)],
         differentiable=False),
]

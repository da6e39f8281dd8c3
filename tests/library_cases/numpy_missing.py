"""secant/numpy/extra.py: the functions jax.numpy has that secant lacked (issue 17)."""
import numpy as np

import secant.numpy as snp
from tests.library_cases import Case, positive


def _ints(low, high):
    return lambda rng, shape, dtype: rng.integers(low, high, shape).astype(np.int32)


def _increasing(rng, shape, dtype):
    """Strictly increasing along the last axis (spacings 0.2 .. 1)."""
    return np.cumsum(rng.uniform(0.2, 1.0, shape), axis=-1).astype(dtype) - 1.0


def _multiset(values):
    """Permutations of `values` (each example the same multiset, so as many unique values)."""
    def make(rng, shape, dtype):
        n = int(np.prod(shape[-2:])) if len(shape) >= 2 and shape[-2:] == (3, 3) else shape[-1]
        lead = shape[:len(shape) - (2 if n == 9 and shape[-2:] == (3, 3) else 1)]
        out = [rng.permutation(np.asarray(values, dtype)) for _ in np.ndindex(*lead)]
        return np.reshape(out, shape)
    return make


def _near(rng, shape, dtype):
    """Values on a coarse grid, so that equalities and near-equalities occur."""
    return (rng.integers(-3, 4, shape) * 0.5).astype(dtype)


def _index_and_counts(a):
    _, index, counts = snp.unique(a, return_index=True, return_counts=True, size=5)
    return snp.stack([index, counts])


XP = np.linspace(-1.0, 1.0, 7) ** 3 + np.linspace(-1.0, 1.0, 7)     # increasing, uneven
COUNTS = np.array([0, 3, 1, 1, 5, 3, 0, 7], np.int32)

CASES = [
    Case("numpy.isclose", lambda a, b: snp.isclose(a, b, atol=0.3),
         lambda a, b: np.isclose(a, b, atol=0.3), [(4, 3), (3,)], make=_near,
         differentiable=False),
    Case("numpy.isclose", lambda a: snp.isclose(a, snp.array([np.inf, -np.inf, np.nan, 0.5]),
                                                equal_nan=True),
         lambda a: np.isclose(a, np.array([np.inf, -np.inf, np.nan, 0.5]), equal_nan=True),
         [(4,)], make=lambda rng, s, d: np.broadcast_to([np.inf, np.inf, np.nan, 0.5], s).copy(),
         differentiable=False, id="inf_nan"),
    Case("numpy.allclose", lambda a, b: snp.allclose(a, b, atol=0.6),
         lambda a, b: np.allclose(a, b, atol=0.6), [(3,), (3,)], make=_near,
         differentiable=False),
    Case("numpy.angle", lambda a: snp.angle(a), np.angle, [(5,)]),
    Case("numpy.angle", lambda a: snp.angle(a, deg=True), lambda a: np.angle(a, deg=True),
         [(2, 3)], id="deg"),
    Case("numpy.append", lambda a, b: snp.append(a, b), np.append, [(2, 3), (4,)]),
    Case("numpy.append", lambda a, b: snp.append(a, b, axis=0),
         lambda a, b: np.append(a, b, axis=0), [(2, 3), (1, 3)], id="axis"),
    Case("numpy.insert", lambda a, b: snp.insert(a, 1, b), lambda a, b: np.insert(a, 1, b),
         [(2, 3), (2,)], id="flat"),
    Case("numpy.insert", lambda a, b: snp.insert(a, [0, 2, 2], b, axis=1),
         lambda a, b: np.insert(a, [0, 2, 2], b, axis=1), [(2, 3), (3,)], id="seq"),
    Case("numpy.insert", lambda a, b: snp.insert(a, 2, b, axis=0),
         lambda a, b: np.insert(a, 2, b, axis=0), [(3, 2), (2, 2)], id="block"),
    Case("numpy.delete", lambda a: snp.delete(a, [0, 2], axis=1),
         lambda a: np.delete(a, [0, 2], axis=1), [(2, 4)]),
    Case("numpy.delete", lambda a: snp.delete(a, slice(1, None, 2)),
         lambda a: np.delete(a, slice(1, None, 2)), [(2, 3)], id="slice"),
    Case("numpy.r_", lambda a, b: snp.r_[a, 0.5, b, 1:3],
         lambda a, b: np.r_[a, 0.5, b, 1:3], [(3,), (2,)]),
    Case("numpy.r_", lambda a, b: snp.r_["0,2", a, b], lambda a, b: np.r_["0,2", a, b],
         [(3,), (3,)], id="directive"),
    Case("numpy.c_", lambda a, b: snp.c_[a, b, 0:1:3j], lambda a, b: np.c_[a, b, 0:1:3j],
         [(3,), (3,)]),
    Case("numpy.diff", lambda a: snp.diff(a), np.diff, [(3, 5)]),
    Case("numpy.diff", lambda a: snp.diff(a, n=2, axis=0), lambda a: np.diff(a, n=2, axis=0),
         [(5, 2)], id="n2"),
    Case("numpy.diff", lambda a, b: snp.diff(a, prepend=b, append=0.5),
         lambda a, b: np.diff(a, prepend=b, append=0.5), [(2, 4), (2, 1)], id="pre_app"),
    Case("numpy.ediff1d", lambda a, b: snp.ediff1d(a, to_begin=b, to_end=2.0),
         lambda a, b: np.ediff1d(a, to_begin=b, to_end=2.0), [(2, 3), (2,)]),
    Case("numpy.gradient", lambda a: snp.gradient(a), np.gradient, [(6,)]),
    Case("numpy.gradient", lambda a: snp.stack(snp.gradient(a, 0.5, edge_order=2)),
         lambda a: np.stack(np.gradient(a, 0.5, edge_order=2)), [(4, 5)], id="2d_order2"),
    Case("numpy.gradient", lambda a, x: snp.gradient(a, x), np.gradient, [(6,), (6,)],
         make=_increasing, id="coords"),
    Case("numpy.gradient", lambda a, x: snp.gradient(a, x, axis=1, edge_order=2),
         lambda a, x: np.gradient(a, x, axis=1, edge_order=2), [(2, 5), (5,)],
         make=_increasing, id="coords_order2"),
    Case("numpy.select", lambda a, b: snp.select([a < -0.3, a > 0.3], [a * b, a * a], b),
         lambda a, b: np.select([a < -0.3, a > 0.3], [a * b, a * a], b), [(6,), (6,)]),
    Case("numpy.piecewise",
         lambda a: snp.piecewise(a, [a < 0, a > 0.5], [lambda t: -t * t, snp.sin, 0.25]),
         lambda a: np.piecewise(a, [a < 0, a > 0.5], [lambda t: -t * t, np.sin, 0.25]),
         [(7,)]),
    Case("numpy.logaddexp2", lambda a, b: snp.logaddexp2(a, b), np.logaddexp2, [(3, 2), (2,)]),
    Case("numpy.partition", lambda a: snp.partition(a, 2)[..., :3].sum(-1),
         lambda a: np.partition(a, 2)[..., :3].sum(-1), [(3, 5)]),
    Case("numpy.partition", lambda a: snp.partition(a, -2, axis=0)[-2],
         lambda a: np.partition(a, -2, axis=0)[-2], [(4, 3)], id="kth"),
    Case("numpy.argpartition", lambda a: snp.argpartition(a, 1),
         lambda a: np.concatenate([np.argsort(a, -1, kind="stable")[..., :2],
                                   np.argsort(-a, -1, kind="stable")[..., :3]], -1),
         [(2, 5)], differentiable=False),
    Case("numpy.real_if_close", lambda a: snp.real_if_close(a), np.real_if_close, [(4,)]),
    Case("numpy.iscomplex", lambda a: snp.iscomplex(a), np.iscomplex, [(4,)],
         differentiable=False),
    Case("numpy.isreal", lambda a: snp.isreal(a), np.isreal, [(4,)], differentiable=False),
    Case("numpy.interp", lambda x, fp: snp.interp(x, XP, fp),
         lambda x, fp: np.interp(x, XP, fp), [(9,), (7,)],
         make=lambda rng, s, d: rng.uniform(-2.2, 2.2, s).astype(d)),
    Case("numpy.interp", lambda x, xp: snp.interp(x, xp, snp.sin(3 * xp), left=-2.0, right=3.0),
         lambda x, xp: np.interp(x, xp, np.sin(3 * xp), left=-2.0, right=3.0), [(2, 3), (6,)],
         make=_increasing, id="xp_left_right"),
    Case("numpy.interp", lambda x, fp: snp.interp(x, XP, fp, period=2.5),
         lambda x, fp: np.interp(x, XP, fp, period=2.5), [(8,), (7,)],
         make=lambda rng, s, d: rng.uniform(-4, 4, s).astype(d), id="period"),
    Case("numpy.searchsorted", lambda a, v: snp.searchsorted(a, v),
         lambda a, v: np.searchsorted(a, v), [(6,), (2, 4)], make=_increasing,
         differentiable=False),
    Case("numpy.searchsorted", lambda a: snp.searchsorted(a, snp.array([0.0, 1.0, 9.0]),
                                                          side="right"),
         lambda a: np.searchsorted(a, [0.0, 1.0, 9.0], side="right"), [(5,)],
         make=lambda rng, s, d: np.floor(_increasing(rng, s, d)), differentiable=False,
         id="right"),
]

def _with_mode(fn, mode):
    # (a closure; `m=_mode` defaults work too since secant keeps a function's default values:
    # tests/test_default_arguments.py)
    return lambda a, v: fn(a, v, mode)


for _mode in ("full", "same", "valid"):
    CASES += [
        Case("numpy.convolve", _with_mode(snp.convolve, _mode), _with_mode(np.convolve, _mode),
             [(6,), (3,)], id=_mode),
        Case("numpy.convolve", _with_mode(snp.convolve, _mode), _with_mode(np.convolve, _mode),
             [(2,), (5,)], id=_mode + "_swap"),
        Case("numpy.correlate", _with_mode(snp.correlate, _mode),
             _with_mode(np.correlate, _mode), [(6,), (4,)], id=_mode),
        Case("numpy.correlate", _with_mode(snp.correlate, _mode),
             _with_mode(np.correlate, _mode), [(3,), (5,)], id=_mode + "_swap"),
    ]

CASES += [
    Case("numpy.polyval", lambda p, x: snp.polyval(p, x), np.polyval, [(4,), (2, 3)]),
    Case("numpy.vander", lambda x: snp.vander(x), np.vander, [(4,)]),
    Case("numpy.vander", lambda x: snp.vander(x, 3, increasing=True),
         lambda x: np.vander(x, 3, increasing=True), [(5,)], id="increasing"),
    Case("numpy.meshgrid", lambda a, b: snp.stack(snp.meshgrid(a, b)),
         lambda a, b: np.stack(np.meshgrid(a, b)), [(3,), (2,)]),
    Case("numpy.meshgrid", lambda a, b, c: snp.stack(snp.meshgrid(a, b, c, indexing="ij")),
         lambda a, b, c: np.stack(np.meshgrid(a, b, c, indexing="ij")), [(3,), (2,), (4,)],
         id="ij"),
    Case("numpy.meshgrid", lambda a, b: snp.meshgrid(a, b, sparse=True)[1] * 2.0,
         lambda a, b: np.meshgrid(a, b, sparse=True)[1] * 2.0, [(3,), (2,)], id="sparse"),
    # (differentiable, but not at ties, where finite differences jump: tests/test_numpy_missing)
    Case("numpy.unique", lambda a: snp.unique(a, size=5), np.unique, [(3, 3)],
         make=_multiset([0.5, -0.5, 1.5, 0.5, 2.0, -0.5, 1.5, 3.0, 2.0]), differentiable=False),
    Case("numpy.unique", lambda a: snp.unique(a, size=9, fill_value=-9.0)[-1],
         None, [(3, 3)], make=_near, differentiable=False, id="fill"),
    Case("numpy.unique", _index_and_counts,
         lambda a: np.stack(np.unique(a, return_index=True, return_counts=True)[1:]),
         [(8,)], make=_multiset([1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 4.0, 5.0]),
         differentiable=False, id="index_counts"),
    Case("numpy.unique", lambda a: snp.unique(a, return_inverse=True, size=9)[1],
         lambda a: np.unique(a, return_inverse=True)[1], [(3, 3)], make=_near,
         differentiable=False, id="inverse"),
    Case("numpy.bincount", lambda x: snp.bincount(x, length=9),
         lambda x: np.bincount(x, minlength=9), [(8,)], make=_ints(0, 9),
         differentiable=False),
    Case("numpy.bincount", lambda w: snp.bincount(COUNTS, w, length=8),
         lambda w: np.bincount(COUNTS, w, minlength=8), [(8,)], id="weights"),
    Case("numpy.histogram", lambda a: snp.histogram(a, 4)[0],
         lambda a: np.histogram(a, 4)[0], [(3, 5)], differentiable=False),
    Case("numpy.histogram", lambda a, w: snp.histogram(COUNTS.astype(float), 5, (0.0, 8.0),
                                                       weights=w, density=True)[0] * a,
         lambda a, w: np.histogram(COUNTS.astype(float), 5, (0.0, 8.0), weights=w,
                                   density=True)[0] * a,
         [(1,), (8,)], make=positive, id="weights_density"),
    Case("numpy.histogram_bin_edges", lambda a: snp.histogram_bin_edges(a, 5),
         lambda a: np.histogram_bin_edges(a, 5), [(7,)]),
]

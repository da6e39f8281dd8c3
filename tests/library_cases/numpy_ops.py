"""secant.numpy functions that are one op each (transformer/ops.py): elementwise maths,
comparisons, reductions, shapes, products and indexing, against NumPy."""
import numpy as np

import secant.numpy as snp
from tests.library_cases import Case, positive


def _in(lo, hi):
    def make(rng, shape, dtype):
        return rng.uniform(lo, hi, shape).astype(dtype)
    return make


def _ints(rng, shape, dtype):
    return rng.integers(-5, 6, shape).astype(np.int32)


def _distinct(rng, shape, dtype):
    """Well separated values (max, sort and friends are differentiable away from ties)."""
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) / max(n, 1) + 0.1).astype(dtype)


def _away_from_integers(rng, shape, dtype):
    return (rng.integers(-3, 3, shape) + rng.uniform(0.2, 0.8, shape)).astype(dtype)


def _axis1_kept(fn):
    """fn along axis 1, keeping it (a closure: transforms resolve fn when they read it)."""
    return lambda a: fn(a, axis=1, keepdims=True)


def _axis0(fn):
    return lambda a: fn(a, axis=0)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


UNARY = [  # name, reference, input maker
    ("sin", np.sin, None), ("cos", np.cos, None), ("tan", np.tan, None),
    ("arcsin", np.arcsin, _in(-0.9, 0.9)), ("asin", np.arcsin, _in(-0.9, 0.9)),
    ("arccos", np.arccos, _in(-0.9, 0.9)), ("acos", np.arccos, _in(-0.9, 0.9)),
    ("arctan", np.arctan, None), ("atan", np.arctan, None),
    ("sinh", np.sinh, None), ("cosh", np.cosh, None), ("tanh", np.tanh, None),
    ("arcsinh", np.arcsinh, None), ("asinh", np.arcsinh, None),
    ("arccosh", np.arccosh, _in(1.2, 3.0)), ("acosh", np.arccosh, _in(1.2, 3.0)),
    ("arctanh", np.arctanh, _in(-0.9, 0.9)), ("atanh", np.arctanh, _in(-0.9, 0.9)),
    ("exp", np.exp, None), ("exp2", np.exp2, None), ("expm1", np.expm1, None),
    ("log", np.log, positive), ("log1p", np.log1p, positive), ("log2", np.log2, positive),
    ("log10", np.log10, positive), ("sqrt", np.sqrt, positive), ("cbrt", np.cbrt, positive),
    ("negative", np.negative, None), ("positive", np.positive, None),
    ("absolute", np.absolute, None), ("abs", np.abs, None), ("fabs", np.fabs, None),
    ("square", np.square, None), ("reciprocal", np.reciprocal, positive),
    ("rsqrt", lambda x: 1 / np.sqrt(x), positive), ("logistic", _sigmoid, None),
    ("real", np.real, None), ("imag", np.imag, None), ("conj", np.conj, None),
    ("conjugate", np.conjugate, None),
]
NON_DIFFERENTIABLE_UNARY = [
    ("sign", np.sign, None), ("floor", np.floor, _away_from_integers),
    ("ceil", np.ceil, _away_from_integers), ("trunc", np.trunc, _away_from_integers),
    ("fix", np.fix, _away_from_integers), ("rint", np.rint, _away_from_integers),
    ("round", np.round, _away_from_integers), ("around", np.round, _away_from_integers),
    ("isfinite", np.isfinite, None), ("isnan", np.isnan, None), ("isinf", np.isinf, None),
    ("signbit", np.signbit, None), ("zeros_like", np.zeros_like, None),
    ("empty_like", np.zeros_like, None), ("ones_like", np.ones_like, None),
]
BINARY = [
    ("add", np.add, None), ("subtract", np.subtract, None), ("multiply", np.multiply, None),
    ("true_divide", np.true_divide, positive), ("divide", np.divide, positive),
    ("power", np.power, positive), ("maximum", np.maximum, None),
    ("minimum", np.minimum, None), ("arctan2", np.arctan2, None), ("atan2", np.arctan2, None),
    ("hypot", np.hypot, None), ("logaddexp", np.logaddexp, None),
]
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]

CASES = []
for _name, _ref, _make in UNARY:
    CASES.append(Case("numpy." + _name, getattr(snp, _name), _ref, [(2, 3)], _make))
for _name, _ref, _make in NON_DIFFERENTIABLE_UNARY:
    CASES.append(Case("numpy." + _name, getattr(snp, _name), _ref, [(2, 3)], _make,
                      differentiable=False))
for _name, _ref, _make in BINARY:
    CASES.append(Case("numpy." + _name, getattr(snp, _name), _ref, [(2, 3), (2, 3)], _make))
    CASES.append(Case("numpy." + _name, getattr(snp, _name), _ref, [(2, 3), (3,)], _make,
                      id="broadcast"))
for _name in COMPARISONS:
    CASES.append(Case("numpy." + _name, getattr(snp, _name), getattr(np, _name),
                      [(2, 3), (2, 3)], _ints, differentiable=False))
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    CASES.append(Case("numpy." + _name, getattr(snp, _name), getattr(np, _name),
                      [(2, 3), (2, 3)], _ints, differentiable=False))

CASES += [
    Case("numpy.remainder", snp.remainder, np.remainder, [(2, 3), (2, 3)], positive),
    Case("numpy.mod", lambda a: snp.mod(a, 0.7), lambda a: np.mod(a, 0.7), [(2, 3)],
         _away_from_integers, rtol=1e-5),
    Case("numpy.floor_divide", snp.floor_divide, np.floor_divide, [(2, 3), (2, 3)], _ints,
         differentiable=False),
    Case("numpy.where", lambda a, b: snp.where(a > 0, a, b), lambda a, b: np.where(a > 0, a, b),
         [(2, 3), (2, 3)]),
    Case("numpy.clip", lambda a: snp.clip(a, -0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5),
         [(3, 4)]),
    Case("numpy.clip", snp.clip, np.clip, [(3, 4), (3, 4), (3, 4)], id="arrays",
         make=_distinct),
    # reductions
    *[Case("numpy." + n, getattr(snp, n), getattr(np, n), [(3, 4)], _distinct)
      for n in ("sum", "prod", "max", "amax", "min", "amin", "mean", "var", "std",
                "cumsum", "cumprod")],
    Case("numpy.cumulative_sum", lambda a: snp.cumulative_sum(a, axis=1),
         lambda a: np.cumsum(a, axis=1), [(3, 4)]),
    Case("numpy.cumulative_prod", lambda a: snp.cumulative_prod(a, axis=0),
         lambda a: np.cumprod(a, axis=0), [(3, 4)]),
    Case("numpy.product", lambda a: snp.product(a, axis=0), lambda a: np.prod(a, axis=0),
         [(3, 4)]),
    *[Case("numpy." + n, _axis1_kept(getattr(snp, n)),
           _axis1_kept(getattr(np, n)), [(3, 4)], _distinct, id="axis")
      for n in ("sum", "prod", "max", "min", "mean", "var", "std")],
    Case("numpy.var", lambda a: snp.var(a, axis=0, ddof=1), lambda a: np.var(a, axis=0, ddof=1),
         [(3, 4)], id="ddof"),
    Case("numpy.cumsum", lambda a: snp.cumsum(a, axis=0), lambda a: np.cumsum(a, axis=0),
         [(3, 4)], id="axis"),
    *[Case("numpy." + n, getattr(snp, n), getattr(np, n), [(3, 4)], _distinct,
           differentiable=False) for n in ("argmax", "argmin")],
    *[Case("numpy." + n, _axis0(getattr(snp, n)), _axis0(getattr(np, n)),
           [(3, 4)], _distinct, differentiable=False, id="axis") for n in ("argmax", "argmin", "argsort")],
    Case("numpy.argsort", snp.argsort, np.argsort, [(5,)], _distinct, differentiable=False),
    Case("numpy.all", lambda a: snp.all(a > 0, axis=1), lambda a: np.all(a > 0, axis=1),
         [(3, 4)], differentiable=False),
    Case("numpy.any", lambda a: snp.any(a > 0.5), lambda a: np.any(a > 0.5), [(3, 4)],
         differentiable=False),
    # shapes
    Case("numpy.reshape", lambda a: snp.reshape(a, (4, 3)), lambda a: np.reshape(a, (4, 3)),
         [(3, 4)]),
    Case("numpy.ravel", snp.ravel, np.ravel, [(3, 4)]),
    Case("numpy.transpose", snp.transpose, np.transpose, [(2, 3, 4)]),
    Case("numpy.transpose", lambda a: snp.transpose(a, (1, 2, 0)),
         lambda a: np.transpose(a, (1, 2, 0)), [(2, 3, 4)], id="axes"),
    Case("numpy.swapaxes", lambda a: snp.swapaxes(a, 0, 2), lambda a: np.swapaxes(a, 0, 2),
         [(2, 3, 4)]),
    Case("numpy.moveaxis", lambda a: snp.moveaxis(a, 0, -1), lambda a: np.moveaxis(a, 0, -1),
         [(2, 3, 4)]),
    Case("numpy.squeeze", snp.squeeze, np.squeeze, [(3, 1, 4)]),
    Case("numpy.expand_dims", lambda a: snp.expand_dims(a, 1),
         lambda a: np.expand_dims(a, 1), [(3, 4)]),
    Case("numpy.broadcast_to", lambda a: snp.broadcast_to(a, (2, 3, 4)),
         lambda a: np.broadcast_to(a, (2, 3, 4)), [(3, 4)]),
    Case("numpy.concatenate", lambda a, b: snp.concatenate([a, b], axis=1),
         lambda a, b: np.concatenate([a, b], axis=1), [(3, 4), (3, 2)]),
    Case("numpy.concat", lambda a, b: snp.concat([a, b]), lambda a, b: np.concatenate([a, b]),
         [(3, 4), (2, 4)]),
    Case("numpy.stack", lambda a, b: snp.stack([a, b], axis=1),
         lambda a, b: np.stack([a, b], axis=1), [(3, 4), (3, 4)]),
    Case("numpy.split", lambda a: snp.split(a, 2, axis=1)[1],
         lambda a: np.split(a, 2, axis=1)[1], [(3, 4)]),
    Case("numpy.split", lambda a: snp.split(a, [1, 2])[2], lambda a: np.split(a, [1, 2])[2],
         [(4, 3)], id="indices"),
    Case("numpy.array_split", lambda a: snp.array_split(a, 3, axis=1)[0],
         lambda a: np.array_split(a, 3, axis=1)[0], [(3, 4)]),
    Case("numpy.hsplit", lambda a: snp.hsplit(a, 2)[1], lambda a: np.hsplit(a, 2)[1], [(3, 4)]),
    Case("numpy.vsplit", lambda a: snp.vsplit(a, 2)[0], lambda a: np.vsplit(a, 2)[0], [(4, 3)]),
    Case("numpy.dsplit", lambda a: snp.dsplit(a, 2)[1], lambda a: np.dsplit(a, 2)[1],
         [(2, 3, 4)]),
    Case("numpy.flip", snp.flip, np.flip, [(3, 4)]),
    Case("numpy.flip", lambda a: snp.flip(a, 1), lambda a: np.flip(a, 1), [(3, 4)], id="axis"),
    Case("numpy.fliplr", snp.fliplr, np.fliplr, [(3, 4)]),
    Case("numpy.flipud", snp.flipud, np.flipud, [(3, 4)]),
    Case("numpy.pad", lambda a: snp.pad(a, ((1, 0), (2, 1))),
         lambda a: np.pad(a, ((1, 0), (2, 1))), [(3, 4)]),
    Case("numpy.sort", snp.sort, np.sort, [(3, 4)], _distinct),
    Case("numpy.sort", lambda a: snp.sort(a, axis=0), lambda a: np.sort(a, axis=0), [(3, 4)],
         _distinct, id="axis"),
    # products
    Case("numpy.dot", snp.dot, np.dot, [(3, 4), (4, 2)]),
    Case("numpy.dot", snp.dot, np.dot, [(4,), (4,)], id="vectors"),
    Case("numpy.matmul", snp.matmul, np.matmul, [(2, 3, 4), (4, 2)]),
    Case("numpy.outer", snp.outer, np.outer, [(3,), (4,)]),
    Case("numpy.tensordot", snp.tensordot, np.tensordot, [(2, 3, 4), (3, 4, 2)]),
    Case("numpy.tensordot", lambda a, b: snp.tensordot(a, b, ((0,), (1,))),
         lambda a, b: np.tensordot(a, b, ((0,), (1,))), [(3, 4), (2, 3)], id="axes"),
    Case("numpy.einsum", lambda a, b: snp.einsum("ij,jk->ik", a, b),
         lambda a, b: np.einsum("ij,jk->ik", a, b), [(3, 4), (4, 2)]),
    Case("numpy.einsum", lambda a: snp.einsum("ii->i", a), lambda a: np.einsum("ii->i", a),
         [(3, 3)], id="diagonal"),
    Case("numpy.einsum", lambda a, b, c: snp.einsum("bi,bij,j->b", a, b, c),
         lambda a, b, c: np.einsum("bi,bij,j->b", a, b, c), [(2, 3), (2, 3, 4), (4,)],
         id="three"),
    Case("numpy.einsum", lambda a: snp.einsum("ij->", a), lambda a: np.einsum("ij->", a),
         [(3, 4)], id="sum"),
    Case("numpy.einsum", lambda a: snp.einsum("ii", a), lambda a: np.einsum("ii", a),
         [(3, 3)], id="trace"),
    Case("numpy.einsum", lambda a, b: snp.einsum("...ii,i->...i", a, b),
         lambda a, b: np.einsum("...ii,i->...i", a, b), [(2, 3, 3), (3,)], id="batch_diagonal"),
    Case("numpy.einsum", lambda a: snp.einsum("ijij->ij", a), lambda a: np.einsum("ijij->ij", a),
         [(2, 3, 2, 3)], id="two_diagonals"),
    Case("numpy.einsum", lambda a, b: snp.einsum("...ij,...jk", a, b),
         lambda a, b: np.einsum("...ij,...jk", a, b), [(2, 3, 4), (2, 4, 2)], id="ellipsis"),
    # indexing
    Case("numpy.getitem", lambda a: snp.getitem(a, (slice(None), 1)), lambda a: a[:, 1],
         [(3, 4)]),
    Case("numpy.take", lambda a: snp.take(a, np.array([2, 0, 2]), axis=1),
         lambda a: np.take(a, [2, 0, 2], axis=1), [(3, 4)]),
    Case("numpy.take", lambda a: snp.take(a, np.array([5, 1])),
         lambda a: np.take(a, [5, 1]), [(3, 4)], id="flat"),
    Case("numpy.take_along_axis",
         lambda a: snp.take_along_axis(a, np.array([[0], [3], [1]]), axis=1),
         lambda a: np.take_along_axis(a, np.array([[0], [3], [1]]), axis=1), [(3, 4)]),
]

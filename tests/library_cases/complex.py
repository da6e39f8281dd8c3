"""Complex inputs (complex128) through the elementwise ops, products and reductions; gradients by
JAX's convention (df/dx - 1j df/dy of the harness's real loss)."""
import numpy as np

import secant.numpy as snp
from tests.library_cases import Case


def _away_from_zero(rng, shape, dtype):
    """|z| in [0.5, 1.5] with any phase (log, sqrt, reciprocal, angle: away from the branch
    point and off the negative real axis's cut by the phase range)."""
    r = rng.uniform(0.5, 1.5, shape)
    phi = rng.uniform(-2.5, 2.5, shape)
    return (r * np.exp(1j * phi)).astype(dtype)


def _unary(name, fn, ref, make=None, **kw):
    kw.setdefault("id", "complex")
    return Case("numpy." + name, fn, ref, [(2, 3)], make=make, complex=True, **kw)


CASES = [
    Case("numpy.roll", lambda a: snp.roll(a, (1, -2), (0, 1)),
         lambda a: np.roll(a, (1, -2), (0, 1)), [(3, 4)], complex=True, id="complex"),
    # elementwise, holomorphic
    _unary("exp", snp.exp, np.exp),
    _unary("log", snp.log, np.log, _away_from_zero),
    _unary("sqrt", snp.sqrt, np.sqrt, _away_from_zero),
    _unary("sin", snp.sin, np.sin),
    _unary("cos", snp.cos, np.cos),
    _unary("tan", snp.tan, np.tan),
    _unary("sinh", snp.sinh, np.sinh),
    _unary("cosh", snp.cosh, np.cosh),
    _unary("tanh", snp.tanh, np.tanh),
    _unary("expm1", snp.expm1, np.expm1),
    _unary("log1p", snp.log1p, np.log1p, _away_from_zero),
    _unary("square", snp.square, np.square),
    _unary("reciprocal", snp.reciprocal, np.reciprocal, _away_from_zero),
    _unary("negative", snp.negative, np.negative),
    _unary("power", lambda a: a ** 3, lambda a: a ** 3),
    _unary("power", lambda a: a ** 2.5, lambda a: a ** 2.5, _away_from_zero, rtol=1e-5,
           id="complex_fractional"),
    # the parts (real-valued results, JAX's conventions)
    _unary("real", snp.real, np.real),
    _unary("imag", snp.imag, np.imag),
    _unary("conj", snp.conj, np.conj),
    _unary("conjugate", snp.conjugate, np.conjugate),
    _unary("abs", snp.abs, np.abs, _away_from_zero),
    _unary("angle", snp.angle, np.angle, _away_from_zero),
    _unary("angle", lambda a: snp.angle(a, deg=True), lambda a: np.angle(a, deg=True),
           _away_from_zero, id="complex_deg"),
    # two operands
    Case("numpy.add", lambda a, b: a + b, lambda a, b: a + b, [(2, 3), (3,)], complex=True,
         id="complex"),
    Case("numpy.subtract", lambda a, b: a - b, lambda a, b: a - b, [(2, 3), (2, 3)],
         complex=True, id="complex"),
    Case("numpy.multiply", lambda a, b: a * b, lambda a, b: a * b, [(2, 3), (3,)], complex=True,
         id="complex"),
    Case("numpy.divide", lambda a, b: a / b, lambda a, b: a / b, [(2, 3), (2, 3)],
         make=_away_from_zero, complex=True, id="complex"),
    Case("numpy.power", lambda a, b: a ** b, lambda a, b: a ** b, [(2, 3), (2, 3)],
         make=_away_from_zero, complex=True, rtol=1e-5, id="complex_both"),
    Case("numpy.matmul", lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3), (3, 4)], complex=True,
         id="complex"),
    Case("numpy.dot", snp.dot, np.dot, [(3,), (3, 2)], complex=True, id="complex"),
    Case("numpy.einsum", lambda a, b: snp.einsum("ij,kj->ik", a, b),
         lambda a, b: np.einsum("ij,kj->ik", a, b), [(2, 3), (4, 3)], complex=True, id="complex"),
    # reductions
    Case("numpy.sum", lambda a: snp.sum(a, axis=0), lambda a: np.sum(a, axis=0), [(3, 4)],
         complex=True, id="complex"),
    Case("numpy.mean", lambda a: snp.mean(a, axis=1), lambda a: np.mean(a, axis=1), [(3, 4)],
         complex=True, id="complex"),
    Case("numpy.prod", lambda a: snp.prod(a, axis=1), lambda a: np.prod(a, axis=1), [(3, 4)],
         complex=True, id="complex"),
    Case("numpy.var", lambda a: snp.var(a, axis=0), lambda a: np.var(a, axis=0), [(3, 4)],
         complex=True, id="complex"),
    Case("numpy.std", lambda a: snp.std(a, axis=1, ddof=1), lambda a: np.std(a, axis=1, ddof=1),
         [(3, 4)], complex=True, id="complex"),
]

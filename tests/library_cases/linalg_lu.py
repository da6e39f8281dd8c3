"""numpy.linalg's and scipy.linalg's LU / Cholesky / triangular family (secant/numpy/linalg.py,
secant/scipy/linalg.py, secant.lax.linalg)."""
import numpy as np
import scipy.linalg as sl

import secant.numpy as snp
import secant.scipy.linalg as sla
from secant import lax
from tests.library_cases import Case, positive as _positive, spd as _spd, well_conditioned


def _matrices(maker):
    """maker for square matrices (last two axes equal), uniform(-1, 1) for the other
    arguments (right-hand sides)."""
    def make(rng, shape, dtype):
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            return maker(rng, shape, dtype)
        return rng.uniform(-1, 1, shape).astype(dtype)
    return make


W = _matrices(well_conditioned)
spd = _matrices(_spd)
N = snp.linalg

# (secant reads a case's function as source: its parameters are closure cells, not defaults)
def _norm(o):
    return (lambda a: N.norm(a, o)), (lambda a: np.linalg.norm(a, o))


def _solve_triangular(t, lo, u):
    return ((lambda a, b: sla.solve_triangular(a, b, trans=t, lower=lo, unit_diagonal=u)),
            (lambda a, b: sl.solve_triangular(a, b, trans=t, lower=lo, unit_diagonal=u)))


def _lu_solve(t):
    return ((lambda a, b: sla.lu_solve(sla.lu_factor(a), b, trans=t)),
            (lambda a, b: sl.lu_solve(sl.lu_factor(a), b, trans=t)))


CASES = [
    Case("numpy.linalg.det", N.det, np.linalg.det, [(3, 3)], W),
    Case("numpy.linalg.det", N.det, np.linalg.det, [(2, 3, 3)], W, id="batched"),
    Case("numpy.linalg.slogdet", lambda a: N.slogdet(a)[1], lambda a: np.linalg.slogdet(a)[1],
         [(4, 4)], W),
    Case("numpy.linalg.slogdet", lambda a: N.slogdet(a)[0], lambda a: np.linalg.slogdet(a)[0],
         [(3, 3)], W, differentiable=False, id="sign"),
    Case("numpy.linalg.inv", N.inv, np.linalg.inv, [(3, 3)], W),
    Case("numpy.linalg.inv", N.inv, np.linalg.inv, [(2, 3, 3)], W, id="batched"),
    Case("numpy.linalg.solve", N.solve, np.linalg.solve, [(3, 3), (3,)], W, id="vector"),
    Case("numpy.linalg.solve", N.solve, np.linalg.solve, [(3, 3), (3, 2)], W, id="matrix"),
    Case("numpy.linalg.solve", N.solve, np.linalg.solve, [(2, 3, 3), (2, 3, 2)], W,
         id="batched"),
    Case("numpy.linalg.cholesky", N.cholesky, np.linalg.cholesky, [(3, 3)], spd),
    Case("numpy.linalg.cholesky", lambda a: N.cholesky(a, upper=True),
         lambda a: np.linalg.cholesky(a, upper=True), [(2, 3, 3)], spd, id="upper"),
    Case("numpy.linalg.matrix_power", lambda a: N.matrix_power(a, 3),
         lambda a: np.linalg.matrix_power(a, 3), [(3, 3)]),
    Case("numpy.linalg.matrix_power", lambda a: N.matrix_power(a, -2),
         lambda a: np.linalg.matrix_power(a, -2), [(3, 3)], W, id="negative"),
    Case("numpy.linalg.matrix_power", lambda a: N.matrix_power(a, 0),
         lambda a: np.linalg.matrix_power(a, 0), [(3, 3)], id="zero"),
    Case("numpy.linalg.multi_dot", lambda a, b, c: N.multi_dot([a, b, c]),
         lambda a, b, c: np.linalg.multi_dot([a, b, c]), [(3,), (3, 4), (4, 2)]),
    Case("numpy.linalg.norm", N.norm, np.linalg.norm, [(4,)], id="vector"),
    Case("numpy.linalg.norm", N.norm, np.linalg.norm, [(3, 4)], id="fro"),
    Case("numpy.linalg.norm", N.norm, np.linalg.norm, [(2, 3, 4)], id="flat"),
    *[Case("numpy.linalg.norm", *_norm(o), [(5,)], id=f"vector-{o}")
      for o in (1, 3, 0.5, np.inf, -np.inf)],
    Case("numpy.linalg.norm", lambda a: N.norm(a, 0), lambda a: np.linalg.norm(a, 0), [(5,)],
         differentiable=False, id="vector-0"),
    *[Case("numpy.linalg.norm", *_norm(o), [(3, 4)], id=f"matrix-{o}")
      for o in ("fro", 1, -1, np.inf, -np.inf)],
    Case("numpy.linalg.norm", lambda a: N.norm(a, axis=1, keepdims=True),
         lambda a: np.linalg.norm(a, axis=1, keepdims=True), [(3, 4)], id="axis-keepdims"),
    Case("numpy.linalg.norm", lambda a: N.norm(a, 1, axis=(0, 2)),
         lambda a: np.linalg.norm(a, 1, axis=(0, 2)), [(3, 2, 4)], id="matrix-axes"),
    Case("numpy.linalg.norm", lambda a: N.norm(a, np.inf, axis=(2, 0), keepdims=True),
         lambda a: np.linalg.norm(a, np.inf, axis=(2, 0), keepdims=True), [(3, 2, 4)],
         id="matrix-axes-keepdims"),
    # scipy.linalg
    Case("scipy.linalg.cholesky", sla.cholesky, sl.cholesky, [(3, 3)], spd),
    Case("scipy.linalg.cholesky", lambda a: sla.cholesky(a, lower=True),
         lambda a: sl.cholesky(a, lower=True), [(3, 3)], spd, id="lower"),
    Case("scipy.linalg.cho_factor", lambda a: sla.cho_factor(a)[0],
         lambda a: np.triu(sl.cho_factor(a)[0]), [(3, 3)], _spd),
    Case("scipy.linalg.cho_solve", lambda a, b: sla.cho_solve(sla.cho_factor(a), b),
         lambda a, b: sl.cho_solve(sl.cho_factor(a), b), [(3, 3), (3, 2)], spd),
    Case("scipy.linalg.cho_solve", lambda a, b: sla.cho_solve(sla.cho_factor(a, lower=True), b),
         lambda a, b: sl.cho_solve(sl.cho_factor(a, lower=True), b), [(3, 3), (3,)], spd,
         id="lower-vector"),
    *[Case("scipy.linalg.solve_triangular", *_solve_triangular(t, lo, u), [(3, 3), (3, 2)], W,
           id=f"trans{t}-lower{lo}-unit{u}")
      for t in (0, 1) for lo in (True, False) for u in (False, True)],
    Case("scipy.linalg.solve_triangular", lambda a, b: sla.solve_triangular(a, b, lower=True),
         lambda a, b: sl.solve_triangular(a, b, lower=True), [(3, 3), (3,)], W, id="vector"),
    Case("scipy.linalg.lu", lambda a: sla.lu(a)[0], lambda a: sl.lu(a)[0], [(4, 4)],
         differentiable=False, id="P"),
    Case("scipy.linalg.lu", lambda a: sla.lu(a)[1], lambda a: sl.lu(a)[1], [(4, 4)], id="L"),
    Case("scipy.linalg.lu", lambda a: sla.lu(a)[2], lambda a: sl.lu(a)[2], [(4, 4)], id="U"),
    Case("scipy.linalg.lu", lambda a: sla.lu(a, permute_l=True)[0],
         lambda a: sl.lu(a, permute_l=True)[0], [(4, 4)], id="PL"),
    Case("scipy.linalg.lu_factor", lambda a: sla.lu_factor(a)[0], lambda a: sl.lu_factor(a)[0],
         [(4, 4)]),
    Case("scipy.linalg.lu_factor", lambda a: sla.lu_factor(a)[1], lambda a: sl.lu_factor(a)[1],
         [(4, 4)], differentiable=False, id="piv"),
    *[Case("scipy.linalg.lu_solve", *_lu_solve(t), [(3, 3), (3, 2)], W, id=f"trans{t}")
      for t in (0, 1)],
    Case("scipy.linalg.expm", sla.expm, sl.expm, [(3, 3)]),
    Case("scipy.linalg.expm", lambda a: sla.expm(4 * a), lambda a: sl.expm(4 * a), [(3, 3)],
         rtol=1e-5, id="scaled"),
    Case("scipy.linalg.sqrtm", sla.sqrtm, sl.sqrtm, [(3, 3)], W),
    Case("scipy.linalg.sqrtm", sla.sqrtm, sl.sqrtm, [(2, 2)], W, complex=True, id="complex"),
    Case("scipy.linalg.sqrtm", lambda a: sla.sqrtm(a @ a), lambda a: sl.sqrtm(a @ a), [(3, 3)],
         differentiable=False, id="of_a_square"),
    Case("scipy.linalg.det", sla.det, sl.det, [(3, 3)], W),
    Case("scipy.linalg.hankel", sla.hankel, sl.hankel, [(3,)]),
    Case("scipy.linalg.hankel", sla.hankel, sl.hankel, [(3,), (4,)], id="c_r"),
    Case("scipy.linalg.circulant", sla.circulant, sl.circulant, [(4,)]),
    Case("scipy.linalg.companion", sla.companion, sl.companion, [(4,)], _positive),
    Case("scipy.linalg.inv", sla.inv, sl.inv, [(3, 3)], W),
    Case("scipy.linalg.solve", sla.solve, sl.solve, [(3, 3), (3, 2)], W),
    Case("scipy.linalg.solve", lambda a, b: sla.solve(a, b, assume_a="pos"),
         lambda a, b: sl.solve(a, b, assume_a="pos"), [(3, 3), (3,)], spd, id="pos"),
    # secant.lax.linalg (jax.lax.linalg's names)
    Case("lax.linalg.cholesky", lambda a: lax.linalg.cholesky(a, symmetrize_input=False),
         lambda a: np.linalg.cholesky(a), [(3, 3)], spd),
    Case("lax.linalg.triangular_solve",
         lambda a, b: lax.linalg.triangular_solve(a, b, left_side=False, lower=True,
                                                  transpose_a=True),
         lambda a, b: sl.solve_triangular(a, b.T, lower=True, trans=0).T, [(3, 3), (2, 3)], W),
    Case("lax.linalg.lu", lambda a: lax.linalg.lu(a)[0], lambda a: sl.lu_factor(a)[0],
         [(2, 4, 4)]),
]

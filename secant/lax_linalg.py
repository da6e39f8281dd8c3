"""secant.lax.linalg: the linear-algebra primitives under jax.lax.linalg's names.

`cholesky`, `triangular_solve`, `lu_factors`, `lu_pivots` and `lu_pivots_to_permutation` are
ops with rules of their own (transformer/ops.py; ad/linalg_rules.py states each derivative).
`lu` is written with ops: the transforms read its source.
All work on the last two axes, batched over the leading ones.
"""
import numpy as np

import secant.numpy as snp
from secant.backends.core import bind
from secant.backends.errors import SecantTypeError, where
from secant.backends.primitives.linalg import (cholesky_p, lu_p, lu_pivots_to_permutation_p,
                                                triangular_solve_p)
from secant.numpy.conversion import asarray

__secant_by_source__ = True      # lu is read as its source


def _matrix(x, name):
    x = asarray(x)
    if x.dtype.kind not in "fc":
        raise SecantTypeError(f"lax.linalg.{name} needs a floating-point or complex array, got "
                              f"{x.dtype}{where()}")
    return x


def cholesky(x, symmetrize_input=True):
    """The lower Cholesky factor L of x (x = L L^H). symmetrize_input: factor (x + x^H) / 2, as
    JAX; otherwise only x's lower triangle is read. Not positive definite: NaNs."""
    x = _matrix(x, "cholesky")
    if symmetrize_input:
        x = (x + snp.conj(snp.swapaxes(x, -1, -2))) / 2
    return bind(cholesky_p, x)


def triangular_solve(a, b, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                     unit_diagonal=False):
    """x with op(a) x = b (left_side) or x op(a) = b, a triangular (only its `lower` or upper
    triangle is read; unit_diagonal: its diagonal is taken as ones); op transposes and/or
    conjugates a. a and b share their leading (batch) axes."""
    a, b = _matrix(a, "triangular_solve"), asarray(b)
    dtype = snp.result_type(a, b)
    a, b = a.astype(dtype), b.astype(dtype)
    return bind(triangular_solve_p, a, b, left_side=bool(left_side), lower=bool(lower),
                transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                unit_diagonal=bool(unit_diagonal))


def lu_factors(x):
    """LU with partial pivoting of x (m x n, square or not), packed as LAPACK's getrf leaves
    it: L strictly below the diagonal (its unit diagonal implied), U on and above it."""
    x = _matrix(x, "lu")
    return bind(lu_p, x)[0]


def lu_pivots(x):
    """The pivots of x's LU: row k was swapped with row pivots[k] at step k (0-based, int32)."""
    x = _matrix(x, "lu")
    return bind(lu_p, x)[1]


def lu_pivots_to_permutation(pivots, permutation_size):
    """The permutation the row swaps `pivots` make of range(permutation_size) (an op: a loop
    over the pivots in NumPy eagerly, a StableHLO while loop under jit; no derivative)."""
    pivots = asarray(pivots)
    if pivots.dtype != np.int32:
        pivots = pivots.astype(np.int32)
    return bind(lu_pivots_to_permutation_p, pivots, permutation_size=int(permutation_size))


def lu(x):
    """(lu, pivots, permutation) of x (m x n), as jax.lax.linalg.lu: P x = L U with P the
    permutation's matrix (row i of P x is row permutation[i] of x; m entries)."""
    factors = lu_factors(x)
    pivots = lu_pivots(x)
    permutation = lu_pivots_to_permutation(pivots, np.shape(x)[-2])
    return factors, pivots, permutation

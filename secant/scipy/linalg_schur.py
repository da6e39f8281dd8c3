"""scipy.linalg's Schur-form family (re-exported by secant.scipy.linalg): schur, hessenberg,
rsf2csf, funm and solve_sylvester, as jax.scipy.linalg's.

schur and hessenberg are LAPACK's gees and gehrd (backends/primitives/linalg_spectral.py),
eagerly and under jit the same kernel. The transforms see each as a custom_vmap function: vmap
runs the primitive on the stack (it takes leading batch axes); like JAX's they have no
derivative, so grad and jvp of them (and of funm and solve_sylvester, which use schur) raise
JAX's NotImplementedError. rsf2csf is plain secant.numpy, differentiable as JAX's.
"""
import numpy as np

import secant.numpy as snp
from secant.backends.core import bind
from secant.backends.errors import SecantValueError, where as _where
from secant.backends.primitives import linalg_spectral as _prim
from secant.custom import custom_vmap
from secant.numpy.linalg import _inexact

__secant_by_source__ = True      # transforms read this module like user code


def _mH(x):
    return snp.conj(snp.swapaxes(x, -1, -2))


def _no_derivative(fn, name):
    """fn (NumPy-level: primitives on stacks of matrices) as a custom_vmap function: vmap runs
    fn on the stack; grad and jvp refuse, as JAX's (no differentiation rule)."""
    def fn_vmap(axis_size, in_batched, *args):
        return fn(*args), True
    made = custom_vmap(fn)
    made.def_vmap(fn_vmap)
    made.no_derivative = (f"Differentiation rule for '{name}' not implemented (as in JAX: "
                          f"scipy.linalg.{name} has no derivative)")
    return made


def _schur_values(a):
    return tuple(bind(_prim.schur_p, a))


def _hessenberg_values(a, calc_q):
    """(h, q) of a stack of n x n matrices (n >= 1): gehrd, then q from its reflectors
    (orgqr on the trailing (n - 1) x (n - 1) block, 1 in the corner)."""
    packed, tau = bind(_prim.hessenberg_p, a)
    n = a.shape[-1]
    h = np.triu(np.ones((n, n), bool), -1)
    h = snp.where(h, packed, 0)
    if not calc_q or n == 1:
        return h, snp.ones_like(a)
    inner = bind(_prim.householder_product_p, packed[..., 1:, :-1], tau)[0]
    q = snp.zeros_like(a).at[..., 0, 0].set(1).at[..., 1:, 1:].set(inner)
    return h, q


_schur_factors = _no_derivative(_schur_values, "schur")
_hessenberg_factors = _no_derivative(_hessenberg_values, "hessenberg")


def _square_matrix(a, name):
    a = _inexact(a)
    if np.ndim(a) < 2 or np.shape(a)[-1] != np.shape(a)[-2]:
        raise SecantValueError(f"{name}: expected a (stack of) square matrices, got shape "
                               f"{np.shape(a)}{_where()}")
    return a


def _complex(a):
    return a.astype(snp.result_type(a.dtype, snp.complex64))


def schur(a, output="real"):
    """(t, z) with a = z t z^H: t upper triangular (output='complex') or quasi-triangular with
    2 x 2 blocks for complex eigenvalue pairs (output='real', real a), z unitary."""
    if output not in ("real", "complex"):
        raise SecantValueError(f"schur: output must be 'real' or 'complex', got {output!r}"
                               + _where())
    a = _square_matrix(a, "schur")
    if output == "complex":
        a = _complex(a)
    return _schur_factors(a)


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
    """h (zero below the first subdiagonal) with a = q h q^H; (h, q) with calc_q."""
    a = _square_matrix(a, "hessenberg")
    n = np.shape(a)[-1]
    if n == 0:
        return (snp.zeros_like(a), snp.zeros_like(a)) if calc_q else snp.zeros_like(a)
    h, q = _hessenberg_factors(a, calc_q)
    return (h, q) if calc_q else h

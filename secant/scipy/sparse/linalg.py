"""secant.scipy.sparse.linalg: cg, bicgstab and gmres, as jax.scipy.sparse.linalg.

A is a square matrix or a function computing A's products (on an array or a pytree b); M a
preconditioner of either kind. Each solve is a lax.custom_linear_solve, so its derivatives are
implicit, as JAX's: x_dot = solve(A, b_dot - A_dot x), b_bar = solve(A^T, x_bar), never a derivative through the iterations, accurate where both solves
converge. The iterations are secant/scipy/sparse/isolve.py. The second result (`info`) is
JAX's: None for cg and bicgstab, 0 (or -1 where x has NaNs) for gmres."""
import secant.numpy as snp
from secant import lax, tree_util
from secant.scipy.sparse import isolve

__secant_by_source__ = True      # the transforms read these functions like user code


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """x with A x = b by conjugate gradients, A Hermitian positive definite."""
    solve = isolve.solver("cg", x0, tol, atol, maxiter, M)
    return _solved(A, b, solve), None


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """x with A x = b by stabilised bi-conjugate gradients (any nonsingular A)."""
    solve = isolve.solver("bicgstab", x0, tol, atol, maxiter, M)
    return _solved(A, b, solve), None


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
    """x with A x = b by restarted GMRES: maxiter restarts of a Krylov space of size restart
    (solve_method 'batched': its least-squares problem solved once per restart;
    'incremental': by Givens rotations as it grows, stopping early)."""
    solve = isolve.solver("gmres", x0, tol, atol, maxiter, M, restart, solve_method)
    x = _solved(A, b, solve)
    return x, snp.where(snp.isnan(_squares(x)), -1, 0)


def _squares(x):
    """The sum of |x|^2 over x's leaves (NaN where x has one)."""
    total = 0.0
    for v in tree_util.tree_leaves(x):
        total = total + snp.sum(snp.abs(v) ** 2)
    return total


def _solved(A, b, solve):
    """custom_linear_solve(A's products, b): the transposed solve runs the same iteration on
    A^T's products (the vjp of matvec), so a complex Hermitian A's derivative is right too."""
    if callable(A):     # (the only branch where A is a function secant specialises to)
        x = _with_function(A, b, solve)
    else:
        x = _with_matrix(A, b, solve)
    return x


def _with_function(A, b, solve):
    def matvec(v):
        return A(v)
    return lax.custom_linear_solve(matvec, b, solve, solve)


def _with_matrix(A, b, solve):
    shape = snp.shape(A)
    isolve.check_square(shape)

    def matvec(v):
        return snp.dot(A, v)
    return lax.custom_linear_solve(matvec, b, solve, solve)


# a function A closing over followed values (`lambda v: s * (K @ v)`) is passed in by
# specialising these to it (transformer/higher_order.py), as a user's own helper would be
for _f in (cg, bicgstab, gmres, _solved, _with_function):
    _f.__secant_takes_functions__ = True

__all__ = ["cg", "bicgstab", "gmres"]

"""The derivatives of the linear-algebra ops (secant.lax.linalg), as functions generated code
calls by name (ad/vjp_rules.py and ad/jvp_rules.py name them). They are written with
secant.numpy and secant.lax.linalg's ops, so the transforms read them like user code: a
derivative that calls them is differentiated again (grad of grad of logdet) and batched.

Notation: A the operand, dA its tangent, G the result's cotangent, op(A) A transposed and/or
conjugated as the op's flags say, tril/triu the lower/upper triangle. Cotangents follow JAX's
convention (the transpose of a linear map, not its adjoint), so complex arrays read the same.
"""
import numpy as np

import secant.numpy as snp
from secant import lax
from secant.ad.rule_helpers import constant

__secant_by_source__ = True      # transforms read these helpers as source


def _mT(x):
    return snp.swapaxes(x, -1, -2)


def _mH(x):
    return snp.conj(snp.swapaxes(x, -1, -2))


def _tri(x, lower, k=0):
    """tril(x, k) (lower) or triu(x, k) of the last two axes, as a masked select."""
    n, m = np.shape(x)[-2], np.shape(x)[-1]
    mask = np.tri(n, m, k, dtype=bool) if lower else ~np.tri(n, m, k - 1, dtype=bool)
    return snp.where(mask, x, 0)


def _diag_part(x):
    """x times the identity: its diagonal, zeros elsewhere."""
    return snp.where(np.eye(np.shape(x)[-1], dtype=bool), x, 0)


# --- cholesky: A = L L^H ------------------------------------------------------------------------
def _cholesky_input(a_dot, symmetrize_input):
    """The tangent of the matrix factored: (dA + dA^H) / 2 with symmetrize_input, else the
    Hermitian matrix whose lower triangle is dA's and whose diagonal is dA's real part (what
    the factorisation reads: the exact derivative, where JAX's takes dA whole)."""
    if symmetrize_input:
        out = (a_dot + _mH(a_dot)) / 2
    else:
        below = _tri(a_dot, True, -1)
        out = below + _mH(below) + _diag_part(snp.real(a_dot))
    return out


def _phi(x):
    """Phi(X): the lower triangle of X with its diagonal halved."""
    return _tri(x, True, -1) + _diag_part(x) / 2


def cholesky_jvp(x_dot, L, symmetrize_input=True):
    """dL = L Phi(L^-1 dA L^-H)."""
    s = _cholesky_input(x_dot, symmetrize_input)
    left = lax.linalg.triangular_solve(L, s, left_side=True, lower=True)
    inner = lax.linalg.triangular_solve(L, left, left_side=False, lower=True, transpose_a=True,
                                        conjugate_a=True)
    return L @ _phi(inner)


def cholesky_grad(g, L, symmetrize_input=True):
    """The transpose of cholesky_jvp (transpose, not adjoint: dL = L M has M_bar = L^T G, and
    M = L^-1 S L^-H has S_bar = L^-T M_bar conj(L)^-1): S = L^-T Phi(L^T G) conj(L)^-1, then the
    transpose of the input's symmetrisation: (S + S^H) / 2, or tril(S + S^H, -1) + Re diag(S)
    (lower triangle read)."""
    m = _phi(_mT(L) @ g)
    left = lax.linalg.triangular_solve(L, m, left_side=True, lower=True, transpose_a=True)
    s = lax.linalg.triangular_solve(L, left, left_side=False, lower=True, conjugate_a=True)
    if symmetrize_input:
        out = (s + _mH(s)) / 2
    else:
        out = _tri(s + _mH(s), True, -1) + _diag_part(snp.real(s))
    return out


# --- triangular_solve: X = op(A)^-1 B (left side) or B op(A)^-1 -------------------------------------
def _read_part(a, lower, unit_diagonal):
    """The part of A the solve reads: its triangle (without the diagonal when it is unit)."""
    return _tri(a, lower, (-1 if lower else 1) if unit_diagonal else 0)


def _op(x, transpose_a, conjugate_a):
    if conjugate_a:
        x = snp.conj(x)
    if transpose_a:
        x = _mT(x)
    return x


def triangular_solve_jvp_a(a_dot, a, ans, left_side=False, lower=False, transpose_a=False,
                           conjugate_a=False, unit_diagonal=False):
    """dX = -op(A)^-1 op(dA) X (left side), -X op(dA) op(A)^-1 (right side), dA masked to the
    part A's solve reads."""
    d = _op(_read_part(a_dot, lower, unit_diagonal), transpose_a, conjugate_a)
    rhs = d @ ans if left_side else ans @ d
    return -lax.linalg.triangular_solve(a, rhs, left_side=left_side, lower=lower,
                                        transpose_a=transpose_a, conjugate_a=conjugate_a,
                                        unit_diagonal=unit_diagonal)


def triangular_solve_grad_b(g, a, left_side=False, lower=False, transpose_a=False,
                            conjugate_a=False, unit_diagonal=False):
    """B_bar = op(A)^-T G (left side), G op(A)^-T: the same solve with op transposed."""
    return lax.linalg.triangular_solve(a, g, left_side=left_side, lower=lower,
                                       transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                       unit_diagonal=unit_diagonal)


def triangular_solve_grad_a(g, a, ans, left_side=False, lower=False, transpose_a=False,
                            conjugate_a=False, unit_diagonal=False):
    """op(dA)'s cotangent is -B_bar X^T (left side) or -X^T B_bar, B_bar as above; A_bar is it
    through op's transpose, masked to the part the solve reads."""
    b_bar = triangular_solve_grad_b(g, a, left_side, lower, transpose_a, conjugate_a,
                                    unit_diagonal)
    d_bar = -(b_bar @ _mT(ans)) if left_side else -(_mT(ans) @ b_bar)
    if transpose_a:
        d_bar = _mT(d_bar)
    if conjugate_a:
        d_bar = snp.conj(d_bar)
    return _read_part(d_bar, lower, unit_diagonal)


# --- lu: P A = L U, packed ---------------------------------------------------------------------------
@constant
def _permutation(a):
    """The row permutation of a's LU (integers: no derivative)."""
    return lax.linalg.lu_pivots_to_permutation(lax.linalg.lu_pivots(a), np.shape(a)[-2])


def _rows(x, perm):
    """P x: row i is row perm[i] of x."""
    return snp.take_along_axis(x, snp.broadcast_to(perm[..., :, None], np.shape(x)), axis=-2)


def _unit_lower(lu):
    return _tri(lu, True, -1) + np.eye(np.shape(lu)[-1], dtype=lu.dtype)


def _upper_last_one(lu):
    """U with its last pivot set to 1: the solves below read only U's leading pivots (the last
    column of M is never used), so a singular matrix whose last pivot is 0 (rank n - 1, as
    the adjugate's derivative meets at a singular matrix) still has a finite derivative.
    A 0 x 0 U has no pivot to set."""
    if np.shape(lu)[-1] == 0:
        return lu
    return lu.at[..., -1, -1].set(1)


def _padded_factors(lu):
    """(L, U) of an m x n LU (k = min(m, n)) made square as JAX's rule makes them: L m x m,
    unit lower, the identity past column k; U n x n, upper, the identity past row k."""
    m, n = np.shape(lu)[-2], np.shape(lu)[-1]
    k = min(m, n)
    batch = [(0, 0)] * (len(np.shape(lu)) - 2)
    lower = snp.pad(_tri(lu[..., :, :k], True, -1), batch + [(0, 0), (0, m - k)])
    upper = snp.pad(_tri(lu[..., :k, :], False), batch + [(0, n - k), (0, 0)])
    tail = np.diag(np.arange(n) >= k).astype(lu.dtype)
    return lower + np.eye(m, dtype=lu.dtype), upper + tail


def _lu_jvp_rectangular(x_dot, x, ans):
    """m != n (JAX's rule): Z = L^-1 P dA U^-1 (L, U padded square); dL + dU = L tril(Z, -1)
    + triu(Z) U, m x n as the packed factors."""
    lower, upper = _padded_factors(ans)
    z = lax.linalg.triangular_solve(lower, _rows(x_dot, _permutation(x)), left_side=True,
                                    lower=True, unit_diagonal=True)
    z = lax.linalg.triangular_solve(upper, z, left_side=False, lower=False)
    return lower @ _tri(z, True, -1) + _tri(z, False) @ upper


def _lu_grad_rectangular(g, x, ans):
    """The transpose of _lu_jvp_rectangular: Z_bar = tril(L^T G, -1) + triu(G U^T), then
    A_bar = P^T L^-T Z_bar U^-T."""
    lower, upper = _padded_factors(ans)
    z_bar = _tri(_mT(lower) @ g, True, -1) + _tri(g @ _mT(upper), False)
    t = lax.linalg.triangular_solve(upper, z_bar, left_side=False, lower=False,
                                    transpose_a=True)
    t = lax.linalg.triangular_solve(lower, t, left_side=True, lower=True, transpose_a=True,
                                    unit_diagonal=True)
    return _rows(t, snp.argsort(_permutation(x), axis=-1).astype(snp.int32))


def lu_jvp(x_dot, x, ans):
    """With X = L^-1 P dA and M = tril(X U^-1, -1): dL = L M, dU = X - M U (upper); the packed
    tangent is dL + dU. (M reads only U's first n - 1 pivots: finite at a zero last pivot.)"""
    if np.shape(x)[-2] != np.shape(x)[-1]:
        return _lu_jvp_rectangular(x_dot, x, ans)
    x_low = lax.linalg.triangular_solve(ans, _rows(x_dot, _permutation(x)), left_side=True,
                                        lower=True, unit_diagonal=True)
    m = _tri(lax.linalg.triangular_solve(_upper_last_one(ans), x_low, left_side=False,
                                         lower=False), True, -1)
    return _unit_lower(ans) @ m + _tri(x_low - m @ _tri(ans, False), False)


def lu_grad(g, x, ans):
    """The transpose of lu_jvp: X_bar = triu(G) + tril(L^T G - triu(G) U^T, -1) U^-T, then
    A_bar = P^T L^-T X_bar."""
    if np.shape(x)[-2] != np.shape(x)[-1]:
        return _lu_grad_rectangular(g, x, ans)
    upper_g = _tri(g, False)
    low = _tri(_mT(_unit_lower(ans)) @ g - upper_g @ _mT(_tri(ans, False)), True, -1)
    t = upper_g + lax.linalg.triangular_solve(_upper_last_one(ans), low, left_side=False,
                                              lower=False, transpose_a=True)
    t = lax.linalg.triangular_solve(ans, t, left_side=True, lower=True, transpose_a=True,
                                    unit_diagonal=True)
    return _rows(t, snp.argsort(_permutation(x), axis=-1).astype(snp.int32))


NAMES = ("cholesky_jvp", "cholesky_grad", "triangular_solve_jvp_a", "triangular_solve_grad_a",
         "triangular_solve_grad_b", "lu_jvp", "lu_grad")


def by_name():
    return {n: globals()[n] for n in NAMES}

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
from secant.backends.errors import SecantValueError, UnsupportedError, where as _where
from secant.backends.primitives import linalg_spectral as _prim
from secant.custom import custom_jvp, custom_vmap
from secant.numpy.linalg import _inexact

__secant_by_source__ = True      # transforms read this module like user code


def _mH(x):
    return snp.conj(snp.swapaxes(x, -1, -2))


def _no_derivative(fn, name):
    """fn (NumPy-level: primitives on stacks of matrices) as a custom_vmap function (vmap runs
    fn on the stack) under a custom_jvp whose rule raises JAX's NotImplementedError: no
    derivative, in every composition (grad of vmap too)."""
    def fn_vmap(axis_size, in_batched, *args):
        return batched(*args), (True, True)     # (vmap of this rule uses the rule again)
    batched = custom_vmap(fn)
    batched.def_vmap(fn_vmap)
    made = custom_jvp(batched)
    message = (f"Differentiation rule for '{name}' not implemented (as in JAX: "
               f"scipy.linalg.{name} has no derivative)")

    def refused(primals, tangents):
        raise UnsupportedError(message + _where())
    made.defjvp(refused)
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
    a = _inexact(snp.asarray(a))        # (float64 data without x64: float32, as JAX)
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


def _square_pair(T, Z):
    T, Z = _inexact(T), _inexact(Z)
    for name, x in (("T", T), ("Z", Z)):
        if np.ndim(x) < 2 or np.shape(x)[-1] != np.shape(x)[-2]:
            raise SecantValueError(f"rsf2csf: input '{name}' must be square, got shape "
                                   f"{np.shape(x)}{_where()}")
    if np.shape(T)[-1] != np.shape(Z)[-1]:
        raise SecantValueError(f"rsf2csf: input array shapes must match: Z: {np.shape(Z)} vs. "
                               f"T: {np.shape(T)}{_where()}")
    batch = np.broadcast_shapes(np.shape(T)[:-2], np.shape(Z)[:-2])
    dtype = snp.result_type(T, Z, snp.complex64)
    return (snp.broadcast_to(T, batch + np.shape(T)[-2:]).astype(dtype),
            snp.broadcast_to(Z, batch + np.shape(Z)[-2:]).astype(dtype))


def rsf2csf(T, Z, check_finite=True):
    """The complex Schur form (t, z) from the real one (T, Z) = schur(a): each 2 x 2 block of
    T (a complex eigenvalue pair) is made triangular by a Givens rotation G (T <- G T G^H on
    the rows and columns it touches, Z <- Z G^H), from the bottom-right up, as SciPy's."""
    T, Z = _square_pair(T, Z)
    n = np.shape(T)[-1]
    eps = float(np.finfo(T.dtype).eps)
    for m in range(n - 1, 0, -1):
        sub = T[..., m, m - 1]
        rotate = snp.abs(sub) > eps * (snp.abs(T[..., m - 1, m - 1]) + snp.abs(T[..., m, m]))
        mu = snp.linalg.eigvals(T[..., m - 1:m + 1, m - 1:m + 1])[..., 0] - T[..., m, m]
        r = snp.where(rotate, snp.sqrt(snp.abs(mu) ** 2 + snp.abs(sub) ** 2), 1.0)
        c, s = mu / r, sub / r
        g = snp.stack([snp.stack([snp.conj(c), s], axis=-1), snp.stack([-s, c], axis=-1)],
                      axis=-2)
        rotated = T.at[..., m - 1:m + 1, m - 1:].set(g @ T[..., m - 1:m + 1, m - 1:])
        rotated = rotated.at[..., :m + 1, m - 1:m + 1].set(
            rotated[..., :m + 1, m - 1:m + 1] @ _mH(g))
        T = snp.where(rotate[..., None, None], rotated, T)
        Z = snp.where(rotate[..., None, None],
                      Z.at[..., :, m - 1:m + 1].set(Z[..., :, m - 1:m + 1] @ _mH(g)), Z)
        T = T.at[..., m, m - 1].set(0)
    return T, Z


def _parlett(F, T):
    """Golub and Van Loan's Algorithm 11.1.1: the upper triangle of f(T) from its diagonal F,
    T upper triangular (superdiagonal by superdiagonal); and the smallest |T_jj - T_ii| met."""
    n = np.shape(T)[-1]
    minden = snp.abs(T[0, 0])
    for p in range(1, n):
        for i in range(n - p):
            j = i + p
            s = T[i, j] * (F[j, j] - F[i, i])
            if j > i + 1:
                s = s + T[i, i + 1:j] @ F[i + 1:j, j] - F[i, i + 1:j] @ T[i + 1:j, j]
            den = T[j, j] - T[i, i]
            s = snp.where(den != 0, s / snp.where(den != 0, den, 1), s)
            F = F.at[i, j].set(s)
            minden = snp.minimum(minden, snp.abs(den))
    return F, minden


def funm(A, func, disp=True):
    """func of the square matrix A (complex, as JAX's): func on the eigenvalues of A's complex
    Schur form T (A = Z T Z^H), the rest of f(T) by Parlett's recurrence, then Z f(T) Z^H.
    disp=False: (f(A), err), err an estimate of the relative error."""
    A = _inexact(A)
    if np.ndim(A) != 2 or np.shape(A)[0] != np.shape(A)[1]:
        raise SecantValueError(f"funm: expected square array_like input, got shape "
                               f"{np.shape(A)}{_where()}")
    T, Z = rsf2csf(*schur(A))
    F = snp.diag(snp.asarray(func(snp.diag(T))).astype(T.dtype))
    F, minden = _parlett(F, T)
    F = Z @ F @ _mH(Z)
    if disp:
        return F
    tol = float(np.finfo(T.dtype).eps)
    minden = snp.where(minden == 0.0, tol, minden)
    err = snp.where(snp.any(snp.isinf(F)), np.inf, snp.minimum(1, snp.maximum(
        tol, (tol / minden) * snp.linalg.norm(snp.triu(T, 1), 1))))
    return F, err


def _broadcast_batch(*xs):
    batch = np.broadcast_shapes(*[np.shape(x)[:-2] for x in xs])
    return [snp.broadcast_to(x, batch + np.shape(x)[-2:]) for x in xs]


def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):
    """X with A X + X B = C (stacked over broadcast leading axes). method 'schur'
    (Bartels-Stewart): A = U R U^H, B^H = V S V^H (complex Schur forms), then
    R Y + Y S^H = U^H C V row by row from the bottom (each row a triangular solve), X = U Y V^H;
    method 'eigen': through the eigendecompositions of A and B. NaN where an eigenvalue of A
    plus one of B is within tol of zero; real when A, B and C are real."""
    A, B, C = _inexact(A), _inexact(B), _inexact(C)
    dtype = snp.result_type(A, B, C)
    A, B, C = A.astype(dtype), B.astype(dtype), C.astype(dtype)
    m, n = np.shape(C)[-2:]
    if np.shape(A)[-2:] != (m, m) or np.shape(B)[-2:] != (n, n):
        raise SecantValueError(f"Incompatible shapes for Sylvester equation:\nA: {np.shape(A)}"
                               f"\nB: {np.shape(B)}\nC: {np.shape(C)}{_where()}")
    A, B, C = _broadcast_batch(A, B, C)
    if method == "schur":
        R, U = schur(A, output="complex")
        S, V = schur(_mH(B), output="complex")
        F = _mH(U) @ C.astype(R.dtype) @ V
        lower = _mH(S)                          # Y S^H: S^H lower triangular
        eye = snp.eye(n, dtype=R.dtype)
        rows = []
        for i in range(m - 1, -1, -1):
            rhs = F[..., i:i + 1, :]
            if rows:
                rhs = rhs - R[..., i:i + 1, i + 1:] @ snp.concatenate(rows[::-1], axis=-2)
            shifted = lower + R[..., i, i][..., None, None] * eye
            rows.append(_solve_row(shifted, rhs))
        X = U @ snp.concatenate(rows[::-1], axis=-2) @ _mH(V)
        spectrum = snp.diagonal(R, axis1=-2, axis2=-1)[..., :, None] + snp.conj(
            snp.diagonal(S, axis1=-2, axis2=-1))[..., None, :]
    elif method == "eigen":
        ra, ua = snp.linalg.eig(A)
        rb, ub = snp.linalg.eig(B)
        F = snp.linalg.solve(ua, C.astype(ra.dtype) @ ub)
        spectrum = ra[..., :, None] + rb[..., None, :]
        X = ua @ (F / spectrum) @ snp.linalg.inv(ub)
    else:
        raise SecantValueError(f"Unrecognized method {method}. The two valid methods are either "
                               "\"schur\" or \"eigen\"." + _where())
    if not snp.iscomplexobj(C):
        X = snp.real(X)
    near = snp.any(snp.abs(spectrum) < tol, axis=(-2, -1))
    return snp.where(near[..., None, None], np.nan, X)


def _solve_row(shifted, rhs):
    """y with y shifted = rhs, shifted lower triangular (one row of the Sylvester solve)."""
    from secant import lax
    return lax.linalg.triangular_solve(shifted, rhs, left_side=False, lower=True)

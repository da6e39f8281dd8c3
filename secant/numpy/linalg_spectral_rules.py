"""What the transforms read for numpy.linalg's spectral family (secant/numpy/linalg_spectral.py):
the sources of the public functions (each a short composition of one op per output), and the
derivative rules of those ops, written with secant.numpy's ops so that a derivative can be
differentiated again (grad of grad of eigvalsh) and batched.

Conventions. H(x) is the conjugate transpose of each matrix, Re<X, Y> = Re sum(conj(X) * Y).
Each jvp maps the tangent dA to the output's tangent. Each vjp takes the output's cotangent g in
JAX's convention (for a real loss of complex z = x + iy: dL/dx - i dL/dy) and returns A's; it
computes the gradient Abar for the pairing Re<Abar, dA> from conj(g) and returns conj(Abar).
Every rule is stated at its definition; their references: eigh, SVD: Townsend (2016),
"Differentiating the singular value decomposition", and JAX's eigh/svd jvp rules; QR: Walter
and Lehmann (2018) and JAX's qr_jvp_rule (R^-1 applied by triangular solves); pinv: Golub and Pereyra (1973); eig: JAX's eig jvp.
"""
import secant.numpy as snp
from secant import lax
from secant.numpy import linalg as la
from secant.numpy import linalg_spectral as ls
from secant.numpy.composite import source_for

__secant_by_source__ = True      # transforms read this module like user code


def _h(x):
    return snp.conj(snp.swapaxes(x, -1, -2))


def _row(v):
    """A vector as one row (its entries scale a matrix's columns)."""
    return snp.expand_dims(v, -2)


def _col(v):
    """A vector as one column (its entries scale a matrix's rows)."""
    return snp.expand_dims(v, -1)


# --- the public functions' sources (plain tuples where the values are namedtuples: EighResult...;
# the transforms track tuples, so `w, v = eigh(a)` and `eigh(a)[0]` work, `.eigenvalues` does not)
def _hermitian(a, UPLO, symmetrize_input):
    if symmetrize_input:
        out = (a + _h(a)) / 2
    else:
        half, strict = ls.triangle_masks(a.shape[-1], UPLO, a.dtype)
        out = a * half + _h(a * strict)
    return out


@source_for(ls.eigh)
def eigh(a, UPLO=None, symmetrize_input=True):
    h = _hermitian(a, UPLO, symmetrize_input)
    w = ls.eigh_values(h)
    v = ls.eigh_vectors(h)
    return w, v


@source_for(ls.eigvalsh)
def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
    return ls.eigh_values(_hermitian(a, UPLO, symmetrize_input))


def hermitian_svd(a, compute_uv):
    """NumPy's svd(hermitian=True): from (a + a^H) / 2 = V diag(w) V^H, s = |w| descending,
    U = V and Vh = (V sign(w))^H in that order (a zero w takes sign +1, so Vh stays unitary
    where NumPy's row is zero). The order is applied as a permutation matrix P (P[i, j] = 1
    where the j-th largest |w| is w[i]): s = |w| P, U = V P."""
    h = (a + _h(a)) / 2
    w = ls.eigh_values(h)
    p = _descending(snp.abs(w))
    s = snp.squeeze(_row(snp.abs(w)) @ p, -2)
    if compute_uv:
        v = ls.eigh_vectors(h)
        signs = snp.where(w < 0, -1, 1).astype(v.dtype)
        out = v @ p.astype(v.dtype), s, _h((v * _row(signs)) @ p.astype(v.dtype))
    else:
        out = s
    return out


def _constant(fn):
    fn.__secant_constant__ = True      # integers from values: no derivative
    return fn


@_constant
def _descending(x):
    """The permutation matrix that sorts x (last axis) descending (NumPy's argsort reversed)."""
    order = snp.flip(snp.argsort(x, axis=-1), axis=-1)
    return (_col(snp.arange(x.shape[-1])) == _row(order)).astype(x.dtype)


@source_for(ls.svd)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        out = hermitian_svd(a, compute_uv)
    elif compute_uv:
        out = ls.svd_u(a, full_matrices), ls.svd_values(a), ls.svd_vh(a, full_matrices)
    else:
        out = ls.svd_values(a)
    return out


@source_for(ls.svdvals)
def svdvals(x, /):
    return ls.svd_values(x)


@source_for(ls.qr)
def qr(a, mode="reduced"):
    if a.shape[-2] < a.shape[-1]:
        q, r = _wide_qr(a)
    elif mode == "complete":
        q, r = ls.qr_q(a, "complete"), ls.qr_r(a, "complete")
    else:
        q, r = ls.qr_q(a), ls.qr_r(a)
    if mode == "r":
        out = r
    else:
        out = q, r
    return out


def _wide_qr(a):
    """QR of a wide a = [X | Y] (m < n) from the square block's: Q R_X = X, R = [R_X | Q^H Y]
    (Householder QR reads X alone for Q), so its derivative follows from the square case."""
    m = a.shape[-2]
    q = ls.qr_q(a[..., :m])
    return q, snp.concatenate([ls.qr_r(a[..., :m]), _h(q) @ a[..., m:]], axis=-1)


@source_for(ls.eig)
def eig(a):
    c = a.astype(snp.result_type(a, 1j))
    w = ls.eig_values(c)
    v = ls.eig_vectors(c)
    return w, v


@source_for(ls.eigvals)
def eigvals(a):
    return ls.eig_values(a.astype(snp.result_type(a, 1j)))


@source_for(ls.matrix_rank)
def matrix_rank(M, rtol=None, hermitian=False, *, tol=None):
    if M.ndim < 2:                      # a scalar or a vector: 1 unless it is all zeros
        rank = snp.any(M != 0).astype(snp.int32)
    else:
        if hermitian:
            s = snp.abs(ls.eigh_values((M + _h(M)) / 2))
        else:
            s = ls.svd_values(M)
        if tol is None:
            tol = ls.default_rtol(M.shape, M.dtype, rtol) * snp.max(s, axis=-1, keepdims=True)
        rank = snp.sum(s > tol, axis=-1)
    return rank


@source_for(ls.lstsq)
def lstsq(a, b, rcond=None):
    rtol = ls.lstsq_rtol(a.shape, a.dtype, rcond)
    x = ls.pinv(a, rtol) @ b
    s = ls.svd_values(a)
    if a.shape[0] > a.shape[1]:
        r = b - a @ x
        residuals = snp.sum(snp.real(r * snp.conj(r)), axis=0).reshape(ls.residual_shape(b.shape))
        # (the rank is a traced value here: a rank-deficient a gives NaN, not NumPy's empty)
        residuals = snp.where(matrix_rank(a, rtol) == a.shape[1], residuals, snp.nan)
    else:
        residuals = snp.zeros((0,), s.dtype)
    return x, residuals, matrix_rank(a, rtol), s


@source_for(ls.matrix_norm_spectral)
def matrix_norm_spectral(x, ord, axis=(-2, -1), keepdims=False):
    axes = ls.two_axes(axis, x.ndim)
    s = ls.svd_values(snp.moveaxis(x, axes, (-2, -1)))
    if ord == 2:
        out = snp.max(s, axis=-1)
    elif ord == -2:
        out = snp.min(s, axis=-1)
    else:
        out = snp.sum(s, axis=-1)
    if keepdims:
        out = out.reshape(ls.kept_shape(x.shape, axes))
    return out


# --- eigh -----------------------------------------------------------------------------------------
def _gaps(w):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it (inf for repeated values)."""
    eye = snp.eye(w.shape[-1], dtype=w.dtype)
    return (1 - eye) / (_row(w) - _col(w) + eye)


def _times_gaps(f, x):
    """F o X where an infinite F[i, j] (a repeated value) meets X[i, j] == 0 counts as 0: the
    term of an eigen- or singular vector whose cotangent or tangent is zero (an output the loss
    does not read), which JAX's symbolic zeros leave out. Elsewhere F o X, inf or NaN included
    (a loss that reads such a vector is not differentiable there)."""
    return snp.where(snp.isinf(f) & (x == 0), 0, f) * x


def eigh_values_jvp(a_dot, a):
    """dw = Re diag(V^H dA V)."""
    v = ls.eigh_vectors(a)
    return snp.real(snp.sum(snp.conj(v) * (a_dot @ v), axis=-2))


def eigh_values_vjp(g, a):
    """Abar = V diag(g) V^H (returned conjugated: JAX's convention)."""
    v = ls.eigh_vectors(a)
    return snp.conj((v * _row(g)) @ _h(v))


def eigh_vectors_jvp(a_dot, a):
    """dV = V (F o (V^H dA V)), F[i, j] = 1 / (w[j] - w[i]) for i != j, 0 on the diagonal.
    Repeated eigenvalues make F infinite: their eigenvectors are not differentiable (only a
    loss invariant under rotations within each eigenspace is, and this rule does not see it)."""
    w, v = ls.eigh_values(a), ls.eigh_vectors(a)
    return v @ _times_gaps(_gaps(w), _h(v) @ a_dot @ v)


def eigh_vectors_vjp(g, a):
    """Abar = V (F o (V^H gbar)) V^H with gbar = conj(g) (F as in eigh_vectors_jvp)."""
    w, v = ls.eigh_values(a), ls.eigh_vectors(a)
    return snp.conj(v @ _times_gaps(_gaps(w), _h(v) @ snp.conj(g)) @ _h(v))


def _undefined_where_used(g):
    """NaN if the cotangent g is nonzero anywhere, else 0: the contribution of outputs whose
    derivative is not defined (the arbitrary basis of an orthogonal complement that
    full_matrices adds), so that it poisons a gradient only when the loss uses them."""
    return snp.where(snp.any(g != 0), snp.nan, 0.0)


def _undefined_columns(x, count):
    """`count` columns of NaN after x's: the tangent of an arbitrary complement basis."""
    pad = snp.zeros_like(x[..., :1]) * snp.nan
    return snp.concatenate([x] + [pad] * count, axis=-1)


# --- svd ------------------------------------------------------------------------------------------
def _square_gaps(s):
    """F[i, j] = 1 / (s[j]^2 - s[i]^2) off the diagonal, 0 on it."""
    eye = snp.eye(s.shape[-1], dtype=s.dtype)
    return (1 - eye) / (_row(s) ** 2 - _col(s) ** 2 + eye)


def _safe_inverse(s):
    """1 / s, and 0 where s == 0."""
    zero = (s == 0).astype(s.dtype)
    return 1 / (s + zero) - zero


def svd_values_jvp(a_dot, a):
    """ds = Re diag(U^H dA V) (U, V of the reduced SVD)."""
    u, vh = ls.svd_u(a), ls.svd_vh(a)
    return snp.real(snp.sum(snp.conj(u) * (a_dot @ _h(vh)), axis=-2))


def svd_values_vjp(g, a):
    """Abar = U diag(g) V^H."""
    u, vh = ls.svd_u(a), ls.svd_vh(a)
    return snp.conj((u * _row(g)) @ vh)


def svd_u_jvp(a_dot, a, full_matrices=False):
    """With dS = U^H dA V and S = diag(s) (reduced SVD, k = min(m, n)):
    dU = U (F o (dS S + S dS^H) + (dS - dS^H) o I S^-1 / 2) + (I - U U^H) dA V S^-1,
    F[i, j] = 1 / (s[j]^2 - s[i]^2) off the diagonal (the last term only when m > n).
    With full_matrices and m > n, U's last m - n columns (an arbitrary basis of the complement
    of A's range) have no derivative: NaN tangents (JAX raises for any use of full_matrices)."""
    k = min(a.shape[-2:])
    s, u, vh = ls.svd_values(a), ls.svd_u(a), ls.svd_vh(a)
    v = _h(vh)
    ds = _h(u) @ a_dot @ v
    dss = ds * _row(s)
    eye = snp.eye(k, dtype=s.dtype)
    du = u @ (_times_gaps(_square_gaps(s), dss + _h(dss)) + (ds - _h(ds)) * eye * _row(_safe_inverse(s)) / 2)
    if a.shape[-2] > k:
        dav = a_dot @ v
        du = du + (dav - u @ (_h(u) @ dav)) / _row(s)
    if full_matrices:
        du = _undefined_columns(du, a.shape[-2] - k)
    return du


def svd_vh_jvp(a_dot, a, full_matrices=False):
    """dV = V (F o (S dS + dS^H S)) + (I - V V^H) dA^H U S^-1 (the last term when n > m);
    d(Vh) = dV^H (F, dS as in svd_u_jvp; with full_matrices and n > m, the last n - m rows
    of Vh have no derivative: NaN)."""
    k = min(a.shape[-2:])
    s, u, vh = ls.svd_values(a), ls.svd_u(a), ls.svd_vh(a)
    v = _h(vh)
    sds = _col(s) * (_h(u) @ a_dot @ v)
    dv = v @ _times_gaps(_square_gaps(s), sds + _h(sds))
    if a.shape[-1] > k:
        dahu = _h(a_dot) @ u
        dv = dv + (dahu - v @ (vh @ dahu)) / _row(s)
    if full_matrices:
        dv = _undefined_columns(dv, a.shape[-1] - k)
    return _h(dv)


def svd_u_vjp(g, a, full_matrices=False):
    """With K = U^H gbar, J = F o K: Abar = U ((J + J^H) S + (Kd - Kd^H) / 2) V^H
    + (I - U U^H) gbar S^-1 V^H (the last term when m > n), Kd = K o I S^-1: the transpose of
    svd_u_jvp (gbar: the cotangent of U's first k columns; the others': NaN where used)."""
    k = min(a.shape[-2:])
    s, u, vh = ls.svd_values(a), ls.svd_u(a), ls.svd_vh(a)
    gbar = snp.conj(g[..., :k])
    kmat = _h(u) @ gbar
    j = _times_gaps(_square_gaps(s), kmat)
    kd = kmat * snp.eye(k, dtype=s.dtype) * _row(_safe_inverse(s))
    abar = u @ ((j + _h(j)) * _row(s) + (kd - _h(kd)) / 2) @ vh
    if a.shape[-2] > k:
        abar = abar + ((gbar - u @ kmat) / _row(s)) @ vh
    if full_matrices:
        abar = abar + _undefined_where_used(g[..., k:])
    return snp.conj(abar)


def svd_vh_vjp(g, a, full_matrices=False):
    """With gV = H(conj(g)) (the cotangent of V = H(Vh)) and L = F o (V^H gV):
    Abar = U S (L + L^H) V^H + U S^-1 gV^H (I - V V^H) (the last term when n > m): the
    transpose of svd_vh_jvp (gV from Vh's first k rows; the others': NaN where used)."""
    k = min(a.shape[-2:])
    s, u, vh = ls.svd_values(a), ls.svd_u(a), ls.svd_vh(a)
    gv = snp.swapaxes(g[..., :k, :], -1, -2)
    ell = _times_gaps(_square_gaps(s), vh @ gv)
    abar = u @ (_col(s) * (ell + _h(ell))) @ vh
    if a.shape[-1] > k:
        gvh = _h(gv)
        abar = abar + (u / _row(s)) @ (gvh - (gvh @ _h(vh)) @ vh)
    if full_matrices:
        abar = abar + _undefined_where_used(g[..., k:, :])
    return snp.conj(abar)


# --- qr -------------------------------------------------------------------------------------------
def _omega(c, n):
    """The skew part QR's tangent takes from C = Q^H dA R^-1: tril(C, -1) - tril(C, -1)^H plus
    the imaginary part of C's diagonal."""
    strict, eye = snp.tri(n, k=-1, dtype=snp.real(c).dtype), snp.eye(n, dtype=snp.real(c).dtype)
    low = c * strict
    return low - _h(low) + eye * (c - snp.real(c))


def _omega_transpose(m, n):
    """The adjoint of _omega for Re<., .>: tril(M, -1) - tril(M^H, -1) + i Im diag(M)."""
    strict, eye = snp.tri(n, k=-1, dtype=snp.real(m).dtype), snp.eye(n, dtype=snp.real(m).dtype)
    return m * strict - _h(m) * strict + eye * (m - snp.real(m))


def _right_r_inverse(y, r, adjoint=False):
    """Y R^-1 (adjoint: Y R^-H) by a triangular solve with R (upper)."""
    return lax.linalg.triangular_solve(r, y, left_side=False, lower=False, transpose_a=adjoint,
                                       conjugate_a=adjoint)


def _qr_tangents(a_dot, a, mode):
    n = ls.qr_rule_size(a.shape)
    q, r = ls.qr_q(a), ls.qr_r(a)
    x = _right_r_inverse(a_dot, r)
    c = _h(q) @ x
    do = _omega(c, n)
    return q, r, x, c, do


def qr_q_jvp(a_dot, a, mode="reduced"):
    """With X = dA R^-1 (a triangular solve), C = Q^H X and Omega = tril(C, -1) - tril(C, -1)^H + i Im diag(C):
    dQ = Q (Omega - C) + X (m >= n; wide matrices are split by qr's source). For mode
    'complete' with m > n, Q's last m - n columns (an arbitrary complement basis): NaN."""
    q, r, x, c, do = _qr_tangents(a_dot, a, mode)
    dq = q @ (do - c) + x
    if mode == "complete":
        dq = _undefined_columns(dq, a.shape[-2] - a.shape[-1])
    return dq


def qr_r_jvp(a_dot, a, mode="reduced"):
    """dR = (C - Omega) R (C, Omega as in qr_q_jvp; mode 'complete' adds zero rows)."""
    q, r, x, c, do = _qr_tangents(a_dot, a, mode)
    dr = (c - do) @ r
    if mode == "complete":
        dr = snp.concatenate([dr, snp.zeros_like(a_dot[..., r.shape[-2]:, :])], axis=-2)
    return dr


def qr_q_vjp(g, a, mode="reduced"):
    """With M = Q^H gbar: Abar = (gbar + Q (Omega^T(M) - M)) R^-H (R^-H by a triangular
    solve), Omega^T the adjoint of
    Omega: tril(M, -1) - tril(M^H, -1) + i Im diag(M) (gbar: the cotangent of Q's first n
    columns; for mode 'complete' the others' are NaN where used)."""
    n = ls.qr_rule_size(a.shape)
    q, r = ls.qr_q(a), ls.qr_r(a)
    gbar = snp.conj(g[..., :n])
    m = _h(q) @ gbar
    abar = snp.conj(_right_r_inverse(gbar + q @ (_omega_transpose(m, n) - m), r, True))
    if mode == "complete":
        abar = abar + _undefined_where_used(g[..., n:])
    return abar


def qr_r_vjp(g, a, mode="reduced"):
    """With M = -gbar R^H: Abar = Q (Omega^T(M) - M) R^-H (R^-H by a triangular solve; gbar:
    R's first n rows' cotangent; mode 'complete' pads R with constant zero rows)."""
    n = ls.qr_rule_size(a.shape)
    q, r = ls.qr_q(a), ls.qr_r(a)
    m = -(snp.conj(g[..., :n, :]) @ _h(r))
    return snp.conj(_right_r_inverse(q @ (_omega_transpose(m, n) - m), r, True))


# --- eig ------------------------------------------------------------------------------------------
def _diagonal(m):
    return snp.sum(m * snp.eye(m.shape[-1], dtype=m.dtype), axis=-1)


def eig_values_jvp(a_dot, a):
    """dw = diag(V^-1 dA V) (distinct eigenvalues; V^-1 (dA V) by an LU solve)."""
    v = ls.eig_vectors(a)
    return _diagonal(la.solve(v, a_dot @ v))


def eig_values_vjp(g, a):
    """w is holomorphic in A: in JAX's convention Abar = (V diag(g) V^-1)^T
    = V^-T diag(g) V^T, by an LU solve with V^T."""
    v = ls.eig_vectors(a)
    vt = snp.swapaxes(v, -1, -2)
    return la.solve(vt, _col(g) * vt)


def eig_vectors_jvp(a_dot, a):
    """JAX's rule: dU = V (F o (V^-1 dA V)), F[i, j] = 1 / (w[j] - w[i]) off the diagonal, and
    dV = dU - V Re diag(V^H dU) (columns kept of unit norm); V^-1 (dA V) by an LU solve. The
    phase of each eigenvector is arbitrary (LAPACK's differs): only phase-invariant losses
    (|v|^2, V diag(w) V^-1) have this derivative."""
    w, v = ls.eig_values(a), ls.eig_vectors(a)
    du = v @ _times_gaps(_gaps(w), la.solve(v, a_dot @ v))
    return du - v * _row(snp.real(snp.sum(snp.conj(v) * du, axis=-2)))


def eig_vectors_vjp(g, a):
    """The transpose of eig_vectors_jvp: with gU = gbar - V Re diag(V^H gbar),
    Abar = V^-H (conj(F) o (V^H gU)) V^H (V^-H by an LU solve with V^H)."""
    w, v = ls.eig_values(a), ls.eig_vectors(a)
    gbar = snp.conj(g)
    gu = gbar - v * _row(snp.real(snp.sum(snp.conj(v) * gbar, axis=-2)))
    return snp.conj(la.solve(_h(v), _times_gaps(snp.conj(_gaps(w)), _h(v) @ gu) @ _h(v)))


# --- pinv -----------------------------------------------------------------------------------------
def _symmetric_part(x):
    """(x + x^H) / 2: what pinv(hermitian=True) reads of its matrix (eigh symmetrizes)."""
    return (x + _h(x)) / 2


def pinv_jvp(a_dot, a, p, hermitian=False):
    """At constant rank: dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P;
    hermitian=True reads A and dA as (A + A^H) / 2, as its value does (and JAX's rule)."""
    if hermitian:
        a, a_dot = _symmetric_part(a), _symmetric_part(a_dot)
    ph, dah = _h(p), _h(a_dot)
    return (-(p @ a_dot @ p) + p @ ph @ dah - p @ ph @ dah @ a @ p
            + dah @ ph @ p - p @ a @ dah @ ph @ p)


def pinv_vjp(g, a, p, hermitian=False):
    """The transpose of pinv_jvp: Abar = -P^H gbar P^H + (I - A P) gbar^H P P^H
    + P^H P gbar^H (I - P A); hermitian=True: A read as (A + A^H) / 2 and Abar mapped the
    same way (the symmetric part is its own transpose)."""
    if hermitian:
        a = _symmetric_part(a)
    ph, gh = _h(p), _h(snp.conj(g))
    abar = snp.conj(-(ph @ snp.conj(g) @ ph) + gh @ p @ ph - a @ p @ gh @ p @ ph
                    + ph @ p @ gh - ph @ p @ gh @ p @ a)
    return _symmetric_part(abar) if hermitian else abar

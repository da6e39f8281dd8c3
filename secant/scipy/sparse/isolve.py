"""The iterations of secant.scipy.sparse.linalg's solvers (cg, bicgstab, gmres), as JAX's
(jax/_src/scipy/sparse/linalg.py, Apache 2.0): lax.while_loops over pytrees of arrays, run as
Python eagerly and staged under jit. lax.custom_linear_solve calls them with the linear map and
a right-hand side. Derivatives never read them (they are implicit: another solve); vmap does,
as JAX batches them: one solve of the batch (`solve.__secant_for_batch__`, lax_implicit.py),
whose while_loops run until every example stops, each frozen at its own step.

`solver(...)` builds the `solve(matvec, b)` one call passes to custom_linear_solve. It holds
only what is the same for every example of a vmap (tolerances, counts, the user's x0 and M):
a default x0 is made from the b each call receives, and an x0 or M whose shapes do not fit that
b (one batched under vmap, which splits only matvec's operands and b) is refused."""
import functools
import operator

import numpy as np

import secant.numpy as snp
from secant import lax, tree_util
from secant.backends.errors import SecantTypeError, SecantValueError, where

__secant_by_source__ = True     # vmap reads the iterations (one solve of the batch, as JAX's)


def _vdot_real_part(x, y):
    """Re(x^H y) without the cross terms: real for the z^H M z forms the iterations need."""
    result = snp.vdot(snp.real(x), snp.real(y))
    if _either_complex(x, y):
        result = result + snp.vdot(snp.imag(x), snp.imag(y))
    return result


def _either_complex(x, y):
    return snp.iscomplexobj(x) or snp.iscomplexobj(y)


_either_complex.__secant_static_query__ = True      # (a dtype query: a constant under vmap)


def _vdot_real_tree(x, y):
    return sum(tree_util.tree_leaves(tree_util.tree_map(_vdot_real_part, x, y)))


def _vdot_tree(x, y):
    return sum(tree_util.tree_leaves(tree_util.tree_map(snp.vdot, x, y)))


def norm(x):
    xs = tree_util.tree_leaves(x)
    return snp.sqrt(sum(_vdot_real_part(v, v) for v in xs))


def _mul(scalar, tree):
    return tree_util.tree_map(lambda v: scalar * v, tree)


def _add(a, b):
    return tree_util.tree_map(operator.add, a, b)


def _sub(a, b):
    return tree_util.tree_map(operator.sub, a, b)


def _dtype(tree):
    return snp.result_type(*tree_util.tree_leaves(tree))


_dtype.__secant_static_query__ = True       # (a constant under vmap)


def identity(x):
    return x


def as_matvec(f, what):
    """A function computing f's products: f itself, or `f @ v` for a square matrix f."""
    if callable(f):
        return f
    if hasattr(f, "shape") or isinstance(f, (list, tuple)):
        check_square(np.shape(f), what)
        return functools.partial(snp.dot, snp.asarray(f))
    raise SecantTypeError(f"{what} must be either a function or ndarray: {f!r}{where()}")


def check_square(shape, what="linear operator"):
    if len(shape) != 2 or shape[0] != shape[1]:
        raise SecantValueError(f"{what} must be a square matrix, but has shape: {shape}"
                               f"{where()}")


def _shapes(tree):
    return [np.shape(v) for v in tree_util.tree_leaves(tree)]


def _start(b, x0, M):
    """x0 (zeros like b where None), checked against b; M's products, checked on b."""
    if x0 is None:
        x0 = tree_util.tree_map(snp.zeros_like, b)
    elif tree_util.tree_structure(x0) != tree_util.tree_structure(b):
        raise SecantValueError(f"x0 and b must have matching tree structure: "
                               f"{tree_util.tree_structure(x0)} vs "
                               f"{tree_util.tree_structure(b)}{where()}")
    elif _shapes(x0) != _shapes(b):
        raise SecantValueError(f"arrays in x0 and b must have matching shapes: {_shapes(x0)} vs "
                               f"{_shapes(b)} (under vmap, x0 must be the same for every "
                               f"example: secant batches only A and b){where()}")
    if M is not identity and not callable(M):
        n = sum(int(np.size(v)) for v in tree_util.tree_leaves(b))
        if np.shape(M) != (n, n):
            raise SecantValueError(f"the preconditioner M has shape {np.shape(M)} for b of "
                                   f"size {n} (under vmap, M must be the same for every "
                                   f"example: secant batches only A and b){where()}")
    return x0, as_matvec(M, "preconditioner M")


def _size(b):
    return sum(int(np.size(v)) for v in tree_util.tree_leaves(b))


def solver(kind, x0=None, tol=1e-5, atol=0.0, maxiter=None, M=None, restart=20,
           solve_method="batched"):
    """solve(matvec, b) for lax.custom_linear_solve: kind 'cg', 'bicgstab' or 'gmres'."""
    if kind == "gmres" and solve_method not in ("incremental", "batched"):
        raise SecantValueError(f"invalid solve_method {solve_method}, must be either "
                               f"'incremental' or 'batched'{where()}")
    M = identity if M is None else M
    if M is not identity:
        as_matvec(M, "preconditioner M")       # (refused here, at the user's call)

    def solve(matvec, b):
        start, m = _start(b, x0, M)
        return _iterate(kind, matvec, b, start, tol, atol, maxiter, restart, m, solve_method,
                        _size(b))

    def for_batch(b):
        """(key, the solve vmap reads) for examples shaped as b (one example): its refusals
        on b, its counts fixed for b's size (the key None where the solve is not the same for
        every call with these options: an x0 or M of the user's, a traced tolerance)."""
        start, m = _start(b, x0, M)
        size = _size(b)

        def solve_batch(matvec, b):         # (x0 zeros like each example's b)
            start_b = tree_util.tree_map(snp.zeros_like, b)
            return _iterate(kind, matvec, b, start_b, tol, atol, maxiter, restart, m,
                            solve_method, size)

        def solve_batch_from(matvec, b):    # (the user's x0, the same for every example)
            return _iterate(kind, matvec, b, start, tol, atol, maxiter, restart, m,
                            solve_method, size)
        if x0 is not None:
            solve_batch = solve_batch_from
        solve_batch.__secant_takes_functions__ = True
        plain = M is identity and x0 is None and all(
            isinstance(v, (int, float)) for v in (tol, atol))
        key = ("isolve", kind, tol, atol, maxiter, restart, solve_method, size) if plain \
            else None
        return key, solve_batch
    solve.__secant_for_batch__ = for_batch
    return solve


def _iterate(kind, matvec, b, start, tol, atol, maxiter, restart, m, solve_method, size):
    limit = 10 * size if maxiter is None else maxiter
    if kind == "gmres":
        return _gmres_solve(matvec, b, start, tol, atol, min(restart, size), limit, m,
                            solve_method)
    if kind == "cg":
        return _cg_solve(matvec, b, start, limit, tol, atol, m)
    return _bicgstab_solve(matvec, b, start, limit, tol, atol, m)


# a constant to the transforms: the solve's derivative is custom_linear_solve's (implicit), and
# the solution does not depend on x0 or M; an x0 or M batched under vmap is refused by shape
solver.__secant_static_query__ = True


def _cg_solve(A, b, x0, maxiter, tol, atol, M):
    bs = _vdot_real_tree(b, b)
    atol2 = snp.maximum(snp.square(tol) * bs, snp.square(atol))
    r0 = _sub(b, A(x0))
    z0 = M(r0)
    p0 = z0
    dtype = _dtype(p0)
    gamma0 = _vdot_real_tree(r0, z0).astype(dtype)

    def cond_fun(value):
        _, r, gamma, _, k = value
        rs = snp.real(gamma) if M is identity else _vdot_real_tree(r, r)
        return (rs > atol2) & (k < maxiter)

    def body_fun(value):
        x, r, gamma, p, k = value
        Ap = A(p)
        alpha = gamma / _vdot_real_tree(p, Ap).astype(dtype)
        x_ = _add(x, _mul(alpha, p))
        r_ = _sub(r, _mul(alpha, Ap))
        z_ = M(r_)
        gamma_ = _vdot_real_tree(r_, z_).astype(dtype)
        p_ = _add(z_, _mul(gamma_ / gamma, p))
        return x_, r_, gamma_, p_, k + 1

    return lax.while_loop(cond_fun, body_fun, (x0, r0, gamma0, p0, 0))[0]


def _bicgstab_solve(A, b, x0, maxiter, tol, atol, M):
    bs = _vdot_real_tree(b, b)
    atol2 = snp.maximum(snp.square(tol) * bs, snp.square(atol))

    def cond_fun(value):
        x, r, *_, k = value
        rs = _vdot_real_tree(r, r)
        return (rs > atol2) & (k < maxiter) & (k >= 0)    # (k < 0: a breakdown)

    def body_fun(value):
        x, r, rhat, alpha, omega, rho, p, q, k = value
        rho_ = _vdot_tree(rhat, r)
        beta = rho_ / rho * alpha / omega
        p_ = _add(r, _mul(beta, _sub(p, _mul(omega, q))))
        phat = M(p_)
        q_ = A(phat)
        alpha_ = rho_ / _vdot_tree(rhat, q_)
        s = _sub(r, _mul(alpha_, q_))
        exit_early = _vdot_real_tree(s, s) < atol2
        shat = M(s)
        t = A(shat)
        omega_ = _vdot_tree(t, s) / _vdot_tree(t, t)
        x_ = tree_util.tree_map(lambda u, w: snp.where(exit_early, u, w),
                                _add(x, _mul(alpha_, phat)),
                                _add(x, _add(_mul(alpha_, phat), _mul(omega_, shat))))
        r_ = tree_util.tree_map(lambda u, w: snp.where(exit_early, u, w),
                                s, _sub(s, _mul(omega_, t)))
        k_ = snp.where((omega_ == 0) | (alpha_ == 0), -11, k + 1)
        k_ = snp.where(rho_ == 0, -10, k_)
        return x_, r_, rhat, alpha_, omega_, rho_, p_, q_, k_

    r0 = _sub(b, A(x0))
    one = snp.ones((), _dtype(b))
    return lax.while_loop(cond_fun, body_fun, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


# --- gmres ----------------------------------------------------------------------------------------
def _safe_normalize(x, thresh=None):
    """(x / |x|, |x|), or zeros and 0 where |x| <= thresh (x's dtype's eps by default)."""
    n = norm(x)
    dtype = _dtype(x)
    if thresh is None:
        thresh = snp.finfo(n.dtype).eps
    thresh = snp.real(snp.asarray(thresh).astype(dtype))
    use_norm = n > thresh
    n_cast = n.astype(dtype)
    normalized = tree_util.tree_map(lambda y: snp.where(use_norm, y / n_cast, 0.0), x)
    return normalized, snp.where(use_norm, n, 0.0)


def _project_on_columns(Q, v):
    """Q^H v."""
    parts = tree_util.tree_map(lambda X, y: snp.einsum("...n,...->n", snp.conj(X), y), Q, v)
    return functools.reduce(operator.add, tree_util.tree_leaves(parts))


def _gram_schmidt(Q, x, xnorm, max_iterations=2):
    """x orthogonalised against Q's columns (classical Gram-Schmidt, repeated while the
    overlaps stay large: "twice is enough"), and its overlaps with them."""
    Q0 = tree_util.tree_leaves(Q)[0]
    r = snp.zeros(np.shape(Q0)[-1], dtype=Q0.dtype)
    xnorm_scaled = xnorm / np.sqrt(2.0)

    def body_function(carry):
        k, q, r, qnorm_scaled = carry
        h = _project_on_columns(Q, q)
        q = _sub(q, tree_util.tree_map(lambda X: snp.dot(X, h), Q))
        r = _add(r, h)
        _, qnorm = _safe_normalize(q)
        return k + 1, q, r, qnorm / np.sqrt(2.0)

    def cond_function(carry):
        k, _, r, qnorm_scaled = carry
        _, rnorm = _safe_normalize(r)
        return snp.logical_and(k < max_iterations - 1, rnorm < qnorm_scaled)

    carry = body_function((0, x, r, xnorm_scaled))
    _, q, r, _ = lax.while_loop(cond_function, body_function, carry)
    return q, r


def _kth_arnoldi_iteration(k, A, M, V, H):
    """Step k of Arnoldi: V[:, k+1] the new orthonormal Krylov vector M(A(V[:, k])), H[k, :]
    its overlaps; breakdown where it vanishes (an invariant subspace)."""
    dtype = _dtype(V)
    eps = snp.finfo(dtype).eps
    v = M(A(tree_util.tree_map(lambda X: X[..., k], V)))
    _, v_norm_0 = _safe_normalize(v)
    v, h = _gram_schmidt(V, v, v_norm_0)
    unit_v, v_norm_1 = _safe_normalize(v, thresh=eps * v_norm_0)
    V = tree_util.tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit_v)
    h = h.at[k + 1].set(v_norm_1.astype(dtype))
    H = H.at[k, :].set(h)
    return V, H, v_norm_1 == 0.0


def _rotate_vectors(H, i, cs, sn):
    x1, y1 = H[i], H[i + 1]
    H = H.at[i].set(snp.conj(cs) * x1 - snp.conj(sn) * y1)
    return H.at[i + 1].set(sn * x1 + cs * y1)


def _givens_rotation(a, b):
    b_zero = snp.abs(b) == 0
    a_lt_b = snp.abs(a) < snp.abs(b)
    t = -snp.where(a_lt_b, a, b) / snp.where(a_lt_b, b, a)
    r = lax.rsqrt(1 + snp.abs(t) ** 2).astype(t.dtype)
    cs = snp.where(b_zero, 1, snp.where(a_lt_b, r * t, r))
    sn = snp.where(b_zero, 0, snp.where(a_lt_b, r, r * t))
    return cs, sn


def _apply_givens_rotations(H_row, givens, k):
    def rotate(carry):          # (a while_loop, as JAX's fori_loop to a traced k: k is
        i, row = carry          # batched under vmap)
        return i + 1, _rotate_vectors(row, i, givens[i, 0], givens[i, 1])
    _, R_row = lax.while_loop(lambda carry: carry[0] < k, rotate, (0, H_row))
    cs, sn = _givens_rotation(R_row[k], R_row[k + 1])
    givens = givens.at[k, 0].set(cs).at[k, 1].set(sn)
    return _rotate_vectors(R_row, k, cs, sn), givens


def _krylov_start(unit_residual, restart):
    return tree_util.tree_map(
        lambda x: snp.pad(x[..., None], ((0, 0),) * np.ndim(x) + ((0, restart),)), unit_residual)


def _gmres_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart, the Krylov basis's QR built as it grows (Givens rotations): stops early
    where the residual estimate falls below ptol."""
    V = _krylov_start(unit_residual, restart)
    dtype = _dtype(b)
    R = snp.eye(restart, restart + 1, dtype=dtype)
    givens = snp.zeros((restart, 2), dtype=dtype)
    beta_vec = snp.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))

    def loop_cond(carry):
        k, err, _, _, _, _ = carry
        return snp.logical_and(k < restart, err > ptol)

    def arnoldi_qr_step(carry):
        k, _, V, R, beta_vec, givens = carry
        V, H, _ = _kth_arnoldi_iteration(k, A, M, V, R)
        R_row, givens = _apply_givens_rotations(H[k, :], givens, k)
        R = R.at[k, :].set(R_row)
        beta_vec = _rotate_vectors(beta_vec, k, givens[k, 0], givens[k, 1])
        return k + 1, snp.abs(beta_vec[k + 1]), V, R, beta_vec, givens

    carry = lax.while_loop(loop_cond, arnoldi_qr_step,
                           (0, residual_norm, V, R, beta_vec, givens))
    _, _, V, R, beta_vec, _ = carry
    from secant.scipy import linalg as sla
    y = sla.solve_triangular(snp.transpose(R[:, :-1]), beta_vec[:-1])
    return _restarted(A, b, x0, V, y, M)


def _gmres_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart: the whole Arnoldi process, then the least-squares problem solved once."""
    V = _krylov_start(unit_residual, restart)
    dtype = _dtype(b)
    H = snp.eye(restart, restart + 1, dtype=dtype)

    def loop_cond(carry):
        _, _, breakdown, k = carry
        return snp.logical_and(k < restart, snp.logical_not(breakdown))

    def arnoldi_process(carry):
        V, H, _, k = carry
        V, H, breakdown = _kth_arnoldi_iteration(k, A, M, V, H)
        return V, H, breakdown, k + 1

    V, H, _, _ = lax.while_loop(loop_cond, arnoldi_process, (V, H, snp.asarray(False), 0))
    beta_vec = snp.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))
    Ht = snp.transpose(H)
    from secant.scipy import linalg as sla
    y = sla.solve(snp.dot(snp.conj(H), Ht), snp.dot(snp.conj(H), beta_vec), assume_a="pos")
    return _restarted(A, b, x0, V, y, M)


def _restarted(A, b, x0, V, y, M):
    x = _add(x0, tree_util.tree_map(lambda X: snp.dot(X[..., :-1], y), V))
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x))))
    return x, unit_residual, residual_norm


def _gmres_solve(A, b, x0, tol, atol, restart, maxiter, M, solve_method):
    b_norm = norm(b)
    atol = snp.maximum(tol * b_norm, atol)
    ptol = norm(M(b)) * snp.minimum(1.0, atol / b_norm)
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x0))))

    def cond_fun(value):
        _, k, _, residual_norm = value
        return snp.logical_and(k < maxiter, residual_norm > atol)

    def body_fun(value):
        x, k, unit_residual, residual_norm = value
        if solve_method == "incremental":
            x, unit_residual, residual_norm = _gmres_incremental(
                A, b, x, unit_residual, residual_norm, ptol, restart, M)
        else:
            x, unit_residual, residual_norm = _gmres_batched(
                A, b, x, unit_residual, residual_norm, ptol, restart, M)
        return x, k + 1, unit_residual, residual_norm

    return lax.while_loop(cond_fun, body_fun, (x0, 0, unit_residual, residual_norm))[0]


# a matvec closing over batched values is passed through these (transformer/higher_order.py)
for _f in (_iterate, _cg_solve, _bicgstab_solve, _gmres_solve, _gmres_incremental,
           _gmres_batched, _kth_arnoldi_iteration, _restarted):
    _f.__secant_takes_functions__ = True

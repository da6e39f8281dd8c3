"""solve15: vmap of the linear solvers (lax.custom_linear_solve, scipy.sparse.linalg's cg,
bicgstab, gmres) and of lax.custom_root runs one solve of the batch, as JAX's batching rule
(each example's while_loop frozen at its own step, as JAX's batched while), against a Python
loop, np.linalg.solve and jit; their second derivatives (the rules are custom_linear_solves
again, as JAX's) against closed forms and float64 central differences of the first."""
import os

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from secant.scipy.sparse.linalg import bicgstab, cg, gmres

from user_programs.checks import rotated

RNG = np.random.default_rng(1915)
N = 6
_Q = RNG.normal(size=(N, N))
SPD = _Q @ _Q.T / N + np.eye(N)
GEN = SPD + 0.3 * RNG.normal(size=(N, N)) / np.sqrt(N)


def _gmres_incremental(A, b, tol=1e-5, **kw):
    return gmres(A, b, tol=tol, solve_method="incremental", **kw)


SOLVERS = {"cg": (cg, SPD), "bicgstab": (bicgstab, GEN), "gmres": (gmres, GEN),
           "gmres_incremental": (_gmres_incremental, GEN)}


def close(a, b, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol,
                               atol=atol)


def fd(f, x, eps=1e-5):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def whiles(fn, *args):
    return secant.jit(fn).lower(*args).as_text().count("stablehlo.while")


# --- vmap: one solve of the batch ------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_vmap_is_one_solve_each_example_stopping_at_its_own_step(name, x64):
    solver, A = SOLVERS[name]
    # b's far apart in difficulty: at tol=1e-3 each stops at its own step; a batch run to the
    # last example's step would be closer to the exact solve than a loop (no longer equal)
    u = np.linalg.eigh(SPD)[1]
    bs = np.stack([u[:, 0], RNG.normal(size=N), 1e-3 * RNG.normal(size=N), np.ones(N),
                   u[:, 0] + 1e-2 * u[:, -1]])
    As = np.stack([A * s for s in (1.0, 0.7, 1.9, 1.3, 1.0)])

    kw = {"restart": 2} if "gmres" in name else {}  # (a restart short of N: it stops early)

    def one(a, b):
        return solver(a, b, tol=1e-3, **kw)[0]
    loop = np.stack([one(As[k], bs[k]) for k in range(len(bs))])
    exact = np.linalg.solve(As, bs[..., None])[..., 0]
    assert np.max(np.abs(loop - exact)) > 1e-6     # (the tolerance stop matters here)
    got = secant.vmap(one)(As, bs)
    close(got, loop, rtol=1e-8, atol=1e-10)
    close(secant.jit(secant.vmap(one))(As, bs), loop, rtol=1e-6, atol=1e-8)
    close(secant.vmap(one, in_axes=(None, 0))(A, bs),
          np.stack([one(A, b) for b in bs]), rtol=1e-8, atol=1e-10)
    # one solve: the staged program's while loops do not grow with the batch
    assert whiles(secant.vmap(one), As[:2], bs[:2]) == whiles(secant.vmap(one), As, bs)


@pytest.mark.parametrize("name", ["cg", "gmres"])
def test_vmap_of_a_function_operator_and_a_pytree_against_numpy(name, x64):
    solver, A = SOLVERS[name]
    ss = np.array([0.5, 1.0, 3.0])
    bs = RNG.normal(size=(3, N))

    def one(s, b):
        return solver(lambda v: s * (A @ v) + v, b, tol=1e-12)[0]
    close(secant.vmap(one)(ss, bs),
          [np.linalg.solve(s * A + np.eye(N), b) for s, b in zip(ss, bs)], rtol=1e-9)

    # a preconditioner (a matrix or a function) and an x0 the same for every example
    for kw in ({"M": np.diag(1 / np.diag(A))}, {"M": lambda v: v / np.diag(A)},
               {"x0": np.ones(N)}):
        close(secant.vmap(lambda b: solver(A, b, tol=1e-12, **kw)[0])(bs),
              np.linalg.solve(A, bs.T).T, rtol=1e-9)

    def tree(s, b):
        x, _ = solver(lambda v: {"p": s * v["p"] * 2.0, "q": v["q"] * 4.0},
                      {"p": b[:2], "q": b[2:]}, tol=1e-12)
        return x["p"], x["q"]
    p, q = secant.vmap(tree)(ss, bs)
    close(p, bs[:, :2] / (2 * ss[:, None]), rtol=1e-9)
    close(q, bs[:, 2:] / 4, rtol=1e-9)


def test_vmap_of_custom_linear_solve_with_the_users_own_solve(x64):
    def dense_solve(mv, rhs):
        return snp.linalg.solve(secant.jacfwd(mv)(rhs), rhs)

    def one(s, b):
        a = GEN * s
        return lax.custom_linear_solve(lambda v: a @ v, b, dense_solve, dense_solve)
    ss, bs = np.array([0.5, 2.0, 1.1]), RNG.normal(size=(3, N))
    close(secant.vmap(one)(ss, bs), [np.linalg.solve(GEN * s, b) for s, b in zip(ss, bs)],
          rtol=1e-9)
    g = secant.vmap(secant.grad(lambda s, b: snp.sum(one(s, b) ** 2)))(ss, bs)
    close(g, [fd(lambda t: np.sum(np.linalg.solve(GEN * t, b) ** 2), s) for s, b in zip(ss, bs)],
          rtol=1e-6)


def test_derivatives_of_the_batched_solve_against_closed_forms(x64):
    """d/ds sum((A s)^-1 b)^2 = -2 c / s^3, c = |A^-1 b|^2: vmap(grad), grad(vmap), jacfwd of
    vmap, vmap(grad(grad)) = 6 c / s^4, and jit of each against eager."""
    b = RNG.normal(size=N)
    c = np.sum(np.linalg.solve(SPD, b) ** 2)
    ss = np.array([0.8, 1.3, 2.0])

    def f(s):
        return snp.sum(cg(SPD * s, b, tol=1e-13)[0] ** 2)
    d1, d2 = -2 * c / ss ** 3, 6 * c / ss ** 4
    close(secant.vmap(secant.grad(f))(ss), d1, rtol=1e-8)
    close(secant.grad(lambda s: snp.sum(secant.vmap(f)(s)))(ss), d1, rtol=1e-8)
    close(np.diag(secant.jacfwd(secant.vmap(f))(ss)), d1, rtol=1e-8)
    close(secant.vmap(secant.grad(secant.grad(f)))(ss), d2, rtol=1e-7)
    close(secant.jit(secant.vmap(secant.grad(f)))(ss), d1, rtol=1e-8)
    # an unbatched argument's cotangent: the batch's sum (b shared by every example)
    bs_bar = secant.grad(lambda b: snp.sum(secant.vmap(
        lambda s: cg(SPD * s, b, tol=1e-13)[0])(ss)))(b)
    close(bs_bar, sum(np.linalg.solve(SPD * s, np.ones(N)) for s in ss), rtol=1e-8)


def test_second_derivatives_of_the_batched_solve(x64):
    """hessian of vmap: the batched solve's vjp rule is differentiable too (its twin vmapped, an
    unbatched argument's cotangent summed): in s, 6 c / s^4; in a b every example shares,
    sum_s 2 (A s)^-T (A s)^-1."""
    b = RNG.normal(size=N)
    c = np.sum(np.linalg.solve(SPD, b) ** 2)
    ss = np.array([0.8, 1.3, 2.0])

    def total(s):
        return snp.sum(secant.vmap(lambda t: cg(SPD * t, b, tol=1e-13)[0])(s) ** 2)
    close(secant.hessian(total)(ss), np.diag(6 * c / ss ** 4), rtol=1e-7, atol=1e-10)

    def shared(b):
        return snp.sum(secant.vmap(lambda t: cg(SPD * t, b, tol=1e-13)[0])(ss) ** 2)
    invs = [np.linalg.inv(SPD * s) for s in ss]
    close(secant.hessian(shared)(b), sum(2 * m.T @ m for m in invs), rtol=1e-8, atol=1e-10)


# --- second derivatives ----------------------------------------------------------------------
# (each solver under jacfwd(jacrev) or jacrev(jacfwd) in turn; both under
# HYPOTHESIS_PROFILE=thorough)
@pytest.mark.parametrize("name, order", [
    pytest.param(name, order, id=f"{name}-{order}") for name, order in rotated(
        sorted(SOLVERS), ["jacfwd_jacrev", "jacrev_jacfwd"])])
def test_second_derivative_in_the_matrix_is_the_closed_form(name, order, x64):
    """x = A^-1 b: d2x / dA_ij dA_kl = A^-1 e_k (A^-1)_li x_j + A^-1 e_i (A^-1)_jk x_l."""
    solver, A = SOLVERS[name]
    n = 3
    A, b = A[:n, :n], RNG.normal(size=n)
    inv = np.linalg.inv(A)
    x = inv @ b
    want = np.einsum("ak,li,j->aijkl", inv, inv, x) + np.einsum("ai,jk,l->aijkl", inv, inv, x)

    def solve(a):
        return solver(a, b, tol=1e-13)[0]
    outer, inner = (secant.jacfwd, secant.jacrev) if order == "jacfwd_jacrev" else \
        (secant.jacrev, secant.jacfwd)
    close(outer(inner(solve))(A), want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["cg", "gmres"])
def test_hessian_of_a_loss_through_the_solve_against_central_differences(name, x64):
    solver, A = SOLVERS[name]
    b = RNG.normal(size=N)

    def loss(p):
        return snp.sum(solver(A * p[0] + snp.diag(p), b * p[1], tol=1e-13)[0] ** 2)

    def ref_grad(p):        # float64, exact solves: d/dp of |M(p)^-1 b p1|^2
        m = A * p[0] + np.diag(p)
        x = np.linalg.solve(m, b * p[1])
        lam = np.linalg.solve(m.T, 2 * x)
        dm = [A * (k == 0) + np.diag(np.eye(N)[k]) for k in range(N)]
        return np.array([-lam @ (dm[k] @ x) + (lam @ b if k == 1 else 0.0) for k in range(N)])
    p = np.array([1.2, 0.7, 0.5, 0.9, 0.3, 1.1])
    want = np.stack([fd(lambda t: ref_grad(p + t * e), 0.0) for e in np.eye(N)], 1)
    close(secant.grad(loss)(p), ref_grad(p), rtol=1e-8)
    hess = secant.hessian(loss)(p)
    close(hess, want, rtol=1e-6, atol=1e-8)
    close(secant.jacfwd(secant.grad(loss))(p), want, rtol=1e-6, atol=1e-8)
    # (jit of the hessian through cg; through gmres as well, 10 of its test's 12 CPU s, under
    # HYPOTHESIS_PROFILE=thorough)
    if name == "cg" or os.environ.get("HYPOTHESIS_PROFILE") == "thorough":
        close(secant.jit(secant.hessian(loss))(p), hess, rtol=1e-9, atol=1e-12)


def test_second_derivative_of_custom_linear_solve_in_b_and_through_has_aux(x64):
    def dense_solve(mv, rhs):
        return snp.linalg.solve(secant.jacfwd(mv)(rhs), rhs)

    def with_aux(mv, rhs):
        return dense_solve(mv, rhs), 3.0

    def f(s, b):
        a = GEN * s
        x, aux = lax.custom_linear_solve(lambda v: a @ v, b * b, with_aux, with_aux,
                                         has_aux=True)
        return snp.sum(x ** 2) * aux
    b = RNG.normal(size=N)

    def ref_grad_b(b):      # 3 |A^-1 b^2|^2 / s^2 at s = 1.5: 12 b * (A^-T A^-1 b^2) / s^2
        inv = np.linalg.inv(GEN)
        return 12 * b * (inv.T @ inv @ (b * b)) / 1.5 ** 2
    want = np.stack([fd(lambda t: ref_grad_b(b + t * e), 0.0) for e in np.eye(N)], 1)
    close(secant.hessian(f, argnums=1)(1.5, b), want, rtol=1e-6, atol=1e-8)
    c = 3 * np.sum(np.linalg.solve(GEN, b * b) ** 2)
    close(secant.grad(secant.grad(f))(1.5, b), 6 * c / 1.5 ** 4, rtol=1e-8)
    # d/db of df/ds: d/ds of ref_grad_b at s (it scales as 1 / s^2)
    close(secant.grad(secant.grad(f), argnums=1)(1.5, b), -2 / 1.5 * ref_grad_b(b), rtol=1e-7)


def test_symmetric_second_derivative_and_a_missing_transpose_solve(x64):
    def dense_solve(mv, rhs):
        return snp.linalg.solve(secant.jacfwd(mv)(rhs), rhs)

    def f(s, symmetric=True):
        a = SPD * s
        return snp.sum(lax.custom_linear_solve(lambda v: a @ v, snp.ones(N), dense_solve,
                                               symmetric=symmetric) ** 2)
    c = np.sum(np.linalg.solve(SPD, np.ones(N)) ** 2)
    close(secant.grad(secant.grad(f))(1.5), 6 * c / 1.5 ** 4, rtol=1e-8)
    with pytest.raises(secant.SecantError, match="transpose_solve required"):
        secant.grad(secant.grad(lambda s: f(s, False)))(1.5)


# --- custom_root ----------------------------------------------------------------------------
def newton(f, x0):
    def body(i, x):
        return x - f(x) / secant.grad(f)(x)
    return lax.fori_loop(0, 40, body, x0)


def bisect(f, x0):
    def body(lo_hi):
        lo, hi = lo_hi
        mid = (lo + hi) / 2
        neg = f(mid) < 0
        return snp.where(neg, mid, lo), snp.where(neg, hi, mid)
    lo, hi = lax.while_loop(lambda lo_hi: lo_hi[1] - lo_hi[0] > 1e-12, body,
                            (x0 * 0.0, x0 * 0.0 + 100.0))
    return (lo + hi) / 2


@pytest.mark.parametrize("solve", [newton, bisect])
def test_custom_root_vmap_is_one_solve_and_its_hessian(solve, x64):
    def cube_root(x, w):        # y = (w x)^(1/3)
        return lax.custom_root(lambda y: y ** 3 - w * x, 1.0, solve, lambda g, y: y / g(1.0))
    xs, ws = np.array([2.0, 5.0, 30.0]), np.array([1.0, 0.5, 2.0])
    want = np.cbrt(ws * xs)
    close(secant.vmap(cube_root)(xs, ws), want, rtol=1e-10)
    close(secant.jit(secant.vmap(cube_root))(xs, ws), want, rtol=1e-10)
    # d/dx = w/3 (wx)^(-2/3); d2/dx2 = -2 w^2 / 9 (wx)^(-5/3)
    close(secant.vmap(secant.grad(cube_root))(xs, ws), ws / 3 * (ws * xs) ** (-2 / 3),
          rtol=1e-9)
    close(secant.vmap(secant.grad(secant.grad(cube_root)))(xs, ws),
          -2 * ws ** 2 / 9 * (ws * xs) ** (-5 / 3), rtol=1e-8)
    assert whiles(secant.vmap(cube_root), xs[:2], ws[:2]) == \
        whiles(secant.vmap(cube_root), xs, ws)

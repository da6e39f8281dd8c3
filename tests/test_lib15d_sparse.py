"""lib15d: secant.scipy.sparse.linalg (cg, bicgstab, gmres) as jax.scipy.sparse.linalg: values
against scipy.sparse.linalg (the same iterations: equal at a small maxiter too), implicit
derivatives (lax.custom_linear_solve) against float64 central differences of the exact solve,
for A a matrix, a function, a function closing over the differentiated value, and a pytree b;
under jit (against eager) and vmap (against a Python loop)."""
import numpy as np
import pytest
import scipy.sparse.linalg as ssl

import secant
import secant.numpy as snp
from secant.scipy.sparse.linalg import bicgstab, cg, gmres

RNG = np.random.default_rng(15)
N = 5
_Q = RNG.normal(size=(N, N))
SPD = _Q @ _Q.T + N * np.eye(N)                 # cg's: symmetric positive definite
GEN = SPD + 0.7 * RNG.normal(size=(N, N))       # bicgstab's and gmres': general
B = RNG.normal(size=N)
EPS = 1e-6


def _gmres_incremental(A, b, x0=None, tol=1e-5, M=None):
    return gmres(A, b, x0=x0, tol=tol, M=M, solve_method="incremental")


SOLVERS = {"cg": (cg, SPD), "bicgstab": (bicgstab, GEN), "gmres": (gmres, GEN),
           "gmres_incremental": (_gmres_incremental, GEN)}


def close(a, b, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def fd(f, x):
    return (f(x + EPS) - f(x - EPS)) / (2 * EPS)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_values_against_numpy_solve_for_a_matrix_and_a_function(name, x64):
    solver, A = SOLVERS[name]
    want = np.linalg.solve(A, B)
    x, _ = solver(A, B, tol=1e-12)
    close(x, want)
    x, _ = solver(lambda v: A @ v, B, tol=1e-12)
    close(x, want)
    x, _ = solver(A, B, x0=np.ones(N), M=np.diag(1 / np.diag(A)), tol=1e-12)
    close(x, want)
    x, _ = solver(A, B, M=lambda v: v / np.diag(A), tol=1e-12)
    close(x, want)
    close(secant.jit(lambda a, b: solver(a, b, tol=1e-12)[0])(A, B), want)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_the_iterations_are_scipys(k, x64):
    """At a fixed small number of steps (no tolerance stop) the iterates equal SciPy's."""
    close(cg(SPD, B, maxiter=k, tol=0.0, atol=1e-30)[0],
          ssl.cg(SPD, B, maxiter=k, rtol=0.0, atol=1e-30)[0], rtol=1e-10, atol=1e-12)
    close(bicgstab(GEN, B, maxiter=k, tol=0.0, atol=1e-30)[0],
          ssl.bicgstab(GEN, B, maxiter=k, rtol=0.0, atol=1e-30)[0], rtol=1e-10, atol=1e-12)
    for method in ("batched", "incremental"):
        close(gmres(GEN, B, maxiter=1, restart=k, tol=0.0, atol=1e-30,
                    solve_method=method)[0],
              ssl.gmres(GEN, B, maxiter=1, restart=k, rtol=0.0, atol=1e-30)[0],
              rtol=1e-9, atol=1e-12)
    M = np.diag(1 / np.diag(SPD))
    close(cg(SPD, B, maxiter=k, tol=0.0, atol=1e-30, M=M)[0],
          ssl.cg(SPD, B, maxiter=k, rtol=0.0, atol=1e-30, M=M)[0], rtol=1e-10, atol=1e-12)


def test_complex_hermitian_cg_and_gmres_info(x64):
    skew = np.triu(np.ones((N, N)), 1) - np.tril(np.ones((N, N)), -1)
    H = SPD + 0.3j * skew
    b = B + 1j * B[::-1]
    close(cg(H, b, tol=1e-12)[0], np.linalg.solve(H, b))
    x, info = gmres(GEN, B, tol=1e-12)
    assert int(info) == 0


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_gradients_in_the_matrix_and_in_b_against_central_differences(name, x64):
    solver, A = SOLVERS[name]

    def f(s, b):
        x, _ = solver(A * s + np.diag(np.arange(N)) * s ** 2, b, tol=1e-13)
        return snp.sum(snp.sin(x))

    def ref(s, b):
        return np.sum(np.sin(np.linalg.solve(A * s + np.diag(np.arange(N)) * s ** 2, b)))

    s = 1.3
    gs, gb = secant.grad(f, argnums=(0, 1))(s, B)
    close(gs, fd(lambda t: ref(t, B), s), rtol=1e-6)
    close(gb, [fd(lambda t: ref(s, B + t * e), 0.0) for e in np.eye(N)], rtol=1e-6)
    jgs, jgb = secant.jit(secant.grad(f, argnums=(0, 1)))(s, B)
    close(jgs, gs, rtol=1e-9)
    close(jgb, gb, rtol=1e-9)
    _, t = secant.jvp(f, (s, B), (1.0, np.ones(N)))
    close(t, gs + np.sum(gb), rtol=1e-6)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_a_function_closing_over_the_differentiated_value(name, x64):
    solver, A = SOLVERS[name]

    def f(s):
        x, _ = solver(lambda v: s * (A @ v) + s ** 3 * v, B, tol=1e-13)
        return snp.sum(x ** 2)

    def ref(s):
        return np.sum(np.linalg.solve(s * A + s ** 3 * np.eye(N), B) ** 2)

    close(f(1.2), ref(1.2))
    close(secant.grad(f)(1.2), fd(ref, 1.2), rtol=1e-6)
    close(secant.jit(secant.grad(f))(1.2), fd(ref, 1.2), rtol=1e-6)


def test_a_pytree_right_hand_side(x64):
    A1, A2 = SPD[:2, :2], SPD[2:, 2:]

    def matvec(t):
        return {"a": A1 @ t["a"], "b": (A2 @ t["b"][0],)}

    def f(b1, b2):
        x, _ = cg(matvec, {"a": b1, "b": (b2,)}, tol=1e-13)
        return snp.sum(x["a"] ** 2) + snp.sum(snp.cos(x["b"][0]))

    def ref(b1, b2):
        return np.sum(np.linalg.solve(A1, b1) ** 2) + np.sum(np.cos(np.linalg.solve(A2, b2)))

    b1, b2 = B[:2], B[2:]
    x, _ = cg(matvec, {"a": b1, "b": (b2,)}, tol=1e-13)
    close(x["a"], np.linalg.solve(A1, b1))
    close(x["b"][0], np.linalg.solve(A2, b2))
    g1, g2 = secant.grad(f, argnums=(0, 1))(b1, b2)
    close(g1, [fd(lambda t: ref(b1 + t * e, b2), 0.0) for e in np.eye(2)], rtol=1e-6)
    close(g2, [fd(lambda t: ref(b1, b2 + t * e), 0.0) for e in np.eye(N - 2)], rtol=1e-6)
    x, _ = gmres(matvec, {"a": b1, "b": (b2,)}, tol=1e-13)
    close(x["b"][0], np.linalg.solve(A2, b2))


@pytest.mark.parametrize("name", ["cg", "gmres"])
def test_vmap_against_a_python_loop(name, x64):
    solver, A = SOLVERS[name]
    bs = np.stack([B, 2 * B + 1, -B])
    got = secant.vmap(lambda b: solver(A, b, tol=1e-12)[0])(bs)
    for k in range(3):
        close(got[k], solver(A, bs[k], tol=1e-12)[0])

    def f(s):
        return snp.sum(solver(A * s, B, tol=1e-13)[0] ** 2)
    ss = np.array([0.8, 1.3, 2.0])
    got = secant.vmap(secant.grad(f))(ss)
    close(got, [fd(lambda t: np.sum(np.linalg.solve(A * t, B) ** 2), v) for v in ss],
          rtol=1e-6)


def test_refusals_name_the_users_line(x64):
    with pytest.raises(ValueError, match="square matrix"):
        cg(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="x0 must be the same for every example"):
        secant.vmap(lambda b: cg(SPD, b, x0=b)[0])(np.stack([B, B]))
    with pytest.raises(ValueError, match="solve_method"):
        gmres(GEN, B, solve_method="direct")
    with pytest.raises(secant.SecantError, match="test_lib15d_sparse.py"):
        cg(SPD, B, x0=(B,))


def test_float32_by_default():
    x, _ = cg(SPD.astype(np.float32), B.astype(np.float32))
    assert x.dtype == np.float32
    close(x, np.linalg.solve(SPD, B), rtol=1e-4, atol=1e-5)

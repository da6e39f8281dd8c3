"""lax.custom_root and lax.custom_linear_solve under grad, jvp, vmap and jit: derivatives by the
implicit function theorem (secant/lax_implicit.py), checked against float64 finite differences
of the closed forms, vmap against a Python loop, jit against eager."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax


@pytest.fixture(autouse=True)
def x64():
    secant.config.update("enable_x64", True)
    yield
    secant.config.update("enable_x64", False)


def close(a, b, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol,
                               atol=atol)


def fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def scalar_solve(g, y):
    return y / g(1.0)


def newton(f, x0):
    def body(i, x):
        return x - f(x) / secant.grad(f)(x)
    return lax.fori_loop(0, 30, body, x0)


def bisect(f, x0):
    # its iterations have no useful derivative (snp.where of comparisons): a gradient that
    # followed them would be zero; the implicit one is not
    def body(i, lo_hi):
        lo, hi = lo_hi
        mid = (lo + hi) / 2
        neg = f(mid) < 0
        return snp.where(neg, mid, lo), snp.where(neg, hi, mid)
    lo, hi = lax.fori_loop(0, 80, body, (x0 * 0.0, x0 * 0.0 + 100.0))
    return (lo + hi) / 2


def sqrt_power(x, w):
    # y = sqrt(w x^3), the root of y^2 - w x^3 in y
    def f(y):
        return y ** 2 - w * x ** 3
    return lax.custom_root(f, 1.0, newton, scalar_solve)


def ref_sqrt_power(x, w):
    return np.sqrt(w * x ** 3)


def test_custom_root_grad_and_jvp_match_finite_differences():
    x, w = 2.0, 1.5
    close(sqrt_power(x, w), ref_sqrt_power(x, w))
    gx, gw = secant.grad(sqrt_power, argnums=(0, 1))(x, w)
    close(gx, fd(lambda t: ref_sqrt_power(t, w), x), rtol=1e-6)
    close(gw, fd(lambda t: ref_sqrt_power(x, t), w), rtol=1e-6)
    out, out_dot = secant.jvp(sqrt_power, (x, w), (0.5, -2.0))
    close(out, ref_sqrt_power(x, w))
    close(out_dot, 0.5 * gx - 2.0 * gw, rtol=1e-6)
    close(secant.jit(secant.grad(sqrt_power, argnums=(0, 1)))(x, w), (gx, gw), rtol=1e-6)
    src = secant.source(secant.grad(sqrt_power))
    assert "custom_root_vjp(" in src and "newton" in src


def test_custom_root_derivative_does_not_follow_solve_iterations():
    def root(x):
        return lax.custom_root(lambda y: y ** 3 - x, 1.0, bisect, scalar_solve)
    close(root(8.0), 2.0, rtol=1e-9)
    close(secant.grad(root)(8.0), 1 / 12, rtol=1e-6)           # d x^(1/3) = x^(-2/3) / 3
    # and at second order (bisect's iterations would give 0): -2/9 x^(-5/3)
    close(secant.grad(secant.grad(root))(8.0), -2 / 9 / 32, rtol=1e-6)
    close(secant.jacfwd(secant.grad(root))(8.0), -2 / 9 / 32, rtol=1e-6)


def test_custom_root_vmap_and_its_gradients_match_a_loop():
    xs = np.array([1.0, 2.0, 4.0])
    w = 1.5
    loop = [ref_sqrt_power(x, w) for x in xs]
    close(secant.vmap(sqrt_power, in_axes=(0, None))(xs, w), loop)
    close(secant.jit(secant.vmap(sqrt_power, in_axes=(0, None)))(xs, w), loop)
    grads = secant.vmap(secant.grad(sqrt_power, argnums=(0, 1)), in_axes=(0, None))(xs, w)
    close(grads[0], [fd(lambda t: ref_sqrt_power(t, w), x) for x in xs], rtol=1e-6)
    close(grads[1], [fd(lambda t: ref_sqrt_power(x, t), w) for x in xs], rtol=1e-6)

    def loss(v, w):
        return snp.sum(secant.vmap(sqrt_power, in_axes=(0, None))(v, w))
    gv, gw = secant.grad(loss, argnums=(0, 1))(xs, w)
    close(gv, grads[0], rtol=1e-9)
    close(gw, np.sum(grads[1]), rtol=1e-9)
    _, t = secant.jvp(lambda v: secant.vmap(sqrt_power, in_axes=(0, None))(v, w), (xs,),
                      (np.ones(3),))
    close(t, grads[0], rtol=1e-9)


def test_custom_root_with_aux_and_guess_has_no_derivative():
    def solve_aux(f, x0):
        return newton(f, x0), 7

    def root(x):
        r, aux = lax.custom_root(lambda y: y ** 2 - x, x, solve_aux, scalar_solve,
                                 has_aux=True)
        return r * aux
    close(root(9.0), 21.0)
    close(secant.grad(root)(9.0), 7 / 6, rtol=1e-9)      # the guess x carries no derivative




A0 = np.array([[4.0, 1.0], [0.5, 3.0]])
B = np.array([1.0, 2.0])


def dense_solve(mv, rhs):       # only through mv, as custom_linear_solve's solve
    return snp.linalg.solve(secant.jacfwd(mv)(rhs), rhs)


def linear(s, b):
    a = A0 * s

    def matvec(v):
        return a @ v
    return snp.sum(lax.custom_linear_solve(matvec, b, dense_solve, dense_solve) ** 2)


def ref_linear(s, b):
    return np.sum(np.linalg.solve(A0 * s, b) ** 2)


def test_custom_linear_solve_derivatives_match_finite_differences():
    s = 1.5
    close(linear(s, B), ref_linear(s, B))
    gs, gb = secant.grad(linear, argnums=(0, 1))(s, B)
    close(gs, fd(lambda t: ref_linear(t, B), s), rtol=1e-6)
    close(gb, [fd(lambda t: ref_linear(s, B + t * e), 0.0) for e in np.eye(2)], rtol=1e-6)
    db = np.array([0.3, -0.2])
    _, t = secant.jvp(linear, (s, B), (1.0, db))
    close(t, gs + gb @ db, rtol=1e-6)
    jgs, jgb = secant.jit(secant.grad(linear, argnums=(0, 1)))(s, B)
    close(jgs, gs, rtol=1e-9)
    close(jgb, gb, rtol=1e-9)
    ss = np.array([1.0, 2.0])
    close(secant.vmap(linear, in_axes=(0, None))(ss, B), [ref_linear(v, B) for v in ss])
    close(secant.vmap(secant.grad(linear), in_axes=(0, None))(ss, B),
          [fd(lambda t: ref_linear(t, B), v) for v in ss], rtol=1e-6)


def test_custom_linear_solve_symmetric_and_missing_transpose_solve():
    sym = np.array([[4.0, 1.0], [1.0, 3.0]])

    def f(s, b, **kw):
        return snp.sum(lax.custom_linear_solve(lambda v: (sym * s) @ v, b, dense_solve,
                                               **kw) ** 2)

    def ref(s, b):
        return np.sum(np.linalg.solve(sym * s, b) ** 2)
    gs, gb = secant.grad(lambda s, b: f(s, b, symmetric=True), argnums=(0, 1))(2.0, B)
    close(gs, fd(lambda t: ref(t, B), 2.0), rtol=1e-6)
    close(gb, [fd(lambda t: ref(2.0, B + t * e), 0.0) for e in np.eye(2)], rtol=1e-6)
    _, t = secant.jvp(lambda s: f(s, B), (2.0,), (1.0,))      # forward mode needs no transpose
    close(t, gs, rtol=1e-6)
    with pytest.raises(secant.SecantError, match="transpose_solve required"):
        secant.grad(lambda s: f(s, B))(2.0)


def jacobian_solve(g, y):      # the documentation's tangent_solve for a vector root
    return snp.linalg.solve(secant.jacfwd(g)(y), y)


def vector_newton(f, x0):
    def body(i, x):
        return x - snp.linalg.solve(secant.jacfwd(f)(x), f(x))
    return lax.fori_loop(0, 30, body, x0)


def vector_root(p):
    def f(y):
        return snp.array([y[0] ** 2 + y[1] - p[0], y[1] ** 3 - p[1]])
    return lax.custom_root(f, snp.ones(2), vector_newton, jacobian_solve)


def ref_vector_root(p):
    y1 = np.cbrt(p[1])
    return np.array([np.sqrt(p[0] - y1), y1])


def test_custom_root_vector_jacobians_with_a_jacobian_tangent_solve():
    p = np.array([5.0, 8.0])
    close(vector_root(p), ref_vector_root(p))
    expected = np.stack([fd(lambda t: ref_vector_root(p + t * e), 0.0) for e in np.eye(2)], 1)
    close(secant.jacrev(vector_root)(p), expected, rtol=1e-6)
    close(secant.jacfwd(vector_root)(p), expected, rtol=1e-6)
    close(secant.jit(secant.jacrev(vector_root))(p), expected, rtol=1e-6)
    ps = np.stack([p, p + 1.0])
    close(secant.vmap(secant.grad(lambda q: snp.sum(vector_root(q))))(ps),
          [np.sum(secant.jacrev(vector_root)(q), 0) for q in ps], rtol=1e-9)


def test_custom_root_second_derivatives_match_finite_differences():
    # y = sqrt(w x^3): second derivatives through the implicit rule, not newton's iterations
    x, w = 2.0, 1.5
    hxx = fd(lambda t: fd(lambda s: ref_sqrt_power(s, w), t, 1e-4), x, 1e-4)
    hxw = fd(lambda t: fd(lambda s: ref_sqrt_power(t, s), w, 1e-4), x, 1e-4)
    close(hxx, 0.75 * np.sqrt(w) / np.sqrt(x), rtol=1e-5)         # (sqrt(w) x^1.5)''
    close(secant.grad(secant.grad(sqrt_power))(x, w), hxx, rtol=1e-5)
    close(secant.grad(secant.grad(sqrt_power), argnums=1)(x, w), hxw, rtol=1e-5)
    close(secant.jacfwd(secant.grad(sqrt_power))(x, w), hxx, rtol=1e-5)
    close(secant.hessian(sqrt_power, argnums=(0, 1))(x, w),
          [[hxx, hxw], [hxw, fd(lambda t: fd(lambda s: ref_sqrt_power(x, s), t, 1e-4), w, 1e-4)]],
          rtol=1e-5)


def test_custom_root_second_derivative_with_aux_and_a_vector_root():
    def solve_aux(f, x0):
        return newton(f, x0), 7

    def root(x):
        r, aux = lax.custom_root(lambda y: y ** 2 - x, x, solve_aux, scalar_solve,
                                 has_aux=True)
        return r * aux
    close(secant.grad(secant.grad(root))(9.0), -7 / 4 / 27, rtol=1e-9)    # 7 (x^-1/2 / 2)'
    # a tangent_solve taking jacfwd of the linearised f (jacobian_solve), which closes over the
    # root: secant specialises jacobian_solve to it (`secant.jacfwd(g)` read as jacfwd's own)
    p, e, r = np.array([5.0, 8.0]), 1e-4, ref_vector_root
    want = np.stack([np.stack([(r(p + e * a + e * b) - r(p + e * a - e * b)
                                - r(p - e * a + e * b) + r(p - e * a - e * b)) / (4 * e * e)
                               for b in np.eye(2)], -1) for a in np.eye(2)], -1)
    close(secant.hessian(vector_root)(p), want, rtol=1e-6, atol=1e-7)


def test_custom_linear_solve_second_derivative():
    # sum((A0 s)^-1 b)^2 = c / s^2: its second derivative 6 c / s^4 (solve15: the rules are
    # custom_linear_solves again, as JAX's)
    c = np.sum(np.linalg.solve(A0, B) ** 2)
    close(secant.grad(secant.grad(linear))(1.5, B), 6 * c / 1.5 ** 4, rtol=1e-9)

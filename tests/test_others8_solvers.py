"""Issue 15, code written by others (eighth round): numerical solvers as their authors write them
with JAX. An adaptive Bogacki-Shampine integrator in lax.while_loop with error control,
lax.custom_root around a Newton solve, lax.custom_linear_solve around conjugate gradients, a
Lanczos tridiagonalisation and inverse iteration for extreme eigenvalues, a local-level Kalman
filter's likelihood against the dense Gaussian, scipy.optimize.minimize(BFGS), value iteration to
a fixed point, Gauss-Legendre and Romberg quadrature, Clenshaw's recurrence, the Thomas algorithm
as two scans (the second reversed), a natural cubic spline, and golden-section search with
per-example stopping under vmap. Checked against closed forms, SciPy / NumPy float64, finite
differences, a Python loop and eager."""
import numpy as np
import pytest
import scipy.interpolate
import scipy.optimize

import secant
import secant as jax
import secant.numpy as jnp
from secant import grad, jacfwd, jit, jvp, lax, vmap
from secant.scipy.optimize import minimize

from others15_check import check_grad, check_vmap, fd_grad

RNG = np.random.default_rng(8080)


# --- an adaptive Runge-Kutta integrator with error control --------------------------------------
def odeint_bs23(f, y0, t1, k, rtol=1e-8, atol=1e-10, h0=0.01):
    def step(state):
        t, y, h, n = state
        h = jnp.minimum(h, t1 - t)
        k1 = f(y, t, k)
        k2 = f(y + 0.5 * h * k1, t + 0.5 * h, k)
        k3 = f(y + 0.75 * h * k2, t + 0.75 * h, k)
        y_new = y + h * (2 * k1 + 3 * k2 + 4 * k3) / 9
        k4 = f(y_new, t + h, k)
        err = h * (-5 * k1 / 72 + k2 / 12 + k3 / 9 - k4 / 8)
        scale = atol + rtol * jnp.maximum(jnp.abs(y), jnp.abs(y_new))
        err_norm = jnp.sqrt(jnp.mean((err / scale) ** 2))
        accept = err_norm <= 1.0
        factor = jnp.clip(0.9 * err_norm ** (-1.0 / 3.0), 0.2, 5.0)
        t = jnp.where(accept, t + h, t)
        y = jnp.where(accept, y_new, y)
        return t, y, h * factor, n + 1

    def not_done(state):
        return state[0] < t1
    _, y, _, n = lax.while_loop(not_done, step, (0.0, y0, h0, 0))
    return y, n


def decay(y, t, k):
    return jnp.stack([-k * y[0], k * y[0] - 0.5 * y[1]])


def exact_decay(y0, t, k):
    a = y0[0] * np.exp(-k * t)
    b = y0[1] * np.exp(-0.5 * t) + y0[0] * k / (k - 0.5) * (np.exp(-0.5 * t) - np.exp(-k * t))
    return np.array([a, b])


def test_adaptive_rk_with_error_control(x64):
    y0, k = np.array([1.0, 0.2]), 1.3
    y, n = odeint_bs23(decay, jnp.asarray(y0), 2.0, k)
    np.testing.assert_allclose(y, exact_decay(y0, 2.0, k), rtol=1e-6)
    assert 10 < int(n) < 400
    yj, nj = jit(lambda y0, k: odeint_bs23(decay, y0, 2.0, k))(jnp.asarray(y0), k)
    np.testing.assert_allclose(yj, y, rtol=1e-10)
    assert int(nj) == int(n)
    # forward mode through the while_loop: sensitivity in k against the closed form's difference
    _, dy = jvp(lambda k: odeint_bs23(decay, jnp.asarray(y0), 2.0, k)[0], (k,), (1.0,))
    want = (exact_decay(y0, 2.0, k + 1e-6) - exact_decay(y0, 2.0, k - 1e-6)) / 2e-6
    np.testing.assert_allclose(dy, want, rtol=1e-5)
    np.testing.assert_allclose(jacfwd(lambda y0: odeint_bs23(decay, y0, 2.0, k)[0])(
        jnp.asarray(y0))[0, 0], np.exp(-2.0 * k), rtol=1e-6)
    # each rate its own number of steps under vmap
    ks = np.array([0.8, 1.3, 3.0])
    ys, ns = vmap(lambda k: odeint_bs23(decay, jnp.asarray(y0), 2.0, k))(jnp.asarray(ks))
    for i, kk in enumerate(ks):
        yi, ni = odeint_bs23(decay, jnp.asarray(y0), 2.0, kk)
        np.testing.assert_allclose(ys[i], yi, rtol=1e-10)
        assert int(ns[i]) == int(ni)


def euler_while_with_args(f, y0, t1, args):
    def step(state):
        t, y = state
        return t + 0.1, y + 0.1 * f(y, t, *args)
    return lax.while_loop(lambda s: s[0] < t1, step, (0.0, y0))[1]


def test_odeint_style_args_as_a_tuple_parameter(x64):
    _, y_dot = jvp(lambda k: euler_while_with_args(lambda y, t, k: -k * y, 1.0, 1.0, (k,)), (1.3,), (1.0,))
    t, steps = 0.0, 0
    while t < 1.0:
        t, steps = t + 0.1, steps + 1
    np.testing.assert_allclose(y_dot, -steps * 0.1 * (1 - 0.13) ** (steps - 1), rtol=1e-10)


def rk4_with_args(f, y0, ts, *args):
    """odeint's calling convention: the vector field's extra arguments passed as *args."""
    def step(y, t_pair):
        t, t_next = t_pair
        h = t_next - t
        k1 = f(y, t, *args)
        k2 = f(y + 0.5 * h * k1, t + 0.5 * h, *args)
        k3 = f(y + 0.5 * h * k2, t + 0.5 * h, *args)
        k4 = f(y + h * k3, t_next, *args)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
        return y, y
    return lax.scan(step, y0, (ts[:-1], ts[1:]))[1]


def test_odeint_style_args_forwarded_eagerly_and_under_jit(x64):
    ts = jnp.linspace(0.0, 2.0, 41)
    ys = rk4_with_args(decay, jnp.asarray([1.0, 0.2]), ts, 1.3)
    np.testing.assert_allclose(ys[-1], exact_decay(np.array([1.0, 0.2]), 2.0, 1.3), rtol=1e-6)
    np.testing.assert_allclose(jit(rk4_with_args, static_argnums=0)(decay, jnp.asarray([1.0, 0.2]), ts, 1.3),
                               ys, rtol=1e-12)


def test_odeint_style_args_differentiated(x64):
    ts = jnp.linspace(0.0, 2.0, 41)
    g = grad(lambda k: rk4_with_args(decay, jnp.asarray([1.0, 0.2]), ts, k)[-1, 1])(1.3)
    h = 1e-6
    want = (exact_decay(np.array([1.0, 0.2]), 2.0, 1.3 + h) - exact_decay(np.array([1.0, 0.2]), 2.0, 1.3 - h))[1] / (2 * h)
    np.testing.assert_allclose(g, want, rtol=1e-5)
    check_vmap(lambda k: rk4_with_args(decay, jnp.asarray([1.0, 0.2]), ts, k), (np.array([0.7, 1.3]),))


# --- lax.custom_root around Newton's method ------------------------------------------------------
def newton_solve(g, x0):
    def body(state):
        x, _ = state
        return x - g(x) / grad(g)(x), x
    x, _ = lax.while_loop(lambda s: jnp.abs(s[0] - s[1]) > 1e-13, body, (x0, x0 + 1.0))
    return x


def cube_root_of(a):
    """The real root of x**3 + x - a, differentiable in a by the implicit function theorem."""
    f = lambda x: x ** 3 + x - a
    return lax.custom_root(f, 1.0, newton_solve, lambda g, y: y / g(1.0))


def test_custom_root_newton_implicit_gradient(x64):
    a = 3.0
    x = cube_root_of(a)
    np.testing.assert_allclose(x ** 3 + x, a, rtol=1e-12)
    np.testing.assert_allclose(grad(cube_root_of)(a), 1 / (3 * x ** 2 + 1), rtol=1e-10)
    np.testing.assert_allclose(jit(grad(cube_root_of))(a), 1 / (3 * x ** 2 + 1), rtol=1e-10)
    check_vmap(cube_root_of, (np.array([0.5, 3.0, 10.0]),))
    check_vmap(grad(cube_root_of), (np.array([0.5, 3.0, 10.0]),))
    _, x_dot = jvp(cube_root_of, (a,), (1.0,))
    np.testing.assert_allclose(x_dot, 1 / (3 * x ** 2 + 1), rtol=1e-10)


def cube_root_derivatives(a):
    """x(a), the real root of x**3 + x - a, and its 1st-3rd derivatives in closed form:
    x1 = 1/(3x^2+1), x2 = -6 x x1^3, x3 = -6 x1^4 + 108 x^2 x1^5."""
    x = np.real([r for r in np.roots([1, 0, 1, -a]) if abs(r.imag) < 1e-9][0])
    x1 = 1 / (3 * x ** 2 + 1)
    return x, x1, -6 * x * x1 ** 3, -6 * x1 ** 4 + 108 * x ** 2 * x1 ** 5


def test_custom_root_second_derivative(x64):
    a = 3.0
    x = float(cube_root_of(a))
    xp = 1 / (3 * x ** 2 + 1)        # d/da 1/(3x^2+1) = -6x x' / (3x^2+1)^2
    np.testing.assert_allclose(grad(grad(cube_root_of))(a), -6 * x * xp ** 3, rtol=1e-8)


def test_custom_root_higher_derivatives_under_every_composition(x64):
    a = 3.0
    _, _, d2, d3 = cube_root_derivatives(a)
    # the closed forms against float64 central differences of the one below
    np.testing.assert_allclose(d2, (cube_root_derivatives(a + 1e-5)[1]
                                    - cube_root_derivatives(a - 1e-5)[1]) / 2e-5, rtol=1e-7)
    np.testing.assert_allclose(d3, (cube_root_derivatives(a + 1e-4)[2]
                                    - cube_root_derivatives(a - 1e-4)[2]) / 2e-4, rtol=1e-6)
    for second in (grad(grad(cube_root_of)), jacfwd(grad(cube_root_of)),
                   grad(jacfwd(cube_root_of)), jax.jacrev(jacfwd(cube_root_of)),
                   jacfwd(jacfwd(cube_root_of)), jax.hessian(cube_root_of),
                   jit(grad(grad(cube_root_of)))):
        np.testing.assert_allclose(second(a), d2, rtol=1e-9)
    for third in (grad(grad(grad(cube_root_of))), jacfwd(grad(grad(cube_root_of))),
                  jacfwd(jacfwd(jacfwd(cube_root_of)))):
        np.testing.assert_allclose(third(a), d3, rtol=1e-9)
    as_ = np.array([0.5, 3.0, 10.0])
    np.testing.assert_allclose(vmap(grad(grad(cube_root_of)))(jnp.asarray(as_)),
                               [cube_root_derivatives(t)[2] for t in as_], rtol=1e-9)
    np.testing.assert_allclose(vmap(jacfwd(grad(cube_root_of)))(jnp.asarray(as_)),
                               [cube_root_derivatives(t)[2] for t in as_], rtol=1e-9)
    # derivatives of the batched function and of its batched rules
    np.testing.assert_allclose(grad(lambda v: jnp.sum(vmap(grad(cube_root_of))(v)))(
        jnp.asarray(as_)), [cube_root_derivatives(t)[2] for t in as_], rtol=1e-9)
    np.testing.assert_allclose(jnp.diagonal(jax.hessian(lambda v: jnp.sum(vmap(cube_root_of)(v)))(
        jnp.asarray(as_))), [cube_root_derivatives(t)[2] for t in as_], rtol=1e-9)


# --- lax.custom_linear_solve around conjugate gradients ------------------------------------------
def cg(matvec, b, iters=12):
    def body(_, state):
        x, r, p, rs = state
        ap = matvec(p)
        alpha = rs / jnp.dot(p, ap)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = jnp.dot(r, r)
        p = r + (rs_new / jnp.where(rs > 0, rs, 1.0)) * p
        return x, r, p, rs_new
    x0 = jnp.zeros_like(b)
    return lax.fori_loop(0, iters, body, (x0, b, b, jnp.dot(b, b)))[0]


def spd_solve(a, b):
    matvec = lambda v: a @ v
    return lax.custom_linear_solve(matvec, b, solve=cg, symmetric=True)


def spd_matrix(n=5):
    m = RNG.normal(size=(n, n))
    return m @ m.T + n * np.eye(n)


def test_custom_linear_solve_with_cg(x64):
    a, b = spd_matrix(), RNG.normal(size=5)
    x = spd_solve(jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-9)
    c = RNG.normal(size=5)
    g_b = check_grad(lambda b: jnp.dot(c, spd_solve(jnp.asarray(a), b)), b)
    np.testing.assert_allclose(g_b, np.linalg.solve(a, c), rtol=1e-9)
    g_a = grad(lambda a: jnp.dot(c, spd_solve(a, jnp.asarray(b))))(jnp.asarray(a))
    np.testing.assert_allclose(g_a, -np.outer(np.linalg.solve(a, c), np.linalg.solve(a, b)),
                               rtol=1e-8)
    check_vmap(lambda b: spd_solve(jnp.asarray(a), b), (RNG.normal(size=(3, 5)),))
    _, x_dot = jvp(lambda b: spd_solve(jnp.asarray(a), b), (jnp.asarray(b),), (jnp.asarray(c),))
    np.testing.assert_allclose(x_dot, np.linalg.solve(a, c), rtol=1e-9)


# --- Lanczos and inverse iteration -----------------------------------------------------------------
def lanczos(a, v0, k):
    n = v0.shape[0]
    basis = jnp.zeros((k + 1, n)).at[0].set(v0 / jnp.linalg.norm(v0))
    alphas, betas = jnp.zeros(k), jnp.zeros(k)

    def body(j, state):
        basis, alphas, betas = state
        w = a @ basis[j]
        alpha = jnp.dot(w, basis[j])
        w = w - basis.T @ (basis @ w)          # full reorthogonalisation (rows past j are zero)
        beta = jnp.linalg.norm(w)
        basis = basis.at[j + 1].set(w / beta)
        return basis, alphas.at[j].set(alpha), betas.at[j].set(beta)
    basis, alphas, betas = lax.fori_loop(0, k, body, (basis, alphas, betas))
    return jnp.diag(alphas) + jnp.diag(betas[:-1], 1) + jnp.diag(betas[:-1], -1)


def top_ritz_value(a, v0, k=5):
    return jnp.linalg.eigvalsh(lanczos(a, v0, k))[-1]


def inverse_iteration(a, shift, v0, iters=30):
    def body(_, v):
        w = jnp.linalg.solve(a - shift * jnp.eye(a.shape[0]), v)
        return w / jnp.linalg.norm(w)
    v = lax.fori_loop(0, iters, body, v0)
    return v @ a @ v


def test_lanczos_and_inverse_iteration_eigenvalues(x64):
    m = RNG.normal(size=(5, 5))
    a = (m + m.T) / 2
    evals, evecs = np.linalg.eigh(a)
    v0 = RNG.normal(size=5)
    np.testing.assert_allclose(top_ritz_value(jnp.asarray(a), jnp.asarray(v0)), evals[-1], rtol=1e-9)
    np.testing.assert_allclose(jit(top_ritz_value, static_argnums=2)(jnp.asarray(a), jnp.asarray(v0), 5),
                               evals[-1], rtol=1e-9)
    # d lambda_max / dA = v v^T (a full Krylov space: the Ritz value is the eigenvalue)
    g = grad(top_ritz_value)(jnp.asarray(a), jnp.asarray(v0))
    np.testing.assert_allclose((g + g.T) / 2, np.outer(evecs[:, -1], evecs[:, -1]), atol=1e-6)
    lam = inverse_iteration(jnp.asarray(a), evals[0] - 0.1, jnp.asarray(v0))
    np.testing.assert_allclose(lam, evals[0], rtol=1e-10)
    g = grad(inverse_iteration)(jnp.asarray(a), evals[0] - 0.1, jnp.asarray(v0))
    np.testing.assert_allclose((g + g.T) / 2, np.outer(evecs[:, 0], evecs[:, 0]), atol=1e-7)
    check_vmap(lambda v: inverse_iteration(jnp.asarray(a), evals[0] - 0.1, v),
               (RNG.normal(size=(2, 5)),))


# --- Kalman filter for a local-level model ------------------------------------------------------
def local_level_loglik(log_q, log_r, ys, m0=0.0, p0=1.0):
    q, r = jnp.exp(log_q), jnp.exp(log_r)

    def step(carry, y):
        m, p = carry
        p = p + q                            # predict
        s = p + r
        ll = -0.5 * (jnp.log(2 * jnp.pi * s) + (y - m) ** 2 / s)
        k = p / s                            # update
        return (m + k * (y - m), (1 - k) * p), ll
    _, lls = lax.scan(step, (m0, p0), ys)
    return jnp.sum(lls)


def dense_local_level_loglik(log_q, log_r, ys, p0=1.0):
    n = len(ys)
    t = np.arange(1, n + 1)
    cov = p0 + np.exp(log_q) * np.minimum.outer(t, t) + np.exp(log_r) * np.eye(n)
    sign, logdet = np.linalg.slogdet(cov)
    return -0.5 * (n * np.log(2 * np.pi) + logdet + ys @ np.linalg.solve(cov, ys))


def test_kalman_filter_against_the_dense_gaussian(x64):
    ys = np.cumsum(RNG.normal(size=7) * 0.5) + RNG.normal(size=7) * 0.3
    np.testing.assert_allclose(local_level_loglik(-1.0, -2.0, jnp.asarray(ys)),
                               dense_local_level_loglik(-1.0, -2.0, ys), rtol=1e-11)
    g = check_grad(local_level_loglik, -1.0, -2.0, ys)
    h = 1e-6
    want = (dense_local_level_loglik(-1.0 + h, -2.0, ys) - dense_local_level_loglik(-1.0 - h, -2.0, ys)) / (2 * h)
    np.testing.assert_allclose(g, want, rtol=1e-6)
    check_grad(local_level_loglik, -1.0, -2.0, ys, argnum=1)
    check_vmap(lambda ys: local_level_loglik(-1.0, -2.0, ys), (RNG.normal(size=(3, 7)),))
    hess = jax.hessian(lambda th: local_level_loglik(th[0], th[1], jnp.asarray(ys)))(jnp.asarray([-1.0, -2.0]))
    np.testing.assert_allclose(hess, hess.T, rtol=1e-10)
    np.testing.assert_allclose(hess[0], check_grad(lambda th: grad(
        lambda th: local_level_loglik(th[0], th[1], jnp.asarray(ys)))(th)[0], np.array([-1.0, -2.0])),
        rtol=1e-8)


# --- scipy.optimize.minimize(method="BFGS") --------------------------------------------------------
def rosenbrock(x, a):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (a - x[:-1]) ** 2)


def test_minimize_bfgs_like_scipy(x64):
    x0 = np.array([-1.2, 1.0, 0.5])
    res = minimize(rosenbrock, jnp.asarray(x0), args=(1.0,), method="BFGS")
    np.testing.assert_allclose(res.x, np.ones(3), atol=1e-5)
    assert bool(res.success)
    ref = scipy.optimize.minimize(lambda x: float(rosenbrock(jnp.asarray(x), 1.0)), x0,
                                  jac=lambda x: np.asarray(grad(rosenbrock)(jnp.asarray(x), 1.0)),
                                  method="BFGS")
    np.testing.assert_allclose(res.x, ref.x, atol=1e-5)
    jres = jit(lambda x0: minimize(rosenbrock, x0, args=(1.0,), method="BFGS").x)(jnp.asarray(x0))
    np.testing.assert_allclose(jres, res.x, rtol=1e-8)


def weighted_quadratic(x, c):
    return jnp.sum((x - c) ** 2 * jnp.arange(1.0, 4.0))


def test_minimize_under_vmap(x64):
    cs = RNG.normal(size=(2, 3))
    xs = vmap(lambda c: minimize(weighted_quadratic, jnp.zeros(3), args=(c,), method="BFGS").x)(
        jnp.asarray(cs))
    np.testing.assert_allclose(xs, cs, atol=1e-6)
    # a batched while_loop: each example's result, iterations and evaluations as its own run's
    x0s = jnp.asarray([[-1.2, 1.0, 0.5], [0.3, 0.2, 0.1], [2.0, 2.0, 2.0]])
    a_s = jnp.asarray([1.0, 0.8, 1.2])
    solve = lambda x0, a: minimize(rosenbrock, x0, args=(a,), method="BFGS")
    out = vmap(solve)(x0s, a_s)
    for k in range(3):
        one = solve(x0s[k], a_s[k])
        for field in ("x", "fun", "jac", "nit", "nfev", "status", "success"):
            np.testing.assert_allclose(getattr(out, field)[k], getattr(one, field), rtol=1e-10,
                                       atol=1e-10)     # (jac: ~1e-7, rounding apart)
    np.testing.assert_allclose(jit(vmap(solve))(x0s, a_s).x, out.x, rtol=1e-10)
    # its derivative through the iterations would be the iterates', not the optimum's: refused
    # (its batched form too), never a wrong value
    for transform in (lambda: jvp(lambda a: vmap(solve)(x0s, a).x, (a_s,), (a_s,)),
                      lambda: grad(lambda a: jnp.sum(vmap(solve)(x0s, a).x))(a_s),
                      lambda: jvp(lambda a: solve(x0s[0], a).x, (1.0,), (1.0,)),
                      lambda: vmap(grad(lambda a: jnp.sum(solve(x0s[0], a).x)))(a_s)):
        with pytest.raises(secant.SecantError, match="derivative of minimize"):
            transform()


# --- value iteration to its fixed point ----------------------------------------------------------
def value_iteration(rewards, transitions, gamma=0.9, tol=1e-12):
    """rewards (S, A), transitions (A, S, S'); iterate V <- max_a R + gamma P V."""
    def body(state):
        v, _ = state
        q = rewards + gamma * jnp.einsum("ast,t->sa", transitions, v)
        return jnp.max(q, axis=1), v
    v0 = jnp.zeros(rewards.shape[0])
    v, _ = lax.while_loop(lambda s: jnp.max(jnp.abs(s[0] - s[1])) > tol, body, (v0, v0 + 1.0))
    return v


def test_value_iteration_and_its_forward_sensitivity(x64):
    s, a = 4, 2
    rewards = RNG.normal(size=(s, a))
    transitions = RNG.uniform(size=(a, s, s))
    transitions /= transitions.sum(-1, keepdims=True)
    v = value_iteration(jnp.asarray(rewards), jnp.asarray(transitions))
    q = rewards + 0.9 * np.einsum("ast,t->sa", transitions, np.asarray(v))
    np.testing.assert_allclose(v, q.max(1), atol=1e-10)
    policy = q.argmax(1)
    p_pi = transitions[policy, np.arange(s)]
    r_pi = rewards[np.arange(s), policy]
    np.testing.assert_allclose(v, np.linalg.solve(np.eye(s) - 0.9 * p_pi, r_pi), rtol=1e-9)
    # dV/dR at the optimum: (I - gamma P_pi)^-1 on the chosen actions
    dr = RNG.normal(size=(s, a))
    _, v_dot = jvp(lambda r: value_iteration(r, jnp.asarray(transitions)), (jnp.asarray(rewards),),
                   (jnp.asarray(dr),))
    np.testing.assert_allclose(v_dot, np.linalg.solve(np.eye(s) - 0.9 * p_pi, dr[np.arange(s), policy]),
                               rtol=1e-8)
    np.testing.assert_allclose(jit(value_iteration)(jnp.asarray(rewards), jnp.asarray(transitions)), v,
                               rtol=1e-10)
    check_vmap(lambda r: value_iteration(r, jnp.asarray(transitions)), (RNG.normal(size=(3, s, a)),))


# --- quadrature ------------------------------------------------------------------------------------
NODES, WEIGHTS = np.polynomial.legendre.leggauss(12)


def gauss_legendre(f, lo, hi, *args):
    x = 0.5 * (hi - lo) * NODES + 0.5 * (hi + lo)
    return 0.5 * (hi - lo) * jnp.sum(WEIGHTS * f(x, *args))


def romberg(f, lo, hi, levels=6):
    table = []
    for i in range(levels):
        n = 2 ** i
        x = jnp.linspace(lo, hi, n + 1)
        h = (hi - lo) / n
        row = [h * (jnp.sum(f(x)) - 0.5 * (f(x[0]) + f(x[-1])))]
        for j in range(1, i + 1):
            row.append(row[j - 1] + (row[j - 1] - table[i - 1][j - 1]) / (4 ** j - 1))
        table.append(row)
    return table[-1][-1]


def test_gauss_legendre_and_romberg(x64):
    # int_0^b exp(-a x) dx = (1 - exp(-a b)) / a
    integral = lambda a, b: gauss_legendre(lambda x, a: jnp.exp(-a * x), 0.0, b, a)
    a, b = 1.7, 2.0
    np.testing.assert_allclose(integral(a, b), (1 - np.exp(-a * b)) / a, rtol=1e-13)
    g_a = check_grad(integral, a, b)
    np.testing.assert_allclose(g_a, (b * np.exp(-a * b) * a - (1 - np.exp(-a * b))) / a ** 2, rtol=1e-12)
    g_b = check_grad(integral, a, b, argnum=1)
    np.testing.assert_allclose(g_b, np.exp(-a * b), rtol=1e-12)        # the fundamental theorem
    check_vmap(lambda a: integral(a, 2.0), (np.array([0.5, 1.0, 3.0]),))
    np.testing.assert_allclose(romberg(jnp.sin, 0.0, np.pi), 2.0, rtol=1e-10)
    np.testing.assert_allclose(jit(lambda hi: romberg(jnp.cos, 0.0, hi))(1.0), np.sin(1.0), rtol=1e-10)


def test_romberg_table_differentiated(x64):
    g = check_grad(lambda hi: romberg(jnp.sin, 0.0, hi), 1.0)
    np.testing.assert_allclose(g, np.sin(1.0), rtol=1e-9)


def nested_tables(x):
    rows = [x * 1.0, x * 2.0]                   # a list of arrays
    r = rows[1]
    t = [[x, x * 2.0], [x * 3.0, [x * 4.0, x * 5.0]]]      # lists of lists, three deep
    a = t[1]
    b = a[1]
    return r[0] + rows[0][1] * 3.0 + jnp.sum(b[1] * t[0][1]) + t[1][0][0]


def pair_products(x):
    t = []
    for i in range(3):
        t.append([x[i] * k for k in range(1, 3)])
    s = 0.0
    for i in range(3):
        for j in range(2):
            s = s + t[i][j] * t[2 - i][1 - j]
    return s


def test_items_of_a_list_of_lists_differentiated(x64):
    # an item of a list read by index (a list of lists' row, a list of arrays' array): its
    # cotangent built by add_at, a list's or an array's as the item turns out
    g = check_grad(nested_tables, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(g, [2.0 + 20.0 * 1.0 + 3.0, 3.0 + 20.0 * 2.0, 20.0 * 3.0])
    # s = 4 sum_i x_i x_(2-i): ds/dx_k = 8 x_(2-k)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(grad(pair_products)(jnp.asarray(x)), 8 * x[::-1], rtol=1e-12)
    np.testing.assert_allclose(grad(pair_products)(jnp.asarray(x)), fd_grad(pair_products, (x,), 0),
                               rtol=1e-6)


# --- Clenshaw's recurrence for Chebyshev series ---------------------------------------------------
def chebval(x, coefs):
    def body(carry, c):
        b1, b2 = carry
        return (c + 2 * x * b1 - b2, b1), None
    (b1, b2), _ = lax.scan(body, (jnp.zeros_like(x), jnp.zeros_like(x)), coefs[:0:-1])
    return coefs[0] + x * b1 - b2


def test_clenshaw_chebyshev(x64):
    coefs = RNG.normal(size=6)
    x = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(chebval(jnp.asarray(x), jnp.asarray(coefs)),
                               np.polynomial.chebyshev.chebval(x, coefs), rtol=1e-12, atol=1e-13)
    g = check_grad(lambda c: jnp.sum(chebval(jnp.asarray(x), c)), coefs)
    np.testing.assert_allclose(g, np.polynomial.chebyshev.chebvander(x, 5).sum(0), rtol=1e-12)
    dx = vmap(grad(chebval), (0, None))(jnp.asarray(x), jnp.asarray(coefs))
    np.testing.assert_allclose(dx, np.polynomial.chebyshev.chebval(x, np.polynomial.chebyshev.chebder(coefs)),
                               rtol=1e-10, atol=1e-12)
    check_vmap(lambda c: chebval(jnp.asarray(x), c), (RNG.normal(size=(3, 6)),))


# --- the Thomas algorithm: a forward scan and a reversed one --------------------------------------
def thomas(lower, diag, upper, rhs):
    """Solve the tridiagonal system (lower[0] and upper[-1] unused)."""
    def forward(carry, row):
        c_prev, d_prev = carry
        a, b, c, d = row
        denom = b - a * c_prev
        c_new, d_new = c / denom, (d - a * d_prev) / denom
        return (c_new, d_new), (c_new, d_new)
    _, (cp, dp) = lax.scan(forward, (0.0, 0.0), (lower, diag, upper, rhs))

    def backward(x_next, row):
        c, d = row
        x = d - c * x_next
        return x, x
    _, xs = lax.scan(backward, 0.0, (cp, dp), reverse=True)
    return xs


def tridiag(lower, diag, upper):
    return np.diag(diag) + np.diag(lower[1:], -1) + np.diag(upper[:-1], 1)


def test_thomas_algorithm_by_two_scans(x64):
    n = 6
    lower, upper = RNG.normal(size=n), RNG.normal(size=n)
    diag = 4.0 + RNG.uniform(size=n)
    rhs = RNG.normal(size=n)
    args = tuple(jnp.asarray(v) for v in (lower, diag, upper, rhs))
    np.testing.assert_allclose(thomas(*args), np.linalg.solve(tridiag(lower, diag, upper), rhs), rtol=1e-12)
    np.testing.assert_allclose(jit(thomas)(*args), thomas(*args), rtol=1e-12)
    c = RNG.normal(size=n)
    loss = lambda l, d, u, r: jnp.dot(c, thomas(l, d, u, r))
    g_r = check_grad(loss, lower, diag, upper, rhs, argnum=3)
    np.testing.assert_allclose(g_r, np.linalg.solve(tridiag(lower, diag, upper).T, c), rtol=1e-11)
    check_grad(loss, lower, diag, upper, rhs, argnum=1)
    check_vmap(lambda r: thomas(*args[:3], r), (RNG.normal(size=(3, n)),))


# --- a natural cubic spline ---------------------------------------------------------------------------
def natural_cubic_spline(xk, yk, x):
    h = jnp.diff(xk)
    n = xk.shape[0]
    rows = jnp.zeros((n, n)).at[0, 0].set(1.0).at[-1, -1].set(1.0)
    i = jnp.arange(1, n - 1)
    rows = rows.at[i, i - 1].set(h[:-1]).at[i, i].set(2 * (h[:-1] + h[1:])).at[i, i + 1].set(h[1:])
    slopes = jnp.diff(yk) / h
    rhs = jnp.zeros(n).at[1:-1].set(6 * (slopes[1:] - slopes[:-1]))
    m = jnp.linalg.solve(rows, rhs)                # second derivatives at the knots
    j = jnp.clip(jnp.searchsorted(xk, x) - 1, 0, n - 2)
    t0, t1 = xk[j + 1] - x, x - xk[j]
    hj = h[j]
    return (m[j] * t0 ** 3 + m[j + 1] * t1 ** 3) / (6 * hj) + \
        (yk[j] / hj - m[j] * hj / 6) * t0 + (yk[j + 1] / hj - m[j + 1] * hj / 6) * t1


def test_natural_cubic_spline_like_scipy(x64):
    xk = np.array([0.0, 0.5, 1.2, 2.0, 3.1])
    yk = np.sin(xk)
    x = np.array([0.1, 0.7, 1.5, 2.9])
    ref = scipy.interpolate.CubicSpline(xk, yk, bc_type="natural")
    np.testing.assert_allclose(natural_cubic_spline(jnp.asarray(xk), jnp.asarray(yk), jnp.asarray(x)),
                               ref(x), rtol=1e-11)
    np.testing.assert_allclose(jit(natural_cubic_spline)(jnp.asarray(xk), jnp.asarray(yk), jnp.asarray(x)),
                               ref(x), rtol=1e-11)
    dx = vmap(grad(natural_cubic_spline, argnums=2), (None, None, 0))(jnp.asarray(xk), jnp.asarray(yk),
                                                                        jnp.asarray(x))
    np.testing.assert_allclose(dx, ref(x, 1), rtol=1e-10)
    # the spline is linear in the values: its gradient is the cardinal spline's value
    g = check_grad(lambda y: natural_cubic_spline(jnp.asarray(xk), y, jnp.asarray(x))[1], yk)
    card = scipy.interpolate.CubicSpline(xk, np.eye(5), bc_type="natural")(x[1])
    np.testing.assert_allclose(g, card, rtol=1e-10, atol=1e-13)
    check_grad(lambda xk: jnp.sum(natural_cubic_spline(xk, jnp.asarray(yk), jnp.asarray(x))), xk)


# --- golden-section search: each example stops on its own -------------------------------------------
INV_PHI = (np.sqrt(5) - 1) / 2


def golden_section(f, lo, hi, tol=1e-10):
    def body(state):
        a, b, n = state
        c, d = b - INV_PHI * (b - a), a + INV_PHI * (b - a)
        left = f(c) < f(d)
        return jnp.where(left, a, c), jnp.where(left, d, b), n + 1
    a, b, n = lax.while_loop(lambda s: s[1] - s[0] > tol, body, (lo, hi, 0))
    return 0.5 * (a + b), n


def test_golden_section_search_under_vmap(x64):
    f = lambda c: golden_section(lambda x: (x - c) ** 2 + 0.1 * x ** 4, -3.0, 3.0)
    centres = np.array([-1.0, 0.3, 2.0])
    xs, ns = vmap(f)(jnp.asarray(centres))
    for i, c in enumerate(centres):
        xi, ni = f(c)
        # (near the minimum f(c) < f(d) compares values equal to rounding: the last steps
        # may go either way, within sqrt(eps))
        np.testing.assert_allclose(xs[i], xi, rtol=1e-7)
        assert int(ns[i]) == int(ni)
        np.testing.assert_allclose(2 * (xi - c) + 0.4 * xi ** 3, 0.0, atol=1e-6)
    np.testing.assert_allclose(jit(vmap(f))(jnp.asarray(centres))[0], xs, rtol=1e-7)
    # the minimiser moves with c: dx*/dc = 2 / (2 + 1.2 x*^2), forward through the while_loop
    # (the bracket moves in discrete steps, so this only holds for the implicit-function form)
    x_star = float(xs[1])
    implicit = lambda c: x_star - (2 * (x_star - c) + 0.4 * x_star ** 3) / (2 + 1.2 * x_star ** 2)
    np.testing.assert_allclose(grad(implicit)(0.3), 2 / (2 + 1.2 * x_star ** 2), rtol=1e-12)

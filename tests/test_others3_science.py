"""Issue 15, code written by others (third round): scientific programs as users write them with
JAX: Lagrangian mechanics of a double pendulum (hessian and jacfwd of the Lagrangian), Hamiltonian
Monte Carlo, Sinkhorn iterations, an HMM's forward algorithm and a Kalman filter as scans,
Black-Scholes greeks, a 1-D finite-element assembly with index updates, a Lyapunov exponent,
Levenberg-Marquardt, soft dynamic time warping, and Autodidax-style compositions of jvp, vmap,
jit and grad; checked against float64 finite differences, closed forms, a Python loop and
eager."""
import numpy as np

import secant.numpy as jnp
from secant import (grad, hessian, jacfwd, jacrev, jit, jvp, lax, linearize, random, vjp,
                    vmap)
from secant.scipy.special import logsumexp
from secant.scipy.stats import norm

from others15_check import assert_trees_close, check_grad, check_vmap, fd_jvp, to_snp

RNG = np.random.default_rng(330330)


# --- Lagrangian mechanics: the double pendulum ----------------------------------------------
def lagrangian(q, q_dot, m1=1.0, m2=1.0, l1=1.0, l2=1.0, g=9.8):
    t1, t2 = q
    w1, w2 = q_dot
    T1 = 0.5 * m1 * (l1 * w1) ** 2
    T2 = 0.5 * m2 * ((l1 * w1) ** 2 + (l2 * w2) ** 2 + 2 * l1 * l2 * w1 * w2 * jnp.cos(t1 - t2))
    V = -(m1 + m2) * g * l1 * jnp.cos(t1) - m2 * g * l2 * jnp.cos(t2)
    return T1 + T2 - V


def equation_of_motion(state, t=0.0):
    q, q_t = jnp.split(state, 2)
    q_tt = jnp.linalg.pinv(hessian(lagrangian, 1)(q, q_t)) @ (
        grad(lagrangian, 0)(q, q_t) - jacfwd(grad(lagrangian, 1), 0)(q, q_t) @ q_t)
    return jnp.concatenate([q_t, q_tt])


def np_double_pendulum(state, g=9.8):
    """The analytic equations of motion (m = l = 1)."""
    t1, t2, w1, w2 = state
    d = t1 - t2
    a1 = np.cos(d) / 2
    a2 = np.cos(d)
    f1 = -(w2 ** 2) * np.sin(d) / 2 - g * np.sin(t1)
    f2 = w1 ** 2 * np.sin(d) - g * np.sin(t2)
    g1 = (f1 - a1 * f2) / (1 - a1 * a2)
    g2 = (-a2 * f1 + f2) / (1 - a1 * a2)
    return np.array([w1, w2, g1, g2])


def rollout(state, steps=10, dt=0.01):
    for _ in range(steps):
        k1 = equation_of_motion(state)
        k2 = equation_of_motion(state + dt / 2 * k1)
        state = state + dt * k2
    return state


def test_lagrangian_double_pendulum(x64):
    s = np.array([0.6, -0.4, 0.3, 0.8])
    np.testing.assert_allclose(equation_of_motion(to_snp(s)), np_double_pendulum(s), rtol=1e-8)
    np.testing.assert_allclose(jit(equation_of_motion)(to_snp(s)), np_double_pendulum(s),
                               rtol=1e-8)
    check_vmap(equation_of_motion, (s + 0.1 * RNG.normal(size=(3, 4)),))
    J = jacfwd(equation_of_motion)(to_snp(s))
    v = RNG.normal(size=4)
    np.testing.assert_allclose(np.asarray(J) @ v, fd_jvp(np_double_pendulum, (s,), (v,)),
                               rtol=1e-5)
    check_grad(lambda s: jnp.sum(rollout(s, steps=3) ** 2), s, rtol=1e-4)


# --- Hamiltonian Monte Carlo with leapfrog steps ----------------------------------------------
def log_prob(x):
    return -0.5 * jnp.sum(x ** 2 / jnp.array([1.0, 4.0])) - 0.1 * jnp.sum(x ** 4)


def leapfrog(x, p, step, n):
    p = p + 0.5 * step * grad(log_prob)(x)
    def body(i, xp):
        x, p = xp
        x = x + step * p
        p = p + step * grad(log_prob)(x)
        return x, p
    x, p = lax.fori_loop(0, n - 1, body, (x, p))
    x = x + step * p
    p = p + 0.5 * step * grad(log_prob)(x)
    return x, p


def hmc_step(key, x, step=0.2, n=8):
    k1, k2 = random.split(key)
    p0 = random.normal(k1, x.shape)
    x1, p1 = leapfrog(x, p0, step, n)
    log_accept = log_prob(x1) - 0.5 * jnp.sum(p1 ** 2) - (log_prob(x) - 0.5 * jnp.sum(p0 ** 2))
    accept = jnp.log(random.uniform(k2)) < log_accept
    return jnp.where(accept, x1, x), log_accept


def test_hamiltonian_monte_carlo(x64):
    x = to_snp(np.array([0.5, -1.0]))
    # leapfrog nearly conserves the Hamiltonian
    p = to_snp(np.array([0.3, 0.2]))
    x1, p1 = leapfrog(x, p, 0.05, 20)
    H = lambda x, p: -log_prob(x) + 0.5 * jnp.sum(p ** 2)
    np.testing.assert_allclose(H(x1, p1), H(x, p), rtol=1e-3)
    # jit equals eager, vmap over chains equals a loop over chains
    key = random.PRNGKey(7)
    assert_trees_close(jit(hmc_step)(key, x), hmc_step(key, x), rtol=1e-10)
    keys = random.split(key, 3)
    xs = RNG.normal(size=(3, 2))
    got = vmap(hmc_step)(keys, to_snp(xs))
    for i in range(3):
        assert_trees_close((got[0][i], got[1][i]), hmc_step(keys[i], to_snp(xs[i])), rtol=1e-10)
    # the end point of a trajectory differentiated in its start
    check_grad(lambda x: jnp.sum(leapfrog(x, p, 0.05, 5)[0] ** 2), np.array([0.5, -1.0]))


# --- Sinkhorn iterations (entropic optimal transport) ------------------------------------------
def sinkhorn(C, a, b, eps=0.5, iters=60):
    f = jnp.zeros_like(a)
    g = jnp.zeros_like(b)
    for _ in range(iters):
        f = -eps * logsumexp((g[None, :] - C) / eps, b=b[None, :], axis=1)
        g = -eps * logsumexp((f[:, None] - C) / eps, b=a[:, None], axis=0)
    P = a[:, None] * b[None, :] * jnp.exp((f[:, None] + g[None, :] - C) / eps)
    return jnp.sum(P * C), P


def test_sinkhorn(x64):
    x, y = RNG.normal(size=(4, 2)), RNG.normal(size=(5, 2)) + 0.5
    C = ((x[:, None] - y[None]) ** 2).sum(-1)
    a, b = np.full(4, 0.25), np.full(5, 0.2)
    cost, P = sinkhorn(*to_snp((C, a, b)))
    np.testing.assert_allclose(np.asarray(P).sum(1), a, atol=1e-5)
    np.testing.assert_allclose(np.asarray(P).sum(0), b, atol=1e-8)
    check_grad(lambda C: sinkhorn(C, to_snp(a), to_snp(b), iters=10)[0], C, rtol=1e-5)
    cost_of_points = lambda x: sinkhorn(((x[:, None] - y[None]) ** 2).sum(-1), to_snp(a),
                                        to_snp(b), iters=10)[0]
    check_grad(cost_of_points, x, rtol=1e-5)
    np.testing.assert_allclose(jit(sinkhorn)(*to_snp((C, a, b)))[0], cost, rtol=1e-10)


# --- an HMM's forward algorithm as a scan ------------------------------------------------------
def hmm_log_likelihood(log_trans, log_emit, log_init, obs):
    def step(log_alpha, o):
        log_alpha = logsumexp(log_alpha[:, None] + log_trans, axis=0) + log_emit[:, o]
        return log_alpha, None
    log_alpha, _ = lax.scan(step, log_init + log_emit[:, obs[0]], obs[1:])
    return logsumexp(log_alpha)


def np_hmm(trans, emit, init, obs):
    alpha = init * emit[:, obs[0]]
    for o in obs[1:]:
        alpha = (alpha @ trans) * emit[:, o]
    return np.log(alpha.sum())


def test_hmm_forward_algorithm(x64):
    trans = RNG.dirichlet(np.ones(3), size=3)
    emit = RNG.dirichlet(np.ones(4), size=3)
    init = RNG.dirichlet(np.ones(3))
    obs = np.array([0, 3, 1, 1, 2, 0])
    args = (np.log(trans), np.log(emit), np.log(init))
    np.testing.assert_allclose(hmm_log_likelihood(*to_snp(args), obs),
                               np_hmm(trans, emit, init, obs), rtol=1e-10)
    check_grad(hmm_log_likelihood, *args, obs)
    check_grad(lambda le: hmm_log_likelihood(to_snp(args[0]), le, to_snp(args[2]), obs), args[1])
    # the expected number of visits: the gradient in log_init is the posterior of the first state
    post = grad(hmm_log_likelihood, argnums=2)(*to_snp(args), obs)
    np.testing.assert_allclose(np.sum(post), 1.0, rtol=1e-10)
    np.testing.assert_allclose(jit(hmm_log_likelihood)(*to_snp(args), obs),
                               np_hmm(trans, emit, init, obs), rtol=1e-10)


def test_hmm_forward_algorithm_vmap_over_sequences(x64):
    trans = RNG.dirichlet(np.ones(3), size=3)
    emit = RNG.dirichlet(np.ones(4), size=3)
    args = (np.log(trans), np.log(emit), np.log(np.full(3, 1 / 3)))
    seqs = np.array([[0, 1, 2, 3, 0, 1], [3, 3, 2, 1, 0, 0]])
    check_vmap(lambda o: hmm_log_likelihood(*to_snp(args), o), (seqs,))


# --- a Kalman filter's log-likelihood as a scan ------------------------------------------------
def kalman_log_likelihood(params, ys):
    a, q, r = params["a"], jnp.exp(params["log_q"]), jnp.exp(params["log_r"])
    def step(carry, y):
        m, P = carry
        m_pred, P_pred = a * m, a * a * P + q
        S = P_pred + r
        K = P_pred / S
        ll = norm.logpdf(y, m_pred, jnp.sqrt(S))
        return (m_pred + K * (y - m_pred), (1 - K) * P_pred), ll
    _, lls = lax.scan(step, (0.0, 1.0), ys)
    return jnp.sum(lls)


def test_kalman_filter(x64):
    ys = np.cumsum(RNG.normal(size=12)) * 0.3
    params = {"a": 0.9, "log_q": -1.0, "log_r": -0.5}
    # against the joint Gaussian density of ys
    n, a, q, r = 12, 0.9, np.exp(-1.0), np.exp(-0.5)
    var_x = np.zeros(n)
    cov = np.zeros((n, n))
    v = 1.0
    for t in range(n):
        v = a * a * v + q
        var_x[t] = v
    for s in range(n):
        for t in range(n):
            lo, hi = min(s, t), max(s, t)
            cov[s, t] = var_x[lo] * a ** (hi - lo)
    cov += r * np.eye(n)
    want = -0.5 * (ys @ np.linalg.solve(cov, ys) + np.linalg.slogdet(cov)[1] + n * np.log(2 * np.pi))
    np.testing.assert_allclose(kalman_log_likelihood(to_snp(params), to_snp(ys)), want, rtol=1e-10)
    check_grad(kalman_log_likelihood, params, ys)
    check_grad(lambda y: kalman_log_likelihood(to_snp(params), y), ys)
    check_vmap(lambda a: kalman_log_likelihood({"a": a, "log_q": -1.0, "log_r": -0.5},
                                               to_snp(ys)), (np.array([0.5, 0.9, 1.1]),))


# --- Black-Scholes greeks by grad and hessian ------------------------------------------------
def black_scholes_call(S, K, T, r, sigma):
    d1 = (jnp.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * jnp.sqrt(T))
    d2 = d1 - sigma * jnp.sqrt(T)
    return S * norm.cdf(d1) - K * jnp.exp(-r * T) * norm.cdf(d2)


def test_black_scholes_greeks(x64):
    S, K, T, r, sigma = 100.0, 95.0, 0.5, 0.02, 0.25
    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    pdf = np.exp(-0.5 * d1 ** 2) / np.sqrt(2 * np.pi)
    from math import erf
    Phi = lambda z: 0.5 * (1 + erf(z / np.sqrt(2)))
    np.testing.assert_allclose(grad(black_scholes_call)(S, K, T, r, sigma), Phi(d1), rtol=1e-10)
    np.testing.assert_allclose(grad(grad(black_scholes_call))(S, K, T, r, sigma),
                               pdf / (S * sigma * np.sqrt(T)), rtol=1e-8)
    np.testing.assert_allclose(grad(black_scholes_call, argnums=4)(S, K, T, r, sigma),
                               S * pdf * np.sqrt(T), rtol=1e-10)
    H = hessian(black_scholes_call, argnums=(0, 4))(S, K, T, r, sigma)
    np.testing.assert_allclose(H[0][1], H[1][0], rtol=1e-10)          # vanna, both ways
    np.testing.assert_allclose(H[0][1], -pdf * (d1 - sigma * np.sqrt(T)) / sigma, rtol=1e-8)
    strikes = np.array([80.0, 95.0, 110.0])
    check_vmap(grad(black_scholes_call), (S, strikes, T, r, sigma),
               in_axes=(None, 0, None, None, None))
    # pathwise Monte Carlo delta with vmap over paths
    z = random.normal(random.PRNGKey(0), (4000,))
    mc = lambda S: jnp.mean(jnp.exp(-r * T) * jnp.maximum(
        S * jnp.exp((r - 0.5 * sigma ** 2) * T + sigma * jnp.sqrt(T) * z) - K, 0.0))
    assert abs(float(grad(mc)(S)) - Phi(d1)) < 0.05


# --- a 1-D finite-element assembly with index updates ---------------------------------------
def fem_energy(u_inner, k, f):
    n = u_inner.shape[0] + 2
    u = jnp.zeros(n).at[1:-1].set(u_inner)
    K = jnp.zeros((n, n))
    for e in range(n - 1):
        ke = k[e] * jnp.array([[1.0, -1.0], [-1.0, 1.0]])
        idx = jnp.array([e, e + 1])
        K = K.at[idx[:, None], idx[None, :]].add(ke)
    return 0.5 * u @ K @ u - f @ u


def test_fem_assembly(x64):
    n_inner = 5
    k = RNG.uniform(1.0, 2.0, size=n_inner + 1)
    f = np.r_[0.0, RNG.normal(size=n_inner), 0.0]
    # the stiffness matrix by NumPy
    K = np.zeros((7, 7))
    for e in range(6):
        K[e:e + 2, e:e + 2] += k[e] * np.array([[1, -1], [-1, 1]])
    u = RNG.normal(size=n_inner)
    g = check_grad(fem_energy, u, k, f)
    np.testing.assert_allclose(g, K[1:-1, 1:-1] @ u - f[1:-1], rtol=1e-10)
    # the equilibrium: grad = 0 at u* = K^-1 f; its sensitivity in the stiffnesses by FD
    np.testing.assert_allclose(hessian(fem_energy)(*to_snp((u, k, f))), K[1:-1, 1:-1], rtol=1e-10)
    check_grad(lambda k: fem_energy(to_snp(u), k, to_snp(f)), k)
    check_vmap(fem_energy, (RNG.normal(size=(3, n_inner)), k, f), in_axes=(0, None, None))


# --- the largest Lyapunov exponent of the logistic map, by jvp along the orbit -------------
def lyapunov(r, x0=0.3, n=200):
    x = x0
    total = 0.0
    for _ in range(n):
        x, dx = jvp(lambda x: r * x * (1 - x), (x,), (1.0,))
        total = total + jnp.log(jnp.abs(dx))
    return total / n


def test_lyapunov_exponent(x64):
    # the derivative at step k is r (1 - 2 x_{k-1})
    x, want = 0.3, 0.0
    for _ in range(200):
        want += np.log(abs(3.7 * (1 - 2 * x)))
        x = 3.7 * x * (1 - x)
    np.testing.assert_allclose(lyapunov(3.7), want / 200, rtol=1e-8)
    np.testing.assert_allclose(jit(lyapunov)(3.7), want / 200, rtol=1e-8)
    check_vmap(lyapunov, (np.array([2.5, 3.2, 3.9]),))
    assert lyapunov(2.5) < 0 < lyapunov(3.9)
    check_grad(lambda r: lyapunov(r, n=8), 3.2, rtol=1e-5)


# --- Levenberg-Marquardt with jacfwd of the residuals ----------------------------------------
T_DATA = np.linspace(0, 3, 15)
Y_DATA = 2.0 * np.exp(-1.3 * T_DATA) + 0.5 + 0.01 * RNG.normal(size=15)


def residuals(theta, t, y):
    a, k, c = theta
    return a * jnp.exp(-k * t) + c - y


def levenberg_marquardt(theta, t, y, iters=20, lam=1e-2):
    for _ in range(iters):
        r = residuals(theta, t, y)
        J = jacfwd(residuals)(theta, t, y)
        A = J.T @ J + lam * jnp.diag(jnp.diag(J.T @ J))
        theta = theta - jnp.linalg.solve(A, J.T @ r)
    return theta


def test_levenberg_marquardt(x64):
    theta = levenberg_marquardt(to_snp(np.array([1.0, 1.0, 0.0])), to_snp(T_DATA), to_snp(Y_DATA))
    np.testing.assert_allclose(theta, [2.0, 1.3, 0.5], atol=0.05)
    np.testing.assert_allclose(jacrev(residuals)(theta, to_snp(T_DATA), to_snp(Y_DATA)),
                               jacfwd(residuals)(theta, to_snp(T_DATA), to_snp(Y_DATA)),
                               rtol=1e-12)
    g = grad(lambda th: 0.5 * jnp.sum(residuals(th, to_snp(T_DATA), to_snp(Y_DATA)) ** 2))(theta)
    assert np.max(np.abs(g)) < 1e-6
    # the fitted parameters as a function of the data (a few steps), by jvp against differences
    fit = lambda y: levenberg_marquardt(to_snp(np.array([1.8, 1.2, 0.4])), to_snp(T_DATA), y,
                                        iters=3)
    v = RNG.normal(size=15)
    np.testing.assert_allclose(jvp(fit, (to_snp(Y_DATA),), (to_snp(v),))[1],
                               fd_jvp(fit, (Y_DATA,), (v,)), rtol=1e-5)


# --- soft dynamic time warping ------------------------------------------------------------------
def softmin(a, b, c, gamma):
    return -gamma * logsumexp(jnp.array([-a / gamma, -b / gamma, -c / gamma]))


def soft_dtw(x, y, gamma=0.1):
    D = (x[:, None] - y[None, :]) ** 2
    n, m = D.shape
    R = jnp.full((n + 1, m + 1), 1e10).at[0, 0].set(0.0)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            R = R.at[i, j].set(D[i - 1, j - 1] + softmin(R[i - 1, j], R[i, j - 1],
                                                         R[i - 1, j - 1], gamma))
    return R[n, m]


def test_soft_dtw(x64):
    x, y = np.sin(np.linspace(0, 3, 5)), np.sin(np.linspace(0.2, 3.1, 4))
    # as gamma -> 0 it is the DTW distance
    D = (x[:, None] - y[None]) ** 2
    R = np.full((6, 5), np.inf)
    R[0, 0] = 0
    for i in range(1, 6):
        for j in range(1, 5):
            R[i, j] = D[i - 1, j - 1] + min(R[i - 1, j], R[i, j - 1], R[i - 1, j - 1])
    np.testing.assert_allclose(soft_dtw(to_snp(x), to_snp(y), 1e-4), R[5, 4], atol=1e-3)
    check_grad(soft_dtw, x, y)
    check_grad(lambda y: soft_dtw(to_snp(x), y), y)
    check_vmap(soft_dtw, (RNG.normal(size=(2, 5)), y), in_axes=(0, None))


# --- Autodidax-style compositions ---------------------------------------------------------------
def f_autodidax(x):
    y = jnp.sin(x) * 2.0
    z = -y + x
    return z


def deriv(f):
    return lambda x: jvp(f, (x,), (1.0,))[1]


def jacfwd_by_vmap(f, x):
    pushfwd = lambda v: jvp(f, (x,), (v,))[1]
    return vmap(pushfwd, in_axes=1, out_axes=1)(jnp.eye(x.shape[0]))


def test_autodidax_compositions(x64):
    x = 3.0
    # the derivatives of 2 sin x: cos, -sin, -cos, sin
    np.testing.assert_allclose(deriv(f_autodidax)(x), 1 - 2 * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(deriv(deriv(f_autodidax))(x), 2 * np.sin(x), rtol=1e-12)
    np.testing.assert_allclose(deriv(deriv(deriv(f_autodidax)))(x), 2 * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(grad(deriv(deriv(f_autodidax)))(x), 2 * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(deriv(grad(grad(f_autodidax)))(x), 2 * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(jit(deriv(deriv(f_autodidax)))(x), 2 * np.sin(x), rtol=1e-12)
    xs = np.array([0.5, 1.0, 3.0])
    np.testing.assert_allclose(vmap(deriv(f_autodidax))(xs), 1 - 2 * np.cos(xs), rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(grad(f_autodidax)))(xs), 1 - 2 * np.cos(xs), rtol=1e-12)
    np.testing.assert_allclose(vmap(jit(grad(grad(f_autodidax))))(xs), 2 * np.sin(xs),
                               rtol=1e-12)
    # jacfwd written as vmap of a pushforward
    g = lambda x: jnp.sin(x) * jnp.cumsum(x)
    v = to_snp(np.array([0.3, -0.5, 1.1]))
    np.testing.assert_allclose(jacfwd_by_vmap(g, v), jacfwd(g)(v), rtol=1e-12)
    np.testing.assert_allclose(jit(jacfwd_by_vmap, static_argnums=0)(g, v), jacfwd(g)(v),
                               rtol=1e-12)
    # linearize, and vjp as its transpose
    y, f_jvp = linearize(g, v)
    t = to_snp(np.array([1.0, 0.0, 2.0]))
    np.testing.assert_allclose(f_jvp(t), jvp(g, (v,), (t,))[1], rtol=1e-12)
    _, f_vjp = vjp(g, v)
    w = to_snp(np.array([0.5, 1.0, -1.0]))
    np.testing.assert_allclose(np.dot(f_vjp(w)[0], t), np.dot(w, f_jvp(t)), rtol=1e-12)
    np.testing.assert_allclose(vmap(f_jvp)(jnp.eye(3)), np.asarray(jacfwd(g)(v)).T, rtol=1e-12)


# --- regressions found by these programs ----------------------------------------------------
def test_jacobian_in_place_of_a_function_with_defaults_under_vmap(x64):
    """hessian(L, 1)(q, qd) and jacfwd(grad(L, 1), 0)(q, qd) of an L with defaulted parameters
    inside a vmapped function (refused: 'missing m'; 'written in place ... literals')."""
    def L(q, qd, m=1.0):
        return jnp.sum(m * qd ** 2 * jnp.cos(q))

    def eom(s):
        q, qd = jnp.split(s, 2)
        return jacfwd(grad(L, 1), 0)(q, qd) @ qd + hessian(L, 1)(q, qd, 2.0) @ q
    check_vmap(eom, (RNG.normal(size=(3, 4)),))
    check_grad(lambda s: jnp.sum(eom(s) ** 2), RNG.normal(size=4))


def test_vmap_of_a_linearized_function(x64):
    """vmap(f_jvp) of linearize's f_jvp batched its generated jvp as if called with the
    tangents alone (TypeError: missing x_dot)."""
    g = lambda x: jnp.sin(x) * jnp.cumsum(x)
    v = to_snp(np.array([0.3, -0.5, 1.1]))
    _, f_jvp = linearize(g, v)
    np.testing.assert_allclose(vmap(f_jvp)(jnp.eye(3)), np.asarray(jacfwd(g)(v)).T, rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(f_jvp))(jnp.eye(3)), np.asarray(jacfwd(g)(v)).T,
                               rtol=1e-12)

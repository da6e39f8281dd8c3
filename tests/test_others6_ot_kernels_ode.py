"""Issue 15, code written by others (sixth round): optimal transport, kernel methods and neural
ODEs as users write them with JAX: log-domain Sinkhorn with logsumexp in a while_loop until the
marginals converge (forward-mode through the loop, an unrolled fori_loop version under reverse
mode, the envelope-theorem gradient in the cost), a sliced Wasserstein distance by sorting
projections, kernel ridge regression (its leave-one-out error differentiated in the bandwidth),
an SVM dual by projected gradient ascent, maximum mean discrepancy, a neural ODE by
experimental.ode.odeint (adjoint gradients in the parameters and the initial state) and by a
fixed-step RK4 in a scan, and a continuous normalising flow whose log-density change is the
trace of jacfwd; each under the transforms its author would use, checked against float64 finite
differences, closed forms, a Python loop and eager."""
import numpy as np

import secant.numpy as jnp
from secant import grad, jacfwd, jit, jvp, lax
from secant.experimental.ode import odeint
from secant.scipy.special import logsumexp

from others15_check import assert_trees_close, check_grad, check_vmap, fd_jvp, to_snp

RNG = np.random.default_rng(6363)


# --- Sinkhorn ---------------------------------------------------------------------------------------
def cost_matrix(x, y):
    return jnp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)


def sinkhorn_while(cost, a, b, eps=0.5, tol=1e-10, max_iter=500):
    log_a, log_b = jnp.log(a), jnp.log(b)

    def body(state):
        f, g, _, it = state
        f_new = -eps * logsumexp((g[None, :] - cost) / eps + log_b[None, :], axis=1)
        g_new = -eps * logsumexp((f_new[:, None] - cost) / eps + log_a[:, None], axis=0)
        return f_new, g_new, jnp.max(jnp.abs(f_new - f)), it + 1

    def cond(state):
        return (state[2] > tol) & (state[3] < max_iter)

    f0, g0 = jnp.zeros_like(a), jnp.zeros_like(b)
    f, g, _, _ = lax.while_loop(cond, body, (f0, g0, jnp.asarray(jnp.inf), 0))
    return f, g


def sinkhorn_cost(cost, a, b, eps=0.5):
    f, g = sinkhorn_while(cost, a, b, eps)
    return jnp.dot(f, a) + jnp.dot(g, b)


def sinkhorn_unrolled(cost, a, b, eps=0.5, n_iter=200):
    log_a, log_b = jnp.log(a), jnp.log(b)

    def body(_, fg):
        f, g = fg
        f = -eps * logsumexp((g[None, :] - cost) / eps + log_b[None, :], axis=1)
        g = -eps * logsumexp((f[:, None] - cost) / eps + log_a[:, None], axis=0)
        return f, g
    f, g = lax.fori_loop(0, n_iter, body, (jnp.zeros_like(a), jnp.zeros_like(b)))
    return jnp.dot(f, a) + jnp.dot(g, b)


def plan(cost, a, b, eps=0.5):
    f, g = sinkhorn_while(cost, a, b, eps)
    return jnp.exp((f[:, None] + g[None, :] - cost) / eps) * a[:, None] * b[None, :]


def test_sinkhorn_marginals_and_jit(x64):
    x, y = RNG.normal(size=(4, 2)), RNG.normal(size=(5, 2)) + 1
    a, b = np.full(4, 0.25), np.full(5, 0.2)
    c = cost_matrix(jnp.asarray(x), jnp.asarray(y))
    p = plan(c, jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_allclose(np.asarray(p).sum(1), a, atol=1e-8)
    np.testing.assert_allclose(np.asarray(p).sum(0), b, atol=1e-8)
    assert_trees_close(jit(plan)(c, jnp.asarray(a), jnp.asarray(b)), p)


def test_sinkhorn_forward_mode_through_while_and_reverse_unrolled(x64):
    x, y = RNG.normal(size=(4, 2)), RNG.normal(size=(3, 2))
    a, b = np.full(4, 0.25), np.array([0.5, 0.3, 0.2])
    ot = lambda x: sinkhorn_cost(cost_matrix(x, jnp.asarray(y)), jnp.asarray(a), jnp.asarray(b))
    # jvp through the while_loop (forward mode, as JAX allows) against finite differences
    t = RNG.normal(size=x.shape)
    _, tan = jvp(ot, (jnp.asarray(x),), (jnp.asarray(t),))
    np.testing.assert_allclose(tan, fd_jvp(ot, (x,), (t,)), rtol=1e-5)
    # reverse mode through the unrolled loop; the envelope theorem: the gradient of the
    # regularised OT cost in C is the plan
    c = cost_matrix(jnp.asarray(x), jnp.asarray(y))
    g = grad(sinkhorn_unrolled)(c, jnp.asarray(a), jnp.asarray(b))
    assert_trees_close(g, plan(c, jnp.asarray(a), jnp.asarray(b)), rtol=1e-6, atol=1e-9)
    # jacfwd (forward mode) of the while version in the points gives the same gradient
    gx_fwd = jacfwd(ot)(jnp.asarray(x))
    gx_rev = grad(lambda x: sinkhorn_unrolled(cost_matrix(x, jnp.asarray(y)), jnp.asarray(a),
                                              jnp.asarray(b)))(jnp.asarray(x))
    assert_trees_close(gx_fwd, gx_rev, rtol=1e-6, atol=1e-9)


def test_sinkhorn_vmap_over_problems(x64):
    xs = RNG.normal(size=(3, 4, 2))
    y, a, b = RNG.normal(size=(5, 2)), np.full(4, 0.25), np.full(5, 0.2)
    f = lambda x: sinkhorn_cost(cost_matrix(x, jnp.asarray(y)), jnp.asarray(a), jnp.asarray(b))
    check_vmap(f, (xs,))


def sliced_wasserstein(x, y, directions):
    px = jnp.sort(x @ directions.T, axis=0)
    py = jnp.sort(y @ directions.T, axis=0)
    return jnp.mean((px - py) ** 2)


def test_sliced_wasserstein_by_sort(x64):
    x, y = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 3)) * 2
    d = RNG.normal(size=(4, 3))
    d = d / np.linalg.norm(d, axis=1, keepdims=True)
    want = np.mean([np.mean((np.sort(x @ v) - np.sort(y @ v)) ** 2) for v in d])
    np.testing.assert_allclose(sliced_wasserstein(jnp.asarray(x), jnp.asarray(y), jnp.asarray(d)), want,
                               rtol=1e-12)
    check_grad(sliced_wasserstein, x, y, d)
    check_grad(sliced_wasserstein, x, y, d, argnum=2)


# --- kernel methods ----------------------------------------------------------------------------------
def rbf(x1, x2, log_ell):
    return jnp.exp(-0.5 * cost_matrix(x1, x2) / jnp.exp(2 * log_ell))


def krr_loo_error(log_ell, x, y, lam=0.1):
    """Kernel ridge: alpha = (K + lam I)^-1 y; the leave-one-out residuals in closed form,
    r_i = alpha_i / [(K + lam I)^-1]_ii."""
    k = rbf(x, x, log_ell)
    inv = jnp.linalg.inv(k + lam * jnp.eye(x.shape[0]))
    alpha = inv @ y
    return jnp.mean((alpha / jnp.diag(inv)) ** 2)


def test_kernel_ridge_leave_one_out(x64):
    x = RNG.uniform(-2, 2, size=(8, 1))
    y = np.sin(2 * x[:, 0]) + 0.1 * RNG.normal(size=8)
    log_ell = np.log(0.7)
    # the closed form against refitting without each point
    errs = []
    for i in range(8):
        keep = np.arange(8) != i
        k = np.asarray(rbf(jnp.asarray(x[keep]), jnp.asarray(x[keep]), jnp.asarray(log_ell)))
        alpha = np.linalg.solve(k + 0.1 * np.eye(7), y[keep])
        pred = np.asarray(rbf(jnp.asarray(x[i:i + 1]), jnp.asarray(x[keep]), jnp.asarray(log_ell))) @ alpha
        errs.append((y[i] - pred[0]) ** 2)
    np.testing.assert_allclose(krr_loo_error(jnp.asarray(log_ell), x, y), np.mean(errs), rtol=1e-8)
    check_grad(krr_loo_error, log_ell, x, y)
    check_vmap(krr_loo_error, (np.log([0.3, 0.7, 1.5]), x, y), in_axes=(0, None, None))


def svm_dual(x, y, c=1.0, lr=0.05, steps=200):
    """Projected gradient ascent on the dual: max sum(a) - 0.5 a^T Q a, 0 <= a <= C (no bias)."""
    q = (y[:, None] * y[None, :]) * (x @ x.T)

    def step(_, a):
        return jnp.clip(a + lr * (1 - q @ a), 0.0, c)
    a = lax.fori_loop(0, steps, step, jnp.zeros(x.shape[0]))
    w = (a * y) @ x
    return w, a


def test_svm_dual_kkt_and_differentiated_margin(x64):
    x = np.concatenate([RNG.normal(size=(5, 2)) + 1.5, RNG.normal(size=(5, 2)) - 1.5])
    y = np.array([1.0] * 5 + [-1.0] * 5)
    w, a = svm_dual(jnp.asarray(x), jnp.asarray(y), steps=2000)
    a = np.asarray(a)
    margins = y * (x @ np.asarray(w))
    # KKT: a = 0 -> margin >= 1, 0 < a < C -> margin = 1
    assert np.all(margins[a < 1e-6] >= 1 - 1e-3)
    free = (a > 1e-4) & (a < 1 - 1e-4)
    np.testing.assert_allclose(margins[free], 1.0, atol=1e-3)
    # the learned weights, differentiated through the unrolled loop in the data
    loss = lambda x: jnp.sum(svm_dual(x, jnp.asarray(y), steps=30)[0] ** 2)
    check_grad(loss, x)
    assert_trees_close(jit(lambda x: svm_dual(x, jnp.asarray(y), steps=30))(jnp.asarray(x)),
                       svm_dual(jnp.asarray(x), jnp.asarray(y), steps=30))


def mmd2(x, y, log_ell):
    kxx, kyy, kxy = rbf(x, x, log_ell), rbf(y, y, log_ell), rbf(x, y, log_ell)
    return jnp.mean(kxx) + jnp.mean(kyy) - 2 * jnp.mean(kxy)


def test_mmd_generator_gradient(x64):
    x, y = RNG.normal(size=(6, 2)), RNG.normal(size=(5, 2)) + 0.5
    check_grad(mmd2, x, y, 0.0)
    check_grad(mmd2, x, y, 0.0, argnum=2)
    # identical samples: zero, and zero gradient
    np.testing.assert_allclose(mmd2(jnp.asarray(x), jnp.asarray(x), 0.0), 0.0, atol=1e-12)
    check_vmap(lambda ll: mmd2(x, y, ll), (np.array([-0.5, 0.0, 0.5]),))


# --- neural ODEs -------------------------------------------------------------------------------------
def field(y, t, params):
    w1, b1, w2 = params
    return jnp.tanh(jnp.concatenate([y, jnp.array([t])]) @ w1 + b1) @ w2


def node_loss(params, y0, ts, target):
    ys = odeint(field, y0, ts, params, rtol=1e-10, atol=1e-10)
    return jnp.sum((ys[-1] - target) ** 2)


def test_neural_ode_odeint_adjoint(x64):
    params = (0.5 * RNG.normal(size=(3, 4)), 0.1 * RNG.normal(size=4), 0.5 * RNG.normal(size=(4, 2)))
    y0, target = RNG.normal(size=2), RNG.normal(size=2)
    ts = np.linspace(0.0, 1.0, 3)
    check_grad(node_loss, params, y0, ts, target, rtol=1e-5, atol=1e-7)
    check_grad(node_loss, params, y0, ts, target, argnum=1, rtol=1e-5, atol=1e-7)


def rk4_scan(params, y0, dt=0.1, n=10):
    def step(y, t):
        k1 = field(y, t, params)
        k2 = field(y + dt / 2 * k1, t + dt / 2, params)
        k3 = field(y + dt / 2 * k2, t + dt / 2, params)
        k4 = field(y + dt * k3, t + dt, params)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y, y
    _, ys = lax.scan(step, y0, jnp.arange(n) * dt)
    return ys


def test_rk4_scan_against_odeint(x64):
    params = to_snp((0.5 * RNG.normal(size=(3, 4)), 0.1 * RNG.normal(size=4), 0.5 * RNG.normal(size=(4, 2))))
    y0 = jnp.asarray(RNG.normal(size=2))
    ys = rk4_scan(params, y0)
    ref = odeint(field, y0, jnp.asarray([0.0, 1.0]), params, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(ys[-1], ref[-1], rtol=1e-5, atol=1e-7)
    loss = lambda p, y0: jnp.sum(rk4_scan(p, y0) ** 2)
    g_scan = check_grad(loss, params, y0)
    g_ode = grad(lambda p: jnp.sum(odeint(field, y0, jnp.linspace(0.0, 1.0, 11), p,
                                          rtol=1e-11, atol=1e-11)[1:] ** 2))(params)
    assert_trees_close(g_scan, g_ode, rtol=1e-4, atol=1e-6)
    check_vmap(lambda y0: rk4_scan(params, y0), (RNG.normal(size=(3, 2)),))


def cnf_dynamics(params, z, t):
    w, u, b = params
    return jnp.tanh(z @ w * (1 + t) + b) @ u


def cnf_log_prob(params, x, n=8):
    """Continuous normalising flow by Euler steps backwards from x: log p(x) = log N(z) -
    integral of -trace(df/dz) dt, the trace by jacfwd."""
    dt = 1.0 / n
    z, delta = x, 0.0
    for i in range(n, 0, -1):
        t = i * dt
        f = lambda z: cnf_dynamics(params, z, t)
        delta = delta + dt * jnp.trace(jacfwd(f)(z))
        z = z - dt * f(z)
    return -0.5 * jnp.sum(z ** 2) - jnp.log(2 * jnp.pi) - delta


def test_continuous_flow_trace_of_jacfwd(x64):
    """Regression: `f = lambda z: ...` in a loop's body, passed to jacfwd and called, was put
    back as a lambda when it could not be lifted ("cannot differentiate through a Lambda
    expression"); it goes back as the def it stands for."""
    params = (0.5 * RNG.normal(size=(2, 3)), 0.5 * RNG.normal(size=(3, 2)), 0.1 * RNG.normal(size=3))
    x = RNG.normal(size=2)
    check_grad(cnf_log_prob, params, x)
    check_grad(cnf_log_prob, params, x, argnum=1)
    check_vmap(cnf_log_prob, (params, RNG.normal(size=(4, 2))), in_axes=(None, 0))

"""Issue 15, code written by others (fifth round): optimisation and control as users write them
with JAX: a damped Newton solve with hessian and solve whose solution is differentiated in a
data parameter (against the implicit-function theorem), ridge regression solved by gradient
descent inside a custom_vjp whose backward pass is a linear solve, a hypergradient through
unrolled SGD with momentum in a scan, ISTA with a soft threshold in fori_loop, exponentiated
gradient on the simplex, an augmented-Lagrangian loop; LQR by a Riccati recursion on
jacfwd-linearised dynamics, one iLQR iteration on a pendulum, an MPC rollout with scan
optimised under jit, and a linear policy trained through a differentiable simulation; each
under the transforms its author would use, checked against float64 finite differences, closed
forms, a Python loop and eager."""

import numpy as np

import secant.numpy as jnp
from secant import custom_vjp, grad, hessian, jacfwd, jacrev, jit, jvp, lax, vmap

from others15_check import check_grad, check_vmap, fd_grad, fd_jvp, to_snp

RNG = np.random.default_rng(5353)


# --- optimisation ------------------------------------------------------------------------------
def objective(w, theta):
    return jnp.sum(jnp.cosh(w - theta)) + 0.5 * jnp.sum(w ** 2) + 0.1 * jnp.sum(w) ** 2


def newton_argmin(theta, steps=8, damping=1.0):
    w = jnp.zeros_like(theta)
    for _ in range(steps):
        g = grad(objective)(w, theta)
        h = hessian(objective)(w, theta)
        w = w - damping * jnp.linalg.solve(h, g)
    return w


def test_newton_argmin_sensitivity_by_implicit_function_theorem(x64):
    theta = RNG.normal(size=3) * 0.5
    w = newton_argmin(to_snp(theta))
    np.testing.assert_allclose(grad(objective)(w, to_snp(theta)), np.zeros(3), atol=1e-12)
    # dw*/dtheta = -H_ww^{-1} H_wtheta
    h_ww = hessian(objective)(w, to_snp(theta))
    h_wt = jacfwd(grad(objective), argnums=1)(w, to_snp(theta))
    implicit = -np.linalg.solve(h_ww, h_wt)
    np.testing.assert_allclose(jacfwd(newton_argmin)(to_snp(theta)), implicit, rtol=1e-8)
    np.testing.assert_allclose(jacrev(newton_argmin)(to_snp(theta)), implicit, rtol=1e-8)
    check_vmap(newton_argmin, (RNG.normal(size=(3, 3)) * 0.5,))


@custom_vjp
def ridge_solve(lam, x, y):
    # gradient descent to the minimiser of |xw - y|^2 / 2 + lam |w|^2 / 2
    a = x.T @ x + lam * jnp.eye(x.shape[1])
    step = 1.0 / jnp.linalg.norm(a, 2)

    def body(i, w):
        return w - step * (a @ w - x.T @ y)

    return lax.fori_loop(0, 400, body, jnp.zeros(x.shape[1]))


def ridge_fwd(lam, x, y):
    w = ridge_solve(lam, x, y)
    return w, (lam, x, y, w)


def ridge_bwd(res, w_bar):
    lam, x, y, w = res
    a = x.T @ x + lam * jnp.eye(x.shape[1])
    v = jnp.linalg.solve(a, w_bar)          # the adjoint system, A symmetric
    return -jnp.dot(v, w), -(x @ v)[:, None] * w[None, :] - (x @ w - y)[:, None] * v[None, :], \
        x @ v


ridge_solve.defvjp(ridge_fwd, ridge_bwd)


def validation_loss(lam, x, y, x_val, y_val):
    w = ridge_solve(lam, x, y)
    return jnp.mean((x_val @ w - y_val) ** 2)


def test_implicit_ridge_hypergradient_custom_vjp(x64):
    x, x_val = RNG.normal(size=(10, 3)), RNG.normal(size=(6, 3))
    w_true = np.array([1.0, -2.0, 0.5])
    y, y_val = x @ w_true + 0.3 * RNG.normal(size=10), x_val @ w_true
    closed = lambda lam, x, y: np.mean(
        (x_val @ np.linalg.solve(x.T @ x + lam * np.eye(3), x.T @ y) - y_val) ** 2)
    lam = 0.7
    np.testing.assert_allclose(validation_loss(lam, *to_snp((x, y, x_val, y_val))),
                               closed(lam, x, y), rtol=1e-8)
    eps = 1e-6
    want = (closed(lam + eps, x, y) - closed(lam - eps, x, y)) / (2 * eps)
    g = grad(validation_loss)(lam, *to_snp((x, y, x_val, y_val)))
    np.testing.assert_allclose(g, want, rtol=1e-6)
    np.testing.assert_allclose(jit(grad(validation_loss))(lam, *to_snp((x, y, x_val, y_val))),
                               g, rtol=1e-10)
    # the data gradients of the custom backward pass against differences of the closed form
    gx, gy = grad(validation_loss, argnums=(1, 2))(lam, *to_snp((x, y, x_val, y_val)))
    np.testing.assert_allclose(gx, fd_grad(lambda x: closed(lam, np.asarray(x), y), (x,)),
                               rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(gy, fd_grad(lambda y: closed(lam, x, np.asarray(y)), (y,)),
                               rtol=1e-5, atol=1e-8)


def train_with_momentum(hyper, w0, x, y, steps=10):
    lr, log_wd = hyper[0], hyper[1]

    def loss(w):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2) + jnp.exp(log_wd) * jnp.sum(w ** 2)

    def step(carry, _):
        w, v = carry
        v = 0.9 * v + grad(loss)(w)
        w = w - lr * v
        return (w, v), loss(w)

    (w, _), losses = lax.scan(step, (w0, jnp.zeros_like(w0)), None, length=steps)
    return w, losses


def test_hypergradient_through_unrolled_momentum_sgd(x64):
    x, y = RNG.normal(size=(8, 3)), RNG.normal(size=8) * 0.5
    x_val, y_val = RNG.normal(size=(5, 3)), RNG.normal(size=5) * 0.5
    w0 = RNG.normal(size=3) * 0.1
    meta = lambda h: jnp.mean((jnp.tanh(to_snp(x_val) @ train_with_momentum(
        h, to_snp(w0), to_snp(x), to_snp(y))[0]) - to_snp(y_val)) ** 2)
    check_grad(meta, np.array([0.1, np.log(1e-2)]))
    # the scan's per-step losses against a Python loop
    _, losses = train_with_momentum(jnp.array([0.1, np.log(1e-2)]), to_snp(w0), to_snp(x),
                                    to_snp(y))
    w, v = w0.copy(), np.zeros(3)
    f = lambda w: jnp.mean((jnp.tanh(to_snp(x) @ w) - to_snp(y)) ** 2) + 1e-2 * jnp.sum(w ** 2)
    for i in range(10):
        v = 0.9 * v + fd_grad(f, (to_snp(w),))
        w = w - 0.1 * v
        np.testing.assert_allclose(losses[i], f(to_snp(w)), rtol=1e-7)


def soft_threshold(v, t):
    return jnp.sign(v) * jnp.maximum(jnp.abs(v) - t, 0.0)


def ista(lam, x, y, n_iter=60):
    step = 1.0 / jnp.linalg.norm(x, 2) ** 2

    def body(i, w):
        return soft_threshold(w - step * x.T @ (x @ w - y), step * lam)

    return lax.fori_loop(0, n_iter, body, jnp.zeros(x.shape[1]))


def test_ista_lasso_path(x64):
    x = RNG.normal(size=(12, 5))
    y = x @ np.array([2.0, 0.0, -1.0, 0.0, 0.5]) + 0.05 * RNG.normal(size=12)
    lams = np.array([0.5, 2.0, 6.0])
    check_vmap(lambda lam: ista(lam, to_snp(x), to_snp(y)), (lams,))
    # the lasso optimality conditions at the (near-)converged point
    w = np.asarray(ista(0.5, to_snp(x), to_snp(y), 2000))
    g = x.T @ (y - x @ w)
    on = np.abs(w) > 1e-8
    np.testing.assert_allclose(g[on], 0.5 * np.sign(w[on]), atol=1e-6)
    assert np.all(np.abs(g[~on]) <= 0.5 + 1e-6)
    # the unrolled solver differentiated in lambda and in y
    check_grad(lambda lam: jnp.sum(ista(lam, to_snp(x), to_snp(y)) ** 2), np.array(0.5))
    check_grad(lambda y: jnp.sum(ista(0.5, to_snp(x), y) ** 2), y)


def exponentiated_gradient(logits, cost_matrix, steps=5, eta=0.5):
    p = jnp.exp(logits) / jnp.sum(jnp.exp(logits))
    for _ in range(steps):
        g = grad(lambda p: p @ cost_matrix @ p + jnp.sum(p * jnp.log(p)))(p)
        p = p * jnp.exp(-eta * g)
        p = p / jnp.sum(p)
    return p


def test_exponentiated_gradient_on_simplex(x64):
    c = RNG.normal(size=(4, 4))
    c = c @ c.T * 0.3
    logits = RNG.normal(size=4) * 0.3
    p = exponentiated_gradient(to_snp(logits), to_snp(c))
    np.testing.assert_allclose(np.sum(p), 1.0, rtol=1e-12)
    loss = lambda l: jnp.sum(exponentiated_gradient(l, to_snp(c)) * jnp.arange(4.0))
    check_grad(loss, logits)
    check_vmap(lambda l: exponentiated_gradient(l, to_snp(c)), (RNG.normal(size=(3, 4)),))


def augmented_lagrangian(x0, target, outer=4, inner=15, mu=5.0, lr=0.05):
    # minimise |x - target|^2 subject to sum(x) = 1
    def lagrangian(x, lam):
        h = jnp.sum(x) - 1.0
        return jnp.sum((x - target) ** 2) + lam * h + 0.5 * mu * h ** 2

    x, lam = x0, 0.0
    for _ in range(outer):
        for _ in range(inner):
            x = x - lr * grad(lagrangian)(x, lam)
        lam = lam + mu * (jnp.sum(x) - 1.0)
    return x, lam


def test_augmented_lagrangian_loops(x64):
    target = np.array([0.6, 0.2, 0.5])
    x, lam = augmented_lagrangian(jnp.zeros(3), to_snp(target), outer=30, inner=40)
    # the projection onto the plane sum(x) = 1, and its multiplier
    proj = target - (target.sum() - 1.0) / 3
    np.testing.assert_allclose(x, proj, rtol=1e-8)
    np.testing.assert_allclose(lam, 2 * (target - proj)[0], rtol=1e-6)
    f = lambda t: jnp.sum(augmented_lagrangian(jnp.zeros(3), t)[0] ** 2)
    check_grad(f, target)


# --- control -----------------------------------------------------------------------------------
def pendulum(state, u, dt=0.05):
    theta, omega = state[0], state[1]
    return jnp.array([theta + dt * omega,
                      omega + dt * (-9.81 * jnp.sin(theta) - 0.1 * omega + u[0])])


def lqr_gains(a, b, q, r, horizon=20):
    p = q
    gains = []
    for _ in range(horizon):
        k = jnp.linalg.solve(r + b.T @ p @ b, b.T @ p @ a)
        p = q + a.T @ p @ (a - b @ k)
        gains.append(k)
    return gains[::-1], p


def test_lqr_on_jacfwd_linearised_dynamics(x64):
    x_eq, u_eq = jnp.array([jnp.pi, 0.0]), jnp.zeros(1)
    a = jacfwd(pendulum, argnums=0)(x_eq, u_eq)
    b = jacfwd(pendulum, argnums=1)(x_eq, u_eq)
    np.testing.assert_allclose(a, [[1.0, 0.05], [0.05 * 9.81, 1 - 0.005]], rtol=1e-12)
    np.testing.assert_allclose(b, [[0.0], [0.05]], atol=1e-15)
    gains, p = lqr_gains(a, b, jnp.eye(2), 0.1 * jnp.eye(1), horizon=400)
    # the infinite-horizon Riccati equation holds and the closed loop is stable
    k = np.asarray(gains[0])
    a_, b_, p_ = np.asarray(a), np.asarray(b), np.asarray(p)
    np.testing.assert_allclose(p_, np.eye(2) + a_.T @ p_ @ a_ - a_.T @ p_ @ b_ @ np.linalg.solve(
        0.1 + b_.T @ p_ @ b_, b_.T @ p_ @ a_), rtol=1e-8)
    assert np.max(np.abs(np.linalg.eigvals(a_ - b_ @ k))) < 1
    # the cost-to-go's sensitivity to the state weights
    cost = lambda qd: jnp.sum(lqr_gains(a, b, jnp.diag(qd), 0.1 * jnp.eye(1))[1])
    check_grad(cost, np.array([1.0, 0.5]))


def rollout_cost(us, x0, goal):
    def step(x, u):
        x = pendulum(x, u)
        return x, jnp.sum((x - goal) ** 2) + 0.01 * jnp.sum(u ** 2)
    x_final, costs = lax.scan(step, x0, us)
    return jnp.sum(costs) + 10.0 * jnp.sum((x_final - goal) ** 2)


def test_mpc_rollout_with_scan(x64):
    us = RNG.normal(size=(12, 1)) * 0.5
    x0, goal = np.array([0.3, 0.0]), np.array([0.0, 0.0])
    check_grad(rollout_cost, us, x0, goal)
    check_grad(rollout_cost, us, x0, goal, argnum=1)
    # gradient descent on the controls under jit, as an MPC loop does each tick
    opt = jit(lambda us, x0: us - 0.01 * grad(rollout_cost)(us, x0, to_snp(goal)))
    u = to_snp(us)
    before = rollout_cost(u, to_snp(x0), to_snp(goal))
    for _ in range(10):
        u = opt(u, to_snp(x0))
    assert rollout_cost(u, to_snp(x0), to_snp(goal)) < before
    check_vmap(lambda x0: rollout_cost(to_snp(us), x0, to_snp(goal)),
               (RNG.normal(size=(3, 2)) * 0.3,))
    tangent = RNG.normal(size=(12, 1))
    _, got = jvp(lambda u: rollout_cost(u, to_snp(x0), to_snp(goal)), (to_snp(us),),
                 (to_snp(tangent),))
    np.testing.assert_allclose(got, fd_jvp(lambda u: rollout_cost(u, to_snp(x0), to_snp(goal)),
                                           (to_snp(us),), (tangent,)), rtol=1e-6)


def ilqr_iteration(us, x0, goal, reg=1e-3):
    n = us.shape[0]
    xs = [x0]
    for t in range(n):
        xs.append(pendulum(xs[t], us[t]))
    stage = lambda x, u: jnp.sum((x - goal) ** 2) + 0.1 * jnp.sum(u ** 2)
    final = lambda x: 10.0 * jnp.sum((x - goal) ** 2)
    v_x, v_xx = grad(final)(xs[n]), hessian(final)(xs[n])
    ks, big_ks = [None] * n, [None] * n
    for t in reversed(range(n)):
        a = jacfwd(pendulum, 0)(xs[t], us[t])
        b = jacfwd(pendulum, 1)(xs[t], us[t])
        q_x = grad(stage, 0)(xs[t], us[t]) + a.T @ v_x
        q_u = grad(stage, 1)(xs[t], us[t]) + b.T @ v_x
        q_xx = hessian(stage, 0)(xs[t], us[t]) + a.T @ v_xx @ a
        q_uu = hessian(stage, 1)(xs[t], us[t]) + b.T @ v_xx @ b + reg * jnp.eye(1)
        q_ux = b.T @ v_xx @ a
        ks[t] = -jnp.linalg.solve(q_uu, q_u)
        big_ks[t] = -jnp.linalg.solve(q_uu, q_ux)
        v_x = q_x + big_ks[t].T @ q_uu @ ks[t] + big_ks[t].T @ q_u + q_ux.T @ ks[t]
        v_xx = q_xx + big_ks[t].T @ q_uu @ big_ks[t] + big_ks[t].T @ q_ux + q_ux.T @ big_ks[t]
    x, new_us = x0, []
    for t in range(n):
        u = us[t] + ks[t] + big_ks[t] @ (x - xs[t])
        new_us.append(u)
        x = pendulum(x, u)
    new_us = jnp.stack(new_us)
    total = lambda us: sum_cost(us, x0, stage, final)
    return new_us, total(new_us)


def sum_cost(us, x0, stage, final):
    x, c = x0, 0.0
    for t in range(us.shape[0]):
        c = c + stage(x, us[t])
        x = pendulum(x, us[t])
    return c + final(x)


def test_ilqr_iteration_on_pendulum(x64):
    us = np.zeros((6, 1))
    x0, goal = np.array([0.4, 0.0]), np.array([0.0, 0.0])
    stage = lambda x, u: jnp.sum((x - to_snp(goal)) ** 2) + 0.1 * jnp.sum(u ** 2)
    final = lambda x: 10.0 * jnp.sum((x - to_snp(goal)) ** 2)
    before = sum_cost(to_snp(us), to_snp(x0), stage, final)
    new_us, after = ilqr_iteration(to_snp(us), to_snp(x0), to_snp(goal))
    assert after < before
    np.testing.assert_allclose(jit(ilqr_iteration)(to_snp(us), to_snp(x0), to_snp(goal))[1],
                               after, rtol=1e-10)
    # the improved cost as a function of the initial state
    check_grad(lambda x0: ilqr_iteration(to_snp(us), x0, to_snp(goal))[1], x0, rtol=1e-5)


def policy_return(k, x0, steps=15):
    def step(x, _):
        u = -k @ x
        x = pendulum(x, u)
        return x, jnp.sum(x ** 2) + 0.01 * jnp.sum(u ** 2)
    _, costs = lax.scan(step, x0, None, length=steps)
    return jnp.sum(costs)


def test_policy_through_differentiable_simulation(x64):
    k = np.array([[2.0, 0.5]])
    x0s = RNG.normal(size=(4, 2)) * 0.3
    batch_cost = lambda k, x0s: jnp.mean(vmap(policy_return, in_axes=(None, 0))(k, x0s))
    g = check_grad(batch_cost, k, x0s)
    # the gradient of the mean is the mean of per-start gradients
    per = vmap(grad(policy_return), in_axes=(None, 0))(to_snp(k), to_snp(x0s))
    np.testing.assert_allclose(per.mean(axis=0), g, rtol=1e-10)
    check_vmap(lambda x0: grad(policy_return)(to_snp(k), x0), (x0s,))

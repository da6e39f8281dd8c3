"""Issue 15, code written by others (tenth round): scientific programs of kinds earlier rounds
did not cover. A jax-md-like space (periodic(box) returning displacement and shift closures, a
soft-sphere pair energy built from the displacement by a factory, forces as -grad, its hessian,
FIRE descent in lax.while_loop), k-means as lax.fori_loop with one_hot sums (restarts by
vmap), a neural ODE whose gradient is the continuous adjoint written with custom_vjp (backward
RK4 of the augmented state with vjp of the dynamics) against grad through the unrolled solver,
a mass-spring chain stepped by lax.scan over a namedtuple State, and Bayesian optimisation's
expected improvement from a GP posterior (cholesky / solve_triangular / norm.cdf). Checked
against float64 central differences, NumPy loops, SciPy, a Python loop for vmap and eager for
jit."""
from typing import NamedTuple

import numpy as np
from scipy import stats as sst

import secant
import secant.numpy as jnp
from secant import grad, hessian, jit, jvp, lax, nn, vjp, vmap
from secant.scipy.linalg import solve_triangular
from secant.scipy.stats import norm

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(10020)


# --- a jax-md-like space and pair energy -----------------------------------------------------------
def periodic(box):
    def displacement(Ra, Rb):
        dR = Ra - Rb
        return jnp.mod(dR + 0.5 * box, box) - 0.5 * box

    def shift(R, dR):
        return jnp.mod(R + dR, box)
    return displacement, shift


def soft_sphere_pair(displacement, sigma=1.0, epsilon=1.0, alpha=2.0):
    def metric(Ra, Rb):
        return jnp.sqrt(jnp.sum(displacement(Ra, Rb) ** 2) + 1e-12)

    def energy(R):
        dr = vmap(vmap(metric, (None, 0)), (0, None))(R, R)
        e = jnp.where(dr < sigma, epsilon / alpha * (1 - dr / sigma) ** alpha, 0.0)
        return 0.5 * jnp.sum(e * (1 - jnp.eye(R.shape[0])))
    return energy


BOX = 3.0
displacement, shift = periodic(BOX)
energy_fn = soft_sphere_pair(displacement, sigma=1.2)


def np_energy(R, sigma=1.2):
    e = 0.0
    for i in range(len(R)):
        for j in range(len(R)):
            if i != j:
                d = (R[i] - R[j] + BOX / 2) % BOX - BOX / 2
                r = np.sqrt(d @ d + 1e-12)
                e += 0.5 * (0.5 * (1 - r / sigma) ** 2 if r < sigma else 0.0)
    return e


R0 = np.array([[0.2, 0.3], [1.0, 0.5], [2.8, 0.4], [1.5, 1.6], [0.6, 2.7]])


def test_jax_md_like_energy_forces_and_hessian(x64):
    np.testing.assert_allclose(energy_fn(jnp.asarray(R0)), np_energy(R0), rtol=1e-12)
    forces = -check_grad(energy_fn, R0)
    np.testing.assert_allclose(np.sum(forces, axis=0), 0.0, atol=1e-12)   # Newton's third law
    H = hessian(energy_fn)(jnp.asarray(R0))
    assert H.shape == (5, 2, 5, 2)
    Hfd = np.stack([fd_grad(lambda R: grad(energy_fn)(R)[k // 2, k % 2], (jnp.asarray(R0),))
                    for k in range(10)]).reshape(5, 2, 5, 2)
    np.testing.assert_allclose(H, Hfd, rtol=1e-5, atol=1e-6)
    # translation invariance: the hessian's rows sum to zero over the particles
    np.testing.assert_allclose(np.asarray(H).sum(axis=2), 0.0, atol=1e-10)
    # a batch of configurations by vmap against a loop; jit against eager
    batch = (R0[None] + 0.05 * RNG.normal(size=(3, 5, 2))) % BOX
    check_vmap(energy_fn, (batch,))
    check_vmap(grad(energy_fn), (batch,))


def fire_descent(energy, shift, R, dt_start=0.05, dt_max=0.2, n_min=3, f_inc=1.1,
                 f_dec=0.5, alpha_start=0.1, f_alpha=0.99, steps=60):
    force = lambda R: -grad(energy)(R)

    def body(state):
        R, V, F, dt, alpha, n_pos, i = state
        R = shift(R, dt * V + 0.5 * dt ** 2 * F)
        F_new = force(R)
        V = V + 0.5 * dt * (F + F_new)
        P = jnp.sum(F_new * V)
        f_norm = jnp.sqrt(jnp.sum(F_new ** 2))
        v_norm = jnp.sqrt(jnp.sum(V ** 2))
        V = jnp.where(P > 0, (1 - alpha) * V + alpha * F_new / (f_norm + 1e-12) * v_norm, 0.0)
        grow = (P > 0) & (n_pos > n_min)
        dt = jnp.where(P > 0, jnp.where(grow, jnp.minimum(dt * f_inc, dt_max), dt), dt * f_dec)
        alpha = jnp.where(P > 0, jnp.where(grow, alpha * f_alpha, alpha), alpha_start)
        n_pos = jnp.where(P > 0, n_pos + 1, 0)
        return R, V, F_new, dt, alpha, n_pos, i + 1

    def cond(state):
        return (state[-1] < steps) & (jnp.max(jnp.abs(state[2])) > 1e-8)

    init = (R, jnp.zeros_like(R), force(R), jnp.asarray(dt_start), jnp.asarray(alpha_start),
            jnp.asarray(0), jnp.asarray(0))
    return lax.while_loop(cond, body, init)


def test_fire_descent_in_while_loop(x64):
    R = jnp.asarray(R0)
    out = fire_descent(energy_fn, shift, R)
    out_jit = jit(lambda R: fire_descent(energy_fn, shift, R))(R)
    assert_trees_close(out_jit, out, rtol=1e-9, atol=1e-11)
    e0, e1 = float(energy_fn(R)), float(energy_fn(out[0]))
    assert e1 < 0.5 * e0
    f0 = np.abs(np.asarray(grad(energy_fn)(R))).max()
    f1 = np.abs(np.asarray(grad(energy_fn)(out[0]))).max()
    assert f1 < 0.5 * f0


# --- k-means as a fori_loop -------------------------------------------------------------------------
def kmeans(x, centers, iters=8):
    k = centers.shape[0]

    def step(i, c):
        d2 = jnp.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=-1)
        onehot = nn.one_hot(jnp.argmin(d2, axis=1), k)
        counts = onehot.sum(axis=0)
        sums = onehot.T @ x
        return jnp.where(counts[:, None] > 0, sums / jnp.maximum(counts, 1.0)[:, None], c)
    return lax.fori_loop(0, iters, step, centers)


def inertia(x, centers):
    c = kmeans(x, centers)
    return jnp.sum(jnp.min(jnp.sum((x[:, None, :] - c[None]) ** 2, axis=-1), axis=1))


def np_kmeans(x, c, iters=8):
    c = c.copy()
    for _ in range(iters):
        a = np.argmin(((x[:, None] - c[None]) ** 2).sum(-1), axis=1)
        for j in range(len(c)):
            if np.any(a == j):
                c[j] = x[a == j].mean(axis=0)
    return c


BLOBS = np.concatenate([RNG.normal(size=(6, 2)) * 0.3 + m for m in ([0, 0], [3, 0], [0, 3])])


def test_kmeans_fori_loop(x64):
    c0 = BLOBS[[0, 1, 6]]
    np.testing.assert_allclose(kmeans(jnp.asarray(BLOBS), jnp.asarray(c0)),
                               np_kmeans(BLOBS, c0), rtol=1e-12)
    # restarts by vmap over initial centres, against a loop; jit of it
    starts = np.stack([BLOBS[[0, 6, 12]], BLOBS[[1, 2, 13]], BLOBS[[5, 7, 8]]])
    got = check_vmap(lambda c: kmeans(jnp.asarray(BLOBS), c), (starts,))
    for g, s in zip(got, starts):
        np.testing.assert_allclose(g, np_kmeans(BLOBS, s), rtol=1e-12)
    # the final inertia's gradient in the data (assignments fixed near the point): against fd
    check_grad(inertia, BLOBS, c0)
    # Lloyd's fixed point: the gradient of the inertia in the data at converged centres is
    # 2 (x - c_assigned) minus its mean share, summed over each cluster it is zero
    g = np.asarray(grad(inertia)(jnp.asarray(BLOBS), jnp.asarray(starts[0])))
    c = np_kmeans(BLOBS, starts[0])
    a = np.argmin(((BLOBS[:, None] - c[None]) ** 2).sum(-1), axis=1)
    for j in range(3):
        np.testing.assert_allclose(g[a == j].sum(axis=0), 0.0, atol=1e-9)


# --- a neural ODE with the continuous adjoint -------------------------------------------------------
def dynamics(z, theta):
    W, b = theta
    return jnp.tanh(W @ z + b)


def rk4_step(f, z, h, theta):
    k1 = f(z, theta)
    k2 = f(z + 0.5 * h * k1, theta)
    k3 = f(z + 0.5 * h * k2, theta)
    k4 = f(z + h * k3, theta)
    return z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


T1, N_STEPS = 1.0, 20


def solve_unrolled(z0, theta):
    h = T1 / N_STEPS
    return lax.fori_loop(0, N_STEPS, lambda i, z: rk4_step(dynamics, z, h, theta), z0)


@secant.custom_vjp
def solve_adjoint(z0, theta):
    return solve_unrolled(z0, theta)


def solve_fwd(z0, theta):
    z1 = solve_unrolled(z0, theta)
    return z1, (z1, theta)


def solve_bwd(res, z1_bar):
    z1, theta = res
    h = T1 / N_STEPS

    def aug_dynamics(state, theta):
        z, a, _ = state
        fz, pullback = vjp(lambda z, th: dynamics(z, th), z, theta)
        a_z, a_theta = pullback(a)
        return (-fz, a_z, a_theta)          # backwards in time: dz = -f, da = a df/dz, ...

    zeros = secant.tree_util.tree_map(jnp.zeros_like, theta)
    state = (z1, z1_bar, zeros)
    state = lax.fori_loop(0, N_STEPS, lambda i, s: rk4_tree(aug_dynamics, s, h, theta), state)
    return state[1], state[2]


def rk4_tree(f, s, h, theta):
    add = lambda a, b, c: secant.tree_util.tree_map(lambda x, y: x + c * y, a, b)
    k1 = f(s, theta)
    k2 = f(add(s, k1, 0.5 * h), theta)
    k3 = f(add(s, k2, 0.5 * h), theta)
    k4 = f(add(s, k3, h), theta)
    return secant.tree_util.tree_map(lambda x, a, b, c, d: x + h / 6 * (a + 2 * b + 2 * c + d),
                                     s, k1, k2, k3, k4)


solve_adjoint.defvjp(solve_fwd, solve_bwd)

THETA = (RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=3) * 0.2)
Z0 = RNG.normal(size=3)
TARGET = np.array([0.5, -0.3, 0.1])


def ode_loss(solve):
    return lambda z0, theta: jnp.sum((solve(z0, theta) - TARGET) ** 2)


def test_neural_ode_adjoint_against_unrolled_gradient(x64):
    z_a, z_u = solve_adjoint(jnp.asarray(Z0), to_snp(THETA)), solve_unrolled(
        jnp.asarray(Z0), to_snp(THETA))
    np.testing.assert_allclose(z_a, z_u, rtol=1e-14)
    g_unrolled = check_grad(ode_loss(solve_unrolled), Z0, THETA, argnum=1)
    g_adjoint = grad(ode_loss(solve_adjoint), argnums=(0, 1))(jnp.asarray(Z0), to_snp(THETA))
    # the continuous adjoint equals the discrete gradient to the solver's accuracy
    assert_trees_close(g_adjoint[1], g_unrolled, rtol=2e-5, atol=1e-7)
    assert_trees_close(g_adjoint[0], grad(ode_loss(solve_unrolled))(jnp.asarray(Z0),
                                                                     to_snp(THETA)),
                       rtol=2e-5, atol=1e-7)
    assert_trees_close(jit(grad(ode_loss(solve_adjoint), argnums=1))(jnp.asarray(Z0),
                                                                     to_snp(THETA)),
                       g_adjoint[1], rtol=1e-10, atol=1e-12)
    # per-example adjoint gradients over a batch of initial states, against a loop
    zs = RNG.normal(size=(3, 3))
    adjoint_grad = grad(ode_loss(solve_adjoint))
    check_vmap(lambda z: adjoint_grad(z, THETA), (zs,), jit=False)


# --- a mass-spring chain stepped by scan over a namedtuple state ------------------------------------
class State(NamedTuple):
    x: object
    v: object


def spring_forces(x, k, rest=1.0):
    ext = jnp.diff(x) - rest
    f = jnp.zeros_like(x)
    f = f.at[:-1].add(k * ext)
    return f.at[1:].add(-k * ext)


def simulate(k, damping, x0, steps=20, dt=0.1):
    def step(state, _):
        a = spring_forces(state.x, k) - damping * state.v
        a = a.at[0].set(0.0)                 # the first mass is pinned
        v = state.v + dt * a
        new = State(x=state.x + dt * v, v=v)
        return new, new.x[-1]
    final, tip = lax.scan(step, State(x0, jnp.zeros_like(x0)), None, length=steps)
    return final, tip


def np_simulate(k, damping, x0, steps=20, dt=0.1):
    x, v, tips = x0.copy(), np.zeros_like(x0), []
    for _ in range(steps):
        ext = np.diff(x) - 1.0
        f = np.zeros_like(x)
        f[:-1] += k * ext
        f[1:] -= k * ext
        a = f - damping * v
        a[0] = 0.0
        v = v + dt * a
        x = x + dt * v
        tips.append(x[-1])
    return x, v, np.array(tips)


X0 = np.array([0.0, 1.3, 2.1, 3.4])


def tip_loss(k, damping):
    _, tip = simulate(k, damping, jnp.asarray(X0))
    return jnp.mean((tip - 3.0) ** 2)


def test_mass_spring_scan_over_namedtuple_state(x64):
    final, tip = simulate(2.0, 0.3, jnp.asarray(X0))
    x, v, tips = np_simulate(2.0, 0.3, X0)
    assert isinstance(final, State)
    np.testing.assert_allclose(final.x, x, rtol=1e-12)
    np.testing.assert_allclose(final.v, v, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tip, tips, rtol=1e-12)
    check_grad(tip_loss, 2.0, 0.3)
    np.testing.assert_allclose(grad(tip_loss, argnums=1)(2.0, 0.3),
                               fd_grad(tip_loss, (2.0, 0.3), argnum=1), rtol=1e-6)
    # forward mode against reverse, and a sweep over stiffness by vmap against a loop
    _, t = jvp(lambda k: tip_loss(k, 0.3), (2.0,), (1.0,))
    np.testing.assert_allclose(t, grad(tip_loss)(2.0, 0.3), rtol=1e-10)
    check_vmap(tip_loss, (np.array([1.0, 2.0, 3.5]), np.array([0.1, 0.3, 0.5])))
    check_vmap(grad(tip_loss), (np.array([1.0, 2.0, 3.5]), np.array([0.1, 0.3, 0.5])),
               jit=False)
    # the state pytree's gradient: grad of the final kinetic energy in the initial positions
    ke = lambda x0: 0.5 * jnp.sum(simulate(2.0, 0.3, x0)[0].v ** 2)
    check_grad(ke, X0)
    # second order in the stiffness: against differences of grad
    h = grad(grad(tip_loss))(2.0, 0.3)
    eps = 1e-5
    np.testing.assert_allclose(h, (grad(tip_loss)(2.0 + eps, 0.3) - grad(tip_loss)(2.0 - eps, 0.3))
                               / (2 * eps), rtol=1e-5)


# --- Bayesian optimisation: expected improvement -----------------------------------------------------
XS_OBS = np.array([[0.1, 0.2], [0.5, 0.9], [0.8, 0.3], [0.3, 0.6], [0.9, 0.8]])
YS_OBS = np.sin(3 * XS_OBS[:, 0]) + np.cos(2 * XS_OBS[:, 1])


def rbf(a, b, ls=0.4):
    return jnp.exp(-0.5 * jnp.sum((a[:, None] - b[None]) ** 2, axis=-1) / ls ** 2)


def expected_improvement(x, xs=XS_OBS, ys=YS_OBS, noise=1e-4):
    K = rbf(xs, xs) + noise * jnp.eye(xs.shape[0])
    L = jnp.linalg.cholesky(K)
    k_star = rbf(xs, x[None])[:, 0]
    alpha = solve_triangular(L.T, solve_triangular(L, ys, lower=True), lower=False)
    mu = k_star @ alpha
    v = solve_triangular(L, k_star, lower=True)
    sigma = jnp.sqrt(jnp.maximum(1.0 - v @ v, 1e-12))
    best = jnp.max(ys)
    z = (mu - best) / sigma
    return (mu - best) * norm.cdf(z) + sigma * norm.pdf(z)


def np_ei(x):
    def k(a, b):
        return np.exp(-0.5 * ((a[:, None] - b[None]) ** 2).sum(-1) / 0.16)
    K = k(XS_OBS, XS_OBS) + 1e-4 * np.eye(5)
    ks = k(XS_OBS, x[None])[:, 0]
    mu = ks @ np.linalg.solve(K, YS_OBS)
    sigma = np.sqrt(max(1 - ks @ np.linalg.solve(K, ks), 1e-12))
    z = (mu - YS_OBS.max()) / sigma
    return (mu - YS_OBS.max()) * sst.norm.cdf(z) + sigma * sst.norm.pdf(z)


def test_expected_improvement_acquisition(x64):
    cands = np.array([[0.4, 0.4], [0.7, 0.6], [0.2, 0.9]])
    for c in cands:
        np.testing.assert_allclose(expected_improvement(jnp.asarray(c)), np_ei(c), rtol=1e-8)
        check_grad(expected_improvement, c)
    check_vmap(expected_improvement, (cands,))
    check_vmap(grad(expected_improvement), (cands,), jit=False)
    H = hessian(expected_improvement)(jnp.asarray(cands[1]))
    Hfd = np.stack([fd_grad(lambda x: grad(expected_improvement)(x)[i], (cands[1],))
                    for i in range(2)])
    np.testing.assert_allclose(H, Hfd, rtol=1e-5, atol=1e-7)
    # one step of gradient ascent on the acquisition, jitted, raises it
    step = jit(lambda x: x + 0.05 * grad(expected_improvement)(x))
    x1 = step(jnp.asarray(cands[1]))
    assert float(expected_improvement(x1)) > float(expected_improvement(jnp.asarray(cands[1])))

"""Issue 15, code written by others (seventh round): small scientific programs as their authors
write them. Lennard-Jones MD with periodic boundaries (mod / where, forces by grad, velocity
Verlet in a fori_loop), the heat equation with x.at[1:-1].set, HMC leapfrog with grad inside a
lax.fori_loop, a Laplace approximation by hessian + slogdet, GP regression with cholesky /
cho_solve / solve_triangular, an ODE by lax.scan RK4, and Ising Metropolis with random.split
inside a fori_loop (eager against jit). Compared with closed forms, NumPy float64 loops and
finite differences."""
import math

import numpy as np
import scipy.linalg

import secant
import secant.numpy as jnp
import secant.scipy.linalg as jsl
from secant import grad, hessian, jit, lax, random, vmap

from others15_check import check_grad, check_vmap, fd_grad

RNG = np.random.default_rng(2027)


# --- Lennard-Jones with periodic boundaries ------------------------------------------------------
BOX = 3.0


def displacement(ri, rj, box=BOX):
    d = ri - rj
    return d - box * jnp.round(d / box)          # minimum image


def lj_energy(positions, sigma=1.0, epsilon=1.0, r_cut=1.4):
    n = positions.shape[0]
    dr = displacement(positions[:, None, :], positions[None, :, :])
    r2 = jnp.sum(dr ** 2, axis=-1)
    mask = (1.0 - jnp.eye(n)) * (r2 < r_cut ** 2)
    r2_safe = jnp.where(mask > 0, r2, 1.0)
    inv6 = (sigma ** 2 / r2_safe) ** 3
    e = 4.0 * epsilon * (inv6 ** 2 - inv6)
    return 0.5 * jnp.sum(jnp.where(mask > 0, e, 0.0))


def np_lj(pos, r_cut=1.4):
    e = 0.0
    for i in range(len(pos)):
        for j in range(i + 1, len(pos)):
            d = pos[i] - pos[j]
            d = d - BOX * np.round(d / BOX)
            r2 = d @ d
            if r2 < r_cut ** 2:
                e += 4 * (r2 ** -6 - r2 ** -3)
    return e


def lattice():
    g = np.stack(np.meshgrid(np.arange(2), np.arange(2), indexing="ij"), -1).reshape(-1, 2)
    return (g * 1.5 + 0.1 * RNG.normal(size=(4, 2))) % BOX


def test_lj_periodic_energy_forces(x64):
    pos = lattice()
    np.testing.assert_allclose(lj_energy(jnp.asarray(pos)), np_lj(pos), rtol=1e-12)
    forces = -grad(lj_energy)(jnp.asarray(pos))
    np.testing.assert_allclose(forces, -fd_grad(lj_energy, (jnp.asarray(pos),)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(jnp.sum(forces, 0), 0.0, atol=1e-10)     # Newton's third law
    # shifting every particle across the boundary changes nothing
    shifted = (pos + np.array([2.9, -1.7])) % BOX
    np.testing.assert_allclose(lj_energy(jnp.asarray(shifted)), np_lj(pos), rtol=1e-10)


def test_velocity_verlet_in_fori_loop_conserves_energy(x64):
    pos0 = jnp.asarray(lattice())
    vel0 = jnp.asarray(0.1 * RNG.normal(size=(4, 2)))
    force = lambda x: -grad(lj_energy)(x)
    dt = 1e-3

    def step(i, state):
        x, v, f = state
        v_half = v + 0.5 * dt * f
        x = jnp.mod(x + dt * v_half, BOX)
        f = force(x)
        return x, v_half + 0.5 * dt * f, f

    @jit
    def simulate(x, v):
        x, v, _ = lax.fori_loop(0, 200, step, (x, v, force(x)))
        return x, v

    e0 = lj_energy(pos0) + 0.5 * jnp.sum(vel0 ** 2)
    x, v = simulate(pos0, vel0)
    e1 = lj_energy(x) + 0.5 * jnp.sum(v ** 2)
    assert abs(float(e1 - e0)) < 1e-5 * max(1.0, abs(float(e0)))
    # eager Python loop agrees with the jitted fori_loop
    state = (pos0, vel0, force(pos0))
    for i in range(200):
        state = step(i, state)
    np.testing.assert_allclose(x, state[0], rtol=1e-9, atol=1e-12)


# --- heat equation -------------------------------------------------------------------------------
def heat_step(u, alpha):
    lap = u[2:] - 2 * u[1:-1] + u[:-2]
    return u.at[1:-1].set(u[1:-1] + alpha * lap)


def heat_solve(u0, alpha, steps=50):
    return lax.fori_loop(0, steps, lambda i, u: heat_step(u, alpha), u0)


def test_heat_equation_at_set_and_its_gradients(x64):
    n = 12
    xgrid = np.linspace(0, 1, n)
    u0 = np.sin(np.pi * xgrid)
    alpha = 0.2
    u = heat_solve(jnp.asarray(u0), alpha)
    ref = u0.copy()
    for _ in range(50):
        ref[1:-1] = ref[1:-1] + alpha * (ref[2:] - 2 * ref[1:-1] + ref[:-2])
    np.testing.assert_allclose(u, ref, rtol=1e-12)
    np.testing.assert_allclose(jit(heat_solve, static_argnums=2)(jnp.asarray(u0), alpha, 50), ref,
                               rtol=1e-12)
    # the solution operator is linear in u0: its Jacobian is the matrix power
    A = np.eye(n)
    for i in range(1, n - 1):
        A[i, i - 1:i + 2] += alpha * np.array([1, -2, 1])
    J = secant.jacrev(heat_solve)(jnp.asarray(u0), alpha)
    np.testing.assert_allclose(J, np.linalg.matrix_power(A, 50), rtol=1e-10, atol=1e-14)
    # the diffusivity from a final measurement: grad in alpha against differences
    loss = lambda a: jnp.sum((heat_solve(jnp.asarray(u0), a) - 0.5 * jnp.asarray(u0)) ** 2)
    check_grad(loss, np.float64(0.2))
    check_vmap(lambda a: heat_solve(jnp.asarray(u0), a, 10), (np.array([0.1, 0.2, 0.25]),))


# --- HMC -----------------------------------------------------------------------------------------
def log_density(q):
    """A correlated Gaussian: -q^T P q / 2."""
    P = jnp.asarray([[2.0, 0.6], [0.6, 1.0]])
    return -0.5 * q @ P @ q


def leapfrog(q, p, step_size, n_steps):
    grad_u = grad(lambda q: -log_density(q))

    def body(i, state):
        q, p = state
        p = p - 0.5 * step_size * grad_u(q)
        q = q + step_size * p
        p = p - 0.5 * step_size * grad_u(q)
        return q, p
    return lax.fori_loop(0, n_steps, body, (q, p))


def test_hmc_leapfrog_fori_loop(x64):
    q0, p0 = jnp.asarray([0.5, -1.0]), jnp.asarray([0.3, 0.8])
    q, p = jit(leapfrog, static_argnums=3)(q0, p0, 0.05, 40)
    P = np.array([[2.0, 0.6], [0.6, 1.0]])
    qn, pn = np.array([0.5, -1.0]), np.array([0.3, 0.8])
    for _ in range(40):
        pn = pn - 0.025 * P @ qn
        qn = qn + 0.05 * pn
        pn = pn - 0.025 * P @ qn
    np.testing.assert_allclose(q, qn, rtol=1e-12)
    np.testing.assert_allclose(p, pn, rtol=1e-12)
    H = lambda q, p: -log_density(q) + 0.5 * p @ p
    assert abs(float(H(q, p) - H(q0, p0))) < 2e-3
    # leapfrog is volume preserving: det of the Jacobian of (q, p) -> (q', p') is 1
    flow = lambda z: jnp.concatenate(leapfrog(z[:2], z[2:], 0.05, 40))
    J = secant.jacfwd(flow)(jnp.concatenate([q0, p0]))
    np.testing.assert_allclose(np.linalg.det(J), 1.0, rtol=1e-10)
    # per-chain by vmap against a loop
    check_vmap(lambda q, p: leapfrog(q, p, 0.05, 10), (RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))))


def hmc_chain(key, q0, n_samples=30, step_size=0.2, n_steps=5):
    def one(carry, key):
        q = carry
        k_mom, k_acc = random.split(key)
        p = random.normal(k_mom, q.shape)
        q_new, p_new = leapfrog(q, p, step_size, n_steps)
        log_ratio = (log_density(q_new) - 0.5 * p_new @ p_new) - (log_density(q) - 0.5 * p @ p)
        accept = jnp.log(random.uniform(k_acc)) < log_ratio
        q = jnp.where(accept, q_new, q)
        return q, (q, accept)
    keys = random.split(key, n_samples)
    _, (qs, accepts) = lax.scan(one, q0, keys)
    return qs, accepts


def test_hmc_chain_scan_eager_equals_jit(x64):
    key = random.PRNGKey(0)
    qs, acc = hmc_chain(key, jnp.zeros(2))
    qs_j, acc_j = jit(hmc_chain)(key, jnp.zeros(2))
    np.testing.assert_allclose(qs_j, qs, rtol=1e-12)
    np.testing.assert_array_equal(acc_j, acc)
    assert 0.5 < float(jnp.mean(acc)) <= 1.0


# --- Laplace approximation -----------------------------------------------------------------------
X_LR = RNG.normal(size=(30, 2))
Y_LR = (X_LR @ np.array([1.0, -2.0]) + 0.3 * RNG.normal(size=30) > 0).astype(float)


def neg_log_post(w):
    logits = jnp.asarray(X_LR) @ w
    ll = jnp.sum(Y_LR * logits - jnp.logaddexp(0.0, logits))
    return -(ll - 0.5 * jnp.sum(w ** 2))


def laplace_log_evidence(w_map):
    H = hessian(neg_log_post)(w_map)
    sign, logdet = jnp.linalg.slogdet(H)
    d = w_map.shape[0]
    return -neg_log_post(w_map) + 0.5 * d * math.log(2 * math.pi) - 0.5 * logdet, sign


def test_laplace_approximation_newton_then_slogdet(x64):
    w = jnp.zeros(2)
    for _ in range(20):
        g = grad(neg_log_post)(w)
        H = hessian(neg_log_post)(w)
        w = w - jnp.linalg.solve(H, g)
    np.testing.assert_allclose(grad(neg_log_post)(w), 0.0, atol=1e-10)
    ev, sign = laplace_log_evidence(w)
    assert float(sign) == 1.0
    # the Hessian in closed form: X^T diag(s(1-s)) X + I
    s = 1 / (1 + np.exp(-X_LR @ np.asarray(w)))
    Hn = X_LR.T @ (X_LR * (s * (1 - s))[:, None]) + np.eye(2)
    want = -float(neg_log_post(w)) + math.log(2 * math.pi) - 0.5 * np.linalg.slogdet(Hn)[1]
    np.testing.assert_allclose(ev, want, rtol=1e-12)
    ev_j, _ = jit(laplace_log_evidence)(w)
    np.testing.assert_allclose(ev_j, ev, rtol=1e-12)
    # the evidence's gradient in w (third derivatives of the log posterior) against differences
    check_grad(lambda w: laplace_log_evidence(w)[0], np.asarray(w) + 0.1, rtol=1e-5)


# --- GP regression ------------------------------------------------------------------------------
def rbf(x1, x2, ell, sf):
    d2 = jnp.sum((x1[:, None, :] - x2[None, :, :]) ** 2, -1)
    return sf ** 2 * jnp.exp(-0.5 * d2 / ell ** 2)


def gp_nll(log_params, x, y):
    ell, sf, sn = jnp.exp(log_params)
    K = rbf(x, x, ell, sf) + (sn ** 2 + 1e-8) * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(K)
    alpha = jsl.cho_solve((L, True), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * x.shape[0] * math.log(2 * math.pi)


def gp_predict(log_params, x, y, xs):
    ell, sf, sn = jnp.exp(log_params)
    K = rbf(x, x, ell, sf) + sn ** 2 * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(K)
    Ks = rbf(x, xs, ell, sf)
    v = jsl.solve_triangular(L, Ks, lower=True)
    alpha = jsl.solve_triangular(L.T, jsl.solve_triangular(L, y, lower=True), lower=False)
    mean = Ks.T @ alpha
    var = sf ** 2 - jnp.sum(v ** 2, 0)
    return mean, var


def test_gp_regression_nll_and_prediction(x64):
    x = RNG.uniform(-2, 2, size=(8, 1))
    y = np.sin(2 * x[:, 0]) + 0.1 * RNG.normal(size=8)
    lp = np.log([0.7, 1.2, 0.2])
    K = 1.44 * np.exp(-0.5 * (x - x.T) ** 2 / 0.49) + (0.04 + 1e-8) * np.eye(8)
    want = 0.5 * y @ np.linalg.solve(K, y) + 0.5 * np.linalg.slogdet(K)[1] + 4 * np.log(2 * np.pi)
    np.testing.assert_allclose(gp_nll(jnp.asarray(lp), x, y), want, rtol=1e-10)
    check_grad(gp_nll, lp, x, y, rtol=1e-5)
    xs = np.linspace(-2, 2, 5)[:, None]
    mean, var = gp_predict(jnp.asarray(lp), x, y, xs)
    K0 = K - 1e-8 * np.eye(8)
    Ks = 1.44 * np.exp(-0.5 * (x - xs.T) ** 2 / 0.49)
    np.testing.assert_allclose(mean, Ks.T @ scipy.linalg.solve(K0, y), rtol=1e-9)
    np.testing.assert_allclose(var, 1.44 - np.sum(Ks * scipy.linalg.solve(K0, Ks), 0), rtol=1e-8)
    # the predictive mean at one point, differentiated in the point and in the hyperparameters
    f = lambda xq: gp_predict(jnp.asarray(lp), x, y, xq[None, None])[0][0]
    g = vmap(grad(f))(jnp.asarray(xs[:, 0]))
    fd = [fd_grad(f, (jnp.asarray(v),)) for v in xs[:, 0]]
    np.testing.assert_allclose(g, np.asarray(fd), rtol=1e-5, atol=1e-7)
    check_grad(lambda lp: gp_predict(lp, x, y, xs)[1].sum(), lp, rtol=1e-5)


# --- ODE by RK4 in a scan -----------------------------------------------------------------------
def lotka_volterra(z, t, theta):
    a, b, c, d = theta
    x, y = z[0], z[1]
    return jnp.stack([a * x - b * x * y, d * x * y - c * y])


def rk4(f, z0, ts, theta):
    def step(z, t_pair):
        t, t_next = t_pair
        h = t_next - t
        k1 = f(z, t, theta)
        k2 = f(z + h / 2 * k1, t + h / 2, theta)
        k3 = f(z + h / 2 * k2, t + h / 2, theta)
        k4 = f(z + h * k3, t + h, theta)
        z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return z, z
    _, zs = lax.scan(step, z0, (ts[:-1], ts[1:]))
    return jnp.concatenate([z0[None], zs])


def test_rk4_scan_lotka_volterra(x64):
    ts = jnp.linspace(0.0, 2.0, 41)
    theta = jnp.asarray([1.0, 0.5, 1.5, 0.7])
    z0 = jnp.asarray([1.0, 1.0])
    zs = jit(rk4, static_argnums=0)(lotka_volterra, z0, ts, theta)
    sol = scipy.integrate.solve_ivp(lambda t, z: [z[0] - 0.5 * z[0] * z[1], 0.7 * z[0] * z[1] - 1.5 * z[1]],
                                    (0, 2), [1.0, 1.0], t_eval=np.asarray(ts), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(zs, sol.y.T, rtol=1e-5, atol=1e-6)
    loss = lambda theta: jnp.sum((rk4(lotka_volterra, z0, ts, theta)[:, 0] - 1.0) ** 2)
    check_grad(loss, np.asarray(theta), rtol=1e-5)
    # the Jacobian of the final state in the initial state: jacfwd and jacrev agree
    final = lambda z0: rk4(lotka_volterra, z0, ts, theta)[-1]
    np.testing.assert_allclose(secant.jacfwd(final)(z0), secant.jacrev(final)(z0), rtol=1e-10)


import scipy.integrate  # noqa: E402  (used above; kept beside the ODE test)


# --- Ising / Metropolis --------------------------------------------------------------------------
def ising_energy(s, J=1.0):
    return -J * jnp.sum(s * (jnp.roll(s, 1, 0) + jnp.roll(s, 1, 1)))


def metropolis(key, spins, beta, n_sweeps):
    n = spins.shape[0]

    def flip(k, carry):
        spins, key = carry
        key, k_site, k_acc = random.split(key, 3)
        i, j = random.randint(k_site, (2,), 0, n)
        nb = spins[(i + 1) % n, j] + spins[(i - 1) % n, j] + spins[i, (j + 1) % n] + spins[i, (j - 1) % n]
        dE = 2.0 * spins[i, j] * nb
        accept = random.uniform(k_acc) < jnp.exp(-beta * dE)
        spins = spins.at[i, j].set(jnp.where(accept, -spins[i, j], spins[i, j]))
        return spins, key
    spins, _ = lax.fori_loop(0, n_sweeps * n * n, flip, (spins, key))
    return spins


def test_ising_metropolis_eager_equals_jit_and_orders_at_low_temperature(x64):
    key = random.PRNGKey(42)
    spins0 = jnp.where(random.uniform(random.PRNGKey(1), (6, 6)) < 0.5, -1.0, 1.0)
    eager = metropolis(key, spins0, 0.3, 2)
    jitted = jit(metropolis, static_argnums=3)(key, spins0, 0.3, 2)
    np.testing.assert_array_equal(eager, jitted)
    assert set(np.unique(np.asarray(eager))) <= {-1.0, 1.0}
    cold = jit(metropolis, static_argnums=3)(key, jnp.ones((6, 6)), 5.0, 3)
    np.testing.assert_allclose(jnp.mean(cold), 1.0)     # no flip is accepted at beta = 5
    # the energy change of a flip matches the energy function
    s = np.asarray(spins0)
    t = s.copy()
    t[2, 3] *= -1
    nb = s[3, 3] + s[1, 3] + s[2, 4] + s[2, 2]
    np.testing.assert_allclose(ising_energy(jnp.asarray(t)) - ising_energy(jnp.asarray(s)),
                               2 * s[2, 3] * nb)
    # chains by vmap over keys against a loop
    keys = random.split(key, 3)
    batched = vmap(lambda k: metropolis(k, spins0, 0.3, 1))(keys)
    for b, k in zip(batched, keys):
        np.testing.assert_array_equal(b, metropolis(k, spins0, 0.3, 1))

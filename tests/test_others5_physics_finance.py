"""Issue 15, code written by others (fifth round): physics and finance programs as users write
them with JAX: Lennard-Jones molecular dynamics in a periodic box (pairwise displacements by
broadcasting, the minimum image, a mask on the diagonal, forces as -grad(energy), velocity
Verlet in a scan), a 2-D spring network whose stiffness matrix is assembled by .at[].add and
equals the hessian of its energy (a compliance gradient for topology optimisation), SPH density
with a piecewise cubic-spline kernel, a Morse oscillator's frequency from hessian, a wave
equation by leapfrog; Black-Scholes greeks to second order by hessian, Monte Carlo pathwise
greeks with split keys, an Asian option by scan, implied volatility by Newton in a while_loop
(forward mode), bond duration and convexity, a Sharpe-ratio portfolio; each under the
transforms its author would use, checked against float64 finite differences, closed forms, a
Python loop and eager."""
import math

import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jit, jvp, lax, random, vmap
from secant.scipy.stats import norm

from others15_check import check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(5454)


# --- molecular dynamics ------------------------------------------------------------------------
BOX = 3.0


def lj_energy(pos, eps=1.0, sigma=1.0, box=BOX):
    d = pos[:, None, :] - pos[None, :, :]
    d = d - box * jnp.round(d / box)                   # minimum image
    n = pos.shape[0]
    mask = ~jnp.eye(n, dtype=bool)
    r2 = jnp.where(mask, jnp.sum(d ** 2, axis=-1), 1.0)   # (safe on the diagonal)
    s6 = (sigma ** 2 / r2) ** 3
    return 0.5 * jnp.sum(jnp.where(mask, 4 * eps * (s6 ** 2 - s6), 0.0))


def np_lj_energy(pos, eps=1.0, sigma=1.0, box=BOX):
    e = 0.0
    for i in range(len(pos)):
        for j in range(i + 1, len(pos)):
            d = pos[i] - pos[j]
            d -= box * np.round(d / box)
            s6 = (sigma ** 2 / (d @ d)) ** 3
            e += 4 * eps * (s6 ** 2 - s6)
    return e


def lattice(rng, jitter=0.05):
    g = np.stack(np.meshgrid(np.arange(2), np.arange(2), np.arange(2)), -1).reshape(-1, 3)
    return g * 1.5 + 0.2 + jitter * rng.normal(size=g.shape)


def velocity_verlet(pos, vel, eps, dt=0.002, steps=10):
    force = lambda p: -grad(lj_energy)(p, eps)

    def step(state, _):
        p, v, f = state
        v = v + 0.5 * dt * f
        p = p + dt * v
        f = force(p)
        v = v + 0.5 * dt * f
        return (p, v, f), lj_energy(p, eps) + 0.5 * jnp.sum(v ** 2)

    (p, v, _), energies = lax.scan(step, (pos, vel, force(pos)), None, length=steps)
    return p, v, energies


def test_lennard_jones_periodic_md(x64):
    pos = lattice(RNG)
    np.testing.assert_allclose(lj_energy(to_snp(pos)), np_lj_energy(pos), rtol=1e-12)
    check_grad(lj_energy, pos, rtol=1e-5, atol=1e-6)
    vel = RNG.normal(size=pos.shape) * 0.1
    p, v, energies = velocity_verlet(to_snp(pos), to_snp(vel), 1.0)
    assert np.ptp(np.asarray(energies)) < 1e-3 * abs(float(energies[0]))
    np.testing.assert_allclose(jit(velocity_verlet)(to_snp(pos), to_snp(vel), 1.0)[0], p,
                               rtol=1e-10)
    # sensitivity of the final kinetic energy to the well depth and the start
    ke = lambda eps, pos: jnp.sum(velocity_verlet(pos, to_snp(vel), eps, steps=4)[1] ** 2)
    check_grad(ke, np.array(1.0), pos, rtol=1e-5)
    # replicas by vmap against a loop
    check_vmap(lj_energy, (np.stack([lattice(RNG) for _ in range(3)]),))


# --- spring networks ---------------------------------------------------------------------------
NODES = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])
EDGES = np.array([[0, 1], [1, 2], [3, 4], [4, 5], [0, 3], [1, 4], [2, 5], [0, 4], [1, 5],
                  [1, 3], [2, 4]])
FIXED = np.array([0, 1, 6, 7])           # nodes 0 and 3 clamped (x and y)


def stiffness(k):
    d = NODES[EDGES[:, 1]] - NODES[EDGES[:, 0]]
    length = np.linalg.norm(d, axis=1)
    c = d / length[:, None]
    local = k[:, None, None] / length[:, None, None] * jnp.asarray(
        np.einsum("ei,ej->eij", c, c))                          # (E, 2, 2)
    block = jnp.concatenate([jnp.concatenate([local, -local], 2),
                             jnp.concatenate([-local, local], 2)], 1)   # (E, 4, 4)
    dofs = np.stack([2 * EDGES[:, 0], 2 * EDGES[:, 0] + 1, 2 * EDGES[:, 1],
                     2 * EDGES[:, 1] + 1], 1)
    big = jnp.zeros((2 * len(NODES), 2 * len(NODES)))
    return big.at[dofs[:, :, None], dofs[:, None, :]].add(block)


def spring_energy(u, k):
    x = NODES + u.reshape(-1, 2)
    d = x[EDGES[:, 1]] - x[EDGES[:, 0]]
    rest = np.linalg.norm(NODES[EDGES[:, 1]] - NODES[EDGES[:, 0]], axis=1)
    return 0.5 * jnp.sum(k / rest * (jnp.linalg.norm(d, axis=1) - rest) ** 2)


def compliance(k, load):
    free = np.setdiff1d(np.arange(2 * len(NODES)), FIXED)
    kk = stiffness(k)[free[:, None], free[None, :]]
    u = jnp.linalg.solve(kk, load[free])
    return load[free] @ u


def test_spring_network_assembly_and_compliance(x64):
    k = 1.0 + 0.3 * RNG.uniform(size=len(EDGES))
    # the scatter-added stiffness is the hessian of the energy at rest
    h = hessian(spring_energy)(jnp.zeros(2 * len(NODES)), to_snp(k))
    np.testing.assert_allclose(stiffness(to_snp(k)), h, rtol=1e-10, atol=1e-12)
    load = np.zeros(12)
    load[[5, 11]] = -1.0
    check_grad(compliance, k, load)
    # compliance is homogeneous of degree -1 in the stiffnesses: k . dC/dk = -C
    g = grad(compliance)(to_snp(k), to_snp(load))
    np.testing.assert_allclose(g @ k, -compliance(to_snp(k), to_snp(load)), rtol=1e-10)
    check_vmap(lambda k: compliance(k, to_snp(load)), (1.0 + 0.3 * RNG.uniform(size=(3, 11)),))


# --- SPH ---------------------------------------------------------------------------------------
def cubic_spline(r, h):
    q = r / h
    sigma = 10.0 / (7.0 * jnp.pi * h ** 2)
    return sigma * jnp.where(q < 1.0, 1 - 1.5 * q ** 2 + 0.75 * q ** 3,
                             jnp.where(q < 2.0, 0.25 * jnp.maximum(2.0 - q, 0.0) ** 3, 0.0))


def sph_density(pos, mass, h=0.5):
    d = pos[:, None, :] - pos[None, :, :]
    r = jnp.sqrt(jnp.sum(d ** 2, axis=-1) + 1e-12)
    return jnp.sum(mass[None, :] * cubic_spline(r, h), axis=1)


def test_sph_density_and_pressure_gradient(x64):
    pos = RNG.uniform(0, 1.2, size=(7, 2))
    mass = RNG.uniform(0.5, 1.0, size=7)
    rho = sph_density(to_snp(pos), to_snp(mass))
    for i in range(7):
        want = 0.0
        for j in range(7):
            q = np.sqrt(np.sum((pos[i] - pos[j]) ** 2) + 1e-12) / 0.5
            w = 1 - 1.5 * q ** 2 + 0.75 * q ** 3 if q < 1 else (0.25 * (2 - q) ** 3 if q < 2 else 0)
            want += mass[j] * 10 / (7 * np.pi * 0.25) * w
        np.testing.assert_allclose(rho[i], want, rtol=1e-10)
    pressure_energy = lambda pos: jnp.sum((sph_density(pos, to_snp(mass)) - 1.0) ** 2)
    check_grad(pressure_energy, pos, rtol=1e-5, atol=1e-6)
    check_grad(lambda h: jnp.sum(sph_density(to_snp(pos), to_snp(mass), h)), np.array(0.5))
    check_vmap(lambda p: sph_density(p, to_snp(mass)), (RNG.uniform(0, 1.2, size=(3, 7, 2)),))


def morse(r, d_e=2.0, a=1.3, r_e=1.1):
    return d_e * (1 - jnp.exp(-a * (r - r_e))) ** 2


def test_morse_oscillator_frequency(x64):
    # the curvature at the minimum is 2 D a^2, for every parameter set (vmap of hessian)
    ps = np.array([[2.0, 1.3, 1.1], [1.0, 0.7, 0.9], [4.0, 2.0, 1.5]])
    k = vmap(lambda p: hessian(morse)(p[2], p[0], p[1], p[2]))(to_snp(ps))
    np.testing.assert_allclose(k, 2 * ps[:, 0] * ps[:, 1] ** 2, rtol=1e-12)
    # third derivative (anharmonicity) -6 D a^3 at the minimum
    d3 = grad(grad(grad(morse)))(1.1)
    np.testing.assert_allclose(d3, -6 * 2.0 * 1.3 ** 3, rtol=1e-10)
    np.testing.assert_allclose(jit(grad(grad(grad(morse))))(1.1), d3, rtol=1e-12)


def wave_leapfrog(u0, c=1.0, dx=0.1, dt=0.05, steps=20):
    lap = lambda u: (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)) / dx ** 2
    u_prev = u0
    u = u0 + 0.5 * (c * dt) ** 2 * lap(u0)
    for _ in range(steps - 1):
        u, u_prev = 2 * u - u_prev + (c * dt) ** 2 * lap(u), u
    return u


def test_wave_equation_leapfrog(x64):
    x = np.arange(20) * 0.1
    u0 = np.exp(-20 * (x - 1.0) ** 2)
    u = wave_leapfrog(to_snp(u0))
    # linear in the initial condition: the jvp is the map itself
    t = RNG.normal(size=20)
    out, tan = jvp(wave_leapfrog, (to_snp(u0),), (to_snp(t),))
    np.testing.assert_allclose(out, u, rtol=1e-12)
    np.testing.assert_allclose(tan, wave_leapfrog(to_snp(t)), rtol=1e-10, atol=1e-12)
    # periodic: mass is conserved
    np.testing.assert_allclose(np.sum(u), np.sum(u0), rtol=1e-10)
    check_grad(lambda c: jnp.sum(wave_leapfrog(to_snp(u0), c) ** 2), np.array(1.0))


# --- finance -----------------------------------------------------------------------------------
def black_scholes(s, k, t, r, sigma):
    d1 = (jnp.log(s / k) + (r + 0.5 * sigma ** 2) * t) / (sigma * jnp.sqrt(t))
    d2 = d1 - sigma * jnp.sqrt(t)
    return s * norm.cdf(d1) - k * jnp.exp(-r * t) * norm.cdf(d2)


def test_black_scholes_second_order_greeks(x64):
    s, k, t, r, sigma = 100.0, 95.0, 0.75, 0.02, 0.3
    d1 = (np.log(s / k) + (r + 0.5 * sigma ** 2) * t) / (sigma * np.sqrt(t))
    d2 = d1 - sigma * np.sqrt(t)
    pdf = np.exp(-0.5 * d1 ** 2) / np.sqrt(2 * np.pi)
    price = lambda sv: black_scholes(sv[0], k, t, r, sv[1])
    h = hessian(price)(jnp.array([s, sigma]))
    gamma = pdf / (s * sigma * np.sqrt(t))
    vanna = -pdf * d2 / sigma
    volga = s * pdf * np.sqrt(t) * d1 * d2 / sigma
    np.testing.assert_allclose(h, [[gamma, vanna], [vanna, volga]], rtol=1e-9)
    np.testing.assert_allclose(jit(hessian(price))(jnp.array([s, sigma])), h, rtol=1e-10)
    # delta across a strip of strikes by vmap of grad
    ks = np.array([80.0, 95.0, 110.0])
    deltas = vmap(grad(black_scholes), in_axes=(None, 0, None, None, None))(s, to_snp(ks), t, r,
                                                                            sigma)
    want = [0.5 * (1 + math.erf(((np.log(s / kk) + (r + 0.5 * sigma ** 2) * t)
                                    / (sigma * np.sqrt(t))) / np.sqrt(2))) for kk in ks]
    np.testing.assert_allclose(deltas, want, rtol=1e-10)
    # theta: -dV/dt, by grad in the time argument
    theta = -grad(black_scholes, argnums=2)(s, k, t, r, sigma)
    want = -s * pdf * sigma / (2 * np.sqrt(t)) - r * k * np.exp(-r * t) * 0.5 * (
        1 + math.erf(d2 / np.sqrt(2)))
    np.testing.assert_allclose(theta, want, rtol=1e-9)


def mc_call(s0, sigma, key, k=100.0, r=0.01, t=1.0, n_paths=4000):
    z = random.normal(key, (n_paths,))
    s_t = s0 * jnp.exp((r - 0.5 * sigma ** 2) * t + sigma * jnp.sqrt(t) * z)
    return jnp.exp(-r * t) * jnp.mean(jnp.maximum(s_t - k, 0.0))


def test_monte_carlo_pathwise_greeks(x64):
    key = random.PRNGKey(0)
    keys = random.split(key, 4)
    # the pathwise delta and vega with fixed keys are derivatives of the estimator itself
    check_grad(lambda sv: mc_call(sv[0], sv[1], keys[0], n_paths=500), np.array([100.0, 0.2]),
               rtol=1e-5, atol=1e-6)
    # averaged over split keys they approach Black-Scholes
    delta = jnp.mean(vmap(grad(mc_call), in_axes=(None, None, 0))(100.0, 0.2, keys))
    bs_delta = grad(black_scholes)(100.0, 100.0, 1.0, 0.01, 0.2)
    assert abs(float(delta) - float(bs_delta)) < 0.02
    check_vmap(lambda k: mc_call(100.0, 0.2, k, n_paths=300), (keys,))


def asian_call(s0, sigma, key, k=100.0, r=0.01, dt=1 / 12, steps=12, n_paths=200):
    z = random.normal(key, (steps, n_paths))

    def step(s, z):
        s = s * jnp.exp((r - 0.5 * sigma ** 2) * dt + sigma * jnp.sqrt(dt) * z)
        return s, s

    _, path = lax.scan(step, jnp.full(n_paths, s0), z)
    return jnp.exp(-r * dt * steps) * jnp.mean(jnp.maximum(jnp.mean(path, axis=0) - k, 0.0))


def test_asian_option_by_scan(x64):
    key = random.PRNGKey(5)
    check_grad(lambda sv: asian_call(sv[0], sv[1], key), np.array([100.0, 0.25]), rtol=1e-5,
               atol=1e-6)
    # the scan against a Python loop over months
    z = np.asarray(random.normal(key, (12, 200)))
    s = np.full(200, 100.0)
    total = np.zeros(200)
    for m in range(12):
        s = s * np.exp((0.01 - 0.5 * 0.25 ** 2) / 12 + 0.25 * np.sqrt(1 / 12) * z[m])
        total += s
    want = np.exp(-0.01) * np.mean(np.maximum(total / 12 - 100.0, 0.0))
    np.testing.assert_allclose(asian_call(100.0, 0.25, key), want, rtol=1e-10)


def implied_vol(price, s, k, t, r):
    def cond(state):
        sigma, i = state
        return (jnp.abs(black_scholes(s, k, t, r, sigma) - price) > 1e-13) & (i < 50)

    def body(state):
        sigma, i = state
        f = black_scholes(s, k, t, r, sigma) - price
        vega = grad(black_scholes, argnums=4)(s, k, t, r, sigma)
        return sigma - f / vega, i + 1

    return lax.while_loop(cond, body, (jnp.asarray(0.3), 0))[0]


def test_implied_volatility_newton_while_loop(x64):
    price = black_scholes(100.0, 105.0, 0.5, 0.01, 0.27)
    iv = implied_vol(price, 100.0, 105.0, 0.5, 0.01)
    np.testing.assert_allclose(iv, 0.27, rtol=1e-10)
    # forward mode through the while loop: d sigma / d price = 1 / vega
    vega = grad(black_scholes, argnums=4)(100.0, 105.0, 0.5, 0.01, 0.27)
    d = jacfwd(implied_vol)(price, 100.0, 105.0, 0.5, 0.01)
    np.testing.assert_allclose(d, 1.0 / vega, rtol=1e-6)
    prices = vmap(black_scholes, in_axes=(None, None, None, None, 0))(
        100.0, 105.0, 0.5, 0.01, jnp.array([0.15, 0.3, 0.6]))
    ivs = vmap(implied_vol, in_axes=(0, None, None, None, None))(prices, 100.0, 105.0, 0.5, 0.01)
    np.testing.assert_allclose(ivs, [0.15, 0.3, 0.6], rtol=1e-9)


def bond_price(y, coupons, times):
    return jnp.sum(coupons * jnp.exp(-y * times))


def test_bond_duration_and_convexity(x64):
    times = np.arange(1.0, 6.0)
    coupons = np.array([5.0, 5.0, 5.0, 5.0, 105.0])
    y = 0.04
    p = bond_price(y, to_snp(coupons), to_snp(times))
    w = coupons * np.exp(-y * times)
    duration = -grad(bond_price)(y, to_snp(coupons), to_snp(times)) / p
    convexity = hessian(bond_price)(y, to_snp(coupons), to_snp(times)) / p
    np.testing.assert_allclose(duration, (w * times).sum() / w.sum(), rtol=1e-12)
    np.testing.assert_allclose(convexity, (w * times ** 2).sum() / w.sum(), rtol=1e-12)
    # key-rate sensitivities: the gradient in the coupons is the discount factors
    np.testing.assert_allclose(grad(bond_price, argnums=1)(y, to_snp(coupons), to_snp(times)),
                               np.exp(-y * times), rtol=1e-12)


def sharpe(logits, mu, cov, rf=0.01):
    w = jnp.exp(logits - jnp.max(logits))
    w = w / jnp.sum(w)
    return (w @ mu - rf) / jnp.sqrt(w @ cov @ w)


def test_sharpe_ratio_portfolio(x64):
    mu = np.array([0.05, 0.08, 0.03, 0.06])
    a = RNG.normal(size=(4, 4)) * 0.1
    cov = a @ a.T + 0.01 * np.eye(4)
    logits = RNG.normal(size=4) * 0.2
    check_grad(sharpe, logits, mu, cov)
    check_grad(sharpe, logits, mu, cov, argnum=2)
    h = hessian(sharpe)(to_snp(logits), to_snp(mu), to_snp(cov))
    fd = np.stack([fd_grad(lambda l: grad(sharpe)(l, to_snp(mu), to_snp(cov))[i],
                           (to_snp(logits),)) for i in range(4)])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-7)
    # invariant to shifting all logits: the gradient sums to zero
    np.testing.assert_allclose(np.sum(grad(sharpe)(to_snp(logits), to_snp(mu), to_snp(cov))),
                               0.0, atol=1e-12)

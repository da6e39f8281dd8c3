"""Issue 15, code written by others (ninth round): scientific scripts. Fermat's principle gives
Snell's law (the optimal crossing point's gradient is zero exactly where sines match), the heat
capacity of a two-level system as a second derivative of log Z, projectile range with drag by
Euler steps in fori_loop and its launch-angle gradient, a Weibull maximum-likelihood fit with the
observed Fisher information, a 1-D Poisson problem solved by jnp.linalg.solve with the adjoint
gradient of its compliance, a neo-Hookean triangle energy whose forces are -grad (vmapped over
triangles), an SEIR epidemic by scan and its sensitivity to beta, a Michaelis-Menten Gauss-Newton
fit through jacfwd, and a Lorenz trajectory's forward sensitivity by jvp. Checked against closed
forms, float64 central differences, SciPy and a Python loop."""
import math

import numpy as np
import scipy.stats

import secant
import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jit, jvp, lax, vmap

from others15_check import check_grad, check_vmap

RNG = np.random.default_rng(2909)


# --- Fermat's principle and Snell's law ----------------------------------------------------------
def travel_time(x, a=(0.0, 1.0), b=(2.0, -1.5), v1=1.0, v2=0.6):
    d1 = jnp.sqrt((x - a[0]) ** 2 + a[1] ** 2)
    d2 = jnp.sqrt((b[0] - x) ** 2 + b[1] ** 2)
    return d1 / v1 + d2 / v2


def fastest_crossing(steps=40):
    x = 1.0
    for _ in range(steps):
        x = x - grad(travel_time)(x) / grad(grad(travel_time))(x)
    return x


def test_fermat_principle_gives_snells_law(x64):
    x = float(fastest_crossing())
    sin1 = x / math.hypot(x, 1.0)
    sin2 = (2.0 - x) / math.hypot(2.0 - x, 1.5)
    np.testing.assert_allclose(sin1 / 1.0, sin2 / 0.6, rtol=1e-12)
    np.testing.assert_allclose(jit(grad(travel_time))(x), 0, atol=1e-12)
    # the gradient at other points against differences, batched over points
    xs = jnp.asarray([0.2, 0.9, 1.7])
    fd = [(float(travel_time(t + 1e-6)) - float(travel_time(t - 1e-6))) / 2e-6 for t in xs]
    np.testing.assert_allclose(vmap(grad(travel_time))(xs), fd, rtol=1e-7)


# --- heat capacity of a two-level system ----------------------------------------------------------
def log_partition(beta, levels):
    return jnp.log(jnp.sum(jnp.exp(-beta * levels)))


def heat_capacity(temperature, levels):
    beta = 1.0 / temperature
    return beta ** 2 * grad(grad(log_partition))(beta, levels)


def test_two_level_heat_capacity(x64):
    levels = jnp.asarray([0.0, 1.0])
    ts = np.array([0.2, 0.5, 1.0, 3.0])
    x = 1.0 / ts
    want = x ** 2 * np.exp(x) / (1 + np.exp(x)) ** 2         # the Schottky anomaly
    np.testing.assert_allclose(vmap(heat_capacity, in_axes=(0, None))(jnp.asarray(ts), levels),
                               want, rtol=1e-10)
    np.testing.assert_allclose([float(jit(heat_capacity)(t, levels)) for t in ts], want,
                               rtol=1e-10)
    # the mean energy is -dlogZ/dbeta; its variance the second derivative
    e = RNG.normal(size=5)
    beta = 0.7
    p = np.exp(-beta * e) / np.exp(-beta * e).sum()
    np.testing.assert_allclose(-grad(log_partition)(beta, jnp.asarray(e)), p @ e, rtol=1e-12)
    np.testing.assert_allclose(hessian(log_partition)(beta, jnp.asarray(e)),
                               p @ e ** 2 - (p @ e) ** 2, rtol=1e-10)
    # dC/dT by grad of the function holding a grad
    check_grad(lambda t: heat_capacity(t, levels), 0.6)


# --- projectile with drag ------------------------------------------------------------------------
def projectile_range(angle, speed=20.0, drag=0.05, dt=0.01, steps=400):
    def step(i, state):
        x, y, vx, vy = state
        v = jnp.sqrt(vx ** 2 + vy ** 2)
        ax, ay = -drag * v * vx, -9.81 - drag * v * vy
        return x + dt * vx, y + dt * vy, vx + dt * ax, vy + dt * ay
    init = (0.0, 0.0, speed * jnp.cos(angle), speed * jnp.sin(angle))
    x, y, _, _ = lax.fori_loop(0, steps, step, init)
    return x


def projectile_range_loop(angle, speed=20.0, drag=0.05, dt=0.01, steps=400):
    x, y, vx, vy = 0.0, 0.0, speed * math.cos(angle), speed * math.sin(angle)
    for _ in range(steps):
        v = math.hypot(vx, vy)
        ax, ay = -drag * v * vx, -9.81 - drag * v * vy
        x, y, vx, vy = x + dt * vx, y + dt * vy, vx + dt * ax, vy + dt * ay
    return x


def test_projectile_with_drag(x64):
    for angle in (0.3, 0.6):
        np.testing.assert_allclose(projectile_range(angle), projectile_range_loop(angle),
                                   rtol=1e-12)
        fd = (projectile_range_loop(angle + 1e-6) - projectile_range_loop(angle - 1e-6)) / 2e-6
        np.testing.assert_allclose(grad(projectile_range)(angle), fd, rtol=1e-6)
        np.testing.assert_allclose(jit(grad(projectile_range))(angle), fd, rtol=1e-6)
    # the drag coefficient's sensitivity, batched over launch angles
    angles = jnp.asarray([0.3, 0.5, 0.7])
    got = vmap(grad(projectile_range, argnums=2))(angles, 20.0 * jnp.ones(3), 0.05 * jnp.ones(3))
    fd = [(projectile_range_loop(a, drag=0.05 + 1e-6) - projectile_range_loop(a, drag=0.05 - 1e-6))
          / 2e-6 for a in (0.3, 0.5, 0.7)]
    np.testing.assert_allclose(got, fd, rtol=1e-6)


# --- a Weibull maximum-likelihood fit ---------------------------------------------------------------
def weibull_nll(log_params, data):
    k, lam = jnp.exp(log_params[0]), jnp.exp(log_params[1])
    z = data / lam
    return -jnp.sum(jnp.log(k / lam) + (k - 1) * jnp.log(z) - z ** k)


def test_weibull_mle_and_fisher(x64):
    data = scipy.stats.weibull_min.rvs(1.7, scale=2.0, size=60, random_state=5)
    lp = np.log([1.7, 2.0])
    np.testing.assert_allclose(weibull_nll(jnp.asarray(lp), data),
                               -scipy.stats.weibull_min.logpdf(data, 1.7, scale=2.0).sum(),
                               rtol=1e-12)
    check_grad(weibull_nll, lp, data)
    # Newton on the log parameters, against scipy's fit
    theta = jnp.asarray(np.log([1.5, 1.8]))       # (from k = lam = 1 plain Newton overshoots)
    step = jit(lambda t: t - jnp.linalg.solve(hessian(weibull_nll)(t, data),
                                              grad(weibull_nll)(t, data)))
    for _ in range(30):
        theta = step(theta)
    k, _, lam = scipy.stats.weibull_min.fit(data, floc=0)
    np.testing.assert_allclose(np.exp(theta), [k, lam], rtol=1e-4)     # (scipy stops sooner)
    np.testing.assert_allclose(grad(weibull_nll)(theta, data), 0, atol=1e-8)
    h = hessian(weibull_nll)(theta, data)
    assert np.all(np.linalg.eigvalsh(np.asarray(h)) > 0)
    np.testing.assert_allclose(h, jacfwd(grad(weibull_nll))(theta, data), rtol=1e-10)


# --- a 1-D Poisson problem: adjoint gradient of the compliance -------------------------------------
def stiffness(conductivity):
    k = conductivity
    main = k[:-1] + k[1:]
    return jnp.diag(main) - jnp.diag(k[1:-1], 1) - jnp.diag(k[1:-1], -1)


def compliance(conductivity, load):
    u = jnp.linalg.solve(stiffness(conductivity), load)
    return load @ u


def test_poisson_compliance_adjoint_gradient(x64):
    n = 6
    k = RNG.uniform(0.5, 2.0, size=n + 1)
    f = RNG.normal(size=n)
    a = np.diag(k[:-1] + k[1:]) - np.diag(k[1:-1], 1) - np.diag(k[1:-1], -1)
    u = np.linalg.solve(a, f)
    np.testing.assert_allclose(compliance(jnp.asarray(k), f), f @ u, rtol=1e-12)
    # dC/dk_e = -(jump of u across element e)^2, with u = 0 at both ends
    ue = np.concatenate([[0.0], u, [0.0]])
    want = -np.diff(ue) ** 2
    g = check_grad(compliance, k, f)
    np.testing.assert_allclose(g, want, rtol=1e-10)
    np.testing.assert_allclose(grad(compliance, argnums=1)(jnp.asarray(k), jnp.asarray(f)),
                               2 * u, rtol=1e-10)
    check_vmap(compliance, (RNG.uniform(0.5, 2.0, size=(3, n + 1)), f), in_axes=(0, None))


# --- neo-Hookean triangles: forces are -grad ---------------------------------------------------------
def triangle_energy(x, rest_inv, area, mu=1.0, lam=2.0):
    ds = jnp.stack([x[1] - x[0], x[2] - x[0]], axis=1)
    f = ds @ rest_inv
    j = jnp.linalg.det(f)
    ic = jnp.sum(f ** 2)
    return area * (0.5 * mu * (ic - 2) - mu * jnp.log(j) + 0.5 * lam * jnp.log(j) ** 2)


def test_neo_hookean_forces_vmapped_over_triangles(x64):
    rest = RNG.normal(size=(4, 3, 2)) * 0.3 + np.array([[0, 0], [1, 0], [0, 1]])
    dm = np.stack([np.stack([r[1] - r[0], r[2] - r[0]], axis=1) for r in rest])
    rest_inv = np.linalg.inv(dm)
    area = 0.5 * np.abs(np.linalg.det(dm))
    # undeformed: zero energy, zero force
    np.testing.assert_allclose(vmap(triangle_energy)(jnp.asarray(rest), rest_inv, area), 0,
                               atol=1e-12)
    np.testing.assert_allclose(vmap(grad(triangle_energy))(jnp.asarray(rest), rest_inv, area), 0,
                               atol=1e-12)
    x = rest + RNG.normal(size=rest.shape) * 0.05
    forces = jit(vmap(lambda *a: -grad(triangle_energy)(*a)))(jnp.asarray(x), rest_inv, area)
    for t in range(4):
        g = check_grad(triangle_energy, x[t], rest_inv[t], area[t])
        np.testing.assert_allclose(forces[t], -np.asarray(g), rtol=1e-10)
    # net force and torque vanish (translation and rotation invariance)
    np.testing.assert_allclose(np.sum(forces, axis=1), 0, atol=1e-12)
    h = hessian(triangle_energy)(jnp.asarray(x[0]), rest_inv[0], area[0]).reshape(6, 6)
    np.testing.assert_allclose(h, np.asarray(h).T, atol=1e-10)


# --- an SEIR epidemic by scan ----------------------------------------------------------------------------
def seir(beta, sigma=0.2, gamma=0.1, days=60, dt=0.5):
    def step(state, _):
        s, e, i, r = state
        new_e = beta * s * i * dt
        new_i = sigma * e * dt
        new_r = gamma * i * dt
        state = (s - new_e, e + new_e - new_i, i + new_i - new_r, r + new_r)
        return state, state[2]
    _, infected = lax.scan(step, (0.99, 0.0, 0.01, 0.0), None, length=int(days / dt))
    return infected


def seir_loop(beta, sigma=0.2, gamma=0.1, days=60, dt=0.5):
    s, e, i, r = 0.99, 0.0, 0.01, 0.0
    out = []
    for _ in range(int(days / dt)):
        new_e, new_i, new_r = beta * s * i * dt, sigma * e * dt, gamma * i * dt
        s, e, i, r = s - new_e, e + new_e - new_i, i + new_i - new_r, r + new_r
        out.append(i)
    return np.array(out)


def test_seir_scan_sensitivity_to_beta(x64):
    np.testing.assert_allclose(seir(0.5), seir_loop(0.5), rtol=1e-12)
    np.testing.assert_allclose(jit(seir)(0.5), seir_loop(0.5), rtol=1e-12)
    peak = lambda b: jnp.max(seir(b))
    fd = (seir_loop(0.5 + 1e-6).max() - seir_loop(0.5 - 1e-6).max()) / 2e-6
    np.testing.assert_allclose(grad(peak)(0.5), fd, rtol=1e-5)
    # the whole infected curve's forward sensitivity equals jacfwd's column
    _, t = jvp(seir, (0.5,), (1.0,))
    fd_curve = (seir_loop(0.5 + 1e-6) - seir_loop(0.5 - 1e-6)) / 2e-6
    np.testing.assert_allclose(t, fd_curve, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(jacfwd(seir)(0.5), fd_curve, rtol=1e-5, atol=1e-9)
    betas = np.array([0.3, 0.5, 0.8])
    np.testing.assert_allclose(vmap(seir)(jnp.asarray(betas)), np.stack([seir_loop(b)
                                                                          for b in betas]),
                               rtol=1e-12)


# --- Michaelis-Menten by Gauss-Newton ---------------------------------------------------------------------
def mm_rate(params, s):
    vmax, km = params
    return vmax * s / (km + s)


def gauss_newton(params, s, v, steps=20):
    resid = lambda p: mm_rate(p, s) - v
    for _ in range(steps):
        j = jacfwd(resid)(params)
        params = params - jnp.linalg.solve(j.T @ j, j.T @ resid(params))
    return params


def test_michaelis_menten_gauss_newton(x64):
    s = np.array([0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
    true = np.array([3.0, 2.5])
    v = true[0] * s / (true[1] + s) + RNG.normal(size=6) * 0.01
    fit = gauss_newton(jnp.asarray([1.0, 1.0]), s, v)
    import scipy.optimize
    ref, _ = scipy.optimize.curve_fit(lambda s, a, b: a * s / (b + s), s, v, p0=[1.0, 1.0])
    np.testing.assert_allclose(fit, ref, rtol=1e-6)
    np.testing.assert_allclose(jit(gauss_newton, static_argnums=3)(jnp.asarray([1.0, 1.0]), s, v, 20),
                               fit, rtol=1e-10)
    # the fitted vmax's sensitivity to one measurement, by differentiating through the solver
    dfit = jacfwd(lambda v: gauss_newton(jnp.asarray([1.0, 1.0]), s, v))(jnp.asarray(v))
    e = np.eye(6)[2] * 1e-6
    fd = (np.asarray(gauss_newton(jnp.asarray([1.0, 1.0]), s, v + e))
          - np.asarray(gauss_newton(jnp.asarray([1.0, 1.0]), s, v - e))) / 2e-6
    np.testing.assert_allclose(dfit[:, 2], fd, rtol=1e-5)


# --- a Lorenz trajectory's forward sensitivity ----------------------------------------------------------
def lorenz_step(state, sigma, rho, beta, dt):
    x, y, z = state[0], state[1], state[2]
    d = jnp.stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])
    return state + dt * d


def lorenz_final(state, rho, steps=200):
    for _ in range(steps):
        state = lorenz_step(state, 10.0, rho, 8.0 / 3.0, 0.005)
    return state


def test_lorenz_forward_sensitivity(x64):
    s0 = jnp.asarray([1.0, 1.0, 1.0])
    rho = 28.0
    _, t = jvp(lambda r: lorenz_final(s0, r), (rho,), (1.0,))
    fd = (np.asarray(lorenz_final(s0, rho + 1e-6)) - np.asarray(lorenz_final(s0, rho - 1e-6))) / 2e-6
    np.testing.assert_allclose(t, fd, rtol=1e-5)
    np.testing.assert_allclose(jacrev_col := secant.jacrev(lorenz_final, argnums=1)(s0, rho), fd,
                               rtol=1e-5)
    assert jacrev_col.shape == (3,)
    jac = jit(jacfwd(lorenz_final))(s0, rho)
    np.testing.assert_allclose(jac, secant.jacrev(lorenz_final)(s0, rho), rtol=1e-8)
    check_vmap(lambda s: lorenz_final(s, rho, 50), (RNG.normal(size=(3, 3)),))

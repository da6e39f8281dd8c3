"""Issue 15, code written by others (fifth round): scientific machine learning as users write it
with JAX: PINN losses whose residuals take grad of grad / jacfwd of a network inside the loss
(heat and Burgers equations, a Dirichlet boundary term), a Deep Ritz energy, Sobolev training on
values and slopes, a Hamiltonian neural network (grad of a learned H) rolled out by leapfrog in
a scan, a Lagrangian neural network (hessian and jacfwd of a learned L), a divergence-free field
as the curl of a learned potential, and a neural ODE integrated with fori_loop; each under the
transforms its author would use, checked against float64 finite differences, closed forms, a
Python loop and eager."""
import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, lax, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_jvp, to_snp

RNG = np.random.default_rng(5151)


def init_mlp(sizes, rng):
    return [(rng.normal(size=(m, n)) / np.sqrt(m), 0.1 * rng.normal(size=n))
            for m, n in zip(sizes[:-1], sizes[1:])]


def mlp(params, x):
    *hidden, (w_out, b_out) = params
    h = x
    for w, b in hidden:
        h = jnp.tanh(h @ w + b)
    return h @ w_out + b_out


# --- PINNs -------------------------------------------------------------------------------------
def u_heat(params, t, x):
    return mlp(params, jnp.stack([t, x]))[0]


def heat_residual(params, t, x, kappa=0.4):
    u_t = grad(u_heat, argnums=1)(params, t, x)
    u_xx = grad(grad(u_heat, argnums=2), argnums=2)(params, t, x)
    return u_t - kappa * u_xx


def heat_loss(params, ts, xs, xb):
    interior = vmap(heat_residual, in_axes=(None, 0, 0))(params, ts, xs)
    # boundary: u(0, x) = sin(pi x)
    boundary = vmap(u_heat, in_axes=(None, None, 0))(params, 0.0, xb) - jnp.sin(jnp.pi * xb)
    return jnp.mean(interior ** 2) + jnp.mean(boundary ** 2)


def test_pinn_heat_equation_loss(x64):
    params = init_mlp([2, 5, 5, 1], RNG)
    ts, xs, xb = RNG.uniform(size=6), RNG.uniform(size=6), RNG.uniform(size=4)
    p = to_snp(params)
    # the residual at one point against finite differences of the network itself
    h = 1e-4
    t0, x0 = 0.3, 0.6
    u = lambda t, x: float(u_heat(p, jnp.asarray(t), jnp.asarray(x)))
    u_t = (u(t0 + h, x0) - u(t0 - h, x0)) / (2 * h)
    u_xx = (u(t0, x0 + h) - 2 * u(t0, x0) + u(t0, x0 - h)) / h ** 2
    np.testing.assert_allclose(heat_residual(p, t0, x0), u_t - 0.4 * u_xx, rtol=1e-5, atol=1e-6)
    check_grad(heat_loss, params, ts, xs, xb, rtol=1e-5, atol=1e-7)


def burgers_residual(params, t, x, nu=0.05):
    u = u_heat(params, t, x)
    du = jacfwd(u_heat, argnums=(1, 2))(params, t, x)   # (u_t, u_x)
    u_xx = jacfwd(jacrev(u_heat, argnums=2), argnums=2)(params, t, x)
    return du[0] + u * du[1] - nu * u_xx


def test_pinn_burgers_residual_with_jacfwd(x64):
    params = init_mlp([2, 4, 1], RNG)
    ts, xs = RNG.uniform(size=5), RNG.uniform(-1, 1, size=5)
    loss = lambda p, ts, xs: jnp.mean(vmap(burgers_residual, (None, 0, 0))(p, ts, xs) ** 2)
    check_grad(loss, params, ts, xs)
    # vmap over points against a loop, and jit against eager
    check_vmap(burgers_residual, (params, ts, xs), in_axes=(None, 0, 0))


def ritz_energy(params, xs, weights):
    # Deep Ritz for -u'' = 1 on (0, 1), u = x(1-x) N(x) so the boundary values are zero
    u = lambda x: x * (1 - x) * mlp(params, x[None])[0]
    du = vmap(grad(u))(xs)
    return jnp.sum(weights * (0.5 * du ** 2 - vmap(u)(xs)))


def test_deep_ritz_energy(x64):
    params = init_mlp([1, 6, 1], RNG)
    nodes, weights = np.polynomial.legendre.leggauss(8)
    xs, weights = 0.5 * (nodes + 1), 0.5 * weights
    check_grad(ritz_energy, params, xs, weights)
    # with the network replaced by a constant c, u = c x(1-x): energy = c^2/6 - c/6
    const = [(np.zeros((1, 1)), np.array([0.7]))]
    np.testing.assert_allclose(ritz_energy(to_snp(const), xs, weights), 0.49 / 6 - 0.7 / 6,
                               rtol=1e-12)


def sobolev_loss(params, xs):
    f = lambda x: mlp(params, x[None])[0]
    values = vmap(f)(xs) - jnp.sin(3 * xs)
    slopes = vmap(grad(f))(xs) - 3 * jnp.cos(3 * xs)
    return jnp.mean(values ** 2) + 0.1 * jnp.mean(slopes ** 2)


def test_sobolev_training(x64):
    params = init_mlp([1, 8, 1], RNG)
    xs = np.linspace(-1, 1, 7)
    check_grad(sobolev_loss, params, xs)
    # one SGD step under jit lowers the loss
    step = jit(lambda p, xs: [(w - 0.05 * gw, b - 0.05 * gb)
                              for (w, b), (gw, gb) in zip(p, grad(sobolev_loss)(p, xs))])
    p = to_snp(params)
    assert sobolev_loss(step(p, xs), xs) < sobolev_loss(p, xs)


# --- Hamiltonian and Lagrangian networks -------------------------------------------------------
def learned_h(params, q, p):
    return mlp(params, jnp.concatenate([q, p]))[0] + 0.5 * jnp.sum(p ** 2)


def hnn_vector_field(params, q, p):
    dh_dq, dh_dp = grad(learned_h, argnums=(1, 2))(params, q, p)
    return dh_dp, -dh_dq


def hnn_loss(params, qs, ps, qdots, pdots):
    qd, pd = vmap(hnn_vector_field, in_axes=(None, 0, 0))(params, qs, ps)
    return jnp.mean((qd - qdots) ** 2) + jnp.mean((pd - pdots) ** 2)


def test_hamiltonian_network_loss(x64):
    params = init_mlp([4, 6, 1], RNG)
    qs, ps = RNG.normal(size=(5, 2)), RNG.normal(size=(5, 2))
    # targets from a harmonic oscillator: qdot = p, pdot = -q
    check_grad(hnn_loss, params, qs, ps, ps, -qs)
    check_vmap(lambda q, p: hnn_vector_field(to_snp(params), q, p), (qs, ps))


def leapfrog_rollout(params, q, p, dt=0.1, steps=6):
    dh_dq = grad(learned_h, argnums=1)
    dh_dp = grad(learned_h, argnums=2)

    def step(carry, _):
        q, p = carry
        p = p - 0.5 * dt * dh_dq(params, q, p)
        q = q + dt * dh_dp(params, q, p)
        p = p - 0.5 * dt * dh_dq(params, q, p)
        return (q, p), learned_h(params, q, p)

    (q, p), energies = lax.scan(step, (q, p), None, length=steps)
    return q, p, energies


def test_hnn_leapfrog_rollout_in_scan(x64):
    params = init_mlp([4, 5, 1], RNG)
    q0, p0 = RNG.normal(size=2), RNG.normal(size=2)
    loss = lambda prm, q0: jnp.sum(leapfrog_rollout(prm, q0, to_snp(p0))[0] ** 2)
    check_grad(loss, params, q0)
    check_grad(loss, params, q0, argnum=1)
    # with a zero network, H = p^2/2 is free motion: q grows by p each unit of time
    zero = [(np.zeros((4, 5)), np.zeros(5)), (np.zeros((5, 1)), np.zeros(1))]
    q, p, energies = leapfrog_rollout(to_snp(zero), to_snp(q0), to_snp(p0))
    np.testing.assert_allclose(q, q0 + 0.6 * p0, rtol=1e-12)
    np.testing.assert_allclose(energies, np.full(6, 0.5 * p0 @ p0), rtol=1e-12)


def learned_lagrangian(params, q, qdot):
    # kinetic term kept positive definite so the mass matrix is invertible
    return 0.5 * jnp.sum(qdot ** 2) + 0.2 * mlp(params, jnp.concatenate([q, qdot]))[0]


def lnn_acceleration(params, q, qdot):
    lag = lambda q, qdot: learned_lagrangian(params, q, qdot)
    mass = hessian(lag, argnums=1)(q, qdot)
    force = grad(lag, argnums=0)(q, qdot)
    mixed = jacfwd(grad(lag, argnums=1), argnums=0)(q, qdot)
    return jnp.linalg.solve(mass, force - mixed @ qdot)


def test_lagrangian_network_acceleration(x64):
    params = init_mlp([4, 4, 1], RNG)
    q, qdot = RNG.normal(size=2), RNG.normal(size=2)
    p = to_snp(params)
    # Euler-Lagrange: d/dt dL/dqdot = dL/dq, checked with finite differences of L
    acc = lnn_acceleration(p, to_snp(q), to_snp(qdot))
    lag = lambda q, qd: learned_lagrangian(p, q, qd)
    g_qdot = lambda q, qd: np.asarray(grad(lag, argnums=1)(jnp.asarray(q), jnp.asarray(qd)))
    dt = 1e-5
    ddt = (g_qdot(q + dt * qdot, qdot + dt * np.asarray(acc))
           - g_qdot(q - dt * qdot, qdot - dt * np.asarray(acc))) / (2 * dt)
    np.testing.assert_allclose(ddt, grad(lag)(to_snp(q), to_snp(qdot)), rtol=1e-5, atol=1e-7)
    loss = lambda prm, q, qdot: jnp.sum(lnn_acceleration(prm, q, qdot) ** 2)
    check_grad(loss, params, q, qdot, rtol=1e-5, atol=1e-7)
    check_vmap(lambda q, qd: lnn_acceleration(p, q, qd), (RNG.normal(size=(3, 2)),
                                                          RNG.normal(size=(3, 2))))


# --- fields and neural ODEs --------------------------------------------------------------------
def potential(params, x):
    return mlp(params, x)   # R^3 -> R^3, a vector potential A


def curl_field(params, x):
    j = jacfwd(potential, argnums=1)(params, x)
    return jnp.array([j[2, 1] - j[1, 2], j[0, 2] - j[2, 0], j[1, 0] - j[0, 1]])


def test_curl_of_learned_potential_is_divergence_free(x64):
    params = init_mlp([3, 5, 3], RNG)
    p = to_snp(params)
    xs = RNG.normal(size=(4, 3))
    div = vmap(lambda x: jnp.trace(jacfwd(curl_field, argnums=1)(p, x)))(to_snp(xs))
    np.testing.assert_allclose(div, np.zeros(4), atol=1e-12)
    loss = lambda prm, x: jnp.sum(curl_field(prm, x) ** 2)
    check_grad(loss, params, xs[0])
    check_vmap(lambda x: curl_field(p, x), (xs,))


def neural_ode(params, y0, dt=0.05, steps=8):
    def body(i, y):
        t = i * dt
        return y + dt * mlp(params, jnp.concatenate([y, jnp.array([t])]))
    return lax.fori_loop(0, steps, body, y0)


def test_neural_ode_fori_loop(x64):
    params = init_mlp([3, 6, 2], RNG)
    y0 = RNG.normal(size=2)
    loss = lambda p, y0: jnp.sum((neural_ode(p, y0) - jnp.array([0.5, -0.2])) ** 2)
    check_grad(loss, params, y0)
    check_grad(loss, params, y0, argnum=1)
    p = to_snp(params)
    check_vmap(lambda y: neural_ode(p, y), (RNG.normal(size=(4, 2)),))
    tangent = RNG.normal(size=2)
    _, got = jvp(lambda y: neural_ode(p, y), (to_snp(y0),), (to_snp(tangent),))
    assert_trees_close(got, fd_jvp(lambda y: neural_ode(p, y), (to_snp(y0),), (tangent,)),
                       rtol=1e-6, atol=1e-8)

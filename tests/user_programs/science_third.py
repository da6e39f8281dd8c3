"""Science programs of the third battery (issue 15, explore15j): Gaussian-process marginal
likelihood in its kernel hyperparameters (cho_factor/cho_solve, solve_triangular), predictive
variance at test points, planar, radial and affine-coupling normalising flows with their
log-determinants, Monte Carlo estimators with random.split (reparameterised ELBO, antithetic
variates, importance sampling), a neural ODE through odeint, mean-field Ising and molecular
dynamics in lax.fori_loop, periodic boundaries, an implicit heat step."""
import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import lax, random
from secant.experimental.ode import odeint
from secant.scipy import linalg as sla
from secant.scipy.special import logsumexp

from corpus import Case, pos, vec

XT = np.linspace(-1.0, 1.0, 6)
YT = np.sin(2.0 * XT) + 0.1 * vec(970, 6)


# --- Gaussian processes ---------------------------------------------------------------------------
def rbf(x1, x2, log_ell, log_var):
    d = x1[:, None] - x2[None, :]
    return jnp.exp(log_var) * jnp.exp(-0.5 * d ** 2 / jnp.exp(2 * log_ell))


def gp_hyper_nll(theta, x, y):
    """the negative log marginal likelihood in (log lengthscale, log variance, log noise)"""
    log_ell, log_var, log_noise = theta[0], theta[1], theta[2]
    k = rbf(x, x, log_ell, log_var) + jnp.exp(log_noise) * jnp.eye(x.shape[0])
    c, low = sla.cho_factor(k, lower=True)
    alpha = sla.cho_solve((c, low), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(c))) + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi)


def gp_predictive_var(xs, x):
    """posterior variance at test points xs by two triangular solves"""
    k = rbf(x, x, 0.0, 0.0) + 0.01 * jnp.eye(x.shape[0])
    low = jnp.linalg.cholesky(k)
    ks = rbf(x, xs, 0.0, 0.0)
    v = sla.solve_triangular(low, ks, lower=True)
    var = 1.0 - jnp.sum(v ** 2, axis=0)
    return jnp.sum(jnp.log(var + 1e-3))


# --- normalising flows --------------------------------------------------------------------------------
def planar_flow(params, z):
    """K planar layers z + u tanh(w.z + b); the log-density of the last z under N(0, I)"""
    log_det = 0.0
    for k in range(params["u"].shape[0]):
        u, w, b = params["u"][k], params["w"][k], params["b"][k]
        a = z @ w + b
        psi = (1 - jnp.tanh(a) ** 2)[:, None] * w
        log_det = log_det + jnp.log(jnp.abs(1 + psi @ u))
        z = z + jnp.tanh(a)[:, None] * u
    return jnp.mean(-0.5 * jnp.sum(z ** 2, axis=1) + log_det)


def radial_flow(z0, z):
    alpha, beta = 0.8, 0.5
    r = jnp.sqrt(jnp.sum((z - z0) ** 2, axis=1))
    h = 1.0 / (alpha + r)
    d = z0.shape[0]
    log_det = (d - 1) * jnp.log(1 + beta * h) + jnp.log(1 + beta * h - beta * r * h ** 2)
    out = z + (beta * h)[:, None] * (z - z0)
    return jnp.mean(jnp.sum(out ** 2, axis=1) + log_det)


def coupling_flow(w, x):
    """a RealNVP affine coupling: half the coordinates scale and shift the other half"""
    x1, x2 = jnp.split(x, [2], axis=1)
    h = jnp.tanh(x1 @ w)
    s, t = h[:, :1], h[:, 1:]
    y2 = x2 * jnp.exp(s) + t
    log_det = jnp.sum(s, axis=1)
    y = jnp.concatenate([x1, y2], axis=1)
    return jnp.mean(0.5 * jnp.sum(y ** 2, axis=1) - log_det)


# --- Monte Carlo ------------------------------------------------------------------------------------------
def mc_reparam_elbo(phi):
    """an ELBO estimate by the reparameterisation trick, samples from one split key each"""
    mu, log_sigma = phi[:2], phi[2:]
    key = random.PRNGKey(3)
    total = 0.0
    for _ in range(4):
        key, sub = random.split(key)
        eps = random.normal(sub, (2,))
        z = mu + jnp.exp(log_sigma) * eps
        log_p = -0.5 * jnp.sum((z - 1.0) ** 2) - 0.25 * jnp.sum(z ** 4) * 0.1
        total = total + log_p
    entropy = jnp.sum(log_sigma)
    return total / 4 + entropy


def mc_antithetic(theta):
    keys = random.split(random.PRNGKey(7), 3)
    est = 0.0
    for k in keys:
        eps = random.normal(k, (5,))
        f_plus = jnp.exp(theta[0] + theta[1] * eps)
        f_minus = jnp.exp(theta[0] - theta[1] * eps)
        est = est + jnp.mean(0.5 * (f_plus + f_minus))
    return est / len(keys)


def mc_importance(theta):
    """log of an importance-sampled normaliser by logsumexp of the log weights"""
    eps = random.normal(random.PRNGKey(11), (16,))
    z = 2.0 * eps
    log_q = -0.5 * eps ** 2 - jnp.log(2.0)
    log_p = -0.5 * (z - theta[0]) ** 2 / jnp.exp(2 * theta[1]) - theta[1]
    return logsumexp(log_p - log_q) - jnp.log(16.0)


# --- ODEs and dynamics ---------------------------------------------------------------------------------
def node_odeint(w):
    """a neural ODE: an MLP vector field through odeint, the final state's loss"""
    def field(y, t, w):
        return jnp.tanh(w @ y) - 0.1 * y

    y0 = jnp.array([1.0, -0.5])
    ts = jnp.array([0.0, 0.5, 1.0])
    ys = odeint(field, y0, ts, w)
    return jnp.sum(ys[-1] ** 2) + 0.1 * jnp.sum(ys[1])


def lotka_volterra_odeint(theta):
    def rhs(s, t, a, b):
        prey, pred = s[0], s[1]
        return jnp.stack([a * prey - b * prey * pred, b * prey * pred - 0.5 * pred])

    ys = odeint(rhs, jnp.array([1.0, 0.5]), jnp.linspace(0.0, 1.0, 4), theta[0], theta[1],
                rtol=1e-10, atol=1e-10)
    return jnp.sum(ys[:, 0] * ys[:, 1])


def ising_mean_field(h):
    """mean-field magnetisations of a ring, iterated in fori_loop; the free-energy-like sum"""
    beta, coupling = 0.5, 1.0

    def body(i, m):
        field = coupling * (jnp.roll(m, 1) + jnp.roll(m, -1)) + h
        return jnp.tanh(beta * field)

    m = lax.fori_loop(0, 20, body, jnp.zeros_like(h))
    return -jnp.sum(m * h) - 0.5 * coupling * jnp.sum(m * jnp.roll(m, 1))


def md_verlet_fori(pos0):
    """velocity Verlet in fori_loop, forces by jax.grad of a soft pair potential"""
    def energy(x):
        d = x[:, None, :] - x[None, :, :]
        r2 = jnp.sum(d ** 2, axis=-1) + jnp.eye(x.shape[0])
        return 0.5 * jnp.sum((1 - jnp.eye(x.shape[0])) * jnp.exp(-r2))

    force = jax.grad(lambda x: -energy(x))
    dt = 0.05

    def step(i, state):
        x, v = state
        v = v + 0.5 * dt * force(x)
        x = x + dt * v
        v = v + 0.5 * dt * force(x)
        return x, v

    x, v = lax.fori_loop(0, 5, step, (pos0, jnp.zeros_like(pos0)))
    return energy(x) + 0.5 * jnp.sum(v ** 2)


def periodic_pair_energy(x):
    """minimum-image displacements in a periodic box (round has no derivative there)"""
    box = 3.0
    d = x[:, None, :] - x[None, :, :]
    d = d - box * jnp.round(d / box)
    r2 = jnp.sum(d ** 2, axis=-1)
    n = x.shape[0]
    mask = 1.0 - jnp.eye(n)
    return jnp.sum(mask * jnp.exp(-r2)) / 2


def implicit_heat(u0):
    """backward Euler for the heat equation: a linear solve each step"""
    n = u0.shape[0]
    lap = -2 * jnp.eye(n) + jnp.eye(n, k=1) + jnp.eye(n, k=-1)
    a = jnp.eye(n) - 0.1 * lap
    u = u0
    for _ in range(3):
        u = jnp.linalg.solve(a, u)
    return jnp.sum(u ** 2) + jnp.sum(jnp.sin(u))


CASES = [
    Case("gp_hyper_nll", gp_hyper_nll, (np.array([-0.3, 0.2, -2.0]), XT, YT)),
    Case("gp_predictive_var", gp_predictive_var, (np.array([-0.7, 0.1, 0.45]), XT)),
    Case("planar_flow", planar_flow,
         ({"u": vec(971, 2, 2, scale=0.5), "w": vec(972, 2, 2), "b": vec(973, 2)}, vec(974, 5, 2))),
    Case("radial_flow", radial_flow, (vec(975, 2), vec(976, 5, 2))),
    Case("coupling_flow", coupling_flow, (vec(977, 2, 2), vec(978, 5, 3))),
    Case("mc_reparam_elbo", mc_reparam_elbo, (vec(979, 4, scale=0.5),)),
    Case("mc_antithetic", mc_antithetic, (pos(980, 2) - 0.5,)),
    Case("mc_importance", mc_importance, (vec(981, 2, scale=0.5),)),
    Case("node_odeint", node_odeint, (vec(982, 2, 2),)),
    Case("lotka_volterra_odeint", lotka_volterra_odeint, (pos(983, 2),)),
    Case("ising_mean_field", ising_mean_field, (vec(984, 6),)),
    Case("md_verlet_fori", md_verlet_fori, (vec(985, 4, 2),)),
    Case("periodic_pair_energy", periodic_pair_energy, (vec(986, 4, 2),)),
    Case("implicit_heat", implicit_heat, (vec(987, 6),)),
]

"""Scientific programs as JAX users write them: a Gaussian process with a Cholesky solve,
Bayesian logistic regression with hand-written Langevin and HMC steps, a Kalman filter, n-body,
a spring chain, Lennard-Jones, Black-Scholes greeks, Monte Carlo pricing, Sinkhorn, power
iteration, Poisson regression."""
import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import lax, random
from secant.scipy.linalg import cho_factor, cho_solve, solve_triangular
from secant.scipy.special import gammaln
from secant.scipy.stats import norm

from corpus import Case, pos, vec


# --- Gaussian process -----------------------------------------------------------------------------
def rbf_kernel(x1, x2, lengthscale, amplitude):
    sqdist = jnp.sum((x1[:, None, :] - x2[None, :, :]) ** 2, axis=-1)
    return amplitude ** 2 * jnp.exp(-0.5 * sqdist / lengthscale ** 2)


def gp_nll(log_params, x, y):
    lengthscale, amplitude, noise = jnp.exp(log_params)
    K = rbf_kernel(x, x, lengthscale, amplitude) + (noise ** 2 + 1e-6) * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(K)
    alpha = cho_solve((L, True), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * len(y) * jnp.log(2 * jnp.pi)


GP_X = vec(100, 5, 1) * 2.0
GP_Y = np.sin(3.0 * GP_X[:, 0])
GP_THETA = np.log(np.array([0.7, 1.1, 0.3]))


def gp_posterior_mean(x_star, x, y):
    K = rbf_kernel(x, x, 0.7, 1.0) + 0.1 * jnp.eye(x.shape[0])
    c, lower = cho_factor(K, lower=True)
    alpha = cho_solve((c, lower), y)
    k_star = rbf_kernel(x_star, x, 0.7, 1.0)
    return jnp.sum(k_star @ alpha)


def gp_triangular(log_params, x, y):
    """the same likelihood with two triangular solves"""
    K = rbf_kernel(x, x, jnp.exp(log_params[0]), jnp.exp(log_params[1]))
    K = K + jnp.exp(2 * log_params[2]) * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(K)
    z = solve_triangular(L, y, lower=True)
    return 0.5 * jnp.dot(z, z) + jnp.log(jnp.diag(L)).sum()


# --- Bayesian logistic regression: Langevin, HMC ----------------------------------------------------
LR_X = vec(110, 6, 2)
LR_Y = (np.random.default_rng(111).uniform(size=6) > 0.5).astype(np.float64)


def log_posterior(theta, x, y):
    logits = x @ theta
    log_lik = jnp.sum(y * jax.nn.log_sigmoid(logits) + (1 - y) * jax.nn.log_sigmoid(-logits))
    log_prior = jnp.sum(norm.logpdf(theta, 0.0, 2.0))
    return log_lik + log_prior


NOISE = np.random.default_rng(112).normal(size=2)


def langevin_step(theta, x, y):
    step = 0.05
    g = jax.grad(log_posterior)(theta, x, y)
    proposal = theta + step * g + jnp.sqrt(2 * step) * NOISE
    return log_posterior(proposal, x, y)


def leapfrog(theta, momentum, x, y, step, n_steps):
    grad_U = jax.grad(lambda t: -log_posterior(t, x, y))
    momentum = momentum - 0.5 * step * grad_U(theta)
    for _ in range(n_steps - 1):
        theta = theta + step * momentum
        momentum = momentum - step * grad_U(theta)
    theta = theta + step * momentum
    momentum = momentum - 0.5 * step * grad_U(theta)
    return theta, momentum


def hmc_hamiltonian(theta, x, y):
    momentum0 = jnp.array([0.3, -0.2])
    theta_new, momentum = leapfrog(theta, momentum0, x, y, 0.1, 3)
    return -log_posterior(theta_new, x, y) + 0.5 * jnp.sum(momentum ** 2)


def mala_accept_logratio(theta, x, y):
    """the Metropolis-adjusted log acceptance ratio of one Langevin proposal"""
    eps = 0.1

    def log_q(to, frm):
        mean = frm + eps * jax.grad(log_posterior)(frm, x, y)
        return -jnp.sum((to - mean) ** 2) / (4 * eps)
    prop = theta + eps * jax.grad(log_posterior)(theta, x, y) + jnp.sqrt(2 * eps) * NOISE
    return (log_posterior(prop, x, y) + log_q(theta, prop)
            - log_posterior(theta, x, y) - log_q(prop, theta))


# --- Kalman filter ------------------------------------------------------------------------------------
F_MAT = np.array([[1.0, 0.1], [0.0, 1.0]])
H_MAT = np.array([[1.0, 0.0]])


def kalman_loglik(log_noise, obs):
    q, r = jnp.exp(log_noise[0]), jnp.exp(log_noise[1])
    Q = q * jnp.eye(2)
    R = r * jnp.eye(1)

    def step(carry, z):
        m, P = carry
        m = F_MAT @ m
        P = F_MAT @ P @ F_MAT.T + Q
        S = H_MAT @ P @ H_MAT.T + R
        K = P @ H_MAT.T @ jnp.linalg.inv(S)
        resid = z - H_MAT @ m
        m = m + K @ resid
        P = (jnp.eye(2) - K @ H_MAT) @ P
        ll = -0.5 * (resid @ jnp.linalg.solve(S, resid) + jnp.log(jnp.linalg.det(S))
                     + jnp.log(2 * jnp.pi))
        return (m, P), ll

    _, lls = lax.scan(step, (jnp.zeros(2), jnp.eye(2)), obs)
    return jnp.sum(lls)


OBS = vec(120, 5, 1)


def kalman_python_loop(obs, log_noise):
    q, r = jnp.exp(log_noise)
    m, P = jnp.zeros(2), jnp.eye(2)
    total = 0.0
    for t in range(obs.shape[0]):
        m = F_MAT @ m
        P = F_MAT @ P @ F_MAT.T + q * jnp.eye(2)
        s = P[0, 0] + r
        k = P[:, 0] / s
        resid = obs[t] - m[0]
        m = m + k * resid
        P = P - jnp.outer(k, P[0, :])
        total = total - 0.5 * (resid ** 2 / s + jnp.log(s))
    return total


# --- physics ------------------------------------------------------------------------------------------
def pairwise_distances(pos):
    diff = pos[:, None, :] - pos[None, :, :]
    return jnp.sqrt(jnp.sum(diff ** 2, axis=-1) + 1e-12)


def nbody_energy(pos, masses):
    n = pos.shape[0]
    r = pairwise_distances(pos) + jnp.eye(n)
    mm = masses[:, None] * masses[None, :]
    pot = -jnp.sum(jnp.where(jnp.eye(n) > 0, 0.0, mm / jnp.sqrt(r ** 2 + 0.01)))
    return 0.5 * pot


NB_POS = vec(130, 4, 3) * 2.0
NB_MASS = pos(131, 4)


def nbody_leapfrog(pos0, masses):
    force = jax.grad(nbody_energy)
    pos, vel, dt = pos0, jnp.zeros_like(pos0), 0.01
    for _ in range(3):
        vel = vel - 0.5 * dt * force(pos, masses) / masses[:, None]
        pos = pos + dt * vel
        vel = vel - 0.5 * dt * force(pos, masses) / masses[:, None]
    kinetic = 0.5 * jnp.sum(masses[:, None] * vel ** 2)
    return kinetic + nbody_energy(pos, masses)


def lennard_jones(pos, sigma=1.0, epsilon=1.0):
    n = pos.shape[0]
    i, j = jnp.triu_indices(n, k=1)
    r = jnp.linalg.norm(pos[i] - pos[j], axis=-1)
    sr6 = (sigma / r) ** 6
    return jnp.sum(4 * epsilon * (sr6 ** 2 - sr6))


LJ_POS = np.array([[0.0, 0.0], [1.1, 0.1], [0.2, 1.2], [1.3, 1.0]]) + vec(132, 4, 2, scale=0.05)


def spring_chain_energy(q, k):
    stretch = jnp.diff(q) - 1.0
    return 0.5 * jnp.sum(k * stretch ** 2) + 0.1 * jnp.sum(q ** 4)


def spring_chain_verlet(q0, k):
    accel = lambda q: -jax.grad(spring_chain_energy)(q, k)

    def body(state, _):
        q, p = state
        p = p + 0.05 * accel(q)
        q = q + 0.05 * p
        return (q, p), 0.5 * jnp.sum(p ** 2)
    (q, p), kin = lax.scan(body, (q0, jnp.zeros_like(q0)), None, length=4)
    return jnp.sum(kin) + spring_chain_energy(q, k)


CHAIN_Q = np.arange(5.0) + vec(133, 5, scale=0.2)
CHAIN_K = pos(134, 4)


def pendulum_energy_drift(theta0):
    def step(i, s):
        th, om = s
        om = om - 0.1 * jnp.sin(th)
        return th + 0.1 * om, om
    th, om = lax.fori_loop(0, 10, step, (theta0, 0.0))
    return 0.5 * om ** 2 - jnp.cos(th)


# --- finance -------------------------------------------------------------------------------------------
def black_scholes(x):
    S, K, T, r, sigma = x
    d1 = (jnp.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * jnp.sqrt(T))
    d2 = d1 - sigma * jnp.sqrt(T)
    return S * norm.cdf(d1) - K * jnp.exp(-r * T) * norm.cdf(d2)


BS_X = np.array([100.0, 95.0, 0.5, 0.03, 0.25])


def bs_call(S, K, T, r, sigma):
    d1 = (jnp.log(S / K) + (r + sigma ** 2 / 2) * T) / (sigma * jnp.sqrt(T))
    d2 = d1 - sigma * jnp.sqrt(T)
    return S * norm.cdf(d1) - K * jnp.exp(-r * T) * norm.cdf(d2)


def portfolio_delta(spots, strikes):
    """the portfolio value plus its delta from grad inside (greeks by autodiff)"""
    value = jnp.sum(bs_call(spots, strikes, 1.0, 0.01, 0.2))
    delta = jax.grad(lambda s: jnp.sum(bs_call(s, strikes, 1.0, 0.01, 0.2)))(spots)
    return value + jnp.sum(delta ** 2)


SPOTS = np.array([95.0, 100.0, 105.0])
STRIKES = np.array([100.0, 100.0, 110.0])

MC_Z = random.normal(random.PRNGKey(0), (64,))


def monte_carlo_call(params):
    spot, vol = params[0], params[1]
    st = spot * jnp.exp((0.02 - 0.5 * vol ** 2) + vol * MC_Z)
    payoff = jnp.maximum(st - 90.0, 0.0)
    return jnp.exp(-0.02) * payoff.mean()


# --- numerical algorithms ------------------------------------------------------------------------------
def sinkhorn(cost_scale, a, b):
    C = cost_scale * jnp.abs(jnp.arange(3.0)[:, None] - jnp.arange(3.0)[None, :])
    K = jnp.exp(-C / 0.5)
    u = jnp.ones(3)
    for _ in range(10):
        v = b / (K.T @ u)
        u = a / (K @ v)
    P = u[:, None] * K * v[None, :]
    return jnp.sum(P * C)


def power_iteration(A):
    v = jnp.ones(A.shape[0]) / jnp.sqrt(A.shape[0])
    sym = A @ A.T
    for _ in range(20):
        v = sym @ v
        v = v / jnp.linalg.norm(v)
    return v @ sym @ v


def poisson_regression(w, x, counts):
    rate = jnp.exp(x @ w)
    return -jnp.sum(counts * jnp.log(rate) - rate - gammaln(counts + 1))


COUNTS = np.array([1.0, 0.0, 3.0, 2.0, 1.0, 4.0])


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


CASES = [
    Case("gp_nll", gp_nll, (GP_THETA, GP_X, GP_Y), in_axes=(0, None, None)),
    Case("gp_posterior_mean", gp_posterior_mean, (vec(101, 2, 1), GP_X, GP_Y)),
    Case("gp_triangular", gp_triangular, (GP_THETA, GP_X, GP_Y), in_axes=(0, None, None)),
    Case("bayes_logpost", log_posterior, (vec(113, 2), LR_X, LR_Y)),
    Case("langevin_step", langevin_step, (vec(114, 2), LR_X, LR_Y)),
    Case("hmc_hamiltonian", hmc_hamiltonian, (vec(115, 2), LR_X, LR_Y)),
    Case("mala_accept_logratio", mala_accept_logratio, (vec(116, 2), LR_X, LR_Y)),
    Case("kalman_loglik", kalman_loglik, (np.log(np.array([0.1, 0.2])), OBS)),
    Case("kalman_python_loop", kalman_python_loop, (OBS[:, 0], np.log(np.array([0.1, 0.2])))),
    Case("nbody_energy", nbody_energy, (NB_POS, NB_MASS)),
    Case("nbody_leapfrog", nbody_leapfrog, (NB_POS, NB_MASS)),
    Case("lennard_jones", lennard_jones, (LJ_POS,)),
    Case("spring_chain_verlet", spring_chain_verlet, (CHAIN_Q, CHAIN_K)),
    Case("pendulum_energy_drift", pendulum_energy_drift, (0.8,)),
    Case("black_scholes", black_scholes, (BS_X,)),
    Case("portfolio_delta", portfolio_delta, (SPOTS, STRIKES)),
    Case("monte_carlo_call", monte_carlo_call, (np.array([100.0, 0.2]),)),
    Case("sinkhorn", sinkhorn, (np.array([1.0]), np.array([0.2, 0.5, 0.3]),
                                np.array([0.4, 0.4, 0.2]))),
    Case("power_iteration", power_iteration, (vec(140, 3, 3),)),
    Case("poisson_regression", poisson_regression, (vec(141, 2, scale=0.5), LR_X, COUNTS)),
    Case("rosenbrock", rosenbrock, (vec(142, 4),)),
]

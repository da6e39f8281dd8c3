"""Issue 15, code written by others (fifth round): Bayesian inference as users write it with JAX:
Hamiltonian Monte Carlo (a leapfrog trajectory with grad of the log density inside fori_loop, a
full HMC step with a Metropolis test, chains by vmap over keys), stochastic-gradient Langevin
dynamics with keys split in a scan, SVI with a reparameterised ELBO, an importance-weighted ELBO
with logsumexp, a Gaussian process marginal likelihood with ARD hyperparameters in a dict
(cholesky, solve_triangular), a Laplace approximation (Newton with hessian and solve, then
slogdet), and a Gaussian-mixture log-likelihood; each under the transforms its author would
use, checked against float64 finite differences, closed forms, a Python loop and eager."""
import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jit, lax, random, value_and_grad, vmap
from secant.scipy.linalg import solve_triangular
from secant.scipy.special import logsumexp
from secant.scipy.stats import norm

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(5252)


# --- Hamiltonian Monte Carlo -------------------------------------------------------------------
def banana_log_density(z):
    x, y = z[0], z[1]
    return -0.5 * x ** 2 / 4.0 - 0.5 * (y - 0.3 * x ** 2) ** 2


def leapfrog(log_density, z, r, step_size=0.1, n_steps=5):
    grad_u = grad(lambda z: -log_density(z))
    r = r - 0.5 * step_size * grad_u(z)

    def body(i, state):
        z, r = state
        z = z + step_size * r
        r = r - step_size * grad_u(z)
        return z, r

    z, r = lax.fori_loop(0, n_steps - 1, body, (z, r))
    z = z + step_size * r
    r = r - 0.5 * step_size * grad_u(z)
    return z, r


def np_leapfrog(z, r, step_size=0.1, n_steps=5):
    def grad_u(z):
        x, y = z
        return -np.array([-x / 4.0 + 0.6 * x * (y - 0.3 * x ** 2), -(y - 0.3 * x ** 2)])
    r = r - 0.5 * step_size * grad_u(z)
    for _ in range(n_steps - 1):
        z = z + step_size * r
        r = r - step_size * grad_u(z)
    z = z + step_size * r
    return z, r - 0.5 * step_size * grad_u(z)


def test_hmc_leapfrog_trajectory(x64):
    z, r = RNG.normal(size=2), RNG.normal(size=2)
    got = leapfrog(banana_log_density, to_snp(z), to_snp(r))
    assert_trees_close(got, np_leapfrog(z, r), rtol=1e-12)
    # leapfrog is reversible and nearly conserves the Hamiltonian
    back = leapfrog(banana_log_density, got[0], -got[1])
    np.testing.assert_allclose(back[0], z, rtol=1e-10, atol=1e-12)
    h = lambda z, r: -banana_log_density(z) + 0.5 * jnp.sum(r ** 2)
    assert abs(float(h(*got)) - float(h(to_snp(z), to_snp(r)))) < 1e-2
    # sensitivity of the end point to the initial momentum (as in NUTS-style tuning)
    end = lambda r, z: jnp.sum(leapfrog(banana_log_density, z, r)[0] ** 2)
    check_grad(end, r, z)


def hmc_step(key, z, step_size=0.15):
    k_mom, k_acc = random.split(key)
    r = random.normal(k_mom, z.shape)
    z_new, r_new = leapfrog(banana_log_density, z, r, step_size)
    h_old = -banana_log_density(z) + 0.5 * jnp.sum(r ** 2)
    h_new = -banana_log_density(z_new) + 0.5 * jnp.sum(r_new ** 2)
    accept = jnp.log(random.uniform(k_acc)) < h_old - h_new
    return jnp.where(accept, z_new, z), accept


def run_chain(key, z0, n=4):
    def body(z, key):
        z, accepted = hmc_step(key, z)
        return z, (z, accepted)
    _, (zs, acc) = lax.scan(body, z0, random.split(key, n))
    return zs, acc


def test_hmc_chains_by_vmap_over_keys(x64):
    keys = random.split(random.PRNGKey(0), 3)
    z0 = RNG.normal(size=(3, 2))
    zs, acc = vmap(run_chain)(keys, to_snp(z0))
    assert zs.shape == (3, 4, 2) and acc.dtype == np.bool_
    for i in range(3):
        zi, ai = run_chain(keys[i], to_snp(z0[i]))
        np.testing.assert_allclose(zs[i], zi, rtol=1e-12)
        np.testing.assert_array_equal(acc[i], ai)
    jz, jacc = jit(vmap(run_chain))(keys, to_snp(z0))
    np.testing.assert_allclose(jz, zs, rtol=1e-10)
    np.testing.assert_array_equal(jacc, acc)


def sgld(key, theta0, xs, step=1e-2, n=6):
    def log_post(theta):
        return jnp.sum(norm.logpdf(xs, theta[0], jnp.exp(theta[1]))) + jnp.sum(
            norm.logpdf(theta, 0.0, 3.0))

    def body(theta, key):
        noise = random.normal(key, theta.shape)
        theta = theta + 0.5 * step * grad(log_post)(theta) + jnp.sqrt(step) * noise
        return theta, log_post(theta)

    return lax.scan(body, theta0, random.split(key, n))


def test_sgld_with_split_keys_in_scan(x64):
    xs = RNG.normal(loc=1.0, size=10)
    theta0 = np.array([0.2, -0.1])
    key = random.PRNGKey(3)
    theta, trace = sgld(key, to_snp(theta0), to_snp(xs))
    # the same chain written with a Python loop and finite-difference-checked gradients
    th = to_snp(theta0)
    for i, k in enumerate(random.split(key, 6)):
        lp = lambda t: (jnp.sum(norm.logpdf(to_snp(xs), t[0], jnp.exp(t[1])))
                        + jnp.sum(norm.logpdf(t, 0.0, 3.0)))
        g = fd_grad(lp, (th,))
        th = th + 0.5e-2 * g + np.sqrt(1e-2) * random.normal(k, (2,))
        np.testing.assert_allclose(trace[i], lp(th), rtol=1e-6)
    np.testing.assert_allclose(theta, th, rtol=1e-6)
    # the final state is differentiable in the start (a pathwise sensitivity)
    check_grad(lambda t0: jnp.sum(sgld(key, t0, to_snp(xs))[0]), theta0)


# --- variational inference ---------------------------------------------------------------------
X_LR = RNG.normal(size=(12, 3))
Y_LR = (X_LR @ np.array([1.0, -1.5, 0.5]) + 0.3 * RNG.normal(size=12) > 0).astype(np.float64)


def log_joint(w, x, y):
    logits = x @ w
    return jnp.sum(y * logits - jnp.logaddexp(0.0, logits)) + jnp.sum(norm.logpdf(w))


def elbo(params, key, x, y, n_samples=4):
    mu, log_sigma = params["mu"], params["log_sigma"]
    eps = random.normal(key, (n_samples,) + mu.shape)
    ws = mu + jnp.exp(log_sigma) * eps                      # reparameterisation
    log_p = vmap(log_joint, in_axes=(0, None, None))(ws, x, y)
    entropy = jnp.sum(log_sigma) + 0.5 * mu.shape[0] * (1.0 + jnp.log(2 * jnp.pi))
    return jnp.mean(log_p) + entropy


def test_svi_reparameterised_elbo(x64):
    params = {"mu": RNG.normal(size=3) * 0.3, "log_sigma": np.full(3, -1.0)}
    key = random.PRNGKey(7)
    f = lambda p: elbo(p, key, to_snp(X_LR), to_snp(Y_LR))
    check_grad(f, params)
    # the same estimate written with a loop over samples
    eps = np.asarray(random.normal(key, (4, 3)))
    ws = params["mu"] + np.exp(params["log_sigma"]) * eps
    want = np.mean([float(log_joint(to_snp(w), to_snp(X_LR), to_snp(Y_LR))) for w in ws]) \
        + np.sum(params["log_sigma"]) + 1.5 * (1 + np.log(2 * np.pi))
    np.testing.assert_allclose(f(to_snp(params)), want, rtol=1e-12)
    # a few SVI steps under jit raise the ELBO averaged over fresh keys
    step = jit(lambda p, k: {n: p[n] + 0.05 * g for n, g in
                             grad(elbo)(p, k, to_snp(X_LR), to_snp(Y_LR)).items()})
    p, keys = to_snp(params), random.split(random.PRNGKey(1), 20)
    for k in keys:
        p = step(p, k)
    avg = lambda p: np.mean([float(elbo(p, k, to_snp(X_LR), to_snp(Y_LR), 16)) for k in keys[:5]])
    assert avg(p) > avg(to_snp(params))


def iwae_bound(params, key, x, k=5):
    # a one-dimensional latent z ~ N(0, 1), x ~ N(z, 1); q(z) = N(mu, sigma)
    mu, sigma = params[0], jnp.exp(params[1])
    z = mu + sigma * random.normal(key, (k,))
    log_w = norm.logpdf(z) + jnp.sum(norm.logpdf(x[None, :], z[:, None]), axis=1) \
        - norm.logpdf(z, mu, sigma)
    return logsumexp(log_w) - jnp.log(k)


def test_importance_weighted_elbo(x64):
    xs = RNG.normal(loc=0.5, size=4)
    params = np.array([0.1, -0.5])
    key = random.PRNGKey(11)
    check_grad(lambda p: iwae_bound(p, key, to_snp(xs)), params)
    # with q the exact posterior every weight equals the evidence: the bound is exact
    n = len(xs)
    post = np.array([xs.sum() / (n + 1), 0.5 * np.log(1.0 / (n + 1))])
    evidence = float(jnp.sum(norm.logpdf(to_snp(xs), 0.0, 1.0))) - 0.5 * np.log(n + 1) \
        + 0.5 * xs.sum() ** 2 / (n + 1)
    np.testing.assert_allclose(iwae_bound(to_snp(post), key, to_snp(xs)), evidence, rtol=1e-10)
    check_vmap(lambda k: iwae_bound(to_snp(params), k, to_snp(xs)),
               (random.split(key, 3),))


# --- Gaussian processes and Laplace ------------------------------------------------------------
def gp_neg_log_marginal(hyper, x, y):
    ls = jnp.exp(hyper["log_lengthscales"])
    d = (x[:, None, :] - x[None, :, :]) / ls
    k = jnp.exp(2 * hyper["log_amp"]) * jnp.exp(-0.5 * jnp.sum(d ** 2, axis=-1))
    k = k + (jnp.exp(2 * hyper["log_noise"]) + 1e-9) * jnp.eye(x.shape[0])
    chol = jnp.linalg.cholesky(k)
    alpha = solve_triangular(chol, y, lower=True)
    return 0.5 * jnp.sum(alpha ** 2) + jnp.sum(jnp.log(jnp.diag(chol))) \
        + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi)


def test_gp_marginal_likelihood_ard_hyperparameters(x64):
    x = RNG.uniform(-2, 2, size=(7, 2))
    y = np.sin(x[:, 0]) + 0.1 * x[:, 1]
    hyper = {"log_lengthscales": np.array([0.1, 0.6]), "log_amp": np.array(0.0),
             "log_noise": np.array(-1.5)}
    got = gp_neg_log_marginal(to_snp(hyper), to_snp(x), to_snp(y))
    ls, amp, noise = np.exp(hyper["log_lengthscales"]), 1.0, np.exp(-1.5)
    d = (x[:, None] - x[None]) / ls
    k = amp * np.exp(-0.5 * (d ** 2).sum(-1)) + (noise ** 2 + 1e-9) * np.eye(7)
    want = 0.5 * y @ np.linalg.solve(k, y) + 0.5 * np.linalg.slogdet(k)[1] + 3.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    check_grad(gp_neg_log_marginal, hyper, x, y)
    # type-II maximum likelihood: a few jitted gradient steps lower the objective
    vg = jit(value_and_grad(gp_neg_log_marginal))
    h = to_snp(hyper)
    v0, _ = vg(h, to_snp(x), to_snp(y))
    for _ in range(5):
        v, g = vg(h, to_snp(x), to_snp(y))
        h = {n: h[n] - 0.05 * g[n] for n in h}
    assert vg(h, to_snp(x), to_snp(y))[0] < v0


def laplace_log_evidence(log_prior_scale, x, y, newton_steps=6):
    prior_scale = jnp.exp(log_prior_scale)

    def neg_log_post(w):
        logits = x @ w
        return -jnp.sum(y * logits - jnp.logaddexp(0.0, logits)) \
            + 0.5 * jnp.sum(w ** 2) / prior_scale ** 2

    w = jnp.zeros(x.shape[1])
    for _ in range(newton_steps):
        w = w - jnp.linalg.solve(hessian(neg_log_post)(w), grad(neg_log_post)(w))
    h = hessian(neg_log_post)(w)
    _, logdet = jnp.linalg.slogdet(h)
    d = x.shape[1]
    return -neg_log_post(w) - 0.5 * logdet - d * jnp.log(prior_scale)


def test_laplace_approximation_evidence(x64):
    x, y = X_LR[:, :2], Y_LR
    f = lambda s: laplace_log_evidence(s, to_snp(x), to_snp(y))
    check_grad(f, np.array(0.2), rtol=1e-5, atol=1e-7)
    # eager and jit agree; vmap over prior scales against a loop
    np.testing.assert_allclose(jit(f)(0.2), f(0.2), rtol=1e-10)
    check_vmap(f, (np.array([-0.5, 0.0, 0.5]),))


def gmm_log_likelihood(params, x):
    log_w = jax_log_softmax(params["logits"])
    comp = norm.logpdf(x[:, None], params["means"][None, :], jnp.exp(params["log_scales"])[None])
    return jnp.sum(logsumexp(log_w[None, :] + comp, axis=1))


def jax_log_softmax(v):
    return v - logsumexp(v)


def test_gaussian_mixture_log_likelihood_and_hessian(x64):
    x = np.concatenate([RNG.normal(-1, 0.5, 5), RNG.normal(1.5, 0.7, 5)])
    params = {"logits": np.array([0.1, -0.2]), "means": np.array([-0.8, 1.2]),
              "log_scales": np.array([-0.5, -0.3])}
    w = np.exp(params["logits"]) / np.exp(params["logits"]).sum()
    s = np.exp(params["log_scales"])
    dens = (w * np.exp(-0.5 * ((x[:, None] - params["means"]) / s) ** 2)
            / (s * np.sqrt(2 * np.pi))).sum(1)
    np.testing.assert_allclose(gmm_log_likelihood(to_snp(params), to_snp(x)),
                               np.log(dens).sum(), rtol=1e-12)
    check_grad(gmm_log_likelihood, params, x)
    # the observed information in the means: hessian against differences of the gradient
    f = lambda m: gmm_log_likelihood({**to_snp(params), "means": m}, to_snp(x))
    h = hessian(f)(to_snp(params["means"]))
    fd = np.stack([fd_grad(lambda m: grad(f)(m)[i], (to_snp(params["means"]),))
                   for i in range(2)])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(jit(hessian(f))(to_snp(params["means"])), h, rtol=1e-10)

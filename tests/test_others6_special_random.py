"""Issue 15, code written by others (sixth round): scipy.special and PRNG code as users write it
with JAX: count likelihoods by gammaln (negative binomial, beta-binomial with betaln, Dirichlet-
multinomial), digamma and polygamma as the derivatives of gammaln, a Student-t likelihood in its
degrees of freedom, probit regression by erf and log_ndtr, a weighted logsumexp with b= (and
signed weights with return_sign), entropy by xlogy / entr, a Poisson CDF by gammaincc; and keys
threaded as users thread them: per-example keys by fold_in inside vmap, keys split in a scan (a
random walk, a dropout RNN), inverted dropout whose gradient is the mask, Monte Carlo gradients
by vmap over keys, categorical sampling in a loop; each under the transforms its author would
use, checked against float64 finite differences, closed forms, a Python loop and eager."""
import numpy as np
import scipy.special as sps

import secant.numpy as jnp
from secant import grad, hessian, jit, jvp, lax, random, vmap
from secant.scipy import special

from others15_check import assert_trees_close, check_grad, check_vmap

RNG = np.random.default_rng(6262)


# --- count likelihoods ---------------------------------------------------------------------------
def negbin_loglik(log_r, logit_p, k):
    r, p = jnp.exp(log_r), special.expit(logit_p)
    return jnp.sum(special.gammaln(k + r) - special.gammaln(r) - special.gammaln(k + 1)
                   + r * jnp.log1p(-p) + k * jnp.log(p))


def test_negative_binomial_likelihood(x64):
    k = RNG.integers(0, 9, size=12).astype(float)
    log_r, logit_p = np.log(2.5), 0.3
    r, p = 2.5, sps.expit(0.3)
    want = np.sum(sps.gammaln(k + r) - sps.gammaln(r) - sps.gammaln(k + 1) + r * np.log1p(-p)
                  + k * np.log(p))
    np.testing.assert_allclose(negbin_loglik(log_r, logit_p, k), want, rtol=1e-12)
    check_grad(negbin_loglik, log_r, logit_p, k)
    check_grad(negbin_loglik, log_r, logit_p, k, argnum=1)
    # d/dr by digamma, written out
    g = grad(negbin_loglik)(jnp.asarray(log_r), jnp.asarray(logit_p), jnp.asarray(k))
    dr = np.sum(sps.digamma(k + r) - sps.digamma(r) + np.log1p(-p))
    np.testing.assert_allclose(g, dr * r, rtol=1e-10)
    # second order: the Fisher information in log r, by hessian, against differences of grad
    h = hessian(negbin_loglik)(jnp.asarray(log_r), jnp.asarray(logit_p), jnp.asarray(k))
    eps = 1e-5
    gr = lambda lr: float(grad(negbin_loglik)(jnp.asarray(lr), jnp.asarray(logit_p), jnp.asarray(k)))
    np.testing.assert_allclose(h, (gr(log_r + eps) - gr(log_r - eps)) / (2 * eps), rtol=1e-6)


def test_digamma_and_polygamma_are_gammaln_derivatives(x64):
    x = np.array([0.3, 1.0, 2.5, 7.0])
    assert_trees_close(vmap(grad(special.gammaln))(jnp.asarray(x)), sps.digamma(x), rtol=1e-10)
    assert_trees_close(vmap(grad(grad(special.gammaln)))(jnp.asarray(x)), sps.polygamma(1, x), rtol=1e-8)
    assert_trees_close(vmap(grad(special.digamma))(jnp.asarray(x)), sps.polygamma(1, x), rtol=1e-8)
    assert_trees_close(jit(vmap(grad(special.digamma)))(jnp.asarray(x)), sps.polygamma(1, x), rtol=1e-8)


def beta_binomial_loglik(log_ab, k, n):
    a, b = jnp.exp(log_ab[0]), jnp.exp(log_ab[1])
    log_choose = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    return jnp.sum(log_choose + special.betaln(k + a, n - k + b) - special.betaln(a, b))


def test_beta_binomial(x64):
    n = np.full(8, 10.0)
    k = RNG.integers(0, 11, size=8).astype(float)
    log_ab = np.log([2.0, 3.5])
    from scipy.stats import betabinom
    np.testing.assert_allclose(beta_binomial_loglik(jnp.asarray(log_ab), k, n),
                               betabinom.logpmf(k, n, 2.0, 3.5).sum(), rtol=1e-10)
    check_grad(beta_binomial_loglik, log_ab, k, n)
    check_vmap(beta_binomial_loglik, (np.log(RNG.uniform(1, 4, size=(3, 2))), k, n),
               in_axes=(0, None, None))


def dirichlet_logpdf(log_alpha, x):
    alpha = jnp.exp(log_alpha)
    return (special.gammaln(jnp.sum(alpha)) - jnp.sum(special.gammaln(alpha))
            + jnp.sum((alpha - 1) * jnp.log(x)))


def test_dirichlet_logpdf_grad_closed_form(x64):
    log_alpha = np.log([1.5, 2.0, 0.7])
    x = np.array([0.2, 0.5, 0.3])
    from scipy.stats import dirichlet
    np.testing.assert_allclose(dirichlet_logpdf(jnp.asarray(log_alpha), x),
                               dirichlet.logpdf(x, np.exp(log_alpha)), rtol=1e-10)
    alpha = np.exp(log_alpha)
    want = alpha * (sps.digamma(alpha.sum()) - sps.digamma(alpha) + np.log(x))
    assert_trees_close(grad(dirichlet_logpdf)(jnp.asarray(log_alpha), jnp.asarray(x)), want, rtol=1e-10)
    check_grad(dirichlet_logpdf, log_alpha, x)
    check_grad(dirichlet_logpdf, log_alpha, x, argnum=1)


def student_t_nll(params, y):
    mu, log_sigma, log_nu = params
    sigma, nu = jnp.exp(log_sigma), jnp.exp(log_nu)
    z = (y - mu) / sigma
    return -jnp.sum(special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2)
                    - 0.5 * jnp.log(nu * jnp.pi) - log_sigma
                    - (nu + 1) / 2 * jnp.log1p(z ** 2 / nu))


def test_student_t_in_degrees_of_freedom(x64):
    y = RNG.standard_t(4, size=10)
    params = np.array([0.1, np.log(1.2), np.log(4.0)])
    from scipy.stats import t as t_dist
    np.testing.assert_allclose(student_t_nll(jnp.asarray(params), y),
                               -t_dist.logpdf(y, 4.0, 0.1, 1.2).sum(), rtol=1e-10)
    check_grad(student_t_nll, params, y)
    h = hessian(student_t_nll)(jnp.asarray(params), jnp.asarray(y))
    np.testing.assert_allclose(h, np.asarray(h).T, rtol=1e-10)
    check_vmap(grad(student_t_nll), (params, RNG.standard_t(4, size=(3, 10))), in_axes=(None, 0))


def probit_nll(w, x, y):
    z = x @ w
    # log Phi(z) for y = 1, log Phi(-z) for y = 0: log_ndtr is stable in the tails
    return -jnp.sum(y * special.log_ndtr(z) + (1 - y) * special.log_ndtr(-z))


def gaussian_cdf(z):
    return 0.5 * (1 + special.erf(z / jnp.sqrt(2.0)))


def test_probit_regression_erf_and_log_ndtr(x64):
    x = RNG.normal(size=(15, 3))
    y = (RNG.uniform(size=15) > 0.5).astype(float)
    w = RNG.normal(size=3)
    check_grad(probit_nll, w, x, y)
    # log_ndtr against the log of the erf CDF in the middle range
    z = jnp.linspace(-3.0, 3.0, 7)
    assert_trees_close(special.log_ndtr(z), np.log(np.asarray(gaussian_cdf(z))), rtol=1e-10)
    assert_trees_close(vmap(grad(gaussian_cdf))(z), np.exp(-np.asarray(z) ** 2 / 2) / np.sqrt(2 * np.pi))
    # far in the tail the gradient stays finite (erf's log would give inf)
    g = grad(lambda z: special.log_ndtr(z))(jnp.asarray(-30.0))
    np.testing.assert_allclose(g, 30.0, rtol=2e-3)


# --- logsumexp with weights, entropies ------------------------------------------------------------
def log_mean_exp_weighted(logits, weights):
    return special.logsumexp(logits, b=weights / jnp.sum(weights))


def test_logsumexp_with_b(x64):
    logits, weights = RNG.normal(size=6), RNG.uniform(0.1, 1.0, size=6)
    want = np.log(np.sum(weights / weights.sum() * np.exp(logits)))
    np.testing.assert_allclose(log_mean_exp_weighted(jnp.asarray(logits), jnp.asarray(weights)), want,
                               rtol=1e-12)
    check_grad(log_mean_exp_weighted, logits, weights)
    check_grad(log_mean_exp_weighted, logits, weights, argnum=1)
    check_vmap(log_mean_exp_weighted, (RNG.normal(size=(4, 6)), weights), in_axes=(0, None))


def signed_log_diff(a, b):
    """log|e^a - e^b| with its sign, by logsumexp(b=[1, -1], return_sign=True)."""
    out, sign = special.logsumexp(jnp.stack([a, b]), b=jnp.array([1.0, -1.0]), return_sign=True)
    return out * sign


def test_logsumexp_return_sign(x64):
    a, b = 0.3, 1.1
    np.testing.assert_allclose(signed_log_diff(jnp.asarray(a), jnp.asarray(b)),
                               -np.log(np.exp(b) - np.exp(a)), rtol=1e-12)
    ga = grad(signed_log_diff, argnums=(0, 1))(jnp.asarray(a), jnp.asarray(b))
    # d/da of -log(e^b - e^a) = e^a / (e^b - e^a)
    d = np.exp(b) - np.exp(a)
    assert_trees_close(ga, (np.exp(a) / d, -np.exp(b) / d), rtol=1e-10)
    check_grad(signed_log_diff, a, b)
    check_vmap(signed_log_diff, (RNG.normal(size=5), RNG.normal(size=5) + 3))


def entropy_regularised(logits):
    p = jnp.exp(logits - special.logsumexp(logits))
    return jnp.sum(special.entr(p)) - jnp.sum(special.xlogy(p, p + 1.0))


def test_entropy_by_entr_and_xlogy(x64):
    logits = RNG.normal(size=5)
    p = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(entropy_regularised(jnp.asarray(logits)),
                               -np.sum(p * np.log(p)) - np.sum(p * np.log(p + 1)), rtol=1e-12)
    check_grad(entropy_regularised, logits)
    h = hessian(entropy_regularised)(jnp.asarray(logits))
    np.testing.assert_allclose(np.asarray(h) @ np.ones(5), 0.0, atol=1e-10)   # shift-invariant


def poisson_cdf_loss(log_rate, k):
    # P(K <= k) = Q(k + 1, rate), the regularised upper incomplete gamma
    return -jnp.sum(jnp.log(special.gammaincc(k + 1, jnp.exp(log_rate))))


def test_poisson_cdf_by_gammaincc(x64):
    k = np.array([0.0, 2.0, 3.0, 6.0])
    log_rate = np.log(2.5)
    from scipy.stats import poisson
    np.testing.assert_allclose(poisson_cdf_loss(jnp.asarray(log_rate), k),
                               -poisson.logcdf(k, 2.5).sum(), rtol=1e-10)
    g = check_grad(poisson_cdf_loss, log_rate, k)
    # d/drate P(K <= k) = -pmf(k): so d/dlog_rate of -log CDF = rate * pmf / cdf
    want = np.sum(2.5 * poisson.pmf(k, 2.5) / poisson.cdf(k, 2.5))
    np.testing.assert_allclose(g, want, rtol=1e-8)


# --- keys -------------------------------------------------------------------------------------------
def dropout(key, x, rate):
    keep = random.bernoulli(key, 1 - rate, x.shape)
    return jnp.where(keep, x / (1 - rate), 0.0)


def mlp_with_dropout(params, x, key, rate=0.3):
    (w1, b1), (w2, b2) = params
    h = jnp.tanh(x @ w1 + b1)
    h = dropout(key, h, rate)
    return h @ w2 + b2


def test_dropout_gradient_is_the_mask(x64):
    params = [(RNG.normal(size=(3, 5)), RNG.normal(size=5)), (RNG.normal(size=(5, 1)), RNG.normal(size=1))]
    x = RNG.normal(size=(4, 3))
    key = random.PRNGKey(7)
    loss = lambda p, x: jnp.sum(mlp_with_dropout(p, x, key) ** 2)
    check_grad(loss, params, x)
    # d/dh of dropout(h) is mask / keep: jvp along ones gives exactly that
    h = jnp.asarray(RNG.normal(size=(4, 5)))
    _, t = jvp(lambda h: dropout(key, h, 0.3), (h,), (jnp.ones_like(h),))
    keep = np.asarray(random.bernoulli(key, 0.7, (4, 5)))
    np.testing.assert_allclose(t, keep / 0.7, rtol=1e-12)
    assert_trees_close(jit(lambda h: dropout(key, h, 0.3))(h), dropout(key, h, 0.3))


def per_example_noise_loss(w, xs, key):
    """Each example gets its own key by fold_in with its index, inside vmap."""
    def one(x, i):
        k = random.fold_in(key, i)
        noise = 0.1 * random.normal(k, x.shape)
        return jnp.sum(jnp.tanh((x + noise) @ w) ** 2)
    return jnp.mean(vmap(one)(xs, jnp.arange(xs.shape[0])))


def test_fold_in_inside_vmap(x64):
    w, xs = RNG.normal(size=(3, 2)), RNG.normal(size=(5, 3))
    key = random.PRNGKey(11)
    loop = np.mean([float(jnp.sum(jnp.tanh((jnp.asarray(x) + 0.1 * random.normal(random.fold_in(key, i), (3,)))
                                           @ jnp.asarray(w)) ** 2)) for i, x in enumerate(xs)])
    np.testing.assert_allclose(per_example_noise_loss(jnp.asarray(w), jnp.asarray(xs), key), loop, rtol=1e-12)
    check_grad(per_example_noise_loss, w, xs, key)
    np.testing.assert_allclose(jit(per_example_noise_loss)(jnp.asarray(w), jnp.asarray(xs), key), loop,
                               rtol=1e-12)


def random_walk(drift, key, n=8):
    def step(carry, _):
        x, key = carry
        key, sub = random.split(key)
        x = x + drift + 0.5 * random.normal(sub)
        return (x, key), x
    _, path = lax.scan(step, (0.0, key), None, length=n)
    return path


def test_keys_split_in_a_scan(x64):
    """Regression: a key in a differentiated carry, split in the body, was refused ("random.split
    has no derivative in secant"): a key is integers, with no derivative, as in JAX."""
    key = random.PRNGKey(5)
    path = random_walk(jnp.asarray(0.2), key)
    x, k, want = 0.0, key, []
    for _ in range(8):
        k, sub = random.split(k)
        x = x + 0.2 + 0.5 * float(random.normal(sub))
        want.append(x)
    np.testing.assert_allclose(path, want, rtol=1e-12)
    # the path is linear in the drift: d path_t / d drift = t + 1
    assert_trees_close(jvp(lambda d: random_walk(d, key), (jnp.asarray(0.2),), (jnp.asarray(1.0),))[1],
                       np.arange(1.0, 9.0))
    g = grad(lambda d: jnp.sum(random_walk(d, key) ** 2))(jnp.asarray(0.2))
    np.testing.assert_allclose(g, 2 * np.sum(np.array(want) * np.arange(1, 9)), rtol=1e-10)
    # many walks by vmap over keys
    keys = random.split(key, 3)
    check_vmap(lambda k: random_walk(0.2, k), (keys,))


def rnn_with_dropout(params, xs, key, rate=0.2):
    w_h, w_x = params

    def cell(carry, x):
        h, key = carry
        key, sub = random.split(key)
        h = jnp.tanh(dropout(sub, h, rate) @ w_h + x @ w_x)
        return (h, key), h
    (h, _), hs = lax.scan(cell, (jnp.zeros(w_h.shape[0]), key), xs)
    return jnp.sum(hs ** 2) + jnp.sum(h)


def test_rnn_with_dropout_keys_in_the_carry(x64):
    params = (0.5 * RNG.normal(size=(4, 4)), RNG.normal(size=(2, 4)))
    xs = RNG.normal(size=(6, 2))
    key = random.PRNGKey(2)
    check_grad(rnn_with_dropout, params, xs, key)
    check_vmap(lambda p, xs: rnn_with_dropout(p, xs, key), (params, RNG.normal(size=(3, 6, 2))),
               in_axes=(None, 0))


def mc_gradient(theta, keys):
    """A reparameterised Monte Carlo estimate of d/dtheta E[(theta + eps)^2 sin(theta)]."""
    def one(key):
        eps = random.normal(key)
        return (theta + eps) ** 2 * jnp.sin(theta)
    return jnp.mean(vmap(grad(lambda t, k: one_at(t, k)))(jnp.full(keys.shape[0], theta), keys))


def one_at(theta, key):
    eps = random.normal(key)
    return (theta + eps) ** 2 * jnp.sin(theta)


def test_monte_carlo_gradient_by_vmap_over_keys(x64):
    keys = random.split(random.PRNGKey(0), 6)
    theta = 0.7
    est = mc_gradient(jnp.asarray(theta), keys)
    loop = np.mean([float(grad(one_at)(jnp.asarray(theta), k)) for k in keys])
    np.testing.assert_allclose(est, loop, rtol=1e-12)
    eps = np.array([float(random.normal(k)) for k in keys])
    want = np.mean(2 * (theta + eps) * np.sin(theta) + (theta + eps) ** 2 * np.cos(theta))
    np.testing.assert_allclose(est, want, rtol=1e-10)
    np.testing.assert_allclose(jit(mc_gradient)(jnp.asarray(theta), keys), est, rtol=1e-12)


def sample_sequence(logits_table, key, n=6):
    """A Markov chain sampled with categorical in a Python loop; the log-probability of the
    sampled path is differentiated in the table (a score-function estimator)."""
    state, logp = 0, 0.0
    for _ in range(n):
        key, sub = random.split(key)
        nxt = random.categorical(sub, logits_table[state])
        logp = logp + jax_log_softmax(logits_table[state])[nxt]
        state = nxt
    return logp


def jax_log_softmax(z):
    return z - special.logsumexp(z)


def test_categorical_sampling_score_function(x64):
    """Regression: categorical of differentiated logits was refused; its draw is an integer."""
    table = RNG.normal(size=(3, 3))
    key = random.PRNGKey(9)
    g = check_grad(sample_sequence, table, key)
    # each row's gradient sums to zero (softmax is shift-invariant)
    np.testing.assert_allclose(np.asarray(g).sum(1), 0.0, atol=1e-10)
    np.testing.assert_allclose(jit(sample_sequence)(jnp.asarray(table), key),
                               sample_sequence(jnp.asarray(table), key), rtol=1e-12)

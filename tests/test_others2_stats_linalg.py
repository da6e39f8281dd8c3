"""Issue 15, code written by others (second round): likelihoods with jax.scipy.stats logpdfs and
jax.scipy.special functions, losses through linalg (solve, cholesky, slogdet, eigh, svd, qr,
inv), FFT-based convolution and einsum-heavy tensor code, under grad, vmap, jit and their
compositions; checked against float64 finite differences, closed forms, a Python loop and eager."""
import numpy as np

import secant
import secant.numpy as jnp
from secant import grad
from secant.scipy import special, stats
from secant.scipy.special import gammaln, logsumexp

from others15_check import check_grad, check_vmap, to_snp

RNG = np.random.default_rng(2323)


# --- a hierarchical model's log density with scipy.stats ----------------------------------------
DATA = RNG.normal(loc=1.0, scale=2.0, size=(3, 5))


def log_joint(params, data):
    mu, log_tau, z = params["mu"], params["log_tau"], params["z"]
    tau = jnp.exp(log_tau)
    theta = mu + tau * z                      # non-centred group means
    lp = stats.norm.logpdf(mu, 0.0, 5.0)
    lp += stats.cauchy.logpdf(tau, 0.0, 2.5) + log_tau      # (the Jacobian of exp)
    lp += jnp.sum(stats.norm.logpdf(z))
    lp += jnp.sum(stats.norm.logpdf(data, theta[:, None], 2.0))
    return lp


PARAMS = {"mu": 0.4, "log_tau": -0.2, "z": RNG.normal(size=3)}


def test_hierarchical_log_joint(x64):
    g = check_grad(log_joint, PARAMS, DATA)
    check_grad(log_joint, PARAMS, DATA, argnum=1)
    # the data term's gradient in mu, in closed form
    tau = np.exp(PARAMS["log_tau"])
    theta = PARAMS["mu"] + tau * PARAMS["z"]
    want_mu = -PARAMS["mu"] / 25.0 + np.sum((DATA - theta[:, None]) / 4.0)
    np.testing.assert_allclose(g["mu"], want_mu, rtol=1e-10)
    # a batch of chains: vmap over parameter dicts
    chains = {"mu": RNG.normal(size=4), "log_tau": RNG.normal(size=4) * 0.3,
              "z": RNG.normal(size=(4, 3))}
    check_vmap(log_joint, (chains, DATA), in_axes=(0, None))
    check_vmap(grad(log_joint), (chains, DATA), in_axes=(0, None))


# --- Poisson and gamma regression likelihoods with special functions ---------------------------
COUNTS = np.array([0.0, 3.0, 1.0, 7.0, 2.0])
FEATS = RNG.normal(size=(5, 2))


def poisson_nll(w, x, y):
    log_rate = x @ w
    return -jnp.sum(y * log_rate - jnp.exp(log_rate) - gammaln(y + 1.0))


def test_poisson_regression_matches_stats(x64):
    w = RNG.normal(size=2) * 0.3
    direct = -jnp.sum(stats.poisson.logpmf(COUNTS, jnp.exp(FEATS @ w)))
    np.testing.assert_allclose(poisson_nll(to_snp(w), FEATS, COUNTS), direct, rtol=1e-12)
    g = check_grad(poisson_nll, w, FEATS, COUNTS)
    np.testing.assert_allclose(g, -FEATS.T @ (COUNTS - np.exp(FEATS @ w)), rtol=1e-10)
    H = secant.hessian(poisson_nll)(to_snp(w), FEATS, COUNTS)
    np.testing.assert_allclose(H, FEATS.T @ np.diag(np.exp(FEATS @ w)) @ FEATS, rtol=1e-10)


def gamma_loglik(log_shape, log_rate, x):
    a, b = jnp.exp(log_shape), jnp.exp(log_rate)
    return jnp.sum(a * jnp.log(b) - gammaln(a) + special.xlogy(a - 1, x) - b * x)


def test_gamma_likelihood_digamma_gradient(x64):
    x = np.array([0.5, 1.2, 2.0, 3.3])
    ls, lr = 0.3, -0.1
    g = check_grad(gamma_loglik, ls, lr, x)
    a, b = np.exp(ls), np.exp(lr)
    want = a * np.sum(np.log(b) - np.asarray(special.digamma(a)) + np.log(x))
    np.testing.assert_allclose(g, want, rtol=1e-8)
    np.testing.assert_allclose(
        gamma_loglik(ls, lr, to_snp(x)),
        np.sum(stats.gamma.logpdf(to_snp(x), a, scale=1 / b)), rtol=1e-12)
    check_vmap(grad(gamma_loglik), (np.array([0.1, 0.3, 0.6]), lr, x), in_axes=(0, None, None))


# --- mixture log-likelihood with logsumexp and log_softmax ---------------------------------------
def mixture_ll(logits, means, log_scales, x):
    log_w = secant.nn.log_softmax(logits)
    comps = stats.norm.logpdf(x[:, None], means, jnp.exp(log_scales))   # (n, k)
    return jnp.sum(logsumexp(comps + log_w, axis=1))


def test_mixture_logsumexp(x64):
    x = RNG.normal(size=6)
    args = (RNG.normal(size=3), np.array([-1.0, 0.0, 1.5]), np.array([0.1, -0.3, 0.2]), x)
    for k in range(3):
        check_grad(mixture_ll, *args, argnum=k)
    check_vmap(mixture_ll, (args[0], args[1], args[2], RNG.normal(size=(4, 6))),
               in_axes=(None, None, None, 0))
    check_vmap(grad(mixture_ll, argnums=1),
               (args[0], RNG.normal(size=(4, 3)), args[2], x), in_axes=(None, 0, None, None))


# --- Gaussian log marginal likelihood: cholesky, solve, slogdet ----------------------------------
def rbf(x1, x2, log_ell):
    d = x1[:, None] - x2[None, :]
    return jnp.exp(-0.5 * d ** 2 / jnp.exp(2 * log_ell))


def gp_nll_slogdet(log_ell, log_noise, x, y):
    K = rbf(x, x, log_ell) + jnp.exp(log_noise) * jnp.eye(x.shape[0])
    sign, logdet = jnp.linalg.slogdet(K)
    alpha = jnp.linalg.solve(K, y)
    return 0.5 * y @ alpha + 0.5 * logdet


def gp_nll_cholesky(log_ell, log_noise, x, y):
    K = rbf(x, x, log_ell) + jnp.exp(log_noise) * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(K)
    z = secant.scipy.linalg.solve_triangular(L, y, lower=True)
    return 0.5 * z @ z + jnp.sum(jnp.log(jnp.diag(L)))


def test_gp_slogdet_and_cholesky_agree(x64):
    x, y = np.linspace(-2, 2, 5), np.sin(np.linspace(-2, 2, 5))
    a = gp_nll_slogdet(0.1, -1.0, to_snp(x), to_snp(y))
    np.testing.assert_allclose(gp_nll_cholesky(0.1, -1.0, to_snp(x), to_snp(y)), a, rtol=1e-10)
    for f in (gp_nll_slogdet, gp_nll_cholesky):
        check_grad(f, 0.1, -1.0, x, y)
        check_grad(f, 0.1, -1.0, x, y, argnum=1)
        check_grad(f, 0.1, -1.0, x, y, argnum=3)
    g1 = grad(gp_nll_slogdet, argnums=(0, 1))(0.1, -1.0, to_snp(x), to_snp(y))
    g2 = grad(gp_nll_cholesky, argnums=(0, 1))(0.1, -1.0, to_snp(x), to_snp(y))
    np.testing.assert_allclose(g1, g2, rtol=1e-9)
    check_vmap(gp_nll_cholesky, (np.array([0.0, 0.2, 0.5]), -1.0, x, y),
               in_axes=(0, None, None, None))


# --- spectral losses: eigh, svd, qr, inv --------------------------------------------------------
def sym(a):
    return 0.5 * (a + a.T)


def eig_loss(a):
    w, v = jnp.linalg.eigh(sym(a))
    return jnp.sum(w ** 3) + jnp.sum(v[:, -1] ** 4)


def nuclear_norm(a):
    return jnp.sum(jnp.linalg.svd(a, compute_uv=False))


def qr_loss(a):
    q, r = jnp.linalg.qr(a)
    return jnp.sum(jnp.abs(jnp.diag(r)) ** 1.5) + jnp.sum(jnp.sin(q[:, 0] * jnp.sign(r[0, 0])))


def inv_loss(a):
    return jnp.trace(jnp.linalg.inv(a @ a.T + jnp.eye(a.shape[0])))


def test_spectral_losses(x64):
    a = RNG.normal(size=(3, 3))
    check_grad(eig_loss, a, rtol=1e-5)
    # sum of cubed eigenvalues is trace(S^3): its gradient 3 S^2 (symmetrised)
    S = 0.5 * (a + a.T)
    g_tr = grad(lambda a: jnp.sum(jnp.linalg.eigh(sym(a))[0] ** 3))(to_snp(a))
    np.testing.assert_allclose(g_tr, 3 * S @ S, rtol=1e-8)
    g = check_grad(nuclear_norm, a)
    u, s, vt = np.linalg.svd(a)
    np.testing.assert_allclose(g, u @ vt, rtol=1e-8)
    check_grad(qr_loss, a, rtol=1e-5)
    g = check_grad(inv_loss, RNG.normal(size=(3, 2)))
    check_vmap(nuclear_norm, (RNG.normal(size=(4, 3, 3)),))
    check_vmap(grad(inv_loss), (RNG.normal(size=(4, 3, 2)),))
    check_vmap(grad(eig_loss), (RNG.normal(size=(2, 3, 3)),))


# --- FFT-based convolution ------------------------------------------------------------------------
def fft_conv(signal, kernel):
    n = signal.shape[-1] + kernel.shape[-1] - 1
    S = jnp.fft.rfft(signal, n=n)
    K = jnp.fft.rfft(kernel, n=n)
    return jnp.fft.irfft(S * K, n=n)


def fft_conv_loss(signal, kernel, target):
    return jnp.sum((fft_conv(signal, kernel) - target) ** 2)


def test_fft_convolution(x64):
    s, k = RNG.normal(size=8), RNG.normal(size=3)
    np.testing.assert_allclose(fft_conv(to_snp(s), to_snp(k)), np.convolve(s, k), atol=1e-12)
    target = RNG.normal(size=10)
    check_grad(fft_conv_loss, s, k, target)
    check_grad(fft_conv_loss, s, k, target, argnum=1)
    check_vmap(fft_conv, (RNG.normal(size=(4, 8)), k), in_axes=(0, None))
    check_vmap(grad(fft_conv_loss, argnums=1), (RNG.normal(size=(4, 8)), k, target),
               in_axes=(0, None, None))


def circular_smooth(x, width):
    """A Gaussian smoothing of a periodic signal in the Fourier domain (full complex fft)."""
    freqs = jnp.fft.fftfreq(x.shape[0])
    return jnp.real(jnp.fft.ifft(jnp.fft.fft(x) * jnp.exp(-0.5 * (freqs * width) ** 2)))


def test_fft_smoothing_width_gradient(x64):
    x = RNG.normal(size=8)
    check_grad(lambda w: jnp.sum(circular_smooth(to_snp(x), w) ** 2), 3.0)
    check_grad(lambda x: jnp.sum(circular_smooth(x, 3.0) * jnp.arange(8.0)), x)
    check_vmap(circular_smooth, (x, np.array([1.0, 2.0, 4.0])), in_axes=(None, 0))


# --- einsum-heavy tensor code ------------------------------------------------------------------
def multihead(q_in, kv_in, params):
    q = jnp.einsum("td,hdk->htk", q_in, params["wq"])
    k = jnp.einsum("sd,hdk->hsk", kv_in, params["wk"])
    v = jnp.einsum("sd,hdk->hsk", kv_in, params["wv"])
    logits = jnp.einsum("htk,hsk->hts", q, k) / jnp.sqrt(q.shape[-1])
    w = secant.nn.softmax(logits, axis=-1)
    out = jnp.einsum("hts,hsk->thk", w, v)
    return jnp.einsum("thk,hkd->td", out, params["wo"])


MH = {"wq": RNG.normal(size=(2, 3, 2)) * 0.5, "wk": RNG.normal(size=(2, 3, 2)) * 0.5,
      "wv": RNG.normal(size=(2, 3, 2)) * 0.5, "wo": RNG.normal(size=(2, 2, 3)) * 0.5}


def test_einsum_multihead_attention(x64):
    q_in, kv_in = RNG.normal(size=(4, 3)), RNG.normal(size=(5, 3))
    loss = lambda p, q, kv: jnp.sum(jnp.tanh(multihead(q, kv, p)))
    check_grad(loss, MH, q_in, kv_in)
    check_grad(loss, MH, q_in, kv_in, argnum=2)
    check_vmap(lambda q, kv, p: multihead(q, kv, p), (RNG.normal(size=(2, 4, 3)), kv_in, MH),
               in_axes=(0, None, None))
    check_vmap(grad(loss), (MH, RNG.normal(size=(2, 4, 3)), kv_in), in_axes=(None, 0, None))


def bilinear_tensor(x, W, y):
    return jnp.einsum("bi,kij,bj->bk", x, W, y)


def test_einsum_three_operands_and_trace(x64):
    x, W, y = RNG.normal(size=(3, 2)), RNG.normal(size=(4, 2, 5)), RNG.normal(size=(3, 5))
    for k in range(3):
        check_grad(lambda *a: jnp.sum(jnp.sin(bilinear_tensor(*a))), x, W, y, argnum=k)
    np.testing.assert_allclose(bilinear_tensor(*to_snp((x, W, y))),
                               np.einsum("bi,kij,bj->bk", x, W, y), rtol=1e-12)
    check_vmap(bilinear_tensor, (x, RNG.normal(size=(2, 4, 2, 5)), y), in_axes=(None, 0, None))
    # trace and diagonal by einsum
    A = RNG.normal(size=(4, 4))
    g = check_grad(lambda a: jnp.einsum("ii->", a @ a) + jnp.sum(jnp.einsum("ii->i", a) ** 3), A)
    np.testing.assert_allclose(g, 2 * A.T + np.diag(3 * np.diag(A) ** 2), rtol=1e-10)

"""Issue 15, code written by others (third round): more user programs of kinds not yet covered:
graph message passing with scatter-adds, a quantile loss through sort (median, percentile),
top-k gating, interpolation and convolution losses, polynomial least squares, a Gumbel-softmax
relaxation, an FFT power-spectrum loss, rotations by the matrix exponential, the double-where
trick for safe square roots, cumulative logsumexp, and a masked mean; each under the
transforms its author would use, checked against float64 finite differences, closed forms, a
Python loop and eager."""
import numpy as np

import secant.numpy as jnp
from secant import grad, jacfwd, jit, jvp, lax, nn, random, vmap
from secant.scipy.linalg import expm

from others15_check import check_grad, check_vmap, fd_grad, fd_jvp, to_snp

RNG = np.random.default_rng(3030303)


# --- graph message passing with scatter-adds ----------------------------------------------
SENDERS = np.array([0, 1, 2, 2, 3, 4, 1])
RECEIVERS = np.array([1, 2, 0, 3, 4, 0, 4])


def message_passing(params, h, senders=SENDERS, receivers=RECEIVERS):
    for W in params:
        messages = jnp.tanh(h[senders] @ W)
        agg = jnp.repeat(jnp.zeros_like(messages[:1]), h.shape[0], axis=0).at[receivers].add(
            messages)
        deg = jnp.zeros(h.shape[0]).at[receivers].add(1.0)
        h = h + agg / jnp.maximum(deg, 1.0)[:, None]
    return jnp.sum(h ** 2)


def np_message_passing(params, h):
    for W in params:
        agg = np.zeros_like(h)
        deg = np.zeros(h.shape[0])
        for s, r in zip(SENDERS, RECEIVERS):
            agg[r] += np.tanh(h[s] @ W)
            deg[r] += 1
        h = h + agg / np.maximum(deg, 1.0)[:, None]
    return np.sum(h ** 2)


def test_graph_message_passing(x64):
    params = [RNG.normal(size=(3, 3)) * 0.5 for _ in range(2)]
    h = RNG.normal(size=(5, 3))
    np.testing.assert_allclose(message_passing(to_snp(params), to_snp(h)),
                               np_message_passing(params, h), rtol=1e-12)
    check_grad(message_passing, params, h)
    check_grad(lambda h: message_passing(to_snp(params), h), h)
    check_vmap(message_passing, (params, RNG.normal(size=(3, 5, 3))), in_axes=(None, 0))


# --- a quantile (pinball) loss and robust statistics through sort ----------------------------
def pinball(pred, y, q=0.8):
    err = y - pred
    return jnp.mean(jnp.maximum(q * err, (q - 1) * err))


def robust_scale(x):
    med = jnp.median(x)
    return jnp.median(jnp.abs(x - med)) + 0.5 * (jnp.percentile(x, 75) - jnp.percentile(x, 25))


def test_quantile_losses(x64):
    y = RNG.normal(size=9)
    pred = RNG.normal(size=9)
    check_grad(pinball, pred, y)
    # the minimiser of the pinball loss over a constant is the q-quantile
    c = jnp.asarray(0.0)
    step = jit(lambda c: c - 0.5 * grad(lambda c: pinball(c * jnp.ones(9), to_snp(y)))(c))
    for _ in range(400):
        c = step(c)
    assert abs(float(c) - np.quantile(y, 0.8, method="inverted_cdf")) < 0.1
    x = RNG.normal(size=7)
    np.testing.assert_allclose(robust_scale(to_snp(x)),
                               np.median(np.abs(x - np.median(x))) + 0.5 * (
                                   np.percentile(x, 75) - np.percentile(x, 25)), rtol=1e-12)
    check_grad(robust_scale, x)
    check_vmap(robust_scale, (RNG.normal(size=(4, 7)),))


# --- top-k gating (a mixture of experts) ----------------------------------------------------
def moe(params, x, k=2):
    logits = x @ params["gate"]
    top_vals, top_idx = lax.top_k(logits, k)
    weights = nn.softmax(top_vals)
    expert_out = jnp.tanh(x @ params["experts"])            # (n_experts,) one number each
    chosen = jnp.take_along_axis(expert_out, top_idx, axis=-1)
    return jnp.sum(weights * chosen)


def test_top_k_mixture_of_experts(x64):
    params = {"gate": RNG.normal(size=(3, 5)), "experts": RNG.normal(size=(3, 5))}
    x = RNG.normal(size=3)
    logits = x @ params["gate"]
    idx = np.argsort(-logits)[:2]
    w = np.exp(logits[idx] - logits[idx].max())
    w /= w.sum()
    np.testing.assert_allclose(moe(to_snp(params), to_snp(x)),
                               np.sum(w * np.tanh(x @ params["experts"])[idx]), rtol=1e-12)
    check_grad(moe, params, x)
    check_grad(lambda x: moe(to_snp(params), x), x)
    check_vmap(moe, (params, RNG.normal(size=(4, 3))), in_axes=(None, 0))


# --- interpolation and convolution losses ---------------------------------------------------
def interp_loss(fp, xq):
    xp = jnp.linspace(0.0, 1.0, fp.shape[0])
    return jnp.sum(jnp.interp(xq, xp, fp) ** 2)


def smooth_loss(signal, kernel):
    return jnp.sum(jnp.convolve(signal, kernel, mode="same") ** 2) / signal.shape[0]


def test_interp_and_convolve(x64):
    fp = RNG.normal(size=6)
    xq = np.array([0.05, 0.33, 0.5, 0.91])
    want = np.sum(np.interp(xq, np.linspace(0, 1, 6), fp) ** 2)
    np.testing.assert_allclose(interp_loss(to_snp(fp), to_snp(xq)), want, rtol=1e-12)
    check_grad(interp_loss, fp, xq)
    check_grad(lambda xq: interp_loss(to_snp(fp), xq), xq)
    s, k = RNG.normal(size=10), np.array([0.25, 0.5, 0.25])
    np.testing.assert_allclose(smooth_loss(to_snp(s), to_snp(k)),
                               np.sum(np.convolve(s, k, mode="same") ** 2) / 10, rtol=1e-12)
    check_grad(smooth_loss, s, k)
    check_grad(lambda k: smooth_loss(to_snp(s), k), k)
    check_vmap(smooth_loss, (RNG.normal(size=(3, 10)), k), in_axes=(0, None))


# --- polynomial least squares by lstsq and polyval ------------------------------------------
def poly_fit_residual(y, x, deg=3):
    V = jnp.vander(x, deg + 1)
    coef, *_ = jnp.linalg.lstsq(V, y)
    return jnp.sum((jnp.polyval(coef, x) - y) ** 2), coef


def test_polynomial_least_squares(x64):
    x = np.linspace(-1, 1, 12)
    y = np.cos(2 * x) + 0.05 * RNG.normal(size=12)
    res, coef = poly_fit_residual(to_snp(y), to_snp(x))
    np.testing.assert_allclose(coef, np.polyfit(x, y, 3), rtol=1e-8)
    check_grad(lambda y: poly_fit_residual(y, to_snp(x))[0], y)
    # the fitted coefficients are linear in y: jacfwd equals the pseudo-inverse
    J = jacfwd(lambda y: poly_fit_residual(y, to_snp(x))[1])(to_snp(y))
    np.testing.assert_allclose(J, np.linalg.pinv(np.vander(x, 4)), atol=1e-10)


# --- a Gumbel-softmax relaxation -------------------------------------------------------------
def gumbel_softmax_loss(logits, key, tau=0.5):
    g = random.gumbel(key, logits.shape)
    y = nn.softmax((logits + g) / tau)
    return jnp.sum(y * jnp.arange(logits.shape[0]))


def test_gumbel_softmax(x64):
    logits = RNG.normal(size=4)
    key = random.PRNGKey(11)
    check_grad(gumbel_softmax_loss, logits, key)
    keys = random.split(key, 5)
    got = vmap(gumbel_softmax_loss, in_axes=(None, 0))(to_snp(logits), keys)
    for i in range(5):
        np.testing.assert_allclose(got[i], gumbel_softmax_loss(to_snp(logits), keys[i]),
                                   rtol=1e-12)
    g_mean = jnp.mean(vmap(grad(gumbel_softmax_loss), in_axes=(None, 0))(to_snp(logits), keys),
                      axis=0)
    want = np.mean([fd_grad(gumbel_softmax_loss, (to_snp(logits), keys[i])) for i in range(5)],
                   axis=0)
    np.testing.assert_allclose(g_mean, want, rtol=1e-5, atol=1e-7)


# --- an FFT power-spectrum loss -----------------------------------------------------------------
def spectrum_loss(x, target):
    power = jnp.abs(jnp.fft.rfft(x)) ** 2
    return jnp.sum((jnp.log1p(power) - target) ** 2)


def test_fft_power_spectrum(x64):
    x = RNG.normal(size=8)
    target = RNG.normal(size=5)
    want = np.sum((np.log1p(np.abs(np.fft.rfft(x)) ** 2) - target) ** 2)
    np.testing.assert_allclose(spectrum_loss(to_snp(x), to_snp(target)), want, rtol=1e-12)
    check_grad(spectrum_loss, x, target)
    check_vmap(spectrum_loss, (RNG.normal(size=(3, 8)), target), in_axes=(0, None))
    t = RNG.normal(size=8)
    np.testing.assert_allclose(jvp(lambda x: spectrum_loss(x, to_snp(target)), (to_snp(x),),
                                   (to_snp(t),))[1],
                               fd_jvp(lambda x: spectrum_loss(x, to_snp(target)), (x,), (t,)),
                               rtol=1e-6)


# --- rotations by the matrix exponential of a skew-symmetric matrix --------------------------
def rotation(omega):
    wx, wy, wz = omega
    K = jnp.array([[0.0, -wz, wy], [wz, 0.0, -wx], [-wy, wx, 0.0]])
    return expm(K)


def alignment_loss(omega, points, targets):
    R = rotation(omega)
    return jnp.sum((points @ R.T - targets) ** 2)


def test_rotation_expm(x64):
    omega = np.array([0.3, -0.2, 0.5])
    R = np.asarray(rotation(to_snp(omega)))
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    # Rodrigues' formula
    th = np.linalg.norm(omega)
    k = omega / th
    Kn = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    np.testing.assert_allclose(R, np.eye(3) + np.sin(th) * Kn + (1 - np.cos(th)) * Kn @ Kn,
                               atol=1e-12)
    pts = RNG.normal(size=(6, 3))
    tgt = pts @ R.T + 0.01 * RNG.normal(size=(6, 3))
    check_grad(alignment_loss, omega + 0.1, pts, tgt)
    check_vmap(rotation, (RNG.normal(size=(3, 3)) * 0.3,))


# --- the double-where trick and NaN semantics ---------------------------------------------------
def naive_safe_sqrt(x):
    return jnp.where(x > 0, jnp.sqrt(x), 0.0)


def safe_sqrt(x):
    safe = jnp.where(x > 0, x, 1.0)
    return jnp.where(x > 0, jnp.sqrt(safe), 0.0)


def test_double_where_trick(x64):
    xs = to_snp(np.array([-1.0, 0.0, 4.0]))
    np.testing.assert_allclose(vmap(grad(safe_sqrt))(xs), [0.0, 0.0, 0.25])
    np.testing.assert_allclose(jit(vmap(grad(safe_sqrt)))(xs), [0.0, 0.0, 0.25])
    # as in JAX, the naive form's gradient is NaN where the unselected branch's is (0 * inf)
    g = np.asarray(vmap(grad(naive_safe_sqrt))(xs))
    assert np.isnan(g[0]) and np.isnan(g[1]) and g[2] == 0.25
    np.testing.assert_allclose(grad(lambda x: jnp.sum(safe_sqrt(x) ** 2))(xs), [0.0, 0.0, 1.0])


# --- cumulative logsumexp (a reverse-time recursion) and a masked mean -----------------------
def cumulative_logsumexp_reverse(x):
    def step(carry, xi):
        out = jnp.logaddexp(carry, xi)
        return out, out
    _, ys = lax.scan(step, -jnp.inf, x, reverse=True)
    return ys


def masked_mean(x, mask):
    return jnp.sum(jnp.where(mask, x, 0.0)) / jnp.maximum(jnp.sum(mask), 1)


def test_cumulative_logsumexp_and_masked_mean(x64):
    x = RNG.normal(size=6)
    want = np.array([np.log(np.sum(np.exp(x[i:]))) for i in range(6)])
    np.testing.assert_allclose(cumulative_logsumexp_reverse(to_snp(x)), want, rtol=1e-12)
    w = RNG.normal(size=6)
    check_grad(lambda x: cumulative_logsumexp_reverse(x) @ to_snp(w), x)
    check_vmap(cumulative_logsumexp_reverse, (RNG.normal(size=(3, 6)),))
    mask = np.array([True, False, True, True, False, True])
    check_grad(masked_mean, x, mask)
    np.testing.assert_allclose(grad(masked_mean)(to_snp(x), mask), mask / 4.0)
    masks = RNG.random((4, 6)) < 0.5
    check_vmap(masked_mean, (RNG.normal(size=(4, 6)), masks))


def test_repeat_method_of_a_differentiated_array(x64):
    check_grad(lambda x: jnp.sum(x.repeat(2, axis=0) ** 2 * jnp.arange(6.0)[:, None]),
               RNG.normal(size=(3, 2)))


def test_top_k_indices_are_not_differentiated(x64):
    """lax.top_k's indices (ints from a differentiated input) index take_along_axis and take:
    they have no derivative, as in JAX (refused before: 'must not depend on differentiated')."""
    def f(x):
        vals, idx = lax.top_k(x, 2)
        return jnp.sum(vals * jnp.take_along_axis(x, idx, axis=-1))
    x = RNG.normal(size=5)
    check_grad(f, x)
    check_grad(lambda x: f(x) + jnp.take(x, lax.top_k(x, 2)[1][0]), x)
    check_vmap(f, (RNG.normal(size=(3, 5)),))
    check_vmap(grad(f), (RNG.normal(size=(3, 5)),))

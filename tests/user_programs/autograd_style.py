"""Programs after autograd's own tests and examples (issue 15, explore15i), rewritten for
secant: numpy functions one by one (tanh from exp, logsumexp with its max shift, the trig and
hyperbolic family, sorting, cumulative ops, linear algebra), a convnet's layers by hand, a
fluid simulation with rolls, a vanilla RNN, a Gaussian mixture, a Bayesian neural net's ELBO
with fixed noise."""
import numpy as np

import secant as jax
import secant.numpy as jnp
from secant.scipy.special import logsumexp as sp_logsumexp

from corpus import Case, vec

V5 = vec(700, 5)
M4 = vec(701, 4, 4)


def ag_tanh(x):
    y = jnp.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def ag_logsumexp(x):
    m = jnp.max(x)
    return m + jnp.log(jnp.sum(jnp.exp(x - m)))


def ag_hyperbolic(x):
    return jnp.sum(jnp.sinh(x) * jnp.cosh(0.5 * x) + jnp.arcsinh(x) + jnp.tanh(x) ** 2)


def ag_inverse_trig(x):
    y = 0.5 * x
    return jnp.sum(jnp.arcsin(y) + jnp.arccos(y) * y + jnp.arctan(x) + jnp.arctan2(x, 2.0 + y))


def ag_exp_log_family(x):
    p = 1.0 + x ** 2
    return jnp.sum(jnp.expm1(x) + jnp.log1p(p) + jnp.log2(p) + jnp.log10(p) + jnp.exp2(x)
                   + jnp.hypot(x, 1.5) + jnp.sqrt(p) + jnp.cbrt(p))


def ag_sort_cumulative(x):
    s = jnp.sort(x)
    return jnp.sum(s * jnp.arange(1.0, 6.0)) + jnp.sum(jnp.cumsum(x) ** 2) \
        + jnp.prod(1.0 + 0.1 * x) + jnp.sum(jnp.cumprod(1.0 + 0.2 * x))


def ag_diff_flip_roll(x):
    d = jnp.diff(x)
    return jnp.sum(d ** 2) + jnp.dot(jnp.flip(x), x) + jnp.sum(jnp.roll(x, 2) * x ** 2)


def ag_tri_kron_outer(a):
    lower = jnp.tril(a)
    upper = jnp.triu(a, k=1)
    k = jnp.kron(a[:2, :2], jnp.eye(2))
    return jnp.sum(lower ** 2) - jnp.sum(upper * a) + jnp.trace(k @ k.T) \
        + jnp.sum(jnp.outer(a[0], a[1]))


def ag_linalg(a):
    s = a @ a.T + 4.0 * jnp.eye(4)
    sign, logdet = jnp.linalg.slogdet(s)
    inv = jnp.linalg.inv(s)
    x = jnp.linalg.solve(s, jnp.arange(1.0, 5.0))
    w = jnp.linalg.eigh(s)[0]
    return jnp.linalg.det(s) * 1e-3 + sign * logdet + jnp.trace(inv) + jnp.sum(x) \
        + jnp.sum(w * jnp.arange(4.0))


def ag_norms(a):
    return jnp.linalg.norm(a) + jnp.linalg.norm(a[0]) + jnp.sum(jnp.linalg.norm(a, axis=1)) \
        + jnp.linalg.norm(a, ord=1) * 0.1


def ag_var_std(a):
    return jnp.sum(jnp.var(a, axis=0)) + jnp.std(a) + jnp.sum(jnp.std(a, axis=1, ddof=1)) \
        + jnp.mean(a, axis=(0, 1)) + jnp.sum(jnp.mean(a, axis=1, keepdims=True) * a)


def ag_einsum_chain(a, b):
    return jnp.einsum("ij,jk,kl->", a, b, a) + jnp.einsum("ii->", a @ b) \
        + jnp.sum(jnp.einsum("ij,ij->i", a, b) ** 2)


def ag_tensordot(a, b):
    t = jnp.tensordot(a, b, axes=([1], [0]))
    u = jnp.tensordot(a, b.T, axes=2)
    return jnp.sum(jnp.tanh(t)) + u


def ag_repeat_tile_split(x):
    r = jnp.repeat(x, 2)
    t = jnp.tile(x, (2, 1))
    parts = jnp.split(jnp.concatenate([x, x[::-1]]), 2)
    return jnp.sum(r * jnp.arange(10.0)) + jnp.sum(t ** 3) + jnp.sum(parts[0] * parts[1])


def ag_piecewise(x):
    y = jnp.where(x > 0.0, x ** 2, jnp.sin(x))
    return jnp.sum(y) + jnp.sum(jnp.abs(x - 2.0)) + jnp.sum(jnp.clip(x, -5.0, 5.0) ** 2) \
        + jnp.sum(jnp.maximum(x, -3.0) * jnp.minimum(x, 3.0))


# --- convnet layers by hand -------------------------------------------------------------------------
def conv1d_valid(x, w):
    k = w.shape[0]
    n = x.shape[0] - k + 1
    out = 0.0
    for j in range(k):
        out = out + w[j] * x[j:j + n]
    return out


def ag_conv1d(w, x):
    h = jnp.tanh(conv1d_valid(x, w))
    return jnp.sum(h ** 2)


def conv2d_valid(img, filt):
    kh, kw = filt.shape
    h, w = img.shape[0] - kh + 1, img.shape[1] - kw + 1
    out = jnp.zeros((h, w))
    for i in range(kh):
        for j in range(kw):
            out = out + filt[i, j] * img[i:i + h, j:j + w]
    return out


def maxpool2(x):
    h, w = x.shape
    return jnp.max(x.reshape(h // 2, 2, w // 2, 2), axis=(1, 3))


def ag_convnet(params, img):
    h = jnp.tanh(conv2d_valid(img, params["filt"]) + params["b"])
    p = maxpool2(h)
    logits = p.ravel() @ params["dense"]
    return -(logits[0] - sp_logsumexp(logits))


CONV = {"filt": vec(702, 3, 3), "b": 0.1, "dense": vec(703, 4, 3)}
IMG = vec(704, 6, 6)


# --- fluid simulation (autograd's examples/fluidsim, one dimension smaller) ----------------------------
def advect(f, vx, vy):
    rows, cols = f.shape
    cell_ys, cell_xs = jnp.meshgrid(jnp.arange(rows), jnp.arange(cols), indexing="ij")
    center_xs = (cell_xs - vx).ravel()
    center_ys = (cell_ys - vy).ravel()
    left_ix = jnp.floor(center_xs).astype(jnp.int32)
    top_ix = jnp.floor(center_ys).astype(jnp.int32)
    rw = center_xs - left_ix
    bw = center_ys - top_ix
    left_ix = jnp.mod(left_ix, cols)
    right_ix = jnp.mod(left_ix + 1, cols)
    top_ix = jnp.mod(top_ix, rows)
    bot_ix = jnp.mod(top_ix + 1, rows)
    flat = (1 - rw) * ((1 - bw) * f[top_ix, left_ix] + bw * f[bot_ix, left_ix]) \
        + rw * ((1 - bw) * f[top_ix, right_ix] + bw * f[bot_ix, right_ix])
    return flat.reshape(rows, cols)


def laplace(f):
    return -4 * f + jnp.roll(f, 1, axis=0) + jnp.roll(f, -1, axis=0) \
        + jnp.roll(f, 1, axis=1) + jnp.roll(f, -1, axis=1)


def ag_fluid(v0, smoke):
    vx, vy = v0[0], v0[1]
    for _ in range(3):
        vx = vx + 0.1 * laplace(vx)
        vy = vy + 0.1 * laplace(vy)
        smoke = advect(smoke, vx * 0.3, vy * 0.3)
    return jnp.sum((smoke - 0.5) ** 2)


FLUID_V = 0.4 * vec(705, 2, 5, 5)
SMOKE = np.abs(vec(706, 5, 5))


# --- a vanilla RNN (autograd's examples/rnn) -----------------------------------------------------------
def rnn_predict(params, inputs):
    hidden = jnp.zeros(3)
    outs = []
    for x in inputs:
        joint = jnp.concatenate((x, hidden))
        hidden = jnp.tanh(joint @ params["change"])
        outs.append(hidden @ params["predict"])
    return outs


def ag_rnn(params, seq):
    outs = rnn_predict(params, seq)
    total = 0.0
    for t, o in enumerate(outs[:-1]):
        total = total + jnp.sum(seq[t + 1] * (o - jax.scipy.special.logsumexp(o)))
    return -total


RNN = {"change": vec(707, 5, 3), "predict": vec(708, 3, 2)}
SEQ = vec(709, 4, 2)


# --- probabilistic models -------------------------------------------------------------------------------
def ag_mixture(params, data):
    means, log_std, logits = params
    log_w = logits - sp_logsumexp(logits)
    z = (data[:, None] - means[None, :]) / jnp.exp(log_std)
    comp = -0.5 * z ** 2 - log_std - 0.5 * jnp.log(2 * jnp.pi)
    return -jnp.sum(sp_logsumexp(comp + log_w, axis=1))


MIX = (vec(710, 3), 0.2 * vec(711, 3), vec(712, 3))
MIX_DATA = 2.0 * vec(713, 8)


def ag_bnn_elbo(var_params, x, noise):
    mean, log_std = var_params[:6], var_params[6:]
    ws = mean + jnp.exp(log_std) * noise
    total = 0.0
    for s in range(noise.shape[0]):
        w = ws[s].reshape(2, 3)
        pred = jnp.tanh(x @ w).sum(axis=1)
        total = total - 0.5 * jnp.sum((pred - 1.0) ** 2) - 0.5 * jnp.sum(ws[s] ** 2)
    entropy = jnp.sum(log_std)
    return -(total / noise.shape[0] + entropy)


BNN = np.concatenate([vec(714, 6), -1.0 + 0.1 * vec(715, 6)])
BNN_X = vec(716, 4, 2)
BNN_NOISE = vec(717, 3, 6)


CASES = [
    Case("ag_tanh", ag_tanh, (0.4,)),
    Case("ag_logsumexp", ag_logsumexp, (V5,)),
    Case("ag_hyperbolic", ag_hyperbolic, (V5,)),
    Case("ag_inverse_trig", ag_inverse_trig, (V5,)),
    Case("ag_exp_log_family", ag_exp_log_family, (V5,)),
    Case("ag_sort_cumulative", ag_sort_cumulative, (V5,)),
    Case("ag_diff_flip_roll", ag_diff_flip_roll, (V5,)),
    Case("ag_tri_kron_outer", ag_tri_kron_outer, (M4,)),
    Case("ag_linalg", ag_linalg, (M4,)),
    Case("ag_norms", ag_norms, (M4,)),
    Case("ag_var_std", ag_var_std, (M4,)),
    Case("ag_einsum_chain", ag_einsum_chain, (M4, vec(718, 4, 4))),
    Case("ag_tensordot", ag_tensordot, (vec(719, 3, 4), vec(720, 4, 3))),
    Case("ag_repeat_tile_split", ag_repeat_tile_split, (V5,)),
    Case("ag_piecewise", ag_piecewise, (V5 + 0.05,)),
    Case("ag_conv1d", ag_conv1d, (vec(721, 3), vec(722, 8))),
    Case("ag_convnet", ag_convnet, (CONV, IMG)),
    Case("ag_fluid", ag_fluid, (FLUID_V, SMOKE)),
    Case("ag_rnn", ag_rnn, (RNN, SEQ)),
    Case("ag_mixture", ag_mixture, (MIX, MIX_DATA)),
    Case("ag_bnn_elbo", ag_bnn_elbo, (BNN, BNN_X, BNN_NOISE)),
]

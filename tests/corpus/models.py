"""Realistic mixes: MLPs, RNNs, ODE and physics steps, probabilistic models, attention."""
import numpy as np

import secant.numpy as snp
from secant import lax

from corpus import Case, pos, vec


# --- MLP with dict parameters ---------------------------------------------------------------
def mlp_dict(params, x, y):
    h = snp.tanh(x @ params["w1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    return snp.mean((out - y) ** 2)


MLP_PARAMS = {"w1": vec(200, 3, 4), "b1": vec(201, 4), "w2": vec(202, 4, 2), "b2": vec(203, 2)}


# --- MLP with a list of (w, b) pairs ---------------------------------------------------------
def relu(x):
    return snp.maximum(x, 0.0)


def mlp_list(params, x, y):
    for w, b in params[:-1]:
        x = relu(x @ w + b)
    w, b = params[-1]
    logits = x @ w + b
    return snp.mean((logits - y) ** 2)


LIST_PARAMS = [(vec(210, 3, 4), vec(211, 4) + 2.0), (vec(212, 4, 4), vec(213, 4) + 2.0),
               (vec(214, 4, 2), vec(215, 2))]


def mlp_l2(params, x, y):
    data = mlp_list(params, x, y)
    reg = sum(snp.sum(w * w) for w, _ in params)
    return data + 1e-2 * reg


# --- RNNs ------------------------------------------------------------------------------------
def rnn_loop(w, xs):
    h = snp.zeros(w["hh"].shape[0])
    for t in range(xs.shape[0]):
        h = snp.tanh(w["hh"] @ h + w["xh"] @ xs[t] + w["b"])
    return snp.sum(h ** 2)


RNN_W = {"hh": vec(220, 3, 3, scale=0.5), "xh": vec(221, 3, 2), "b": vec(222, 3)}


def _rnn_cell(h, x_t, w):
    return snp.tanh(w["hh"] @ h + w["xh"] @ x_t + w["b"])


def rnn_scan(w, xs):
    def step(h, x_t):
        h = _rnn_cell(h, x_t, w)
        return h, snp.sum(h)
    h, ys = lax.scan(step, snp.zeros(3), xs)
    return snp.sum(h ** 2) + snp.sum(ys)


# --- ODE: RK4 steps ---------------------------------------------------------------------------
def _lotka_volterra(y, theta):
    prey, pred = y[0], y[1]
    return snp.stack([theta[0] * prey - theta[1] * prey * pred,
                      theta[2] * prey * pred - theta[3] * pred])


def _rk4_step(y, theta, dt):
    k1 = _lotka_volterra(y, theta)
    k2 = _lotka_volterra(y + 0.5 * dt * k1, theta)
    k3 = _lotka_volterra(y + 0.5 * dt * k2, theta)
    k4 = _lotka_volterra(y + dt * k3, theta)
    return y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def rk4_ode(theta, y0):
    y = y0
    for _ in range(4):
        y = _rk4_step(y, theta, 0.1)
    return snp.sum(y ** 2)


# --- physics: a spring chain with leapfrog steps ---------------------------------------------
def _spring_force(q, k):
    stretch = q[1:] - q[:-1] - 1.0
    f = snp.zeros_like(q)
    f = f.at[:-1].add(k * stretch)
    f = f.at[1:].add(-k * stretch)
    return f


def leapfrog_springs(q0, k):
    q, p, dt = q0, snp.zeros_like(q0), 0.05
    for _ in range(5):
        p = p + 0.5 * dt * _spring_force(q, k)
        q = q + dt * p
        p = p + 0.5 * dt * _spring_force(q, k)
    energy = 0.5 * snp.sum(p ** 2) + 0.5 * k * snp.sum((q[1:] - q[:-1] - 1.0) ** 2)
    return energy + snp.sum(q ** 2)


def pendulum_fori(theta0):
    def body(i, state):
        th, om = state
        om = om - 0.1 * snp.sin(th)
        th = th + 0.1 * om
        return th, om
    th, om = lax.fori_loop(0, 8, body, (theta0, 0.0 * theta0))
    return snp.sum(th ** 2 + om ** 2)


# --- probabilistic models --------------------------------------------------------------------
def gaussian_loglik(params, x):
    mu, log_sigma = params["mu"], params["log_sigma"]
    sigma = snp.exp(log_sigma)
    z = (x - mu) / sigma
    return snp.sum(-0.5 * z ** 2 - log_sigma - 0.5 * np.log(2 * np.pi))


def logistic_regression_posterior(w, x, y):
    logits = x @ w
    loglik = snp.sum(y * logits - snp.logaddexp(0.0, logits))
    logprior = -0.5 * snp.sum(w ** 2)
    return loglik + logprior


def mixture_loglik(mu, x):
    comps = [-0.5 * (x - m) ** 2 for m in [mu[0], mu[1]]]
    m = snp.maximum(comps[0], comps[1])
    return snp.sum(m + snp.log(snp.exp(comps[0] - m) + snp.exp(comps[1] - m)))


# --- classification and attention ------------------------------------------------------------
def _log_softmax(z):
    z = z - lax.stop_gradient(snp.max(z, axis=-1, keepdims=True))
    return z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))


def softmax_xent(w, x, labels):
    logp = _log_softmax(x @ w)
    return -snp.mean(snp.sum(labels * logp, axis=-1))


def _softmax(z):
    e = snp.exp(z - snp.max(z, axis=-1, keepdims=True))
    return e / snp.sum(e, axis=-1, keepdims=True)


def attention(params, x):
    q = x @ params["q"]
    k = x @ params["k"]
    v = x @ params["v"]
    scores = q @ k.T / np.sqrt(q.shape[-1])
    out = _softmax(scores) @ v
    return snp.sum(out ** 2)


ATTN = {"q": vec(240, 3, 2), "k": vec(241, 3, 2), "v": vec(242, 3, 2)}


def _layer_norm(x, eps=1e-5):
    mu = snp.mean(x, axis=-1, keepdims=True)
    var = snp.var(x, axis=-1, keepdims=True)
    return (x - mu) / snp.sqrt(var + eps)


def _gelu(x):
    return 0.5 * x * (1.0 + snp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def _dense(x, w, b):
    return x @ w + b


def helper_heavy_block(params, x):
    h = _layer_norm(x)
    h = _gelu(_dense(h, params["w1"], params["b1"]))
    h = _dense(h, params["w2"], params["b2"])
    return snp.sum(_layer_norm(x + h) ** 2)


BLOCK = {"w1": vec(250, 3, 4), "b1": vec(251, 4), "w2": vec(252, 4, 3), "b2": vec(253, 3)}


# --- assorted numerical code -----------------------------------------------------------------
def horner_polynomial(coeffs, x):
    acc = snp.zeros_like(x)
    for c in coeffs:
        acc = acc * x + c
    return snp.sum(acc)


def huber_loss(pred, target):
    r = pred - target
    small = snp.abs(r) <= 1.0
    return snp.sum(snp.where(small, 0.5 * r ** 2, snp.abs(r) - 0.5))


def conv1d_loop(kernel, x):
    n = x.shape[0] - kernel.shape[0] + 1
    out = []
    for i in range(n):
        out.append(snp.sum(x[i:i + kernel.shape[0]] * kernel))
    return snp.sum(snp.stack(out) ** 2)


def newton_sqrt_while(a):
    def cond(state):
        i, _ = state
        return i < 5

    def body(state):
        i, y = state
        return i + 1, 0.5 * (y + a / y)
    _, y = lax.while_loop(cond, body, (0, snp.ones_like(a)))
    return snp.sum(y)


def lax_cond_branches(x):
    return lax.cond(snp.sum(x) > 0.0, lambda v: snp.sum(snp.sin(v)),
                    lambda v: snp.sum(v ** 2), x)


def mixed_numpy_constants(x):
    w = np.linspace(0.0, 1.0, 3)
    return snp.sum(snp.exp(-w * x) * np.pi) + np.float64(2.0) * snp.sum(x)


def einsum_bilinear(a, x):
    return snp.einsum("i,ij,j->", x, a, x) + snp.sum(snp.einsum("ij,jk->ik", a, a))


def cumulative_ops(x):
    return snp.sum(snp.cumsum(x) * snp.cumprod(1.0 + 0.1 * x))


def sort_and_clip(x):
    s = snp.sort(x)
    return snp.sum(snp.clip(s, -0.8, 0.8) * snp.arange(1.0, 4.0))


CASES = [
    Case("mlp_dict", mlp_dict, (MLP_PARAMS, vec(204, 5, 3), vec(205, 5, 2)),
         in_axes=(None, 0, 0)),
    Case("mlp_list", mlp_list, (LIST_PARAMS, vec(216, 5, 3), vec(217, 5, 2)),
         in_axes=(None, 0, 0)),
    Case("mlp_l2", mlp_l2, (LIST_PARAMS, vec(218, 5, 3), vec(219, 5, 2)),
         in_axes=(None, 0, 0)),
    Case("rnn_loop", rnn_loop, (RNN_W, vec(223, 4, 2)), in_axes=(None, 0)),
    Case("rnn_scan", rnn_scan, (RNN_W, vec(224, 4, 2)), in_axes=(None, 0)),
    Case("rk4_ode", rk4_ode, (np.array([1.0, 0.4, 0.3, 0.8]), np.array([1.2, 0.7]))),
    Case("leapfrog_springs", leapfrog_springs, (np.array([0.0, 1.1, 1.9, 3.2]), 2.0)),
    Case("pendulum_fori", pendulum_fori, (vec(230, 3),)),
    Case("gaussian_loglik", gaussian_loglik,
         ({"mu": vec(231, 3), "log_sigma": vec(232, 3, scale=0.3)}, vec(233, 3))),
    Case("logistic_regression_posterior", logistic_regression_posterior,
         (vec(234, 3), vec(235, 6, 3), (vec(236, 6) > 0).astype(np.float64)),
         in_axes=(None, 0, 0)),
    Case("mixture_loglik", mixture_loglik, (np.array([-0.5, 0.7]), vec(237, 5))),
    Case("softmax_xent", softmax_xent,
         (vec(238, 3, 4), vec(239, 5, 3), np.eye(4)[[0, 1, 2, 3, 1]]), in_axes=(None, 0, 0)),
    Case("attention", attention, (ATTN, vec(243, 4, 3)), in_axes=(None, 0)),
    Case("helper_heavy_block", helper_heavy_block, (BLOCK, vec(254, 2, 3)), in_axes=(None, 0)),
    Case("horner_polynomial", horner_polynomial, (np.array([0.5, -1.0, 2.0, 0.3]), vec(255, 3))),
    Case("huber_loss", huber_loss, (np.array([0.3, -2.0, 1.7]), np.array([0.1, 0.2, -0.4]))),
    Case("conv1d_loop", conv1d_loop, (vec(256, 3), vec(257, 6))),
    Case("newton_sqrt_while", newton_sqrt_while, (pos(258, 3),)),
    Case("lax_cond_branches", lax_cond_branches, (pos(259, 3),)),
    Case("mixed_numpy_constants", mixed_numpy_constants, (vec(260, 3),)),
    Case("einsum_bilinear", einsum_bilinear, (vec(261, 3, 3), vec(262, 3))),
    Case("cumulative_ops", cumulative_ops, (vec(263, 4),)),
    Case("sort_and_clip", sort_and_clip, (np.array([0.3, -1.2, 0.9]),)),
]

"""Machine-learning models as the JAX tutorials write them: pytrees of parameters, a transformer
block with layer norm and a causal mask, an LSTM and a GRU, a normalizing flow with affine
coupling layers, a neural ODE with RK4, a small CNN-free classifier zoo."""
import dataclasses
from typing import NamedTuple

import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import lax, nn

from corpus import Case, vec


# --- JAX 101: pytrees ----------------------------------------------------------------------
def init_mlp(sizes, seed):
    r = np.random.default_rng(seed)
    return [{"w": r.normal(size=(m, n)) / np.sqrt(m), "b": r.normal(size=n) * 0.1}
            for m, n in zip(sizes[:-1], sizes[1:])]


def mlp_forward(params, x):
    *hidden, last = params
    for layer in hidden:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ last["w"] + last["b"]


def pytree_mse(params, x, y):
    pred = mlp_forward(params, x)
    return jnp.mean((pred - y) ** 2)


MLP_PARAMS = init_mlp([2, 4, 1], 1)
XS = vec(2, 5, 2)
YS = vec(3, 5, 1)


def tree_l2(params, x, y):
    """the tree_util helpers as the pytree tutorial shows them"""
    sq = jax.tree_util.tree_map(lambda p: jnp.sum(p ** 2), params)
    penalty = sum(jax.tree_util.tree_leaves(sq))
    return pytree_mse(params, x, y) + 1e-2 * penalty


def sgd_tree_step(params, x, y):
    """one SGD step with tree_map over the gradient, then the loss after it"""
    grads = jax.grad(pytree_mse)(params, x, y)
    new = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    return pytree_mse(new, x, y)


class Params(NamedTuple):
    weight: np.ndarray
    bias: np.ndarray


def namedtuple_loss(params: Params, x, y):
    pred = x @ params.weight + params.bias
    return jnp.mean((pred - y) ** 2)


NT_PARAMS = Params(weight=vec(4, 2, 1), bias=vec(5, 1))


@jax.tree_util.register_pytree_node_class
class Linear:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return x @ self.w + self.b

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def pytree_class_loss(layer, x, y):
    return jnp.mean((layer(x) - y) ** 2)


@dataclasses.dataclass(frozen=True)
class Config:
    hidden: int = 4
    l2: float = 0.01
    activation: str = "tanh"


CFG = Config()


def dataclass_config_loss(params, x, y):
    act = getattr(jnp, CFG.activation)
    h = act(x @ params["w1"])
    out = h @ params["w2"]
    return jnp.mean((out - y) ** 2) + CFG.l2 * jnp.sum(params["w1"] ** 2)


CFG_PARAMS = {"w1": vec(6, 2, CFG.hidden), "w2": vec(7, CFG.hidden, 1)}


class Counter:
    """JAX 101 'stateful computations': the state goes in and comes out"""

    def count(self, n):
        return n + 1, n + 1.0

    def reset(self):
        return 0


def counter_weighted(w, xs):
    counter = Counter()
    n = counter.reset()
    total = 0.0
    for x in xs:
        n, c = counter.count(n)
        total = total + c * jnp.tanh(x @ w)
    return total / n


# --- transformer block ------------------------------------------------------------------------
def layer_norm(x, gamma, beta, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return gamma * (x - mean) / jnp.sqrt(var + eps) + beta


def causal_attention(q, k, v):
    t = q.shape[0]
    scores = q @ k.T / jnp.sqrt(q.shape[-1])
    mask = jnp.tril(jnp.ones((t, t), dtype=bool))
    scores = jnp.where(mask, scores, -1e9)
    return jax.nn.softmax(scores, axis=-1) @ v


def transformer_block(p, x):
    h = layer_norm(x, p["ln1_g"], p["ln1_b"])
    q, k, v = h @ p["wq"], h @ p["wk"], h @ p["wv"]
    x = x + causal_attention(q, k, v) @ p["wo"]
    h = layer_norm(x, p["ln2_g"], p["ln2_b"])
    x = x + jax.nn.gelu(h @ p["w_up"]) @ p["w_down"]
    return jnp.sum(x ** 2) / x.size


D = 4
TB = {"ln1_g": 1.0 + vec(10, D, scale=0.1), "ln1_b": vec(11, D, scale=0.1),
      "wq": vec(12, D, D, scale=0.5), "wk": vec(13, D, D, scale=0.5),
      "wv": vec(14, D, D, scale=0.5), "wo": vec(15, D, D, scale=0.5),
      "ln2_g": 1.0 + vec(16, D, scale=0.1), "ln2_b": vec(17, D, scale=0.1),
      "w_up": vec(18, D, 6, scale=0.5), "w_down": vec(19, 6, D, scale=0.5)}
TOKENS = vec(20, 3, D)


def multihead_einsum(w, x):
    """two heads via reshape + einsum, as in the flax/haiku examples"""
    t, d = x.shape
    heads = 2
    qkv = jnp.einsum("td,de->te", x, w).reshape(t, 3, heads, d // heads)
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
    logits = jnp.einsum("thd,shd->hts", q, k) / np.sqrt(d // heads)
    att = jax.nn.softmax(logits, axis=-1)
    out = jnp.einsum("hts,shd->thd", att, v).reshape(t, d)
    return jnp.sum(jnp.tanh(out))


MH_W = vec(21, D, 3 * D, scale=0.5)


# --- recurrent networks -------------------------------------------------------------------------
def lstm_cell(params, carry, x):
    h, c = carry
    z = params["W"] @ x + params["U"] @ h + params["b"]
    i, f, g, o = jnp.split(z, 4)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return (h, c), h


def lstm_scan(params, xs):
    hidden = params["U"].shape[1]
    init = (jnp.zeros(hidden), jnp.zeros(hidden))
    (h, c), hs = lax.scan(lambda carry, x: lstm_cell(params, carry, x), init, xs)
    return jnp.sum(hs[-1] ** 2) + jnp.mean(c)


H = 2
LSTM = {"W": vec(30, 4 * H, 2), "U": vec(31, 4 * H, H), "b": vec(32, 4 * H, scale=0.1)}
SEQ = vec(33, 4, 2)


def gru_loop(params, xs):
    h = jnp.zeros(params["Uz"].shape[0])
    for x in xs:
        z = jax.nn.sigmoid(params["Wz"] @ x + params["Uz"] @ h)
        r = jax.nn.sigmoid(params["Wr"] @ x + params["Ur"] @ h)
        n = jnp.tanh(params["Wn"] @ x + params["Un"] @ (r * h))
        h = (1 - z) * n + z * h
    return jnp.sum(h)


GRU = {k: vec(40 + i, 2, 2) for i, k in enumerate(["Wz", "Uz", "Wr", "Ur", "Wn", "Un"])}


# --- normalizing flow: affine coupling ------------------------------------------------------------
def coupling_forward(params, x):
    x1, x2 = x[: x.shape[0] // 2], x[x.shape[0] // 2:]
    hidden = jnp.tanh(params["w"] @ x1 + params["b"])
    s = jnp.tanh(params["ws"] @ hidden)
    t = params["wt"] @ hidden
    y2 = x2 * jnp.exp(s) + t
    return jnp.concatenate([x1, y2]), jnp.sum(s)


def flow_nll(layers, x):
    log_det = 0.0
    for params in layers:
        x, ld = coupling_forward(params, x)
        x = x[::-1]
        log_det = log_det + ld
    log_prob = jnp.sum(jax.scipy.stats.norm.logpdf(x))
    return -(log_prob + log_det)


FLOW = [{"w": vec(50 + 4 * i, 3, 2), "b": vec(51 + 4 * i, 3), "ws": vec(52 + 4 * i, 2, 3),
         "wt": vec(53 + 4 * i, 2, 3)} for i in range(2)]
FLOW_X = vec(60, 4)


# --- neural ODE with a hand-written RK4 -------------------------------------------------------------
def dynamics(y, t, params):
    return jnp.tanh(params["W"] @ y + params["b"] * t)


def rk4_step(f, y, t, dt, *args):
    k1 = f(y, t, *args)
    k2 = f(y + dt / 2 * k1, t + dt / 2, *args)
    k3 = f(y + dt / 2 * k2, t + dt / 2, *args)
    k4 = f(y + dt * k3, t + dt, *args)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def neural_ode(params, y0):
    y, t, dt = y0, 0.0, 0.1
    for _ in range(5):
        y = rk4_step(dynamics, y, t, dt, params)
        t = t + dt
    return jnp.sum(y ** 2)


NODE = {"W": vec(70, 3, 3), "b": vec(71, 3)}
Y0 = vec(72, 3)


def neural_ode_scan(params, y0):
    ts = jnp.linspace(0.0, 0.5, 6)

    def step(y, t):
        y = rk4_step(dynamics, y, t, 0.1, params)
        return y, jnp.sum(y)
    y_final, traj = lax.scan(step, y0, ts[:-1])
    return jnp.mean(traj) + jnp.sum(y_final ** 2)


def neural_ode_fori(params, y0):
    def body(i, y):
        return rk4_step(dynamics, y, i * 0.1, 0.1, params)
    y = lax.fori_loop(0, 5, body, y0)
    return jnp.sum(y ** 2)


# --- classifiers --------------------------------------------------------------------------------------
def softmax_regression(w, x, labels):
    logits = x @ w
    logp = logits - jax.scipy.special.logsumexp(logits, axis=1, keepdims=True)
    return -jnp.mean(jnp.sum(nn.one_hot(labels, 3) * logp, axis=1))


LABELS = np.array([0, 2, 1, 1, 0])


def label_smoothing_xent(w, x, labels):
    logits = x @ w
    n_classes = logits.shape[-1]
    targets = nn.one_hot(labels, n_classes) * 0.9 + 0.1 / n_classes
    return -jnp.mean(jnp.sum(targets * nn.log_softmax(logits), axis=-1))


def mixture_density(params, x):
    """a mixture of Gaussians: logits, means, log scales"""
    log_w = nn.log_softmax(params["logits"])
    z = (x[:, None] - params["mu"]) / jnp.exp(params["log_s"])
    comp = -0.5 * z ** 2 - params["log_s"] - 0.5 * jnp.log(2 * jnp.pi)
    return -jnp.sum(jax.scipy.special.logsumexp(log_w + comp, axis=1))


MDN = {"logits": vec(80, 3), "mu": vec(81, 3), "log_s": vec(82, 3, scale=0.3)}


def conv1d_smoother(kernel, signal):
    y = jnp.convolve(signal, kernel, mode="same")
    return jnp.sum(jnp.diff(y) ** 2) + jnp.sum(y ** 2)


CASES = [
    Case("pytree_mse", pytree_mse, (MLP_PARAMS, XS, YS), in_axes=(None, 0, 0)),
    Case("tree_l2", tree_l2, (MLP_PARAMS, XS, YS), in_axes=(None, 0, 0)),
    Case("sgd_tree_step", sgd_tree_step, (MLP_PARAMS, XS, YS), in_axes=(None, 0, 0)),
    Case("namedtuple_loss", namedtuple_loss, (NT_PARAMS, XS, YS)),
    Case("pytree_class_loss", pytree_class_loss, (Linear(vec(8, 2, 1), vec(9, 1)), XS, YS)),
    Case("dataclass_config_loss", dataclass_config_loss, (CFG_PARAMS, XS, YS)),
    Case("counter_weighted", counter_weighted, (vec(22, 2), XS)),
    Case("transformer_block", transformer_block, (TB, TOKENS), in_axes=(None, 0)),
    Case("multihead_einsum", multihead_einsum, (MH_W, TOKENS)),
    Case("lstm_scan", lstm_scan, (LSTM, SEQ)),
    Case("gru_loop", gru_loop, (GRU, SEQ)),
    Case("flow_nll", flow_nll, (FLOW, FLOW_X), in_axes=(None, 0)),
    Case("neural_ode", neural_ode, (NODE, Y0)),
    Case("neural_ode_scan", neural_ode_scan, (NODE, Y0)),
    Case("neural_ode_fori", neural_ode_fori, (NODE, Y0)),
    Case("softmax_regression", softmax_regression, (vec(83, 2, 3), XS, LABELS)),
    Case("label_smoothing_xent", label_smoothing_xent, (vec(84, 2, 3), XS, LABELS)),
    Case("mixture_density", mixture_density, (MDN, vec(85, 6))),
    Case("conv1d_smoother", conv1d_smoother, (vec(86, 3), vec(87, 8))),
]

"""Programs with the idioms that come up in real code bases: tree_map with is_leaf, flattening
parameters by hand, a model object built inside the loss from the traced parameters, closures
returned by nested factories, an lru_cache'd helper of static arguments, masked means, pooling
by reshape, f-string keys, a while loop over a Python counter, lax.reduce, covariance, an FFT
power spectrum, jnp.vectorize, QR, fori_loop carrying a dict."""
import functools
import math

import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import lax

from corpus import Case, vec

X = vec(600, 4, 3)
Y = vec(601, 4)
W3 = vec(602, 3)


def tree_map_is_leaf(params, x):
    pairs = jax.tree_util.tree_map(lambda wb: wb[0] @ wb[1], params,
                                   is_leaf=lambda n: isinstance(n, tuple))
    return jnp.sum(jnp.tanh(x @ pairs["a"]) ** 2)


TM = {"a": (vec(603, 3, 2), vec(604, 2, 3))}


def flatten_by_hand(params, x):
    leaves, treedef = jax.tree_util.tree_flatten(params)
    flat = jnp.concatenate([jnp.ravel(p) for p in leaves])
    rebuilt = jax.tree_util.tree_unflatten(treedef, [l * 2.0 for l in leaves])
    return jnp.sum(flat ** 2) + jnp.sum(x @ rebuilt["w"])


FB = {"w": vec(605, 3), "b": vec(606, 2)}


class Model:
    def __init__(self, params):
        self.params = params

    def __call__(self, x):
        return jnp.tanh(x @ self.params["w"] + self.params["b"])


def model_built_inside(params, x):
    model = Model(params)
    return jnp.sum(model(x) ** 2)


MB = {"w": vec(607, 3, 2), "b": vec(608, 2)}


def factory_closure(w, x):
    def make_layer(scale):
        def apply(h):
            return jnp.tanh(h * scale)
        return apply
    layers = [make_layer(w[0]), make_layer(w[1])]
    h = x @ w
    for layer in layers:
        h = layer(h)
    return jnp.sum(h)


@functools.lru_cache(maxsize=None)
def _positions(n):
    return np.linspace(-1.0, 1.0, n)


def lru_cached_constants(w, x):
    pos = _positions(x.shape[0])
    return jnp.sum(pos * jnp.sin(x @ w))


def sum_map(params, x):
    return sum(map(jnp.sum, params)) + jnp.sum(x @ params[0])


def masked_mean(w, x):
    h = x @ w
    mask = h > 0.0
    return jnp.where(mask, h ** 2, 0.0).sum() / jnp.maximum(mask.sum(), 1)


def reshape_pooling(w, x):
    h = jnp.tanh(jnp.outer(x @ w, w))          # (4, 3)
    pooled = h.reshape(-1, 2).mean(axis=1)
    return jnp.sum(pooled ** 2)


def fstring_keys(params, x):
    h = x
    for i in range(2):
        h = jnp.tanh(h @ params[f"layer_{i}"])
    return jnp.sum(h)


FK = {"layer_0": vec(609, 3, 3), "layer_1": vec(610, 3, 2)}


def python_while_counter(w, x):
    i, h = 0, x @ w
    while i < 3:
        h = jnp.sin(h) + 0.1 * i
        i += 1
    return jnp.sum(h ** 2)


def lax_reduce_sum(w, x):
    h = jnp.exp(-(x @ w) ** 2)
    return lax.reduce(h, 0.0, lax.add, (0,))


def covariance_trace(x):
    c = jnp.cov(x, rowvar=False)
    return jnp.trace(c @ c) + jnp.sum(jnp.corrcoef(x.T)[0])


def power_spectrum(signal):
    spec = jnp.fft.rfft(signal)
    return jnp.sum(jnp.abs(spec) ** 2 * jnp.arange(spec.shape[0]))


def vectorized_scalar(w, x):
    def piece(a, b):
        return jnp.sin(a) * b + a ** 2
    f = jnp.vectorize(piece)
    return jnp.sum(f(x @ w, x[:, 0]))


def qr_loss(a):
    q, r = jnp.linalg.qr(a)
    return jnp.sum(jnp.abs(jnp.diag(r))) + jnp.sum(q[:, 0] * a[:, 0])


def fori_dict_carry(w, x):
    def body(i, state):
        h = jnp.tanh(state["h"] * w[i % 3] + x[i] @ w)
        return {"h": h, "acc": state["acc"] + jnp.sum(h)}
    out = lax.fori_loop(0, 4, body, {"h": jnp.zeros(()), "acc": 0.0})
    return out["acc"] + out["h"] ** 2


def static_math(w, x):
    n = math.prod(x.shape)
    return jnp.sum(x @ w) / math.sqrt(n) + math.log(2.0) * w[1]


CASES = [
    Case("tree_map_is_leaf", tree_map_is_leaf, (TM, X)),
    Case("flatten_by_hand", flatten_by_hand, (FB, X)),
    Case("model_built_inside", model_built_inside, (MB, X)),
    Case("factory_closure", factory_closure, (W3, X)),
    Case("lru_cached_constants", lru_cached_constants, (W3, X)),
    Case("sum_map", sum_map, ([W3, vec(611, 2)], X)),
    Case("masked_mean", masked_mean, (W3, X)),
    Case("reshape_pooling", reshape_pooling, (W3, X)),
    Case("fstring_keys", fstring_keys, (FK, X)),
    Case("python_while_counter", python_while_counter, (W3, X)),
    Case("lax_reduce_sum", lax_reduce_sum, (W3, X)),
    Case("covariance_trace", covariance_trace, (X,)),
    Case("power_spectrum", power_spectrum, (vec(612, 6),)),
    Case("vectorized_scalar", vectorized_scalar, (W3, X)),
    Case("qr_loss", qr_loss, (vec(613, 3, 3) + 2 * np.eye(3),)),
    Case("fori_dict_carry", fori_dict_carry, (W3, X)),
    Case("static_math", static_math, (W3, X)),
]

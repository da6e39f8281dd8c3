"""An Elman RNN trained on a sine wave by backprop through time (lax.scan), gradients clipped by
their global norm computed with tree_util, parameters a nested dict."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.tree_util import tree_leaves, tree_map


def init(key, hidden=8):
    k1, k2, k3 = jax.random.split(key, 3)
    return {"rnn": {"wx": 0.5 * jax.random.normal(k1, (1, hidden)),
                    "wh": 0.3 * jax.random.normal(k2, (hidden, hidden)),
                    "b": jnp.zeros(hidden)},
            "out": {"w": 0.5 * jax.random.normal(k3, (hidden, 1)), "b": jnp.zeros(1)}}


def predict(params, xs):
    def cell(h, x):
        h = jnp.tanh(x @ params["rnn"]["wx"] + h @ params["rnn"]["wh"] + params["rnn"]["b"])
        return h, h @ params["out"]["w"] + params["out"]["b"]
    h0 = jnp.zeros(params["rnn"]["b"].shape)
    _, ys = lax.scan(cell, h0, xs)
    return ys


def loss(params, xs, ys):
    return jnp.mean((predict(params, xs) - ys) ** 2)


def clip_by_global_norm(grads, max_norm):
    norm = jnp.sqrt(sum(jnp.sum(g ** 2) for g in tree_leaves(grads)))
    scale = jnp.minimum(1.0, max_norm / (norm + 1e-6))
    return tree_map(lambda g: g * scale, grads), norm


@jax.jit
def train_step(params, xs, ys):
    l, g = jax.value_and_grad(loss)(params, xs, ys)
    g, norm = clip_by_global_norm(g, 0.5)
    return tree_map(lambda p, g: p - 0.1 * g, params, g), l, norm


def main():
    t = jnp.linspace(0, 4 * jnp.pi, 25)
    xs, ys = jnp.sin(t)[:-1, None], jnp.sin(t)[1:, None]
    params = init(jax.random.PRNGKey(8))
    losses, norms = [], []
    for _ in range(15):
        params, l, n = train_step(params, xs, ys)
        losses.append(l)
        norms.append(n)
    return {"losses": jnp.stack(losses), "norms": jnp.stack(norms), "params": params}

"""Padded sequences: a jnp.where-masked mean loss over valid positions, a tiny linear RNN run
with lax.scan, trained by SGD."""
import jax
import jax.numpy as jnp
from jax import lax

LENGTHS = jnp.array([5, 3, 7, 2])
T = 7


def rnn(params, xs):
    def cell(h, x):
        h = jnp.tanh(params["wh"] * h + params["wx"] * x + params["b"])
        return h, h
    _, hs = lax.scan(cell, jnp.zeros(xs.shape[0]), xs.T)
    return hs.T


def masked_loss(params, xs, ys):
    preds = rnn(params, xs)
    mask = jnp.arange(T)[None, :] < LENGTHS[:, None]
    err = jnp.where(mask, (preds - ys) ** 2, 0.0)
    return jnp.sum(err) / jnp.sum(mask)


@jax.jit
def update(params, xs, ys):
    l, g = jax.value_and_grad(masked_loss)(params, xs, ys)
    return {k: params[k] - 0.3 * g[k] for k in params}, l


def main():
    xs = jnp.sin(jnp.arange(4 * T, dtype=jnp.float32).reshape(4, T) * 0.7)
    ys = 0.5 * jnp.roll(xs, 1, axis=1)
    mask = jnp.arange(T)[None, :] < LENGTHS[:, None]
    xs = jnp.where(mask, xs, 0.0)
    params = {"wh": 0.1, "wx": 0.2, "b": 0.0}
    params = jax.tree_util.tree_map(jnp.asarray, params)
    losses = []
    for _ in range(20):
        params, l = update(params, xs, ys)
        losses.append(l)
    return {"losses": jnp.stack(losses), "params": params}

"""Dropout switched by a Python bool under jit: static_argnums for the flag."""
import functools

import jax
import jax.numpy as jnp


def model(params, x, key, training):
    h = jax.nn.gelu(x @ params["w1"] + params["b1"])
    if training:
        keep = jax.random.bernoulli(key, 0.8, h.shape)
        h = jnp.where(keep, h / 0.8, 0.0)
    return h @ params["w2"]


@functools.partial(jax.jit, static_argnums=(4,))
def loss_fn(params, x, y, key, training):
    return jnp.mean((model(params, x, key, training) - y) ** 2)


@jax.jit
def train_step(params, x, y, key):
    l, g = jax.value_and_grad(loss_fn)(params, x, y, key, True)
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, g), l


def main():
    key = jax.random.PRNGKey(11)
    key, k1, k2, kx = jax.random.split(key, 4)
    params = {"w1": 0.3 * jax.random.normal(k1, (4, 16)), "b1": jnp.zeros(16),
              "w2": 0.3 * jax.random.normal(k2, (16, 2))}
    x = jax.random.normal(kx, (24, 4))
    y = jnp.stack([x[:, 0] * x[:, 1], jnp.cos(x[:, 2])], axis=1)
    train_losses, eval_losses = [], []
    for step in range(12):
        key, sub = jax.random.split(key)
        params, l = train_step(params, x, y, sub)
        train_losses.append(l)
        eval_losses.append(loss_fn(params, x, y, sub, False))
    return {"train": jnp.array(train_losses), "eval": jnp.array(eval_losses), "params": params}

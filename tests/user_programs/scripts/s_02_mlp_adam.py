"""A small MLP regression trained with Adam (bias correction) written by hand."""
import jax
import jax.numpy as jnp
from jax import random


def init_mlp(key, sizes):
    params = []
    keys = random.split(key, len(sizes) - 1)
    for k, (m, n) in zip(keys, zip(sizes[:-1], sizes[1:])):
        w = random.normal(k, (m, n)) * jnp.sqrt(2.0 / m)
        params.append((w, jnp.zeros(n)))
    return params


def forward(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return (x @ w + b).squeeze(-1)


def loss(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


def adam_init(params):
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return (zeros, zeros, 0)


@jax.jit
def update(params, opt_state, batch):
    m, v, t = opt_state
    l, g = jax.value_and_grad(loss)(params, *batch)
    t = t + 1
    m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
    v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
    mhat = jax.tree_util.tree_map(lambda m: m / (1 - 0.9 ** t), m)
    vhat = jax.tree_util.tree_map(lambda v: v / (1 - 0.999 ** t), v)
    params = jax.tree_util.tree_map(lambda p, m, v: p - 0.01 * m / (jnp.sqrt(v) + 1e-8),
                                    params, mhat, vhat)
    return params, (m, v, t), l


def main():
    key = random.PRNGKey(42)
    k1, k2 = random.split(key)
    x = random.uniform(k1, (32, 2), minval=-1.0, maxval=1.0)
    y = jnp.sin(3 * x[:, 0]) * x[:, 1]
    params = init_mlp(k2, [2, 16, 16, 1])
    opt_state = adam_init(params)
    losses = []
    for step in range(25):
        params, opt_state, l = update(params, opt_state, (x, y))
        losses.append(float(l))
    return {"losses": losses, "params": params, "t": opt_state[2]}

"""A TrainState NamedTuple (params, opt state, step, key) through a jitted step that returns a
new state; jax.tree.map for updates; a Python loop over epochs with evaluation every 3 steps."""
from typing import NamedTuple

import jax
import jax.numpy as jnp


class TrainState(NamedTuple):
    params: dict
    momentum: dict
    step: jnp.ndarray
    key: jnp.ndarray


def apply(params, x, key=None, noise=0.0):
    h = jax.nn.swish(x @ params["w1"])
    if key is not None:
        h = h + noise * jax.random.normal(key, h.shape)
    return h @ params["w2"]


def loss(params, x, y, key):
    return jnp.mean(optax_huber(apply(params, x, key, 0.1) - y))


def optax_huber(r, delta=1.0):
    a = jnp.abs(r)
    return jnp.where(a < delta, 0.5 * r ** 2, delta * (a - 0.5 * delta))


@jax.jit
def train_step(state, x, y):
    key, sub = jax.random.split(state.key)
    g = jax.grad(loss)(state.params, x, y, sub)
    lr = 0.1 * 0.95 ** state.step
    mom = jax.tree.map(lambda m, g: 0.9 * m + g, state.momentum, g)
    params = jax.tree.map(lambda p, m: p - lr * m, state.params, mom)
    return TrainState(params, mom, state.step + 1, key)


@jax.jit
def eval_loss(params, x, y):
    return jnp.mean(optax_huber(apply(params, x) - y))


def main():
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(55), 4)
    params = {"w1": 0.4 * jax.random.normal(k1, (2, 10)), "w2": 0.4 * jax.random.normal(k2, (10, 1))}
    state = TrainState(params, jax.tree.map(jnp.zeros_like, params), jnp.array(0), k4)
    x = jax.random.normal(k3, (40, 2)) * 2
    y = (x[:, :1] * x[:, 1:]) * 1.5
    evals = []
    for i in range(12):
        state = train_step(state, x, y)
        if i % 3 == 2:
            evals.append(eval_loss(state.params, x, y))
    return {"evals": jnp.stack(evals), "step": state.step, "params": state.params,
            "key": state.key}

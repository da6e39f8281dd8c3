"""optax.adamw by hand: add_decayed_weights with a mask pytree (decay the kernels, not the
biases or the layer-norm scales), the mask computed from the params by tree_map_with_path
(names ending in "bias" or "scale" excluded), masked updates with tree_map over the mask."""
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


def scale_by_adam(b1=0.9, b2=0.99, eps=1e-8):
    def init(params):
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        return {"count": jnp.array(0), "mu": zeros, "nu": zeros}

    def update(g, state, params=None):
        count = state["count"] + 1
        mu = jax.tree_util.tree_map(lambda m, d: b1 * m + (1 - b1) * d, state["mu"], g)
        nu = jax.tree_util.tree_map(lambda v, d: b2 * v + (1 - b2) * d * d, state["nu"], g)
        c1, c2 = 1 - b1 ** count, 1 - b2 ** count
        u = jax.tree_util.tree_map(lambda m, v: (m / c1) / (jnp.sqrt(v / c2) + eps), mu, nu)
        return u, {"count": count, "mu": mu, "nu": nu}
    return GradientTransformation(init, update)


def add_decayed_weights(weight_decay, mask):
    def update(updates, state, params):
        m = mask(params) if callable(mask) else mask
        updates = jax.tree_util.tree_map(
            lambda u, p, keep: u + weight_decay * p if keep else u, updates, params, m)
        return updates, state
    return GradientTransformation(lambda params: (), update)


def decay_mask(params):
    def keep(path, _):
        last = path[-1].key
        return not last.endswith(("bias", "scale"))
    return jax.tree_util.tree_map_with_path(keep, params)


def adamw(lr, weight_decay):
    adam, decay = scale_by_adam(), add_decayed_weights(weight_decay, decay_mask)

    def init(params):
        return (adam.init(params), decay.init(params))

    def update(g, state, params):
        u, s0 = adam.update(g, state[0], params)
        u, s1 = decay.update(u, state[1], params)
        return jax.tree_util.tree_map(lambda x: -lr * x, u), (s0, s1)
    return GradientTransformation(init, update)


def model(params, x):
    h = x @ params["dense"]["kernel"] + params["dense"]["bias"]
    h = h / jnp.linalg.norm(h, axis=-1, keepdims=True) * params["norm"]["scale"]
    return h @ params["head"]["kernel"]


def loss(params, x, y):
    return jnp.mean((model(params, x)[:, 0] - y) ** 2)


opt = adamw(0.05, 0.1)


@jax.jit
def step(params, state, x, y):
    value, g = jax.value_and_grad(loss)(params, x, y)
    u, state = opt.update(g, state, params)
    return jax.tree_util.tree_map(jnp.add, params, u), state, value


def main():
    k1, k2 = jax.random.split(jax.random.PRNGKey(21))
    params = {"dense": {"kernel": jax.random.normal(k1, (3, 4)), "bias": jnp.full(4, 0.1)},
              "norm": {"scale": jnp.ones(4)},
              "head": {"kernel": jax.random.normal(k2, (4, 1)) * 0.5}}
    x = jax.random.normal(jax.random.PRNGKey(22), (16, 3))
    y = jnp.tanh(x[:, 0] - x[:, 2])
    state = opt.init(params)
    losses = []
    for _ in range(12):
        params, state, value = step(params, state, x, y)
        losses.append(value)
    return {"losses": jnp.stack(losses), "params": params,
            "mask": jax.tree_util.tree_leaves(decay_mask(params))}

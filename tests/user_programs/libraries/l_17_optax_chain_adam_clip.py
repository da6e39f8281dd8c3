"""optax by hand: GradientTransformation NamedTuples of (init, update); chain() of
clip_by_global_norm, scale_by_adam (state a NamedTuple of count, mu, nu) and scale(-lr);
apply_updates with tree_map; the optimizer state nested tuples of NamedTuples under jit."""
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


class EmptyState(NamedTuple):
    pass


class ScaleByAdamState(NamedTuple):
    count: jax.Array
    mu: Any
    nu: Any


def global_norm(tree):
    return jnp.sqrt(sum(jnp.sum(x ** 2) for x in jax.tree_util.tree_leaves(tree)))


def clip_by_global_norm(max_norm):
    def init(params):
        return EmptyState()

    def update(updates, state, params=None):
        g_norm = global_norm(updates)
        trigger = g_norm < max_norm
        updates = jax.tree_util.tree_map(
            lambda t: jnp.where(trigger, t, t / g_norm * max_norm), updates)
        return updates, state
    return GradientTransformation(init, update)


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8):
    def init(params):
        mu = jax.tree_util.tree_map(jnp.zeros_like, params)
        nu = jax.tree_util.tree_map(jnp.zeros_like, params)
        return ScaleByAdamState(jnp.zeros([], jnp.int32), mu, nu)

    def update(updates, state, params=None):
        mu = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, updates)
        nu = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g ** 2, state.nu, updates)
        count = state.count + 1
        mu_hat = jax.tree_util.tree_map(lambda m: m / (1 - b1 ** count), mu)
        nu_hat = jax.tree_util.tree_map(lambda v: v / (1 - b2 ** count), nu)
        updates = jax.tree_util.tree_map(lambda m, v: m / (jnp.sqrt(v) + eps), mu_hat, nu_hat)
        return updates, ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


def scale(step_size):
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None: (
                                      jax.tree_util.tree_map(lambda g: step_size * g, updates),
                                      state))


def chain(*transforms):
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformation(init, update)


def apply_updates(params, updates):
    return jax.tree_util.tree_map(lambda p, u: p + u, params, updates)


optimizer = chain(clip_by_global_norm(1.0), scale_by_adam(), scale(-0.05))


def loss(params, x, y):
    logits = x @ params["w"] + params["b"]
    return jnp.mean(jax.nn.softplus(logits) - y * logits)


@jax.jit
def step(params, opt_state, x, y):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return apply_updates(params, updates), opt_state, value, global_norm(grads)


def main():
    x = jax.random.normal(jax.random.PRNGKey(20), (30, 4)) * 3.0
    y = (x @ jnp.array([1.0, -2.0, 0.5, 0.0]) > 0).astype(jnp.float32)
    params = {"w": jnp.zeros(4), "b": jnp.zeros(())}
    opt_state = optimizer.init(params)
    losses, norms = [], []
    for _ in range(15):
        params, opt_state, value, norm = step(params, opt_state, x, y)
        losses.append(value)
        norms.append(norm)
    return {"losses": jnp.stack(losses), "norms": jnp.stack(norms), "params": params,
            "count": opt_state[1].count, "nu_w": opt_state[1].nu["w"]}

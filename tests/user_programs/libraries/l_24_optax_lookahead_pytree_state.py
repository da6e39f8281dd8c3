"""Lookahead (slow and fast weights) over an inner Adam written as optax's: the state a
NamedTuple holding the fast and slow params and the inner state; every k steps the slow weights
move toward the fast ones (jnp.where on `count % k == 0`, no Python branch on a traced value);
jax.tree_util.tree_map with several trees and tree_reduce for a norm metric."""
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class AdamState(NamedTuple):
    count: jax.Array
    mu: Any
    nu: Any


class LookaheadState(NamedTuple):
    fast: Any
    slow: Any
    inner: AdamState


def adam_update(g, s, lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
    tm = jax.tree_util.tree_map
    mu = tm(lambda m, d: b1 * m + (1 - b1) * d, s.mu, g)
    nu = tm(lambda v, d: b2 * v + (1 - b2) * d * d, s.nu, g)
    count = s.count + 1
    u = tm(lambda m, v: -lr * (m / (1 - b1 ** count)) / (jnp.sqrt(v / (1 - b2 ** count)) + eps),
           mu, nu)
    return u, AdamState(count, mu, nu)


def lookahead_init(params):
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return LookaheadState(params, params, AdamState(jnp.zeros([], jnp.int32), zeros, zeros))


def lookahead_step(state, g, k=3, alpha=0.5):
    u, inner = adam_update(g, state.inner)
    fast = jax.tree_util.tree_map(jnp.add, state.fast, u)
    sync = inner.count % k == 0
    slow = jax.tree_util.tree_map(lambda s, f: jnp.where(sync, s + alpha * (f - s), s),
                                  state.slow, fast)
    fast = jax.tree_util.tree_map(lambda s, f: jnp.where(sync, s, f), slow, fast)
    return LookaheadState(fast, slow, inner)


def loss(p, a):
    return jnp.sum((p["u"] @ p["v"] - a) ** 2)


@jax.jit
def step(state, a):
    value, g = jax.value_and_grad(loss)(state.fast, a)
    norm = jax.tree_util.tree_reduce(lambda acc, x: acc + jnp.sum(x * x), g, 0.0)
    return lookahead_step(state, g), value, norm


def main():
    a = jnp.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 1.0]])
    p = {"u": jnp.full((3, 2), 0.5), "v": jnp.array([[1.0, 0.0, -1.0], [0.0, 1.0, 0.5]])}
    state = lookahead_init(p)
    losses, norms = [], []
    for _ in range(12):
        state, value, norm = step(state, a)
        losses.append(value)
        norms.append(norm)
    return {"losses": jnp.stack(losses), "norms": jnp.stack(norms), "slow": state.slow,
            "count": state.inner.count}

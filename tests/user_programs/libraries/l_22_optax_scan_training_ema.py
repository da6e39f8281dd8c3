"""A whole training run in one jitted lax.scan whose carry is (params, opt_state, ema_params)
with the optimizer state nested NamedTuples (Nesterov momentum) and an EMA of the parameters
(optax.ema-style debiasing by the count); the per-step losses the scan's ys."""
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class TraceState(NamedTuple):
    trace: Any


class EmaState(NamedTuple):
    count: jax.Array
    ema: Any


class OptState(NamedTuple):
    momentum: TraceState
    ema: EmaState


def nesterov_update(g, state, lr=0.1, beta=0.9):
    trace = jax.tree_util.tree_map(lambda t, d: beta * t + d, state.trace, g)
    updates = jax.tree_util.tree_map(lambda t, d: -lr * (beta * t + d), trace, g)
    return updates, TraceState(trace)


def ema_update(params, state, decay=0.8):
    ema = jax.tree_util.tree_map(lambda e, p: decay * e + (1 - decay) * p, state.ema, params)
    count = state.count + 1
    debiased = jax.tree_util.tree_map(lambda e: e / (1 - decay ** count), ema)
    return debiased, EmaState(count, ema)


def loss(params, x, y):
    h = jnp.tanh(x @ params[0])
    return jnp.mean((h @ params[1] - y) ** 2)


@jax.jit
def train(params, x, y):
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = OptState(TraceState(zeros), EmaState(jnp.zeros([], jnp.int32), zeros))

    def body(carry, batch):
        params, state, _ = carry
        xb, yb = batch
        value, g = jax.value_and_grad(loss)(params, xb, yb)
        updates, mom = nesterov_update(g, state.momentum)
        params = jax.tree_util.tree_map(jnp.add, params, updates)
        debiased, ema = ema_update(params, state.ema)
        return (params, OptState(mom, ema), debiased), value
    (params, state, debiased), losses = jax.lax.scan(body, (params, state, params), (x, y))
    return params, debiased, losses, state.ema.count


def main():
    x = jax.random.normal(jax.random.PRNGKey(25), (10, 6, 3))
    y = jnp.sin(x.sum(-1))
    params = (jnp.full((3, 4), 0.2), jnp.linspace(-0.5, 0.5, 4))
    params, debiased, losses, count = train(params, x, y)
    return {"params": params, "ema": debiased, "losses": losses, "count": count}

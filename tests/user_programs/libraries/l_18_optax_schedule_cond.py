"""optax schedules as closures (linear warmup then cosine decay, built with jnp.where and
a piecewise `join_schedules`), `scale_by_schedule` keeping its step count in a NamedTuple
state, and a `lax.cond` on the step count (a transformation active only every k steps)."""
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


class ScheduleState(NamedTuple):
    count: jax.Array


def linear_schedule(init_value, end_value, transition_steps):
    def schedule(count):
        frac = jnp.clip(count / transition_steps, 0.0, 1.0)
        return init_value + frac * (end_value - init_value)
    return schedule


def cosine_decay_schedule(init_value, decay_steps, alpha=0.0):
    def schedule(count):
        count = jnp.minimum(count, decay_steps)
        cosine = 0.5 * (1 + jnp.cos(jnp.pi * count / decay_steps))
        return init_value * ((1 - alpha) * cosine + alpha)
    return schedule


def join_schedules(schedules, boundaries):
    def schedule(step):
        output = schedules[0](step)
        for boundary, fn in zip(boundaries, schedules[1:]):
            output = jnp.where(step < boundary, output, fn(step - boundary))
        return output
    return schedule


def scale_by_schedule(schedule):
    def init(params):
        return ScheduleState(jnp.zeros([], jnp.int32))

    def update(updates, state, params=None):
        lr = schedule(state.count)
        updates = jax.tree_util.tree_map(lambda g: -lr * g, updates)
        return updates, ScheduleState(state.count + 1)
    return GradientTransformation(init, update)


def every_k(inner, k):
    """applies `inner`'s updates every k steps; zero updates otherwise (lax.cond)."""
    def init(params):
        return (inner.init(params), jnp.zeros([], jnp.int32))

    def update(updates, state, params=None):
        inner_state, count = state

        def apply(args):
            u, s = args
            return inner.update(u, s, params)

        def skip(args):
            u, s = args
            return jax.tree_util.tree_map(jnp.zeros_like, u), s
        updates, inner_state = jax.lax.cond(count % k == 0, apply, skip, (updates, inner_state))
        return updates, (inner_state, count + 1)
    return GradientTransformation(init, update)


schedule = join_schedules([linear_schedule(0.0, 0.2, 5), cosine_decay_schedule(0.2, 20, 0.1)],
                          [5])
optimizer = every_k(scale_by_schedule(schedule), 2)


def loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)


@jax.jit
def step(w, state, x, y):
    value, g = jax.value_and_grad(loss)(w, x, y)
    updates, state = optimizer.update(g, state, w)
    return w + updates, state, value


def main():
    x = jnp.linspace(-1, 1, 24).reshape(8, 3)
    y = jnp.sin(jnp.arange(8.0))
    w = jnp.array([0.1, -0.2, 0.3])
    state = optimizer.init(w)
    losses = []
    for _ in range(16):
        w, state, value = step(w, state, x, y)
        losses.append(value)
    return {"losses": jnp.stack(losses), "w": w, "inner_count": state[0].count,
            "lrs": jax.vmap(schedule)(jnp.arange(30))}

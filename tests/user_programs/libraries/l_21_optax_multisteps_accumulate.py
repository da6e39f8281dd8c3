"""optax.MultiSteps by hand: gradients accumulated over k mini-steps in the optimizer state
(a NamedTuple with mini_step, acc_grads and the inner state), the inner update applied on
every k-th call through lax.cond whose branches return the same pytree structure."""
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


class MultiStepsState(NamedTuple):
    mini_step: jax.Array
    gradient_step: jax.Array
    inner_state: Any
    acc_grads: Any


def sgd_momentum(lr, beta=0.8):
    def init(p):
        return jax.tree_util.tree_map(jnp.zeros_like, p)

    def update(g, m, p=None):
        m = jax.tree_util.tree_map(lambda a, b: beta * a + b, m, g)
        return jax.tree_util.tree_map(lambda a: -lr * a, m), m
    return GradientTransformation(init, update)


def multi_steps(inner, every_k):
    def init(params):
        return MultiStepsState(jnp.zeros([], jnp.int32), jnp.zeros([], jnp.int32),
                               inner.init(params), jax.tree_util.tree_map(jnp.zeros_like, params))

    def update(g, state, params=None):
        acc = jax.tree_util.tree_map(lambda a, d: a + d, state.acc_grads, g)

        def final(_):
            mean = jax.tree_util.tree_map(lambda a: a / every_k, acc)
            u, inner_state = inner.update(mean, state.inner_state, params)
            return u, MultiStepsState(jnp.zeros([], jnp.int32), state.gradient_step + 1,
                                      inner_state, jax.tree_util.tree_map(jnp.zeros_like, acc))

        def mid(_):
            return (jax.tree_util.tree_map(jnp.zeros_like, g),
                    MultiStepsState(state.mini_step + 1, state.gradient_step, state.inner_state,
                                    acc))
        return jax.lax.cond(state.mini_step == every_k - 1, final, mid, None)
    return GradientTransformation(init, update)


opt = multi_steps(sgd_momentum(0.2), 3)


def loss(p, x, y):
    return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)


@jax.jit
def step(p, state, x, y):
    value, g = jax.value_and_grad(loss)(p, x, y)
    u, state = opt.update(g, state, p)
    return jax.tree_util.tree_map(jnp.add, p, u), state, value


def main():
    x = jax.random.normal(jax.random.PRNGKey(24), (36, 2))
    y = x @ jnp.array([1.5, -0.7]) + 0.3
    p = {"w": jnp.zeros(2), "b": jnp.zeros(())}
    state = opt.init(p)
    losses = []
    for i in range(12):
        xb, yb = x[3 * i:3 * i + 3], y[3 * i:3 * i + 3]
        p, state, value = step(p, state, xb, yb)
        losses.append(value)
    return {"losses": jnp.stack(losses), "p": p, "gradient_step": state.gradient_step,
            "mini_step": state.mini_step, "acc_w": state.acc_grads["w"]}

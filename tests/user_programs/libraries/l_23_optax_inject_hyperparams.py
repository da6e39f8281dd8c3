"""optax.inject_hyperparams by hand: the learning rate lives in the optimizer state (a dict
of hyperparameters) so that it can be changed between jitted steps without retracing; a
reduce-on-plateau rule in Python reads the loss as a float and halves it."""
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


def inject_hyperparams(factory):
    def make(**hyperparams):
        def init(params):
            inner = factory(**hyperparams)
            return {"hyperparams": {k: jnp.asarray(v, jnp.float32) for k, v in
                                    hyperparams.items()},
                    "inner_state": inner.init(params)}

        def update(g, state, params=None):
            inner = factory(**state["hyperparams"])
            u, inner_state = inner.update(g, state["inner_state"], params)
            return u, {"hyperparams": state["hyperparams"], "inner_state": inner_state}
        return GradientTransformation(init, update)
    return make


def adagrad(learning_rate, eps=1e-7):
    def init(p):
        return jax.tree_util.tree_map(lambda x: jnp.full_like(x, 0.1), p)

    def update(g, acc, p=None):
        acc = jax.tree_util.tree_map(lambda a, d: a + d * d, acc, g)
        return jax.tree_util.tree_map(lambda d, a: -learning_rate * d / jnp.sqrt(a + eps), g,
                                      acc), acc
    return GradientTransformation(init, update)


opt = inject_hyperparams(adagrad)(learning_rate=0.5)


def rosenbrock(p):
    return (1.0 - p["x"]) ** 2 + 5.0 * (p["y"] - p["x"] ** 2) ** 2


@jax.jit
def step(p, state):
    value, g = jax.value_and_grad(rosenbrock)(p)
    u, state = opt.update(g, state, p)
    return jax.tree_util.tree_map(jnp.add, p, u), state, value


def main():
    p = {"x": jnp.array(-1.0), "y": jnp.array(1.5)}
    state = opt.init(p)
    losses, lrs, best, patience = [], [], float("inf"), 0
    for _ in range(20):
        p, state, value = step(p, state)
        losses.append(value)
        if float(value) < best - 1e-3:
            best, patience = float(value), 0
        else:
            patience += 1
        if patience >= 2:
            state["hyperparams"]["learning_rate"] = state["hyperparams"]["learning_rate"] * 0.5
            patience = 0
        lrs.append(state["hyperparams"]["learning_rate"])
    return {"losses": jnp.stack(losses), "lrs": jnp.stack(lrs), "p": p}

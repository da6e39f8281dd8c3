"""An optimizer as a pair of closures (init_fn, update_fn) in the example_libraries style; a
softmax classifier with an RMSProp update, state a NamedTuple, step counter in the state."""
from typing import NamedTuple

import jax
import jax.numpy as jnp


class OptState(NamedTuple):
    step: jnp.ndarray
    sq: dict


def rmsprop(lr, decay=0.9, eps=1e-6):
    def init_fn(params):
        return OptState(jnp.zeros((), jnp.int32), jax.tree_util.tree_map(jnp.zeros_like, params))

    def update_fn(grads, state, params):
        sq = jax.tree_util.tree_map(lambda s, g: decay * s + (1 - decay) * g ** 2, state.sq, grads)
        params = jax.tree_util.tree_map(lambda p, g, s: p - lr * g / jnp.sqrt(s + eps),
                                        params, grads, sq)
        return params, OptState(state.step + 1, sq)
    return init_fn, update_fn


def xent(params, x, labels):
    logits = x @ params["w"] + params["b"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1))


def main():
    init_fn, update_fn = rmsprop(0.02)
    kx, kw = jax.random.split(jax.random.PRNGKey(31))
    x = jax.random.normal(kx, (36, 5))
    labels = jnp.argmax(x @ jax.random.normal(kw, (5, 4)), axis=1)
    params = {"w": jnp.zeros((5, 4)), "b": jnp.zeros(4)}
    state = init_fn(params)

    @jax.jit
    def step(params, state):
        l, g = jax.value_and_grad(xent)(params, x, labels)
        params, state = update_fn(g, state, params)
        return params, state, l
    losses = []
    for _ in range(12):
        params, state, l = step(params, state)
        losses.append(l)
    return {"losses": jnp.stack(losses), "params": params, "step": state.step,
            "sq_b": state.sq["b"]}

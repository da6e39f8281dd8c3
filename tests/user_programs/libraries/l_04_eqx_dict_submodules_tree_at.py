"""A module holding a dict of sub-modules (an encoder/decoder pair, NamedTuples) and a
functional `tree_at`-like replacement (`_replace` on the nested NamedTuples); one branch frozen
by jax.lax.stop_gradient inside the model; a jax.tree.map / jax.tree.leaves update."""
from typing import NamedTuple

import jax
import jax.numpy as jnp


class Linear(NamedTuple):
    w: jax.Array
    b: jax.Array

    def __call__(self, x):
        return x @ self.w + self.b


class AutoEncoder(NamedTuple):
    parts: dict

    def __call__(self, x, freeze_decoder=False):
        z = jnp.tanh(self.parts["enc"](x))
        dec = self.parts["dec"]
        if freeze_decoder:
            dec = jax.lax.stop_gradient(dec)
        return dec(z)


def init(key, n, k):
    k1, k2 = jax.random.split(key)
    return AutoEncoder({"enc": Linear(0.4 * jax.random.normal(k1, (n, k)), jnp.zeros(k)),
                        "dec": Linear(0.4 * jax.random.normal(k2, (k, n)), jnp.zeros(n))})


def loss(model, x, freeze):
    return jnp.mean((model(x, freeze) - x) ** 2)


def make_step(freeze):
    @jax.jit
    def step(model, x):
        value, g = jax.value_and_grad(loss)(model, x, freeze)
        return jax.tree.map(lambda p, d: p - 0.5 * d, model, g), value
    return step


def tree_at_bias(model, new_bias):
    enc = model.parts["enc"]._replace(b=new_bias)
    return model._replace(parts={**model.parts, "enc": enc})


def main():
    x = jax.random.normal(jax.random.PRNGKey(3), (10, 4))
    out = {}
    for freeze in (False, True):
        model = tree_at_bias(init(jax.random.PRNGKey(4), 4, 2), jnp.full(2, 0.05))
        step = make_step(freeze)
        losses = []
        for _ in range(10):
            model, value = step(model, x)
            losses.append(value)
        out[str(freeze)] = {"losses": jnp.stack(losses), "dec_w": model.parts["dec"].w,
                            "total": sum(jnp.sum(p) for p in jax.tree.leaves(model))}
    return out

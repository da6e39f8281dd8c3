"""The jax.tree namespace as newer libraries use it: jax.tree.map with is_leaf,
jax.tree.leaves / structure / unflatten, jax.tree.transpose turning a list of per-step
metric dicts into a dict of lists, jax.tree.reduce for a parameter count, and jax.tree.flatten
round trips of NamedTuple params through a jitted step."""
from typing import NamedTuple

import jax
import jax.numpy as jnp


class Params(NamedTuple):
    w: jax.Array
    b: jax.Array


def loss(p, x, y):
    pred = x @ p.w + p.b
    return jnp.mean((pred - y) ** 2), {"mae": jnp.mean(jnp.abs(pred - y)),
                                        "max": jnp.max(jnp.abs(pred - y))}


@jax.jit
def step(p, x, y):
    (value, metrics), g = jax.value_and_grad(loss, has_aux=True)(p, x, y)
    leaves, treedef = jax.tree.flatten(p)
    g_leaves = jax.tree.leaves(g)
    new = jax.tree.unflatten(treedef, [a - 0.1 * d for a, d in zip(leaves, g_leaves)])
    return new, dict(metrics, loss=value)


def main():
    x = jnp.linspace(0, 1, 20).reshape(10, 2)
    y = x @ jnp.array([2.0, -1.0]) + 0.5
    p = Params(jnp.zeros(2), jnp.zeros(()))
    history = []
    for _ in range(10):
        p, metrics = step(p, x, y)
        history.append(metrics)
    outer = jax.tree.structure([0] * len(history))
    inner = jax.tree.structure(history[0])
    by_metric = jax.tree.transpose(outer, inner, history)
    count = jax.tree.reduce(lambda a, b: a + b, jax.tree.map(lambda a: a.size, p))
    scaled = jax.tree.map(lambda v: jnp.stack(v) * 2, by_metric,
                          is_leaf=lambda v: isinstance(v, list))
    return {"by_metric": {k: jnp.stack(v) for k, v in by_metric.items()}, "count": count,
            "scaled_mae": scaled["mae"], "p": p}

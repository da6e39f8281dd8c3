"""flax's `rngs={"dropout": key}` argument: apply takes a dict of named keys, folds in a
per-layer counter with jax.random.fold_in to give each dropout its own stream, and a
`deterministic` flag; the train step splits the dropout key from a step-indexed fold_in."""
import functools

import jax
import jax.numpy as jnp


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {"l0": jax.random.normal(k1, (4, 8)) * 0.4, "l1": jax.random.normal(k2, (8, 8)) * 0.3,
            "out": jax.random.normal(k3, (8,)) * 0.3}


def apply(params, x, *, deterministic, rngs=None):
    counter = 0

    def dropout(h, rate=0.2):
        nonlocal counter
        if deterministic:
            return h
        key = jax.random.fold_in(rngs["dropout"], counter)
        counter += 1
        mask = jax.random.bernoulli(key, 1 - rate, h.shape)
        return jnp.where(mask, h / (1 - rate), 0.0)

    h = dropout(jax.nn.gelu(x @ params["l0"]))
    h = dropout(jax.nn.gelu(h @ params["l1"]))
    return h @ params["out"]


def loss(params, x, y, key):
    pred = apply(params, x, deterministic=False, rngs={"dropout": key})
    return jnp.mean((pred - y) ** 2)


@functools.partial(jax.jit, static_argnames=())
def train_step(params, x, y, base_key, step):
    key = jax.random.fold_in(base_key, step)
    g = jax.grad(loss)(params, x, y, key)
    return jax.tree_util.tree_map(lambda p, d: p - 0.05 * d, params, g)


def main():
    params = init(jax.random.PRNGKey(10))
    x = jax.random.normal(jax.random.PRNGKey(11), (10, 4))
    y = jnp.sum(jnp.sin(x), axis=1)
    base = jax.random.PRNGKey(12)
    evals = []
    for step in range(8):
        params = train_step(params, x, y, base, step)
        evals.append(jnp.mean((apply(params, x, deterministic=True) - y) ** 2))
    return {"evals": jnp.stack(evals), "out": params["out"],
            "train_pred": apply(params, x, deterministic=False,
                                rngs={"dropout": jax.random.PRNGKey(0)})}

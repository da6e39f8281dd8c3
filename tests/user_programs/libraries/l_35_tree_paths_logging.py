"""Path-aware pytree code as libraries write it: jax.tree_util.tree_flatten_with_path and
keystr to name every parameter for logging, a per-parameter learning rate chosen by a regex on
the path string, tree_map_with_path in the jitted update, gradient norms per path."""
import re

import jax
import jax.numpy as jnp


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {"encoder": {"layers": [{"kernel": jax.random.normal(k1, (3, 4)) * 0.5,
                                    "bias": jnp.zeros(4)},
                                   {"kernel": jax.random.normal(k2, (4, 4)) * 0.5,
                                    "bias": jnp.zeros(4)}]},
            "head": {"kernel": jax.random.normal(k3, (4,)) * 0.5}}


def apply(params, x):
    for layer in params["encoder"]["layers"]:
        x = jnp.tanh(x @ layer["kernel"] + layer["bias"])
    return x @ params["head"]["kernel"]


def loss(params, x, y):
    return jnp.mean((apply(params, x) - y) ** 2)


def lr_for(path):
    name = jax.tree_util.keystr(path)
    if re.search(r"\['head'\]", name):
        return 0.2
    if name.endswith("['bias']"):
        return 0.05
    return 0.1


@jax.jit
def step(params, x, y):
    value, g = jax.value_and_grad(loss)(params, x, y)
    new = jax.tree_util.tree_map_with_path(lambda path, p, d: p - lr_for(path) * d, params, g)
    norms = {jax.tree_util.keystr(path): jnp.linalg.norm(d)
             for path, d in jax.tree_util.tree_flatten_with_path(g)[0]}
    return new, value, norms


def main():
    params = init(jax.random.PRNGKey(44))
    x = jnp.linspace(-1, 1, 30).reshape(10, 3)
    y = jnp.cos(x).sum(1)
    losses, history = [], []
    for _ in range(8):
        params, value, norms = step(params, x, y)
        losses.append(value)
        history.append(norms)
    names = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(params)[0]]
    return {"losses": jnp.stack(losses), "names": names,
            "last_norms": history[-1], "head": params["head"]["kernel"]}

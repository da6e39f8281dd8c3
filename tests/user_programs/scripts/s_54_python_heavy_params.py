"""Python-heavy parameter handling under jit: layers named by f-strings in a dict built in a loop,
a frozen part popped out and merged back with {**a, **b}, **opts forwarded, value_and_grad with
argnums=(0, 1) and has_aux, the activation a static keyword argument switched mid-run."""
import functools

import jax
import jax.numpy as jnp


def init(key, sizes):
    params = {}
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        key, sub = jax.random.split(key)
        params[f"layer_{i}"] = {"w": jax.random.normal(sub, (m, n)) * 0.5, "b": jnp.zeros(n)}
    return params


def forward(params, x, **opts):
    n = len(params)
    for i in range(n):
        layer = params[f"layer_{i}"]
        x = x @ layer["w"] + layer["b"]
        if i < n - 1:
            x = opts.get("act", jnp.tanh)(x)
    return x


def loss(params, frozen, x, y, *, act=jnp.tanh):
    full = {**params, **frozen}
    return jnp.mean((forward(full, x, act=act) - y) ** 2), {"n": len(full)}


@functools.partial(jax.jit, static_argnames=("act",))
def step(params, frozen, x, y, act=jnp.tanh):
    (l, aux), (g, g_frozen) = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(
        params, frozen, x, y, act=act)
    params = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, g)
    frozen_norm = jnp.sqrt(sum(jnp.vdot(v, v) for v in jax.tree_util.tree_leaves(g_frozen)))
    return params, l, aux["n"], frozen_norm


def main():
    params = init(jax.random.PRNGKey(0), [2, 4, 4, 1])
    frozen = {"layer_2": params.pop("layer_2")}
    x = jnp.linspace(-1, 1, 10).reshape(5, 2)
    y = jnp.sum(x, axis=1, keepdims=True)
    log = []
    for i in range(6):
        params, l, n, norm = step(params, frozen, x, y, act=jax.nn.relu if i >= 3 else jnp.tanh)
        log.append((float(l), int(n), float(norm)))
    return {"log": log, "params": params}

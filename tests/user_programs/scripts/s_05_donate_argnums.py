"""A train step jitted with donate_argnums, as the docs recommend for large parameters."""
import jax
import jax.numpy as jnp


def loss(params, x, y):
    h = jnp.tanh(x @ params["w1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)


def sgd_step(params, velocity, x, y):
    g = jax.grad(loss)(params, x, y)
    velocity = jax.tree_util.tree_map(lambda v, g: 0.8 * v - 0.1 * g, velocity, g)
    params = jax.tree_util.tree_map(lambda p, v: p + v, params, velocity)
    return params, velocity


step = jax.jit(sgd_step, donate_argnums=(0, 1))


def main():
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(7), 3)
    params = {"w1": 0.5 * jax.random.normal(k1, (3, 8)),
              "w2": 0.5 * jax.random.normal(k2, (8, 1))}
    velocity = jax.tree_util.tree_map(jnp.zeros_like, params)
    x = jax.random.normal(k3, (20, 3))
    y = jnp.sum(x ** 2, axis=1, keepdims=True)
    losses = []
    for _ in range(15):
        params, velocity = step(params, velocity, x, y)
        losses.append(loss(params, x, y))
    return {"losses": jnp.stack(losses), "params": params}

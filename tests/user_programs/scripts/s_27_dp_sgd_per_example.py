"""Differentially private SGD: per-example gradients by jax.vmap(jax.grad), clipped one by one,
summed, plus Gaussian noise from a key split per step."""
import jax
import jax.numpy as jnp


def loss(params, x, y):
    logit = jnp.dot(x, params["w"]) + params["b"]
    return jax.nn.softplus(-y * logit)


def clipped_grad(params, x, y, max_norm=1.0):
    g = jax.grad(loss)(params, x, y)
    norm = jnp.sqrt(sum(jnp.sum(v ** 2) for v in jax.tree_util.tree_leaves(g)))
    return jax.tree_util.tree_map(lambda v: v / jnp.maximum(1.0, norm / max_norm), g)


@jax.jit
def private_step(params, x, y, key):
    grads = jax.vmap(clipped_grad, in_axes=(None, 0, 0))(params, x, y)
    leaves, treedef = jax.tree_util.tree_flatten(grads)
    keys = jax.random.split(key, len(leaves))
    noisy = [jnp.sum(g, axis=0) + 0.5 * jax.random.normal(k, g.shape[1:])
             for g, k in zip(leaves, keys)]
    mean = jax.tree_util.tree_unflatten(treedef, [n / x.shape[0] for n in noisy])
    return jax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, mean)


def main():
    key = jax.random.PRNGKey(17)
    key, kx = jax.random.split(key)
    x = jax.random.normal(kx, (32, 3))
    y = jnp.sign(x[:, 0] + 0.5 * x[:, 1])
    params = {"w": jnp.zeros(3), "b": jnp.zeros(())}
    losses = []
    for _ in range(10):
        key, sub = jax.random.split(key)
        params = private_step(params, x, y, sub)
        losses.append(jnp.mean(jax.vmap(loss, in_axes=(None, 0, 0))(params, x, y)))
    per_example = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, x[:4], y[:4])
    return {"losses": jnp.stack(losses), "params": params, "per_example": per_example}

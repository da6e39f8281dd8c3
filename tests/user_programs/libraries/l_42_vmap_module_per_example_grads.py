"""Per-example gradients of a module as libraries compute them (Opacus-style DP): vmap of
grad over examples with the module broadcast (in_axes=None) and a dict batch mapped on
axis 0 (in_axes={"x": 0, "y": 0}), per-example clipping by each example's global norm,
averaging and noise; the module a registered dataclass with a static name."""
import dataclasses

import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Linear:
    w: jax.Array
    b: jax.Array
    name: str = dataclasses.field(default="lin", metadata={"static": True})

    def __call__(self, x):
        return jnp.tanh(x @ self.w + self.b)


def example_loss(model, example):
    return (model(example["x"]) - example["y"]) ** 2


def clipped_mean_grad(model, batch, clip):
    grads = jax.vmap(jax.grad(example_loss), in_axes=(None, {"x": 0, "y": 0}))(model, batch)
    norms = jnp.sqrt(sum(jnp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1)
                         for g in jax.tree_util.tree_leaves(grads)))
    factor = jnp.minimum(1.0, clip / (norms + 1e-6))
    return jax.tree_util.tree_map(
        lambda g: jnp.mean(g * factor.reshape((-1,) + (1,) * (g.ndim - 1)), axis=0), grads), norms


@jax.jit
def step(model, batch, key):
    g, norms = clipped_mean_grad(model, batch, 0.5)
    leaves, treedef = jax.tree_util.tree_flatten(g)
    keys = jax.random.split(key, len(leaves))
    noisy = [l + 0.01 * jax.random.normal(k, l.shape) for l, k in zip(leaves, keys)]
    g = jax.tree_util.tree_unflatten(treedef, noisy)
    return jax.tree_util.tree_map(lambda p, d: p - 0.5 * d, model, g), norms


def main():
    x = jax.random.normal(jax.random.PRNGKey(52), (12, 3))
    batch = {"x": x, "y": jnp.sin(x[:, 0]) * 0.8}
    model = Linear(jnp.array([0.1, 0.2, -0.1]), jnp.array(0.0), "head")
    key = jax.random.PRNGKey(53)
    all_norms = []
    for _ in range(8):
        key, sub = jax.random.split(key)
        model, norms = step(model, batch, sub)
        all_norms.append(norms)
    return {"norms": jnp.stack(all_norms), "w": model.w, "b": model.b, "name": model.name}

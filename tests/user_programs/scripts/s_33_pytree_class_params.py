"""Parameters in a class registered with @jax.tree_util.register_pytree_node_class; the
optimizer maps over it with jax.tree_util.tree_map, the class has a __call__."""
import jax
import jax.numpy as jnp


@jax.tree_util.register_pytree_node_class
class Affine:
    def __init__(self, w, b, name="affine"):
        self.w = w
        self.b = b
        self.name = name

    def __call__(self, x):
        return x @ self.w + self.b

    def tree_flatten(self):
        return (self.w, self.b), self.name

    @classmethod
    def tree_unflatten(cls, name, children):
        return cls(*children, name=name)


def loss(model, x, y):
    return jnp.mean(jnp.abs(model(x) - y))


@jax.jit
def step(model, x, y):
    g = jax.grad(loss)(model, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, model, g)


def main():
    x = jnp.arange(24.0).reshape(8, 3) / 10.0
    y = x @ jnp.array([[1.0], [-0.5], [0.25]]) + 0.1
    model = Affine(jnp.zeros((3, 1)), jnp.zeros(1), name="head")
    losses = []
    for _ in range(20):
        model = step(model, x, y)
        losses.append(loss(model, x, y))
    return {"losses": jnp.stack(losses), "w": model.w, "b": model.b, "name": model.name}

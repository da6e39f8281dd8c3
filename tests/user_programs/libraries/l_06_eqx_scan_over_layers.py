"""Stacked identical layers (one module whose leaves carry a leading layer axis, built by
jax.vmap of the constructor) applied with jax.lax.scan over the module itself; a residual MLP
trained with grad through the scan."""
import dataclasses

import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class ResBlock:
    w: jax.Array
    b: jax.Array

    @staticmethod
    def create(key, width):
        return ResBlock(jax.random.normal(key, (width, width)) * 0.3, jnp.zeros(width))

    def __call__(self, x):
        return x + jax.nn.relu(x @ self.w + self.b)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Stack:
    blocks: ResBlock
    readout: jax.Array

    def __call__(self, x):
        def body(h, block):
            return block(h), jnp.mean(h)
        h, means = jax.lax.scan(body, x, self.blocks)
        return h @ self.readout, means


def loss(model, x, y):
    pred, _ = model(x)
    return jnp.mean((pred - y) ** 2)


@jax.jit
def step(model, x, y):
    g = jax.grad(loss)(model, x, y)
    return jax.tree_util.tree_map(lambda p, d: p - 0.05 * d, model, g)


def main():
    keys = jax.random.split(jax.random.PRNGKey(6), 3)
    model = Stack(jax.vmap(ResBlock.create, in_axes=(0, None))(keys, 4), jnp.full(4, 0.25))
    x = jnp.linspace(-1, 1, 24).reshape(6, 4)
    y = jnp.sum(x ** 2, axis=1)
    losses = []
    for _ in range(8):
        model = step(model, x, y)
        losses.append(loss(model, x, y))
    _, means = model(x)
    return {"losses": jnp.stack(losses), "block_b": model.blocks.b, "means": means}

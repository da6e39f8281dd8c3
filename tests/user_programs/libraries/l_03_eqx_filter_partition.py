"""Equinox-style filtering: a module holding arrays, Python ints and a function is split into
its array leaves and the rest with tree_map + is_leaf (`partition`), only the arrays are
differentiated (`filter_value_and_grad`), and the halves are `combine`d again."""
import dataclasses
import functools

import jax
import jax.numpy as jnp


@jax.tree_util.register_pytree_node_class
@dataclasses.dataclass(frozen=True)
class Block:
    w: object
    b: object
    depth: int
    act: object

    def tree_flatten(self):
        return (self.w, self.b, self.depth, self.act), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def __call__(self, x):
        for _ in range(self.depth):
            x = self.act(x @ self.w + self.b)
        return x


def is_array(x):
    return isinstance(x, jax.Array)


def partition(tree, pred):
    keep = jax.tree_util.tree_map(lambda x: x if pred(x) else None, tree)
    rest = jax.tree_util.tree_map(lambda x: None if pred(x) else x, tree)
    return keep, rest


def combine(a, b):
    return jax.tree_util.tree_map(lambda x, y: y if x is None else x, a, b,
                                  is_leaf=lambda x: x is None)


def filter_value_and_grad(fn):
    def wrapped(model, *args):
        params, static = partition(model, is_array)

        def inner(params):
            return fn(combine(params, static), *args)
        return jax.value_and_grad(inner)(params)
    return wrapped


def loss(model, x, y):
    return jnp.mean((model(x).sum(-1) - y) ** 2)


@functools.partial(jax.jit, static_argnums=1)
def step(params, static, x, y):
    model = combine(params, static)
    value, g = filter_value_and_grad(loss)(model, x, y)
    params = jax.tree_util.tree_map(lambda p, d: p - 0.2 * d, params, g)
    return params, value


def main():
    x = jnp.linspace(-1.0, 1.0, 15).reshape(5, 3)
    y = jnp.array([0.3, -0.1, 0.2, 0.0, 0.4])
    model = Block(jnp.eye(3) * 0.5, jnp.full(3, 0.1), 2, jnp.tanh)
    params, static = partition(model, is_array)
    losses = []
    for _ in range(8):
        params, value = step(params, static, x, y)
        losses.append(value)
    model = combine(params, static)
    return {"losses": jnp.stack(losses), "w": model.w, "b": model.b, "depth": model.depth,
            "static_leaves": len(jax.tree_util.tree_leaves(static))}

"""Equinox-style: a dataclass registered with jax.tree_util.register_dataclass alone, its static
fields marked by `dataclasses.field(metadata={"static": True})`; a classmethod constructor
taking a PRNG key; an MLP module holding a list of Linear sub-modules; SGD by tree_map."""
import dataclasses

import jax
import jax.numpy as jnp


def static_field(**kwargs):
    return dataclasses.field(metadata={"static": True}, **kwargs)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Linear:
    weight: jax.Array
    bias: jax.Array
    use_bias: bool = static_field(default=True)

    @classmethod
    def init(cls, key, n_in, n_out, use_bias=True):
        wkey, bkey = jax.random.split(key)
        lim = 1.0 / jnp.sqrt(n_in)
        weight = jax.random.uniform(wkey, (n_out, n_in), minval=-lim, maxval=lim)
        bias = jax.random.uniform(bkey, (n_out,), minval=-lim, maxval=lim)
        return cls(weight, bias, use_bias)

    def __call__(self, x):
        y = self.weight @ x
        if self.use_bias:
            y = y + self.bias
        return y


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class MLP:
    layers: list
    activation: str = static_field(default="tanh")

    @classmethod
    def init(cls, key, sizes, activation="tanh"):
        keys = jax.random.split(key, len(sizes) - 1)
        layers = [Linear.init(k, a, b, use_bias=(i < len(sizes) - 2))
                  for i, (k, a, b) in enumerate(zip(keys, sizes[:-1], sizes[1:]))]
        return cls(layers, activation)

    def __call__(self, x):
        act = getattr(jax.nn, self.activation) if self.activation != "tanh" else jnp.tanh
        for layer in self.layers[:-1]:
            x = act(layer(x))
        return self.layers[-1](x)


def loss(model, xs, ys):
    pred = jax.vmap(model)(xs)
    return jnp.mean((pred[:, 0] - ys) ** 2)


@jax.jit
def step(model, xs, ys):
    value, grads = jax.value_and_grad(loss)(model, xs, ys)
    model = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, model, grads)
    return model, value


def main():
    xs = jnp.linspace(-1.0, 1.0, 16).reshape(8, 2)
    ys = jnp.sin(3.0 * xs[:, 0]) * xs[:, 1]
    out = {}
    for act in ("tanh", "gelu"):
        model = MLP.init(jax.random.PRNGKey(0), [2, 8, 8, 1], act)
        losses = []
        for _ in range(10):
            model, value = step(model, xs, ys)
            losses.append(value)
        out[act] = {"losses": jnp.stack(losses), "last_w": model.layers[-1].weight,
                    "n_leaves": len(jax.tree_util.tree_leaves(model))}
    return out

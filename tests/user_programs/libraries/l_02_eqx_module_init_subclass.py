"""Equinox-style Module base class: `__init_subclass__` makes every subclass a frozen dataclass
registered as a pytree (fields listed in `_static` go into the treedef); modules with
properties, inheritance and `super().__call__`; the model built by classmethods from a key."""
import dataclasses

import jax
import jax.numpy as jnp


class Module:
    _static = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(frozen=True)(cls)
        fields = [f.name for f in dataclasses.fields(cls)]
        data = [f for f in fields if f not in cls._static]
        meta = [f for f in fields if f in cls._static]
        jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)


class Dense(Module):
    w: jax.Array
    b: jax.Array

    @classmethod
    def create(cls, key, n_in, n_out):
        return cls(jax.random.normal(key, (n_in, n_out)) / jnp.sqrt(n_in), jnp.zeros(n_out))

    @property
    def n_out(self):
        return self.w.shape[1]

    def __call__(self, x):
        return x @ self.w + self.b


class ScaledDense(Dense):
    _static = ("scale",)
    scale: float = 0.5

    def __call__(self, x):
        return self.scale * jnp.tanh(super().__call__(x))


class Net(Module):
    hidden: ScaledDense
    head: Dense

    @classmethod
    def create(cls, key, n_in, n_hidden):
        k1, k2 = jax.random.split(key)
        hidden = ScaledDense.create(k1, n_in, n_hidden)
        return cls(hidden, Dense.create(k2, hidden.n_out, 1))

    def __call__(self, x):
        return self.head(self.hidden(x))[..., 0]


def loss(net, x, y):
    return jnp.mean((net(x) - y) ** 2)


@jax.jit
def update(net, x, y):
    g = jax.grad(loss)(net, x, y)
    return jax.tree_util.tree_map(lambda p, d: p - 0.3 * d, net, g)


def main():
    x = jax.random.normal(jax.random.PRNGKey(1), (12, 3))
    y = jnp.cos(x[:, 0]) - x[:, 2]
    net = Net.create(jax.random.PRNGKey(2), 3, 6)
    losses = []
    for _ in range(12):
        net = update(net, x, y)
        losses.append(loss(net, x, y))
    _, treedef = jax.tree_util.tree_flatten(net)
    return {"losses": jnp.stack(losses), "hidden_w": net.hidden.w, "scale": net.hidden.scale,
            "n_leaves": treedef.num_leaves, "is_scaled": isinstance(net.hidden, Dense)}

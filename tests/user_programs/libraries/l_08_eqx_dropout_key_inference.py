"""A module whose __call__ takes `key=None` and an `inference` flag: dropout drawn with
jax.random.bernoulli when training (keys split per layer), the identity in inference; the flag
static under jit (static_argnames), the key threaded through a Python loop of steps."""
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp


class Dropout(NamedTuple):
    rate: float

    def __call__(self, x, *, key=None, inference=False):
        if inference or self.rate == 0.0:
            return x
        keep = jax.random.bernoulli(key, 1.0 - self.rate, x.shape)
        return jnp.where(keep, x / (1.0 - self.rate), 0.0)


class Net(NamedTuple):
    w1: jax.Array
    w2: jax.Array

    def __call__(self, x, *, key=None, inference=False):
        drop = Dropout(0.25)
        k1, k2 = jax.random.split(key) if key is not None else (None, None)
        h = drop(jax.nn.relu(x @ self.w1), key=k1, inference=inference)
        h = drop(h, key=k2, inference=inference)
        return h @ self.w2


def loss(net, x, y, key, inference=False):
    return jnp.mean((net(x, key=key, inference=inference) - y) ** 2)


@functools.partial(jax.jit, static_argnames="inference")
def step(net, x, y, key, inference=False):
    value, g = jax.value_and_grad(loss)(net, x, y, key, inference)
    return Net(*(p - 0.05 * d for p, d in zip(net, g))), value


def main():
    key = jax.random.PRNGKey(8)
    x = jnp.linspace(-1, 1, 12).reshape(4, 3)
    y = jnp.array([[1.0], [0.0], [0.5], [-0.5]])
    net = Net(jnp.full((3, 6), 0.3), jnp.full((6, 1), -0.2))
    losses = []
    for _ in range(6):
        key, sub = jax.random.split(key)
        net, value = step(net, x, y, sub)
        losses.append(value)
    _, eval_loss = step(net, x, y, None, inference=True)
    return {"losses": jnp.stack(losses), "eval_loss": eval_loss, "w2": net.w2,
            "pred": net(x, inference=True)}

"""Everything together: equinox-like encoder/decoder modules (register_pytree_node_class),
a diagonal Normal distribution class for the posterior, a Bernoulli likelihood, the
reparameterised ELBO vmapped over the batch with per-example keys, and an optax-like Adam
(init, update) pair; one jitted step."""
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp


@jax.tree_util.register_pytree_node_class
class MLP:
    def __init__(self, ws, bs):
        self.ws, self.bs = ws, bs

    @classmethod
    def create(cls, key, sizes):
        keys = jax.random.split(key, len(sizes) - 1)
        ws = [jax.random.normal(k, (a, b)) / jnp.sqrt(a) for k, a, b in zip(keys, sizes, sizes[1:])]
        return cls(ws, [jnp.zeros(b) for b in sizes[1:]])

    def __call__(self, x):
        for w, b in zip(self.ws[:-1], self.bs[:-1]):
            x = jax.nn.elu(x @ w + b)
        return x @ self.ws[-1] + self.bs[-1]

    def tree_flatten(self):
        return (self.ws, self.bs), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


class DiagNormal(NamedTuple):
    loc: jax.Array
    log_scale: jax.Array

    def rsample(self, key):
        return self.loc + jnp.exp(self.log_scale) * jax.random.normal(key, self.loc.shape)

    def kl_to_standard(self):
        var = jnp.exp(2 * self.log_scale)
        return 0.5 * jnp.sum(var + self.loc ** 2 - 1.0 - 2 * self.log_scale)


def bernoulli_log_prob(logits, x):
    return jnp.sum(x * jax.nn.log_sigmoid(logits) + (1 - x) * jax.nn.log_sigmoid(-logits))


class VAE(NamedTuple):
    encoder: MLP
    decoder: MLP


def example_elbo(model, x, key):
    h = model.encoder(x)
    q = DiagNormal(h[:2], h[2:])
    z = q.rsample(key)
    return bernoulli_log_prob(model.decoder(z), x) - q.kl_to_standard()


def loss(model, xs, key):
    keys = jax.random.split(key, xs.shape[0])
    return -jnp.mean(jax.vmap(example_elbo, in_axes=(None, 0, 0))(model, xs, keys))


class Adam(NamedTuple):
    init: Callable
    update: Callable


def adam(lr):
    def init(p):
        z = jax.tree_util.tree_map(jnp.zeros_like, p)
        return (jnp.zeros([], jnp.int32), z, z)

    def update(g, state):
        t, m, v = state
        t = t + 1
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        u = jax.tree_util.tree_map(
            lambda a, b: -lr * a / (1 - 0.9 ** t) / (jnp.sqrt(b / (1 - 0.999 ** t)) + 1e-8), m, v)
        return u, (t, m, v)
    return Adam(init, update)


opt = adam(0.01)


@jax.jit
def step(model, state, xs, key):
    value, g = jax.value_and_grad(loss)(model, xs, key)
    u, state = opt.update(g, state)
    return jax.tree_util.tree_map(jnp.add, model, u), state, value


def main():
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(47), 3)
    model = VAE(MLP.create(k1, [6, 8, 4]), MLP.create(k2, [2, 8, 6]))
    xs = (jax.random.uniform(k3, (10, 6)) > 0.5).astype(jnp.float32)
    state = opt.init(model)
    key = jax.random.PRNGKey(48)
    losses = []
    for _ in range(10):
        key, sub = jax.random.split(key)
        model, state, value = step(model, state, xs, sub)
        losses.append(value)
    return {"losses": jnp.stack(losses), "dec_b": model.decoder.bs[-1], "t": state[0]}

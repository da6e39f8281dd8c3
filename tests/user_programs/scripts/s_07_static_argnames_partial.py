"""functools.partial(jax.jit, static_argnames=...): inner optimisation steps in a fori_loop,
the activation chosen by a static string."""
import functools

import jax
import jax.numpy as jnp
from jax import lax


def net(w, x, activation):
    h = x @ w["a"]
    h = jnp.tanh(h) if activation == "tanh" else jax.nn.softplus(h)
    return h @ w["b"]


def loss(w, x, y, activation):
    return jnp.mean((net(w, x, activation) - y) ** 2)


@functools.partial(jax.jit, static_argnames=("num_steps", "activation"))
def fit(w, x, y, lr, num_steps, activation="tanh"):
    def body(i, w):
        g = jax.grad(loss)(w, x, y, activation)
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, w, g)
    w = lax.fori_loop(0, num_steps, body, w)
    return w, loss(w, x, y, activation)


def main():
    ka, kb, kx = jax.random.split(jax.random.PRNGKey(5), 3)
    w0 = {"a": 0.5 * jax.random.normal(ka, (2, 6)), "b": 0.5 * jax.random.normal(kb, (6,))}
    x = jax.random.normal(kx, (30, 2))
    y = x[:, 0] ** 2 - x[:, 1]
    out = {}
    for act in ("tanh", "softplus"):
        w = w0
        losses = []
        for rnd in range(3):
            w, l = fit(w, x, y, 0.05, num_steps=10, activation=act)
            losses.append(l)
        out[act] = (jnp.stack(losses), w)
    return out

"""A small architecture search: the activation picked by an integer index with lax.switch inside
the jitted loss, each candidate trained a few steps, the best chosen in Python."""
import jax
import jax.numpy as jnp
from jax import lax

ACTS = [jnp.tanh, jax.nn.relu, jax.nn.elu, lambda z: z * jax.nn.sigmoid(z)]


def loss(w, idx, x, y):
    h = lax.switch(idx, ACTS, x @ w["a"])
    return jnp.mean((h @ w["b"] - y) ** 2)


@jax.jit
def train(w, idx, x, y):
    def body(i, w):
        g = jax.grad(loss)(w, idx, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, w, g)
    w = lax.fori_loop(0, 20, body, w)
    return loss(w, idx, x, y)


def main():
    ka, kb, kx = jax.random.split(jax.random.PRNGKey(3), 3)
    w = {"a": jax.random.normal(ka, (2, 8)) * 0.5, "b": jax.random.normal(kb, (8,)) * 0.5}
    x = jax.random.normal(kx, (32, 2))
    y = jnp.abs(x[:, 0]) - 0.5 * x[:, 1]
    finals = [float(train(w, i, x, y)) for i in range(len(ACTS))]
    return {"finals": finals, "best": min(range(len(ACTS)), key=finals.__getitem__)}

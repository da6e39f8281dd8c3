"""A whole epoch in one jit: the batches stacked and a lax.scan over them carrying
(params, opt_state), a key split inside the scan body for label noise."""
import jax
import jax.numpy as jnp
from jax import lax


def loss(params, x, y):
    return jnp.mean((jnp.tanh(x @ params[0]) @ params[1] - y) ** 2)


@jax.jit
def train_epoch(params, velocity, xs, ys, key):
    def body(carry, batch):
        params, velocity, key = carry
        key, sub = jax.random.split(key)
        x, y = batch
        y = y + 0.01 * jax.random.normal(sub, y.shape)
        l, g = jax.value_and_grad(loss)(params, x, y)
        velocity = [0.9 * v + gi for v, gi in zip(velocity, g)]
        params = [p - 0.05 * v for p, v in zip(params, velocity)]
        return (params, velocity, key), l
    (params, velocity, key), losses = lax.scan(body, (params, velocity, key), (xs, ys))
    return params, velocity, key, losses


def main():
    k1, k2, k3, key = jax.random.split(jax.random.PRNGKey(12), 4)
    params = [0.5 * jax.random.normal(k1, (3, 8)), 0.5 * jax.random.normal(k2, (8, 1))]
    velocity = [jnp.zeros_like(p) for p in params]
    x = jax.random.normal(k3, (40, 3))
    y = jnp.sin(x[:, :1]) + x[:, 1:2] * x[:, 2:]
    xs, ys = x.reshape(5, 8, 3), y.reshape(5, 8, 1)
    history = []
    for epoch in range(4):
        params, velocity, key, losses = train_epoch(params, velocity, xs, ys, key)
        history.append(losses)
    return {"losses": jnp.stack(history), "params": params, "key": key}

"""Epochs of shuffled minibatches: jax.random.permutation of the data itself (rows), a key per
epoch from fold_in, and a jitted update over each batch."""
import jax
import jax.numpy as jnp


def loss(theta, x, y):
    return jnp.mean(jnp.abs(x @ theta - y) ** 1.5)


@jax.jit
def update(theta, batch, lr):
    x, y = batch
    return theta - lr * jax.grad(loss)(theta, x, y)


def main():
    key = jax.random.PRNGKey(123)
    data = jax.random.normal(key, (48, 4))
    x, y = data[:, :3], data[:, 3] + data[:, 0]
    theta = jnp.zeros(3)
    losses, first_rows = [], []
    for epoch in range(5):
        ekey = jax.random.fold_in(key, epoch)
        shuffled = jax.random.permutation(ekey, jnp.concatenate([x, y[:, None]], axis=1))
        first_rows.append(shuffled[0])
        for b in range(0, 48, 12):
            batch = (shuffled[b:b + 12, :3], shuffled[b:b + 12, 3])
            theta = update(theta, batch, 0.1 / (1 + epoch))
        losses.append(loss(theta, x, y))
    return {"losses": jnp.stack(losses), "theta": theta, "first_rows": jnp.stack(first_rows)}

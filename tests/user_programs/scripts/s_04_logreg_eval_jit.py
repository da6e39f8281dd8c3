"""Logistic regression: a jitted train step and a jitted evaluation (accuracy) per epoch."""
import jax
import jax.numpy as jnp
import numpy as np


def predict(params, x):
    w, b = params
    return jax.nn.sigmoid(x @ w + b)


def bce(params, x, y):
    p = predict(params, x)
    p = jnp.clip(p, 1e-6, 1 - 1e-6)
    return -jnp.mean(y * jnp.log(p) + (1 - y) * jnp.log(1 - p))


@jax.jit
def step(params, x, y):
    grads = jax.grad(bce)(params, x, y)
    return tuple(p - 0.5 * g for p, g in zip(params, grads))


@jax.jit
def evaluate(params, x, y):
    pred = predict(params, x) > 0.5
    return jnp.mean(pred == (y > 0.5)), bce(params, x, y)


def main():
    rng = np.random.RandomState(0)
    x = rng.randn(60, 3).astype(np.float32)
    y = (x[:, 0] - 0.5 * x[:, 2] > 0).astype(np.float32)
    x_train, y_train, x_test, y_test = x[:40], y[:40], x[40:], y[40:]
    params = (jnp.zeros(3), 0.0)
    history = []
    for epoch in range(8):
        params = step(params, x_train, y_train)
        acc, test_loss = evaluate(params, x_test, y_test)
        history.append((acc, test_loss))
    accs = np.array([float(a) for a, _ in history])
    losses = np.array([float(l) for _, l in history])
    return {"accs": accs, "test_losses": losses, "w": params[0], "b": params[1]}

"""Linear regression by gradient descent, written against JAX (runs unchanged under
`python -m secant run`). Usage: linear_regression.py [STEPS] [LEARNING_RATE]"""
import json
import sys

import numpy as np

import jax
import jax.numpy as jnp


def predict(params, x):
    w, b = params
    return x @ w + b


def loss(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


@jax.jit
def update(params, x, y, lr):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    lr = float(sys.argv[2]) if len(sys.argv) > 2 else 0.1
    rng = np.random.RandomState(0)
    x = rng.randn(64, 3).astype(np.float32)
    y = (x @ np.array([1.5, -2.0, 0.5], np.float32) + 0.3
         + 0.01 * rng.randn(64).astype(np.float32))
    params = (jnp.zeros(3), jnp.zeros(()))
    for _ in range(steps):
        params = update(params, x, y, lr)
    w, b = params
    print("RESULT " + json.dumps({"w": np.asarray(w).tolist(), "b": float(b),
                                  "loss": float(loss(params, x, y))}))


if __name__ == "__main__":
    main()

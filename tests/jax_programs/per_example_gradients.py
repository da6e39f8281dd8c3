"""Per-example gradients of a logistic-regression loss with vmap(grad), written against JAX
(runs unchanged under `python -m secant run`)."""
import json

import numpy as np

import jax
import jax.numpy as jnp
from jax import grad, vmap


def example_loss(params, x, y):
    logit = jnp.dot(x, params["w"]) + params["b"]
    p = jax.nn.sigmoid(logit)
    return -(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))


per_example_grads = jax.jit(vmap(grad(example_loss), in_axes=(None, 0, 0)))


def batch_loss(params, xs, ys):
    return jnp.mean(vmap(example_loss, in_axes=(None, 0, 0))(params, xs, ys))


def main():
    rng = np.random.RandomState(1)
    xs = rng.randn(8, 4).astype(np.float32)
    ys = (rng.rand(8) > 0.5).astype(np.float32)
    params = {"w": jnp.array([0.5, -0.25, 0.1, 0.0]), "b": jnp.array(0.2)}
    g = per_example_grads(params, xs, ys)
    mean_of_grads = jax.tree_util.tree_map(lambda a: jnp.mean(a, axis=0), g)
    full = grad(batch_loss)(params, xs, ys)
    print("RESULT " + json.dumps({
        "w": np.asarray(g["w"]).tolist(), "b": np.asarray(g["b"]).tolist(),
        "mean_w": np.asarray(mean_of_grads["w"]).tolist(),
        "full_w": np.asarray(full["w"]).tolist(), "full_b": float(full["b"]),
        "loss": float(batch_loss(params, xs, ys))}))


if __name__ == "__main__":
    main()

"""A small MLP trained with jax.example_libraries.stax and optimizers.adam, written against JAX
(runs unchanged under `python -m secant run`). Prints the initial and final parameters so the
training can be checked independently."""
import json

import numpy as np

import jax
import jax.numpy as jnp
from jax import random
from jax.example_libraries import optimizers, stax
from jax.example_libraries.stax import Dense, Relu

init_fun, apply_fun = stax.serial(Dense(8), Relu, Dense(1))


def loss(params, batch):
    x, y = batch
    return jnp.mean((apply_fun(params, x) - y) ** 2)


def main():
    rng = np.random.RandomState(2)
    x = rng.randn(32, 2).astype(np.float32)
    y = np.sin(x[:, :1]) + 0.5 * x[:, 1:]
    _, params = init_fun(random.PRNGKey(0), (-1, 2))
    initial = [[np.asarray(a).tolist() for a in layer] for layer in params]
    opt_init, opt_update, get_params = optimizers.adam(0.01)
    opt_state = opt_init(params)

    @jax.jit
    def step(i, opt_state):
        g = jax.grad(loss)(get_params(opt_state), (x, y))
        return opt_update(i, g, opt_state)

    for i in range(50):
        opt_state = step(i, opt_state)
    final = get_params(opt_state)
    print("RESULT " + json.dumps({
        "initial": initial,
        "final": [[np.asarray(a).tolist() for a in layer] for layer in final],
        "loss0": float(loss(params, (x, y))), "loss": float(loss(final, (x, y)))}))


if __name__ == "__main__":
    main()

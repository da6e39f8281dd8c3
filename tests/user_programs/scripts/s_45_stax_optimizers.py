"""The JAX examples' classifier style: a network from jax.example_libraries.stax (serial, Dense,
Relu, LogSoftmax), jax.example_libraries.optimizers.momentum (opt_init, opt_update,
get_params), an accuracy function, a jitted update taking the step index."""
import itertools

import jax
import jax.numpy as jnp
import numpy.random as npr
from jax.example_libraries import optimizers, stax
from jax.example_libraries.stax import Dense, LogSoftmax, Relu


def loss(params, batch):
    inputs, targets = batch
    preds = predict(params, inputs)
    return -jnp.mean(jnp.sum(preds * targets, axis=1))


def accuracy(params, batch):
    inputs, targets = batch
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(predict(params, inputs), axis=1)
    return jnp.mean(predicted_class == target_class)


init_random_params, predict = stax.serial(Dense(16), Relu, Dense(3), LogSoftmax)


def main():
    rng = jax.random.PRNGKey(0)
    npr_state = npr.RandomState(0)
    centers = npr_state.randn(3, 4).astype("float32") * 2
    labels = npr_state.randint(0, 3, 60)
    inputs = centers[labels] + npr_state.randn(60, 4).astype("float32")
    targets = jax.nn.one_hot(labels, 3)
    opt_init, opt_update, get_params = optimizers.momentum(0.05, mass=0.9)

    @jax.jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, jax.grad(loss)(params, batch), opt_state)

    _, init_params = init_random_params(rng, (-1, 4))
    opt_state = opt_init(init_params)
    itercount = itertools.count()
    batches = [(inputs[i:i + 20], targets[i:i + 20]) for i in range(0, 60, 20)]
    accs = []
    for epoch in range(4):
        for batch in batches:
            opt_state = update(next(itercount), opt_state, batch)
        params = get_params(opt_state)
        accs.append(accuracy(params, (inputs, targets)))
    return {"accs": jnp.stack(accs), "loss": loss(params, (inputs, targets)),
            "params": params}

"""flax's mutable collections: `apply(variables, x, train=True)` returns (out, updates) with
the new batch statistics; the loss returns them as aux data (has_aux=True) and the step puts
them back into the variables dict; eval mode reads the running averages."""
import functools

import jax
import jax.numpy as jnp


def init(key, n_in, n_hidden):
    k1, k2 = jax.random.split(key)
    return {"params": {"w1": jax.random.normal(k1, (n_in, n_hidden)) * 0.5,
                       "gamma": jnp.ones(n_hidden), "beta": jnp.zeros(n_hidden),
                       "w2": jax.random.normal(k2, (n_hidden, 1)) * 0.5},
            "batch_stats": {"mean": jnp.zeros(n_hidden), "var": jnp.ones(n_hidden)}}


def apply(variables, x, train, momentum=0.9):
    p, stats = variables["params"], variables["batch_stats"]
    h = x @ p["w1"]
    if train:
        mean, var = h.mean(0), h.var(0)
        new_stats = {"mean": momentum * stats["mean"] + (1 - momentum) * mean,
                     "var": momentum * stats["var"] + (1 - momentum) * var}
    else:
        mean, var, new_stats = stats["mean"], stats["var"], stats
    h = (h - mean) / jnp.sqrt(var + 1e-5) * p["gamma"] + p["beta"]
    out = jax.nn.relu(h) @ p["w2"]
    return (out, {"batch_stats": new_stats}) if train else out


def loss_fn(params, batch_stats, x, y):
    out, updates = apply({"params": params, "batch_stats": batch_stats}, x, train=True)
    return jnp.mean((out[:, 0] - y) ** 2), updates


@functools.partial(jax.jit, donate_argnums=0)
def train_step(variables, x, y):
    (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        variables["params"], variables["batch_stats"], x, y)
    params = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, variables["params"], grads)
    return {"params": params, **updates}, loss


def main():
    x = jax.random.normal(jax.random.PRNGKey(7), (32, 3)) * jnp.array([1.0, 3.0, 0.5]) + 1.0
    y = x[:, 0] - 0.3 * x[:, 1]
    variables = init(jax.random.PRNGKey(8), 3, 5)
    losses = []
    for i in range(10):
        batch = slice(8 * (i % 4), 8 * (i % 4) + 8)
        variables, loss = train_step(variables, x[batch], y[batch])
        losses.append(loss)
    pred = apply(variables, x, train=False)
    return {"losses": jnp.stack(losses), "stats": variables["batch_stats"],
            "eval_mse": jnp.mean((pred[:, 0] - y) ** 2)}

"""A deep ensemble: five models initialised from split keys, trained at once by jax.vmap over
the parameter pytree (in_axes=(0, None, None)) inside a jitted step, predictions averaged."""
import jax
import jax.numpy as jnp


def init(key):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (1, 12)) * 0.8, "b1": jnp.zeros(12),
            "w2": jax.random.normal(k2, (12, 1)) * 0.3}


def predict(p, x):
    return (jax.nn.silu(x @ p["w1"] + p["b1"]) @ p["w2"])[:, 0]


def loss(p, x, y):
    return jnp.mean((predict(p, x) - y) ** 2)


@jax.jit
def step(ensemble, x, y):
    losses, grads = jax.vmap(jax.value_and_grad(loss), in_axes=(0, None, None))(ensemble, x, y)
    ensemble = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, ensemble, grads)
    return ensemble, losses


def main():
    keys = jax.random.split(jax.random.PRNGKey(10), 5)
    ensemble = jax.vmap(init)(keys)
    x = jnp.linspace(-2, 2, 20)[:, None]
    y = jnp.sin(2 * x[:, 0])
    history = []
    for _ in range(10):
        ensemble, losses = step(ensemble, x, y)
        history.append(losses)
    x_test = jnp.array([[-1.5], [0.0], [1.7]])
    preds = jax.vmap(predict, in_axes=(0, None))(ensemble, x_test)
    return {"history": jnp.stack(history), "mean": preds.mean(0), "std": preds.std(0)}

"""An ensemble of modules: several members built by jax.vmap of a classmethod constructor over
keys (a module whose leaves have a leading member axis), called with
jax.vmap(lambda m, x: m(x), in_axes=(0, None)), trained together with one grad of the summed
member losses; a member read back by tree_map indexing."""
import dataclasses

import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Regressor:
    w1: jax.Array
    w2: jax.Array

    @classmethod
    def create(cls, key):
        k1, k2 = jax.random.split(key)
        return cls(jax.random.normal(k1, (2, 5)) * 0.5, jax.random.normal(k2, (5,)) * 0.5)

    def __call__(self, x):
        return jnp.tanh(x @ self.w1) @ self.w2


def member_loss(member, x, y):
    return jnp.mean((member(x) - y) ** 2)


def ensemble_loss(ensemble, x, y):
    losses = jax.vmap(member_loss, in_axes=(0, None, None))(ensemble, x, y)
    return jnp.sum(losses), losses


@jax.jit
def step(ensemble, x, y):
    (_, losses), g = jax.value_and_grad(ensemble_loss, has_aux=True)(ensemble, x, y)
    return jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, ensemble, g), losses


def main():
    keys = jax.random.split(jax.random.PRNGKey(5), 4)
    ensemble = jax.vmap(Regressor.create)(keys)
    x = jnp.stack([jnp.linspace(-1, 1, 9), jnp.linspace(1, -0.5, 9) ** 2], axis=1)
    y = x[:, 0] * 2.0 - x[:, 1]
    history = []
    for _ in range(8):
        ensemble, losses = step(ensemble, x, y)
        history.append(losses)
    preds = jax.vmap(lambda m, x: m(x), in_axes=(0, None))(ensemble, x)
    second = jax.tree_util.tree_map(lambda a: a[1], ensemble)
    return {"history": jnp.stack(history), "mean_pred": preds.mean(0),
            "second_w2": second.w2, "second_pred": second(x)}

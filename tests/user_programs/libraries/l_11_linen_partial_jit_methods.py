"""A frozen dataclass model (hashable, so `self` can be static) whose methods are decorated
with functools.partial(jax.jit, static_argnums=0); a jitted train step method calling the
jitted loss method through jax.value_and_grad; the config (hidden size, activation name) lives
on self."""
import dataclasses
import functools

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Regressor:
    hidden: int
    activation: str = "tanh"
    lr: float = 0.1

    def init(self, key, n_in):
        k1, k2 = jax.random.split(key)
        return {"w1": jax.random.normal(k1, (n_in, self.hidden)) * 0.5,
                "b1": jnp.zeros(self.hidden),
                "w2": jax.random.normal(k2, (self.hidden,)) * 0.5}

    def act(self, h):
        return {"tanh": jnp.tanh, "relu": jax.nn.relu, "softplus": jax.nn.softplus}[
            self.activation](h)

    @functools.partial(jax.jit, static_argnums=0)
    def predict(self, params, x):
        return self.act(x @ params["w1"] + params["b1"]) @ params["w2"]

    def loss(self, params, x, y):
        return jnp.mean((self.predict(params, x) - y) ** 2)

    @functools.partial(jax.jit, static_argnums=0)
    def train_step(self, params, x, y):
        value, grads = jax.value_and_grad(self.loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - self.lr * g, params, grads), value


def main():
    x = jnp.linspace(-2.0, 2.0, 20).reshape(10, 2)
    y = jnp.sin(x[:, 0]) + 0.1 * x[:, 1]
    out = {}
    for model in (Regressor(5), Regressor(5, "softplus", 0.05), Regressor(3, "relu")):
        params = model.init(jax.random.PRNGKey(4), 2)
        losses = []
        for _ in range(8):
            params, value = model.train_step(params, x, y)
            losses.append(value)
        out[f"{model.activation}{model.hidden}"] = (jnp.stack(losses), params["w2"])
    return out

"""model.apply(params, x, method=...) as flax allows: the method passed as a bound method or
by name (getattr), an autoencoder whose `encode` and `decode` are applied apart; a jitted
apply with the method name static (static_argnames)."""
import functools

import jax
import jax.numpy as jnp


class AutoEncoder:
    def __init__(self, latent):
        self.latent = latent

    def init(self, key, x):
        k1, k2 = jax.random.split(key)
        n = x.shape[-1]
        return {"enc": {"w": 0.5 * jax.random.normal(k1, (n, self.latent))},
                "dec": {"w": 0.5 * jax.random.normal(k2, (self.latent, n)),
                        "b": jnp.zeros(n)}}

    def encode(self, params, x):
        return jnp.tanh(x @ params["enc"]["w"])

    def decode(self, params, z):
        return z @ params["dec"]["w"] + params["dec"]["b"]

    def __call__(self, params, x):
        return self.decode(params, self.encode(params, x))

    def apply(self, params, *args, method=None):
        if method is None:
            method = self.__call__
        elif isinstance(method, str):
            method = getattr(self, method)
        return method(params, *args)


model = AutoEncoder(2)


@functools.partial(jax.jit, static_argnames="method")
def apply_jit(params, x, method=None):
    return model.apply(params, x, method=method)


def loss(params, x):
    return jnp.mean((model.apply(params, x) - x) ** 2)


@jax.jit
def step(params, x):
    g = jax.grad(loss)(params, x)
    return jax.tree_util.tree_map(lambda p, d: p - 0.3 * d, params, g)


def main():
    x = jax.random.normal(jax.random.PRNGKey(2), (12, 4)) @ jnp.array(
        [[1.0, 0.5, 0.0, 0.2], [0.0, 1.0, 0.3, 0.0], [0.1, 0.0, 1.0, 0.4], [0.0, 0.2, 0.0, 1.0]])
    params = model.init(jax.random.PRNGKey(3), x)
    losses = []
    for _ in range(10):
        params = step(params, x)
        losses.append(loss(params, x))
    z = model.apply(params, x, method=model.encode)
    recon = model.apply(params, z, method="decode")
    return {"losses": jnp.stack(losses), "z": z, "recon_err": jnp.mean((recon - x) ** 2),
            "z_jit": apply_jit(params, x, method="encode"),
            "full_jit": apply_jit(params, x)}

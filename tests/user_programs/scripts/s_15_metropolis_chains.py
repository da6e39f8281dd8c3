"""Random-walk Metropolis on a banana-shaped density: lax.scan over steps with a key split per
step, jax.vmap over four chains."""
import jax
import jax.numpy as jnp
from jax import lax


def log_prob(z):
    x, y = z[0], z[1]
    return -0.5 * x ** 2 / 4.0 - 0.5 * (y - 0.5 * x ** 2 + 1.0) ** 2


def rwm_chain(key, init, num_steps=200, scale=0.8):
    def step(carry, key):
        z, lp = carry
        k_prop, k_acc = jax.random.split(key)
        prop = z + scale * jax.random.normal(k_prop, z.shape)
        lp_prop = log_prob(prop)
        accept = jnp.log(jax.random.uniform(k_acc)) < lp_prop - lp
        z = jnp.where(accept, prop, z)
        lp = jnp.where(accept, lp_prop, lp)
        return (z, lp), (z, accept)
    keys = jax.random.split(key, num_steps)
    _, (samples, accepts) = lax.scan(step, (init, log_prob(init)), keys)
    return samples, accepts


def main():
    key = jax.random.PRNGKey(2024)
    chain_keys = jax.random.split(key, 4)
    inits = jnp.array([[0.0, 0.0], [1.0, -1.0], [-1.0, 1.0], [2.0, 0.5]])
    samples, accepts = jax.jit(jax.vmap(rwm_chain))(chain_keys, inits)
    return {"samples": samples[:, ::20], "accept_rate": jnp.mean(accepts, axis=1),
            "n_accepted": jnp.sum(accepts), "mean": jnp.mean(samples[:, 50:], axis=(0, 1)),
            "chain_keys": jax.random.key_data(chain_keys)}

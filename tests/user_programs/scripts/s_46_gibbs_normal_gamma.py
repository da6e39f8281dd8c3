"""A Gibbs sampler for a normal model with unknown mean and precision: mean | tau from
jax.random.normal, tau | mean from jax.random.gamma, lax.scan over sweeps, keys split per
sweep; posterior summaries."""
import jax
import jax.numpy as jnp
from jax import lax

Y = jnp.array([2.1, 1.7, 2.9, 2.4, 1.2, 2.2, 3.1, 2.0, 1.8, 2.6])
N = Y.shape[0]


def sweep(state, key):
    mu, tau = state
    k_mu, k_tau = jax.random.split(key)
    prec = 0.01 + N * tau
    mean = (N * tau * jnp.mean(Y)) / prec
    mu = mean + jax.random.normal(k_mu) / jnp.sqrt(prec)
    shape = 1.0 + N / 2
    rate = 1.0 + 0.5 * jnp.sum((Y - mu) ** 2)
    tau = jax.random.gamma(k_tau, shape) / rate
    return (mu, tau), jnp.stack([mu, tau])


@jax.jit
def run(key):
    keys = jax.random.split(key, 300)
    _, draws = lax.scan(sweep, (0.0, 1.0), keys)
    return draws


def main():
    draws = run(jax.random.PRNGKey(5))
    return {"draws": draws[::30], "post_mean": jnp.mean(draws[50:], axis=0),
            "post_sd": jnp.std(draws[50:], axis=0)}

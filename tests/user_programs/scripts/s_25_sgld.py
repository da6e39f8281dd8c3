"""Stochastic-gradient Langevin dynamics on a Gaussian mean: a jitted step taking a key, keys
split in a Python loop, samples collected and summarised with NumPy."""
import jax
import jax.numpy as jnp
import numpy as np

DATA = jnp.array([1.2, 0.8, 1.9, 1.4, 0.3, 1.1, 1.6, 0.9])


def log_post(theta, batch):
    return -0.5 * theta ** 2 / 10.0 - 0.5 * jnp.sum((batch - theta) ** 2) * (8 / batch.shape[0])


@jax.jit
def sgld_step(theta, key, eps):
    k_batch, k_noise = jax.random.split(key)
    idx = jax.random.randint(k_batch, (4,), 0, 8)
    g = jax.grad(log_post)(theta, DATA[idx])
    return theta + 0.5 * eps * g + jnp.sqrt(eps) * jax.random.normal(k_noise), idx


def main():
    key = jax.random.PRNGKey(99)
    theta = jnp.array(0.0)
    samples, idxs = [], []
    for t in range(60):
        key, sub = jax.random.split(key)
        theta, idx = sgld_step(theta, sub, 0.02)
        samples.append(theta)
        idxs.append(idx)
    samples = np.asarray(jnp.stack(samples))
    return {"samples": samples, "idx": jnp.stack(idxs), "mean": samples[20:].mean(),
            "key": jax.random.key_data(key)}

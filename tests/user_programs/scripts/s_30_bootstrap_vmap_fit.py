"""Bootstrap: resampled index sets from jax.random.choice with replacement, a closed-form ridge
fit jax.vmap-ped over the resamples, and NumPy percentiles of the coefficients."""
import jax
import jax.numpy as jnp
import numpy as np


def ridge(x, y, lam=0.1):
    a = x.T @ x + lam * jnp.eye(x.shape[1])
    return jnp.linalg.solve(a, x.T @ y)


def fit_resample(key, x, y):
    idx = jax.random.choice(key, x.shape[0], (x.shape[0],), replace=True)
    return ridge(x[idx], y[idx]), idx


def main():
    key = jax.random.PRNGKey(2)
    kx, kn, kb = jax.random.split(key, 3)
    x = jnp.concatenate([jnp.ones((25, 1)), jax.random.normal(kx, (25, 2))], axis=1)
    y = x @ jnp.array([0.5, 2.0, -1.0]) + 0.3 * jax.random.normal(kn, (25,))
    keys = jax.random.split(kb, 16)
    coefs, idx = jax.jit(jax.vmap(fit_resample, in_axes=(0, None, None)))(keys, x, y)
    coefs_np = np.asarray(coefs)
    return {"idx": idx[:3], "coefs": coefs, "p05": np.percentile(coefs_np, 5, axis=0),
            "full": ridge(x, y)}

"""Hamiltonian Monte Carlo for Bayesian logistic regression: leapfrog in lax.fori_loop with
jax.grad of the log density, lax.scan over iterations, jax.vmap over chains."""
import jax
import jax.numpy as jnp
from jax import lax

X = jnp.array([[1.0, 0.5], [1.0, -1.2], [1.0, 2.0], [1.0, 0.1], [1.0, -0.4], [1.0, 1.5]])
Y = jnp.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])


def log_density(w):
    logits = X @ w
    return jnp.sum(Y * logits - jnp.logaddexp(0.0, logits)) - 0.5 * jnp.sum(w ** 2)


def hmc_step(state, key, step_size=0.15, n_leap=8):
    w, lp = state
    k_mom, k_acc = jax.random.split(key)
    p0 = jax.random.normal(k_mom, w.shape)
    grad_ld = jax.grad(log_density)

    def leap(i, qp):
        q, p = qp
        p = p + 0.5 * step_size * grad_ld(q)
        q = q + step_size * p
        p = p + 0.5 * step_size * grad_ld(q)
        return q, p
    q, p = lax.fori_loop(0, n_leap, leap, (w, p0))
    lp_new = log_density(q)
    log_ratio = lp_new - 0.5 * jnp.sum(p ** 2) - (lp - 0.5 * jnp.sum(p0 ** 2))
    accept = jnp.log(jax.random.uniform(k_acc)) < log_ratio
    w = jnp.where(accept, q, w)
    lp = jnp.where(accept, lp_new, lp)
    return (w, lp), (w, accept)


def run_chain(key, w0, num_samples=60):
    keys = jax.random.split(key, num_samples)
    _, (ws, acc) = lax.scan(hmc_step, (w0, log_density(w0)), keys)
    return ws, acc


def main():
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    w0 = jnp.zeros((3, 2))
    ws, acc = jax.jit(jax.vmap(run_chain))(keys, w0)
    ws.block_until_ready()
    return {"ws": ws[:, ::6], "accept": acc, "posterior_mean": jnp.mean(ws[:, 10:], axis=(0, 1))}

"""Numpyro/distrax-like distributions: a Normal class (a pytree of loc and scale) with
log_prob, sample (reparameterised) and entropy; a mean-field variational posterior for a
Bayesian linear regression, the ELBO a vmap over samples of log joint minus log q; grad of the
ELBO drives an Adam written by hand."""
import dataclasses

import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Normal:
    loc: jax.Array
    scale: jax.Array

    def log_prob(self, x):
        z = (x - self.loc) / self.scale
        return -0.5 * z ** 2 - jnp.log(self.scale) - 0.5 * jnp.log(2 * jnp.pi)

    def sample(self, key, shape=()):
        eps = jax.random.normal(key, shape + jnp.shape(self.loc))
        return self.loc + self.scale * eps

    def entropy(self):
        return 0.5 + 0.5 * jnp.log(2 * jnp.pi) + jnp.log(self.scale)


def log_joint(w, x, y):
    prior = Normal(jnp.zeros(2), jnp.ones(2)).log_prob(w).sum()
    lik = Normal(x @ w, 0.5).log_prob(y).sum()
    return prior + lik


def elbo(var_params, key, x, y, n_samples=8):
    q = Normal(var_params["mu"], jax.nn.softplus(var_params["rho"]))
    keys = jax.random.split(key, n_samples)
    samples = jax.vmap(q.sample)(keys)
    lj = jax.vmap(log_joint, in_axes=(0, None, None))(samples, x, y)
    return jnp.mean(lj) + q.entropy().sum()


@jax.jit
def step(var_params, m, v, t, key, x, y):
    value, g = jax.value_and_grad(lambda p: -elbo(p, key, x, y))(var_params)
    m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
    v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
    var_params = jax.tree_util.tree_map(
        lambda p, a, b: p - 0.05 * (a / (1 - 0.9 ** t)) / (jnp.sqrt(b / (1 - 0.999 ** t)) + 1e-8),
        var_params, m, v)
    return var_params, m, v, value


def main():
    x = jnp.stack([jnp.ones(12), jnp.linspace(-1, 1, 12)], axis=1)
    y = x @ jnp.array([0.5, -1.2]) + 0.1 * jnp.sin(jnp.arange(12.0))
    params = {"mu": jnp.zeros(2), "rho": jnp.full(2, -1.0)}
    m = jax.tree_util.tree_map(jnp.zeros_like, params)
    v = jax.tree_util.tree_map(jnp.zeros_like, params)
    key = jax.random.PRNGKey(30)
    losses = []
    for t in range(1, 16):
        key, sub = jax.random.split(key)
        params, m, v, value = step(params, m, v, t, sub, x, y)
        losses.append(value)
    return {"neg_elbo": jnp.stack(losses), "mu": params["mu"],
            "sd": jax.nn.softplus(params["rho"])}

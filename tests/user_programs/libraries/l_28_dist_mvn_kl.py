"""A MultivariateNormalTri-like class (loc and a lower-triangular scale with a positive
diagonal via softplus), log_prob through jax.scipy.linalg.solve_triangular, the analytic KL
divergence between two of them, fitted by grad of KL(q || p) to a fixed target; sampling by
loc + L @ eps with vmap."""
import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular


class MVNTri:
    def __init__(self, loc, raw_tril):
        d = loc.shape[-1]
        tril = jnp.tril(raw_tril, -1)
        self.loc = loc
        self.scale_tril = tril + jnp.diag(jax.nn.softplus(jnp.diagonal(raw_tril)) + 1e-3)
        self.d = d

    def log_prob(self, x):
        z = solve_triangular(self.scale_tril, x - self.loc, lower=True)
        half_logdet = jnp.sum(jnp.log(jnp.diagonal(self.scale_tril)))
        return -0.5 * jnp.sum(z ** 2) - half_logdet - 0.5 * self.d * jnp.log(2 * jnp.pi)

    def sample(self, key, n):
        eps = jax.random.normal(key, (n, self.d))
        return jax.vmap(lambda e: self.loc + self.scale_tril @ e)(eps)

    def covariance(self):
        return self.scale_tril @ self.scale_tril.T


def kl(q, p):
    lp_inv_lq = solve_triangular(p.scale_tril, q.scale_tril, lower=True)
    diff = solve_triangular(p.scale_tril, p.loc - q.loc, lower=True)
    logdet = jnp.sum(jnp.log(jnp.diagonal(p.scale_tril))) - jnp.sum(
        jnp.log(jnp.diagonal(q.scale_tril)))
    return 0.5 * (jnp.sum(lp_inv_lq ** 2) + jnp.sum(diff ** 2) - q.d) + logdet


TARGET = MVNTri(jnp.array([1.0, -1.0, 0.5]),
                jnp.array([[0.5, 0.0, 0.0], [0.3, 1.0, 0.0], [-0.2, 0.4, 0.2]]))


def objective(params):
    return kl(MVNTri(params["loc"], params["raw"]), TARGET)


@jax.jit
def step(params):
    value, g = jax.value_and_grad(objective)(params)
    return jax.tree_util.tree_map(lambda a, b: a - 0.2 * b, params, g), value


def main():
    params = {"loc": jnp.zeros(3), "raw": jnp.eye(3)}
    losses = []
    for _ in range(20):
        params, value = step(params)
        losses.append(value)
    q = MVNTri(params["loc"], params["raw"])
    xs = q.sample(jax.random.PRNGKey(34), 4)
    return {"kl": jnp.stack(losses), "loc": params["loc"], "cov": q.covariance(),
            "log_probs": jax.vmap(q.log_prob)(xs), "target_lp": jax.vmap(TARGET.log_prob)(xs)}

"""Maximum likelihood of a Weibull model by jax.scipy.optimize.minimize (BFGS) on
log-parameters, then the observed information from jax.hessian for standard errors."""
import jax
import jax.numpy as jnp
from jax.scipy.optimize import minimize

DATA = jnp.array([0.8, 1.3, 2.1, 0.4, 1.7, 1.1, 0.9, 2.6, 1.5, 0.6, 1.2, 1.9])


def neg_log_lik(log_params):
    k, lam = jnp.exp(log_params)
    z = DATA / lam
    return -jnp.sum(jnp.log(k / lam) + (k - 1) * jnp.log(z) - z ** k)


def main():
    res = minimize(neg_log_lik, jnp.array([0.0, 0.0]), method="BFGS")
    info = jax.hessian(neg_log_lik)(res.x)
    se = jnp.sqrt(jnp.diag(jnp.linalg.inv(info)))
    return {"x": res.x, "fun": res.fun, "success": res.success, "se": se}

"""Newton's method for L2-regularised logistic regression with jax.hessian, jitted, stopped when
the step's norm falls below a tolerance (a Python float test)."""
import jax
import jax.numpy as jnp
import numpy as np


def neg_log_lik(w, x, y):
    z = x @ w
    return jnp.sum(jnp.logaddexp(0.0, z) - y * z) + 0.5 * jnp.dot(w, w)


@jax.jit
def newton_step(w, x, y):
    g = jax.grad(neg_log_lik)(w, x, y)
    h = jax.hessian(neg_log_lik)(w, x, y)
    delta = jnp.linalg.solve(h, g)
    return w - delta, jnp.linalg.norm(delta)


def main():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 3)).astype(np.float32)
    y = (rng.uniform(size=50) < 1 / (1 + np.exp(-(x @ np.array([1.0, -2.0, 0.5]))))).astype(
        np.float32)
    w = jnp.zeros(3)
    norms = []
    for it in range(20):
        w, n = newton_step(w, x, y)
        norms.append(float(n))
        if n < 1e-4:
            break
    return {"w": w, "norms": norms[:4], "iterations": it,
            "objective": neg_log_lik(w, x, y)}

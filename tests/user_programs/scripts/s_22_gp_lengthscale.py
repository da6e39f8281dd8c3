"""Gaussian-process regression: the negative log marginal likelihood through a Cholesky
factorisation, its gradient in the log hyperparameters, gradient descent, then a posterior
mean at test points."""
import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve


def kernel(a, b, log_ls, log_amp):
    d2 = (a[:, None] - b[None, :]) ** 2
    return jnp.exp(2 * log_amp) * jnp.exp(-0.5 * d2 / jnp.exp(2 * log_ls))


def nlml(hyp, x, y):
    k = kernel(x, x, hyp["log_ls"], hyp["log_amp"]) + 0.01 * jnp.eye(x.shape[0])
    chol = jnp.linalg.cholesky(k)
    alpha = cho_solve((chol, True), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(chol)))


def main():
    x = jnp.linspace(0.0, 5.0, 12)
    y = jnp.sin(x) + 0.1 * jnp.cos(7 * x)
    hyp = {"log_ls": jnp.array(0.0), "log_amp": jnp.array(0.0)}
    vg = jax.jit(jax.value_and_grad(nlml))
    history = []
    for _ in range(15):
        v, g = vg(hyp, x, y)
        history.append(v)
        hyp = jax.tree_util.tree_map(lambda h, g: h - 0.05 * g, hyp, g)
    x_test = jnp.array([0.5, 2.2, 4.1])
    k = kernel(x, x, hyp["log_ls"], hyp["log_amp"]) + 0.01 * jnp.eye(12)
    mean = kernel(x_test, x, hyp["log_ls"], hyp["log_amp"]) @ jnp.linalg.solve(k, y)
    return {"nlml": jnp.stack(history), "hyp": hyp, "mean": mean}

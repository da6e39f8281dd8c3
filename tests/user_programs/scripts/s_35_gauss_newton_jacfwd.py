"""Levenberg-Marquardt curve fitting: residuals' Jacobian by jax.jacfwd, the damped normal
equations solved, damping adapted in Python by whether the cost fell."""
import jax
import jax.numpy as jnp

T = jnp.linspace(0.0, 3.0, 20)
DATA = 2.5 * jnp.exp(-1.3 * T) + 0.4 * jnp.sin(2.0 * T)


def residuals(theta):
    a, k, b = theta
    return a * jnp.exp(-k * T) + b * jnp.sin(2.0 * T) - DATA


jac = jax.jit(jax.jacfwd(residuals))
cost = jax.jit(lambda th: 0.5 * jnp.sum(residuals(th) ** 2))


def main():
    theta = jnp.array([1.0, 0.5, 0.0])
    lam = 1e-2
    costs, lams = [float(cost(theta))], []
    for _ in range(12):
        j = jac(theta)
        r = residuals(theta)
        a = j.T @ j + lam * jnp.eye(3)
        trial = theta - jnp.linalg.solve(a, j.T @ r)
        if cost(trial) < costs[-1]:
            theta, lam = trial, lam * 0.3
        else:
            lam = lam * 10.0
        costs.append(float(cost(theta)))
        lams.append(lam)
    return {"theta": theta, "costs": costs, "lams": lams}

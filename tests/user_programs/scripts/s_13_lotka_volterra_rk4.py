"""Predator-prey by RK4: a jitted step called from a Python for loop, states pulled to the host
with jax.device_get every few steps."""
import jax
import jax.numpy as jnp
import numpy as np


def lotka_volterra(z, theta):
    x, y = z
    a, b, c, d = theta
    return jnp.array([a * x - b * x * y, d * x * y - c * y])


@jax.jit
def rk4_step(z, theta, dt):
    k1 = lotka_volterra(z, theta)
    k2 = lotka_volterra(z + 0.5 * dt * k1, theta)
    k3 = lotka_volterra(z + 0.5 * dt * k2, theta)
    k4 = lotka_volterra(z + dt * k3, theta)
    return z + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def main():
    theta = jnp.array([1.1, 0.4, 0.4, 0.1])
    z = jnp.array([10.0, 5.0])
    saved = []
    for i in range(80):
        z = rk4_step(z, theta, 0.05)
        if i % 10 == 9:
            saved.append(jax.device_get(z))
    saved = np.stack(saved)
    return {"saved": saved, "final": z, "host_type": type(saved).__name__}

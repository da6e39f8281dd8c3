"""A script that turns on 64-bit floats (jax.config.update("jax_enable_x64", True)) for a
sensitive least-squares solve and a long integration, and turns it off again at the end."""
import jax
import jax.numpy as jnp
from jax import lax


def vander_fit(x, y, degree):
    v = jnp.vander(x, degree + 1)
    coef, *_ = jnp.linalg.lstsq(v, y)
    return coef


def kepler_energy_drift(steps):
    def body(i, s):
        q, p = s
        p = p - 0.5 * 1e-3 * q / jnp.linalg.norm(q) ** 3
        q = q + 1e-3 * p
        p = p - 0.5 * 1e-3 * q / jnp.linalg.norm(q) ** 3
        return q, p
    q0, p0 = jnp.array([1.0, 0.0]), jnp.array([0.0, 1.1])
    q, p = lax.fori_loop(0, steps, body, (q0, p0))
    e = lambda q, p: 0.5 * p @ p - 1.0 / jnp.linalg.norm(q)  # noqa: E731
    return e(q, p) - e(q0, p0)


def main():
    jax.config.update("jax_enable_x64", True)
    try:
        x = jnp.linspace(0.0, 1.0, 30)
        y = 1.0 + 2.0 * x - 3.0 * x ** 2 + 0.5 * x ** 5
        coef = vander_fit(x, y, 5)
        drift = jax.jit(kepler_energy_drift, static_argnums=0)(2000)
        out = {"coef": coef, "drift": drift, "dtype": str(x.dtype)}
    finally:
        jax.config.update("jax_enable_x64", False)
    out["after"] = str(jnp.ones(2).dtype)
    return out

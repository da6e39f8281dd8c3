"""1-D heat equation by explicit finite differences in lax.fori_loop; the diffusion coefficient
recovered from a final-state observation by gradient descent on the misfit."""
import jax
import jax.numpy as jnp
from jax import lax

NX = 32
DX = 1.0 / (NX - 1)
DT = 1e-4


def solve(kappa, u0, steps=200):
    def body(i, u):
        lap = jnp.zeros_like(u).at[1:-1].set((u[2:] - 2 * u[1:-1] + u[:-2]) / DX ** 2)
        return u + DT * kappa * lap
    return lax.fori_loop(0, steps, body, u0)


def misfit(log_kappa, u0, observed):
    return jnp.mean((solve(jnp.exp(log_kappa), u0) - observed) ** 2)


def main():
    xgrid = jnp.linspace(0.0, 1.0, NX)
    u0 = jnp.sin(jnp.pi * xgrid) + 0.5 * jnp.sin(3 * jnp.pi * xgrid)
    observed = jax.jit(solve)(1.3, u0)
    vg = jax.jit(jax.value_and_grad(misfit))
    log_kappa = jnp.log(0.5)
    history = []
    for _ in range(10):
        m, g = vg(log_kappa, u0, observed)
        history.append((m, log_kappa))
        log_kappa = log_kappa - 2000.0 * g
    return {"misfit": jnp.array([h[0] for h in history]),
            "log_kappa": jnp.array([h[1] for h in history]), "final": observed[::4]}

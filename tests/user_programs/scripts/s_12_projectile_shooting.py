"""Shooting: a projectile with drag integrated by lax.scan; the gradient of the final-state miss
with respect to the launch velocity drives a few Newton-free gradient steps."""
import jax
import jax.numpy as jnp
from jax import lax

G = jnp.array([0.0, -9.81])


def simulate(v0, drag=0.1, dt=0.02, steps=60):
    def step(carry, _):
        pos, vel = carry
        acc = G - drag * jnp.linalg.norm(vel) * vel
        vel = vel + dt * acc
        pos = pos + dt * vel
        return (pos, vel), pos
    (pos, vel), path = lax.scan(step, (jnp.zeros(2), v0), None, length=steps)
    return pos, path


def miss(v0, target):
    pos, _ = simulate(v0)
    return jnp.sum((pos - target) ** 2)


def main():
    target = jnp.array([4.0, 0.5])
    v0 = jnp.array([3.0, 5.0])
    grad_miss = jax.jit(jax.value_and_grad(miss))
    misses = []
    for _ in range(15):
        m, g = grad_miss(v0, target)
        misses.append(m)
        v0 = v0 - 0.05 * g
    _, path = jax.jit(simulate)(v0)
    return {"misses": jnp.stack(misses), "v0": v0, "path": path[::6]}

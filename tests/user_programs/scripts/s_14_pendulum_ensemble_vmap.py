"""An ensemble of damped pendulums: simulate one with lax.scan, jax.vmap over initial angles,
and the gradient of the ensemble's mean final energy with respect to the damping."""
import jax
import jax.numpy as jnp
from jax import lax


def simulate(theta0, damping, dt=0.02, steps=150):
    def step(state, _):
        th, om = state
        om = om + dt * (-9.81 * jnp.sin(th) - damping * om)
        th = th + dt * om
        return (th, om), th
    (th, om), path = lax.scan(step, (theta0, 0.0), None, length=steps)
    return th, om, path


def mean_final_energy(damping, thetas):
    th, om, _ = jax.vmap(simulate, in_axes=(0, None))(thetas, damping)
    return jnp.mean(0.5 * om ** 2 + 9.81 * (1 - jnp.cos(th)))


def main():
    thetas = jnp.linspace(0.1, 2.5, 6)
    th, om, paths = jax.jit(jax.vmap(simulate, in_axes=(0, None)))(thetas, 0.3)
    e, de = jax.jit(jax.value_and_grad(mean_final_energy))(0.3, thetas)
    return {"final": (th, om), "paths": paths[:, ::25], "energy": e, "d_energy": de}

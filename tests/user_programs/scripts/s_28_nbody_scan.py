"""Three gravitating bodies: pairwise forces by broadcasting, velocity Verlet in lax.scan, the
trajectory subsampled, and jax.vmap over two perturbed starts."""
import jax
import jax.numpy as jnp
from jax import lax

MASSES = jnp.array([1.0, 0.5, 0.3])


def accelerations(pos):
    diff = pos[None, :, :] - pos[:, None, :]
    dist3 = (jnp.sum(diff ** 2, axis=-1) + 0.05) ** 1.5
    return jnp.sum(MASSES[None, :, None] * diff / dist3[:, :, None], axis=1)


def verlet(state, _, dt=0.01):
    pos, vel, acc = state
    pos = pos + dt * vel + 0.5 * dt ** 2 * acc
    new_acc = accelerations(pos)
    vel = vel + 0.5 * dt * (acc + new_acc)
    return (pos, vel, new_acc), pos


def simulate(pos0, vel0):
    (pos, vel, _), traj = lax.scan(verlet, (pos0, vel0, accelerations(pos0)), None, length=120)
    momentum = jnp.sum(MASSES[:, None] * vel, axis=0)
    return traj[::20], momentum


def main():
    pos0 = jnp.array([[0.0, 0.0], [1.0, 0.0], [-0.5, 0.8]])
    vel0 = jnp.array([[0.0, -0.1], [0.0, 0.8], [-0.5, -0.3]])
    starts = jnp.stack([pos0, pos0 + 0.05])
    traj, momentum = jax.jit(jax.vmap(simulate, in_axes=(0, None)))(starts, vel0)
    return {"traj": traj, "momentum": momentum}

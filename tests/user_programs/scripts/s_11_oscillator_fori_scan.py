"""Leapfrog integration of an anharmonic oscillator: the final state by lax.fori_loop and the
trajectory by lax.scan; energy drift checked."""
import jax
import jax.numpy as jnp
from jax import lax

DT = 0.05


def force(q):
    return -q - 0.1 * q ** 3


def leapfrog(state, _=None):
    q, p = state
    p = p + 0.5 * DT * force(q)
    q = q + DT * p
    p = p + 0.5 * DT * force(q)
    return (q, p)


def energy(q, p):
    return 0.5 * p ** 2 + 0.5 * q ** 2 + 0.025 * q ** 4


@jax.jit
def final_state(q0, p0):
    return lax.fori_loop(0, 100, lambda i, s: leapfrog(s), (q0, p0))


@jax.jit
def trajectory(q0, p0):
    def step(state, _):
        state = leapfrog(state)
        return state, jnp.stack(state)
    _, traj = lax.scan(step, (q0, p0), None, length=100)
    return traj


def main():
    q0, p0 = jnp.array([1.0, 0.5]), jnp.array([0.0, 1.0])
    qf, pf = final_state(q0, p0)
    traj = trajectory(q0, p0)
    drift = energy(traj[:, 0], traj[:, 1]) - energy(q0, p0)
    return {"final": (qf, pf), "traj": traj[::10], "max_drift": jnp.max(jnp.abs(drift))}

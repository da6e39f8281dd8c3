"""A stiff ODE by implicit Euler: each step solves its nonlinear equation by Newton iterations in
lax.while_loop (until the update is small), the steps in lax.scan."""
import jax
import jax.numpy as jnp
from jax import lax


def f(y):
    return jnp.array([-50.0 * (y[0] - jnp.cos(y[1])), 1.0])


def implicit_step(y, h):
    def residual(z):
        return z - y - h * f(z)
    jac = jax.jacfwd(residual)

    def cond(state):
        z, delta, it = state
        return (delta > 1e-6) & (it < 20)

    def body(state):
        z, _, it = state
        dz = jnp.linalg.solve(jac(z), residual(z))
        return z - dz, jnp.max(jnp.abs(dz)), it + 1
    z, _, iters = lax.while_loop(cond, body, (y, jnp.array(1.0), 0))
    return z, iters


@jax.jit
def integrate(y0, h):
    def step(y, _):
        y, iters = implicit_step(y, h)
        return y, (y, iters)
    _, (ys, iters) = lax.scan(step, y0, None, length=30)
    return ys, iters


def main():
    ys, iters = integrate(jnp.array([0.0, 0.0]), 0.05)
    return {"ys": ys[::3], "iters": iters}

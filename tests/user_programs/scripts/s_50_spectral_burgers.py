"""Viscous Burgers' equation by a pseudo-spectral method: derivatives with jnp.fft.rfft/irfft,
RK2 steps in lax.fori_loop, the energy spectrum of the final state."""
import jax
import jax.numpy as jnp
from jax import lax

N = 32
X = jnp.linspace(0.0, 2 * jnp.pi, N, endpoint=False)
K = jnp.fft.rfftfreq(N, d=1.0 / N)


def rhs(u, nu):
    u_hat = jnp.fft.rfft(u)
    ux = jnp.fft.irfft(1j * K * u_hat, n=N)
    uxx = jnp.fft.irfft(-(K ** 2) * u_hat, n=N)
    return -u * ux + nu * uxx


@jax.jit
def solve(u0, nu, dt):
    def body(i, u):
        k1 = rhs(u, nu)
        return u + 0.5 * dt * (k1 + rhs(u + dt * k1, nu))
    return lax.fori_loop(0, 100, body, u0)


def main():
    u0 = jnp.sin(X) + 0.5 * jnp.cos(2 * X)
    u = solve(u0, 0.1, 0.005)
    spectrum = jnp.abs(jnp.fft.rfft(u)) ** 2 / N
    return {"u": u[::4], "spectrum": spectrum[:8], "mean": jnp.mean(u)}

"""secant.experimental, as jax.experimental: ode (odeint)."""
from secant.experimental import ode  # noqa: F401

"""jax.scipy.integrate: trapezoid (secant.numpy's, as JAX's)."""
from secant.numpy import trapezoid  # noqa: F401

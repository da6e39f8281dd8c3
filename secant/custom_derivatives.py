"""secant.custom_derivatives, as jax.custom_derivatives: the custom rule decorators."""
from secant.custom import custom_jvp, custom_vjp  # noqa: F401
from secant.custom_gradient import custom_gradient  # noqa: F401

__all__ = ["custom_jvp", "custom_vjp", "custom_gradient"]

"""secant.scipy: jax.scipy's differentiable subset, written with secant.numpy's ops
(`special`, `stats`; `linalg` lives beside them)."""
from secant.scipy import special, stats  # noqa: F401

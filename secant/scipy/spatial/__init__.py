"""secant.scipy.spatial, as jax.scipy.spatial: its transform module (Rotation, Slerp)."""
from secant.scipy.spatial import transform  # noqa: F401

"""secant.scipy.cluster: jax.scipy.cluster (vq)."""
from secant.scipy.cluster import vq  # noqa: F401

"""secant.scipy: SciPy's functions as JAX's jax.scipy, written with secant.numpy's ops."""
from secant.scipy import (cluster, fft, integrate, interpolate, linalg, ndimage,  # noqa: F401
                          optimize, signal, sparse, spatial, special, stats)

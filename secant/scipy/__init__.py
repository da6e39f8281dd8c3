"""secant.scipy: SciPy's functions as JAX's jax.scipy, written with secant.numpy's ops."""
from secant.scipy import (cluster, fft, integrate, linalg, ndimage, optimize,  # noqa: F401
                          signal, sparse, special, stats)

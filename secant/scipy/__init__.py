"""secant.scipy: SciPy's functions as JAX's jax.scipy, written with secant.numpy's ops."""
from secant.scipy import (fft, integrate, linalg, ndimage, optimize, signal,  # noqa: F401
                          sparse, special, stats)

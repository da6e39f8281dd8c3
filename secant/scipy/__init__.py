"""secant.scipy: SciPy's functions as JAX's jax.scipy, written with secant.numpy's ops."""
from secant.scipy import (fft, integrate, linalg, optimize, signal, sparse, special,  # noqa: F401
                          stats)

"""secant.numpy.linalg: NumPy's linear algebra (the spectral family: secant/numpy/linalg_spectral.py)."""
from secant.numpy.linalg_spectral import *  # noqa: F401,F403

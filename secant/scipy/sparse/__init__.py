"""secant.scipy.sparse: jax.scipy.sparse's iterative solvers (secant.scipy.sparse.linalg)."""
from secant.scipy.sparse import linalg  # noqa: F401

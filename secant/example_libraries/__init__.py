"""secant.example_libraries: secant's own `stax` (a small neural-network library of
(init_fun, apply_fun) pairs) and `optimizers` (init/update/get_params triples), with the
interfaces of jax.example_libraries, so JAX programs written against them run unchanged."""
from secant.example_libraries import optimizers, stax  # noqa: F401

__all__ = ["optimizers", "stax"]

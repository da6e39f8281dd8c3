"""secant.batching (see shared/DESIGN.md)."""
from secant.backends.errors import register_internal_dir as _register

_register(__file__)

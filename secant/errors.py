"""secant's exceptions under the names jax.errors uses, so `except jax.errors.X` code ports by
changing the import. Each class also subclasses the builtin JAX raises (TypeError, ValueError,
IndexError), and every one is a SecantError.

    from secant.errors import ConcretizationTypeError, TracerBoolConversionError
"""
from secant.backends.errors import (ConcretizationError, ConcretizationTypeError, KeyReuseError,
                                    NonConcreteBooleanIndexError, SecantError, SecantTypeError,
                                    SecantValueError, ShapeError, TracerArrayConversionError,
                                    TracerBoolConversionError, TracerIntegerConversionError,
                                    UnexpectedTracerError, UnsupportedError)

__all__ = ["SecantError", "SecantTypeError", "SecantValueError", "ShapeError", "UnsupportedError",
           "ConcretizationError", "ConcretizationTypeError", "TracerBoolConversionError",
           "TracerIntegerConversionError", "TracerArrayConversionError",
           "NonConcreteBooleanIndexError", "UnexpectedTracerError", "KeyReuseError"]

"""secant.dtypes, as jax.dtypes: `float0`, the dtype of the tangent or cotangent of an integer or
boolean value (a zero-size void: it carries a shape and no numbers), and dtype queries."""
import numpy as np

from secant.backends.dtypes import canonicalize_dtype, is_inexact  # noqa: F401
from secant.grad_options import FLOAT0 as float0

issubdtype = np.issubdtype


def result_type(*args):
    import secant.numpy as snp
    return snp.result_type(*args)


__all__ = ["float0", "canonicalize_dtype", "issubdtype", "result_type"]

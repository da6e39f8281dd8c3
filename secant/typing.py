"""secant.typing, as jax.typing: the annotation types ArrayLike (what secant's functions take
as an array) and DTypeLike (what they take as a dtype)."""
from typing import Any, Union

import numpy as np

from secant.backends.array import Array

ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
DTypeLike = Union[str, type, np.dtype, Any]

__all__ = ["ArrayLike", "DTypeLike"]

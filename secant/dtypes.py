"""secant.dtypes, as jax.dtypes: `float0`, the dtype of the tangent or cotangent of an integer or
boolean value (a zero-size void: it carries a shape and no numbers), dtype queries, and the
abstract scalar classes `extended` / `prng_key` that `issubdtype` answers for key dtypes.

secant's PRNG keys are raw uint32[..., 2] arrays (JAX's legacy keys): no array has a key dtype.
`KeyDType` (what random.key_dtype returns) names the key implementation, so code that asks
`issubdtype(random.key_dtype(), dtypes.prng_key)` gets JAX's answer."""
import numpy as np

from secant.backends import dtypes as _dtypes
from secant.backends.dtypes import canonicalize_dtype, finfo, iinfo, is_inexact  # noqa: F401
from secant.grad_options import FLOAT0 as float0

bfloat16 = _dtypes.bfloat16.type        # (the scalar type, as jax.dtypes.bfloat16)


class extended(np.generic):
    """Scalar class of extended dtypes (as jax.dtypes.extended): abstract, never
    instantiated; it exists for `issubdtype`."""


class prng_key(extended):
    """Scalar class of PRNG key dtypes (as jax.dtypes.prng_key): abstract, for
    `issubdtype(dtype, prng_key)`."""


class KeyDType:
    """The dtype of typed keys of one PRNG implementation (jax.random.key_dtype's result),
    named as JAX names it (`key<fry>` for threefry2x32)."""
    __slots__ = ("impl", "tag")

    def __init__(self, impl, tag):
        self.impl, self.tag = impl, tag

    @property
    def name(self):
        return f"key<{self.tag}>"

    @property
    def type(self):
        return prng_key

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, KeyDType) and other.impl == self.impl

    def __hash__(self):
        return hash((KeyDType, self.impl))


def issubdtype(a, b):
    """np.issubdtype, answering for key dtypes as JAX does: a key dtype is a prng_key (and an
    extended) dtype, and only itself among key dtypes."""
    if isinstance(b, KeyDType):
        return a == b
    if isinstance(a, KeyDType):
        a = a.type
    return np.issubdtype(a, b)


def itemsize_bits(dtype):
    """The size of one element of dtype in bits (0 for float0, as JAX's)."""
    dt = np.dtype(dtype)
    return 0 if dt == float0 else dt.itemsize * 8


def scalar_type_of(x):
    """The Python scalar type (bool, int, float, complex) whose values x's dtype holds."""
    dt = getattr(x, "dtype", None)
    dt = np.asarray(x).dtype if dt is None else np.dtype(dt)
    if dt == np.bool_:
        return bool
    if np.issubdtype(dt, np.integer):
        return int
    if np.issubdtype(dt, np.complexfloating):
        return complex
    if np.issubdtype(dt, np.floating) or dt == _dtypes.bfloat16:
        return float
    raise TypeError(f"invalid scalar type {dt}")


def result_type(*args):
    import secant.numpy as snp
    return snp.result_type(*args)


__all__ = ["float0", "canonicalize_dtype", "issubdtype", "result_type", "bfloat16", "finfo",
           "iinfo", "extended", "prng_key", "itemsize_bits", "scalar_type_of"]

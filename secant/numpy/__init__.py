"""secant.numpy: NumPy's API on secant arrays, with JAX's semantics (immutable arrays, 32-bit
defaults, weakly typed Python scalars, `x.at[i].set(v)` instead of in-place updates).

Each family lives in its own module; this package re-exports every public function they define.
"""
import importlib as _importlib

import numpy as _np

from secant.backends import dtypes as _dtypes
from secant.backends.array import PublicArray as ndarray  # noqa: F401
from secant.numpy import (conversion, ufuncs, creation, shape, reductions, products,  # noqa: F401
                          indexing, methods, extra)

_FAMILIES = (conversion, ufuncs, creation, shape, reductions, products, indexing, extra)


def _export():
    names = []
    for mod in _FAMILIES:
        for name, value in vars(mod).items():
            if name.startswith("_") or not callable(value):
                continue
            if getattr(value, "__module__", None) == mod.__name__:
                globals()[name] = value
                names.append(name)
    return names


__all__ = _export()
r_, c_ = extra.r_, extra.c_       # index tricks: objects, not functions
__all__ += ["r_", "c_"]

from secant.numpy.scalar_types import scalar_type as _scalar_type  # noqa: E402
# dtypes that cast when called (snp.float32(x)), as jax.numpy's (secant/numpy/scalar_types.py)
bool_ = _scalar_type(_np.bool_, "bool_")
int8, int16, int32, int64 = (_scalar_type(t) for t in (_np.int8, _np.int16, _np.int32, _np.int64))
uint8, uint16, uint32, uint64 = (_scalar_type(t)
                                 for t in (_np.uint8, _np.uint16, _np.uint32, _np.uint64))
float16, float32, float64 = (_scalar_type(t) for t in (_np.float16, _np.float32, _np.float64))
bfloat16 = _scalar_type(_dtypes.bfloat16.type, "bfloat16")
complex64, complex128 = _scalar_type(_np.complex64), _scalar_type(_np.complex128)
dtype = _np.dtype
pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None
iinfo = _dtypes.iinfo
finfo = _dtypes.finfo
promote_types = _dtypes.promote_types
issubdtype = _np.issubdtype
floating, integer, inexact, number, signedinteger, unsignedinteger, complexfloating = (
    _np.floating, _np.integer, _np.inexact, _np.number, _np.signedinteger, _np.unsignedinteger,
    _np.complexfloating)
float_ = float32
int_ = int32

methods.install()
from secant.numpy import sources  # noqa: E402,F401  (what transforms read for composites)
from secant.numpy import linalg  # noqa: E402,F401
from secant.numpy import fft  # noqa: E402,F401  (secant.numpy.fft, read as source)
from secant.numpy import complex_sources  # noqa: E402,F401  (snp.angle, read as source)
from secant.numpy import sources_extra  # noqa: E402,F401  (... for extra.py's functions)
from secant.numpy import sources_existing  # noqa: E402,F401  (composites of existing functions)
from secant.numpy import pad_sources  # noqa: E402,F401  (pad's modes other than constant)
from secant.numpy.vectorize import vectorize  # noqa: E402,F401
from secant.numpy import ufunc_methods  # noqa: E402,F401  (snp.add.reduce & co., as source)
# more of jax.numpy, read as source: more.py, more_api.py (issue 15's list), apply.py
# (apply_along_axis, apply_over_axes), more_names.py, bits.py (packbits), host_io.py (arrays from
# bytes, text, DLPack and files); each re-exported once imported, in order
for _module in ("more", "more_api", "apply", "more_names", "bits", "host_io"):
    _module = _importlib.import_module("secant.numpy." + _module)
    for _name in _module.__all__:
        globals()[_name] = getattr(_module, _name)
    __all__ += [n for n in _module.__all__ if n not in __all__]
# jax.numpy's other dtype names: the scalar types above, and NumPy's abstract ones
bool = bool_    # noqa: A001  (jax.numpy.bool, NumPy 2's name)
single, double, csingle, cdouble, complex_ = float32, float64, complex64, complex128, complex128
uint = uint32
generic, character, flexible, object_ = _np.generic, _np.character, _np.flexible, _np.object_
ComplexWarning = _np.exceptions.ComplexWarning
array_repr = _np.array_repr
from secant.numpy.ufunc_class import ufunc, frompyfunc  # noqa: E402,F401  (jnp.ufunc)
__all__ += ["ufunc", "frompyfunc"]
array_str = _np.array_str
get_printoptions, set_printoptions, printoptions = (_np.get_printoptions, _np.set_printoptions,
                                                   _np.printoptions)

"""Turning inputs into arrays, and JAX's dtype promotion before a primitive is bound."""
import numpy as np

from secant.backends import dtypes
from secant.backends.array import Array
from secant.backends.core import FAST_FLOATS, Tracer
from secant.backends.errors import SecantTypeError, where
from secant.backends.primitives import elementwise as ew

_SCALARS = (bool, int, float, complex)
ArrayLike = (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)


def is_array(x):
    return type(x) is Array or isinstance(x, Tracer)


def dtype_weak(x):
    """(dtype, weak_type) of any array-like, with dtypes canonicalised as JAX does."""
    t = type(x)
    if t is Array:
        return x.dtype, x.weak_type
    if isinstance(x, Tracer):
        return x.aval.dtype, x.aval.weak_type
    if t in _SCALARS:
        return dtypes.python_scalar_dtype(x), t is not bool
    if isinstance(x, (np.ndarray, np.generic)):
        return dtypes.canonicalize_dtype(x.dtype), False
    if hasattr(x, "__jax_array__"):
        return dtype_weak(x.__jax_array__())
    return dtypes.canonicalize_dtype(_to_numpy(x).dtype), False


def _to_numpy(x):
    if isinstance(x, (list, tuple)):
        if any(is_array(e) or isinstance(e, (list, tuple)) for e in x):
            return None
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as e:
        raise SecantTypeError(f"cannot convert {type(x).__name__} to an array: {e}{where()}") from None


def asarray(a, dtype=None, copy=None):
    """jnp.asarray: arrays pass through (converted if `dtype` asks), everything else is copied in."""
    if dtype is not None:
        dtype = dtypes.canonicalize_dtype(dtype)
    t = type(a)
    if t is Array or isinstance(a, Tracer):
        return a if dtype is None or a.dtype == dtype else convert(a, dtype)
    if t in _SCALARS:
        dt = dtype or dtypes.python_scalar_dtype(a)
        return _held(np.asarray(a, dtype=dt), dtype is None and t is not bool)
    if isinstance(a, (list, tuple)):
        if any(is_array(e) or isinstance(e, (list, tuple)) for e in a):
            from secant.numpy.shape import stack
            parts = [asarray(e) for e in a]
            if parts:
                dt = dtype or result_type(*parts)
                return stack([convert(p, dt) for p in parts])
    if hasattr(a, "__jax_array__"):
        return asarray(a.__jax_array__(), dtype)
    v = _to_numpy(a)
    if v.dtype == object:
        raise SecantTypeError(f"cannot convert {type(a).__name__} (object dtype) to an array{where()}")
    dt = dtype or dtypes.canonicalize_dtype(v.dtype)
    return _held(np.array(v, dtype=dt, copy=True), False)


def _held(v, weak):
    """An eager Array of the new ndarray `v`; a 0-d float one is held as its NumPy scalar, as
    the eager fast paths hold their 0-d results (Array._npy: operations on it skip the
    conversion to a scalar that NumPy's 0-d arithmetic costs)."""
    if not v.ndim and v.dtype in FAST_FLOATS:
        return Array._wrap_ndarray(v[()], weak)
    return Array._wrap(v, weak)


def array(object, dtype=None, copy=True, ndmin=0):
    out = asarray(object, dtype)
    if type(out) is Array and out is object and copy:
        out = Array._wrap(out._value(), out.weak_type)
    if ndmin > out.ndim:
        from secant.numpy.shape import reshape
        out = reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def convert(x, dtype, weak_type=False):
    """lax.convert_element_type: same-dtype strong arrays come back untouched."""
    dtype = np.dtype(dtype)
    t = type(x)
    if t is Array or isinstance(x, Tracer):
        if x.dtype == dtype and x.weak_type == weak_type:
            return x
        return ew.convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)
    if t is int:
        return Array._wrap(_python_int(x, dtype), weak_type)
    if t in _SCALARS:
        return Array._wrap(np.asarray(x, dtype=dtype), weak_type)
    if hasattr(x, "__jax_array__"):
        return convert(x.__jax_array__(), dtype, weak_type)
    return Array._wrap(np.array(np.asarray(x), dtype=dtype), weak_type)


def _python_int(x, dtype):
    """A Python int as JAX converts it: it must fit the default integer (int32; int64 with
    x64), then wraps into a narrower integer dtype (int8 + 300 is 45, uint8 + -1 is 0)."""
    default = dtypes.canonicalize_dtype(np.int64)
    info = np.iinfo(default)
    if not info.min <= x <= info.max:
        raise OverflowError(f"Python int {x} does not fit {default}, the default integer type "
                            f"(as in JAX; enable_x64 makes it int64){where()}")
    return np.asarray(x, dtype=default).astype(dtype)


def result_type(*args):
    """jnp.result_type over arrays, Python scalars and dtypes."""
    pairs = []
    for a in args:
        if isinstance(a, (np.dtype, type, str)) and not isinstance(a, _SCALARS):
            if any(a is s for s in _SCALARS):     # (not `in`: dtype('float64') == float)
                pairs.append((dtypes.python_scalar_dtype(a(0)), a is not bool))
            else:
                pairs.append((dtypes.canonicalize_dtype(a), False))
        else:
            pairs.append(dtype_weak(a))
    return dtypes.promote(*pairs)[0]


def promote(*args):
    """Convert every argument to the common dtype (JAX's promotion); arrays of that dtype pass."""
    if len(args) == 2:
        x, y = args
        if type(x) is Array and type(y) is Array and x.dtype == y.dtype and x.weak_type == y.weak_type:
            return args
    pairs = [dtype_weak(a) for a in args]
    dt, weak = dtypes.promote(*pairs)
    out = []
    for a, (adt, aweak) in zip(args, pairs):
        if is_array(a) and adt == dt and aweak == weak:
            out.append(a)
        elif is_array(a) and adt == dt:
            out.append(a)       # weak and strong of one dtype mix freely: the primitive decides
        else:
            out.append(convert(a, dt, weak))
    return out


def promote_inexact(*args):
    """Like promote, then to the default float if the result is not already inexact, weakly
    typed where the promotion is (3 / int32 array: strong, as JAX's; promote leaves a weak
    int32 argument of jit weak beside a strong one of its dtype, so its flag is not the
    promotion's)."""
    promoted = promote(*args)
    dt, weak = dtype_weak(promoted[0])
    if not dtypes.is_inexact(dt):
        if weak and len(args) > 1:
            weak = dtypes.promote(*[dtype_weak(a) for a in args])[1]
        promoted = [convert(a, dtypes.default_float(), weak) for a in promoted]
    return promoted


def to_inexact(x):
    if type(x) is Array and x.dtype in dtypes.INEXACT:
        return x
    dt, weak = dtype_weak(x)
    if dtypes.is_inexact(dt):
        return x if is_array(x) else convert(x, dt, weak)
    return convert(x, dtypes.default_float(), weak)


def ensure_array(x):
    return x if is_array(x) else asarray(x)

"""The operators and methods of secant.Array and of Tracers, installed from secant.numpy so the
ground floor (backends/) never imports upward. Both classes get the same set."""
import numpy as np

from secant.backends.array import Array
from secant.backends.core import FAST_FLOATS, Tracer, quiet_call

_OPERATORS = {
    # dunder -> (secant.numpy function, whether the operands are swapped)
    "__add__": ("add", False), "__radd__": ("add", True),
    "__sub__": ("subtract", False), "__rsub__": ("subtract", True),
    "__mul__": ("multiply", False), "__rmul__": ("multiply", True),
    "__truediv__": ("true_divide", False), "__rtruediv__": ("true_divide", True),
    "__floordiv__": ("floor_divide", False), "__rfloordiv__": ("floor_divide", True),
    "__mod__": ("remainder", False), "__rmod__": ("remainder", True),
    "__divmod__": ("divmod", False), "__rdivmod__": ("divmod", True),
    "__rpow__": ("power", True),
    "__matmul__": ("matmul", False), "__rmatmul__": ("matmul", True),
    "__and__": ("bitwise_and", False), "__rand__": ("bitwise_and", True),
    "__or__": ("bitwise_or", False), "__ror__": ("bitwise_or", True),
    "__xor__": ("bitwise_xor", False), "__rxor__": ("bitwise_xor", True),
    "__lshift__": ("left_shift", False), "__rlshift__": ("left_shift", True),
    "__rshift__": ("right_shift", False), "__rrshift__": ("right_shift", True),
    "__neg__": ("negative", False), "__pos__": ("positive", False),
    "__abs__": ("absolute", False), "__invert__": ("invert", False),
    "__round__": ("round", False),
    "__eq__": ("equal", False), "__ne__": ("not_equal", False), "__lt__": ("less", False),
    "__le__": ("less_equal", False), "__gt__": ("greater", False),
    "__ge__": ("greater_equal", False),
}


def _method(snp, target, swapped):
    fn = getattr(snp, target)
    if not swapped:
        return fn

    def r(self, other):
        return fn(other, self)
    r.__name__ = target
    r.__secant_swapped__ = fn       # (the function the transforms call: secant/transforms.py)
    return r


def _pow(x, y):
    """x ** 2 with a Python int exponent stays an integer power (exact, and x ** 2 reads well)."""
    if type(x) is Array and type(y) is int and 1 <= y <= 4:
        v = x._npy      # an eager float array: integer_pow's impl (y - 1 products), as bind
        if type(v) is np.ndarray and v.dtype in FAST_FLOATS:    # computes it
            r = v
            for _ in range(y - 1):
                r = quiet_call(np.multiply, r, v)
            return Array._wrap_ndarray(r, x.weak_type)
    from secant import numpy as snp
    if type(y) is int and -4 <= y <= 4:
        from secant.backends import dtypes
        from secant.backends.primitives import elementwise as ew
        x = snp.conversion.ensure_array(x)
        if dtypes.is_bool(x.dtype):            # (bool ** 2 is an int32, as in JAX)
            x = snp.conversion.convert(x, dtypes.default_int())
        if y >= 0 or dtypes.is_inexact(x.dtype):
            return ew.integer_pow_p.bind(x, y=y)
    return snp.power(x, y)


_METHODS = {
    # name on the array -> name in secant.numpy (the array is passed first)
    "sum": "sum", "mean": "mean", "var": "var", "std": "std", "max": "max", "min": "min",
    "prod": "prod", "argmax": "argmax", "argmin": "argmin", "all": "all", "any": "any",
    "cumsum": "cumsum", "cumprod": "cumprod", "reshape": None, "transpose": None,
    "ravel": "ravel", "flatten": "ravel", "squeeze": "squeeze", "swapaxes": "swapaxes",
    "dot": "dot", "clip": "clip", "round": "round", "conj": "conjugate",
    "conjugate": "conjugate", "sort": "sort", "argsort": "argsort", "astype": None,
    "nonzero": "nonzero", "repeat": "repeat", "take": "take", "trace": "trace",
    "diagonal": "diagonal", "ptp": "ptp", "argpartition": "argpartition",
    "searchsorted": "searchsorted",
}


def function_of(name):
    """The secant.numpy function an array's method `name` calls with the array first (what the
    transforms read `x.name(args)` as), or None (no such method, or one of its own)."""
    from secant import numpy as snp
    target = _METHODS.get(name)
    return getattr(snp, target, None) if target is not None else None


def install():
    from secant import numpy as snp
    ops = {name: _method(snp, target, swapped) for name, (target, swapped) in _OPERATORS.items()
           if hasattr(snp, target)}
    ops["__pow__"] = _pow
    if hasattr(snp.indexing, "getitem"):
        ops["__getitem__"] = snp.indexing.getitem
    methods = {}
    for name, target in _METHODS.items():
        if target is not None and hasattr(snp, target):
            methods[name] = getattr(snp, target)
    methods["reshape"] = _reshape
    methods["transpose"] = _transpose
    methods["astype"] = _astype
    props = {"T": property(lambda self: snp.transpose(self)),
             "mT": property(lambda self: snp.swapaxes(self, -1, -2)),
             "at": property(lambda self: snp.indexing.AtIndexer(self)),
             "real": property(lambda self: snp.real(self)),
             "imag": property(lambda self: snp.imag(self))}
    Tracer.copy = lambda self: self         # (immutable: Array.copy copies its buffer)
    for cls in (Array, Tracer):
        for name, fn in {**ops, **methods}.items():
            setattr(cls, name, fn)
        for name, p in props.items():
            setattr(cls, name, p)


def _reshape(self, *shape, order="C"):
    from secant import numpy as snp
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return snp.reshape(self, shape, order=order)


def _transpose(self, *axes):
    from secant import numpy as snp
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
        axes = axes[0]
    return snp.transpose(self, axes or None)


def _astype(self, dtype, copy=False):
    from secant import numpy as snp
    from secant.backends import dtypes
    return snp.conversion.convert(self, dtypes.canonicalize_dtype(dtype))


def op_function(fn):
    """The secant.numpy function (an op) that an Array method's own function `fn` calls with the
    array first, and whether the operands are swapped (`__rmul__`: multiply(other, self)); None
    for any other function. A transform of `v.dot` or `Array.__rmul__` passed as the function
    calls the op (secant/transforms.py), never reads this module's source."""
    from secant import numpy as snp
    swapped = getattr(fn, "__secant_swapped__", None)
    if swapped is not None:
        return swapped, True
    own = {_pow: "power", _reshape: "reshape", _transpose: "transpose", _astype: "astype"}
    if fn in own:
        return getattr(snp, own[fn]), False
    return None

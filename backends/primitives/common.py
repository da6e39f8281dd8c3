"""Helpers shared by the primitive families.

Conventions every family (and the rule tables of ad/, batching/, lowering/) follows:
- array operands are positional; everything static (axes, shapes, dtypes) is a keyword param
  holding hashable values (tuples of ints, ints, np.dtype);
- elementwise n-ary primitives broadcast NumPy-style but require equal dtypes (secant.numpy
  promotes first, as jax.numpy does before calling lax);
- NumPy implementations return exactly the dtype the shape rule states (numpy's own promotion
  would otherwise widen reductions to int64 and Python-scalar math to float64).
"""
import numpy as np

from secant.backends import dtypes
from secant.backends.errors import SecantTypeError, ShapeError, where


def type_error(msg):
    raise SecantTypeError(msg + where())


def shape_error(msg):
    """Operand shapes that do not fit together: a TypeError (as JAX's lax) and a ValueError."""
    raise ShapeError(msg + where())


def lazy_scipy_special():
    import scipy.special
    return scipy.special


# --- helpers for the rules ---------------------------------------------------------------------
def broadcast_shapes(name, *shapes):
    ndim = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (ndim - len(s)) + tuple(s) for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            shape_error(f"{name} got incompatible shapes for broadcasting: "
                        + ", ".join(str(tuple(s)) for s in shapes))
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


KIND_NAMES = {"float": "floating-point", "real": "real floating-point", "realint": "real (integer or floating-point)", "int": "integer", "intbool": "integer or boolean",
              "num": "numeric", "any": "any"}


def _kind_ok(kind, dt):
    if kind == "float":
        return dtypes.is_inexact(dt)
    if kind == "real":
        return dtypes.is_float(dt)
    if kind == "realint":
        return not dtypes.is_complex(dt) and not dtypes.is_bool(dt)
    if kind == "int":
        return dtypes.is_int(dt)
    if kind == "intbool":
        return dtypes.is_int(dt) or dtypes.is_bool(dt)
    if kind == "num":
        return not dtypes.is_bool(dt)
    return True


def _check_kind(name, kind, dt):
    if not _kind_ok(kind, dt):
        type_error(f"{name} requires {KIND_NAMES[kind]} arguments, got {np.dtype(dt).name}")


def _same_dtypes(name, avals):
    d0 = avals[0].dtype
    if any(a.dtype != d0 for a in avals[1:]):
        type_error(f"{name} requires arguments of the same dtype, got "
                   + ", ".join(a.dtype.name for a in avals))
    return d0


_LOW_PRECISION = frozenset({dtypes.bfloat16, dtypes.float16})


def _low_precision(fn):
    """NumPy lacks (or widens) some float16/bfloat16 kernels: compute in float32, round back."""
    def impl(*xs, **params):
        dt = xs[0].dtype
        if dt in _LOW_PRECISION:
            r = fn(*[np.asarray(x, np.float32) for x in xs], **params)
            return r.astype(dt) if r.dtype == np.float32 else r
        return fn(*xs, **params)
    return impl



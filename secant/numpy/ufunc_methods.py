"""jax.numpy's ufunc methods on secant.numpy's binary ufuncs: `snp.add.reduce(x)`,
`snp.multiply.accumulate(x)`, `snp.subtract.outer(a, b)`, `snp.add.at(x, i, v, inplace=False)`,
`snp.add.reduceat(x, idx)`; NumPy's (`np.add.reduce`) call these (numpy/counterparts.py).

Read by the transforms as source (`__secant_by_source__`): each method of each ufunc is a short
function (its source written below, from _METHODS, registered with linecache so the transforms
read it as they read a user's) that calls this module's generic one with the ufunc, or the
reduction secant.numpy has for it (add.reduce is sum, multiply.accumulate is cumprod), as JAX's
ufuncs do. As in JAX, `at` needs inplace=False and returns the updated array."""
import linecache

import secant.numpy as snp
from secant import lax  # noqa: F401  (the cummax/cummin methods read it)
from secant.backends.errors import SecantTypeError, SecantValueError, where as _where

__secant_by_source__ = True      # transforms read this module like user code


def _no_out(name):
    """(called where out= is given)"""
    raise SecantTypeError(f"jax.numpy.{name}: the out argument is not supported (secant "
                          f"arrays are immutable, as JAX's): use the returned array" + _where())


def _initial(name, initial):
    """A where mask needs initial for a ufunc with no identity (as JAX's)."""
    if initial is None:
        raise SecantValueError(f"reduction operation {name!r} does not have an identity, so to "
                               f"use a where mask one has to specify 'initial'" + _where())
    return initial


def _reduce(ufunc, name, a, axis, dtype, out, keepdims, initial, where):
    """The fold JAX's ufunc.reduce runs for a ufunc with no reduction of its own."""
    if out is not None:
        _no_out(name + ".reduce")
    if where is not None:
        raise SecantTypeError(f"jax.numpy.{name}.reduce: where= needs a ufunc with an identity "
                              f"(add, multiply, maximum, minimum, logical_and, logical_or)"
                              + _where())
    a = snp.asarray(a)
    if isinstance(axis, (tuple, list)):
        raise SecantTypeError(f"jax.numpy.{name}.reduce: a tuple of axes is not supported "
                              f"(as in JAX): reduce one axis at a time" + _where())
    if axis is None:
        shape = (1,) * snp.ndim(a)
        a = snp.ravel(a)
        axis = 0
    else:
        axis = axis % snp.ndim(a)
        shape = snp.shape(a)[:axis] + (1,) + snp.shape(a)[axis + 1:]
    a = snp.moveaxis(a, axis, 0)
    if dtype is not None:
        a = a.astype(dtype)
    n = snp.shape(a)[0]
    if n == 0 and initial is None:
        raise SecantValueError(f"zero-size array to reduction operation {name} which has no "
                               f"identity" + _where())
    if initial is None:
        acc = a[0]
        start = 1
    else:
        acc = snp.broadcast_to(snp.asarray(initial, dtype=a.dtype), snp.shape(a)[1:])
        start = 0
    for i in range(start, n):
        acc = ufunc(acc, a[i])
    if keepdims:
        acc = snp.reshape(acc, shape)
    return acc


def _accumulate(ufunc, name, a, axis, dtype, out):
    """ufunc.accumulate: each partial fold along `axis`."""
    if out is not None:
        _no_out(name + ".accumulate")
    a = snp.asarray(a)
    if dtype is not None:
        a = a.astype(dtype)
    a = snp.moveaxis(a, axis, 0)
    n = snp.shape(a)[0]
    if n == 0:
        return snp.moveaxis(a, 0, axis)
    acc = a[0]
    parts = [acc]
    for i in range(1, n):
        acc = ufunc(acc, a[i])
        parts.append(acc)
    return snp.moveaxis(snp.stack(parts), 0, axis)


def _outer(ufunc, a, b):
    """ufunc.outer: ufunc of every pair, shaped a.shape + b.shape."""
    a = snp.asarray(a)
    b = snp.asarray(b)
    return ufunc(snp.reshape(a, snp.shape(a) + (1,) * snp.ndim(b)), b)


def _not_in_place(name, inplace):
    if inplace:
        raise SecantValueError(f"jax.numpy.{name}.at cannot modify arrays in-place (secant "
                               f"arrays are immutable, as JAX's): pass inplace=False to get the "
                               f"updated array, or write x.at[i].add(v)" + _where())


def _at(ufunc, name, a, indices, b, inplace):
    """ufunc.at for a ufunc with no indexed update of its own: one index at a time, so a
    repeated index is applied again, as JAX's."""
    _not_in_place(name, inplace)
    a = snp.asarray(a)
    if b is None:
        raise SecantTypeError(f"jax.numpy.{name}.at: a binary ufunc needs the values b"
                              + _where())
    idx = snp.ravel(snp.asarray(indices))
    values = snp.ravel(snp.broadcast_to(snp.asarray(b), snp.shape(idx)))
    for i in range(snp.shape(idx)[0]):
        a = a.at[idx[i]].set(ufunc(a[idx[i]], values[i]))
    return a


def _reduceat(ufunc, name, a, indices, axis, dtype, out):
    """ufunc.reduceat as JAX computes it: the fold of a[indices[i]:indices[i + 1]] along
    `axis` (a[indices[i]] where indices[i + 1] <= indices[i])."""
    if out is not None:
        _no_out(name + ".reduceat")
    a = snp.asarray(a)
    if dtype is not None:
        a = a.astype(dtype)
    if axis is None or isinstance(axis, (tuple, list)):
        raise SecantValueError("reduceat requires a single integer axis." + _where())
    indices = snp.asarray(indices)
    if snp.ndim(indices) != 1:
        raise SecantValueError(f"reduceat: indices must be one-dimensional, got "
                               f"{snp.shape(indices)}" + _where())
    a = snp.moveaxis(a, axis, 0)
    n = snp.shape(a)[0]
    acc = snp.take(a, indices, axis=0)
    ends = snp.append(indices[1:], n)
    mask_shape = snp.shape(indices) + (1,) * (snp.ndim(a) - 1)
    start = snp.reshape(indices, mask_shape)
    end = snp.reshape(ends, mask_shape)
    for i in range(n):
        acc = snp.where((i > start) & (i < end), ufunc(acc, a[i]), acc)
    return snp.moveaxis(acc, 0, axis)


# the methods' sources: {u} the ufunc's name; a ufunc with a reduction of its own (in _OWN)
# calls it, as JAX's does
_METHODS = {
    "reduce": ("def reduce(a, axis=0, dtype=None, out=None, keepdims=False, initial=None, "
               "where=None):\n"
               "    return _reduce(snp.{u}, '{u}', a, axis, dtype, out, keepdims, initial, "
               "where)\n"),
    "accumulate": ("def accumulate(a, axis=0, dtype=None, out=None):\n"
                   "    return _accumulate(snp.{u}, '{u}', a, axis, dtype, out)\n"),
    "outer": "def outer(A, B, /):\n    return _outer(snp.{u}, A, B)\n",
    "at": ("def at(a, indices, b=None, /, *, inplace=True):\n"
           "    return _at(snp.{u}, '{u}', a, indices, b, inplace)\n"),
    "reduceat": ("def reduceat(a, indices, axis=0, dtype=None, out=None):\n"
                 "    return _reduceat(snp.{u}, '{u}', a, indices, axis, dtype, out)\n"),
}
_IDENTITY_LIKE = ("def reduce(a, axis=0, dtype=None, out=None, keepdims=False, initial=None, "
                  "where=None):\n"
                  "    if out is not None:\n"
                  "        _no_out('{u}.reduce')\n"
                  "    a = snp.asarray(a) if dtype is None else snp.asarray(a).astype(dtype)\n"
                  "    if where is not None:\n"
                  "        a = snp.where(where, a, {i})\n"
                  "    out = snp.{r}(a, axis=axis, keepdims=keepdims)\n"
                  "    return out if initial is None else snp.{u}(out, initial)\n")
_CUMULATIVE = ("def accumulate(a, axis=0, dtype=None, out=None):\n"
               "    if out is not None:\n"
               "        _no_out('{u}.accumulate')\n"
               "    a = snp.asarray(a) if dtype is None else snp.asarray(a).astype(dtype)\n"
               "    return snp.{r}(a, axis=axis)\n")
_CUMULATIVE_LAX = ("def accumulate(a, axis=0, dtype=None, out=None):\n"
                   "    if out is not None:\n"
                   "        _no_out('{u}.accumulate')\n"
                   "    a = snp.asarray(a) if dtype is None else snp.asarray(a).astype(dtype)\n"
                   "    return lax.{r}(a, axis=axis % snp.ndim(a))\n")
_INDEXED = ("def at(a, indices, b=None, /, *, inplace=True):\n"
            "    _not_in_place('{u}', inplace)\n"
            "    return snp.asarray(a).at[indices].{r}(b)\n")
_OWN = {
    ("add", "reduce"): (_IDENTITY_LIKE, "sum", "0"),
    ("multiply", "reduce"): (_IDENTITY_LIKE, "prod", "1"),
    ("maximum", "reduce"): (_IDENTITY_LIKE, "max", "_initial('maximum', initial)"),
    ("minimum", "reduce"): (_IDENTITY_LIKE, "min", "_initial('minimum', initial)"),
    ("logical_and", "reduce"): (_IDENTITY_LIKE, "all", "True"),
    ("logical_or", "reduce"): (_IDENTITY_LIKE, "any", "False"),
    ("add", "accumulate"): (_CUMULATIVE, "cumsum"),
    ("multiply", "accumulate"): (_CUMULATIVE, "cumprod"),
    ("maximum", "accumulate"): (_CUMULATIVE_LAX, "cummax"),
    ("minimum", "accumulate"): (_CUMULATIVE_LAX, "cummin"),
    ("add", "at"): (_INDEXED, "add"), ("multiply", "at"): (_INDEXED, "multiply"),
    ("maximum", "at"): (_INDEXED, "max"), ("minimum", "at"): (_INDEXED, "min"),
}
# jax.numpy's binary ufuncs secant.numpy has (jnp.matmul & co. are not ufuncs; divmod has two
# outputs)
UFUNCS = ("add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "power",
          "float_power", "remainder", "mod", "fmod", "maximum", "minimum", "fmax", "fmin",
          "arctan2", "hypot", "logaddexp", "logaddexp2", "copysign", "nextafter", "heaviside",
          "ldexp", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
          "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
          "bitwise_xor", "left_shift", "right_shift", "gcd", "lcm")


def _install():
    """Each ufunc's methods, defined from their source (kept in linecache under a file name
    of their own, so inspect.getsource and the transforms read it)."""
    for u in UFUNCS:
        fn = getattr(snp, u, None)
        if fn is None or "reduce" in getattr(fn, "__dict__", {}):
            continue            # (an alias: snp.mod is snp.remainder, installed once)
        for method, template in _METHODS.items():
            own = _OWN.get((u, method))
            source = own[0].format(u=u, r=own[1], i=own[2] if len(own) > 2 else "") if own \
                else template.format(u=u)
            filename = f"<secant.numpy {u}.{method}>"
            lines = source.splitlines(True)
            linecache.cache[filename] = (len(source), None, lines, filename)
            namespace = {}
            exec(compile(source, filename, "exec"), globals(), namespace)  # noqa: S102
            made = namespace[method]
            made.__qualname__ = f"{u}.{method}"
            made.__module__ = __name__
            setattr(fn, method, made)


_install()

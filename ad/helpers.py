"""Small functions that generated derivative code calls by name, so it reads like the maths.

They are written with secant.numpy in the subset of Python the transform itself understands
(static `if`s on shapes, one return), so a generated derivative can be differentiated again:
the transform reads these functions like any user helper. Those marked `constant` return values
whose derivative is zero (masks, seeds) and are treated as constants.
"""
import functools
import inspect
import types
import weakref

import numpy as np

import secant.numpy as snp
from secant import tree_util
from secant.tree_util import plain_structure, tree_leaves, tree_unflatten
from secant.backends import dtypes
from secant.backends.array import Array
from secant.backends.errors import (SecantError, SecantTypeError, TracerBoolConversionError,
                                   TracerIntegerConversionError, called_at, where)
from secant.backends.placeholder import Undefined
from secant.transformer import properties
from secant.transformer.properties import has_attr


def constant(fn):
    """Mark a helper whose result does not depend differentiably on its arguments."""
    fn.__secant_constant__ = True
    return fn


_REAL_SCALARS = frozenset([np.float16, np.float32, np.float64])
_F32, _F64 = np.dtype("float32"), np.dtype("float64")


@constant
def grad_seed(out):
    """The cotangent that starts reverse mode for grad: one, for a real scalar output."""
    v = out._npy if type(out) is Array else None
    if type(v) in _REAL_SCALARS:        # (eager: a fast path's 0-d result, its NumPy scalar)
        return Array._wrap_ndarray(type(v)(1), out.weak_type)
    if type(v) is np.ndarray and not v.ndim and type(v[()]) in _REAL_SCALARS:   # (a 0-d array)
        return Array._wrap_ndarray(v.dtype.type(1), out.weak_type)
    if out is None or isinstance(out, (str, bytes)) or (
            isinstance(out, (list, tuple)) and any(isinstance(o, (str, bytes, type(None)))
                                                   for o in out)):
        # grad(lambda x: None): JAX's own words, not NumPy's object dtype
        raise SecantTypeError("Gradient only defined for scalar-output functions. Output was "
                              f"{out!r}.{where()}")
    shape = np.shape(out)
    if shape != ():
        raise SecantTypeError("grad requires a scalar output (use jacrev or vjp for others); "
                              f"the output had shape {shape}{where()}{called_at()}")
    dt = out.dtype if type(out) is Array else snp.result_type(out)
    if not dtypes.is_inexact(dt):
        raise SecantTypeError(f"grad requires a floating-point output, got {dt.name}{where()}")
    if dtypes.is_complex(dt):
        raise SecantTypeError(f"grad requires real-valued outputs (a floating-point dtype), but "
                              f"got {dt.name}; for holomorphic differentiation pass "
                              f"holomorphic=True (as in JAX){where()}")
    return snp.ones_like(out)


# a derivative whose output is constant calls grad_seed(out) only for its checks (result
# dropped): a transform of that derivative keeps the call as written (transformer/normalize.py)
grad_seed.__secant_check__ = True


@constant
def grad_seed_like(x, y=None):
    """grad_seed for an output the transform proved to be a scalar of x's dtype (a sum of
    x * x, say: transformer/dataflow.py scalar_like): the same checks and seed, read from x's
    dtype, so the statements computing the output need not run; with y, of the dtype x and y
    promote to (JAX's promotion: a sum of labels * logp, the product not computed). For a list
    or tuple (the reduction reads it as an array: transformer/dataflow.py _same_dtype_source)
    the seed of its sum, which stacks it as the output did (its dtype, a ragged one refused)."""
    if y is not None:
        return grad_seed(snp.zeros((), snp.result_type(x, y)))
    if isinstance(x, (list, tuple)):
        return grad_seed(snp.sum(x))
    v = x._npy if type(x) is Array and not x.weak_type else None
    if v is not None:   # eager, a canonical float, strong: the seed grad_seed gives, at once
        dt = v.dtype
        if dt == _F32 or dt == _F64 and dtypes.X64[0]:
            return Array._wrap_ndarray(dt.type(1), False)
    return grad_seed(snp.zeros((), snp.result_type(x)))


grad_seed_like.__secant_check__ = True


def grad_seed_scaled(x, k):
    """grad_seed for an output the transform proved to be an elementwise op of scalars of x's
    dtype, real Python numbers and k, by +, - and * (`0.5 * k * snp.sum(q * q)`:
    transformer/dataflow.py scalar_like): the output has k's shape, so k must be a scalar, and
    the dtype x and k promote to; the statements computing the output need not run."""
    shape = np.shape(k)
    if shape != ():
        raise SecantTypeError("grad requires a scalar output (use jacrev or vjp for others); "
                              f"the output had shape {shape}{where()}{called_at()}")
    return grad_seed(snp.zeros((), snp.result_type(x, k)))


grad_seed_scaled.__secant_check__ = True


def cast_grad(t, x, dtype):
    """Cotangent of x in x.astype(dtype): t in x's dtype, none through a cast to integers or
    bools (as JAX: an integer result has no derivative); a complex t of a real x gives its
    real part (as JAX, without NumPy's ComplexWarning)."""
    if snp.issubdtype(dtype, snp.inexact):
        if snp.iscomplexobj(t):
            if not snp.iscomplexobj(x):
                t = snp.real(t)
        out = t.astype(snp.result_type(x))
    else:
        out = snp.zeros_like(x)
    return out


def real_grad(t, x):
    """Cotangent of x in real(x): t itself, complex when x is (JAX's convention)."""
    if dtypes.is_complex(snp.result_type(x)):
        t = t.astype(snp.result_type(x))
    return t


def imag_grad(t, x):
    """Cotangent of x in imag(x): -1j * t for complex x (JAX's convention); zeros for real x."""
    if dtypes.is_complex(snp.result_type(x)):
        t = -1j * t.astype(snp.result_type(x))
    else:
        t = snp.zeros_like(t)
    return t


def _sum_axes(g_shape, shape):
    lead = len(g_shape) - len(shape)
    return tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                      if d == 1 and g_shape[i + lead] != 1)


def _summed_to(t, shape):
    """`t` summed down to `shape`, which it broadcasts from."""
    if np.shape(t) != shape:
        t = snp.sum(t, axis=_sum_axes(np.shape(t), shape)).reshape(shape)
    return t


def unbroadcast(t, x):
    """Sum `t` down to the shape of `x`: the derivative of NumPy broadcasting. A real x that
    met complex values was promoted first: its cotangent is the real part (as JAX's
    convert_element_type transposes), and so is a float x that met a wider float: its cotangent
    goes back to x's dtype. An integer x (a loop index a staged loop carries) has a zero
    cotangent of its own dtype (JAX's float0), as a branch that does not read it gives."""
    t = _summed_to(t, np.shape(x))
    if _promoted_to_complex(t, x):
        t = snp.real(t)
    if _integer(x):
        t = (t * 0).astype(x.dtype)
    elif _promoted_float(t, x):
        t = t.astype(x.dtype)
    return t


def _promoted_float(t, x):
    """Whether real x met a wider float (float16 x + float32 y is float32): its cotangent goes
    back to x's dtype, as JAX's convert_element_type transposes (reads dtypes only)."""
    dt, dx = getattr(t, "dtype", None), getattr(x, "dtype", None)
    return isinstance(dt, np.dtype) and isinstance(dx, np.dtype) and dt != dx and \
        dtypes.is_float(dt) and dtypes.is_float(dx)         # (bfloat16's kind is "V")


_promoted_float.__secant_static_query__ = True


def _promoted_to_complex(t, x):
    """Whether cotangent t is complex for a real (or integer) x (reads dtypes only)."""
    dt = getattr(t, "dtype", None)
    if isinstance(dt, np.dtype) and dt.kind != "c":
        return False                # (a real array's cotangent: the common case, read cheaply)
    if getattr(t, "__secant_undefined__", False):
        return False                # (the symbolic zero cotangent of a branch's unset residual)
    return dtypes.is_complex(snp.result_type(t)) and not dtypes.is_complex(snp.result_type(x))


_promoted_to_complex.__secant_static_query__ = True


def _integer(x):
    """Whether array x holds integers or bools (reads its dtype only)."""
    dt = getattr(x, "dtype", None)
    return isinstance(dt, np.dtype) and dt.kind in "iub"


_integer.__secant_static_query__ = True


def _axes(ndim, axis):
    if axis is None:
        return tuple(range(ndim))
    axis = axis if isinstance(axis, tuple) else (axis,)
    return tuple(a % ndim for a in axis)


@constant
def _count(a, axis):
    n = 1
    for ax in _axes(np.ndim(a), axis):
        n *= np.shape(a)[ax]
    return n


def unreduce(t, a, axis=None, keepdims=False):
    """Broadcast the cotangent of a reduction back over the reduced axes of `a`."""
    if not keepdims and np.ndim(a) > 0:
        t = snp.expand_dims(t, _axes(np.ndim(a), axis))
    return snp.broadcast_to(t, np.shape(a))


def mean_grad(t, a, axis=None, keepdims=False):
    """(t divided before it is spread over a: the same values, one division per element of t,
    not of a)"""
    return unreduce(t / _count(a, axis), a, axis, keepdims)


def broadcast_shape(*shapes, axis=(), keepdims=False):
    """The shape of an elementwise op of values of `shapes` (NumPy broadcasting), reduced over
    `axis` as snp.sum(..., axis=axis, keepdims=keepdims) reduces it (no axis by default; None:
    every axis): a value's shape, which a reduction's rule reads it for (unreduce_to,
    mean_grad_to), read from its operands' shapes (ad/reverse.py _shape_source), so that
    nothing computes the value for that (softmax cross-entropy's `labels * logp`). A static
    query: its arguments are shapes (snp.shape(x): each example's under vmap)."""
    shape = snp.broadcast_shapes(*shapes)
    axes = () if axis == () else _axes(len(shape), axis)
    return tuple(1 if i in axes else d for i, d in enumerate(shape)
                 if keepdims or i not in axes)


broadcast_shape.__secant_static_query__ = True      # (of shapes: a constant for every transform)


def shape_of(*xs, axis=(), keepdims=False):
    """broadcast_shape of the shapes of `xs` (arrays, or Python numbers): the shape of an
    elementwise op of them, so reduced. A static query; under vmap written as broadcast_shape
    of each one's snp.shape, which vmap reads per example (transformer/normalize.py
    _PerExampleQueries), so that a batched argument's batch axis is never read as the
    example's."""
    return broadcast_shape(*[np.shape(x) for x in xs], axis=axis, keepdims=keepdims)


shape_of.__secant_static_query__ = True
shape_of.__secant_example_shapes__ = True           # (vmap: broadcast_shape of snp.shape's)


def unreduce_to(t, shape, axis=None, keepdims=False):
    """unreduce over a value of `shape` (a tuple: broadcast_shape's), the value not read."""
    if not keepdims and len(shape) > 0:
        t = snp.expand_dims(t, _axes(len(shape), axis))
    return snp.broadcast_to(t, shape)


def mean_grad_to(t, shape, axis=None, keepdims=False, summed=()):
    """mean_grad over a value of `shape` (a tuple: broadcast_shape's), the value not read.
    summed: the cotangent of a mean over every axis of that value's sum over the axes
    `summed` (`snp.mean(snp.sum(v, axis=-1))`, the two rules in one: ad/algebra.py
    _reductions_composed): t (a scalar) over `shape`, divided by the count of the other axes."""
    return unreduce_to(t / _count_in(shape, axis, summed), shape, axis, keepdims)


@constant
def _count_in(shape, axis, summed=()):
    n = 1
    skipped = _axes(len(shape), summed) if summed != () else ()
    for ax in _axes(len(shape), axis):
        if ax not in skipped:
            n *= shape[ax]
    return n


def extremum_grad(t, a, ans, axis=None, keepdims=False):
    """max/min: the cotangent goes to the extremal elements, split equally among ties (as JAX)."""
    return unreduce(t, a, axis, keepdims) * extremum_share(a, ans, axis, keepdims)


@constant
def extremum_share(a, ans, axis=None, keepdims=False):
    hits = (a == unreduce(ans, a, axis, keepdims)).astype(snp.result_type(a))
    return hits / unreduce(snp.sum(hits, axis=axis, keepdims=keepdims), a, axis, keepdims)


def prod_grad(t, a, ans, axis=None, keepdims=False):
    return unreduce(t * ans, a, axis, keepdims) / a


def var_grad(t, a, axis=None, ddof=0, keepdims=False):
    centred = a - snp.mean(a, axis=axis, keepdims=True)
    return unreduce(t, a, axis, keepdims) * 2 * snp.conj(centred) / (_count(a, axis) - ddof)


def std_grad(t, a, ans, axis=None, ddof=0, keepdims=False):
    return var_grad(t / (2 * ans), a, axis, ddof, keepdims)


@constant
def max_share(x, y):
    """The share of d max(x, y) that goes to x: 1 where x wins, 1/2 on ties (as JAX)."""
    return snp.where(x > y, 1.0, snp.where(x == y, 0.5, 0.0)).astype(snp.result_type(x, y))


def hypot_share(x, h):
    """d hypot(x, y)/dx with h = hypot(x, y): x / h, and 1/2 at the origin (as JAX, whose
    hypot is max(|x|, |y|) * sqrt(1 + (min / max)^2) there splitting the tie of 0 and 0)."""
    origin = h == 0
    return snp.where(origin, 0.5, x / snp.where(origin, 1, h))


def abs_sign(x):
    """d|x|/dx as JAX defines it: 1 where x >= 0 (so 1 at 0, and at -0.0), -1 below (a
    constant); for complex x, conj(abs_sign(x)) pairs as x / |x| (0 at 0), which is no
    constant: its own derivative is read from this source at second order."""
    if dtypes.is_complex(snp.result_type(x)):
        nonzero = x != 0
        s = snp.where(nonzero, x / snp.where(nonzero, snp.abs(x), 1), 0)
    else:
        s = _real_sign(x)
    return s


def power_log(x):
    """log(x) as d(x ** y)/dy = x ** y * log(x) reads it: log(1) = 0 where x is 0, as JAX
    does, so the derivative there is 0 (x ** y is 0 for y > 0) and not 0 * -inf = nan."""
    return snp.log(snp.where(x == 0, 1, x))


@constant
def _real_sign(x):
    return snp.where(x >= 0, 1, -1).astype(snp.result_type(x))


@constant
def min_share(x, y):
    return snp.where(x < y, 1.0, snp.where(x == y, 0.5, 0.0)).astype(snp.result_type(x, y))


@constant
def clip_mask(a, a_min=None, a_max=None):
    """1 where clip passes `a` through, 0 where a bound took over."""
    inside = snp.ones_like(a)
    if a_min is not None:
        inside = snp.where(a < a_min, 0.0, inside)
    if a_max is not None:
        inside = snp.where(a > a_max, 0.0, inside)
    return inside


@constant
def _matmul_shape(x, y):
    """The shape of x @ y (NumPy's matmul), from the operands' shapes."""
    if np.ndim(x) == 1 and np.ndim(y) == 1:
        shape = ()
    elif np.ndim(x) == 1:
        shape = np.shape(y)[:-2] + np.shape(y)[-1:]
    elif np.ndim(y) == 1:
        shape = np.shape(x)[:-1]
    else:
        shape = np.broadcast_shapes(np.shape(x)[:-2], np.shape(y)[:-2]) + \
            (np.shape(x)[-2], np.shape(y)[-1])
    return shape


def matmul_grad_x(t, x, y):
    """Cotangent of x in x @ y, for every rank NumPy's matmul accepts. `t` may have any shape
    x @ y broadcasts to (an elementwise op's cotangent): it is summed down to x @ y's first, so
    the reverse pass needs no unbroadcast, nor the value x @ y, for it (ad/reverse.py)."""
    t = _summed_to(t, _matmul_shape(x, y))
    if np.ndim(x) == 1 and np.ndim(y) == 1:
        gx = unbroadcast(t * y, x)
    elif np.ndim(x) == 1 and np.ndim(y) == 2:     # y @ t: one matrix product under vmap
        gx = unbroadcast(snp.matmul(y, t), x)
    elif np.ndim(x) == 1:                     # (n,) @ (..., n, m) -> (..., m)
        gx = unbroadcast(snp.matmul(y, snp.expand_dims(t, -1))[..., 0], x)
    elif np.ndim(y) == 1:                     # (..., n, k) @ (k,) -> (..., n)
        gx = unbroadcast(snp.expand_dims(t, -1) * y, x)
    else:
        gx = unbroadcast(snp.matmul(t, snp.swapaxes(y, -1, -2)), x)
    return gx


def matmul_grad_x_of_t(t, x, k):
    """Cotangent of x in x @ k.T (snp.transpose(k): every axis reversed), k's transpose not
    kept for it (ad/vjp_rules.py TRANSPOSED_VJP)."""
    return matmul_grad_x(t, x, snp.transpose(k))


def matmul_grad_t_y(t, x, k):
    """Cotangent of k in x @ k.T."""
    return untranspose(matmul_grad_y(t, x, snp.transpose(k)))


def matmul_grad_y(t, x, y):
    """Cotangent of y in x @ y (`t` as for matmul_grad_x)."""
    t = _summed_to(t, _matmul_shape(x, y))
    if np.ndim(x) == 1 and np.ndim(y) == 1:
        gy = unbroadcast(t * x, y)
    elif np.ndim(x) == 1 and np.ndim(y) == 2:     # an outer product: one dot_general
        gy = unbroadcast(snp.tensordot(x, t, axes=0), y)
    elif np.ndim(x) == 1:
        gy = unbroadcast(snp.expand_dims(x, -1) * snp.expand_dims(t, -2), y)
    elif np.ndim(x) == 2 and np.ndim(y) == 1:     # t @ x: one matrix product under vmap
        gy = unbroadcast(snp.matmul(t, x), y)
    elif np.ndim(y) == 1:
        gy = unbroadcast(snp.matmul(snp.swapaxes(x, -1, -2), snp.expand_dims(t, -1))[..., 0], y)
    else:
        gy = unbroadcast(snp.matmul(snp.swapaxes(x, -1, -2), t), y)
    return gy


def dot_grad_a(t, a, b):
    """Cotangent of a in snp.dot(a, b) (dot contracts a's last axis with b's second-to-last)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        ga = unbroadcast(t * b, a)
    elif np.ndim(b) == 1:
        ga = snp.expand_dims(t, -1) * b
    else:
        ga = snp.tensordot(t, b, axes=(tuple(range(np.ndim(a) - 1, np.ndim(t))),
                                       _all_but_second_to_last(np.ndim(b))))
    return unbroadcast(ga, a)          # (the real part for a real a and a complex b)


@constant
def _all_but_second_to_last(ndim):
    return tuple(i for i in range(ndim) if i != ndim - 2)


def dot_grad_b(t, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        gb = unbroadcast(t * a, b)
    elif np.ndim(b) == 1:
        gb = snp.tensordot(a, t, axes=(tuple(range(np.ndim(a) - 1)), tuple(range(np.ndim(a) - 1))))
    else:
        gb = snp.moveaxis(snp.tensordot(a, t, axes=(tuple(range(np.ndim(a) - 1)),
                                                    tuple(range(np.ndim(a) - 1)))), 0, -2)
    return unbroadcast(gb, b)


def reverse_cumsum(t, axis=None):
    if axis is None:
        t = snp.flip(snp.cumsum(snp.flip(snp.ravel(t)))).reshape(np.shape(t))
    else:
        t = snp.flip(snp.cumsum(snp.flip(t, axis), axis=axis), axis)
    return t


def untranspose(t, axes=None):
    if axes is None:
        t = snp.transpose(t)
    else:
        t = snp.transpose(t, inverse_permutation(axes))
    return t


def unconcatenate(t, arrays, axis=0):
    """Split the cotangent of concatenate back into one piece per input."""
    if axis is None:
        sizes = [int(np.size(a)) for a in arrays]
        pieces = snp.split(t, np.cumsum(sizes)[:-1].tolist())
        return [p.reshape(np.shape(a)) for p, a in zip(pieces, arrays)]
    sizes = [np.shape(a)[axis] for a in arrays]
    return snp.split(t, np.cumsum(sizes)[:-1].tolist(), axis=axis)


def unstack(t, axis=0):
    """The pieces of snp.stack's cotangent (a loop of indexing, so it is differentiable too)."""
    moved = snp.moveaxis(t, axis, 0)
    pieces = []
    for i in range(np.shape(t)[axis]):
        pieces.append(moved[i])
    return pieces


def grad_of_fields(tree, fields=None, **attrs):
    """The cotangent of a container read field by field: `fields` (keys/indices; a string key of
    anything but a dict is an attribute, `p.w`) or `attrs` (attribute names) hold the fields'
    cotangents; every other leaf gets zeros. The cotangent has the container's own class: a
    dict, list, tuple, namedtuple, or registered pytree class (register_pytree_node,
    register_dataclass)."""
    fields = dict(fields or {})
    named = dict(attrs)
    if not isinstance(tree, dict):
        named = {**{k: v for k, v in fields.items() if isinstance(k, str)}, **attrs}
        fields = {k: v for k, v in fields.items() if not isinstance(k, str)}
    if isinstance(tree, types.MethodType) and set(named) == {"__self__"} and not fields:
        return types.MethodType(tree.__func__, named["__self__"])    # (transforms.py
                                                                    # _method_caller's read)
    methods = [k for k in named if _is_method_of(tree, k, named[k])]
    if methods:                 # m.predict: a method's cotangent is that of its object
        others = {k: v for k, v in named.items() if k not in methods}
        rest = grad_of_fields(tree, fields, **others) if others or fields else _zeros_tree(tree)
        return functools.reduce(add_grads, [named[k].__self__ for k in methods], rest)
    if isinstance(tree, dict):
        return {k: fields[k] if k in fields else _zeros_tree(v) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):        # namedtuple
        values = dict(named)        # (p.u and p[0] both read: the two cotangents added)
        for k, v in fields.items():
            if isinstance(k, int):
                name = tree._fields[k]
                values[name] = add_grads(values[name], v) if name in values else v
        # (its zeros as a pytree: a registered namedtuple keeps its static fields as they are)
        return _zeros_tree(tree)._replace(**values)
    if isinstance(tree, (list, tuple)):
        out = [fields[i] if i in fields else _zeros_tree(v) for i, v in enumerate(tree)]
        return type(tree)(out)
    if has_attr(tree, "shape") and not named:       # an array read at integer indices
        out = snp.zeros_like(tree)
        for k, g in fields.items():      # (a read clamped k: added where it read)
            out = out.at[k].add(g, mode="clip")
        return out
    if "__dict__" in named and tree_util.plain_object(tree):     # vars(m), m.__dict__: the
        named = dict(named)                                     # fields' cotangents, a dict
        for k, g in named.pop("__dict__").items():
            named[k] = add_grads(named[k], g) if k in named else g
    if named and not fields and (_is_registered(tree) or tree_util.plain_object(tree)):
        return _registered_with(tree, named)
    if fields and all(isinstance(k, int) for k in fields) and is_user_sequence(tree):
        out = _items_with(tree, fields)     # `u, w = p`, p[0] of the user's container
        return add_grads(out, grad_of_fields(tree, **named)) if named else out
    why = tree_util.plain_refusal(type(tree)) if named and not fields else None
    why = f" ({type(tree).__name__}: {why})" if why else ""
    raise SecantTypeError(f"cannot build the cotangent of a {type(tree).__name__} read field by "
                          f"field{why}; use dicts, lists, tuples, namedtuples, registered pytree "
                          f"classes or plain classes of arrays{where()}")


def _items_with(tree, fields):
    """The cotangent of a container of the user's class (its own __getitem__) read at integer
    indices (`u, w = p`, `p[0]`): its zeros with each index's cotangent added to the leaves
    that item is (tree_util.item_leaves); refused where an item is computed (no leaf of the
    object, so no place for its cotangent)."""
    tree_util.plain_object(tree)        # (a plain class's object: a pytree of its fields)
    places = tree_util.item_leaves(tree, fields)
    if places is None:
        raise SecantTypeError(f"cannot build the cotangent of a {type(tree).__name__} read "
                              f"at an index ({', '.join(map(str, fields))}): its __getitem__ "
                              "gives a value computed from its fields, not one of them; read "
                              "its fields (p.a) or make it a registered pytree whose items are "
                              f"its leaves{where()}")
    out = tree_util.tree_leaves(_zeros_tree(tree))
    for i, g in fields.items():
        where_, item = places[i]
        for k, piece in zip(where_, item.flatten_up_to(tree_util.kinds_as(g, item.unflatten(
                [_Mark() for _ in where_])))):
            out[k] = add_grads(out[k], piece)
    return tree_util.tree_structure(tree).unflatten(out)


def _delegated(tree, name):
    """Whether tree.name is none of tree's own attributes (its class's __getattr__ answers)."""
    return name not in getattr(tree, "__dict__", {}) and \
        inspect.getattr_static(type(tree), name, None) is None and \
        properties.has_getattr_hook(type(tree))


def _is_method_of(tree, name, g):
    """Whether attribute `name` of `tree` is a method of its class, its cotangent `g` that
    method bound to a cotangent of `tree` (transforms.py _method_caller)."""
    return isinstance(g, types.MethodType) and \
        inspect.isfunction(inspect.getattr_static(type(tree), name, None)) and \
        name not in getattr(tree, "__dict__", {})


def _is_registered(tree):
    """A registered pytree object (one with no data fields too: a module holding only its
    activation function is a node with no children, which flattens like a leaf)."""
    return tree_util.is_node_type(type(tree)) \
        or not tree_util.treedef_is_leaf(tree_util.tree_structure(tree))


def _registered_with(tree, attrs):
    """A registered pytree object's cotangent: its zeros (same class), the attributes read set
    to their cotangents; checked to flatten to the same structure. An attribute held in the
    tree's aux data (not one of its leaves) has no cotangent: its reads' sum is dropped."""
    out = properties.copy_object(_zeros_tree(tree))
    delegated = {}
    for name, g in attrs.items():
        if field_in_aux(tree, name):
            continue
        if name not in getattr(tree, "__dict__", {}) and isinstance(
                inspect.getattr_static(type(tree), name, None), (staticmethod, classmethod)):
            continue        # (self.horner of a static method: its class's, no cotangent)
        if _delegated(tree, name):      # (its __getattr__ reads it off a field: g goes there)
            delegated[name] = g
            continue
        object.__setattr__(out, name, g)        # (frozen dataclasses too)
    for name, g in delegated.items():
        out = _added_at(out, _picked(tree, lambda t, name=name: getattr(t, name),
                                     f"{type(tree).__name__}.{name} (its __getattr__)"), g)
    try:
        same = tree_util.tree_structure(out) == tree_util.tree_structure(tree)
    except Exception:       # (aux data holding a value jit traces: its equality is unknown)
        leaves = tree_util.tree_leaves(tree)
        aux = [a for a in attrs if not any(leaf is getattr(tree, a, None) for leaf in leaves)]
        raise SecantTypeError(f"{type(tree).__name__} keeps {', '.join(aux) or 'a field'} in "
                              "its aux data (tree_flatten's second part: a meta field, a struct "
                              "field with pytree_node=False), and it holds a traced value "
                              "here, which aux data cannot carry (it carries no derivative or "
                              f"batch axis and must compare equal); keep it among "
                              f"{type(tree).__name__}'s children, or compute it from static "
                              f"values{where()}") from None
    if not same:
        raise SecantTypeError(f"cannot build the cotangent of a {type(tree).__name__} from the "
                              f"attributes read ({', '.join(attrs)}): setting them does not "
                              f"give the same pytree structure{where()}")
    return out


def object_of(cls, fields, assigned=False):
    """An object of plain class `cls` (secant/tree_util.py plain_object) whose fields are the
    dict `fields` (a class's fields form, transformer/user_objects.py), built without running
    __init__: a constructor known only at run time, its cotangent an object of cls too.
    assigned: the user's code set a field as `m.w = v` or setattr (transformer/normalize.py
    _plain_field_set), which runs a __setattr__ of cls's own: refused for such a class."""
    return tree_unflatten(plain_structure(cls, fields, assigned), tree_leaves(fields))


def fields_of(tree_bar, fields):
    """The cotangents of the fields grad_of_fields(tree, fields) placed: tree_bar's items at
    fields' keys (attributes for string keys of anything but a dict), in their order."""
    if isinstance(tree_bar, dict):
        out = tuple(tree_bar[k] for k in fields)
    else:
        # (a number in aux data: no cotangent; tree_bar holds the primal's value there)
        out = tuple(attribute_dot(tree_bar, tree_bar, k) if isinstance(k, str) else tree_bar[k]
                    for k in fields)
    return out


def fields_at(tree_bar, fields):
    """The cotangent of grad_of_fields' `fields` passed whole (a dict: key -> the field's
    cotangent): tree_bar's fields at its keys, in a dict (fields_of, key by key)."""
    keys = list(fields.keys())
    return dict(zip(keys, fields_of(tree_bar, keys)))


@constant
def _zeros_tree(x):
    """Zeros like each leaf of x: a constant to every derivative (of pick, unmerge, ...)."""
    return tree_util.tree_map(_zeros_leaf, x)


def _zeros_leaf(leaf):
    """Zeros like `leaf`; a float0 leaf (an integer primal's cotangent, as vjp returns it) is
    its own zero."""
    if is_float0(leaf):
        return leaf
    if tree_util.plain_object(leaf):    # (a plain class's object: read as its fields now)
        return _zeros_tree(leaf)
    if rule_helpers.is_static_leaf(leaf):
        method = rule_helpers.zero_method(leaf)
        return leaf if method is None else method
    return snp.zeros_like(leaf)


def is_float0(leaf):
    """Whether `leaf` is a float0 array (an integer value's tangent or cotangent)."""
    return isinstance(leaf, np.ndarray) and leaf.dtype.names == ("float0",)


is_float0.__secant_static_query__ = True       # (a constant for every transform)


def add_at(tree_bar, idx, g):
    """`tree_bar.at[idx].add(g)` for an array; for a list or tuple (a pytree container, such as
    a list of (w, b) layers) the cotangent `g` added to the item (or items, for a slice) at idx."""
    if isinstance(idx, tuple) and len(idx) == 1:
        idx = idx[0]
    if isinstance(tree_bar, dict):              # d[k] of a dict, in a loop over its keys
        return {k: add_grads(v, g) if k == idx else v for k, v in tree_bar.items()}
    if is_user_container(tree_bar):       # obj[i] of the user's object (its __getitem__)
        name = type(tree_bar).__name__
        return _added_at(tree_bar, _picked(tree_bar, lambda t: t[idx],
                                           f"{name}[{idx!r}] (its __getitem__)"), g)
    if not isinstance(tree_bar, (list, tuple)):      # (a read clamped idx: add where it read)
        return tree_bar.at[idx].add(g, mode="clip")
    if isinstance(idx, slice):      # g: one cotangent per item the slice picks
        picked = list(range(len(tree_bar)))[idx]
        gs = [g[j] for j in range(len(picked))]
    else:
        picked = [idx % len(tree_bar)]
        gs = [g]
    out = []
    for k in range(len(tree_bar)):      # (appends in both branches: a Python if under jit)
        if k in picked:
            out.append(add_grads(tree_bar[k], gs[picked.index(k)]))
        else:
            out.append(tree_bar[k])
    return tuple(out) if isinstance(tree_bar, tuple) else out


def add_rows(t, rows, idx, mode=None, axis=0):
    """t with rows[k] added at its row idx[k], for each k: a reverse loop's row cotangents
    (`x_bar.at[i].add(x_item_bar)` each iteration, a copy of x_bar per row: quadratic in the
    rows) gathered in a list and added after the loop, or after each of its row_chunks
    (ad/reverse.py _RowAdds). mode: the scatter's, as the one each row's would have been. Up to
    4096 rows (a chunk's) in one scatter (each scatter copies t); more in 32 pieces (all
    10,000 rows stacked at once peaked at twice their list's memory). axis: the rows are
    t's slices along it (a loop's columns, `x[:, j]`: 1). A list's, a tuple's (`for w in ws`,
    ws a list as it turns out) items are added one by one."""
    if not hasattr(t, "at"):        # a list, tuple, dict or object
        for k, i in enumerate(idx):
            t = add_at(t, i, rows[k])
        return t
    idx = list(idx)
    size = len(rows) if len(rows) <= 4096 else max(256, -(-len(rows) // 32))
    whole = (slice(None),) * axis
    for k in range(0, len(rows), size):
        at = whole + (snp.asarray(idx[k:k + size], dtype="int32"),)
        t = t.at[at].add(snp.stack(rows[k:k + size], axis=axis), mode=mode)
    return t


def row_chunks(r):
    """The range r in consecutive pieces of len(r) / 32 items, 32 at least (ranges
    themselves): a reverse loop gathering its rows' cotangents adds them one piece at a time
    (ad/reverse.py _RowAdds), so that its list holds one piece's rows, not all of them (issue
    20: 10,000 rows of 16 float32s peaked at 7 times the hand-written gradient's memory), and
    the whole cotangent is copied some 32 times, not once a row (linear in the rows). A
    constant for every transform: it reads only the range."""
    size = max(32, -(-len(r) // 32))
    return [r[k:k + size] for k in range(0, len(r), size)]


row_chunks.__secant_static_query__ = True


def zero_rows(t, idx, axis=0):
    """t with its rows idx (distinct) set to 0, in one scatter: a reverse loop zeroing the row
    each iteration of `out = out.at[i].set(v)` wrote (`out_bar.at[i].set(0)`, a copy of out_bar
    per row) does it after the loop (ad/reverse.py _RowAdds)."""
    if len(idx) == 0:
        return t
    return t.at[(slice(None),) * axis + (snp.asarray(list(idx), dtype="int32"),)].set(0)


def add_at_grad(t, idx, item):
    """The cotangent of `item` in add_at(tree, idx, item) (its transpose): t's item at idx (the
    items a slice picks, as item's kind of container or stacked), summed to item's shape."""
    if isinstance(idx, tuple) and len(idx) == 1:
        idx = idx[0]
    if isinstance(t, dict):
        return t[idx]
    if is_user_container(t):
        leaves, _, positions, item_def = _picked(
            t, lambda r: r[idx], f"{type(t).__name__}[{idx!r}] (its __getitem__)")
        return item_def.unflatten([leaves[k] for k in positions])
    if not isinstance(t, (list, tuple)):        # (a read clamped idx: where it read)
        return unbroadcast(t.at[idx].get(mode="clip"), item)
    if not isinstance(idx, slice):
        return t[idx % len(t)]
    picked = list(t[idx])
    if isinstance(item, (list, tuple)):
        return type(item)(picked)
    return snp.stack(picked)


def is_user_container(tree):
    """Whether `tree` is an object of the user's pytree class (obj[i] read by its
    __getitem__, `for v in obj` by its items), not an array nor a built-in container."""
    if isinstance(tree, (list, tuple, dict, np.ndarray, Array)) or hasattr(tree, "at") \
            or not hasattr(type(tree), "__getitem__"):
        return False
    return not tree_util.treedef_is_leaf(tree_util.tree_structure(tree))


def _picked(tree, read, what):
    """(tree's leaves, its structure, the positions of the leaves read(tree) returns, the
    item's structure): read on the tree rebuilt from stand-in leaves (tree[idx] by its
    __getitem__, an attribute its __getattr__ delegates). An item the class computes (not
    leaves of the tree) has no cotangent here: refused, naming `what`."""
    leaves, treedef = tree_util.tree_flatten(tree)
    marks = [_Mark() for _ in leaves]
    try:
        item = read(treedef.unflatten(marks))
    except Exception as e:      # (the class checks its children, or idx is traced)
        item, why = None, f"{type(e).__name__}: {e}"
    else:
        why = "it computes the value from its fields"
    got, item_def = tree_util.tree_flatten(item) if item is not None else ([], None)
    where_ = {id(m): k for k, m in enumerate(marks)}
    if item is None or not all(id(m) in where_ for m in got):
        raise SecantTypeError(f"cannot differentiate {what} through {type(tree).__name__}: "
                              f"{why}; read the field itself{where()}")
    return leaves, treedef, [where_[id(m)] for m in got], item_def


def _added_at(tree_bar, picked, g):
    """tree_bar with g's leaves added to its leaves at the positions _picked found."""
    leaves, treedef, positions, _ = picked
    leaves = list(tree_util.tree_leaves(tree_bar))
    for k, gk in zip(positions, tree_util.tree_leaves(g)):
        leaves[k] = add_grads(leaves[k], gk)
    return treedef.unflatten(leaves)


def split_at(g, n):
    """The cotangents of `a` and `b` in `a + b` of lists or tuples: g's first n items, the rest."""
    return g[:n], g[n:]


def unmerge(g, x, keys):
    """The cotangent of `x` in the dict merge `x | {k: v, ...}` (keys `keys`): g's entries for
    x's keys, zeros where the merge replaced them. `x | y` of bool or integer arrays (a flag a
    loop carries, read as a merge: transformer/containers.py) has none: x's zeros."""
    if not isinstance(x, dict):
        return _zeros_tree(x)
    return {k: _zeros_tree(v) if k in keys else g[k] for k, v in x.items()}


def unmerge_grad(t, g, x, keys):
    """The cotangent of g in unmerge(g, x, keys) (its transpose): t's entries at x's keys that
    were not replaced, zeros at g's other keys (all of them where x is an array)."""
    if not isinstance(x, dict):
        return _zeros_tree(g)
    return {k: t[k] if k in x and k not in keys else _zeros_tree(v) for k, v in g.items()}


def pick(g, y):
    """The cotangent of dict `y` in `x | y`: g's entries at y's keys (none for a bool or integer
    array y: its zeros)."""
    if not isinstance(y, dict):
        return _zeros_tree(y)
    return {k: g[k] for k in y}


def unstack_as(t, arrays, axis=0, inner=0):
    """The cotangent of a list or tuple (`arrays`) stacked by snp.stack: one piece per item,
    in a container of the same type; an item that is a list itself (stacked first, as NumPy
    converts nested lists) gets a list of pieces too, unstacked at `inner` (past the batch
    axes under vmap)."""
    pieces = unstack(t, axis)
    if has_nested_lists(arrays):
        nested = []
        for i in range(len(arrays)):
            if isinstance(arrays[i], (list, tuple)):
                nested.append(unstack(pieces[i], inner))
            else:
                nested.append(pieces[i])
        pieces = list(nested)
    if isinstance(arrays, tuple):
        pieces = tuple(pieces)
    return pieces


def structural(fn):
    """Mark a constant helper that reads only how its arguments are built (lists or arrays,
    how nested), never their values or shapes: one answer for every example of a batch too."""
    fn.__secant_structure__ = fn.__secant_static_query__ = True
    return constant(fn)


class _Mark:
    """A stand-in leaf: which attributes of a tree rebuilt from these hold a leaf."""


def _numeric(x):
    return isinstance(x, (int, float, complex, np.number, np.ndarray, Array)) \
        and not isinstance(x, bool)


@structural
def aux_attribute(tree, name):
    """Whether attribute `name` of pytree object `tree` holds a number that is none of the tree's
    leaves: aux data of a registered class (tree_flatten's second result, register_dataclass's
    meta_fields). Its tangent and cotangent are zero: a tangent object built with the primal's
    structure holds the primal's own value there. Decided by rebuilding the tree from stand-in
    leaves (the attribute then holds a stand-in, or not); by identity with the leaves when the
    class cannot be rebuilt from stand-ins. Reads the tree's structure only."""
    value = getattr(tree, name, None)
    if not _numeric(value) or isinstance(tree, (dict, list, tuple)):
        return False
    leaves, treedef = tree_util.tree_flatten(tree)
    if tree_util.treedef_is_leaf(treedef):
        return False
    if isinstance(value, (np.ndarray, Array)) and any(leaf is value for leaf in leaves):
        return False            # (an array field: the common case, read cheaply)
    try:
        rebuilt = getattr(treedef.unflatten([_Mark() for _ in leaves]), name)
    except Exception:          # (a class whose unflatten checks its children): by identity
        return not any(leaf is value for leaf in leaves)
    return not any(isinstance(leaf, _Mark) for leaf in tree_util.tree_leaves(rebuilt))


@structural
def field_in_aux(tree, name):
    """aux_attribute(tree, name) of field `name` read by generated code; a computed attribute
    (a property's) read as a field is refused: code that guessed, when it was transformed,
    that no class computes `name` (transformer/properties.py PlainReads) met an object of a
    class that does. Its cotangent or tangent as a field would be wrong (set through the
    property, or dropped as aux data): refused, never a wrong value."""
    how = properties.computed_how(tree, name)
    if how is not None:
        raise _computed_refusal(tree, name, how)
    return aux_attribute(tree, name)


def _computed_refusal(tree, name, how):
    """The refusal of field_in_aux, marked met_in_call: the code generated now reads `name`
    through the class's code, and the call runs once more (secant/transforms.py
    rerun_if_met)."""
    if how == "computed by __getattr__ from the name":
        e = SecantTypeError(f"cannot differentiate the read of {type(tree).__name__}."
                            f"{name} as a field: {type(tree).__name__}.__getattr__ computes it "
                            f"from the name (no field holds it), which secant found only when "
                            f"the code ran; it reads {name} through that code from the next "
                            f"call (or name it in __getattr__: `if name == {name!r}`, or read "
                            f"it in a method of the class){where()}")
    else:
        e = SecantTypeError(f"cannot differentiate the read of {type(tree).__name__}."
                            f"{name}, {how}, as a field (secant met "
                            f"{type(tree).__name__} only when the code ran): read it in one "
                            f"of the class's methods (self.{name}, read by its getter), make "
                            f"{type(tree).__name__} reachable from the function's globals or "
                            f"closure, or call the computation directly{where()}")
    e.met_in_call = name
    return e


def is_user_sequence(tree):
    """Whether `tree` is an object of the user's class with its own __iter__ or __len__ (a
    container a loop reads item by item), not an array nor a built-in container."""
    kind = type(tree)
    if isinstance(tree, (list, tuple, dict, str, bytes, range, np.ndarray, Array)) \
            or not properties.user_module(kind.__module__):
        return False
    own = {n for k in kind.__mro__[:-1] for n in vars(k)}
    return "__iter__" in own or "__len__" in own


@structural
def count_items(tree):
    """len(tree) for `for v in tree` of a parameter, which the transforms read as tree[0],
    tree[1], ...: for an object of the user's class, counted on the object rebuilt from
    stand-in leaves (the same for a batched object as for one example), and refused where
    its __iter__ yields other than those items (or it has no __getitem__), never read item by
    item as other values."""
    if not is_user_sequence(tree):
        return len(tree)
    kind = type(tree)
    try:
        leaves, treedef = tree_util.tree_flatten(tree)
        rebuilt = tree if tree_util.treedef_is_leaf(treedef) else \
            treedef.unflatten([_Mark() for _ in leaves])    # (a plain class's: itself)
        n = len(rebuilt)
        items = list(iter(rebuilt))
        agree = n == len(items) and all(a is rebuilt[i] for i, a in enumerate(items))
    except Exception:       # (no __getitem__, or items it computes)
        agree = False
    if not agree:
        raise SecantTypeError(f"cannot transform `for ... in` or `a, b = ` a {kind.__name__} "
                              "(its __iter__): secant reads such a loop or unpacking item by "
                              "item (obj[0], obj[1], ...), "
                              f"which {kind.__name__}'s __getitem__ does not give; loop over "
                              f"its fields or a list of them{where()}")
    return n


count_items.__secant_len__ = True    # (read as len: vmap writes example_len)


@structural
def check_unpacked(tree, n):
    """`a, b = p` of a parameter, which the transforms read as p[0], p[1]: Python's ValueError
    where a list, tuple, dict or container of the user's class holds other than n items, and
    count_items' check that such a container's __iter__ (what Python's unpacking calls) yields
    what its __getitem__ gives. (An array, batched or not, is read at its indices as written.)"""
    if not isinstance(tree, (list, tuple, dict)) and not is_user_sequence(tree):
        return
    got = count_items(tree)
    if got != n:
        raise ValueError(f"too many values to unpack (expected {n})" if got > n else
                         f"not enough values to unpack (expected {n}, got {got})")


check_unpacked.__secant_check__ = True      # (a statement: no value)


@structural
def check_integer_power(x, n):
    """`x ** n` of a negative integer literal n that nothing reads (transformer/walker.py drops
    the power, keeps this): JAX's TypeError where x is an integer or bool array, which every
    JAX transform raises as it traces the statement; nothing for a float array or a Python
    number (Python's own power). Reads x's dtype only."""
    dt = getattr(x, "dtype", None)
    if isinstance(x, (int, float, complex)) or not isinstance(dt, np.dtype) or \
            dt.kind not in "iub":
        return
    raise SecantTypeError(f"Integers cannot be raised to negative powers, got {dt.name} ** {n} "
                          f"(as in JAX); make the base a float, e.g. x.astype(float) ** {n}"
                          f"{where()}")


check_integer_power.__secant_check__ = True     # (a statement: no value)
structural(is_user_container)       # (add_at's branch for them: a static choice)
structural(is_user_sequence)


@structural
def static_attribute(tree, name):
    """`tree.name` where Python needs its concrete value (range(self.n), int(self.n) of a
    differentiated or batched object): a number in the tree's aux data, the same for every
    perturbation and example; one of its leaves is refused, as JAX refuses a tracer there. A
    Python int leaf is concrete (the transforms give a differentiated or batched argument's
    leaves as arrays, so it is an object built inside the function from constants: equinox's
    `combine(params, static)`), and read as it is, as JAX does."""
    value = getattr(tree, name)
    if _numeric(value) and type(value) is not int and not aux_attribute(tree, name):
        raise TracerIntegerConversionError(
            f"{type(tree).__name__}.{name} is one of the pytree's leaves (differentiated or "
            f"batched): Python needs its concrete value; keep it in the aux data "
            f"(tree_flatten's second result, register_dataclass's meta_fields) or compute it "
            f"from static values{where()}")
    return value


_BROADCAST_INTS = {}    # id(array) -> (a weak reference to it, the Python int it broadcasts)
# A note is a fact about one immutable array (every element is the int), never about the int:
# a Python int takes no weak reference, so the 2 of one dict never marks another 2, and an
# array dead is forgotten before its id can be reused. It lives only inside the vmap that
# made the array: vmap's outputs are forgotten (forget_broadcast_ints), as JAX returns them.


def note_broadcast_int(array, value):
    """Records that `array` is the Python int `value` broadcast over a batch (vmap's
    broadcast_batch of a dict {'w': x, 'n': 2} holding a batched x: its 'n' item is an array
    of the one int, which static_item reads back as that int, as JAX's dict keeps it)."""
    key = id(array)
    try:
        ref = weakref.ref(array, lambda _: _BROADCAST_INTS.pop(key, None))
    except TypeError:
        return array
    _BROADCAST_INTS[key] = (ref, value)
    return array


def forget_broadcast_ints(tree):
    """tree with no leaf noted any more (note_broadcast_int): what a vmap returns to its caller
    is an array of ints like any other, as JAX's is (vmap(g)(vmap(f)(x)) maps it, and
    range(d['n']) of it is refused there), so a note never outlives the vmap that made it."""
    if _BROADCAST_INTS:
        for leaf in tree_util.tree_leaves(tree):
            hit = _BROADCAST_INTS.get(id(leaf))
            if hit is not None and hit[0]() is leaf:
                del _BROADCAST_INTS[id(leaf)]
    return tree


@structural
def broadcast_int(array):
    """The Python int `array` broadcasts (note_broadcast_int), else None."""
    hit = _BROADCAST_INTS.get(id(array))
    return hit[1] if hit is not None and hit[0]() is array else None


@structural
def example_scalar(x):
    """The Python scalar a batched value broadcasts (vmap's broadcast_batch of the 2 or 0.5 in a
    dict beside batched values: note_broadcast_int), else x: what a type test reads of each
    example (`isinstance(x, jax.Array)` of the 2 is False, as JAX's dict keeps the int)."""
    hit = broadcast_int(x)
    return x if hit is None else hit


@structural
def check_index(*parts):
    """The tracked values of a constant's index (`logp[snp.arange(n), labels]` of grad with
    respect to the labels): integer or bool, with no derivative, pass; a float one (`np.r_[x,
    y]`, a table's `t[x]`) is refused, as JAX's TypeError refuses a float index, never read as
    a constant (its derivative would be lost: zero). Dtypes only: one answer for every
    example of a batch (vmap calls it as it is)."""
    for part in tree_leaves(parts):
        dt = getattr(part, "dtype", None)
        if isinstance(part, (float, complex)) or (dt is not None and dtypes.is_inexact(dt)):
            raise SecantTypeError(
                f"an index holds a differentiated {np.dtype(dt or type(part)).name} value: "
                "an index is integer or bool, with no derivative (for joining arrays use "
                f"snp.r_, snp.concatenate or snp.stack){where()}")


@structural
def static_truth(value):
    """The truth value of what a function known only at run time returned, tested by an `if`
    under vmap (`x if keep(x) else None`, keep a parameter): a Python bool (or int) it gave,
    the same for every example (broadcast by its batched form: note_broadcast_int); a value
    that differs per example is refused, as JAX refuses bool() of a tracer."""
    hit = broadcast_int(value)
    if hit is not None:
        return bool(hit)
    if type(value) in (bool, int):
        return bool(value)
    raise TracerBoolConversionError(
        f"if on a batched value: it has one truth value per example, not a single Python "
        f"bool; use snp.where(cond, a, b) or lax.cond{where()}")


@structural
def static_item(container, key):
    """`container[key]` where Python needs its concrete value (range(d["n"]) of a dict that
    holds differentiated or batched values beside the int): a Python int (or str), the same
    for every perturbation and example; anything else is refused, as JAX refuses a tracer."""
    value = container[key]
    if broadcast_int(value) is not None:    # a Python int vmap broadcast beside batched items
        return broadcast_int(value)
    if isinstance(value, (Array, np.ndarray)) and np.issubdtype(value.dtype, np.integer):
        raise TracerIntegerConversionError(
            f"the item {key!r} is an array of ints {value!r}, batched (vmap maps it over the "
            f"examples): Python needs one int for all of them, as in JAX; give the item "
            f"in_axes None (in_axes=({{{key!r}: None, ...}},)) or keep it a Python int beside "
            f"the batched values{where()}")
    if not isinstance(value, (int, str)) or isinstance(value, (np.generic, Array)):
        # (a float or an array may be a differentiated or batched leaf; a Python int or str
        # never is: grad refuses integer inputs, vmap batches arrays)
        raise TracerIntegerConversionError(
            f"the item {key!r} is {type(value).__name__} {value!r}, which may be differentiated "
            f"or batched: Python needs its concrete value; keep it a Python int (or compute it "
            f"from static values){where()}")
    return value


def attribute_dot(tree, tree_dot, name):
    """The tangent of `tree.name` from the tangent object `tree_dot` (built with tree's
    structure): zero for aux data (aux_attribute), which tree_dot holds as the primal's value."""
    if field_in_aux(tree, name):
        out = zeros_like_tree(getattr(tree, name))
    else:
        out = getattr(tree_dot, name)
    return out


@structural
def has_nested_lists(arrays):
    """Whether a stacked list holds lists (two levels; deeper ones are refused, not guessed)."""
    nested = False
    for a in arrays:
        if isinstance(a, (list, tuple)):
            nested = True
            if any(isinstance(b, (list, tuple)) for b in a):
                raise SecantTypeError("secant differentiates a stack of lists nested two deep; "
                                      f"stack the inner lists first{where()}")
    return nested


@structural
def kind_of(x):
    """What turns the cotangents of x's items back into x's cotangent: list or tuple for a list
    or tuple, snp.stack for an array (tuple(x) of an array is its rows)."""
    if isinstance(x, (list, tuple)):
        return type(x)
    return snp.stack


def add_n_grad(t, arrays):
    """The cotangent of the items of `sum(arrays)`, a list or tuple: t summed to each one's
    shape."""
    pieces = []
    for a in arrays:
        pieces.append(unbroadcast(t, a))
    if isinstance(arrays, tuple):
        pieces = tuple(pieces)
    return pieces


def add_grads(a, b):
    """Sum of two cotangents that may be containers (pytrees). The cotangents of one list
    may come as a list and as a tuple (a helper's `tuple(pieces)`, differentiated again): they
    add item by item, as a's kind, at any depth (`{'layers': [...]}` and `{'layers': (...)}`:
    the cotangent of a module's list of layers, one of them unpacked)."""
    return tree_util.tree_map(_add_leaves, a, tree_util.kinds_as(b, a))


def grads_as(t, x):
    """The cotangent `t` of `x` in add_grads(x, y), a sum of two cotangents (pytrees) of one
    value: each float leaf in x's leaf's float dtype, as JAX's convert_element_type transposes
    (a float32 x met a float64 y: their sum is float64, x's part of its cotangent float32).
    grad's wrapper casts a parameter's cotangent with it too."""
    dt, dx = properties.get_attr(t, "dtype"), properties.get_attr(x, "dtype")
    if isinstance(dt, np.dtype) and isinstance(dx, np.dtype):       # (the common case)
        return t.astype(dx) if dt != dx and dt.kind == dx.kind == "f" else t
    leaves = tree_util.tree_leaves(t)
    if len(leaves) == 1 and leaves[0] is t:
        return t
    try:
        return tree_util.tree_map(grads_as, t, x)
    except (TypeError, ValueError):
        return t            # (a cotangent of another structure: as it came)


def _add_leaves(u, v):
    # the cotangent of a branch's placeholder (backends/placeholder.py) is one too: it adds
    # nothing (the value it stands for is never read where it is unset)
    if isinstance(u, Undefined):
        return v
    if isinstance(v, Undefined):
        return u
    if type(u) is type(v) and tree_util.plain_object(u):   # (read as its fields now)
        return add_grads(u, v)
    if rule_helpers.is_static_leaf(u) and rule_helpers.is_static_leaf(v) and (
            u == v or not isinstance(u, types.MethodType)
            and not isinstance(v, types.MethodType)):
        return u        # (no derivative: two functions a closure object holds, say)
    if isinstance(u, types.MethodType) and isinstance(v, types.MethodType) \
            and u.__func__ is v.__func__:   # a method's cotangent: bound to its object's
        return types.MethodType(u.__func__, add_grads(u.__self__, v.__self__))
    if is_float0(u) and is_float0(v):
        return u        # (integer values' cotangents: zeros without values)
    return u + v


from secant.ad import rule_helpers  # noqa: E402  (the rules' own helpers)
from secant.ad.rule_helpers import inverse_permutation, zeros_like_tree  # noqa: E402
from secant.ad import fft_rules  # noqa: E402  (lax.fft's transpose)
from secant.ad.fft_rules import fft_transpose  # noqa: E402,F401

NAMES = rule_helpers.NAMES + fft_rules.NAMES + ("fields_of", "fields_at", "grad_seed", "grad_seed_like", "grad_seed_scaled", "unbroadcast", "unreduce", "mean_grad", "unreduce_to", "mean_grad_to", "broadcast_shape", "shape_of", "extremum_grad", "prod_grad",
         "var_grad", "std_grad", "max_share", "min_share", "hypot_share", "abs_sign", "power_log", "clip_mask", "matmul_grad_x", "matmul_grad_x_of_t", "matmul_grad_t_y",
         "matmul_grad_y", "dot_grad_a", "dot_grad_b", "reverse_cumsum", "untranspose",
         "unconcatenate", "unstack", "grad_of_fields", "object_of", "add_grads", "grads_as", "add_at", "add_rows", "row_chunks", "zero_rows", "add_at_grad",
         "kind_of", "split_at", "attribute_dot", "count_items", "check_unpacked", "check_integer_power", "static_attribute", "static_item", "static_truth", "check_index", "example_scalar",
         "unmerge", "unmerge_grad", "pick", "unstack_as", "add_n_grad", "real_grad", "imag_grad",
         "cast_grad")
# the linear-algebra ops' derivatives (ad/linalg_rules.py, read as source)
from secant.ad.linalg_rules import (NAMES as _LINALG_NAMES, cholesky_grad, cholesky_jvp,  # noqa: E402,F401,E501
                                    lu_grad, lu_jvp, triangular_solve_grad_a,
                                    triangular_solve_grad_b, triangular_solve_jvp_a)
NAMES = NAMES + _LINALG_NAMES
# secant.tree_util's own functions, as generated code calls them (ops of transformer/ops.py)
TREE_NAMES = ("tree_leaves", "tree_unflatten", "tree_structure", "tree_leaves_as")


def by_name():
    """Every helper generated code may call, by the name it uses (a read-only table, built
    once: every transform asks it several times, issue 19)."""
    global _BY_NAME
    if _BY_NAME is None:
        from secant.ad import custom_checks, jvp_helpers    # forward mode's helpers too, and
        _BY_NAME = types.MappingProxyType({                 # the custom rules' checks
            **{n: getattr(rule_helpers, n, None) or globals()[n] for n in NAMES},
            **{n: getattr(tree_util, n) for n in TREE_NAMES},
            **jvp_helpers.by_name(), **custom_checks.by_name()})
    return _BY_NAME


_BY_NAME = None


# --- a Jacobian as source (secant/transforms.py _Jacobian.__secant_generated__) ------------------
# An argument or output may be any pytree (a dict of parameters, a registered module object, a
# tuple): its leaves laid out one after another, as _Jacobian._assemble lays them out.
@structural
def one_array(x):
    """Whether x is one array (a leaf), not a pytree of them."""
    return tree_util.treedef_is_leaf(tree_util.tree_structure(x))


@constant
def leaf_shapes(x):
    """The shapes of x's leaves (a list of tuples of ints)."""
    out = []
    for leaf in tree_util.tree_leaves(x):
        out.append(np.shape(leaf))
    return out


@constant
def leaf_splits(x):
    """Where x's leaves start in their concatenation, the first left out (snp.split's)."""
    out, k = [], 0
    for leaf in tree_util.tree_leaves(x)[:-1]:
        k += int(np.size(leaf))
        out.append(k)
    return out


@constant
def basis_like(x, limit=None):
    """The standard basis a Jacobian is built over: one one-hot array like x per element of x,
    stacked (shape (x.size,) + x.shape); for a pytree x, a pytree like x whose leaves are the
    basis vectors' parts (shape (n,) + leaf.shape, n the size of all leaves). limit: that of
    grad by forward mode (secant/transforms.py FORWARD_FALLBACK_LIMIT): more elements refused."""
    if one_array(x):
        n = np.size(x)
        _check_forward_size(n, limit)
        return snp.reshape(snp.eye(n, dtype=snp.result_type(x)), (n,) + np.shape(x))
    leaves = tree_util.tree_leaves(x)
    _check_array_leaves(leaves)
    n = sum(int(np.size(leaf)) for leaf in leaves)
    _check_forward_size(n, limit)
    parts = snp.split(snp.eye(n, dtype=snp.result_type(*leaves)), leaf_splits(x), axis=1)
    return tree_unflatten(tree_util.tree_structure(x), [
        snp.reshape(part, (n,) + np.shape(leaf)) for part, leaf in zip(parts, leaves)])


def _check_forward_size(n, limit):
    if limit is not None and n > limit:
        raise SecantError(
            "this gradient (grad, value_and_grad or vjp) is computed by forward mode, one jvp per "
            "input element, "
            "because its reverse pass would run a call that sets Python state (a counter) again "
            f"after later calls changed it; its input has {n} elements, more than "
            f"secant.transforms.FORWARD_FALLBACK_LIMIT = {limit}, so it would run the function "
            f"{n} times: refused. Call the stateful function once outside the differentiated "
            "function and pass its value in (reverse mode then applies), use secant.jacfwd "
            "for forward mode on purpose, or raise FORWARD_FALLBACK_LIMIT" + where())


def _check_array_leaves(leaves):
    for leaf in leaves:
        if not hasattr(leaf, "shape") and not isinstance(leaf, (int, float, complex)):
            raise SecantTypeError(f"a jacobian read by another transform takes and returns "
                                  f"pytrees of arrays, not a {type(leaf).__name__}" + where())


def from_columns(columns, x):
    """A Jacobian (out.shape + x.shape) from its columns: the jvps along basis_like(x); for a
    pytree output, one such Jacobian per leaf (columns: a pytree like the output)."""
    if one_array(columns):
        return columns_as(columns, x)
    return tree_util.tree_map(lambda c: columns_as(c, x), columns)


def columns_as(c, x):
    """One output leaf's columns (n, *o.shape) as its Jacobian: an array o.shape + x.shape, or
    for a pytree x a pytree like x of o.shape + leaf.shape arrays."""
    if one_array(x):
        return snp.reshape(snp.moveaxis(c, 0, -1), np.shape(c)[1:] + np.shape(x))
    parts = snp.split(snp.moveaxis(c, 0, -1), leaf_splits(x), axis=-1)
    return tree_util.tree_map(lambda p, v: snp.reshape(p, np.shape(p)[:-1] + np.shape(v)),
                              tree_unflatten(tree_util.tree_structure(x), parts), x)


def from_rows(rows, out, x):
    """A Jacobian (out.shape + x.shape) from its rows: the vjps of basis_like(out); for x a
    pytree (jacrev in a dict of parameters), one such array per leaf of x; for a pytree output,
    a pytree like it of those. `out` gives only a structure and shapes (its tangent is never
    read, transformer/containers.py _STRUCTURE_ARGS): each output leaf's rows go with its start
    and shape, Python ints even under vmap (a list of (start, leaf) pairs would be batched
    whole, its starts with it)."""
    if one_array(out):
        return rows_as(rows, np.shape(out), x)
    starts = [0] + leaf_splits(out)
    return tree_unflatten(tree_util.tree_structure(out), [
        rows_as(rows_between(rows, lo, hi), shape, x)
        for lo, hi, shape in zip(starts, starts[1:] + [None], leaf_shapes(out))])


def rows_between(rows, lo, hi):
    """The rows lo:hi (one output leaf's) of every leaf of rows."""
    return tree_util.tree_map(lambda r: r[lo:hi], rows)


def rows_as(rows, shape, x):
    """The rows (n, *shape) of one output leaf of that shape as its Jacobian (shape + x.shape)."""
    if one_array(x):
        return snp.reshape(rows, shape + np.shape(x))
    return tree_util.tree_map(lambda r, v: snp.reshape(r, shape + np.shape(v)), rows, x)

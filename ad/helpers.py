"""Small functions that generated derivative code calls by name, so it reads like the maths.

Each is written with secant.numpy, so it runs eagerly and under jit, and each has a derivative
rule of its own (ad/vjp_rules.py) so generated code can be differentiated again.
"""
import numpy as np

import secant.numpy as snp
from secant.backends.errors import SecantTypeError, where
from secant.backends import dtypes


def grad_seed(out):
    """The cotangent that starts reverse mode for grad: one, for a real scalar output."""
    shape = np.shape(out)
    if shape != ():
        raise SecantTypeError("grad requires a scalar output (use jacrev or vjp for others); "
                              f"the output had shape {shape}{where()}")
    dt = snp.result_type(out)
    if not dtypes.is_inexact(dt):
        raise SecantTypeError(f"grad requires a floating-point output, got {dt.name}{where()}")
    return snp.ones_like(out)


def unbroadcast(g, x):
    """Sum `g` down to the shape of `x`: the derivative of NumPy broadcasting."""
    shape = np.shape(x)
    if np.shape(g) == shape:
        return g
    lead = len(np.shape(g)) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                      if d == 1 and np.shape(g)[i + lead] != 1)
    g = snp.sum(g, axis=axes) if axes else g
    return snp.reshape(g, shape)


def _axes(ndim, axis):
    if axis is None:
        return tuple(range(ndim))
    axis = axis if isinstance(axis, tuple) else (axis,)
    return tuple(a % ndim for a in axis)


def unreduce(g, a, axis=None, keepdims=False):
    """Broadcast the cotangent of a reduction back over the reduced axes of `a`."""
    if not keepdims:
        g = snp.expand_dims(g, _axes(np.ndim(a), axis)) if np.ndim(a) else g
    return snp.broadcast_to(g, np.shape(a))


def mean_grad(g, a, axis=None, keepdims=False):
    count = 1
    for ax in _axes(np.ndim(a), axis):
        count *= np.shape(a)[ax]
    return unreduce(g, a, axis, keepdims) / count


def extremum_grad(g, a, ans, axis=None, keepdims=False):
    """max/min: the cotangent goes to the extremal elements, split equally among ties (as JAX)."""
    hits = (a == unreduce(ans, a, axis, keepdims)).astype(snp.result_type(a))
    share = hits / unreduce(snp.sum(hits, axis=axis, keepdims=keepdims), a, axis, keepdims)
    return unreduce(g, a, axis, keepdims) * share


def prod_grad(g, a, ans, axis=None, keepdims=False):
    return unreduce(g * ans, a, axis, keepdims) / a


def var_grad(g, a, axis=None, ddof=0, keepdims=False):
    count = 1
    for ax in _axes(np.ndim(a), axis):
        count *= np.shape(a)[ax]
    centred = a - snp.mean(a, axis=axis, keepdims=True)
    return unreduce(g, a, axis, keepdims) * 2 * centred / (count - ddof)


def std_grad(g, a, ans, axis=None, ddof=0, keepdims=False):
    return var_grad(g / (2 * ans), a, axis, ddof, keepdims)


def max_share(x, y):
    """The share of d max(x, y) that goes to x: 1 where x wins, 1/2 on ties (as JAX)."""
    dt = snp.result_type(x, y)
    return snp.where(x > y, 1.0, snp.where(x == y, 0.5, 0.0)).astype(dt)


def min_share(x, y):
    dt = snp.result_type(x, y)
    return snp.where(x < y, 1.0, snp.where(x == y, 0.5, 0.0)).astype(dt)


def clip_mask(a, a_min=None, a_max=None):
    """1 where clip passes `a` through, 0 where a bound took over."""
    inside = snp.ones_like(a)
    if a_min is not None:
        inside = snp.where(a < a_min, 0.0, inside)
    if a_max is not None:
        inside = snp.where(a > a_max, 0.0, inside)
    return inside


def matmul_grad_x(g, x, y):
    """Cotangent of x in x @ y, for every rank NumPy's matmul accepts."""
    if np.ndim(x) == 1 and np.ndim(y) == 1:
        return g * y
    if np.ndim(x) == 1:                       # (n,) @ (..., n, m) -> (..., m)
        return unbroadcast(snp.matmul(y, snp.expand_dims(g, -1))[..., 0], x)
    if np.ndim(y) == 1:                       # (..., n, k) @ (k,) -> (..., n)
        return unbroadcast(snp.expand_dims(g, -1) * y, x)
    return unbroadcast(snp.matmul(g, snp.swapaxes(y, -1, -2)), x)


def matmul_grad_y(g, x, y):
    """Cotangent of y in x @ y."""
    if np.ndim(x) == 1 and np.ndim(y) == 1:
        return g * x
    if np.ndim(x) == 1:
        return unbroadcast(snp.expand_dims(x, -1) * snp.expand_dims(g, -2), y)
    if np.ndim(y) == 1:
        return unbroadcast(snp.matmul(snp.swapaxes(x, -1, -2), snp.expand_dims(g, -1))[..., 0], y)
    return unbroadcast(snp.matmul(snp.swapaxes(x, -1, -2), g), y)


def dot_grad_a(g, a, b):
    """Cotangent of a in snp.dot(a, b) (dot contracts a's last axis with b's second-to-last)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    if np.ndim(b) == 1:
        return snp.expand_dims(g, -1) * b
    axes_g = tuple(range(np.ndim(a) - 1, np.ndim(g)))
    b_axes = tuple(i for i in range(np.ndim(b)) if i != np.ndim(b) - 2)
    return snp.tensordot(g, b, axes=(axes_g, b_axes))


def dot_grad_b(g, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    lead = tuple(range(np.ndim(a) - 1))
    gb = snp.tensordot(a, g, axes=(lead, lead))         # (k, *b_free)
    if np.ndim(b) == 1:
        return gb
    return snp.moveaxis(gb, 0, -2) if np.ndim(b) > 2 else gb


def reverse_cumsum(g, axis=None):
    if axis is None:
        return snp.flip(snp.cumsum(snp.flip(snp.ravel(g)))).reshape(np.shape(g))
    return snp.flip(snp.cumsum(snp.flip(g, axis), axis=axis), axis)


def untranspose(g, axes=None):
    if axes is None:
        return snp.transpose(g)
    return snp.transpose(g, tuple(np.argsort([a % np.ndim(g) for a in axes])))


def unconcatenate(g, arrays, axis=0):
    """Split the cotangent of concatenate back into one piece per input."""
    if axis is None:
        sizes = [int(np.size(a)) for a in arrays]
        pieces = snp.split(g, np.cumsum(sizes)[:-1].tolist())
        return [p.reshape(np.shape(a)) for p, a in zip(pieces, arrays)]
    sizes = [np.shape(a)[axis] for a in arrays]
    return snp.split(g, np.cumsum(sizes)[:-1].tolist(), axis=axis)


def unstack(g, axis=0):
    return [snp.squeeze(p, axis) for p in snp.split(g, np.shape(g)[axis], axis=axis)]


def grad_of_fields(tree, fields=None, **attrs):
    """The cotangent of a container read field by field: `fields` (keys/indices) or `attrs`
    (attribute names) hold the fields' cotangents; every other leaf gets zeros."""
    fields = dict(fields or {})
    if isinstance(tree, dict):
        return {k: fields[k] if k in fields else _zeros_tree(v) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):        # namedtuple
        values = {**{tree._fields[k]: v for k, v in fields.items() if isinstance(k, int)}, **attrs}
        return type(tree)(*[values[f] if f in values else _zeros_tree(getattr(tree, f))
                            for f in tree._fields])
    if isinstance(tree, (list, tuple)):
        out = [fields[i] if i in fields else _zeros_tree(v) for i, v in enumerate(tree)]
        return type(tree)(out)
    raise SecantTypeError(f"cannot build the cotangent of a {type(tree).__name__} read field by "
                          f"field; use dicts, lists, tuples or namedtuples of arrays{where()}")


def _zeros_tree(x):
    from secant import tree_util
    return tree_util.tree_map(lambda leaf: snp.zeros_like(leaf), x)


def add_grads(a, b):
    """Sum of two cotangents that may be containers (pytrees)."""
    from secant import tree_util
    return tree_util.tree_map(lambda u, v: u + v, a, b)


NAMES = ("grad_seed", "unbroadcast", "unreduce", "mean_grad", "extremum_grad", "prod_grad",
         "var_grad", "std_grad", "max_share", "min_share", "clip_mask", "matmul_grad_x",
         "matmul_grad_y", "dot_grad_a", "dot_grad_b", "reverse_cumsum", "untranspose",
         "unconcatenate", "unstack", "grad_of_fields", "add_grads")

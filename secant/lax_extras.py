"""lax.associative_scan and lax.reduce, written with secant's ops and read by the transforms as
source (`__secant_by_source__`), so grad, jvp and vmap follow from the ops' rules.

associative_scan is the doubling (Hillis-Steele) prefix scan: log2(n) rounds, round k combining
each element with the one 2**k before it by one call of `fn` on whole slices (fn must be
associative and work on slices along `axis`, as JAX requires). reverse=True scans the flipped
elements and flips back: result[i] = fn(result[i + 1], elems[i]), as jax.lax's gives.

reduce with a monoid computation (lax.add, lax.mul, lax.max, lax.min, their secant.numpy or
NumPy spellings, or the logical/bitwise and/or) is the matching secant.numpy reduction over
`dimensions`, combined once with init_values (JAX's value for these); any other computation
(and several operands, the computation then taking and returning tuples) reduces by pairs in
order, log2(n) rounds of one call on whole arrays each, then combines once with init_values."""
import operator

import numpy as np

import secant.numpy as snp
from secant import lax, tree_util
from secant.backends.errors import SecantTypeError, SecantValueError, where

__secant_by_source__ = True      # transforms read this module like user code


def _scan_array(fn, x, n, axis):
    """The scan along `axis`; fn sees slices along it (the axis moved to the front only to
    slice, and back before each call)."""
    x = snp.moveaxis(x, axis, 0)
    shift = 1
    while shift < n:
        earlier = snp.moveaxis(x[:n - shift], 0, axis)
        later = snp.moveaxis(x[shift:], 0, axis)
        combined = snp.moveaxis(fn(earlier, later), axis, 0)
        x = snp.concatenate([x[:shift], combined], 0)
        shift = shift * 2
    return snp.moveaxis(x, 0, axis)


def _scan_tuple(fn, xs, n, axis):
    # (each comprehension names its element differently: a name shared by comprehensions
    # inside and outside the while loop is read as a loop carry by the transforms)
    front = tuple(snp.moveaxis(e, axis, 0) for e in xs)
    shift = 1
    while shift < n:
        earlier = tuple(snp.moveaxis(a[:n - shift], 0, axis) for a in front)
        later = tuple(snp.moveaxis(b[shift:], 0, axis) for b in front)
        combined = tree_util.tree_leaves(fn(earlier, later))    # (a list, whatever fn returns)
        front = tuple(snp.concatenate([front[k][:shift], snp.moveaxis(combined[k], axis, 0)],
                                      0) for k in range(len(front)))
        shift = shift * 2
    return tuple(snp.moveaxis(r, 0, axis) for r in front)


def associative_scan(fn, elems, reverse=False, axis=0):
    """The inclusive scan of `elems` (an array, or a tuple or list of arrays) along `axis` with
    the associative function fn: result[i] = fn(result[i - 1], elems[i])."""
    if isinstance(elems, (tuple, list)):
        out = _scan_sequence(fn, elems, reverse, axis)
    else:
        out = _scan_single(fn, elems, reverse, axis)
    return out


def _scan_single(fn, elems, reverse, axis):
    n = snp.shape(elems)[axis]
    if reverse:
        elems = snp.flip(elems, axis)
    out = _scan_array(fn, elems, n, axis)
    if reverse:
        out = snp.flip(out, axis)
    return out


def _scan_sequence(fn, elems, reverse, axis):
    n = snp.shape(elems[0])[axis]
    xs = tuple(snp.flip(e, axis) if reverse else e for e in elems)
    scanned = tree_util.tree_leaves(_scan_tuple(fn, xs, n, axis))     # (a list, read as one)
    out = tuple(snp.flip(r, axis) if reverse else r for r in scanned)
    if isinstance(elems, list):
        out = [o for o in out]
    return out


def _monoid(computation):
    """The kind of a known monoid computation, or None (any other function)."""
    for kind, fns in (("sum", (lax.add, snp.add, np.add, operator.add)),
                      ("prod", (lax.mul, snp.multiply, np.multiply, operator.mul)),
                      ("max", (lax.max, snp.maximum, np.maximum)),
                      ("min", (lax.min, snp.minimum, np.minimum)),
                      ("and", (lax.bitwise_and, snp.logical_and, snp.bitwise_and, operator.and_)),
                      ("or", (lax.bitwise_or, snp.logical_or, snp.bitwise_or, operator.or_))):
        if any(computation is f for f in fns):
            return kind
    return None


def _reduce_with(computation, operands, init_values, dims):
    """The reduction of the operands (a tuple) over dims with any associative `computation`
    (called on whole arrays, as on scalars): adjacent pairs combined round by round, in
    order, then combined once with init_values, as XLA's reduce may."""
    xs = []
    for x in operands:
        rest = [d for d in range(snp.ndim(x)) if d not in dims]
        x = snp.transpose(x, tuple(dims) + tuple(rest))
        xs.append(snp.reshape(x, (-1,) + snp.shape(x)[len(dims):]))
    n = snp.shape(xs[0])[0]
    while n > 1:
        half = n // 2
        left = tuple(x[0:2 * half:2] for x in xs)
        right = tuple(x[1:2 * half:2] for x in xs)
        pairs = _as_tuple(computation(_one_or_all(left), _one_or_all(right)))
        xs = [snp.concatenate([p, x[2 * half:]], 0) for p, x in zip(pairs, xs)]
        n = half + n % 2
    inits = tuple(snp.broadcast_to(snp.asarray(i, dtype=snp.result_type(x)), snp.shape(x)[1:])
                  for i, x in zip(init_values, xs))
    if n == 0:
        return inits
    return _as_tuple(computation(_one_or_all(inits), _one_or_all(tuple(x[0] for x in xs))))


def _one_or_all(items):
    return items[0] if len(items) == 1 else items


def _as_tuple(value):
    return value if isinstance(value, (tuple, list)) else (value,)


def reduce(operands, init_values, computation, dimensions):
    """Reduces `operands` over `dimensions` with a monoid `computation`, starting from
    init_values (JAX's lax.reduce for those computations)."""
    kind = _monoid(computation)
    dims = tuple(dimensions)
    if isinstance(operands, (tuple, list)):
        out = _reduce_with(computation, operands, init_values, dims)
        return [o for o in out] if isinstance(operands, list) else tuple(o for o in out)
    if kind is None:
        return _reduce_with(computation, (operands,), (init_values,), dims)[0]
    x = snp.asarray(operands)
    init = snp.asarray(init_values, dtype=x.dtype)
    if kind in ("and", "or") and x.dtype != snp.bool_:
        raise SecantValueError("lax.reduce with and/or: secant reduces boolean operands only")
    if kind == "sum":
        out = snp.sum(x, axis=dims) + init
    elif kind == "prod":
        out = snp.prod(x, axis=dims) * init
    elif kind == "max":
        out = snp.maximum(snp.max(x, axis=dims), init)
    elif kind == "min":
        out = snp.minimum(snp.min(x, axis=dims), init)
    elif kind == "and":
        out = snp.logical_and(snp.all(x, axis=dims), init)
    else:
        out = snp.logical_or(snp.any(x, axis=dims), init)
    return out


def top_k(operand, k, *, axis=-1):
    """The k largest entries along `axis` and their int32 indices, largest first (of equal
    entries the lower index first), as jax.lax.top_k: a stable descending argsort, cut."""
    ndim = snp.ndim(operand)
    if ndim == 0:
        raise SecantValueError(f"lax.top_k needs an array of at least one axis, got a "
                               f"scalar{where()}")
    if not -ndim <= axis < ndim:
        raise SecantValueError(f"lax.top_k: axis {axis} is out of range for an array of "
                               f"{ndim} axes{where()}")
    n = snp.shape(operand)[axis]
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= k <= n:
        raise SecantValueError(f"lax.top_k: k must be an integer from 0 to the size {n} of the "
                               f"axis, got {k!r}{where()}")
    if snp.issubdtype(snp.result_type(operand), snp.complexfloating):
        raise SecantTypeError(f"lax.top_k of complex values: they have no order{where()}")
    x = snp.moveaxis(operand, axis, -1)
    order = snp.argsort(x, axis=-1, stable=True, descending=True)[..., :k]
    values = snp.take_along_axis(x, order, axis=-1)
    return snp.moveaxis(values, -1, axis), snp.moveaxis(order.astype(snp.int32), -1, axis)

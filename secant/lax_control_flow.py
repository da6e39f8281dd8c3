"""lax.cond, switch, while_loop, fori_loop, scan and map, with JAX's semantics.

With concrete values they run as plain Python (eager code, or a concrete predicate under jit).
While jit is tracing, loops are staged as one StableHLO while loop whatever their trip count,
and a traced predicate stages a StableHLO conditional (backends/control_flow.py).
"""
import builtins

import numpy as np

import secant.numpy as snp
from secant import tree_util
from secant.backends import control_flow, dtypes
from secant.backends.core import Tracer
from secant.backends.errors import SecantTypeError, where
from secant.backends.tracer import active_trace


def _arrays(tree):
    """Eager loops run on secant arrays, as JAX's do (NumPy inputs and Python numbers too)."""
    return tree_util.tree_map(
        lambda x: snp.asarray(x) if isinstance(x, (np.ndarray, np.generic, int, float, complex))
        else x, tree)


def _scalar(x, what):
    if np.ndim(x) != 0:
        raise SecantTypeError(f"{what} must be a scalar, got shape {np.shape(x)}{where()}")
    return x


def cond(pred, true_fun, false_fun, *operands):
    """true_fun(*operands) if pred else false_fun(*operands)."""
    _scalar(pred, "cond's predicate")
    if isinstance(pred, Tracer):
        pred = pred if pred.dtype == dtypes.bool_ else pred != 0
        return control_flow.cond(pred._trace, pred, (true_fun, false_fun), operands)
    return true_fun(*operands) if builtins.bool(pred) else false_fun(*operands)


def switch(index, branches, *operands):
    """branches[clamp(index, 0, len(branches) - 1)](*operands)."""
    branches = tuple(branches)
    if not branches:
        raise SecantTypeError("switch needs at least one branch" + where())
    _scalar(index, "switch's index")
    if isinstance(index, Tracer):
        if not dtypes.is_int(index.dtype):
            raise SecantTypeError(f"switch's index must be an integer, got {index.dtype.name}"
                                  + where())
        index = snp.clip(index.astype(np.int32), 0, len(branches) - 1)
        return control_flow.cond(index._trace, index, branches, operands)
    return branches[builtins.min(builtins.max(int(index), 0), len(branches) - 1)](*operands)


def while_loop(cond_fun, body_fun, init_val):
    """Repeat val = body_fun(val) while cond_fun(val); returns the final val."""
    trace = active_trace()
    if trace is not None:
        return control_flow.while_loop(trace, cond_fun, body_fun, init_val)
    val = _arrays(init_val)
    while builtins.bool(cond_fun(val)):
        val = body_fun(val)
    return val


def fori_loop(lower, upper, body_fun, init_val):
    """val = body_fun(i, val) for i in range(lower, upper)."""
    trace = active_trace()
    if trace is None:
        val = _arrays(init_val)
        for i in range(int(lower), int(upper)):
            val = body_fun(i, val)
        return val
    dt = snp.result_type(lower, upper)
    if not dtypes.is_int(dt):
        raise SecantTypeError(f"fori_loop bounds must be integers, got {dt.name}{where()}")
    upper = snp.asarray(upper).astype(dt)
    _, val = control_flow.while_loop(
        trace, lambda c: c[0] < upper, lambda c: (c[0] + 1, body_fun(c[0], c[1])),
        (snp.asarray(lower).astype(dt), init_val))
    return val


def _length(xs, length):
    leaves = tree_util.tree_leaves(xs)
    sizes = {np.shape(x)[0] if np.ndim(x) else None for x in leaves}
    if None in sizes:
        raise SecantTypeError("scan's xs must be arrays with a leading axis to scan over"
                              + where())
    if length is not None:
        sizes.add(int(length))
    if len(sizes) > 1:
        raise SecantTypeError(f"scan got inconsistent lengths {sorted(sizes)} (the leading axes "
                              "of xs and length must agree)" + where())
    if not sizes:
        raise SecantTypeError("scan needs xs or length" + where())
    return sizes.pop()


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """carry, ys = scan(f, init, xs): carry, y = f(carry, x) for each x in xs; ys stacks the y."""
    n = _length(xs, length)
    trace = active_trace()
    order = range(n - 1, -1, -1) if reverse else range(n)
    if trace is None:
        carry, ys, xs = _arrays(init), [None] * n, _arrays(xs)
        for i in order:
            x = tree_util.tree_map(lambda a: a[i], xs)
            carry, ys[i] = f(carry, x)
        return carry, _stack(ys)
    return _staged_scan(trace, f, init, xs, n, reverse)


def _stack(ys):
    if not ys:
        return None
    return tree_util.tree_map(lambda *leaves: snp.stack(leaves), ys[0], *ys[1:])


def _staged_scan(trace, f, init, xs, n, reverse):
    from secant import lax

    def x_at(i):
        return tree_util.tree_map(lambda a: lax.dynamic_index_in_dim(a, i, 0, keepdims=False), xs)

    # the shapes of y: trace f once in a region that is thrown away
    with trace.region():
        _, y0 = f(init, x_at(snp.asarray(0, np.int32)))
    y_buffers = tree_util.tree_map(lambda y: snp.zeros((n,) + tuple(np.shape(y)),
                                                        snp.result_type(y)), y0)

    def body(c):
        i, carry, ys = c
        k = (n - 1 - i) if reverse else i
        carry, y = f(carry, x_at(k))
        ys = tree_util.tree_map(lambda buf, v: lax.dynamic_update_index_in_dim(buf, v, k, 0),
                                ys, y)
        return i + 1, carry, ys

    _, carry, ys = control_flow.while_loop(trace, lambda c: c[0] < n, body,
                                           (snp.asarray(0, np.int32), init, y_buffers))
    return carry, ys


def map(f, xs):
    """[f(x) for x in xs], stacked."""
    return scan(lambda carry, x: (carry, f(x)), None, xs)[1]

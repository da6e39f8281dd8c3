"""jax.debug: print and callback with run-time values (eagerly, under jit, vmap and grad),
breakpoint eagerly; and pure_callback, built on the same host call.

Under jit the values are not known while tracing: the program calls back into Python when it
runs (a host callback, backends/runtime.py), so `debug.print` prints the values of each run, as
JAX's. grad and vmap keep a debug.print or debug.callback statement as written in the source they
generate (the derivative prints the primal values, once); under vmap it is called once per
example with that example's values, as JAX's batching rule does.
"""
import logging
import pdb
import sys

import numpy as np

from secant import tree_util
from secant.backends import dtypes
from secant.backends.array import Array
from secant.backends.core import Tracer, bind
from secant.backends.errors import SecantError, SecantTypeError, user_frame, where
from secant.backends.primitives.callback import host_callback_p
from secant.backends.runtime import HostCallback
from secant.backends.tracer import active_trace

__all__ = ["print", "callback", "breakpoint", "log"]

_print = print


def _as_array(leaf):
    if isinstance(leaf, (Array, Tracer)):
        return leaf
    if isinstance(leaf, (np.ndarray, np.generic, bool, int, float, complex)):
        from secant.numpy import asarray
        return asarray(leaf)
    return leaf


def _effect(fn, args, kwargs, name):
    """Call fn(*args, **kwargs) with the arrays' values: now when none is traced, else from the
    program when it runs."""
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    leaves = [_as_array(x) for x in leaves]
    traced = [i for i, x in enumerate(leaves) if isinstance(x, Tracer)]

    def on_host(*values):
        full = list(leaves)
        for i, v in zip(traced, values):
            full[i] = Array._wrap(np.asarray(v, dtypes.canonicalize_dtype(v.dtype)),
                                  leaves[i].weak_type)
        a, k = tree.unflatten(full)
        fn(*a, **k)
        return ()

    trace = active_trace()
    if not traced and trace is None:
        on_host()
        return None
    if not traced:          # under jit with constants only: still printed by every run
        trace.emit(host_callback_p, [], dict(callback=HostCallback(on_host, (), name),
                                             result_avals=(), has_side_effect=True))
        return None
    bind(host_callback_p, *[leaves[i] for i in traced], callback=HostCallback(on_host, (), name),
         result_avals=(), has_side_effect=True)
    return None


def callback(callback, *args, ordered=False, partitioned=False, **kwargs):
    """Call `callback(*args, **kwargs)` with the run-time values of the arrays in args (secant
    Arrays), for its side effects; returns None (jax.debug.callback)."""
    if not callable(callback):
        raise SecantTypeError(f"debug.callback expects a callable, got "
                              f"{type(callback).__name__}" + where())
    return _effect(callback, args, kwargs, getattr(callback, "__name__", "callback"))


def print(fmt, *args, ordered=False, **kwargs):  # noqa: A001  (jax.debug.print)
    """Print `fmt.format(*args, **kwargs)` with the run-time values of the arrays
    (jax.debug.print)."""
    if not isinstance(fmt, str):
        raise SecantTypeError(f"debug.print expects a format string first, got "
                              f"{type(fmt).__name__}" + where())

    def formatted(*a, **k):
        _print(fmt.format(*a, **k))
        sys.stdout.flush()
    return _effect(formatted, args, kwargs, "debug.print")


def log(fmt, *args, ordered=False, partitioned=False, **kwargs):
    """Log `fmt.format(*args, **kwargs)` with the run-time values of the arrays, at INFO level
    on the logger "secant.debug" (jax.debug.log: debug.print through logging)."""
    if not isinstance(fmt, str):
        raise SecantTypeError(f"debug.log expects a format string first, got "
                              f"{type(fmt).__name__}" + where())

    def logged(*a, **k):
        logging.getLogger("secant.debug").info(fmt.format(*a, **k))
    return _effect(logged, args, kwargs, "debug.log")


callback.__secant_print__ = True        # transforms keep the call as written (print-like)
print.__secant_print__ = True
log.__secant_print__ = True


def breakpoint(*, backend=None, filter_frames=True, num_frames=None, ordered=False,  # noqa: A001
               token=None, **kwargs):
    """Stop in pdb at the caller's line (eagerly: values are concrete there). Inside jit the
    values do not exist while tracing: an error, use debug.print or call the function eagerly."""
    if active_trace() is not None:
        raise SecantError("debug.breakpoint() inside jit: the values are not known while "
                          "tracing, so there is nothing to inspect yet. Call the function "
                          "without jit to stop in pdb, or use secant.debug.print" + where())
    frame = user_frame() or sys._getframe(1)
    pdb.Pdb().set_trace(frame)


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  vmap_method_legacy=None, **kwargs):
    """Call the Python function `callback(*args, **kwargs)` on NumPy arrays and return its
    result, declared by `result_shape_dtypes` (a pytree of objects with .shape and .dtype, such as
    ShapeDtypeStruct): eagerly it is simply called, under jit from the program when it runs
    (jax.pure_callback). It has no derivative (as in JAX: wrap it in custom_jvp/custom_vjp)."""
    if not callable(callback):
        raise SecantTypeError(f"pure_callback expects a callable, got "
                              f"{type(callback).__name__}" + where())
    if vmap_method not in (None, "sequential", "expand_dims", "broadcast_all",
                           "legacy_vectorized", "sequential_unrolled"):
        raise SecantTypeError(f"pure_callback: vmap_method={vmap_method!r} is not one of "
                              "'sequential', 'expand_dims', 'broadcast_all', "
                              "'legacy_vectorized'" + where())
    from secant.backends.core import ShapedArray
    shapes, out_tree = tree_util.tree_flatten(result_shape_dtypes)
    result_avals = []
    for s in shapes:
        if not (hasattr(s, "shape") and hasattr(s, "dtype")):
            raise SecantTypeError("pure_callback: result_shape_dtypes must be a pytree of "
                                  "objects with .shape and .dtype (secant.ShapeDtypeStruct), got "
                                  f"{type(s).__name__}" + where())
        result_avals.append(ShapedArray(s.shape, dtypes.canonicalize_dtype(s.dtype)))
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    leaves = [_as_array(x) for x in leaves]
    arrays = [i for i, x in enumerate(leaves) if isinstance(x, (Array, Tracer))]
    name = getattr(callback, "__name__", "callback")

    def on_host(*values):
        full = list(leaves)
        for i, v in zip(arrays, values):
            full[i] = np.asarray(v)
        a, k = tree.unflatten(full)
        out = callback(*a, **k)
        flat, got_tree = tree_util.tree_flatten(out)
        if got_tree != out_tree:
            raise SecantTypeError(f"pure_callback: {name} returned {got_tree}, but "
                                  f"result_shape_dtypes declares {out_tree}")
        return [np.asarray(o) for o in flat]     # (shapes and dtypes: checked by HostCallback)

    host = HostCallback(on_host, result_avals, name)
    operands = [leaves[i] for i in arrays]
    outs = bind(host_callback_p, *operands, callback=host, result_avals=tuple(result_avals),
                has_side_effect=False)
    return out_tree.unflatten(outs)


pure_callback.__secant_callback__ = True     # transforms: secant/callback_transforms.py
pure_callback.__secant_opaque__ = (
    "pure_callback is transformed where your function calls it (vmap by its vmap_method; it has "
    "no derivative, as in JAX: give it one with secant.custom_jvp or custom_vjp), not passed "
    "as a value")

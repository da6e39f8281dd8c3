"""Eager runs of one primitive through its own StableHLO lowering, compiled once per signature.

Some primitives have no NumPy equivalent that is both fast and the same kernel: LU with partial
pivoting is LAPACK's getrf under jit, and NumPy does not expose it (a Python loop over the
pivots is ~100x slower than jit at n = 256). `run(prim, values, params)` traces the single
primitive into a module, compiles it once per (shapes, dtypes, params) and runs it: eager then
calls the very kernel jit calls (same pivots, same NaN-on-failure masking), at the cost of one
compile per new signature. The executables live in this module's cache (threads share it:
backends/once.py); every jaxlib call goes through backends/runtime.py.
"""
import numpy as np

from secant.backends import once, runtime
from secant.backends.core import ShapedArray

_executables = {}


def _build(prim, avals, params):
    from secant.backends.tracer import Trace
    trace = Trace(f"eager_{prim.name}", kind="eager")
    args = [trace.new_arg(a) for a in avals]
    outs = trace.emit(prim, args, params)
    text, out_avals = trace.module(outs if prim.multiple_results else [outs])
    trace.finish()
    return runtime.Executable(text, out_avals), out_avals


def _executable(prim, avals, params):
    key = (prim.name, tuple((a.shape, a.dtype.str) for a in avals),
           tuple(sorted(params.items())))
    while True:
        hit = _executables.get(key)
        if hit is not None:
            return hit
        mine = once.claim(_executables, key)
        if mine:                # (RECURSIVE cannot happen: building traces no eager kernel)
            break
    try:
        hit = _executables[key] = _build(prim, avals, params)
    finally:
        once.release(_executables, key)
    return hit


def run(prim, values, params):
    """prim's outputs (a list of NumPy arrays, or one when it has one result) on NumPy `values`,
    computed by its compiled lowering."""
    values = [np.asarray(v) for v in values]
    exe, out_avals = _executable(prim, [ShapedArray(v.shape, v.dtype) for v in values], params)
    bufs = exe([runtime.put(v) for v in values])
    outs = [np.array(runtime.to_numpy(buf, a.dtype)) for buf, a in zip(bufs, out_avals)]
    return outs if prim.multiple_results else outs[0]

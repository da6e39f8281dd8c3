"""Eager derivatives run on NumPy's own values where that changes nothing (issue 19).

An eager call of a generated derivative pays secant's wrapper (an Array, type checks, the
quiet error state) on every operation: ~0.3 us each, more than NumPy's own sin of a scalar.
When a derivative is plain elementwise arithmetic (autograd's chain of sines, say) and its
inputs are strong float arrays, each of its operations is exactly the NumPy call secant's eager
fast path would make (backends/core.py eager_unary/eager_binary: the same ufunc on the same
values, in the quiet state): then its code runs once on the unwrapped values, and only the
results are wrapped.

`raw_version(gen)` reads the derivative's bytecode once and answers functions with the same
code object (so the same lines, the same names) whose free variables and globals name the
NumPy versions below (one without x64, one with), or None when the code does anything else:
subscripts, attributes other than `snp.<ufunc>` and a list's append/pop, in-place operators,
powers, comparisons, branches, bool constants, calls of anything not listed. `run` runs it on
unwrapped arguments; on any exception, or a result that is not a tuple of float arrays, it
runs the derivative as written instead (the listed functions have no side effects, so running
it again is the same computation: its error messages, weak types and dtype rules are
secant's own). Weakly typed arguments (a Python float grad converted) run as written."""
import builtins
import dis
import types

import numpy as np

import secant.numpy as snp
from secant.ad import helpers
from secant.backends import dtypes
from secant.backends.array import Array
from secant.backends.core import FAST_FLOATS as _FAST_FLOATS
from secant.backends.core import quiet_call as _quiet_call
from secant.numpy.shape import _broadcast_view, _canonical_axes

_F32, _F64 = np.dtype("float32"), np.dtype("float64")
_ndarray = np.ndarray
NOT_RAW = object()      # call_raw's answer when the derivative must run as usual
FAILED = object()       # run's answer when a run on NumPy's values failed


class _NotRaw(Exception):
    """Raised by a NumPy version below on a value it does not take (the caller reruns)."""


def _float_value(x):
    """Whether x is a value the NumPy versions take: a float32 (float64 under x64) ndarray or
    NumPy scalar (the dtypes of the eager fast paths; NumPy computes them as secant does)."""
    t = type(x)
    if t is _ndarray:
        dt = x.dtype
        return dt is _F32 or dt == _F32 or (dt == _F64 and dtypes.X64[0])
    return t is np.float32 or (t is np.float64 and dtypes.X64[0])


# the types of the values a run computes with: its float arguments and what NumPy makes of them
# (a float ufunc of a float array, a float array times a Python number), which are the float
# dtypes call_raw takes (a float64 only under x64: a float32 times a Python float stays float32)
_TYPES = frozenset([_ndarray, np.float32, np.float64])


def _unary(ufunc):
    def f(x, /):
        if type(x) not in _TYPES:   # (a Python number: secant makes it a weak array)
            raise _NotRaw
        return ufunc(x)
    return f


def _binary(ufunc, arith):
    def f(x1, x2, /):
        if not (_float_value(x1) and _float_value(x2)) or x1.dtype != x2.dtype:
            raise _NotRaw
        t = type(x1)
        if t is type(x2) and t is not _ndarray and arith is not None:
            return arith(x1, x2)        # (two NumPy scalars: as eager_binary computes them)
        return ufunc(x1, x2)
    return f


def _sum(a, axis=None, keepdims=False):
    """secant.numpy.sum's eager fast path (np.add.reduce in the array's dtype)."""
    if type(a) is not _ndarray or not _float_value(a):
        raise _NotRaw
    axes = _canonical_axes(axis, a.ndim)
    if not axes:
        return a
    return np.add.reduce(a, axis=axes, dtype=a.dtype, keepdims=bool(keepdims))


def _namespace(x64):
    """secant.numpy's eager fast-path functions, as NumPy versions. Without x64 a one-argument
    ufunc is called as it is: a Python number it meets gives a 64-bit NumPy value (where secant
    gives a weak float32 array), which every operation a run can make keeps 64-bit, so a result
    it reaches is refused by _wrap (float32 only) and the derivative runs as usual; under x64,
    where float64 results are taken, each call checks its argument's type instead."""
    ns = types.SimpleNamespace(sum=_sum, zeros_like=_zeros_like, result_type=_result_type)
    for name in dir(snp):
        raw = getattr(getattr(snp, name), "__secant_raw__", None)
        if raw is not None:
            ufunc, arith = raw
            if arith is None and ufunc.nin == 1:
                setattr(ns, name, _unary(ufunc) if x64 else ufunc)
            else:
                setattr(ns, name, _binary(ufunc, arith))
    return ns


def _grad_seed(out):
    """helpers.grad_seed of a float scalar: one of its type."""
    if type(out) is _ndarray and not out.ndim and _float_value(out):
        return out.dtype.type(1)
    if type(out) is not _ndarray and _float_value(out):
        return type(out)(1)
    raise _NotRaw


def _grad_seed_like(x, y=None):
    if y is not None:
        x = _result_type(x, y)
    if type(x) is np.dtype or isinstance(x, np.dtype):     # (grad_seed_like(result_type(...)))
        if x == _F32 or x == _F64 and dtypes.X64[0]:
            return x.type(1)
        raise _NotRaw
    if not _float_value(x):
        raise _NotRaw
    return x.dtype.type(1)


def _grad_seed_scaled(x, k):
    if np.shape(k) != ():
        raise _NotRaw
    return _grad_seed_like(x, k)


def _result_type(*xs):
    """snp.result_type of float values the NumPy versions take: NumPy's promotion, the same
    for these (a float32 and a float64 give float64 in both); anything else is not raw."""
    if not all(_float_value(x) for x in xs):
        raise _NotRaw
    return np.result_type(*xs)


def _unreduce(t, a, axis=None, keepdims=False):
    """helpers.unreduce of a full reduction's (0-d) cotangent: its view over a's shape."""
    if axis is not None or keepdims or not (_float_value(t) and _float_value(a)) or t.ndim:
        raise _NotRaw
    shape = a.shape
    return _broadcast_view(t, shape) if shape else t


def _unreduce_to(t, shape, axis=None, keepdims=False):
    """helpers.unreduce_to of a full reduction's (0-d) cotangent: its view over `shape`."""
    if axis is not None or keepdims or not _float_value(t) or t.ndim or type(shape) is not tuple:
        raise _NotRaw
    return _broadcast_view(t, shape) if shape else t


def _shape_of(*xs, axis=(), keepdims=False):
    """helpers.shape_of of float values, no axis: their broadcast shape (shapes that do not
    broadcast are not raw: the derivative as written names the user's line)."""
    if axis != () or keepdims or not all(_float_value(x) for x in xs):
        raise _NotRaw
    try:
        return np.broadcast_shapes(*[x.shape for x in xs])
    except ValueError:
        raise _NotRaw from None


def _zeros_like(a, dtype=None, shape=None):
    if dtype is not None or shape is not None or not _float_value(a):
        raise _NotRaw
    return np.zeros_like(a)


def _unbroadcast(t, x):
    """helpers.unbroadcast where there is nothing to sum: t as it is."""
    if not (_float_value(t) and _float_value(x)) or t.shape != x.shape or t.dtype != x.dtype:
        raise _NotRaw
    return t


def _grads_as(t, x):
    """helpers.grads_as where the dtypes agree: t as it is."""
    if not (_float_value(t) and _float_value(x)) or t.dtype != x.dtype:
        raise _NotRaw
    return t


_SNP = _namespace(x64=True)
# what a derivative's free variables and globals may name -> the NumPy version its run uses
# (without and with x64: the two differ in secant.numpy's)
_REPLACE = {id(snp): _SNP, id(helpers.grad_seed): _grad_seed,
            id(helpers.grad_seed_like): _grad_seed_like,
            id(helpers.grad_seed_scaled): _grad_seed_scaled, id(helpers.unreduce): _unreduce,
            id(helpers.unreduce_to): _unreduce_to, id(helpers.shape_of): _shape_of,
            id(helpers.unbroadcast): _unbroadcast, id(helpers.grads_as): _grads_as,
            id(range): range, id(reversed): reversed, id(len): len, id(zip): zip}
_REPLACE_X32 = {**_REPLACE, id(snp): _namespace(x64=False)}
_OPS = frozenset(["RESUME", "NOP", "CACHE", "EXTENDED_ARG", "COPY_FREE_VARS", "LOAD_FAST",
                  "STORE_FAST", "DELETE_FAST", "PUSH_NULL", "PRECALL", "CALL",
                  "KW_NAMES", "UNARY_NEGATIVE", "GET_ITER", "FOR_ITER", "JUMP_BACKWARD",
                  "JUMP_FORWARD", "POP_TOP", "RETURN_VALUE", "BUILD_LIST", "BUILD_TUPLE",
                  "UNPACK_SEQUENCE"])     # (a reverse loop's `for i, x in zip(...)` header)
_BINARY = frozenset(["+", "-", "*", "/"])       # (not in place: x += y would write to an input)
_LIST_METHODS = frozenset(["append", "pop"])    # (an ndarray has neither: a run that tries fails)



def raw_version(gen):
    """The NumPy-value versions of `gen` (see the module's text) without and with x64, or None;
    read once per gen."""
    code = getattr(gen, "__code__", None)
    if code is None:
        return None
    read, raw = getattr(gen, "__secant_numpy_version__", (None, None))
    if read is not code:            # (a wrapper may have copied gen's attributes)
        raw = _read(gen)
        gen.__secant_numpy_version__ = (code, raw)
    return raw


def _read(gen):
    code = gen.__code__
    if code.co_cellvars or gen.__kwdefaults__ or any(
            isinstance(c, types.CodeType) for c in code.co_consts) or any(
            type(d) not in (int, float) for d in gen.__defaults__ or ()):
        return None         # (a default is passed as it is: only Python numbers, as call_raw)
    values = {}             # a free variable's or global's name -> the value it names now
    for name, cell in zip(code.co_freevars, gen.__closure__ or ()):
        try:
            values[name] = cell.cell_contents
        except ValueError:
            return None
    previous = None
    for ins in dis.get_instructions(code):
        op = ins.opname
        if op in ("LOAD_DEREF", "LOAD_GLOBAL"):
            if op == "LOAD_GLOBAL":
                value = gen.__globals__.get(ins.argval, getattr(builtins, ins.argval, None))
                values.setdefault(ins.argval, value)
            if id(values.get(ins.argval)) not in _REPLACE:
                return None
        elif op in ("LOAD_METHOD", "LOAD_ATTR"):
            on_snp = previous is not None and previous.opname in ("LOAD_DEREF", "LOAD_GLOBAL") \
                and values.get(previous.argval) is snp
            if not (on_snp and hasattr(_SNP, ins.argval)) and ins.argval not in _LIST_METHODS:
                return None
        elif op == "BINARY_OP":
            if ins.argrepr not in _BINARY:
                return None
        elif op == "LOAD_CONST":
            if _has_bool(ins.argval):   # (NumPy's sin(True) is a float16: not secant's)
                return None
        elif op not in _OPS:
            return None
        previous = ins
    return tuple(_function(gen, values, replace) for replace in (_REPLACE_X32, _REPLACE))


def _has_bool(value):
    return type(value) is bool or type(value) in (tuple, frozenset) and any(map(_has_bool, value))


def _function(gen, values, replace):
    """gen's code with its free variables and globals naming their NumPy versions."""
    code = gen.__code__
    closure = tuple(types.CellType(replace[id(values[name])]) for name in code.co_freevars)
    globals_ = {"__builtins__": builtins}
    for name in code.co_names:
        if name in values and id(values[name]) in replace:
            globals_[name] = replace[id(values[name])]
    return types.FunctionType(code, globals_, gen.__name__, gen.__defaults__, closure)


def run(gen, args):
    """gen(*args) on NumPy's values where it can be (see the module's text): its result, NOT_RAW
    when gen does not run on them, or FAILED when a run on them failed. The caller then runs gen
    as written (in its own frame: a call whose arguments do not fit is the user's TypeError), and
    calls `stop(gen)` after FAILED if that succeeds: a run on NumPy's values that fails where the
    run as written does not (a Python number through a ufunc, say) is not tried again for this
    gen, as it would cost a second run on every call."""
    raw = raw_version(gen)
    vals = None if raw is None else _unwrapped(args)
    if vals is None:
        return NOT_RAW
    out = _run(raw, vals)
    return FAILED if out is NOT_RAW else out


def stop(gen):
    gen.__secant_numpy_version__ = (gen.__code__, None)


def call_raw(raw, args):
    """raw(*args) on the NumPy values of `args` (secant Arrays after grad's conversion), its
    result wrapped; NOT_RAW when an argument is not a strong float Array or a Python int or
    float, when the run fails, or when its result is not float arrays (then the caller runs
    the derivative as usual, which gives secant's own result or error)."""
    vals = _unwrapped(args)
    return NOT_RAW if vals is None else _run(raw, vals)


def _unwrapped(args):
    vals = []
    for a in args:
        t = type(a)
        if t is Array:
            v = a._npy
            if a.weak_type or not _float_value(v):
                return None
            vals.append(v)
        elif t is float or t is int:
            vals.append(a)
        else:
            return None
    return vals


def _run(raw, vals):
    try:
        out = raw[dtypes.X64[0]](*vals)
    except Exception:
        return NOT_RAW
    return _wrap(out)


def _wrap(out):
    if type(out) is tuple:
        leaves = tuple(_wrap(o) for o in out)
        return NOT_RAW if any(o is NOT_RAW for o in leaves) else leaves
    if not _float_value(out):
        return NOT_RAW
    return Array._wrap_ndarray(out, False)


# --- the helpers of an eager derivative run as written, on eager float matrices -----------------
# A derivative that does more than elementwise arithmetic (an MLP's loss: subscripts of a dict
# of parameters, matrix products) runs as written, on Arrays, each helper it calls by the name
# ad/helpers.py gives it. Those helpers are written for the transforms to read again (shapes
# tested with np.ndim, sums through snp, every case of NumPy's ranks): each costs 15-30 us of
# Python eagerly. `helpers_version(gen)` is gen with the helpers' closure cells naming the
# versions below instead (gen's own function, its source and its other cells unchanged): each
# computes, for eager float matrices of one dtype, exactly what the helper's fast paths compute
# (the same NumPy call on the same values: the same bits, dtype and weak type), and calls the
# helper itself for anything else. The transforms never see them: they read gen's source.

_wrap_ndarray = Array._wrap_ndarray
_matmul = np.matmul
_add_reduce = np.add.reduce


def _matmul_values(t, x, y):
    """The NumPy values of t, x and y where they are eager float matrices of one dtype and t
    has x @ y's shape, else None."""
    if type(t) is Array and type(x) is Array and type(y) is Array:
        tv, xv, yv = t._npy, x._npy, y._npy
        if type(tv) is _ndarray and type(xv) is _ndarray and type(yv) is _ndarray \
                and tv.ndim == 2 and xv.ndim == 2 and yv.ndim == 2:
            dt = tv.dtype
            if dt in _FAST_FLOATS and xv.dtype == dt and yv.dtype == dt \
                    and tv.shape == (xv.shape[0], yv.shape[1]) and xv.shape[1] == yv.shape[0]:
                return tv, xv, yv
    return None


def _fast_matmul_grad_x(t, x, y):
    """helpers.matmul_grad_x(t, x, y) of three such matrices: t @ y.T, as snp.swapaxes and
    snp.matmul compute it (unbroadcast to x's own shape and dtype has nothing to do)."""
    values = _matmul_values(t, x, y)
    if values is None:
        return helpers.matmul_grad_x(t, x, y)
    tv, _, yv = values
    return _wrap_ndarray(_quiet_call(_matmul, tv, yv.swapaxes(0, 1)), t.weak_type and y.weak_type)


def _fast_matmul_grad_y(t, x, y):
    """helpers.matmul_grad_y(t, x, y) of three such matrices: x.T @ t."""
    values = _matmul_values(t, x, y)
    if values is None:
        return helpers.matmul_grad_y(t, x, y)
    tv, xv, _ = values
    return _wrap_ndarray(_quiet_call(_matmul, xv.swapaxes(0, 1), tv), x.weak_type and t.weak_type)


def _fast_unbroadcast(t, x):
    """helpers.unbroadcast(t, x) of two eager float arrays of one dtype, x's shape broadcasting
    to t's: t itself for one shape, else t summed over the broadcast axes as snp.sum computes
    it (np.add.reduce in t's dtype), reshaped to x's shape."""
    if type(t) is Array and type(x) is Array:
        tv, xv = t._npy, x._npy
        if type(tv) is _ndarray and type(xv) is _ndarray:
            dt = tv.dtype
            if dt in _FAST_FLOATS and xv.dtype == dt:
                ts, xs = tv.shape, xv.shape
                if ts == xs:
                    return t
                lead = len(ts) - len(xs)
                if lead >= 0 and xs:
                    for i, d in enumerate(xs):
                        if d != 1 and d != ts[i + lead]:
                            break
                    else:
                        summed = _quiet_call(_add_reduce, tv, axis=helpers._sum_axes(ts, xs),
                                             dtype=dt, keepdims=False)
                        return _wrap_ndarray(summed.reshape(xs), t.weak_type)
    return helpers.unbroadcast(t, x)


def _fast_mean_grad_to(t, shape, axis=None, keepdims=False, summed=()):
    """helpers.mean_grad_to(t, shape) of a mean over every axis (t an eager 0-d float array):
    t divided by the count as secant's division computes it, as a read-only view over
    `shape` (what expand_dims and broadcast_to's eager paths make)."""
    if axis is None and not keepdims and type(t) is Array and type(shape) is tuple:
        v = t._npy
        if v is not None and v.dtype in _FAST_FLOATS and not v.ndim:
            for d in shape:
                if type(d) is not int or d < 0:
                    return helpers.mean_grad_to(t, shape, axis, keepdims, summed)
            q = t / helpers._count_in(shape, None, summed)
            if not shape:
                return q
            one = np.asarray(q._npy).reshape((1,) * len(shape))
            return _wrap_ndarray(_broadcast_view(one, shape), q.weak_type)
    return helpers.mean_grad_to(t, shape, axis, keepdims, summed)


def _fast_grad_seed_like(x, y=None):
    """helpers.grad_seed_like(x, y) of two strong eager float arrays of one dtype: the seed
    grad_seed gives for that dtype, a strong one of it."""
    if y is not None and type(x) is Array and type(y) is Array \
            and not x.weak_type and not y.weak_type:
        v, w = x._npy, y._npy
        if v is not None and w is not None:
            dt = v.dtype
            if w.dtype == dt and (dt == _F32 or dt == _F64 and dtypes.X64[0]):
                return _wrap_ndarray(dt.type(1), False)
    return helpers.grad_seed_like(x, y)


# a helper -> its version for eager float matrices (by identity: a cell naming anything else,
# a user's own function of the same name, say, is kept)
_FAST_HELPERS = {id(helpers.matmul_grad_x): _fast_matmul_grad_x,
                 id(helpers.matmul_grad_y): _fast_matmul_grad_y,
                 id(helpers.unbroadcast): _fast_unbroadcast,
                 id(helpers.mean_grad_to): _fast_mean_grad_to,
                 id(helpers.grad_seed_like): _fast_grad_seed_like}


def helpers_version(gen):
    """gen with the cells that name a helper of _FAST_HELPERS naming its fast version, or gen
    itself when it names none or is not a plain function (read once per code object of gen)."""
    if type(gen) is not types.FunctionType:     # (a bound method's __code__ is its function's)
        return gen
    code = gen.__code__
    read, fast = getattr(gen, "__secant_helpers_version__", (None, None))
    if read is code:
        return fast or gen
    fast = None
    closure = gen.__closure__
    if closure and not gen.__kwdefaults__:
        cells = []
        replaced = False
        for cell in closure:
            try:
                new = _FAST_HELPERS.get(id(cell.cell_contents))
            except ValueError:      # (an empty cell: kept, as every cell not replaced)
                new = None
            if new is not None:
                cells.append(types.CellType(new))
                replaced = True
            else:
                cells.append(cell)      # (the same cell: a closure variable is read live)
        if replaced:
            fast = types.FunctionType(code, gen.__globals__, gen.__name__, gen.__defaults__,
                                      tuple(cells))
            fast.__qualname__ = gen.__qualname__
    gen.__secant_helpers_version__ = (code, fast)
    return fast or gen

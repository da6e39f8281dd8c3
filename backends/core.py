"""Abstract values, the primitive registry, and `bind`: the one door every operation goes through.

`bind(prim, *args, **params)` runs the primitive's NumPy implementation when every argument is
concrete (eager mode), and hands it to the active trace when any argument is a Tracer (jit).
"""
import functools
import math
import operator

import numpy as np

from secant.backends import dtypes
from secant.backends.errors import (ConcretizationError, SecantError, SecantTypeError,
                                    TracerArrayConversionError, TracerBoolConversionError,
                                    TracerIntegerConversionError, where)


class ShapedArray:
    """Shape, dtype and weak type of a value: what a trace knows about it (JAX's aval)."""
    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def update(self, shape=None, dtype=None, weak_type=None):
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def __eq__(self, other):
        return (isinstance(other, ShapedArray) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return self._hash

    def str_short(self):
        s = f"{self.dtype.name}[{','.join(map(str, self.shape))}]"
        return s + "{weak}" if self.weak_type else s

    __repr__ = str_short


class Primitive:
    """One operation, defined once: its name, shape/dtype rule and NumPy implementation.

    shape_rule(*avals, **params) -> ShapedArray (or a list when multiple_results); raises
    SecantTypeError for bad input. impl(*numpy_values, **params) -> numpy value(s) of exactly the
    dtype(s) the shape rule predicts. weak says how an output's weak type is set: 'inputs' (weak
    when every input is), 'never', 'param' (params['weak_type']), 'first' (the first input's)
    or 'rest' (weak when every input after the first is: select's predicate does not count).
    Other layers key their tables (lowering, jvp, vjp, batching) by the primitive's name.
    """

    def __init__(self, name, shape_rule, impl, multiple_results=False, weak="inputs",
                 differentiable=True):
        self.name = name
        self.shape_rule = shape_rule
        self.impl = impl
        self.multiple_results = multiple_results
        self.weak = weak
        self.differentiable = differentiable
        # set for one-argument primitives a NumPy ufunc computes exactly on these dtypes (then
        # eager calls on them skip bind: see eager_unary)
        self.ufunc = None
        self.ufunc_dtypes = frozenset()

    def __repr__(self):
        return f"Primitive({self.name})"

    def out_weak(self, in_weak, params):
        if self.weak == "inputs":
            return bool(in_weak) and all(in_weak)
        if self.weak == "param":
            return bool(params.get("weak_type", False))
        if self.weak == "first":
            return bool(in_weak) and in_weak[0]
        if self.weak == "rest":              # (select: the predicate's type does not count)
            return len(in_weak) > 1 and all(in_weak[1:])
        return False


PRIMITIVES = {}


def register(prim):
    if prim.name in PRIMITIVES:
        raise SecantError(f"primitive {prim.name!r} defined twice")
    PRIMITIVES[prim.name] = prim
    return prim


class Tracer:
    """A value inside a jit trace: its aval and the SSA name of the StableHLO value holding it.
    `_loc` is the location of the op that made it (its `loc(...)` text: the user's line), named
    when the value is used after its trace finished (backends/tracer.py, leaked)."""
    __slots__ = ("_trace", "aval", "name", "_body", "_loc", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, trace, aval, name, body=None, loc=None):
        self._trace = trace
        self.aval = aval
        self.name = name
        self._body = body         # the function body or region that defines the value
        self._loc = loc if loc is not None else body.loc if body is not None else ""

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self):
        if not self.aval.shape:
            raise SecantTypeError("len() of a 0-d array" + where())
        return self.aval.shape[0]

    def _concrete(self, what, instead, cls=ConcretizationError):
        if not self._trace.live or not self._trace.owned_here():
            self._trace.leaked(self)
        raise cls(
            f"{what} of a traced value {self.aval.str_short()} inside jit: its value is not known "
            f"while tracing.{where()}\n  {instead}")

    def __bool__(self):
        self._concrete("bool()", "Use secant.numpy.where or secant.lax.cond on traced values, or "
                       "mark the argument static (static_argnums).", TracerBoolConversionError)

    def __int__(self):
        self._concrete("int()", "Mark the argument static (static_argnums), or keep it an array.",
                       TracerIntegerConversionError)

    def __float__(self):
        self._concrete("float()", "Keep it an array, or mark the argument static.")

    def __complex__(self):
        self._concrete("complex()", "Keep it an array.")

    def __index__(self):
        self._concrete("Using as an index (__index__)",
                       "Index with arrays (x[i] works with a traced i) or mark it static.",
                       TracerIntegerConversionError)

    def item(self, *args):
        self._concrete("item()", "Keep it an array (x[()] or x.reshape(()) is a 0-d array), or "
                       "mark the argument static (static_argnums).")

    def __format__(self, spec):
        """f"{x}" shows the traced value's repr (as print does); a format spec needs its value."""
        if not spec:
            return repr(self)
        self._concrete(f"Formatting with {spec!r}", "Format it outside jit, or print it with "
                       "secant.debug.print.")

    def tolist(self):
        self._concrete("tolist()", "Keep it an array (iterate over it, or index it), or mark the "
                       "argument static (static_argnums).")

    def __array__(self, *a, **k):
        self._concrete("Converting to a NumPy array",
                       "Use secant.numpy functions inside jitted code instead of numpy ones that "
                       "need concrete values.", TracerArrayConversionError)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """A NumPy ufunc of a traced value (`np.sin(x)` inside jit): secant.numpy's function of
        that name, as the transforms read it; none: the conversion error."""
        import secant.numpy as snp
        fn = getattr(snp, ufunc.__name__, None)
        if method != "__call__":        # np.add.reduce(x): snp.add.reduce (numpy/ufunc_methods)
            fn = getattr(fn, method, None)
        if fn is None or kwargs.get("out") is not None:
            self.__array__()
        return fn(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """The same for NumPy's other functions (`np.sum(x)`); one secant.numpy lacks runs as
        NumPy's own (which converts, and so says why it cannot)."""
        from secant.numpy.counterparts import counterpart
        import secant.numpy as snp
        ours = counterpart(func)                # (np.linalg.det: snp.linalg.det)
        fn = ours[0] if ours is not None else getattr(snp, func.__name__, None)
        if fn is None or not callable(fn) or isinstance(fn, type):
            return func._implementation(*args, **kwargs)
        return fn(*args, **kwargs)

    def __hash__(self):
        raise SecantTypeError("traced arrays are not hashable" + where())

    def __setitem__(self, index, value):
        raise SecantTypeError("secant arrays are immutable (as JAX's): instead of x[idx] = y, "
                              "write x = x.at[idx].set(y)" + where())

    def __iter__(self):
        if not self.aval.shape:
            raise SecantTypeError("iteration over a 0-d array" + where())
        return (self[i] for i in range(self.aval.shape[0]))

    def __repr__(self):
        if not self._trace.live:    # shown, never an error: a debugger or a log may print it
            return f"Traced<{self.aval.str_short()}> (leaked from the finished {self._trace.what})"
        return f"Traced<{self.aval.str_short()}>"


def find_tracer(args):
    for a in args:
        if isinstance(a, Tracer):
            return a
    return None


_Array = None  # backends.array.Array, set by that module (it imports this one)


def _quiet_numpy():
    """Eager NumPy kernels run with floating-point warnings off, as XLA does (log(0) is -inf, not
    a RuntimeWarning). np.errstate costs ~1 us a call; setting NumPy's error-state context
    variable directly costs ~0.1 us, so use it when this NumPy has it. Returns (enter, exit,
    state, quiet, call): `state() is quiet` when the quiet state is already the current one
    (between quiet_enter and quiet_exit: bind then skips entering it); `call(fn, *args)` runs a
    NumPy C function in a context of its own that holds only the quiet state (~20 ns, where
    entering and leaving the state costs ~150: the eager fast paths' ufunc calls)."""
    try:
        import contextvars
        from numpy._core import _multiarray_umath as umath
        var = umath._extobj_contextvar
        with np.errstate(all="ignore"):
            quiet = var.get()
        context = contextvars.Context()
        context.run(var.set, quiet)
        # (bound methods: no Python frame per call)
        return functools.partial(var.set, quiet), var.reset, var.get, quiet, context.run
    except (ImportError, AttributeError):

        def enter():
            cm = np.errstate(all="ignore")
            cm.__enter__()
            return cm

        def call(fn, *args, **kwargs):
            with np.errstate(all="ignore"):
                return fn(*args, **kwargs)

        return enter, lambda cm: cm.__exit__(None, None, None), lambda: None, object(), call


# quiet_enter() -> token and quiet_exit(token): the quiet state for a block (the wrapper of an
# eager derivative enters it once for the whole call; the operations inside then skip it)
quiet_enter, quiet_exit, _quiet_state, _QUIET, _quiet_context_call = _quiet_numpy()


def run_quiet(fn, *args, **kwargs):
    """fn(*args, **kwargs) in the quiet state (an eager fast path's NumPy call)."""
    if _quiet_state() is _QUIET:
        return fn(*args, **kwargs)
    token = quiet_enter()
    try:
        return fn(*args, **kwargs)
    finally:
        quiet_exit(token)


def quiet_call(fn, *args, **kwargs):
    """fn(*args, **kwargs) in the quiet state, for a NumPy C function on numbers (a ufunc): run in a
    context that holds only that state, so never for Python code (it would not see the
    caller's context variables). The context is entered once at a time: while another thread's
    call holds it (NumPy lets go of the GIL in long loops), entering raises RuntimeError and
    the state is entered as run_quiet does instead (fn is pure: called again)."""
    try:
        return _quiet_context_call(fn, *args, **kwargs)
    except RuntimeError:
        return run_quiet(fn, *args, **kwargs)


# the dtypes eager fast paths of structural operations (secant.numpy's matmul, sum) compute on
# directly: NumPy's kernels on them are bind's implementations called with the same arguments.
# (A tuple: `dt in` it compares identities first, where a set hashes the dtype, ~100 ns.)
FAST_FLOATS = (np.dtype("float32"), np.dtype("float64"))


def _by_use(dtypes_):
    """A set of dtypes as a tuple for `in` tests on hot paths, the common floats first."""
    return tuple(sorted(dtypes_, key=lambda dt: (dt not in FAST_FLOATS, dt.str)))


def bind(prim, *args, **params):
    """Run `prim` on `args`: eagerly on NumPy, or recorded into the active trace."""
    Array = _Array
    vals = []
    weak = True
    for a in args:
        if type(a) is Array:
            v = a._npy
            vals.append(v if type(v) is np.ndarray else a._value())
            weak = weak and a.weak_type
        elif isinstance(a, Tracer):
            return a._trace.emit(prim, args, params)
        else:
            vals.append(a)
            weak = False
    token = quiet_enter() if _quiet_state() is not _QUIET else None
    try:
        out = prim.impl(*vals, **params)
    except (ValueError, TypeError, IndexError, np.exceptions.AxisError) as e:
        _explain_failure(prim, args, params, e)
    finally:
        if token is not None:
            quiet_exit(token)
    if prim.weak != "inputs":
        weak = prim.out_weak([a.weak_type if type(a) is Array else False for a in args], params)
    if prim.multiple_results:
        return [Array._wrap(o, weak) for o in out]
    return Array._wrap(out, weak)


def aval_of(x):
    """The ShapedArray of a concrete value or tracer (Python scalars are weakly typed)."""
    if isinstance(x, Tracer) or type(x) is _Array:
        return x.aval
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return ShapedArray((), dtypes.python_scalar_dtype(x), not isinstance(x, bool))
    x = np.asarray(x)
    return ShapedArray(x.shape, x.dtype, False)


def _explain_failure(prim, args, params, err):
    """An eager NumPy failure becomes the shape rule's error (same text as under jit)."""
    if isinstance(err, SecantError):
        raise err
    try:
        prim.shape_rule(*[aval_of(a) for a in args], **params)
    except SecantError as rule_error:
        raise rule_error from None
    except Exception:
        pass
    raise SecantTypeError(f"{prim.name}: {err}{where()}") from None


Primitive.bind = Primitive.__call__ = bind      # prim.bind(...) costs no extra call layer


def eager_unary(prim, slow):
    """`f(x)` for a one-argument primitive with a ufunc: an eager Array, a NumPy array or scalar
    of a canonical dtype the ufunc computes exactly, or a Python float, runs the ufunc directly
    (what conversion + bind would do, less their generic work: same value, dtype, weak type and
    quiet floating-point errors); anything else calls `slow(x)`. A 0-d result is kept as the
    NumPy scalar the ufunc returns (Array._npy; a third of a 0-d ufunc call, no conversion)."""
    ufunc, ok, Array = prim.ufunc, _by_use(prim.ufunc_dtypes), _Array
    keep_weak = prim.weak == "inputs"
    new, call, ndarray = object.__new__, _quiet_context_call, np.ndarray
    if ufunc is None or prim.weak not in ("inputs", "never") or prim.multiple_results:
        return slow
    x64 = dtypes.X64
    wide = (dtypes.float64, dtypes.complex128)     # narrowed without enable_x64
    numpy_types = frozenset([ndarray, np.float32, np.float64, np.complex64, np.complex128])
    # a Python float is weakly typed, of the default float dtype (computed by the ufunc only
    # when that dtype is one it computes exactly)
    floats = {flag: t for flag, t in {False: np.float32, True: np.float64}.items()
              if np.dtype(t) in ok}

    scalar_types = frozenset(dt.type for dt in ok)     # (a 0-d value held as its scalar)

    def f(x, /):
        if type(x) is Array:
            v = x._npy
            tv = type(v)
            if tv is ndarray:
                if v.dtype not in ok:
                    return slow(x)
                if not v.ndim:
                    v = v[()]       # (0-d: its scalar, which NumPy computes in a third less time)
            elif tv not in scalar_types:    # (None: a device buffer)
                return slow(x)
            weak = keep_weak and x.weak_type
        else:
            t = type(x)
            if t is float:
                make = floats.get(x64[0])
                if make is None:
                    return slow(x)
                v, weak = make(x), keep_weak
            elif t in numpy_types:      # (not copied: the ufunc's result is a new array)
                dt = x.dtype
                if dt not in ok or (dt in wide and not x64[0]):
                    return slow(x)
                v, weak = (x[()] if t is ndarray and not x.ndim else x), False
            else:
                return slow(x)
        try:
            out = call(ufunc, v)    # (in the quiet state: see _quiet_numpy)
        except RuntimeError:        # (the quiet context in use by another thread: see quiet_call)
            out = run_quiet(ufunc, v)
        self = new(Array)           # (Array._wrap_ndarray, written out: no call)
        self._npy = out             # (an array, or the NumPy scalar of a 0-d one)
        self._buf = self._aval = None
        self.weak_type = weak
        return self
    if keep_weak and all(dt in ok for dt in FAST_FLOATS):
        f.__secant_raw__ = (ufunc, None)    # (what secant/raw_eager.py calls on NumPy values)
    return f


def eager_binary(prim, slow):
    """`f(x1, x2)` for a two-argument primitive with a ufunc: two eager Arrays of one dtype the
    ufunc computes exactly run it directly (what promote + bind would do: same value, dtype,
    weak type, quiet floating-point errors; a failure, such as shapes that do not broadcast, is
    left to `slow` to report); anything else calls `slow(x1, x2)`. Two 0-d operands give a
    NumPy scalar (Array._npy), as eager_unary."""
    ufunc, ok, Array = prim.ufunc, _by_use(prim.ufunc_dtypes), _Array
    if ufunc is None or prim.weak != "inputs" or prim.multiple_results:
        return slow
    new, call = object.__new__, _quiet_context_call
    # two 0-d operands of one dtype, computed on their NumPy scalars, by type: for real floats
    # NumPy's scalar arithmetic (the same IEEE operation in the same type, the same error state,
    # a fraction of a ufunc call on scalars)
    arith = {np.add: operator.add, np.subtract: operator.sub,
             np.multiply: operator.mul}.get(ufunc, ufunc)
    scalar_ops = {dt.type: arith if dt in FAST_FLOATS else ufunc for dt in ok}

    x64, fast = dtypes.X64, frozenset(dt for dt in FAST_FLOATS if dt in ok)

    def mixed(x1, x2):
        # an eager float32/float64 Array and a Python float or int: the Python scalar is weakly
        # typed, so it takes the array's dtype (JAX's promotion, what promote + bind do); the
        # array weak too only when it has the default float dtype (else promotion decides)
        first = type(x1) is Array
        arr, py = (x1, x2) if first else (x2, x1)
        tp = type(py)
        if type(arr) is not Array or (tp is not float and tp is not int):
            return None
        v = arr._npy
        if v is None:
            return None
        dt = v.dtype
        if dt not in fast or arr.weak_type and dt.itemsize != (8 if x64[0] else 4) \
                or tp is int and not -2 ** 31 <= py < 2 ** 31:
            return None
        w = dt.type(py)
        op = scalar_ops[dt.type] if type(v) is dt.type else ufunc
        try:
            out = call(op, v, w) if first else call(op, w, v)
        except RuntimeError:        # (the quiet context in use by another thread)
            out = run_quiet(op, v, w) if first else run_quiet(op, w, v)
        self = new(Array)
        self._npy = out
        self._buf = self._aval = None
        self.weak_type = arr.weak_type
        return self

    def f(x1, x2, /):
        if type(x1) is not Array or type(x2) is not Array:
            out = mixed(x1, x2) if fast else None
            return slow(x1, x2) if out is None else out
        v, w = x1._npy, x2._npy
        t = type(v)
        op = scalar_ops.get(t) if t is type(w) else None
        if op is None:              # (not two scalars of one type: arrays, or no host value)
            if v is None or w is None:
                return slow(x1, x2)
            dt = v.dtype
            if dt not in ok or not (w.dtype is dt or w.dtype == dt):
                return slow(x1, x2)
            op = ufunc              # (two 0-d arrays: NumPy gives their result as a scalar)
        try:
            out = call(op, v, w)    # (in the quiet state: see _quiet_numpy)
        except ValueError:          # (shapes that do not broadcast: slow names the caller)
            return slow(x1, x2)
        except RuntimeError:        # (the quiet context in use by another thread: see quiet_call)
            try:
                out = run_quiet(op, v, w)
            except ValueError:
                return slow(x1, x2)
        self = new(Array)           # (Array._wrap_ndarray, written out: no call)
        self._npy = out             # (an array, or the NumPy scalar of two 0-d operands)
        self._buf = self._aval = None
        self.weak_type = x1.weak_type and x2.weak_type
        return self
    if all(dt in ok for dt in FAST_FLOATS):
        f.__secant_raw__ = (ufunc, arith)   # (what secant/raw_eager.py calls on NumPy values)
    return f

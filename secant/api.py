"""jit, device placement and friends: the face of the tracer and the PJRT runtime."""
import collections
import functools
import inspect
import operator
import os
import threading
import weakref

import numpy as np

from secant import compile_index, jit_closures, tree_util
from secant.backends import dtypes, once, runtime
from secant.backends.array import Array
from secant.backends.config import config
from secant.backends.core import ShapedArray, Tracer
from secant.backends.errors import (ConcretizationError, SecantError, SecantTypeError,
                                    SecantValueError, where)
from secant.backends.recursion import recursion_error
from secant.backends.tracer import Trace, canonical_aval

_flatten = tree_util.registry().flatten
_SCALARS = (bool, int, float, complex)
# module text -> Executable: one XLA compile per distinct module (least recently used dropped)
_executables = collections.OrderedDict()
_X64 = [config.read("enable_x64")]     # part of every jit cache key
# how many signatures were traced and modules compiled (jit and pmap) in this process; the
# caches build each once, also when threads ask for it at the same time (backends/once.py)
stats = {"traces": 0, "compiles": 0}
_stats_lock = threading.Lock()
_CACHE_SIZE = [config.read("jit_cache_size")]
JIT_HOOKS = []      # hook(jitted) after each signature jit traces


def _count(what):
    with _stats_lock:
        stats[what] += 1


def _config_changed(name, value):
    if name == "enable_x64":
        _X64[0] = bool(value)
        _numpy_avals.clear()
    if name == "jit_cache_size":
        _CACHE_SIZE[0] = value


def cached(cache, key, make):
    """cache[key], made by `make()` once (threads asking at once wait for it: backends/once.py),
    in an LRU OrderedDict that keeps at most config jit_cache_size entries (a hit calls
    `_touch`)."""
    value = once.build(cache, key, make)
    bound = _CACHE_SIZE[0]
    while bound is not None and len(cache) > bound:
        try:
            cache.popitem(last=False)
        except KeyError:        # (emptied by another thread meanwhile)
            break
        fast = getattr(cache, "fast", None)
        if fast:                # (a trace cache: its fast keys may name the dropped entry)
            fast.clear()
            cache.last = None
        for jitted in list(getattr(cache, "cpp", ())):     # (C++ dispatchers' signatures too)
            cpp = jitted._cpp
            if cpp is not None:
                cpp._clear_cache()
    return value


config.on_change(_config_changed)


_numpy_avals = {}


def _numpy_aval(x):
    """The aval of a NumPy argument: equal to a secant.Array's of the same signature."""
    key = (x.shape, x.dtype)
    aval = _numpy_avals.get(key)
    if aval is None:
        if len(_numpy_avals) > 4096:        # many shapes: start again rather than grow
            _numpy_avals.clear()
        aval = _numpy_avals[key] = ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))
    return aval


def _leaf_key(x):
    t = type(x)
    if t is Array:
        return x.aval
    if t is np.ndarray:
        return _numpy_aval(x)
    if t in _SCALARS:
        return t
    if isinstance(x, Tracer):
        if not x._trace.live or not x._trace.owned_here():   # leaked from a finished trace,
            # or from another thread's: no inline call
            x._trace.leaked(x)
        raise _InlineCall
    if isinstance(x, (np.ndarray, np.generic)) or t in _SCALARS:
        return (np.shape(x), np.asarray(x).dtype, t)
    raise SecantTypeError(f"argument of type {t.__name__} is not a valid array type for jit; pass "
                          "arrays, scalars or pytrees of them, or mark it static (static_argnums)"
                          + where())


class _InlineCall(Exception):
    """A jitted function called on Tracers (jit inside jit): it is traced inline instead."""


class _Compiled:
    """One traced and compiled signature: the executable and how to feed and unpack it."""
    __slots__ = ("exe", "text", "in_avals", "out_avals", "out_tree", "device", "_putters",
                 "_single_out", "_check_device", "_execute", "_handlers", "_placed", "key",
                 "consts")

    def __init__(self, exe, text, in_avals, out_avals, out_tree):
        self.exe = exe
        self.text = text
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.out_tree = out_tree
        self.device = exe.device
        self._putters = [runtime.putter(a.shape, a.dtype, exe.device) for a in in_avals]
        self._single_out = out_tree.num_leaves == 1 and out_tree.num_nodes == 1
        self._check_device = not runtime.single_device()
        self._execute, self._handlers = exe.execute_sharded, exe.handlers
        self._placed = {exe.device: self}
        self.key = None     # its trace cache key (the very object the cache holds)
        self.consts = ()    # the values of its hoisted parameters (after the arguments)

    def _on(self, device):
        """This signature compiled for `device` (one executable per device it runs on)."""
        c = self._placed.get(device)
        if c is None:
            c = self._placed.setdefault(device, _Compiled(
                _executable(self.text, self.out_avals, device), self.text, self.in_avals,
                self.out_avals, self.out_tree))
            c.consts = self.consts
        return c

    def _run_placed(self, leaves):
        """Several devices: run where the committed inputs live (as JAX); uncommitted inputs
        (NumPy, eager arrays, device_put without a device) follow them, else the default."""
        device = None
        first = None
        for i, x in enumerate(leaves):
            if type(x) is Array and x._buf is not None and getattr(x, "_committed", False):
                d = runtime.device_of(x._buf)
                if device is None:
                    device, first = d, i
                elif d is not device:
                    raise SecantValueError(
                        f"jit received arrays committed to different devices: argument leaf "
                        f"{first} is on {device}, argument leaf {i} on {d}; move them to one "
                        "device with secant.device_put(x, device)" + where())
        if device is None:
            return self._run(leaves, False)
        return self._on(device)._run(leaves, True)

    def run(self, leaves):
        if self.consts:
            leaves = [*leaves, *self.consts]
        if self._check_device:
            return self._run_placed(leaves)
        return self._run(leaves, False)

    def _run(self, leaves, committed):
        bufs = []
        for x, aval, put in zip(leaves, self.in_avals, self._putters):
            if type(x) is Array:
                b = x._buf
                if b is not None and (not self._check_device
                                      or runtime.device_of(b) is self.device):
                    bufs.append(b)
                    continue
                x = x._value()
            if type(x) is not np.ndarray or x.dtype != aval.dtype:
                x = np.asarray(x, dtype=aval.dtype)
            bufs.append(put(x))
        try:
            outs = self._execute(bufs).consume_with_handlers(self._handlers)
        except TypeError:
            _check_not_donated(bufs)
            raise
        if self._single_out:
            return Array._from_buffer(outs[0], self.out_avals[0], committed)
        return self.out_tree.unflatten(
            [Array._from_buffer(b, a, committed) for b, a in zip(outs, self.out_avals)])


class Lowered:
    """`jit(f).lower(*args)`: the traced StableHLO, not compiled yet."""

    def __init__(self, jitted, text, in_avals, out_avals, out_tree):
        self._jitted, self._text = jitted, text
        self.in_avals, self.out_avals, self.out_tree = in_avals, out_avals, out_tree

    def as_text(self):
        return self._text

    def compile(self):
        return Compiled(_Compiled(_executable(self._text, self.out_avals), self._text,
                                  self.in_avals, self.out_avals, self.out_tree))


class _WithFloat0:
    """A jitted function's output structure some of whose leaves are float0 (the gradients of
    integer arguments, which hold no numbers): the compiled program returns the other leaves."""

    def __init__(self, tree, float0):
        self.tree, self.float0 = tree, float0
        self.num_leaves = tree.num_leaves - len(float0)
        self.num_nodes = tree.num_nodes + 1          # (never read as one bare output)

    def unflatten(self, leaves):
        it = iter(leaves)
        return self.tree.unflatten([self.float0[i] if i in self.float0 else next(it)
                                    for i in range(self.tree.num_leaves)])


class Compiled:
    """`jit(f).lower(*args).compile()`: an executable for exactly the lowered signature."""

    def __init__(self, compiled):
        self._c = compiled

    def __call__(self, *args):
        leaves, _ = _flatten(args)
        if len(leaves) != len(self._c.in_avals):
            raise SecantTypeError(f"compiled function expects {len(self._c.in_avals)} array "
                                  f"arguments, got {len(leaves)}")
        for i, (x, a) in enumerate(zip(leaves, self._c.in_avals)):
            b = canonical_aval(x)
            if (b.shape, b.dtype) != (a.shape, a.dtype):
                raise SecantTypeError(f"compiled function argument {i}: expected "
                                      f"{a.str_short()}, got {b.str_short()}")
        return self._c.run(leaves)

    def as_text(self):
        return self._c.exe.as_hlo_text()

    def memory_analysis(self):
        """XLA's sizes for this executable (argument, output, temp bytes), as JAX's."""
        return self._c.exe.exe.get_compiled_memory_stats()

    def cost_analysis(self):
        return self._c.exe.cost_analysis()


def _executable(text, out_avals, device=None):
    key = text if device is None else (text, device.id)
    exe = _executables.get(key)
    if exe is None:
        def compile_():
            _count("compiles")
            return runtime.Executable(text, out_avals, device)
        exe = cached(_executables, key, compile_)
    else:
        _touch(_executables, key)
    return exe


def _touch(cache, key):
    try:
        cache.move_to_end(key)
    except KeyError:        # dropped by another thread meanwhile
        pass


class JitFunction:
    """The callable `jit(f)` returns: traced once per signature, compiled once per module."""

    def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=()):
        if not callable(fun):
            raise SecantTypeError(f"jit expects a callable, got {type(fun).__name__}{where()}")
        functools.update_wrapper(self, fun)
        self._fun = fun
        static_argnums = _as_tuple(static_argnums)
        static_argnames = _as_tuple(static_argnames)
        for what, values, kind in (("static_argnums", static_argnums, int),
                                   ("static_argnames", static_argnames, str),
                                   ("donate_argnums", _as_tuple(donate_argnums), int)):
            bad = [v for v in values if not isinstance(v, kind) or isinstance(v, bool)]
            if bad:     # as JAX: a TypeError where jit is applied
                raise SecantTypeError(f"jit's {what} must be {kind.__name__}s, got {bad[0]!r} "
                                      f"of type {type(bad[0]).__name__}{where()}")
        if static_argnums or static_argnames:
            sig = _signature_of(fun)
            params = list(sig.parameters.values()) if sig is not None else []
        else:       # (read at the first trace, as only _check_call needs it: a fresh closure
            sig, params = _UNREAD, []       # per step, issue 19, does not build it per step)
        positional = [p.name for p in params
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._signature = sig
        if params and not any(p.kind == p.VAR_POSITIONAL for p in params):
            for n in static_argnums:        # as JAX: checked where jit is applied
                if not -len(positional) <= n < len(positional):
                    raise SecantValueError(f"jitted function has static_argnums={static_argnums}, "
                                           f"but only accepts {len(positional)} positional "
                                           f"arguments{where()}")
        # JAX infers each of static_argnums / static_argnames from the other when it can.
        names = set(static_argnames)
        nums = set(n if n >= 0 else len(positional) + n for n in static_argnums)
        for n in list(nums):
            if n < len(positional):
                names.add(positional[n])
        for name in list(names):
            if name in positional:
                nums.add(positional.index(name))
        self._static_nums = frozenset(nums)
        self._static_names = frozenset(names)
        self._donate = frozenset(_as_tuple(donate_argnums))
        self._simple = not nums and not names
        # signature -> _Compiled, LRU (jit_cache_size)
        self._cache = _trace_cache(fun, (self._static_nums, self._static_names, self._donate))
        self._fast_ok = self._simple and not self._donate and hasattr(self._cache, "fast")
        # calls with NumPy arguments go through jaxlib's C++ dispatcher (made at the first)
        self._cpp_ok = self._fast_ok and _CPP_DISPATCH
        self._cpp = None
        self._cpp_refused = 0       # misses C++ could not take (see _cpp_miss)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def _split(self, args, kwargs):
        """(dynamic args, dynamic kwargs, static key, a function to rebuild the full call)."""
        static = []
        dyn_args = []
        for i, a in enumerate(args):
            if i in self._static_nums:
                static.append((i, _hashable(a, i)))
            else:
                dyn_args.append(a)
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self._static_names:
                static.append((k, _hashable(v, k)))
            else:
                dyn_kwargs[k] = v
        return tuple(dyn_args), dyn_kwargs, tuple(static)

    def __call__(self, *args, **kwargs):
        cache = self._cache
        if cache.guards:
            # (a trace taken again to ask them: once for the whole call, a retrace included)
            from secant.transformer.trace_source import once_per_call
            with once_per_call():
                self._check_guards()
                return self._call(args, kwargs)
        if kwargs:
            return self._call(args, kwargs)
        if args and type(args[0]) is _ndarray:
            cpp = self._cpp
            if cpp is not None and self._cpp_ok and not _X64[0]:
                # NumPy arrays only, of dtypes C++ puts as they are (the common NumPy call):
                # handed to C++ as they come, no list of inputs built
                for x in args:
                    if type(x) is not _ndarray or x.dtype not in _CPP_DTYPE_ORDER:
                        break
                else:
                    out = cpp(*args)
                    if type(out) is not _ArrayImpl:
                        return self._cpp_result(out)
                    # (as _cpp_result: C++ reads NumPy in place while the program runs, which
                    # it puts NumPy arguments' copy ahead of: waited for, where not ready yet)
                    if not out.is_ready():
                        out.block_until_ready()
                    tag = out.aval
                    if len(cache) > 1:      # (one signature: already the most recent)
                        try:
                            cache.move_to_end(tag.key)
                        except KeyError:
                            pass
                    res = _new(Array)       # (_committed, _sharded unset, as eager arrays')
                    res._npy, res._buf, res._aval, res.weak_type = None, out, tag.aval, \
                        tag.weak_type
                    return res
        else:
            last = cache.last
            if last is not None:
                # the last warm signature of device arrays, recognised by its avals' identity
                # (an array made by this program, or the same array again, carries the very
                # aval object): no key to build or hash
                x64, avals, key, run, one = last
                if x64 is _X64[0] and len(args) == len(avals):
                    bufs = []
                    i = 0
                    for x in args:
                        if type(x) is not Array or x._aval is not avals[i]:
                            break
                        b = x._buf
                        if b is None:
                            break
                        bufs.append(b)
                        i += 1
                    else:
                        if len(cache) != 1:     # (one signature: already the most recent)
                            try:
                                cache.move_to_end(key)      # (LRU order kept exactly)
                            except KeyError:                # dropped meanwhile: the full path
                                run = None
                        if one is not None and run is not None:
                            # one output: run_bufs written out (no Python frame of its own)
                            execute, handlers, out_aval, weak = one
                            try:
                                b = execute(bufs).consume_with_handlers(handlers)[0]
                            except TypeError:
                                _check_not_donated(bufs)
                                raise
                            res = _new(Array)   # (_committed, _sharded unset, as run_bufs')
                            res._npy, res._buf, res._aval, res.weak_type = None, b, out_aval, \
                                weak
                            return res
                        if run is not None:
                            return run(bufs)
        if self._cpp_ok and not _X64[0]:
            out = self._call_cpp(args)
            if out is not _NOT_TAKEN:
                return out
        return self._call(args, kwargs)

    def _call_cpp(self, args):
        """jitted(*args) through jaxlib's C++ dispatcher when some argument is a NumPy array and
        every other one a strong device array (enable_x64 off, flat positional arguments): C++
        puts the NumPy arrays and runs the executable of their signature; an unseen signature comes
        back through _cpp_miss to the Python path. _NOT_TAKEN for any other call."""
        ins = []
        host = False
        for x in args:
            t = type(x)
            if t is np.ndarray:
                dt = x.dtype
                if dt not in _CPP_DTYPES:
                    narrow = _NARROW.get(dt)
                    if narrow is None:
                        return _NOT_TAKEN
                    x = x.astype(narrow)
                host = True
            elif t is Array:
                if x.weak_type:     # (its buffer reads as strong to C++)
                    return _NOT_TAKEN
                x = x._buf
                if type(x) is not _ArrayImpl:
                    return _NOT_TAKEN
            else:
                return _NOT_TAKEN
            ins.append(x)
        if not host:
            return _NOT_TAKEN
        cpp = self._cpp
        if cpp is None:
            cpp = self._cpp = _cpp_dispatcher(self)
            if cpp is None:
                self._cpp_ok = False
                return _NOT_TAKEN
            self._cache.cpp.add(self)
        return self._cpp_result(cpp(*ins))

    def _cpp_result(self, out):
        """What jitted(...) returns for what the C++ dispatcher returned."""
        if type(out) is not _ArrayImpl:
            if type(out) is tuple and out and type(out[0]) is _ArrayImpl:
                return self._cpp_outputs(out)   # (several outputs)
            return out                      # (a miss: the Python path ran it)
        # C++ reads NumPy memory in place, while the program runs: done before the caller may
        # change it (jax.jit does not wait, and reads what was written)
        if not out.is_ready():      # (a small program runs inline: ready, and is_ready costs
            out.block_until_ready()     # less than block_until_ready's wait on it)
        tag = out.aval                      # (_CppOut: which signature ran)
        try:
            self._cache.move_to_end(tag.key)    # (LRU order kept exactly)
        except KeyError:                        # (dropped meanwhile)
            pass
        res = _new(Array)   # (Array._from_buffer inlined; _committed, _sharded unset, as eager's)
        res._npy, res._buf, res._aval, res.weak_type = None, out, tag.aval, tag.weak_type
        return res

    def _cpp_outputs(self, bufs):
        """The result of a C++ hit of several outputs (its flat tuple of buffers)."""
        for b in bufs:
            b.block_until_ready()           # (as for one output)
        tag = bufs[0].aval
        try:
            self._cache.move_to_end(tag.key)
        except KeyError:
            pass
        return tag.tree.unflatten([Array._from_buffer(b, b.aval.aval) for b in bufs])

    def _call(self, args, kwargs):
        """The Python path: the warm table of flat signatures, else the full path."""
        cache = self._cache
        fkey = None
        if self._fast_ok and not kwargs:
            # the warm path for flat positional arguments (arrays, NumPy arrays, scalars): a
            # per-signature runner found by a key of just what that signature needs, what each
            # argument's conversion depends on (an array's aval, a NumPy array's shape and
            # dtype, a Python scalar's type); an argument of another kind (a Tracer, a pytree)
            # takes the full path
            fkey = [_X64[0]]
            for x in args:
                t = type(x)
                if t is Array:
                    a = x._aval
                    fkey.append(a if a is not None else x.aval)
                elif t is np.ndarray:
                    fkey.append((x.shape, x.dtype))
                elif t in _SCALARS:
                    fkey.append(t)
                else:
                    fkey = None
                    break
            else:
                fkey = tuple(fkey)
                hit = cache.fast.get(fkey)
                if hit is not None:
                    try:
                        cache.move_to_end(hit[0])       # (LRU order kept exactly)
                    except KeyError:                    # dropped meanwhile: the full path
                        pass
                    else:
                        if hit[2] is not None:          # device arrays: the next call's guess
                            cache.last = (fkey[0], fkey[1:], hit[0], hit[2], hit[3])
                        return hit[1](args)
        if self._simple and not kwargs:
            leaves, treedef = _flatten(args)
            static = ()
        else:
            dyn_args, dyn_kwargs, static = self._split(args, kwargs)
            leaves, treedef = _flatten((dyn_args, dyn_kwargs))
        try:
            # an Array's aval is already built, skip the call to _leaf_key
            key = _Key((treedef, static, _X64[0],
                        *[x._aval if type(x) is Array and x._aval is not None else _leaf_key(x)
                          for x in leaves]))
        except _InlineCall:
            return _functionalized(self._fun)(*args, **kwargs)
        entry = self._cache.get(key)      # (a hit takes no lock)
        if entry is None:   # traced and compiled once, also when threads miss it at once
            self._check_call(args, kwargs)
            entry = cached(self._cache, key, lambda: self._compile(args, kwargs, leaves, treedef,
                                                                   static, key))
        else:
            _touch(self._cache, key)
        if fkey is not None and entry.key is not None:
            _add_fast(self._cache, fkey, args, entry.key, entry)
        out = entry.run(leaves)
        if self._donate:
            _mark_donated(args, self._donate)
        return out

    def _check_guards(self):
        """What its compiled programs took from Python state (a global frame stack's contents,
        read by a function traced on each call) still holds; if not, they are dropped and the
        call traces again, as the eager derivative does (never a stale program)."""
        cache = self._cache
        if all(g.holds() for g in cache.guards):
            return
        cache.guards = ()
        cache.drop_all()

    def _add_guards(self, guards):
        cache = self._cache
        ids = {(id(g.fn), g.why) for g in cache.guards}
        for g in guards:        # (one per function traced: the trace asked once per call)
            if (id(g.fn), g.why) not in ids:
                ids.add((id(g.fn), g.why))
                cache.guards += (g,)
        self._cpp_ok = False        # (every call comes through __call__, which asks them)

    def _check_call(self, args, kwargs):
        """Arguments that do not fit the signature: Python's TypeError, at the caller's line
        (once per signature, before tracing)."""
        if self._signature is _UNREAD:
            self._signature = _signature_of(self._fun)
        if self._signature is not None:
            try:
                self._signature.bind(*args, **kwargs)
            except TypeError as e:
                raise SecantTypeError(f"{getattr(self._fun, '__name__', 'f')}: {e}{where()}") \
                    from None

    # --- tracing ----------------------------------------------------------------------------------
    def _trace(self, args, kwargs, leaves, treedef, static, hoist=False, make_fun=None):
        from secant.backends.control_flow import CarryChanged
        from secant.transformer.functionalize import unrolled
        try:
            return self._trace_once(args, kwargs, leaves, treedef, hoist, make_fun)
        except CarryChanged as e:
            # a Python loop jit staged as a lax loop whose carry changes shape (`a = a[1:] -
            # a[:-1]`): traced again with Python loops as written (unrolled, as jax.jit does)
            try:
                with unrolled():
                    return self._trace_once(args, kwargs, leaves, treedef, hoist, make_fun)
            except Exception:
                raise e from None

    def _trace_once(self, args, kwargs, leaves, treedef, hoist=False, make_fun=None):
        """(text, in_avals, out_avals, out_tree), and with `hoist` (what a call compiles) the
        concrete arrays the trace made parameters of their own (backends/tracer.py Trace.hoist)
        besides: in_avals then ends with theirs. `make_fun(trace)`, given, makes the function
        traced, after the arguments' parameters (secant/jit_closures.py: with parameters of its
        own, which in_avals then has too)."""
        in_avals = [canonical_aval(x) for x in leaves]
        name = getattr(self._fun, "__name__", "f")
        trace = Trace(name)
        trace.hoist = hoist and _HOIST
        try:
            text, in_avals, out_avals, out_tree = self._trace_into(trace, args, kwargs, treedef,
                                                                   in_avals, name, make_fun)
        finally:
            trace.finish()      # its Tracers that escaped (a global, a list) are dead now
        if not hoist:
            return text, in_avals, out_avals, out_tree
        hoisted = trace.params[len(in_avals):]
        return (text, list(in_avals) + [p.aval for p in hoisted], out_avals, out_tree,
                tuple(trace.hoisted))

    def _trace_into(self, trace, args, kwargs, treedef, in_avals, name, make_fun=None):
        tracers = treedef.unflatten([trace.new_arg(a) for a in in_avals])
        fun = self._fun if make_fun is None else make_fun(trace)
        if self._simple and not kwargs:
            call_args, call_kwargs = tracers, {}
        else:
            dyn_args, dyn_kwargs = tracers
            it = iter(dyn_args)
            call_args = [args[i] if i in self._static_nums else next(it) for i in range(len(args))]
            call_kwargs = {k: (kwargs[k] if k in self._static_names else dyn_kwargs[k])
                           for k in kwargs}
        fun = _functionalized(fun)      # Python if/while/for -> lax calls (traced only)
        from secant.transformer.trace_source import guards_collected, once_per_call
        # (once_per_call: a function traced on each call runs its Python once in this trace,
        # however many derivatives and guards ask for its trace)
        with trace.activate(), guards_collected() as guards, once_per_call():
            try:
                out = fun(*call_args, **call_kwargs)
            except RecursionError as e:
                err = recursion_error(e, "jit")
                if err is None:
                    raise
                raise err from None
            except Exception as e:      # Python's own (a raise desugared from the user's line)
                if not isinstance(e, SecantError):  # names the user's line, as grad's does
                    from secant.transforms import _note_user_lines
                    _note_user_lines(e)
                raise
        if guards:
            self._add_guards(guards)
        out_leaves, out_tree = _flatten(out)
        for o in out_leaves:
            if not (isinstance(o, (Tracer, Array, np.ndarray, np.generic)) or type(o) in _SCALARS):
                raise SecantTypeError(f"{name} returned a {type(o).__name__}, which is not an "
                                      "array; jitted functions return arrays or pytrees of arrays")
        float0 = {i: o for i, o in enumerate(out_leaves)
                  if getattr(o, "dtype", None) is not None and o.dtype.names == ("float0",)}
        if float0:      # an integer argument's gradient: a constant, returned as it is
            out_leaves = [o for i, o in enumerate(out_leaves) if i not in float0]
            out_tree = _WithFloat0(out_tree, float0)
        text, out_avals = trace.module(out_leaves)
        return text, in_avals, out_avals, out_tree

    def _compile(self, args, kwargs, leaves, treedef, static, key=None):
        if key is not None and _HOIST:      # a fresh closure of one traced before: no trace
            compiled = jit_closures.compiled(self, args, kwargs, leaves, treedef, static, key)
            if compiled is not None:
                return compiled
        # the persistent cache's record of this call's trace, by a key read before tracing
        early = None if key is None else compile_index.key(self, args, key.t)
        if early is not None:
            in_avals = [canonical_aval(x) for x in leaves]
            found = compile_index.load(early, in_avals)
            if found is not None:
                text, out_avals, out_tree = found
                compiled = _Compiled(_executable(text, out_avals), text, in_avals, out_avals,
                                     out_tree)
                compiled.key = key
                return compiled
        guards = self._cache.guards
        text, in_avals, out_avals, out_tree, hoisted = self._trace(args, kwargs, leaves,
                                                                   treedef, static, hoist=True)
        _count("traces")
        for hook in JIT_HOOKS:      # (`secant run --show-source`: secant/source_log.py)
            hook(self)
        compiled = _Compiled(_executable(text, out_avals), text, in_avals, out_avals, out_tree)
        compiled.consts = _hoisted_consts(hoisted, in_avals[len(leaves):],
                                          compiled._putters[len(leaves):])
        compiled.key = key
        if early is not None and self._cache.guards is guards:
            compile_index.store(early, compiled, len(leaves))
        return compiled

    def lower(self, *args, **kwargs):
        dyn_args, dyn_kwargs, static = self._split(args, kwargs)
        if self._simple and not kwargs:
            leaves, treedef = _flatten(args)
        else:
            leaves, treedef = _flatten((dyn_args, dyn_kwargs))
        for x in leaves:
            _leaf_key(x)
        text, in_avals, out_avals, out_tree = self._trace(args, kwargs, leaves, treedef, static)
        return Lowered(self, text, in_avals, out_avals, out_tree)

    def _cache_size(self):
        return len(self._cache)

    def __repr__(self):
        return f"<secant.jit of {getattr(self._fun, '__qualname__', self._fun)}>"


# fun -> {jit parameters -> its trace cache}: one cache per function, as JAX's, so that
# `jit(f)(x)` written twice traces f once (and sees a global's value at that first trace)
_trace_caches = weakref.WeakKeyDictionary()
_trace_caches_lock = threading.Lock()


def _trace_cache(fun, params):
    try:
        with _trace_caches_lock:
            per_fun = _trace_caches.get(fun)
            if per_fun is None:
                per_fun = _trace_caches[fun] = {}
            cache = per_fun.get(params)
            if cache is None:
                cache = per_fun[params] = _TraceCache()
        return cache
    except TypeError:       # not weakly referable or not hashable: a cache of its own
        return _TraceCache()


def clear_caches():
    """Drop every compiled program and jit trace cache, as jax.clear_caches(): the next call of
    a jitted function traces and compiles again (jitted functions stay usable). A process that
    jits many short-lived functions bounds its memory with it (the test suite calls it after
    each test file: an XLA CPU executable keeps ~0.5 MB of code and buffers)."""
    from secant import parallel
    from secant.backends import compiled_kernels
    with _trace_caches_lock:
        caches = [c for per_fun in list(_trace_caches.values()) for c in per_fun.values()]
    for cache in caches:
        cache.drop_all()
    for table in (_executables, parallel._executables, compiled_kernels._executables):
        table.clear()
    jit_closures.clear()


class _TraceCache(collections.OrderedDict):
    """signature key -> _Compiled (LRU, jit_cache_size), and `fast`: the warm path's table,
    flat-argument key -> (signature key, runner, run on buffers or None); cleared whenever an
    entry is dropped, as are `last` and the C++ dispatchers' tables (`cpp`)."""

    def __init__(self):
        super().__init__()
        self.fast = {}
        self.cpp = weakref.WeakSet()    # the jit functions whose C++ dispatchers read it
        # guards of functions its traces transformed as traced on each call (a value passing
        # through a global: transformer/trace_source.py SameTrace), asked before each call
        self.guards = ()
        # (enable_x64, avals, signature key, run(buffers)) of the last warm call of device
        # arrays (single device, one output), or None
        self.last = None


    def drop_all(self):
        """Every signature dropped, the warm paths' tables too (jit traces again)."""
        self.clear()
        self.fast.clear()
        self.last = None
        for jitted in list(self.cpp):
            if jitted._cpp is not None:
                jitted._cpp._clear_cache()


class _Key:
    """A trace cache key with its hash computed once (the warm path re-touches it per call)."""
    __slots__ = ("t", "h")

    def __init__(self, t):
        self.t = t
        self.h = hash(t)

    def __hash__(self):
        return self.h

    def __eq__(self, other):
        return type(other) is _Key and self.h == other.h and self.t == other.t


# --- jaxlib's C++ dispatcher for calls with NumPy arguments (SECANT_CPP_DISPATCH=0: off) ---------
_CPP_DISPATCH = os.environ.get("SECANT_CPP_DISPATCH", "") != "0"
# closed-over arrays as parameters of a jit's program (SECANT_HOIST_CONSTANTS=0: literals)
_HOIST = os.environ.get("SECANT_HOIST_CONSTANTS", "") != "0"
_ArrayImpl = runtime.ArrayImpl
_new = object.__new__
_NOT_TAKEN = object()
# NumPy dtypes C++ puts as they are, whatever its enable_x64 state (it narrows 64-bit ones when
# that is off, and that state is jax's once jax is imported): the others go to C++ only
# narrowed here first, as secant narrows them (enable_x64 off); bfloat16 not at all
_NARROW = dtypes._NARROW
_CPP_DTYPES = dtypes._SUPPORTED_SET - _NARROW.keys() - {dtypes.bfloat16}
# the same, as a tuple, the commonest first: `dt in` it compares by identity before equality,
# so a float32 array's dtype is found at once (hashing a NumPy dtype costs ~0.1 µs: issue 19)
_CPP_DTYPE_ORDER = tuple(sorted(_CPP_DTYPES, key=lambda d: (
    d != np.float32, d != np.int32, d != np.bool_, d.kind, d.itemsize, d.name)))
_ndarray = np.ndarray


class _CppOut:
    """An output aval handed to C++ for one signature: C++ reads shape, dtype and weak_type,
    and gives it back as its result buffers' aval, so a hit names its trace cache entry (and
    the output tree, for several outputs, which C++ returns as a flat tuple)."""
    __slots__ = ("shape", "dtype", "weak_type", "aval", "key", "tree")

    def __init__(self, aval, key, tree):
        self.shape, self.dtype, self.weak_type = aval.shape, aval.dtype, aval.weak_type
        self.aval, self.key, self.tree = aval, key, tree


def _cpp_dispatcher(jitted):
    """The C++ dispatcher of `jitted` (one device only), or None."""
    if not runtime.single_device():
        return None
    return runtime.cpp_dispatcher(getattr(jitted._fun, "__name__", "f"),
                                  lambda *ins: _cpp_miss(jitted, ins))


def _cpp_miss(jitted, ins):
    """A signature the C++ dispatcher has not seen: run by the Python path (on the arguments
    _call_cpp handed C++: NumPy arrays, and strong arrays' device buffers, wrapped again); handed
    to C++ only when C++'s view of each argument (dtype, shape, strong) is exactly the traced
    signature's (so no argument C++ would canonicalise otherwise than secant reaches that
    executable), the outputs are arrays (no float0) and the program has no host callbacks."""
    args = tuple(x if type(x) is np.ndarray else Array._from_buffer(x, ShapedArray(*_cpp_sees(x)))
                 for x in ins)
    out = jitted._call(args, {})
    data = None
    if not _X64[0]:
        leaves, treedef = _flatten(args)
        entry = jitted._cache.get(_Key((treedef, (), False, *[_leaf_key(x) for x in leaves])))
        if entry is not None and entry.key is not None and entry.out_tree.num_leaves \
                and not entry._check_device \
                and not entry.exe._callbacks and type(entry.out_tree) is type(treedef) \
                and len(entry.in_avals) == len(ins) and all(
                    _cpp_sees(x) == (a.shape, a.dtype, a.weak_type)
                    for a, x in zip(entry.in_avals, ins)):
            tree = None if entry._single_out else entry.out_tree
            data = runtime.cpp_fast_path(entry.exe, len(ins), [
                _CppOut(a, entry.key, tree) for a in entry.out_avals], tree is None)
    if data is None:    # (host callbacks, say: each call would miss again, at a cost)
        jitted._cpp_refused += 1
        if jitted._cpp_refused >= _CPP_REFUSALS:
            jitted._cpp_ok = False      # the Python path from now on
    return out, data, False


_CPP_REFUSALS = 8


def _cpp_sees(x):
    """(shape, dtype, weak type) of an argument as the C++ dispatcher reads it (a NumPy array
    by its own dtype: one that C++ would canonicalise never matches a traced signature)."""
    if type(x) is np.ndarray:
        return x.shape, x.dtype, False
    a = x.aval
    return tuple(a.shape), np.dtype(a.dtype), bool(a.weak_type)


def _add_fast(cache, fkey, args, key, entry):
    """Give this signature a warm-path runner (one device, flat positional arguments), found
    by `fkey` (JitFunction.__call__'s key of `args`)."""
    if entry._check_device or len(cache.fast) > 4 * (_CACHE_SIZE[0] or 256) + 64:
        return
    kinds = [type(x) for x in args]
    run, run_bufs, one = _runner(entry, kinds, args)
    cache.fast[fkey] = (key, run, run_bufs, one)
    if run_bufs is not None:
        cache.last = (fkey[0], fkey[1:], key, run_bufs, one)


_buffer_of = operator.attrgetter("_buf")


def _runner(entry, kinds, args):
    """(run(args), run_bufs(buffers), one) for one signature: run converts each argument only
    as its kind needs; run_bufs, for a signature of device arrays only (else None), takes their
    buffers as they are; `one`, for such a signature of one output (else None), is what
    run_bufs reads, (execute, handlers, output aval, its weak type), for JitFunction.__call__
    to run it inline."""
    execute, handlers = entry._execute, entry._handlers
    if entry.consts:        # (its hoisted parameters' buffers follow the arguments')
        consts = [c._buf for c in entry.consts]

        def execute(bufs, execute=execute):
            return entry._execute(bufs + consts)
    out_avals, out_tree, single = entry.out_avals, entry.out_tree, entry._single_out
    from_buffer = Array._from_buffer
    convs = []
    for t, x, aval, put in zip(kinds, args, entry.in_avals, entry._putters):
        dt = aval.dtype
        if t is Array:
            def conv(x, put=put, dt=dt):
                b = x._buf
                if b is None:
                    v = x._value()
                    b = put(v if v.dtype == dt else np.asarray(v, dtype=dt))
                return b
        elif t is np.ndarray and x.dtype == dt:
            conv = put
        else:
            def conv(x, put=put, dt=dt):
                return put(np.asarray(x, dtype=dt))
        convs.append(conv)
    if all(t is Array for t in kinds):
        def inputs(args):
            bufs = list(map(_buffer_of, args))     # (no Python frame per argument)
            for b in bufs:
                if b is None:
                    return [c(x) for c, x in zip(convs, args)]
            return bufs
    else:
        def inputs(args):
            return [c(x) for c, x in zip(convs, args)]
    if single:
        out_aval, weak, new = out_avals[0], out_avals[0].weak_type, object.__new__

        def run_bufs(bufs):
            try:
                buf = execute(bufs).consume_with_handlers(handlers)[0]
            except TypeError:
                _check_not_donated(bufs)
                raise
            out = new(Array)    # (Array._from_buffer inlined; _committed, _sharded unset)
            out._npy, out._buf, out._aval, out.weak_type = None, buf, out_aval, weak
            return out
    else:
        def run_bufs(bufs):
            try:
                outs = execute(bufs).consume_with_handlers(handlers)
            except TypeError:
                _check_not_donated(bufs)
                raise
            return out_tree.unflatten([from_buffer(b, a) for b, a in zip(outs, out_avals)])

    def run(args):
        return run_bufs(inputs(args))
    if not all(t is Array for t in kinds):
        return run, None, None
    return run, run_bufs, (execute, handlers, out_aval, weak) if single else None


def _hoisted_consts(values, avals, putters):
    """Hoisted parameters' values as device arrays (put on the device once)."""
    return tuple(
        c if type(c) is Array and c._buf is not None else Array._from_buffer(
            put(np.asarray(c._value() if type(c) is Array else c, dtype=a.dtype)), a)
        for c, a, put in zip(values, avals, putters))


def _functionalized(fun):
    from secant.transformer.functionalize import functionalize
    return functionalize(fun)


_UNREAD = object()


def _signature_of(fun):
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (int, str)) or not hasattr(x, "__iter__"):
        return (x,)
    return tuple(x)


def _hashable(value, which):
    try:
        hash(value)
    except TypeError:
        raise SecantValueError(
            f"static argument {which!r} of type {type(value).__name__} is not hashable; static "
            "arguments key the compilation cache, so they must be hashable (use a tuple instead "
            "of a list, or pass arrays as ordinary arguments)" + where()) from None
    return value


def _mark_donated(args, donate):
    for i in donate:
        if i < len(args):
            for leaf in tree_util.tree_leaves(args[i]):
                if type(leaf) is Array:
                    leaf._npy = None
                    leaf._buf = _DELETED


_DONATED_MESSAGE = ("an array donated to a jitted function (donate_argnums) was used again; "
                    "after the call it is deleted: use the function's result instead, or do "
                    "not donate it")


class _Deleted:
    """The buffer of a donated array: any use of it raises (jit, np.asarray, eager ops)."""

    def __getattr__(self, name):
        raise SecantError(_DONATED_MESSAGE + where())


def _check_not_donated(bufs):
    """After jaxlib refused the buffers (TypeError): a donated array's is the reason, said so."""
    for i, b in enumerate(bufs):
        if b is _DELETED:
            raise SecantError(f"argument leaf {i}: " + _DONATED_MESSAGE + where()) from None


_DELETED = _Deleted()


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=()):
    """Compile `fun` with XLA: traced to StableHLO once per argument signature, then cached."""
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, donate_argnums=donate_argnums)
    return JitFunction(fun, static_argnums, static_argnames, donate_argnums)


# --- devices ---------------------------------------------------------------------------------
def devices(backend=None):
    """All devices of the run: this process's, and, after secant.distributed.initialize, every
    other process's (ordered by process)."""
    return list(runtime.devices())


def local_devices(process_index=None, backend=None):
    """This process's devices (the ones it puts data on and reads back)."""
    if process_index is not None and process_index != runtime.process_index():
        return [d for d in runtime.devices() if d.process_index == process_index]
    return list(runtime.local_devices())


def device_count(backend=None):
    return len(runtime.devices())


def local_device_count(backend=None):
    return len(runtime.local_devices())


def process_index(backend=None):
    """This process's index in a multi-process run (0 when alone)."""
    return runtime.process_index()


def process_count(backend=None):
    """How many processes the run has (1 when alone)."""
    return runtime.process_count()


def default_backend():
    return runtime.default_backend()


def device_put(x, device=None):
    """Place each array leaf of `x` on `device` as a secant.Array. With a device the result is
    committed to it (jit then runs there, as JAX); without one it goes to the default device,
    uncommitted."""
    committed = device is not None
    if committed:
        _check_device(device)
    device = device or runtime.default_device()

    def put(leaf):
        if type(leaf) is Array:
            b = leaf._device_buffer(device)
            if b is not None:
                if leaf.committed or not committed:
                    return leaf
                return Array._from_buffer(b, leaf.aval, True)
        aval = canonical_aval(leaf)
        value = leaf._value() if type(leaf) is Array else leaf
        buf = runtime.put(np.asarray(value, dtype=aval.dtype), device)
        return Array._from_buffer(buf, aval, committed)

    return tree_util.tree_map(put, x)


def device_get(x):
    """Each array leaf of `x` (any pytree) copied to the host as a NumPy array, the other
    leaves as they are (jax.device_get). A traced value has no host value: a
    ConcretizationError, as JAX's."""
    def get(leaf):
        if isinstance(leaf, Tracer):
            raise ConcretizationError("device_get of a traced value: it has no value until "
                                      "the traced function runs" + where())
        return leaf._value() if type(leaf) is Array else leaf

    return tree_util.tree_map(get, x)


def _check_device(device):
    if device not in runtime.local_devices():
        raise SecantValueError(f"{device!r} is not one of this process's devices "
                               f"{list(runtime.local_devices())}" + where())


def block_until_ready(x):
    for leaf in tree_util.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


__all__ = ["jit", "devices", "local_devices", "device_count", "local_device_count",
           "default_backend", "device_put", "block_until_ready", "dtypes"]

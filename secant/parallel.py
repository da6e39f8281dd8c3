"""pmap: `fun` run on several devices at once, one slice of the mapped axis per device (JAX's
pmap, replica style: shared/notes/pjrt.md section 4A).

The per-device program is `fun` itself (with its Python control flow functionalised, as jit
traces it: `secant.source(pmap(f))`), traced once per signature with the mapped axis removed
from each input, into one StableHLO module with num_replicas = the device count
(`pmap(f).lower(*args).as_text()`), compiled once for all those devices. While it traces,
`lax.psum(x, axis_name)` & co. bind collectives between the replicas (secant/axis_env.py).
Outputs are secant.Arrays split over the devices (one shard each); fed to the next pmap call
with the same mapped axis and devices, their shards are used where they are, with no host copy.
"""
import collections
import functools

import numpy as np

from secant import axis_env, tree_util
from secant.api import (_X64, JitFunction, _count, _functionalized, _InlineCall, _leaf_key,
                        _touch, cached)
from secant.backends import runtime
from secant.backends.array import Array
from secant.backends.core import Tracer
from secant.backends.errors import (SecantTypeError, SecantValueError, UnsupportedError,
                                    where)
from secant.backends.tracer import Trace, active_trace, canonical_aval

_flatten = tree_util.registry().flatten
_executables = collections.OrderedDict()   # (module text, device ids) -> ReplicatedExecutable


def _is_axis(a):
    return a is None or (isinstance(a, int) and not isinstance(a, bool))


def _check_spec(spec, what):
    for leaf in tree_util.tree_leaves(spec):
        if not _is_axis(leaf):
            raise SecantTypeError(f"pmap {what} must hold ints or None, got {leaf!r}" + where())


def _leaf_axes(axes, value, what):
    """One axis (int or None) per leaf of `value`, from `axes`, a prefix of value's structure."""
    n = len(tree_util.tree_leaves(value))
    if _is_axis(axes):
        return [axes] * n
    is_none = lambda a: a is None  # noqa: E731
    try:
        subtrees = tree_util.tree_structure(axes, is_leaf=is_none).flatten_up_to(value)
    except (ValueError, TypeError) as e:
        raise SecantValueError(f"pmap {what}: the axes {axes!r} are not a tree prefix of the "
                               f"value {tree_util.tree_structure(value)}: {e}" + where()) from None
    out = []
    for ax, sub in zip(tree_util.tree_leaves(axes, is_leaf=is_none), subtrees):
        out += [ax] * len(tree_util.tree_leaves(sub))
    return out


class _Program:
    """One traced and compiled signature: the replicated executable and how to feed it."""
    __slots__ = ("exe", "text", "in_axes", "in_avals", "out_avals", "out_axes", "out_tree",
                 "devices", "n", "out_global")

    def __init__(self, exe, text, in_axes, in_avals, out_avals, out_axes, out_tree, devices):
        self.exe, self.text = exe, text
        self.in_axes, self.in_avals = in_axes, in_avals
        self.out_avals, self.out_axes, self.out_tree = out_avals, out_axes, out_tree
        self.devices = devices
        self.n = n = len(devices)
        self.out_global = [None if ax is None else
                           aval.update(shape=aval.shape[:ax] + (n,) + aval.shape[ax:])
                           for aval, ax in zip(out_avals, out_axes)]

    def _shards(self, i, x, ax, aval):
        """Argument leaf `x` as one buffer per device: a sharded Array split along the same
        axis keeps its shards, which must sit on this program's devices in order (never moved
        behind the user's back; the runtime checks again); anything else is copied from the
        host, split along `ax` (or whole, for None)."""
        if type(x) is Array:
            sb = x._sharded_buffer()
            if sb is not None and ax is not None and x._shard_axis == ax:
                if sb.devices is not self.devices:
                    self._check_placed(i, sb)
                return sb
            x = x._value()
        v = np.asarray(x, dtype=aval.dtype)
        if ax is None:
            parts = [v] * self.n
        else:
            parts = [np.take(v, k, axis=ax) for k in range(self.n)]
        return runtime.put_sharded(parts, self.devices)

    def _check_placed(self, i, sb):
        have = [d.id for d in sb.devices]
        want = [d.id for d in self.devices]
        if have != want:
            what = ("its devices are in another order" if sorted(have) == sorted(want)
                    else "it lives on other devices")
            raise SecantValueError(
                f"pmap argument leaf {i} is split over devices {have}, but this pmap runs on "
                f"devices {want} in that order ({what}); shard k must already sit on the k-th "
                "device. Pass np.asarray(x) to split it afresh (a copy through the host)"
                + where())

    def run(self, leaves):
        bufs = [self._shards(i, x, ax, av)
                for i, (x, ax, av) in enumerate(zip(leaves, self.in_axes, self.in_avals))]
        outs = self.exe(bufs)
        arrays = []
        for sb, aval, ax, glob in zip(outs, self.out_avals, self.out_axes, self.out_global):
            if ax is None:    # the same on every replica (as JAX assumes): device 0's value
                arrays.append(Array._from_buffer(sb.shards[0], aval, True))
            else:
                arrays.append(Array._from_shards(sb, glob, ax))
        return self.out_tree.unflatten(arrays)


class Lowered:
    """`pmap(f).lower(*args)`: the per-device program, traced but not compiled."""

    def __init__(self, text, source):
        self._text, self._source = text, source

    def as_text(self):
        """The StableHLO module every device runs (mhlo.num_replicas = the device count)."""
        return self._text

    def source(self):
        """The Python source of the per-device program (what was traced)."""
        return self._source


class PmapFunction:
    """The callable `pmap(f)` returns: traced once per signature, compiled once for all its
    devices, each call splitting the inputs over the devices and running them all at once."""
    __secant_pmap__ = True

    def __init__(self, fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices):
        if not callable(fun):
            raise SecantTypeError(f"pmap expects a callable, got {fun!r}" + where())
        if isinstance(in_axes, list):
            in_axes = tuple(in_axes)
        _check_spec(in_axes, "in_axes")
        _check_spec(out_axes, "out_axes")
        functools.update_wrapper(self, fun)
        del self.__wrapped__       # not a plain wrapper: transforms must not read through it
        self._fun = fun
        self._axis_name = axis_name
        self._in_axes = in_axes
        self._out_axes = out_axes
        if isinstance(static_broadcasted_argnums, int):
            static_broadcasted_argnums = (static_broadcasted_argnums,)
        self._static = frozenset(int(i) for i in static_broadcasted_argnums)
        self._devices = None if devices is None else tuple(devices)
        if self._devices is not None:
            have = runtime.devices()
            for d in self._devices:
                if d not in have:
                    raise SecantValueError(f"pmap devices: {d!r} is not one of this process's "
                                           f"devices {list(have)}" + where())
            runtime._check_distinct(self._devices, "pmap devices")
        # both LRU, bounded by config jit_cache_size
        self._cache = collections.OrderedDict()  # full signature (axes, devices) -> _Program
        self._fast = collections.OrderedDict()   # jit-style key of the arguments -> _Program
        self._simple = (_is_axis(in_axes) and not self._static)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    # --- arguments --------------------------------------------------------------------------------
    def _split(self, args, kwargs):
        """(dynamic leaves, their treedef, static key, per-leaf mapped axis)."""
        n_args = len(args)
        for i in self._static:
            if i >= n_args:
                raise SecantValueError(f"pmap static_broadcasted_argnums names argument {i}, "
                                       f"but the call passes {n_args} positional arguments"
                                       + where())
        in_axes = self._in_axes
        if isinstance(in_axes, tuple):
            if len(in_axes) != n_args:
                raise SecantValueError(
                    f"pmap in_axes must be an int, None, or a tuple with one entry per "
                    f"positional argument, but got len(in_axes)={len(in_axes)} for {n_args} "
                    "arguments" + where())
        else:
            in_axes = (in_axes,) * n_args
        dyn, static, axes = [], [], []
        for i, a in enumerate(args):
            if i in self._static:
                try:
                    hash(a)
                except TypeError:
                    raise SecantValueError(
                        f"pmap static argument {i} of type {type(a).__name__} is not hashable; "
                        "static arguments key the compilation cache (use a tuple instead of a "
                        "list)" + where()) from None
                static.append((i, a))
            else:
                dyn.append(a)
                axes += _leaf_axes(in_axes[i], a, f"in_axes of argument {i}")
        for k, v in kwargs.items():          # keyword arguments are mapped over axis 0, as JAX
            axes += [0] * len(tree_util.tree_leaves(v))
        leaves, treedef = _flatten((tuple(dyn), kwargs))
        return leaves, treedef, tuple(static), axes

    def _avals(self, leaves, axes):
        """Per leaf: its global aval, its axis (non-negative), and the per-device aval; and the
        mapped size."""
        sizes = []
        keys, in_avals, norm = [], [], []
        for i, (x, ax) in enumerate(zip(leaves, axes)):
            if isinstance(x, Tracer):
                raise UnsupportedError("pmap called on traced values (pmap inside jit, vmap or "
                                       "another pmap's trace) is not supported; call pmap at "
                                       "the top level, and jit or vmap inside it" + where())
            try:
                aval = x.aval if type(x) is Array else canonical_aval(x)
            except Exception:
                raise SecantTypeError(f"pmap argument of type {type(x).__name__} is not an array;"
                                      " pass arrays, scalars or pytrees of them, or mark it "
                                      "static (static_broadcasted_argnums)" + where()) from None
            if ax is not None:
                nd = len(aval.shape)
                if not -nd <= ax < nd:
                    raise SecantValueError(
                        f"pmap was asked to map argument leaf {i} along axis {ax}, but it has "
                        f"shape {aval.shape} (rank {nd})" + where())
                ax = ax % nd
                sizes.append((aval.shape[ax], i, aval, ax))
                shard = aval.update(shape=aval.shape[:ax] + aval.shape[ax + 1:])
            else:
                shard = aval
            keys.append((aval, ax))
            norm.append(ax)
            in_avals.append(shard)
        if not sizes:
            raise SecantValueError("pmap needs at least one argument mapped over an axis (an "
                                   "in_axes entry that is not None)" + where())
        distinct = {s for s, *_ in sizes}
        if len(distinct) > 1:
            lines = "\n".join(f"  argument leaf {i} of type {a.str_short()} has axis {ax} of "
                              f"size {s}" for s, i, a, ax in sizes)
            raise SecantValueError("pmap got inconsistent sizes for the array axes to be "
                                   f"mapped:\n{lines}" + where())
        return keys, in_avals, norm, distinct.pop()

    def _devices_for(self, n):
        if runtime.process_count() > 1:
            return self._run_devices_for(n)
        if self._devices is not None:
            if n != len(self._devices):
                raise SecantValueError(
                    f"pmap: the mapped axis has size {n}, but pmap was given "
                    f"{len(self._devices)} devices; the mapped size must equal the number of "
                    "devices" + where())
            return self._devices
        have = runtime.devices()
        if n > len(have):
            raise SecantValueError(
                f"pmap: the mapped axis has size {n}, but this process has only {len(have)} "
                f"device(s); for more CPU devices set secant.config.update('num_cpu_devices', "
                f"{n}) before first use, or XLA_FLAGS=--xla_force_host_platform_device_count={n}"
                " before starting Python" + where())
        if n < 1:
            raise SecantValueError("pmap: the mapped axis has size 0" + where())
        return tuple(have[:n])

    def _run_devices_for(self, n):
        """A multi-process run (secant.distributed), as JAX: every process calls pmap with its
        own slices, the mapped axis of size local_device_count() (or the number of its devices
        among `devices`), and the program runs on the devices of all processes, so psum & co.
        see all of them. The outputs hold this process's slices."""
        every = self._devices if self._devices is not None else tuple(runtime.devices())
        me = runtime.process_index()
        mine = [d for d in every if d.process_index == me]
        if n != len(mine):
            raise SecantValueError(
                f"pmap in a run of {runtime.process_count()} processes: the mapped axis has size "
                f"{n}, but this process (process {me}) has {len(mine)} of the pmap's "
                f"{len(every)} devices; each process passes one slice per local device (the "
                "collectives span the devices of all processes)" + where())
        return every

    # --- tracing ----------------------------------------------------------------------------------
    def _call_args(self, args, kwargs, treedef, tracers):
        dyn, dyn_kwargs = treedef.unflatten(tracers)
        it = iter(dyn)
        call_args = [args[i] if i in self._static else next(it) for i in range(len(args))]
        return call_args, dyn_kwargs

    def _trace(self, args, kwargs, leaves, treedef, in_avals, devices):
        name = getattr(self._fun, "__name__", "f")
        trace = Trace(name, "pmap")
        try:
            return self._trace_into(trace, name, args, kwargs, treedef, in_avals, devices)
        finally:
            trace.finish()      # its Tracers that escaped (a global, a list) are dead now

    def _trace_into(self, trace, name, args, kwargs, treedef, in_avals, devices):
        tracers = [trace.new_arg(a) for a in in_avals]
        call_args, call_kwargs = self._call_args(args, kwargs, treedef, tracers)
        fun = _functionalized(self._fun)     # Python if/while/for -> lax calls, as jit
        with trace.activate(), axis_env.bind(self._axis_name, len(devices)):
            out = fun(*call_args, **call_kwargs)
        out_leaves, out_tree = _flatten(out)
        for o in out_leaves:
            if not (isinstance(o, (Tracer, Array, np.ndarray, np.generic))
                    or type(o) in (bool, int, float, complex)):
                raise SecantTypeError(f"{name} returned a {type(o).__name__}, which is not an "
                                      "array; pmapped functions return arrays or pytrees of "
                                      "arrays" + where())
        text, out_avals = trace.module(out_leaves, num_replicas=len(devices), kind="pmap")
        out_axes = []
        for ax, aval in zip(_leaf_axes(self._out_axes, out_tree.unflatten(out_leaves),
                                       "out_axes"), out_avals):
            if ax is not None:
                nd = len(aval.shape) + 1
                if not -nd <= ax < nd:
                    raise SecantValueError(f"pmap out_axes {ax} is out of range for an output "
                                           f"of rank {nd - 1}" + where())
                ax %= nd
            out_axes.append(ax)
        return text, out_avals, out_axes, out_tree

    def _program(self, args, kwargs):
        """The compiled program for these arguments, and their leaves. A hit costs one key:
        the tree structure and each leaf's aval, as jit's (the checks ran when it was built)."""
        if self._simple and not kwargs:
            leaves, treedef = _flatten(args)
            static, axes = (), None
        else:
            leaves, treedef, static, axes = self._split(args, kwargs)
        try:
            key = (treedef, static, _X64[0], *[x._aval if type(x) is Array and x._aval is not None
                                               else _leaf_key(x) for x in leaves])
        except (_InlineCall, SecantTypeError):    # a Tracer, an odd leaf: _build says why
            key = None
        prog = self._fast.get(key)
        if prog is None:
            if axes is None:
                leaves, treedef, static, axes = self._split(args, kwargs)
            prog = self._build(args, kwargs, leaves, treedef, static, axes)
            if key is not None:
                cached(self._fast, key, lambda: prog)
        else:
            _touch(self._fast, key)
        return prog, leaves

    def _build(self, args, kwargs, leaves, treedef, static, axes):
        keys, in_avals, axes, n = self._avals(leaves, axes)
        devices = self._devices_for(n)
        key = (treedef, static, tuple(keys), tuple(d.id for d in devices), _X64[0])

        def build():        # once per signature, also when threads ask at once
            text, out_avals, out_axes, out_tree = self._trace(args, kwargs, leaves, treedef,
                                                              in_avals, devices)
            _count("traces")

            def compile_():
                _count("compiles")
                return runtime.ReplicatedExecutable(text, in_avals, out_avals, devices)
            ekey = (text, key[3])
            exe = _executables.get(ekey)
            if exe is None:
                exe = cached(_executables, ekey, compile_)
            else:
                _touch(_executables, ekey)
            return _Program(exe, text, axes, in_avals, out_avals, out_axes, out_tree,
                            exe.devices)
        prog = self._cache.get(key)
        if prog is None:
            return cached(self._cache, key, build)
        _touch(self._cache, key)
        return prog

    def __call__(self, *args, **kwargs):
        if active_trace() is not None:
            raise UnsupportedError("pmap inside jit (or inside another pmap) is not supported; "
                                   "call pmap at the top level, and jit or vmap inside it"
                                   + where())
        prog, leaves = self._program(args, kwargs)
        return prog.run(leaves)

    def lower(self, *args, **kwargs):
        """The per-device program for these arguments: `.as_text()` (StableHLO), `.source()`."""
        leaves, treedef, static, axes = self._split(args, kwargs)
        keys, in_avals, axes, n = self._avals(leaves, axes)
        devices = self._devices_for(n)
        text = self._trace(args, kwargs, leaves, treedef, in_avals, devices)[0]
        return Lowered(text, self.per_device_source())

    def per_device_source(self):
        """What secant.source shows: the per-device Python program (f as jit traces it)."""
        from secant.transformer.functionalize import functionalized_source
        fun = self._fun
        while isinstance(fun, JitFunction):
            fun = fun._fun
        return functionalized_source(fun)

    def _cache_size(self):
        return len(self._cache)

    def __repr__(self):
        return f"<secant.pmap of {getattr(self._fun, '__qualname__', self._fun)}>"


def pmap(fun=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None):
    """Run `fun` in parallel on several devices (JAX's pmap): the mapped axis of the inputs
    (in_axes: an int, None to broadcast an argument to every device, or a pytree prefix of the
    arguments) is split over the first n devices, n being its size (or over `devices`, in that
    order); each device runs `fun` on its slice, and `lax.psum(x, axis_name)` & co. communicate
    between them. The outputs are stacked along out_axes as Arrays split over the devices.
    `secant.source(pmap(f))` and `pmap(f).lower(*args).as_text()` show the per-device program."""
    if fun is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums,
                                 devices=devices)
    return PmapFunction(fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices)

"""The persistent compilation cache's index (issue 19): with a cache directory set, a fresh
process's first call of `jit(grad(f))` found in the cache still transformed, traced and wrote
the StableHLO text (the cache's key is a hash of that text) before it read the executable. Here
an *early key*, computed before any of that from what the trace can depend on, names a record of
what the trace made: the StableHLO text, the output avals and the output tree. A hit skips the
transforms, the trace and the emission; the executable is then found as before, by the text's
own key (compilation_cache, checksummed), so a record can only name a program its text
compiles to.

The early key is a hash of:
  - the record format, Python's, NumPy's and jaxlib's versions, secant's own files (each .py of
    the package by path, size and modification time: an edited secant misses), secant's config
    and SECANT_* environment variables, the device count and platform;
  - jit's parameters, enable_x64, the arguments' structure (tuples, lists, dicts, None) and each
    leaf's aval (or Python scalar type);
  - the function: a plain user function, or grad / value_and_grad of one (its parameters), read
    as secant/jit_closures.py reads a closure, but by value, never by identity: a user
    function's code (recursively: bytecode, constants, names, file and lines), its source text
    as the transforms read it, its name, defaults, cells, and the globals its code names
    (literals by type and repr, tuples of them, secant's functions and modules by their import
    names, user modules by the attributes the code names, user functions recursively, pure
    builtins, NumPy and builtin types by name).
Anything else (an array or object in a global or cell, a list or dict a trace may change, a user
class, a decorated function, a jitted function, print or any builtin with an effect, code that
writes a global, a custom pytree argument, named_scope or pmap axes around the call, a jit hook
such as `secant run --show-source`) and no key: the call traces as before. A record is written
only after a trace that hoisted no constants, added no guards and returned a plain output tree,
and whose program has no host callbacks.
"""
import hashlib
import json
import os
import sys
import threading
import types

import numpy as np

from secant.backends import compilation_cache, dtypes
from secant.backends.array import Array
from secant.backends.core import ShapedArray

_FORMAT = "secant-index-1"


class Records:
    """One kind of record in the persistent cache (files `name` + ext, JSON), and its counts:
    hits, records read; misses, none there; corrupt, a record whose checksum or content did not
    fit (`read`'s decode raised or gave None); stores; refused, no key or nothing to record
    (what the caller counts). This module's index and secant/gen_index.py's share it."""

    def __init__(self, ext):
        self.ext = ext
        self.stats = {"hits": 0, "misses": 0, "corrupt": 0, "stores": 0, "refused": 0}
        self._lock = threading.Lock()

    def count(self, what):
        with self._lock:
            self.stats[what] += 1

    def write(self, name, record):
        """Store `record` (JSON-able) under early key `name`."""
        if compilation_cache.store(name, json.dumps(record).encode(), ext=self.ext,
                                   counts=None):
            self.count("stores")

    def read(self, name, decode):
        """decode(the record under `name`), or None: a miss, or a record that does not fit."""
        seen = {"hits": 0, "misses": 0, "corrupt": 0}
        payload = compilation_cache.load(name, ext=self.ext, counts=seen)
        if payload is None:
            self.count("corrupt" if seen["corrupt"] else "misses")
            return None
        try:
            got = decode(json.loads(payload))
        except Exception:       # (anything unforeseen in a record: as one that does not fit)
            got = None
        self.count("corrupt" if got is None else "hits")
        return got


# hits: records read (no transform, trace or emission); misses: no record (traced, then
# stored); corrupt: a record whose checksum or content was wrong (traced); stores; refused:
# calls with no early key (traced, no record)
_records = Records(".idx")
stats = _records.stats
_count = _records.count
enabled = [os.environ.get("SECANT_COMPILE_INDEX", "") != "0"]

_LITERALS = (type(None), bool, int, float, complex, str, bytes)
_DEPTH = 6
_PURE_BUILTINS = frozenset((
    "abs", "all", "any", "callable", "divmod", "getattr", "hasattr", "isinstance", "issubclass",
    "iter", "len", "max", "min", "next", "pow", "repr", "round", "sorted", "sum", "format",
    "ord", "chr"))    # (not hash: a str's differs between processes)
_PURE_MODULES = frozenset(("math", "cmath", "operator", "_operator", "itertools", "functools"))
_TYPE_MODULES = frozenset(("builtins", "numpy", "ml_dtypes", "itertools", "functools"))
_DTYPES = {np.dtype(d).name: np.dtype(d) for d in dtypes._SUPPORTED_SET}
_codes = {}         # code -> its digest
_static = []        # the process's part of every key (computed once)


def _process_part():
    """What every key of this process shares: versions, secant's files, config, environment."""
    if not _static:
        from secant.backends import runtime
        from secant.backends.config import config
        h = hashlib.sha256()
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for pkg in ("secant", "transformer", "ad", "batching", "codegen", "backends"):
            for folder, dirs, files in sorted(os.walk(os.path.join(root, pkg))):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(".py"):
                        path = os.path.join(folder, name)
                        st = os.stat(path)
                        h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        c = runtime.client()
        part = (_FORMAT, sys.version, np.__version__, runtime.JAXLIB_VERSION,
                runtime._jaxlib_version(), h.hexdigest(),
                tuple(sorted((k, repr(v)) for k, v in config._values.items()
                             if k != "compilation_cache_dir")),
                tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("SECANT_"))),
                os.environ.get("XLA_FLAGS", ""), c.platform, c.platform_version,
                len(runtime.devices()), runtime.default_device().device_kind)
        _static.append(repr(part))
    return _static[0]


class _No(Exception):
    """No early key: the call traces as before."""


def _code(code):
    d = _codes.get(code)
    if d is None:
        consts = tuple(_code(k) if type(k) is types.CodeType else (type(k).__name__, repr(k))
                       for k in code.co_consts)
        d = hashlib.sha256(repr((
            code.co_name, code.co_qualname, code.co_filename, code.co_firstlineno,
            code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
            code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars,
            code.co_cellvars, code.co_linetable, code.co_exceptiontable)).encode()).hexdigest()
        if len(_codes) > 4096:
            _codes.clear()
        _codes[code] = d
    return d


def _named(v, module, name):
    """('at', module, name) where `module`.`name` is `v` (how a fresh process finds it)."""
    mod = sys.modules.get(module or "")
    if mod is None or name is None or getattr(mod, name, None) is not v:
        raise _No
    return ("at", module, name)


def _secant_name(module):
    return (module or "").split(".")[0] == "secant"


def _value(v, names, depth, seen):
    """What a trace may read of `v` (a global's, a cell's or a default's value), by value."""
    t = type(v)
    if t in _LITERALS:
        return ("=", t.__name__, repr(v) if t in (float, complex) else v)
    if isinstance(v, np.generic):
        return ("=", t.__name__, v.dtype.str, repr(v))
    if t is tuple and depth < 4 and len(v) <= 64:
        return ("tuple", tuple(_value(x, names, depth + 1, seen) for x in v))
    if t is types.FunctionType:
        if _secant_name(v.__module__):
            return _named(v, v.__module__, v.__name__)
        if id(v) in seen:
            return ("rec", v.__qualname__)
        if depth >= _DEPTH:
            raise _No
        seen.add(id(v))
        return _function(v, depth + 1, seen)
    if t is types.BuiltinFunctionType:
        module = getattr(v, "__module__", None)
        if module in _PURE_MODULES or (module == "builtins" and v.__name__ in _PURE_BUILTINS):
            return _named(v, module, v.__name__)
        raise _No
    if t is types.ModuleType:
        if depth >= _DEPTH or sys.modules.get(v.__name__) is not v:
            raise _No
        space = vars(v)     # (the attributes the code names, each read as a global)
        return ("ns", v.__name__, tuple((n, _value(space[n], names, depth + 1, seen))
                                        for n in names if n in space))
    if isinstance(v, type):
        module = v.__module__
        if _secant_name(module) or module in _TYPE_MODULES or (module or "").startswith("numpy."):
            return _named(v, module, v.__name__)
        raise _No       # (a user class: its methods are not in the key)
    raise _No


def _function(fn, depth, seen):
    """A user function's key: its code, source, name, defaults, cells and globals read."""
    from secant.jit_closures import _global_names
    from secant.backends.function_cache import ATTR
    from secant.transformer.parse import _source_of
    code = fn.__code__
    if code.co_filename.startswith("<") or any(k != ATTR for k in fn.__dict__):
        raise _No       # (generated or typed-in code; a decorated function's attributes)
    names = _global_names(code)
    if names is None:
        raise _No       # (writes a global: an effect of each trace)
    try:
        source = "".join(_source_of(fn)[0])
    except (OSError, TypeError):
        raise _No from None
    cells = []
    for cell in fn.__closure__ or ():
        try:
            cells.append(_value(cell.cell_contents, names, depth, seen))
        except ValueError:      # (an empty cell)
            raise _No from None
    g = fn.__globals__
    reads = tuple((n, _value(g[n], names, depth, seen)) for n in names if n in g)
    # (a name the code reads that is in neither: a builtin, read by value too)
    builtins = g.get("__builtins__")
    space = builtins if type(builtins) is dict else vars(builtins) if builtins else {}
    more = tuple((n, _value(space[n], names, depth, seen)) for n in names
                 if n not in g and n in space and not _is_builtin_type(space[n]))
    defaults = tuple(_value(v, names, depth, seen) for v in fn.__defaults__ or ())
    kwdefaults = tuple(sorted((k, _value(v, names, depth, seen))
                              for k, v in (fn.__kwdefaults__ or {}).items()))
    return ("fn", _code(code), source, fn.__module__, fn.__name__, fn.__qualname__, defaults,
            kwdefaults, tuple(cells), reads, more)


def _is_builtin_type(v):
    return isinstance(v, type) and v.__module__ == "builtins"


def _callee(fun):
    """The key of a jitted function: a plain user function, or grad / value_and_grad of one."""
    if type(fun) is not types.FunctionType:
        raise _No
    rebuild = getattr(fun, "__secant_rebuild__", None)
    if rebuild is not None:
        base, params, _ = rebuild
        return ("T", _value(params, (), 0, set()), _callee(base))
    return _value(fun, (), 0, set())


def _tree(x, avals):
    """The arguments' structure (builtin containers only), leaves as their avals."""
    t = type(x)
    if t is tuple or t is list:
        return (t.__name__, tuple(_tree(v, avals) for v in x))
    if t is dict:
        if not all(type(k) is str for k in x):
            raise _No
        return ("dict", tuple((k, _tree(x[k], avals)) for k in sorted(x)))
    if x is None:
        return None
    if t is Array or t is np.ndarray or t in (bool, int, float, complex):
        a = next(avals)
        if isinstance(a, ShapedArray):
            return ("a", a.shape, a.dtype.name, a.weak_type)
        if isinstance(a, type):
            return ("s", a.__name__)
    raise _No


def key(jitted, args, key_t):
    """The early key of this call of `jitted` (its trace cache key `key_t`: treedef, static,
    x64, the leaves' avals), or None: no record is read or written for it."""
    if not enabled[0] or compilation_cache.directory() is None:
        return None
    from secant import api, axis_env
    from secant.backends import tracer
    try:
        if not jitted._simple or jitted._donate or api.JIT_HOOKS or axis_env._state.stack \
                or getattr(tracer._scopes, "stack", None):
            raise _No
        avals = iter(key_t[3:])
        tree = _tree(args, avals)
        if next(avals, None) is not None:
            raise _No
        fn = _callee(jitted._fun)
        text = repr((_process_part(), bool(key_t[2]), tree, fn))
    except Exception:       # (_No, or anything unforeseen: the call traces as before)
        _count("refused")
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def _aval(a):
    return [list(a.shape), a.dtype.name, bool(a.weak_type)]


def _out_structure(tree):
    """out_tree as JSON (lists, tuples, str-keyed dicts, None, leaf indices), or None."""
    from secant.api import _flatten
    n = tree.num_leaves
    built = tree.unflatten(list(range(n)))

    def enc(x):
        t = type(x)
        if t is int:
            return x
        if x is None:
            return None
        if t is list:
            return {"l": [enc(v) for v in x]}
        if t is tuple:
            return {"t": [enc(v) for v in x]}
        if t is dict and all(type(k) is str for k in x):
            return {"d": [[k, enc(v)] for k, v in x.items()]}
        raise _No
    try:
        out = enc(built)
    except _No:
        return None
    leaves, again = _flatten(_decode(out))
    return out if again == tree and leaves == list(range(n)) else None


def _decode(x):
    if x is None or type(x) is int:
        return x
    if "l" in x:
        return [_decode(v) for v in x["l"]]
    if "t" in x:
        return tuple(_decode(v) for v in x["t"])
    return {k: _decode(v) for k, v in x["d"]}


def store(name, compiled, n_leaves):
    """Record what the trace of early key `name` made (`compiled`, an api._Compiled), when it
    can stand for that trace: no hoisted constants, a plain output tree, no host callbacks."""
    try:
        _store(name, compiled, n_leaves)
    except Exception:       # (no record: the next process traces, as without the index)
        pass


def _store(name, compiled, n_leaves):
    from secant.api import _WithFloat0
    if len(compiled.in_avals) != n_leaves or compiled.consts or compiled.exe._callbacks \
            or type(compiled.out_tree) is _WithFloat0:
        return
    tree = _out_structure(compiled.out_tree)
    if tree is None:
        return
    _records.write(name, {"format": _FORMAT, "text": compiled.text,
                          "in": [_aval(a) for a in compiled.in_avals],
                          "out": [_aval(a) for a in compiled.out_avals], "tree": tree})


def load(name, in_avals):
    """(text, out_avals, out_tree) recorded under early key `name`, or None: a miss, or a
    record that does not fit (counted as corrupt; the call traces, and stores it afresh)."""
    from secant.api import _flatten

    def decode(rec):
        if rec["format"] != _FORMAT or rec["in"] != [_aval(a) for a in in_avals]:
            return None
        out_avals = [ShapedArray(s, _DTYPES[d], w) for s, d, w in rec["out"]]
        leaves, tree = _flatten(_decode(rec["tree"]))
        if leaves != list(range(len(out_avals))) or type(rec["text"]) is not str:
            return None
        return rec["text"], out_avals, tree
    return _records.read(name, decode)

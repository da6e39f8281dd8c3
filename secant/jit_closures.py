"""jit of a fresh closure per step (issue 19):

    for batch in batches: g = secant.jit(secant.grad(lambda p: loss(p, batch)))(params)

makes a new function each step, so jit's trace cache (keyed by the function, as JAX's) misses
and the step was traced again (~1-3 ms) although its program is the same: the closed-over batch
is already a parameter of it (backends/tracer.py Trace.hoist). Here a *template* is kept per
what such a trace can depend on, and a new function that matches one gets its compiled program
with its own closed-over arrays as parameter values, without a trace.

What a trace of a closure depends on, besides its arguments' signature: its code, globals,
defaults and name; the arrays in its cells (their shapes and dtypes, once the template is traced
with Tracers in their place: each is then a parameter of the program, and any use of its value
in Python raises there); any other value in its cells or named by its code as a global: a
literal's value (a Python scalar is baked into the program), a function's, module's or class's
identity, and what a user function it names reads in turn (its globals and cells). Anything
else (an object of the user's, a global list or dict, which a trace may append to, code that
writes a global, an array subclass) and the function is traced as before: a template runs no
Python, so a trace's side effects must be none a fresh function's jit would repeat. grad / value_and_grad of such a closure say how to make them again around a copy
(`__secant_rebuild__`, secant/transforms.py).

The template's trace runs with Tracers in a copy of the function's cells: a trace that fails so
(a closed-over array read as a Python value), that adds guards, or that changes a cell or a
closed-over list or dict, is no template: that function and the next of its key are traced as
before. The first function of a key is always traced as before (a function made once, as most
are, never pays for the template). Templates keep no closure's values: only the compiled
program, the arrays the trace hoisted from elsewhere (a global's) and the objects named by
identity (held, so an id is never reused while its template lives).
"""
import collections
import dis
import threading
import types

import numpy as np

from secant.backends.array import Array
from secant.backends.core import Tracer
from secant.backends.function_cache import ATTR
from secant.backends.tracer import canonical_aval

# (closure key, jit parameters, signature) -> _Template; least recently used dropped
_templates = collections.OrderedDict()
_LIMIT = 64
_seen = {}          # closure keys met once (a second function of one makes its template)
_refused = {}       # template keys whose trace could not stand for the others (traced as before)
_lock = threading.Lock()
stats = {"templates": 0, "hits": 0, "refused": 0}
enabled = [True]

_LITERALS = (type(None), bool, int, float, complex, str, bytes)
_CODES = {}         # code -> the global names it (and the code it holds) reads
_DEPTH = 6          # calls (or attribute reads) followed from the closure; deeper: traced


_BY_ID = []


def _by_id():
    """The kinds of object named by identity: functions, modules, classes, jitted functions."""
    if not _BY_ID:
        from secant.api import JitFunction
        _BY_ID.append((types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type,
                       JitFunction))
    return _BY_ID[0]


def _kind(v, leaves, holds, by_id, cell, depth=0, seen=None, names=()):
    """What a trace may read of `v` (a cell's value, or a global's when not `cell`): a
    literal's value, a cell's array's aval (the array itself appended to `leaves`: a parameter),
    a global array's identity, a container's structure and contents, a function's identity
    and, for a user function, what it reads in turn (its globals and cells: a callee's global
    rebound between steps is a new key); None where it cannot be told. What `holds` gets is
    held by the template (an identity in its key never reused while it lives)."""
    t = type(v)
    if t in _LITERALS or isinstance(v, np.generic):
        # (a float by its repr: -0.0 is not 0.0, and a NaN matches a NaN)
        return ("=", t, repr(v) if t in (float, complex) or isinstance(v, np.generic) else v)
    if t is np.ndarray or t is Array:
        if t is np.ndarray and v.dtype.kind not in "biufc":
            return None
        if cell:
            try:
                aval = canonical_aval(v)
            except Exception:       # (a dtype jit does not take: traced as before)
                return None
            leaves.append(v)
            return ("a", t, aval)
        if t is np.ndarray and v.flags.writeable:
            return None         # (a global NumPy array written in place between steps)
        holds.append(v)
        return ("id", id(v))
    if (t is tuple or (cell and t in (list, dict))) and depth < 4 and len(v) <= 64:
        # (a global's or a callee's list or dict: what a trace may append to, at each trace,
        # as a fresh function's jit does: never a template's; a cell's is copied and watched)
        if t is dict:
            if not all(type(k) is str for k in v):
                return None
            items = tuple((k, _kind(x, leaves, holds, by_id, cell, depth + 1, seen, names))
                          for k, x in v.items())
            return None if any(i[1] is None for i in items) else (t, items)
        items = tuple(_kind(x, leaves, holds, by_id, cell, depth + 1, seen, names) for x in v)
        return None if None in items else (t, items)
    if isinstance(v, Tracer) or isinstance(v, Array):
        return None
    if isinstance(v, by_id):
        holds.append(v)
        if t is types.FunctionType and not _secant_name(v.__module__):
            # (a user function: what it reads in turn; past _DEPTH calls, no key: traced)
            if id(v) in seen:
                return ("id", id(v))
            if depth >= _DEPTH:
                return None
            seen.add(id(v))
            deps = _reads(v, holds, by_id, depth + 1, seen)
            # (its code and defaults too: replaced between steps, `helper.__defaults__ =
            # (3.0,)`, a new key, never the program traced with the old ones)
            defaults = tuple(_kind(d, [], holds, by_id, False, depth + 1, seen, names)
                             for d in (v.__defaults__ or ()) + tuple(
                                 (v.__kwdefaults__ or {}).values()))
            if deps is None or None in defaults:
                return None
            holds.append(v.__code__)
            return ("fn", id(v), id(v.__code__), defaults,
                    tuple(v.__kwdefaults__ or ()), deps)
        if (t is types.ModuleType and not _secant_name(v.__name__)) or isinstance(v, type):
            # (a module's or class's attributes may be rebound between steps, `config.lr`:
            # those of them the code names are read as the global they are)
            attrs = _attributes(v, names, holds, by_id, depth + 1, seen)
            return None if attrs is None else ("ns", id(v), attrs)
        return ("id", id(v))
    return None


def _secant_name(module):
    return (module or "").split(".")[0] == "secant"


def _attributes(v, names, holds, by_id, depth, seen):
    """The kinds of the attributes of module or class `v` named in `names`, or None."""
    if depth >= _DEPTH:
        return None
    spaces = [vars(v)] if type(v) is types.ModuleType else [vars(k) for k in v.__mro__]
    out = []
    for name in names:
        for space in spaces:
            if name in space:
                k = _kind(space[name], [], holds, by_id, False, depth, seen, names)
                if k is None:
                    return None
                out.append((name, k))
                break
    return tuple(out)


def _reads(fn, holds, by_id, depth, seen):
    """The kinds of what user function `fn` (a callee) reads: its cells and its globals, by
    value or identity (never parameters: the callee's cells hold what the caller's trace
    takes as it is)."""
    names = _global_names(fn.__code__)
    if names is None:
        return None
    out = []
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:
            return None
        k = _kind(v, [], holds, by_id, False, depth, seen, names)
        if k is None:
            return None
        out.append(k)
    read = _globals_read(fn, names, holds, by_id, depth, seen)
    return None if read is None else (tuple(out), read)


def _globals_read(fn, names, holds, by_id, depth, seen):
    g = fn.__globals__
    read = []
    for name in names:
        if name in g:
            k = _kind(g[name], [], holds, by_id, False, depth, seen, names)
            if k is None:
                return None
            read.append((name, k))
    holds.append(g)
    return (id(g), tuple(read))


def _global_names(code):
    """The names `code` (and the code it holds) reads, or None where it writes a global (a
    side effect of each trace, which a template would not repeat)."""
    names = _CODES.get(code, _CODES)
    if names is _CODES:
        found, todo = set(), [code]
        while todo:
            c = todo.pop()
            found.update(c.co_names)
            todo.extend(k for k in c.co_consts if type(k) is types.CodeType)
            if names is _CODES and any(i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")
                                       for i in dis.get_instructions(c)):
                names = None
        if names is _CODES:
            names = tuple(sorted(found))
        if len(_CODES) > 1024:
            _CODES.clear()
        _CODES[code] = names
    return names


class _Spec:
    """A function's closure key, its cells' arrays (`leaves`) and how to make it again with
    other values (Tracers) in their place."""
    __slots__ = ("key", "leaves", "holds", "make")

    def __init__(self, key, leaves, holds, make):
        self.key, self.leaves, self.holds, self.make = key, leaves, holds, make


def spec_of(fun):
    """The _Spec of `fun` (a plain user function, or grad / value_and_grad of one), or None."""
    rebuild = getattr(fun, "__secant_rebuild__", None) if type(fun) is types.FunctionType \
        else None
    if rebuild is not None:
        base, params, again = rebuild
        inner = spec_of(base)
        if inner is None:
            return None

        def make(tracers, inner_make=inner.make):
            new, check = inner_make(tracers)
            return again(new), check
        return _Spec(("T", params, inner.key), inner.leaves, inner.holds, make)
    if type(fun) is not types.FunctionType:
        return None
    code = fun.__code__
    if code.co_filename.startswith("<"):        # (generated code, exec, a prompt)
        return None
    if fun.__dict__ and any(k != ATTR for k in fun.__dict__):
        return None
    defaults = (fun.__defaults__ or ()) + tuple((fun.__kwdefaults__ or {}).values())
    if any(type(v) not in _LITERALS for v in defaults):
        return None
    by_id = _by_id()
    leaves, holds, cells, values = [], [], [], []
    seen = {id(fun)}
    names = _global_names(code)
    if names is None:
        return None
    for cell in fun.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:                      # (not filled yet: a recursive definition)
            return None
        k = _kind(v, leaves, holds, by_id, True, 0, seen, names)
        if k is None:
            return None
        cells.append(k)
        values.append(v)
    g = fun.__globals__
    read = _globals_read(fun, names, holds, by_id, 0, seen)
    if read is None:
        return None
    key = ("f", code, fun.__name__, fun.__qualname__,
           tuple((type(v), repr(v)) for v in defaults), tuple(sorted(fun.__kwdefaults__ or ())),
           tuple(cells), read)

    def make(tracers):
        """A copy of fun whose cells hold `tracers` in place of its arrays, and a check that
        the trace left its cells, lists and dicts as they were."""
        it = iter(tracers)
        made = []       # (container, its items as made)
        new_values = [_rebuilt(v, it, made) for v in values]
        new_cells = [types.CellType(v) for v in new_values]
        new = types.FunctionType(code, g, fun.__name__, fun.__defaults__,
                                 tuple(new_cells) if fun.__closure__ is not None else None)
        new.__kwdefaults__ = fun.__kwdefaults__
        new.__qualname__ = fun.__qualname__

        def unchanged():
            return all(c.cell_contents is v for c, v in zip(new_cells, new_values)) and all(
                _items(c) == items for c, items in made)
        return new, unchanged
    return _Spec(key, leaves, holds, make)


def _items(c):
    return [id(x) for x in (c.values() if type(c) is dict else c)] + (
        list(c) if type(c) is dict else [])


def _rebuilt(v, it, made):
    t = type(v)
    if t is np.ndarray or t is Array:
        return next(it)
    if t in (tuple, list):
        out = t(_rebuilt(x, it, made) for x in v)
    elif t is dict:
        out = {k: _rebuilt(x, it, made) for k, x in v.items()}
    else:
        return v
    if t is not tuple:
        made.append((out, _items(out)))
    return out


class _Template:
    __slots__ = ("compiled", "n_args", "holds")

    def __init__(self, compiled, n_args, holds):
        self.compiled, self.n_args, self.holds = compiled, n_args, holds

    def bind(self, values, key):
        """The template's program for a function whose cells hold `values` (as a trace
        cache entry of its own: its arrays' values fixed from now on, as a trace's)."""
        from secant.api import _Compiled
        base = self.compiled
        n = self.n_args
        consts = tuple(
            v if type(v) is Array and v._buf is not None else Array._from_buffer(
                put(np.asarray(v._value() if type(v) is Array else v, dtype=a.dtype)), a)
            for v, a, put in zip(values, base.in_avals[n:], base._putters[n:]))
        c = object.__new__(_Compiled)
        for s in _Compiled.__slots__:
            setattr(c, s, getattr(base, s))
        c._placed = {c.device: c}
        c.consts = consts + base.consts
        c.key = key
        stats["hits"] += 1
        return c


def compiled(jitted, args, kwargs, leaves, treedef, static, key):
    """The compiled signature of `jitted` for these arguments from a template of its closure
    key (made now, with a trace, where this is the key's second function), or None: trace."""
    if not enabled[0]:
        return None
    spec = spec_of(jitted._fun)
    if spec is None:
        return None
    tkey = (spec.key, jitted._static_nums, jitted._static_names, jitted._donate, key.t)
    try:
        tpl = _templates.get(tkey)
    except TypeError:           # (a literal that is not hashable after all)
        return None
    if tpl is not None:
        with _lock:
            if tkey in _templates:
                _templates.move_to_end(tkey)
        return tpl.bind(spec.leaves, key)
    if tkey in _refused:
        return None
    if spec.key not in _seen:
        with _lock:
            if len(_seen) > 1024:
                _seen.clear()
            _seen[spec.key] = True
        return None
    tpl = _make(jitted, spec, args, kwargs, leaves, treedef, static)
    with _lock:
        if tpl is None:
            if len(_refused) > 1024:
                _refused.clear()
            _refused[tkey] = True
            stats["refused"] += 1
            return None
        _templates[tkey] = tpl
        while len(_templates) > _LIMIT:
            _templates.popitem(last=False)
    stats["templates"] += 1
    return tpl.bind(spec.leaves, key)


def _make(jitted, spec, args, kwargs, leaves, treedef, static):
    """The template of `spec`: jitted's function traced with Tracers in its cells' arrays'
    places (parameters after the arguments), or None where that trace cannot stand for
    other functions of its key."""
    from secant import api
    cell_avals = [canonical_aval(v) for v in spec.leaves]
    checks = []

    def make_fun(trace):
        new, unchanged = spec.make([trace.new_arg(a) for a in cell_avals])
        checks.append(unchanged)
        return new
    guards = jitted._cache.guards
    try:
        text, in_avals, out_avals, out_tree, hoisted = jitted._trace(
            args, kwargs, leaves, treedef, static, hoist=True, make_fun=make_fun)
    except Exception:           # (a closed-over array read as a value, say: traced as before)
        return None
    if jitted._cache.guards is not guards or not checks or not checks[-1]():
        return None
    api._count("traces")
    for hook in api.JIT_HOOKS:
        hook(jitted)
    n = len(leaves) + len(cell_avals)
    c = api._Compiled(api._executable(text, out_avals), text, in_avals, out_avals, out_tree)
    c.consts = api._hoisted_consts(hoisted, in_avals[n:], c._putters[n:])
    return _Template(c, len(leaves), spec.holds)


def clear():
    with _lock:
        _templates.clear()
        _seen.clear()
        _refused.clear()

"""A second level of the transforms' cache, keyed by a function's code (issue 19, issue 15).

`for batch in batches: g = grad(lambda p: loss(p, batch))(params)` makes a new function object
each step, with the same code: the first level (backends/function_cache.py, keyed by the
function object) misses every time, and the lambda was transformed again each step (10 ms a
step against 0.5 ms for a cached grad(loss), bench/fresh_closures.py).

The generated derivative reads the user's closure variables from the user's own cells when it
runs (codegen/loader.py binds them), and what its source says depends on the function's code,
globals, defaults, name, and on what its cells hold only where the transform resolved a name to
an object (a callee: guarded by identity, transformer/parse.py Guard) or read its kind. So a
*template* is kept per (code, globals, defaults, names, what each cell holds: the kind of a
data value, the identity of any other object) and transform parameters: the generated function
with the user's cells replaced by empty cells of its own, which holds none of the user's
values (a dropped closure frees what it closed over, tests/test_function_cache.py). A new
function with the same key gets the template rebound to its own cells (each generated function
holding one of them copied, the others shared), stored in its own first-level cache.

A template is made only where that is known to be sound: every guard a plain identity guard of
globals or of other functions' cells (none of the template function's own cells), nothing
recursive or traced, and nothing of the function itself (its cells, its data values, the function)
left in what the template keeps; otherwise the function is transformed anew, as before.
"""
import sys
import threading
import types
import weakref

import numpy as np

from secant.backends.array import Array
from secant.backends.function_cache import ATTR, FunctionCache, Stamp

# (code key, transform parameters) -> _Template; a bounded table (least recently made dropped)
_templates = {}
_LIMIT = 512
_lock = threading.Lock()
# (fn, transform parameters) -> the template rebound to fn's cells (lives as long as fn)
_instances = FunctionCache("code_instances")
stats = {"templates": 0, "instances": 0, "refused": 0}
# the code of each template's function: a function bound from one is keyed by it in turn
_bound_codes = weakref.WeakSet()
_seen = weakref.WeakKeyDictionary()     # code -> weak reference to the first function of it
enabled = [True]        # (off: every new function transformed anew, as before; for tests)

_DATA = (np.ndarray, Array, np.generic, float, int, complex, bool)
_LITERALS = (type(None), bool, int, float, complex, str, bytes)
_MISSING = object()


def _kind(value, refs, depth=0):
    """What the transform may have read of a cell's or a default's value: a data value's type
    and dtype (the generated code reads the value itself when it runs), a literal's value, a
    container's structure, else the object's identity (its weak reference in `refs`); None
    where it cannot be told (an object that is not weakly referable)."""
    t = type(value)
    if t in (type(None), str, bytes):
        return ("=", t, value)                  # by value
    if isinstance(value, _DATA):
        return ("data", t, getattr(value, "dtype", None))
    if t in (tuple, list) and depth < 3 and len(value) <= 64:
        items = tuple(_kind(v, refs, depth + 1) for v in value)
        return None if None in items else (t, items)
    if t is dict and depth < 3 and len(value) <= 64 and all(type(k) is str for k in value):
        items = tuple((k, _kind(v, refs, depth + 1)) for k, v in value.items())
        return None if any(i[1] is None for i in items) else (t, items)
    try:
        refs.append((value, weakref.ref(value)))
    except TypeError:
        return None
    return ("id", id(value))


def key_of(fn, params):
    """(the code key of `fn` and `params`, the weak references its identities name) or None
    where fn is not a plain user function whose transform a template may stand for."""
    if type(fn) is not types.FunctionType:
        return None
    code = fn.__code__
    if code.co_filename.startswith("<"):        # secant's generated code, exec, a prompt,
        if code not in _bound_codes:            # but for a function bound from a template
            return None                         # (vmap(grad(f)) of a fresh f: of its code)
    else:
        d = fn.__dict__
        if d and any(k != ATTR for k in d):      # marks, __wrapped__, attributes of its own
            return None
    refs = []
    cells = []
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:                      # (not filled yet: a recursive definition)
            return None
        k = _kind(value, refs)
        if k is None:
            return None
        cells.append(k)
    defaults = []
    for value in (fn.__defaults__ or ()) + tuple((fn.__kwdefaults__ or {}).values()):
        if type(value) not in _LITERALS:        # (read under names of their own: baked)
            return None
        defaults.append((type(value), value))
    key = (code, id(fn.__globals__), fn.__name__, fn.__qualname__, fn.__module__,
           tuple(defaults), tuple(sorted(fn.__kwdefaults__ or ())), tuple(cells), params)
    return key, refs


class _Template:
    __slots__ = ("gen", "cells", "refs", "globals", "raw")

    def __init__(self, gen, cells, refs, globals_):
        # (code, its NumPy-value versions) as secant/raw_eager.py read them for the first
        # function bound: they depend on the code and on what its free names name, all of
        # which the key fixes (a free name of the user's data has none)
        self.raw = None
        self.gen = gen          # the generated function, bound to `cells` (empty ones)
        self.cells = cells      # its placeholder cell for each of the function's free names
        self.refs = refs        # weak references to the objects the key names by identity
        self.globals = globals_

    def alive(self, fn):
        return fn.__globals__ is self.globals and all(r() is not None for r in self.refs)


def _params(mode, wrt, has_aux, tuple_out, staged, batch):
    """The transform parameters of a key. A staged derivative (jit's) also by whether jit
    traces Python loops as written (transformer/functionalize.py `unrolled()`: its trace again
    after a staged loop's carry changed dtype or shape): its callees' loops are then unrolled,
    not lax loops, in a derivative of the same function and parameters."""
    if staged:
        from secant.transformer.functionalize import unrolling
        staged = "unrolled" if unrolling() else staged
    return (mode, wrt, has_aux, tuple_out, staged, batch)


def lookup(fn, wrt, mode, has_aux, tuple_out, staged, batch, current):
    """The generated function for `fn` (made from the template of its code), or None;
    `current(gen)`: whether what gen resolved (its guards) still holds."""
    if not enabled[0]:
        return None
    params = _params(mode, wrt, has_aux, tuple_out, staged, batch)
    hit = _instances.get((fn,) + params)
    if hit is not None:
        if current(hit):
            return hit
        _instances.pop((fn,) + params, None)
        return None
    found = key_of(fn, params)
    if found is None:
        return None
    key, refs = found
    tpl = _templates.get(key)
    if tpl is None:
        return None
    if not tpl.alive(fn) or any(r() is not v for (v, _), r in zip(refs, tpl.refs)):
        with _lock:
            _templates.pop(key, None)           # (an id reused by another object)
        return None
    own = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    gen = _rebind(tpl.gen, {id(c): own[n] for n, c in tpl.cells.items()}, {}, top=True)
    if not current(gen):                        # a callee it resolved was rebound
        with _lock:
            _templates.pop(key, None)
        return None
    if tpl.raw is None:
        from secant import raw_eager
        raw_eager.raw_version(gen)
        tpl.raw = gen.__dict__.get("__secant_numpy_version__")
    else:
        gen.__secant_numpy_version__ = tpl.raw
    _instances[(fn,) + params] = gen
    stats["instances"] += 1
    return gen


def remember(fn, gen, wrt, mode, has_aux, tuple_out, staged, batch):
    """Keeps a template of `gen` (generated for `fn`) for the next function with fn's code,
    where that is sound (see the module's note)."""
    if not enabled[0]:
        return
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    first = _seen.get(code)
    if first is None or first() is fn:
        try:                    # (the first function of its code: a module's function is made
            _seen[code] = weakref.ref(fn)   # once, and needs no template; the second one
        except TypeError:                   # keeps one; a weak reference, not an id: a new
            pass                            # function at a dead one's address is a second)
        return
    params = _params(mode, wrt, has_aux, tuple_out, staged, batch)
    found = key_of(fn, params)
    if found is None:
        return
    # fn's own generated function answers fn from here on: a template made of it would
    # otherwise answer fn's next lookup with a copy (two objects for one derivative: the
    # program printer named the second matmul_grad_y_vmap_1)
    _instances[(fn,) + params] = gen
    if found[0] in _templates:
        return
    key, refs = found
    own = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    if not _sound(gen, set(map(id, own.values()))):
        stats["refused"] += 1
        return
    holes = {n: types.CellType() for n in own}
    tpl_gen = _rebind(gen, {id(c): holes[n] for n, c in own.items()}, {}, top=True)
    data = [c.cell_contents for c in own.values()        # (not True, 0, ...: shared by all)
            if isinstance(c.cell_contents, _DATA + (tuple, list, dict))
            and not (type(c.cell_contents) in (bool, int) and -5 <= c.cell_contents <= 256)]
    targets = {id(x) for x in [fn, *own.values(), *data]}
    if _reaches(tpl_gen, targets):
        stats["refused"] += 1
        return
    with _lock:
        if len(_templates) >= _LIMIT:
            _templates.pop(next(iter(_templates)))
        _templates[key] = _Template(tpl_gen, holes, [r for _, r in refs], fn.__globals__)
        _bound_codes.add(tpl_gen.__code__)
    stats["templates"] += 1


def _generated(value):
    return type(value) is types.FunctionType and \
        value.__code__.co_filename.startswith("<secant")


def _sound(gen, own_cells, seen=None):
    """Whether `gen` (and each generated function its closure holds) assumes nothing of the
    function's own cells: plain identity guards of other names only, no recursion, no trace."""
    from secant.transformer.parse import Guard
    seen = set() if seen is None else seen
    if id(gen) in seen:
        return True
    seen.add(id(gen))
    if getattr(gen, "__secant_recursive__", False) or \
            getattr(gen, "__secant_traced__", None) is not None:
        return False
    for g in getattr(gen, "__secant_guards__", ()):
        if type(g) is Stamp:        # (a callee's code and defaults: not the function's cells)
            continue
        if type(g) is not Guard or any(check[0] is not None and id(check[0]) in own_cells
                                       and not _secants(check[-1]) for check in g.checks):
            return False        # (a guard of an own cell: rebound with it, if secant's own)
    for cell in gen.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if _generated(value) and not _sound(value, own_cells, seen):
            return False
        if type(value).__name__ == "_Recursive":
            return False
    return True


def _secants(value):
    """Whether `value` is secant's own (generated code, a module, a library function): what a
    template may hold (never the user's values, nor a user function and what it closes over)."""
    if isinstance(value, types.ModuleType) or _generated(value):
        return True
    if type(value) is not types.FunctionType or \
            (value.__module__ or "").split(".")[0] != "secant":
        return False
    # (one with cells: a function made at import by a factory, snp.tanh, which its module
    # names; not one made for a user's function at run time, a closure over it)
    return value.__closure__ is None or \
        getattr(sys.modules.get(value.__module__), value.__name__, None) is value


def _rebound_guards(guards, cells):
    """`guards` with each check of a cell named in `cells` (by id) reading its new cell."""
    from secant.transformer.parse import Guard
    out, changed = [], False
    for g in guards:
        if type(g) is Guard and any(c[0] is not None and id(c[0]) in cells for c in g.checks):
            new = object.__new__(Guard)
            new.checks = [(cells.get(id(c[0]), c[0]) if c[0] is not None else None,) + c[1:]
                          for c in g.checks]
            g, changed = new, True
        out.append(g)
    return tuple(out) if changed else guards


def _rebind(gen, cells, memo, top=False):
    """`gen` with each closure cell named in `cells` (by id) replaced by its new cell, and each
    generated function it holds that does so in turn rebound; `gen` itself where nothing
    changes (unless `top`: the new function a template or an instance is, always a copy)."""
    if id(gen) in memo:
        return memo[id(gen)]
    memo[id(gen)] = gen
    closure, changed = [], False
    for cell in gen.__closure__ or ():
        new = cells.get(id(cell))
        if new is None:
            try:
                value = cell.cell_contents
            except ValueError:
                value = None
            if _generated(value):
                sub = _rebind(value, cells, memo)
                if sub is not value:
                    new = types.CellType(sub)
        changed |= new is not None
        closure.append(cell if new is None else new)
    if not changed and not top:
        return gen
    from secant.transformer.parse import FunctionSource
    out = types.FunctionType(gen.__code__, gen.__globals__, gen.__name__, gen.__defaults__,
                             tuple(closure) if gen.__closure__ is not None else None)
    out.__kwdefaults__ = gen.__kwdefaults__
    out.__qualname__ = gen.__qualname__
    for k, v in gen.__dict__.items():
        if k not in (ATTR, "__secant_staging__", "__secant_source__",
                     "__secant_numpy_version__", "__secant_made_from__"):  # (the old cells')
            out.__dict__[k] = v
    guards = gen.__dict__.get("__secant_guards__")
    if guards:
        out.__secant_guards__ = _rebound_guards(guards, cells)
    src = gen.__dict__.get("__secant_source__")
    if src is not None:
        free = set(gen.__code__.co_freevars)
        values = {k: v for k, v in src.closure.items() if k not in free}
        for name, cell in zip(out.__code__.co_freevars, out.__closure__ or ()):
            try:
                values[name] = cell.cell_contents
            except ValueError:      # (a template's placeholder)
                pass
        node = src._node        # (the tree, or the function that builds it: never `src`,
        new = FunctionSource(out, node, src.filename, src.first_line,    # which holds values)
                             src.lines, src.globals, values, src.indent, src.generated)
        new.aliases = dict(src.aliases)
        new.imports = dict(src.imports)
        out.__secant_source__ = new
    memo[id(gen)] = out
    return out


def _reaches(root, targets):
    """Whether what `root` (a generated function) keeps reaches an object whose id is in
    `targets`: through generated functions' closures and attributes, containers, and secant's
    records of source (FunctionSource, Guard), never into modules or user functions."""
    from secant.transformer.parse import FunctionSource, Guard
    seen, todo = set(), [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if id(obj) in targets:
            return True
        t = type(obj)
        if t is types.FunctionType:
            if obj is not root and not _generated(obj):
                if (obj.__module__ or "").split(".")[0] == "secant":   # (a tree's builder)
                    todo.extend(obj.__closure__ or ())
                    todo.extend(obj.__defaults__ or ())
                continue
            for cell in obj.__closure__ or ():
                if id(cell) in targets:
                    return True
                try:
                    todo.append(cell.cell_contents)
                except ValueError:
                    pass
            todo.extend(v for k, v in obj.__dict__.items() if k != ATTR)
            todo.extend(obj.__defaults__ or ())
        elif t in (tuple, list, set, frozenset):
            todo.extend(obj)
        elif t is dict:
            todo.extend(obj.values())
        elif t is FunctionSource:
            todo.append(obj.fn)
            todo.append(obj._node)
            todo.extend(obj.closure.values())
            todo.extend(obj.imports.values())
        elif t is Guard:
            for check in obj.checks:
                todo.append(check[0])
                todo.append(check[-1])
        elif t is types.CellType:
            try:
                todo.append(obj.cell_contents)
            except ValueError:
                pass
        elif hasattr(t, "__secant_holds__"):     # (a counter's cells, global_writes._Cells)
            todo.extend(getattr(obj, a) for a in t.__secant_holds__)
    return False

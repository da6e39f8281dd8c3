"""grad's eager derivative in the persistent cache's index (issue 19): with a cache directory
set, `jit(grad(f))` in a fresh process whose jit record (secant/compile_index.py) is found still
generated grad's eager derivative of f at grad(f) (~18 ms for an MLP loss), though the call then
never ran it. Here the derivative's generated source is recorded under an early key of f read
as compile_index reads it (by value: code, source, defaults, cells, the globals its code names;
secant's own files, versions and config), and a fresh process loads that source instead of
generating it again.

Only a derivative that the source and a few plain facts stand for completely is recorded: grad
or value_and_grad of a plain user function, whose generated function calls no derivative of a
callee of its own (only secant's helpers, builtins and f's own closure cells), has no canonical
form of its own, no effects, no state parameters (ad/state_inputs.py), no inline form, and
whose guards are its Guard of the names it resolved (globals and f's cells, read again when
loaded) and f's Stamp. Anything else, a damaged record, or a jit hook (`secant run
--show-source`): generated as before. An error is never recorded: a function the transforms
refuse is generated, and refused, at each process's grad(f), as without the index.
"""
import builtins
import hashlib
import types

from secant import compile_index
from secant.backends import compilation_cache

_FORMAT = "secant-gen-1"
# hits: derivatives loaded; misses: none recorded (generated, then stored); corrupt: a record
# that did not fit (generated); stores; refused: no key, or a derivative not recorded
_records = compile_index.Records(".gen")
stats = _records.stats
_count = _records.count
_ATTRS = frozenset(("__secant_source__", "__secant_out_batched__", "__secant_inline__",
                    "__secant_wrt_names__", "__secant_effects__", "__secant_array_params__",
                    "__secant_guards__", "__secant_staging__", "__secant_state_params__",
                    "__secant_out_active__"))


def key(fn, positions, mode, has_aux, tuple_out):
    """The early key of `mode` of plain user function `fn`, or None (no record)."""
    from secant import api, transforms
    if not compile_index.enabled[0] or compilation_cache.directory() is None \
            or mode not in ("grad", "value_and_grad") or type(fn) is not types.FunctionType \
            or transforms.GENERATE_HOOKS or api.JIT_HOOKS:
        return None
    try:
        value = compile_index._value(fn, (), 0, set())
        text = repr((_FORMAT, compile_index._process_part(), value, tuple(positions), mode,
                     bool(has_aux), bool(tuple_out)))
    except Exception:       # (compile_index._No, or anything unforeseen: generated as before)
        _count("refused")
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def _ours():
    """What _generate binds generated code's own free names to (secant/transforms.py)."""
    from secant import lax, transforms
    from secant.ad import helpers
    from secant.batching import helpers as batch_helpers
    import secant.numpy as snp
    return {"snp": snp, "lax": lax, "dynamic_call": transforms.dynamic_call,
            "check_keywords": transforms.check_keywords,
            "check_distinct": transforms.check_distinct,
            "attribute_reader": transforms.attribute_reader,
            **helpers.by_name(), **batch_helpers.by_name()}


def store(name, fn, gen):
    """Record `gen`, generated for `fn`, under early key `name` when its source and plain facts
    stand for it completely (see the module's docstring); else nothing."""
    try:
        record = _record(fn, gen)
    except Exception:
        record = None
    if record is None:
        _count("refused")
        return
    _records.write(name, record)


def _record(fn, gen):
    from secant.backends.function_cache import Stamp
    from secant.transformer.parse import Guard
    # (what it is made from: set again where it is loaded, secant/transforms.py)
    made = {"__secant_made_from__"}
    if type(gen) is not types.FunctionType or set(gen.__dict__) - made != _ATTRS \
            or gen.__secant_inline__ is not None or gen.__secant_out_batched__ is not None \
            or gen.__secant_out_active__ is not None \
            or gen.__secant_effects__ is not False or gen.__secant_staging__ != (fn, ()) \
            or gen.__secant_state_params__ != ():     # (a vjp taking the state it reads)
        return None
    import linecache
    src = gen.__secant_source__
    own_file = gen.__code__.co_filename
    if src.fn is not gen or own_file not in linecache.cache:
        return None
    source = "".join(linecache.cache[own_file][2])
    canonical = None
    if src.filename != own_file:    # its canonical form (transforms._canonical_source)
        if src.filename not in linecache.cache or src.first_line != 1 or src.indent:
            return None
        canonical = ["\n".join(src.lines) + "\n", _origins(src.filename)]
    guards = gen.__secant_guards__
    if len(guards) != 2 or type(guards[0]) is not Guard or type(guards[1]) is not Stamp \
            or guards[1].fn() is not fn or not guards[1].holds():
        return None
    fn_cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    checks = []
    for cell, globals_, name, chain, _ in guards[0].checks:
        if cell is None and globals_ is fn.__globals__:
            checks.append(["g", name, list(chain)])
        elif cell is not None and fn_cells.get(name) is cell:
            checks.append(["c", name, list(chain)])
        else:
            return None
        if not all(type(a) is str for a in chain):
            return None
    ours = _ours()

    def where(name, v, cell=None):
        """How a fresh process finds free name `name`'s value `v` (None: it cannot)."""
        if cell is not None and fn_cells.get(name) is cell or cell is None and name in fn_cells \
                and _contents(fn_cells[name]) is v:
            return [name, "c", name]
        if name in ours and ours[name] is v:
            return [name, "o", name]
        found = [k for k, o in ours.items() if o is v]
        if len(found) == 1:
            return [name, "o", found[0]]
        if not found and getattr(builtins, name, None) is v:
            return [name, "b", name]
        return None
    free = [where(name, cell.cell_contents, cell)
            for name, cell in zip(gen.__code__.co_freevars, gen.__closure__ or ())]
    if canonical is not None:
        canonical.append([where(k, v) for k, v in src.closure.items()])
        if None in canonical[2]:
            return None
    if None in free:
        return None
    return {"format": _FORMAT, "name": gen.__name__, "source": source,
            "origins": _origins(own_file), "canonical": canonical,
            "free": free, "checks": checks,
            "wrt": list(gen.__secant_wrt_names__),
            "arrays": sorted(gen.__secant_array_params__)}


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


_EMPTY = object()


def _origins(filename):
    from secant.backends.errors import origins_of
    return [[k, f, n] for k, (f, n) in origins_of(filename).items()]


def load(name, fn):
    """The derivative recorded under early key `name` for `fn`, loaded, or None."""
    return _records.read(name, lambda rec: _loaded(rec, fn))


def _loaded(rec, fn):
    from secant.backends.function_cache import Stamp
    from secant.transformer.parse import Guard, _read, _same
    from secant.transforms import load_generated
    if rec["format"] != _FORMAT:
        return None
    fn_cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    ours = []

    def value(kind, what):
        if kind == "c":
            return fn_cells[what].cell_contents
        if kind == "o":
            if not ours:
                ours.append(_ours())
            return ours[0][what]
        if kind == "b":
            return getattr(builtins, what)
        raise ValueError(kind)
    free, cells = {}, {}
    for local, kind, what in rec["free"]:
        free[local] = value(kind, what)
        if kind == "c":
            cells[local] = fn_cells[what]
    guard = object.__new__(Guard)
    guard.checks = []
    for kind, name, chain in rec["checks"]:
        cell = fn_cells[name] if kind == "c" else None
        check = (cell, fn.__globals__, name, tuple(chain), None)
        now = _read(check)
        if not _same(_read(check), now):
            return None
        guard.checks.append(check[:-1] + (now,))
    origins = {int(k): (f, n) for k, f, n in rec["origins"]}
    gen = load_generated(rec["source"], rec["name"], fn.__globals__, free, origins or None,
                         cells)
    if set(gen.__code__.co_freevars) - free.keys():
        return None
    if rec["canonical"] is not None:
        from secant.transforms import _canonical_source
        text, canonical_origins, names = rec["canonical"]
        gen.__secant_source__ = _canonical_source(
            gen, text, {int(k): (f, n) for k, f, n in canonical_origins},
            {local: value(kind, what) for local, kind, what in names})
    gen.__secant_out_batched__ = None
    gen.__secant_out_active__ = None
    gen.__secant_inline__ = None
    gen.__secant_wrt_names__ = tuple(rec["wrt"])
    gen.__secant_effects__ = False
    gen.__secant_state_params__ = ()
    gen.__secant_array_params__ = frozenset(rec["arrays"])
    gen.__secant_guards__ = (guard, Stamp(fn))
    gen.__secant_staging__ = (fn, ())
    return gen

"""Statements Python refuses whatever the values: an item set on (or deleted from) an object of
a class with no __setitem__ (__delitem__), as flax's FrozenDict, and an attribute set on (or
deleted from) an object of a __slots__ class with no place for it. Where the object is a local
bound once, in the function's own body, to a call of the class, the statement reads as the
`raise` Python does there, on the user's line:

    variables["params"] = params
        -> raise TypeError("'FrozenDict' object does not support item assignment")

and the rest of its block, which never runs, goes (and the object's binding, where nothing else
reads it and its call fits the class's signature: grad and vmap would refuse an object built
from traced values). Every transform then raises Python's own exception, as JAX does (it runs
the Python), instead of refusing the object (issue 15). Only where Python is certain to raise:
a class whose calls make its own objects (no __new__ written in Python, no metaclass __call__),
a statement whose other parts are names and constants (read first, as Python reads them), an
attribute the class knows nothing of. Where the class has its own __setitem__, jit leaves
`d[k] = v` as written (sets_items_itself), never an array's .at[k].set(v)."""
import inspect
import types

import gast

from secant.transformer.hygiene import walk_scope as _walk_scope

_BLOCK_FIELDS = ("body", "orelse", "finalbody")
_SIMPLE = (gast.Name, gast.Constant)


def rewrite(d, body):
    made = d.made_objects = _made_once(d, body)
    if not made:
        return body
    out = _block(body, made, set())
    if out is body:
        return body
    d.changed = True
    last = out[-1]
    name = getattr(last, "python_error_of", None)
    if name is not None and not d.only_choices:
        cls, binding = made[name]
        reads = [n for s in out if s is not binding for n in gast.walk(s)
                 if isinstance(n, gast.Name) and n.id == name]
        if not reads and _binds(cls, binding.value):
            # the object only the raise was about: made for nothing (the transforms would
            # refuse an object built from traced values; jit runs the Python as written)
            out = [s for s in out if s is not binding]
    return out


def _binds(cls, call):
    """Whether `call`'s arguments fit cls's signature (its call raises no TypeError there)."""
    if any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return False
    try:
        inspect.signature(cls).bind(*call.args, **{k.arg: k.value for k in call.keywords})
    except (TypeError, ValueError):
        return False
    return True


def _made_once(d, body):
    """{local: (its class, the binding)} for each local bound once, by a statement of the
    function's own body, to a call of a class that makes its own objects."""
    made = {}
    for s in body:          # (the top level first: most functions bind no object, one walk)
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call) and \
                s.targets[0].id not in d.params:
            cls = _callee(d, s.value.func)
            if isinstance(cls, type) and _makes_its_own(cls):
                made[s.targets[0].id] = (cls, s)
    if not made:
        return made
    stores = {}
    for n in _walk_scope(body):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, (gast.Global, gast.Nonlocal, gast.Import, gast.ImportFrom)):
            return {}   # (names bound another way: not read here)
        elif isinstance(n, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
            if any(isinstance(m, gast.Nonlocal) for m in gast.walk(n)):
                return {}
    return {name: v for name, v in made.items() if stores.get(name) == 1
            and not stores.get(_root(v[1].value.func))}     # (a class the function rebinds:
                                                            # not the global read at transform)


def _root(func):
    while isinstance(func, gast.Attribute):
        func = func.value
    return getattr(func, "id", None)


def sets_items_itself(d, name):
    """Whether the local `name` holds an object of a user class with its own __setitem__
    (bound once to a call of it): `name[k] = v` runs that method, as written, never an
    array's .at[k].set(v) (jit's rewrite of an item assignment)."""
    cls = getattr(d, "made_objects", {}).get(name, (None,))[0]
    return cls is not None and getattr(cls, "__setitem__", None) is not None and \
        (cls.__module__ or "").split(".")[0] not in ("numpy", "secant", "jax", "builtins")


def _callee(d, func):
    chain = []
    while isinstance(func, gast.Attribute):
        chain.insert(0, func.attr)
        func = func.value
    if not isinstance(func, gast.Name):
        return None
    return d.module_callee(func.id, chain)


def _makes_its_own(cls):
    """Whether `cls(...)` makes an object of cls itself (or raises): no __new__ written in
    Python in its bases, no metaclass with its own __call__."""
    if type(cls).__call__ is not type.__call__:
        return False
    for k in cls.__mro__:
        new = vars(k).get("__new__")
        if isinstance(new, staticmethod):
            new = new.__func__
        if isinstance(new, types.FunctionType):
            return False
    return True


def _block(stmts, made, seen):
    """`stmts` with the first statement Python refuses as a raise, the rest dropped (the list
    itself where none); `seen`: the locals whose binding statement ran before (only those)."""
    out, changed = [], False
    for s in stmts:
        error = _refused(s, made, seen)
        if error is not None:
            for n in gast.walk(error):
                gast.copy_location(n, s)
            out.append(error)
            return out          # (what follows never runs)
        for field in _BLOCK_FIELDS:
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner and not isinstance(s, gast.ClassDef):
                new = _block(inner, made, seen)
                if new is not inner:
                    setattr(s, field, new)
                    changed = True
        for h in getattr(s, "handlers", None) or ():
            new = _block(h.body, made, seen)
            if new is not h.body:
                h.body, changed = new, True
        seen.update(name for name, (_, binding) in made.items() if s is binding)
        out.append(s)
    return out if changed else stmts


def _refused(s, made, seen):
    """The `raise` Python does at `s` (a statement on one object of `made`), else None."""
    if isinstance(s, (gast.FunctionDef, gast.ClassDef)):
        return None
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and _simple(s.value):
        target, what = s.targets[0], "set"
    elif isinstance(s, gast.AnnAssign) and s.value is not None and _simple(s.value):
        target, what = s.target, "set"
    elif isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Attribute) and \
            _simple(s.value):
        target, what = s.target, "set"     # (the attribute read first: the same error)
    elif isinstance(s, gast.Delete) and len(s.targets) == 1:
        target, what = s.targets[0], "delete"
    else:
        return None
    if not isinstance(target, (gast.Subscript, gast.Attribute)) or \
            not isinstance(target.value, gast.Name) or target.value.id not in seen:
        return None
    cls = made[target.value.id][0]
    if isinstance(target, gast.Subscript):
        method = "__setitem__" if what == "set" else "__delitem__"
        if not _simple(target.slice) or getattr(cls, method, None) is not None:
            return None
        kind, message = "TypeError", f"'{cls.__name__}' object does not support item " + (
            "assignment" if what == "set" else "deletion")
    else:
        if not _no_place(cls, target.attr, what):
            return None
        kind, message = "AttributeError", \
            f"'{cls.__name__}' object has no attribute '{target.attr}'"
    raised = gast.Raise(exc=gast.Call(func=gast.Name(kind, gast.Load(), None, None),
                                      args=[gast.Constant(message, None)], keywords=[]),
                        cause=None)
    raised.python_error_of = target.value.id
    return raised


def _simple(node):
    if isinstance(node, (gast.Tuple, gast.List)):
        return all(_simple(e) for e in node.elts)
    return isinstance(node, _SIMPLE)


def _no_place(cls, attr, what):
    """Whether an object of `cls` can never have the attribute `attr` set (deleted): no
    instance __dict__ (__slots__ throughout), no slot or class attribute of that name, no
    __setattr__ (__delattr__) of its own."""
    hook = "__setattr__" if what == "set" else "__delattr__"
    return getattr(cls, "__dictoffset__", 1) == 0 and \
        getattr(cls, hook) is getattr(object, hook) and \
        inspect.getattr_static(cls, attr, _MISSING) is _MISSING


_MISSING = object()

"""Callee resolution: what Python would call, found once, for every transform.

A call's callee expression is evaluated in the function's own environment at transform time
when it is a pure look-up: names (closure cells, globals, builtins), attribute chains,
`getattr(obj, "name")` (the name a constant or a free name holding a string), subscripts of
constant containers with constant keys. The call is then rewritten so that its callee is a
plain function, an op or a secant function:

- a bound method `obj.m(x)`            -> `Cls.m(obj, x)`  (self: a non-differentiated argument)
- a classmethod `Cls.cm(x)`            -> `Cls.cm.__func__(Cls, x)`
- a callable object `obj(x)`           -> `Cls.__call__(obj, x)`
- `functools.partial(f, a)(x)`, `p(x)` -> `f(a, x)`, `p.func(p.args[0], x)`
- `f(*(a, b))`, `f(**{"k": v})`        -> `f(a, b)`, `f(k=v)`
(staticmethods are plain functions already; operator.add & co. are ops: transformer/ops.py.)
- `super().m(x)` in a method of C    -> `super_method(C, self, 'm')(self, x)` (normalize.py
                                        super_call), the method found when it runs

A callee that only the running program knows (a parameter's method `self.layer(x)`, a function
picked from a container by data) is not resolved here: the normaliser writes it as a call of
`dynamic_call(fn, ...)`, whose derivative or batched form a dispatcher finds on first use.
"""
import ast
import builtins
import dataclasses
import functools
import inspect
import operator
import types
import weakref

from secant.backends.function_cache import FunctionCache
import gast

from secant.backends import once
from secant.transformer import global_writes
from secant.transformer.hygiene import copy_tree

UNRESOLVED = object()

# Standard-library functions whose source secant cannot transform (they mutate what they
# build), refused where the user calls them with a transformed value: what to write instead.
UNSUPPORTED = {}


def unsupported(fn, what):
    """The explanation for a callee in UNSUPPORTED (`what`: the kind of value passed), else None."""
    try:
        message = UNSUPPORTED.get(fn)
    except TypeError:       # (not hashable)
        return None
    return None if message is None else message.format(what=what)

_TYPE_TESTS = ("isinstance", "issubclass", "callable", "hasattr")
_PREDICATES = weakref.WeakKeyDictionary()


def type_predicate(fn):
    """Whether `fn` is a plain function returning a Python bool read off its arguments' types
    alone (equinox's `is_array`: `return isinstance(x, (np.ndarray, jax.Array))`): its body
    one `return` of isinstance / issubclass / callable / hasattr calls and `is` / `is not`
    tests of names and attributes, joined by and / or / not. Its call has no derivative and no
    batch axis (JAX: a bool of the tracer's type), so the transforms run it as written."""
    if not inspect.isfunction(fn):
        return False
    try:
        hit = _PREDICATES.get(fn)
    except TypeError:
        return False
    if hit is None:
        hit = _PREDICATES[fn] = _is_type_predicate(fn)
    return hit


def _is_type_predicate(fn):
    from secant.transformer.parse import function_source
    try:
        node = function_source(fn).node
    except Exception:       # noqa: BLE001 (no source: not one)
        return False
    body = node.body if isinstance(node, gast.FunctionDef) else None
    if isinstance(node, gast.Lambda):
        body = [gast.Return(node.body)]
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant):
        body = body[1:]         # (the docstring)
    if not (body and len(body) == 1 and isinstance(body[0], gast.Return)):
        return False

    def plain(e):           # a name, an attribute chain, a constant, a tuple of them
        if isinstance(e, gast.Tuple):
            return all(plain(i) for i in e.elts)
        while isinstance(e, gast.Attribute):
            e = e.value
        return isinstance(e, (gast.Name, gast.Constant))

    def test(e):
        if isinstance(e, gast.BoolOp):
            return all(test(v) for v in e.values)
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.Not):
            return test(e.operand)
        if isinstance(e, gast.Compare):
            return all(isinstance(o, (gast.Is, gast.IsNot)) for o in e.ops) and \
                plain(e.left) and all(plain(c) for c in e.comparators)
        if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and \
                e.func.id in _TYPE_TESTS and not e.keywords:
            known = getattr(builtins, e.func.id)
            own = fn.__globals__.get(e.func.id, known)
            free = fn.__code__.co_freevars
            return own is known and e.func.id not in free and all(plain(a) for a in e.args)
        return False
    value = body[0].value
    return value is not None and test(value)


# containers whose items a look-up may read at transform time (exactly these types: no user
# __getitem__ or defaultdict __missing__ runs)
_PURE_CONTAINERS = (dict, list, tuple, types.MappingProxyType)
_KEYS = (str, int, bool, type(None), tuple, float)


def resolve(src, local, node):
    """The object the pure look-up `node` names, or UNRESOLVED; `local(name)`: whether a name
    is a local variable of the function (whose value only the running program knows)."""
    if isinstance(node, gast.Name):
        if local(node.id) or global_writes.rebound_callee(src, node.id):
            return UNRESOLVED
        kind, obj = src.resolve_name(node.id)
        return UNRESOLVED if kind == "unbound" else obj
    if isinstance(node, gast.Constant):
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) \
            and isinstance(node.operand, gast.Constant) and type(node.operand.value) is int:
        return -node.operand.value
    if isinstance(node, gast.Attribute):
        base = resolve(src, local, node.value)
        return UNRESOLVED if base is UNRESOLVED else _attribute(base, node.attr)
    if isinstance(node, gast.Subscript):
        base = resolve(src, local, node.value)
        key = resolve(src, local, node.slice)
        if base is UNRESOLVED or key is UNRESOLVED or type(base) not in _PURE_CONTAINERS \
                or not isinstance(key, _KEYS):
            return UNRESOLVED
        try:
            return base[key]
        except (LookupError, TypeError):
            return UNRESOLVED
    if isinstance(node, gast.Tuple):
        items = [resolve(src, local, e) for e in node.elts]
        return UNRESOLVED if any(i is UNRESOLVED for i in items) else tuple(items)
    if isinstance(node, gast.Call) and len(node.args) == 2 and not node.keywords \
            and resolve(src, local, node.func) is builtins.getattr:
        base = resolve(src, local, node.args[0])
        name = resolve(src, local, node.args[1])
        if base is UNRESOLVED or not isinstance(name, str):
            return UNRESOLVED
        return _attribute(base, name)
    return UNRESOLVED


def _attribute(base, name):
    """getattr(base, name) when reading it runs no user code (no property, nor a descriptor
    written in Python)."""
    if type(base) is types.ModuleType and name in base.__dict__ and \
            not hasattr(types.ModuleType, name):
        static = base.__dict__[name]    # (getattr_static's answer for a module's own name, at
    else:                               # a fraction of its cost: issue 19, `snp.sin` per op)
        try:
            static = inspect.getattr_static(base, name)
        except AttributeError:
            return UNRESOLVED
    if isinstance(static, (property, functools.cached_property)) or \
            inspect.isfunction(getattr(type(static), "__get__", None)):
        return UNRESOLVED       # reading it runs user code: leave it to run time
    try:
        return getattr(base, name)
    except Exception:           # noqa: BLE001 - a look-up that fails is not a resolution
        return UNRESOLVED


def _expr(text, where):
    node = gast.parse(text).body[0].value
    for n in gast.walk(node):
        if hasattr(n, "lineno") or isinstance(n, gast.expr):
            gast.copy_location(n, where)
    return node


def _src(node):
    return gast.unparse(node).strip()


def is_user_callable_object(obj):
    """An instance (not a function, class or secant object) whose class defines __call__ in
    Python: calling it calls that function with the instance first."""
    if isinstance(obj, (type, types.FunctionType, types.MethodType, types.BuiltinFunctionType,
                        functools.partial)) or _is_secant(obj):
        return False
    call = getattr(type(obj), "__call__", None)
    return inspect.isfunction(call)


def _is_secant(obj):
    """secant's own objects (jit functions, custom rules) are read by the normaliser itself."""
    mod = getattr(type(obj), "__module__", "") or ""
    return mod.split(".")[0] == "secant" or any(a.startswith("__secant") for a in dir(obj))


def _is_library(fn):
    if getattr(fn, "__globals__", {}).get("__secant_by_source__"):   # read like user code
        return False                                                  # (numpy/composite.py)
    return (getattr(fn, "__module__", "") or "").split(".")[0] in ("secant", "numpy")


def getter_read(src, local, node):
    """`get(x)` of `get = operator.itemgetter(k)` (or attrgetter("a.b"), methodcaller("m", a)),
    or `operator.attrgetter("v")(x)` written in place, with one argument: the read it makes,
    `x[k]` (`(x[k1], x[k2])`, `x.a.b`, `x.m(a)`), as a gast expression; else None."""
    if len(node.args) != 1 or node.keywords or isinstance(node.args[0], gast.Starred):
        return None
    obj = _getter(src, local, node.func)
    if obj is None:
        return None
    arg = _src(node.args[0])
    if isinstance(obj, operator.methodcaller):
        made, args = obj.__reduce__()
        keywords = made.keywords if isinstance(made, functools.partial) else {}
        if not all(_is_literal(v) for v in args[1:] + tuple(keywords.values())):
            return None
        given = [repr(v) for v in args[1:]] + [f"{k}={v!r}" for k, v in keywords.items()]
        return _expr(f"({arg}).{args[0]}({', '.join(given)})", node)
    keys = obj.__reduce__()[1]
    if isinstance(obj, operator.itemgetter) and not all(type(k) in (int, str) for k in keys):
        return None                     # (slices, tuples: left to the call as it is)
    if isinstance(obj, operator.itemgetter):
        reads = [f"({arg})[{k!r}]" for k in keys]
    else:
        reads = [f"({arg}).{k}" for k in keys]
    text = reads[0] if len(reads) == 1 else f"({', '.join(reads)})"
    return _expr(text, node)


_GETTERS = (operator.itemgetter, operator.attrgetter, operator.methodcaller)


def _getter(src, local, func):
    """The itemgetter/attrgetter/methodcaller the callee `func` names or builds from literals
    (`operator.attrgetter("v")`), else None."""
    obj = resolve(src, local, func)
    if obj is UNRESOLVED and isinstance(func, gast.Call) and func.args and \
            not any(isinstance(a, gast.Starred) for a in func.args) and \
            all(k.arg is not None for k in func.keywords) and \
            resolve(src, local, func.func) in _GETTERS:
        args = [_literal_value(src, local, a) for a in func.args]
        kws = {k.arg: _literal_value(src, local, k.value) for k in func.keywords}
        if all(_is_literal(v) for v in args + list(kws.values())):
            try:
                obj = resolve(src, local, func.func)(*args, **kws)
            except TypeError:
                return None
    return obj if isinstance(obj, _GETTERS) else None


def _literal_value(src, local, node):
    """The value of `node` when a pure look-up or a literal (`-0.5`), else UNRESOLVED."""
    value = resolve(src, local, node)
    if value is UNRESOLVED:
        try:
            return ast.literal_eval(_src(node))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return UNRESOLVED
    return value


def canonical_call(src, local, node):
    """`node` (a gast.Call) rewritten so its callee is what Python would call, with bound
    objects as leading arguments; the node itself when nothing is to be rewritten."""
    for _ in range(8):          # partial(partial(f, a), b)(x) unwinds in steps
        new = _rewrite_once(src, local, node)
        if new is node:
            return node
        node = new
    return node


def _rewrite_once(src, local, node):
    expanded = _expand_literals(node)
    if expanded is not node:
        return expanded
    func = node.func
    if node.args and not isinstance(node.args[0], gast.Starred) \
            and resolve(src, local, func) is dynamic_call:
        return _call(node, node.args[0], node.args[1:], node.keywords)   # generated code's
    # functools.partial(f, a, k=v)(x) written in place
    if isinstance(func, gast.Call) and _is_partial_type(resolve(src, local, func.func)) \
            and func.args and not any(isinstance(a, gast.Starred) for a in func.args):
        return _call(node, func.args[0], func.args[1:] + node.args,
                     _overridden(func.keywords, node.keywords))
    obj = resolve(src, local, func)
    if obj is UNRESOLVED:
        return node
    if isinstance(obj, functools.partial):
        f = _expr(f"({_src(func)}).func", func)
        args = [_partial_arg(v, f"({_src(func)}).args[{i}]", func)
                for i, v in enumerate(obj.args)]
        kws = [gast.keyword(arg=k, value=_partial_arg(v, f"({_src(func)}).keywords[{k!r}]",
                                                      func))
               for k, v in obj.keywords.items()]
        return _call(node, f, args + node.args, _overridden(kws, node.keywords))
    if isinstance(obj, types.MethodType) and inspect.isfunction(obj.__func__) \
            and not _is_library(obj.__func__):
        owner = obj.__self__
        if isinstance(func, gast.Attribute) and resolve(src, local, func.value) is owner:
            self_node = func.value
            if isinstance(owner, type):             # a classmethod: Cls.cm(x) -> cm(Cls, x)
                f = _expr(f"{_src(func)}.__func__", func)
            else:
                f = _class_attr(src, local, owner, func.attr, obj.__func__, self_node, func)
        else:
            self_node = _expr(f"({_src(func)}).__self__", func)
            f = _expr(f"({_src(func)}).__func__", func)
        return _call(node, f, [self_node] + node.args, node.keywords)
    if is_user_callable_object(obj):
        f = _class_attr(src, local, obj, "__call__", type(obj).__call__, func, func)
        return _call(node, f, [func] + node.args, node.keywords)
    return node


def _partial_arg(value, text, where):
    """A partial's stored argument: a literal (a string, number, bool, None, or a tuple of
    them) written in place, so a static argument reads as one (`partial(snp.einsum, "i,i->")`:
    einsum's rules need its subscripts); anything else read from the partial by `text`. (A
    partial's arguments cannot change, and the partial itself was resolved through a guarded
    name.)"""
    if _is_literal(value):
        return _expr(repr(value), where)
    return _expr(text, where)


def _is_literal(value):
    if isinstance(value, tuple) and type(value) is tuple:
        return all(_is_literal(v) for v in value)
    if type(value) not in (str, int, bool, float, type(None)):
        return False
    try:
        return ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError):
        return False


def _is_partial_type(obj):
    """functools.partial, or tree_util.Partial (which calls as it)."""
    from secant.tree_util import Partial
    return obj is functools.partial or obj is Partial


def _class_attr(src, local, owner, attr, fn, self_node, where):
    """`Cls.attr` when the class is reachable by its own name from the function, else
    `type(obj).attr`: an expression that evaluates to the plain function `fn`."""
    cls = type(owner)
    name = cls.__name__
    if resolve(src, local, gast.Name(name, gast.Load(), None, None)) is cls \
            and inspect.getattr_static(cls, attr, None) is fn:
        return _expr(f"{name}.{attr}", where)
    if src.resolve_name("type") == ("builtin", builtins.type):
        return _expr(f"type({_src(self_node)}).{attr}", where)
    return _expr(f"({_src(self_node)}).{attr}.__func__", where)


def _overridden(bound, given):
    """A partial's keywords and the call's: a keyword the call gives replaces the partial's (as
    functools.partial does), each named once."""
    named = {k.arg for k in given if k.arg is not None}
    return [k for k in bound if k.arg not in named] + list(given)


def _call(node, func, args, keywords):
    new = gast.Call(func=func, args=list(args), keywords=list(keywords))
    return gast.copy_location(new, node)


def _expand_literals(node):
    """f(*(a, b), **{"k": v}) -> f(a, b, k=v): a starred literal is its items."""
    if not any(isinstance(a, gast.Starred) and isinstance(a.value, (gast.Tuple, gast.List))
               for a in node.args) and \
            not any(k.arg is None and isinstance(k.value, gast.Dict)
                    and all(isinstance(key, gast.Constant) and isinstance(key.value, str)
                            for key in k.value.keys) for k in node.keywords):
        return node
    args = []
    for a in node.args:
        if isinstance(a, gast.Starred) and isinstance(a.value, (gast.Tuple, gast.List)):
            args.extend(a.value.elts)
        else:
            args.append(a)
    keywords = []
    for k in node.keywords:
        if k.arg is None and isinstance(k.value, gast.Dict) and all(
                isinstance(key, gast.Constant) and isinstance(key.value, str)
                for key in k.value.keys):
            keywords.extend(gast.keyword(arg=key.value, value=v)
                            for key, v in zip(k.value.keys, k.value.values))
        else:
            keywords.append(k)
    return _call(node, node.func, args, keywords)


def short_name(fn):
    """What generated code calls a callee's values: its name; a class's __call__ by the class
    (Layer.__call__: layer)."""
    name = getattr(fn, "__name__", "fn")
    if name == "__call__":
        return (getattr(fn, "__qualname__", "fn").split(".")[-2] or "fn").lower()
    return name


def super_method(cls, obj, name):
    """The function `super().name` finds in a method of `cls` called on `obj`: name's
    definition in the next class after cls in type(obj)'s MRO (mixins chained by super()),
    called with obj passed first; known only when the code runs (obj's class)."""
    mro = type(obj).__mro__
    after = mro[mro.index(cls) + 1:] if cls in mro else ()
    found = next((vars(c)[name] for c in after if name in vars(c)), None)
    if not inspect.isfunction(found):
        from secant.backends.errors import SecantError
        raise SecantError(f"super().{name} in a method of {cls.__qualname__} called on a "
                          f"{type(obj).__qualname__} finds {found!r}: secant transforms a "
                          "super() call of a plain method defined in Python")
    return found


# super_method(C, self, 'm')(self, x): self passed again, and what it returns depends on self's
# class only: a constant for every transform (as operators.binary_method)
super_method.__secant_dispatcher__ = super_method.__secant_static_query__ = True


def replacer(obj, names, method=False):
    """`dataclasses.replace(obj, **changes)` (a namedtuple's `obj._replace(**changes)`) for
    obj's class and the names changed, as generated code the transforms read: `def
    replace_linear(obj, *, bias): return Linear_(weight=obj.weight, bias=bias)` (every field
    its __init__ takes, from obj unless changed); known only when the code runs (obj's class),
    the same function for every object of the class. With `method` (`obj._replace(...)`), a
    class's own _replace that is not a namedtuple's is that function itself, called with obj
    as its self."""
    cls = type(obj)
    if method and not (isinstance(obj, tuple) and hasattr(obj, "_fields") and getattr(
            getattr(cls, "_replace", None), "__module__", None) == "collections"):
        return getattr(cls, "_replace")
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):     # a namedtuple's _replace
        unknown = [k for k in names if k not in obj._fields]
        if unknown:
            raise ValueError(f"Got unexpected field names: {unknown!r}")
    elif not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise TypeError("replace() should be called on dataclass instances")
    else:
        for f in dataclasses.fields(cls):
            if not f.init and f.name in names:
                raise ValueError(f"field {f.name} is declared with init=False, it cannot be "
                                 "specified with replace()")
    return once.build(_REPLACERS, (cls, names), lambda: _make_replacer(cls, names))


def _make_replacer(cls, names):
    from secant.transforms import load_generated
    from secant.backends.errors import register_internal_file
    fields = [f for f in cls._fields if f not in names] if issubclass(cls, tuple) else \
        [f.name for f in dataclasses.fields(cls) if f.init and f.name not in names]
    name = f"replace_{cls.__name__.lower()}" if cls.__name__.isidentifier() else "replace"
    sig = ", ".join(["obj"] + (["*"] + list(names) if names else []))
    args = ", ".join([f"{k}=obj.{k}" for k in fields] + [f"{k}={k}" for k in names])
    made = load_generated(f"def {name}({sig}):\n    return {name}_({args})\n", name, {},
                          {f"{name}_": cls})
    register_internal_file(made.__code__.co_filename)
    made.__secant_user_code__ = True    # (desugared as user code: the class's constructor)
    return made


_REPLACERS = {}

# replacer(obj, ('k',))(obj, k=v): obj passed again, and what it returns depends on obj's class
# only: a constant for every transform (as super_method)
replacer.__secant_dispatcher__ = replacer.__secant_static_query__ = True


def dynamic_call(fn, *args, **kwargs):
    """How generated code calls a function only the running program knows."""
    return run_form(fn)(*args, **kwargs)


def run_form(fn):
    """What generated code runs for the value of a call of `fn`, known only when it runs: a
    user function's runnable form (transformer/runnable.py: a factory returning a nested def
    returns the Closure object its derivative's structure reads, `optax.sgd(lr)` called through
    a name bound at run time), any other callable as it is."""
    if type(fn) is not types.FunctionType:
        return fn
    from secant.transformer.runnable import runnable
    return runnable(fn)


_CALLERS = {}


def check_keywords(kwargs, allowed, name):
    """`f(x, **kwargs)` spelled out as the keywords f takes (normalize.py): Python's TypeError
    for a key f does not take, which the spelled-out call would ignore."""
    for key in kwargs:
        if key not in allowed:
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")


check_keywords.__secant_placeholder__ = check_keywords.__secant_check__ = True   # (reads keys)


def check_distinct(name, *dicts):
    """`f(**a, **b)` read as one merged dict (normalize.py starred_call): Python's TypeError
    for a key given twice, which the merge would keep the last of."""
    seen = set()
    for d in dicts:
        for key in d:
            if key in seen:
                raise TypeError(f"{name}() got multiple values for keyword argument {key!r}")
            seen.add(key)


check_distinct.__secant_placeholder__ = check_distinct.__secant_check__ = True   # (reads keys)


def dynamic_caller(n, keywords, objects=()):
    """The callee the canonical form names for `fn(x1, ..., xn, k=...)` with fn known only at
    run time: `def dynamic_call(fn, x1, ..., xn, *, k)` (its parameters place each operand);
    the transforms write its derivative as a dispatcher (secant/transforms.py). `objects`: the
    positions (0 for x1) of operands that may be user objects with operators (`f(Dual(x, 1))`):
    the dispatcher reads fn's operators on them as their class's (`d * d`: Dual.__mul__)."""
    key = (n, keywords, objects)
    hit = _CALLERS.get(key)
    if hit is None:
        hit = once.build(_CALLERS, key, lambda: _make_caller(n, keywords, objects))
    return hit


def _make_caller(n, keywords, objects=()):
    params = ["fn"] + [f"x{i + 1}" for i in range(n)]
    args = params[1:] + [f"{k}={k}" for k in keywords]
    sig = ", ".join(params + (["*"] + list(keywords) if keywords else []))
    namespace = {"run_form": run_form}
    exec(f"def dynamic_call({sig}):\n    return run_form(fn)({', '.join(args)})\n",  # noqa: S102
         namespace)
    caller = namespace["dynamic_call"]
    caller.__secant_dispatch__ = (n, keywords)
    caller.__secant_objects__ = objects
    return caller


def starred_caller(n, star, keywords, double_star):
    """The callee the canonical form names for `fn(x1, ..., xn, *rest, k=..., **kw)` whose
    rest's length or kw's keys only the running program knows (fn's parameters unknown when it
    is transformed, or kw a value passed in): `def call_starred(fn, x1, ..., xn, rest, kw, *,
    k)`; the transforms write its derivative as a dispatcher that spells the call out when it
    runs (secant/transforms.py)."""
    key = (n, star, keywords, double_star)
    hit = _CALLERS.get(key)
    if hit is None:
        hit = once.build(_CALLERS, key, lambda: _make_starred_caller(*key))
    return hit


def _make_starred_caller(n, star, keywords, double_star):
    params = ["fn"] + [f"x{i + 1}" for i in range(n)] + ["rest"] * star + ["kw"] * double_star
    args = params[1:1 + n] + ["*rest"] * star + [f"{k}={k}" for k in keywords] + \
        ["**kw"] * double_star
    sig = ", ".join(params + (["*"] + list(keywords) if keywords else []))
    namespace = {"run_form": run_form}
    exec(f"def call_starred({sig}):\n    return run_form(fn)({', '.join(args)})\n",  # noqa: S102
         namespace)
    caller = namespace["call_starred"]
    caller.__secant_dispatch__ = (n, keywords)
    caller.__secant_starred__ = (star, double_star)
    return caller


# --- *args and **kwargs: one specialised function per call shape --------------------------------
_SPECIALISED = FunctionCache("specialised_call")


def _own_signature(fn):
    """The parameters `fn` itself takes: a user's decorator wrapper `inner(*args, **kw)` is
    what runs (inspect would report the wrapped function's); a transform's own wrapper stands
    for the function it generated."""
    ours = any(k in getattr(fn, "__dict__", {}) for k in ("__secant_reads__",
                                                         "__secant_generated__"))
    return signature_of(fn, follow_wrapped=ours)


# inspect.signature of a plain function, remembered (issue 19: transforms ask for the same
# functions' signatures thousands of times); each entry keeps, by identity, everything the
# signature was computed from, and is recomputed when any of it has changed
_SIGNATURES = weakref.WeakKeyDictionary()


def _signature_inputs(fn, follow_wrapped):
    """What inspect.signature(fn) reads, or None (not a chain of plain functions: not
    remembered). `fn` itself is left out (the entry must not keep its key alive). An
    annotation changed inside a function's own __annotations__ dict is not seen."""
    out = [follow_wrapped]
    f = fn
    while True:
        if type(f) is not types.FunctionType or len(out) > 700:   # (a __wrapped__ cycle)
            return None
        d = f.__dict__
        sig = d.get("__signature__")
        wrapped = d.get("__wrapped__") if follow_wrapped else None
        out += (f.__code__, f.__defaults__, f.__kwdefaults__, f.__annotations__, sig,
                d.get("_partialmethod"), wrapped)
        if sig is not None or wrapped is None:
            return out
        f = wrapped


def signature_of(fn, follow_wrapped=True):
    """inspect.signature(fn, follow_wrapped=...), remembered for plain functions."""
    inputs = _signature_inputs(fn, follow_wrapped)
    if inputs is None:
        return inspect.signature(fn, follow_wrapped=follow_wrapped)
    # (one entry for each follow_wrapped: is_variadic's read of a function without it must
    # not evict the one a dispatched call reads with it, and make each read compute it anew)
    which = 1 if follow_wrapped else 0
    hit = _SIGNATURES.get(fn)
    if hit is not None and hit[which] is not None:
        seen, sig = hit[which]
        if len(seen) == len(inputs) and all(a is b for a, b in zip(seen, inputs)):
            return sig
    sig = inspect.signature(fn, follow_wrapped=follow_wrapped)
    if hit is None:
        hit = _SIGNATURES[fn] = [None, None]
    hit[which] = (inputs, sig)
    return sig


def is_variadic(fn):
    try:
        params = _own_signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


def specialise(fn, n_positional, keywords):
    """`fn` with *args / **kwargs replaced, for a call with `n_positional` positional arguments
    and these keywords, by parameters of their own: `def f(*xs)` called with two arguments
    reads as `def f(xs_0, xs_1)` with `xs[0]` -> `xs_0` and any other `xs` -> `(xs_0, xs_1)`
    (`kw["a"]` -> `a`, `kw` -> `{"a": a}`). The result calls fn itself when run; its source
    (for the transforms) is the rewritten tree at the user's own lines."""
    key = (fn, n_positional, tuple(sorted(keywords)))
    hit = _SPECIALISED.get(key)
    if hit is not None:
        return hit
    return once.build(_SPECIALISED, key, lambda: _specialise(fn, n_positional, keywords))


def _specialise(fn, n_positional, keywords):
    from secant.transformer.parse import FunctionSource, function_source
    from secant.transformer.desugar import desugar
    src = function_source(desugar(fn))     # (early returns, with, ... rewritten first)
    node = copy_tree(src.node)
    a = node.args
    named = [p.id for p in a.posonlyargs + a.args]
    taken = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    sig = _own_signature(fn)
    new_params = [p for p in sig.parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY)]
    kwonly = [p for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY]
    subs = {}
    if a.vararg is not None:
        v = a.vararg.id
        extra = max(0, n_positional - len(named))
        names = [_fresh(f"{v}_{i}", taken) for i in range(extra)]
        if extra:       # every named positional is given: none keeps a default
            a.defaults = []
            new_params = [p.replace(default=p.empty) for p in new_params]
        a.args = list(a.args) + [gast.Name(n, gast.Param(), None, None) for n in names]
        new_params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                       for n in names]
        subs[v] = ("tuple", names)
        a.vararg = None
    if a.kwarg is not None:
        k = a.kwarg.id
        known = set(named) | {p.id for p in a.kwonlyargs}
        extra_kw = [w for w in keywords if w not in known]
        for w in extra_kw:
            if w in taken:
                raise src.error(node, f"{fn.__name__} is called with the keyword {w}, a name its "
                                "body also uses; secant cannot give **{k} its own parameter")
        a.kwonlyargs = list(a.kwonlyargs) + [gast.Name(w, gast.Param(), None, None)
                                             for w in extra_kw]
        a.kw_defaults = list(a.kw_defaults) + [None] * len(extra_kw)
        kwonly += [inspect.Parameter(w, inspect.Parameter.KEYWORD_ONLY) for w in extra_kw]
        subs[k] = ("dict", extra_kw)
        a.kwarg = None
    substitute = _Substitute(subs, src, fn)
    substitute.visit(node)
    make = (lambda orig: lambda *args, **kwargs: orig(*args, **kwargs))(fn)
    spec = types.FunctionType(make.__code__, fn.__globals__, fn.__name__, None, make.__closure__)
    spec.__qualname__ = fn.__qualname__
    spec.__signature__ = inspect.Signature(new_params + kwonly)
    spec.__secant_source__ = FunctionSource(spec, node, src.filename, src.first_line, src.lines,
                                            src.globals, src.closure, src.indent,
                                            generated=src.generated)
    spec.__secant_specialises__ = fn
    if substitute.splatted:     # f(*xs) spelled out: desugared again (tree_map(pick, *trees))
        spec.__secant_user_code__ = True
    return spec


def _fresh(name, taken):
    while name in taken:
        name += "_"
    taken.add(name)
    return name


class _Substitute(gast.NodeTransformer):
    def __init__(self, subs, src, fn):
        self.subs, self.src, self.fn = subs, src, fn
        self.splatted = False       # whether a call's `*xs` was spelled out as its items

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, gast.Attribute) and f.attr == "get" and isinstance(f.value, gast.Name) \
                and self.subs.get(f.value.id, ("",))[0] == "dict" and not node.keywords \
                and len(node.args) in (1, 2) and isinstance(node.args[0], gast.Constant):
            key, names = node.args[0].value, self.subs[f.value.id][1]   # kw.get("b", 0.0)
            if key in names:
                return gast.copy_location(gast.Name(key, gast.Load(), None, None), node)
            return self.visit(node.args[1]) if len(node.args) == 2 else \
                gast.copy_location(gast.Constant(None, None), node)
        node = self.generic_visit(node)
        args = []
        for a in node.args:         # f(*(xs_0, xs_1)) -> f(xs_0, xs_1)
            if isinstance(a, gast.Starred) and isinstance(a.value, gast.Tuple):
                args.extend(a.value.elts)
                self.splatted = True
            else:
                args.append(a)
        node.args = args
        keywords = []
        for k in node.keywords:     # f(**{"a": a}) -> f(a=a) (dataclasses.replace(self, **kw))
            if k.arg is None and isinstance(k.value, gast.Dict) and all(
                    isinstance(key, gast.Constant) and isinstance(key.value, str)
                    and key.value.isidentifier() for key in k.value.keys):
                keywords.extend(gast.copy_location(gast.keyword(key.value, value), value)
                                for key, value in zip(k.value.keys, k.value.values))
                self.splatted = True
            else:
                keywords.append(k)
        node.keywords = keywords
        return node

    def _literal(self, kind, names, where):
        if kind == "tuple":
            new = gast.Tuple(elts=[gast.Name(n, gast.Load(), None, None) for n in names],
                             ctx=gast.Load())
        else:
            new = gast.Dict(keys=[gast.Constant(n, None) for n in names],
                            values=[gast.Name(n, gast.Load(), None, None) for n in names])
        for n in gast.walk(new):
            gast.copy_location(n, where)
        return new

    def visit_Subscript(self, node):
        v = node.value
        key = resolve(None, None, node.slice) \
            if isinstance(node.slice, (gast.Constant, gast.UnaryOp)) else UNRESOLVED
        if isinstance(v, gast.Name) and v.id in self.subs and isinstance(node.ctx, gast.Load) \
                and key is not UNRESOLVED:
            kind, names = self.subs[v.id]
            if kind == "tuple" and type(key) is int and -len(names) <= key < len(names):
                return gast.copy_location(gast.Name(names[key], gast.Load(), None, None), node)
            if kind == "dict" and key in names:
                return gast.copy_location(gast.Name(key, gast.Load(), None, None), node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.subs:
            if not isinstance(node.ctx, gast.Load):
                raise self.src.error(node, f"{self.fn.__name__} assigns to its parameter "
                                     f"{node.id}: secant reads *args/**kwargs that are only read")
            return self._literal(*self.subs[node.id], node)
        return node

"""Objects of the user's own classes built in place from tracked values: `C(a)(x)` and
`C(a).m(x)` with `a` differentiated or batched (a model object called under a transform).

Such an object never escapes the expression, so it can be carried as the dict of its fields,
as transformer/objects.py carries library objects: for a simple class (its bases plain user
classes too, methods and read-only properties that only read `self.field`, call
`self.method(...)` and read class constants; an `__init__` that only sets
`self.field = ...`) this module writes

    def __init__(a):                      def __call__(self, x):
        self_a = a                            return snp.sum(snp.sin(self["a"] * x))
        return {"a": self_a}

and the call is read as `C._secant_fields_form.__call__(C._secant_fields_form.
__init__(a), x)`, so derivatives and batching flow through the fields. An object held in a
local (`m = C(a)`, then `m(x)`, `m.apply(x)`, `m.w`) is read the same way, as its dict of
fields, when that local is bound once and used only in those forms (`held_object`) or has
its fields set in the function's own body (`m.w = v`, `m.w += v`: the dict rebuilt,
`m = m | {"w": v}`; not in a loop or branch): it never escapes either. `super().m(x)` in a
method of class K reads the next class after K in C's MRO that defines m, made functional too:
`functional.Base.m(self, x)`; `super().__init__(a)` in an __init__, `base_fields =
functional.Base.__init__(a)` and the fields it sets read from it. An argument that builds an
object of a simple class (`Frozen(Linear(w, b))`) is read as its fields too, and the outer
class's form for it (form_name: `Frozen._secant_fields_form_module_Linear`) knows which field
holds it: `self._module(x)` -> `linear_functional.__call__(self['_module'], x)`, its methods,
properties and fields likewise, and attributes read through a `__getattr__` that delegates to
that field (`return getattr(self._module, name)`). A dataclass's __init__ is the one its fields
make (with __post_init__'s body after it: `object.__setattr__(self, "f", v)` of a frozen one read
as `self.f = v`, InitVar parameters passed on). A method handing its object to a transform
written in place (`vmap(self)(xs)`, `grad(self.one)(x)`) reads `lambda x: functional.one(self,
x)` (a bound method used as a value, `lax.scan(self.step, h, xs)`, likewise), self(x) reads
`functional.__call__(self, x)`, and `vmap(C(a).m)(xs)` in the function reads
`vmap(lambda x: C.AUTO.m(C.AUTO.__init__(a), x))(xs)` (bound_method_lambda). Any other class or
use keeps the normaliser's clear error: never a constant object, whose derivative would be a
silent zero.
"""
import abc
import copy
import dataclasses
import functools
import inspect
import types

import gast

from secant.codegen import loader
from secant.transformer.parse import FunctionSource, SourceError, function_source
from secant.transformer.hygiene import copy_tree

AUTO = "_secant_fields_form"    # (not "__secant...": that marks secant's own objects)
_FORBIDDEN = ("__new__", "__getattr__", "__getattribute__", "__setattr__",
              "__class_getitem__", "__slots__")
_cache = {}


class NotEligible(Exception):
    pass


def functional_form(cls, kinds=()):
    """The namespace of functional methods of `cls` (set on it as AUTO), or None when the class
    is not simple enough to be read so. `kinds`: ((parameter of __init__, class), ...) for
    arguments that are objects of simple classes themselves, held as their fields (a module
    wrapping a module: `Frozen(Linear(w, b))`); that form is set on cls as form_name(kinds)."""
    if not inspect.isclass(cls) or any(
            type(c) not in (type, abc.ABCMeta) or (c.__module__ or "").split(".")[0] in (
                "secant", "numpy", "builtins") for c in _user_bases(cls)):
        return None     # (plain user classes: their bases too, but object; abstract ones)
    attr = form_name(kinds)
    hit = vars(cls).get(attr)
    if hit is not None:
        return hit if getattr(hit, "__kinds__", ()) == tuple(kinds) else None
    if (cls, tuple(kinds)) in _cache:
        return None
    try:
        ns = _build(cls, dict(kinds))
        ns.__kinds__ = tuple(kinds)
        setattr(cls, attr, ns)
    except (NotEligible, SourceError, OSError, TypeError, AttributeError):
        _cache[cls, tuple(kinds)] = None
        return None
    return ns


def form_name(kinds):
    """The class attribute holding the functional form for `kinds` (AUTO for none)."""
    return AUTO + "".join(f"_{p}_{k.__name__}" for p, k in kinds)


def _kinded(src_resolve, build):
    """For `C(a, K(b))` building an object: its arguments with each one that builds an object
    of a simple class K from tracked values read as K's fields (`K.AUTO.__init__(b)`), and
    the kinds ((C's parameter, K), ...) C's form is read for."""
    params = _init_params(src_resolve(build.func))
    args, keywords, kinds = [], [], []
    for i, a in enumerate(build.args + [k.value for k in build.keywords]):
        name = params[i] if i < len(build.args) and i < len(params) else \
            build.keywords[i - len(build.args)].arg if i >= len(build.args) else None
        inner = _simple_build(src_resolve, a) if name else None   # (held as fields though
        #   built from constants: its methods' derivatives then need no cotangent of its class)
        if inner is not None:
            a = _fields_call(f"({gast.unparse(a.func).strip()}).{AUTO}.__init__", a, a)
            kinds.append((name, inner))
        if i < len(build.args):
            args.append(a)
        else:
            keywords.append(gast.keyword(name, a))
    return args, keywords, tuple(sorted(kinds, key=lambda k: k[0]))


def _init_params(cls):
    try:
        return [p.name for p in list(inspect.signature(cls).parameters.values())
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def _simple_build(src_resolve, node):
    """K when `node` is `K(b)` of a simple class K, else None."""
    if not isinstance(node, gast.Call) or any(
            isinstance(a, gast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords):
        return None
    cls = src_resolve(node.func)
    ns = functional_form(cls) if inspect.isclass(cls) else None
    return cls if ns is not None and hasattr(ns, "__init__") else None


def _fields_call(text, build, like):
    made = gast.Call(func=gast.parse(text).body[0].value, args=build.args,
                     keywords=build.keywords)
    for n in gast.walk(made):
        if getattr(n, "lineno", None) is None and isinstance(n, gast.expr):
            gast.copy_location(n, like)
    return made


def _user_bases(cls):
    """cls's MRO but object and abc.ABC (whose members, `__slots__ = ()`, are no user's)."""
    return [c for c in cls.__mro__[:-1] if c is not abc.ABC]


def _members(cls):
    """The class's attributes with those it inherits, as attribute lookup finds them (an
    __init_subclass__ among them runs when a subclass is made, never on an object)."""
    members = {}
    for c in reversed(_user_bases(cls)):
        members.update({k: v for k, v in vars(c).items() if not k.startswith(AUTO)})
    return members


def _build(cls, kinds=None):
    members = _members(cls)
    delegate = _delegate(members.get("__getattr__"))
    if any(k in members for k in _FORBIDDEN if (k != "__getattr__" or delegate is None)
           and (k != "__setattr__" or not _frozen_dataclass_setattr(cls))):
        raise NotEligible(cls.__name__)
    for k, v in members.items():        # a descriptor of the user's (`__get__`/`__set__`):
        if not k.startswith("__") and _own_descriptor(v):   # `self.k = v` runs its __set__
            raise NotEligible(f"descriptor {k}")
    sources = {}
    for k, v in members.items():        # its methods and __call__ (not the other dunders:
        if inspect.isfunction(v) and (k == "__call__" or not k.startswith("__")):  # operators)
            try:
                sources[k] = function_source(v)
            except (SourceError, OSError, TypeError):
                continue
    properties = set()
    for k, v in members.items():        # @property: read-only, a method of no arguments
        if isinstance(v, property):
            if v.fset is not None or v.fdel is not None or not inspect.isfunction(v.fget):
                raise NotEligible(f"property {k}")
            sources[k] = function_source(v.fget)
            properties.add(k)
    constants = {k for k, v in members.items() if not k.startswith("__") and k not in sources
                 and not isinstance(v, property) and not inspect.isfunction(v)}
    ns, supers = types.SimpleNamespace(), _Supers(cls, members)
    supers.kinds = {}
    if dataclasses.is_dataclass(cls) and "__post_init__" not in members and not kinds:
        fields = [f.name for f in dataclasses.fields(cls)]
        ns.__init__ = _dataclass_init(cls)
    elif dataclasses.is_dataclass(cls) and not kinds and _generated_init(cls):
        post = members["__post_init__"]         # its generated __init__, then __post_init__
        init_src, free = _post_init_source(cls, post)
        fields = _fields(init_src.node)
        ns.__init__ = _rewrite(cls, init_src, post, "__init__", fields, set(sources),
                               constants, ns, properties, supers, free=free)
    elif inspect.isfunction(members.get("__init__")):
        init_src = function_source(members["__init__"])
        fields = _init_fields(cls, _owner(cls, "__init__"))
        supers.kinds = _field_kinds(init_src.node, kinds or {})
        ns.__init__ = _rewrite(cls, init_src, members["__init__"], "__init__", fields,
                               set(sources), constants, ns, properties, supers)
    else:
        raise NotEligible("no __init__ of its own")
    if delegate is not None and delegate not in supers.kinds:
        raise NotEligible("__getattr__")
    supers.delegate = delegate
    for name, src in sources.items():
        fn = members[name].fget if name in properties else members[name]
        setattr(ns, name, _rewrite(cls, src, fn, name, fields, set(sources), constants, ns,
                                   properties, supers))
    for owner, name in supers.pending():    # super().m(x) -> functional.Base.m(self, x)
        fn = vars(owner)[name]
        own = _init_fields(cls, owner) if name == "__init__" else fields
        setattr(supers.namespace(ns, owner), name, _rewrite(
            cls, function_source(fn), fn, name, own, set(sources), constants, ns,
            properties, supers, owner))
    ns.__fields__ = tuple(fields)
    ns.__properties__ = frozenset(properties)
    ns.__field_kinds__ = supers.kinds           # field -> the simple class of its object
    ns.__delegate__ = delegate                  # __getattr__ reads this field's attributes
    return ns


def _own_descriptor(v):
    """A class attribute whose lookup runs code of the user's: an object of a class with
    __get__/__set__/__delete__ that is no function, property, staticmethod or classmethod."""
    if isinstance(v, (types.FunctionType, property, staticmethod, classmethod, type,
                      types.BuiltinFunctionType, functools.partial, types.GetSetDescriptorType,
                      types.MemberDescriptorType)):
        return False
    kind = type(v)
    return any(hasattr(kind, d) for d in ("__get__", "__set__", "__delete__"))


def _delegate(fn):
    """F for `def __getattr__(self, name): return getattr(self.F, name)` (delegation to a
    field), else None."""
    if not inspect.isfunction(fn):
        return None
    try:
        node = function_source(fn).node
    except (SourceError, OSError, TypeError):
        return None
    a = node.args
    if len(a.args) != 2 or a.vararg or a.kwarg or a.kwonlyargs or len(node.body) != 1 or \
            not isinstance(node.body[0], gast.Return):
        return None
    me, name = (p.id for p in a.args)
    text = gast.unparse(node.body[0].value).strip()
    for prefix in (f"getattr({me}.", ):
        if text.startswith(prefix) and text.endswith(f", {name})"):
            field = text[len(prefix):-len(f", {name})")]
            return field if field.isidentifier() else None
    return None


def _field_kinds(node, kinds):
    """field -> K for `self.f = p` in __init__ where the parameter p holds an object of the
    simple class K (its fields); p read any other way: not eligible."""
    if not kinds:
        return {}
    me = _self_name(node)
    out = {}
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and n.id in kinds and isinstance(n.ctx, gast.Load):
            hit = [s for s in node.body if isinstance(s, gast.Assign) and s.value is n
                   and len(s.targets) == 1 and isinstance(s.targets[0], gast.Attribute)
                   and isinstance(s.targets[0].value, gast.Name) and s.targets[0].value.id == me]
            if not hit:
                raise NotEligible(f"{n.id} read as an object in __init__")
            out[hit[0].targets[0].attr] = kinds[n.id]
    return out


class _Supers:
    """`super().m(...)` in a method of the class `owner`: the definition of m in the next
    class after `owner` in cls's MRO that defines it (mixins chained by super()), read as
    `functional.Next.m(self, ...)`, each such method made functional once."""

    def __init__(self, cls, members):
        self.cls, self.members, self.wanted, self.done = cls, members, [], set()
        names = [c.__name__ for c in cls.__mro__[:-1]]
        self.clash = {n for n in names if names.count(n) > 1 or n in members}

    def __call__(self, owner, name):
        mro = self.cls.__mro__[:-1]
        after = mro[mro.index(owner) + 1:] if owner in mro else ()
        nxt = next((c for c in after if name in vars(c)), None)
        if nxt is None or not inspect.isfunction(vars(nxt)[name]) or nxt.__name__ in self.clash:
            raise NotEligible(f"super().{name}")
        if (nxt, name) not in self.done:
            self.done.add((nxt, name))
            self.wanted.append((nxt, name))
        return nxt.__name__

    def pending(self):
        while self.wanted:
            yield self.wanted.pop(0)

    @staticmethod
    def namespace(ns, owner):
        if not hasattr(ns, owner.__name__):
            setattr(ns, owner.__name__, types.SimpleNamespace())
        return getattr(ns, owner.__name__)


def _owner(cls, name):
    """The class of cls's MRO whose `name` attribute lookup finds."""
    return next(c for c in cls.__mro__ if name in vars(c))


def _dataclass_init(cls):
    """A dataclass's fields as its generated __init__ takes them (defaults kept)."""
    params, free = [], {}
    for f in dataclasses.fields(cls):
        if not f.init or f.default_factory is not dataclasses.MISSING or f.kw_only:
            raise NotEligible(f"dataclass field {f.name}")
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        elif type(f.default) in (int, float, bool, str, type(None)) and \
                repr(f.default) not in ("nan", "inf", "-inf"):
            params.append(f"{f.name}={f.default!r}")    # written out (no closure to carry)
        else:
            free[f"default_{f.name}"] = f.default
            params.append(f"{f.name}=default_{f.name}")
    name = f"{cls.__name__.lower()}_fields"
    body = ", ".join(f"{f.name!r}: {f.name}" for f in dataclasses.fields(cls))
    source = f"def {name}({', '.join(params)}):\n    return {{{body}}}\n"
    fn = loader.load(source, name, {}, free)
    fn.__qualname__ = f"{cls.__qualname__}.__init__"
    fn.__secant_source__ = FunctionSource(fn, gast.parse(source).body[0],
                                          fn.__code__.co_filename, 1, source.splitlines(), {},
                                          free)
    return fn


def _frozen_dataclass_setattr(cls):
    """Whether the __setattr__ attribute lookup finds on cls is the one a frozen dataclass
    writes (refusing every field set after __init__: the functional form sets none)."""
    owner = _owner(cls, "__setattr__")
    params = vars(owner).get("__dataclass_params__")
    return params is not None and params.frozen and _generated(vars(owner)["__setattr__"])


def _generated(fn):
    """Whether fn is a method the dataclasses module wrote (it has no source file)."""
    return inspect.isfunction(fn) and fn.__code__.co_filename.startswith("<")


def _generated_init(cls):
    """Whether cls's __init__ is its dataclass's generated one and it has a __post_init__
    (the __init__ calls it), a plain function of source."""
    owner = _owner(cls, "__init__")
    params = vars(owner).get("__dataclass_params__")
    return params is not None and params.init and _generated(vars(owner)["__init__"]) \
        and inspect.isfunction(getattr(cls, "__post_init__", None))


def _post_init_source(cls, post):
    """The __init__ a dataclass with __post_init__ runs, as source: its fields set from the
    parameters of its generated __init__ (defaults kept), then __post_init__'s body, its
    InitVar parameters bound to the __init__'s (`object.__setattr__(self, "f", v)` of a frozen
    one read as `self.f = v`). (The FunctionSource of that def, the free names its
    non-literal defaults read.)"""
    src = function_source(post)
    node = copy_tree(src.node)
    me = _self_name(node)
    node = _SetattrAsStore(me).visit(node)
    body_names = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    stored = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)
              and not isinstance(n.ctx, gast.Load)}
    kind = getattr(dataclasses, "_FIELD_INITVAR", None)
    initvars = [f.name for f in getattr(cls, "__dataclass_fields__", {}).values()
                if getattr(f, "_field_type", None) is kind] if kind is not None else None
    post_params = [a.id for a in node.args.args[1:]]
    if initvars is None or len(post_params) != len(initvars):
        raise NotEligible("__post_init__ parameters")
    params = list(inspect.signature(cls).parameters.values())
    read = body_names - stored      # (a global the body reads: never shadowed by a parameter)
    free, args, defaults = {}, [], []

    def default(name, value):
        if type(value) in (int, float, bool, str, type(None)) and \
                repr(value) not in ("nan", "inf", "-inf"):
            return gast.Constant(value, None)
        held = f"default_{name}"
        while held in body_names or held in free:
            held += "_"
        free[held] = value
        return gast.Name(held, gast.Load(), None, None)
    for p in params:
        if p.kind is not p.POSITIONAL_OR_KEYWORD or p.name in read or p.name == me or \
                p.default is getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None):
            raise NotEligible(f"dataclass parameter {p.name}")
        args.append(gast.Name(p.name, gast.Param(), None, None))
        if p.default is not p.empty:
            defaults.append(default(p.name, p.default))
        elif defaults:
            raise NotEligible("defaults")

    def at(stmt):
        for n in gast.walk(stmt):
            if isinstance(n, (gast.expr, gast.stmt)):
                gast.copy_location(n, node)
        return stmt
    body = []
    for f in dataclasses.fields(cls):
        if f.init:
            value = gast.Name(f.name, gast.Load(), None, None)
        elif f.default is not dataclasses.MISSING:
            value = default(f.name, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            raise NotEligible(f"dataclass field {f.name}")
        else:
            continue            # (set by __post_init__, or never)
        body.append(at(gast.Assign([gast.Attribute(gast.Name(me, gast.Load(), None, None),
                                                   f.name, gast.Store())], value)))
    for p, v in zip(post_params, initvars):
        if p != v:
            body.append(at(gast.Assign([gast.Name(p, gast.Store(), None, None)],
                                       gast.Name(v, gast.Load(), None, None))))
    node.args.args = node.args.args[:1] + args
    node.args.defaults = defaults
    node.name = "__init__"
    node.body = body + node.body
    out = copy.copy(src)
    out.node = node
    out.resolutions, out.imports, out.aliases = {}, {}, {}
    return out, free


class _SetattrAsStore(gast.NodeTransformer):
    """`object.__setattr__(self, "f", v)` (a frozen dataclass's __post_init__ setting a
    field) -> `self.f = v`."""

    def __init__(self, me):
        self.me = me

    def visit_Expr(self, node):
        c = node.value
        if isinstance(c, gast.Call) and gast.unparse(c.func).strip() == "object.__setattr__" \
                and len(c.args) == 3 and not c.keywords and isinstance(c.args[0], gast.Name) \
                and c.args[0].id == self.me and isinstance(c.args[1], gast.Constant) \
                and isinstance(c.args[1].value, str) and c.args[1].value.isidentifier():
            target = gast.Attribute(gast.Name(self.me, gast.Load(), None, None),
                                    c.args[1].value, gast.Store())
            return gast.copy_location(gast.Assign([target], c.args[2]), node)
        return node


def _init_fields(cls, owner):
    """The fields the __init__ of `owner` (a class of cls's MRO) sets, with those its
    `super().__init__(...)` sets (first), in order."""
    node = function_source(vars(owner)["__init__"]).node
    out = []
    if _super_init(node.body, node) is not None:
        nxt = _next_init(cls, owner)
        out = _init_fields(cls, nxt) if nxt is not None else []
    return out + [f for f in _fields(node) if f not in out]


def _super_init(body, node):
    """The statement `super().__init__(...)` (or `super(C, self).__init__(...)`) of an
    __init__'s body, or None; one elsewhere (in a branch, in an expression): not eligible."""
    found = None
    for n in gast.walk(node):
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                and n.func.attr == "__init__" and isinstance(n.func.value, gast.Call) \
                and isinstance(n.func.value.func, gast.Name) and n.func.value.func.id == "super":
            top = [s for s in body if isinstance(s, gast.Expr) and s.value is n]
            if found is not None or not top or n.func.value.keywords:
                raise NotEligible("super().__init__")
            found = top[0]
    return found


def _next_init(cls, owner):
    """The class after `owner` in cls's MRO whose __init__ super().__init__ runs (None: object's)."""
    mro = cls.__mro__[:-1]
    return next((c for c in mro[mro.index(owner) + 1:] if "__init__" in vars(c)), None)


def _fields(node):
    """The fields `__init__` sets (`self.x = ...`), in order."""
    me = _self_name(node)
    out = []
    for n in gast.walk(node):
        if isinstance(n, gast.Attribute) and isinstance(n.ctx, gast.Store) \
                and isinstance(n.value, gast.Name) and n.value.id == me and n.attr not in out:
            out.append(n.attr)
    return out


def _self_name(node):
    a = node.args
    if a.vararg or a.kwarg or a.posonlyargs or not a.args or node.decorator_list:
        raise NotEligible("parameters")
    return a.args[0].id


def _rewrite(cls, src, fn, name, fields, methods, constants, ns, properties, supers,
             owner=None, free=None):
    if set(fn.__code__.co_freevars) - {"__class__"}:   # (__class__: the cell super() reads)
        raise NotEligible("closure")
    named = (owner or cls).__name__.lower()     # (a super().__init__ one: after its class)
    owner = owner or _owner(cls, name)
    node = copy_tree(src.node)
    me = _self_name(node)
    taken = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}

    def fresh(base):
        while base in taken:
            base += "_"
        taken.add(base)
        return base
    names = {"functional": fresh("functional"), "cls": fresh(cls.__name__)}
    is_init = name == "__init__"
    locals_ = {f: fresh(f"{me}_{f}") for f in fields} if is_init else {}
    if is_init:
        node.args.args = node.args.args[1:]
        if any(isinstance(n, gast.Return) for n in gast.walk(node)):
            raise NotEligible("return in __init__")
        _inline_super_init(node, cls, owner, me, supers, names, locals_, fresh)
    super_of = functools.partial(supers, owner)
    super_of.owner = owner.__name__
    kinds = {} if is_init else getattr(supers, "kinds", {})
    kind_names = {k: fresh(f"{k.__name__.lower()}_functional") for k in set(kinds.values())}
    visitor = _Fields(me, fields, methods, constants, names, locals_, is_init, properties,
                      super_of)
    visitor.kinds = {f: (k, kind_names[k]) for f, k in kinds.items()}
    visitor.delegate = getattr(supers, "delegate", None)
    visitor.members, visitor.globals = supers.members, src.globals
    visitor.visit(node)
    if is_init:
        ret = gast.parse("return {" + ", ".join(f"{f!r}: {locals_[f]}" for f in fields)
                         + "}").body[0]
        node.body.append(ret)
    # (generated code names values after it: `model_fields_out = ...__init__(a)`)
    node.name = f"{named}_fields" if is_init else name
    node.decorator_list, node.returns = [], None
    for m in gast.walk(node):
        if isinstance(m, gast.Name):
            m.annotation = None
        if isinstance(m, (gast.expr, gast.stmt)) and getattr(m, "lineno", None) is None:
            gast.copy_location(m, node.body[0])
    from secant.transformer.functionalize import _Printer
    printer = _Printer(src, {})
    printer.stmt(node, 0)
    source = "\n".join(printer.lines) + "\n"
    free = {**(free or {}), names["functional"]: ns, names["cls"]: cls,
            **{v: functional_form(k) for k, v in kind_names.items()}}
    out = loader.load(source, node.name, src.globals, free, printer.origins)
    out.__qualname__ = f"{owner.__qualname__}.{name}"
    out.__module__ = fn.__module__
    out.__secant_source__ = FunctionSource(out, gast.parse(source).body[0],
                                           out.__code__.co_filename, 1, source.splitlines(),
                                           src.globals, free, generated=src.generated)
    out.__secant_user_method__ = True       # the user's code: desugared as any (desugar.py)
    return out


def _inline_super_init(node, cls, owner, me, supers, names, locals_, fresh):
    """`super().__init__(a)` in an __init__ -> `base_fields = functional.Base.__init__(a)` and
    `self_w = base_fields['w']` for each field Base's __init__ sets (nothing for object's)."""
    stmt = _super_init(node.body, node)
    if stmt is None:
        return
    call = stmt.value
    given = call.func.value.args
    if given and [gast.unparse(a).strip() for a in given] != [owner.__name__, me]:
        raise NotEligible("super(...) of another class")
    nxt = _next_init(cls, owner)
    at = node.body.index(stmt)
    if nxt is None:                 # object.__init__()
        if call.args or call.keywords:
            raise NotEligible("object.__init__ with arguments")
        node.body[at:at + 1] = []
        return
    supers(owner, "__init__")       # (made functional too: functional.Base.__init__)
    parent = fresh(f"{nxt.__name__.lower()}_fields")
    made = gast.Call(gast.Attribute(gast.Attribute(
        gast.Name(names["functional"], gast.Load(), None, None), nxt.__name__, gast.Load()),
        "__init__", gast.Load()), call.args, call.keywords)
    new = [gast.Assign([gast.Name(parent, gast.Store(), None, None)], made)]
    for f in _init_fields(cls, nxt):
        new.append(gast.Assign([gast.Name(locals_[f], gast.Store(), None, None)], gast.Subscript(
            gast.Name(parent, gast.Load(), None, None), gast.Constant(f, None), gast.Load())))
    for s in new:
        for n in gast.walk(s):
            if isinstance(n, (gast.expr, gast.stmt)):
                gast.copy_location(n, stmt)
    node.body[at:at + 1] = new


class _Fields(gast.NodeTransformer):
    """`self.f` -> `self["f"]` (in __init__: its local `self_f`); `self.m(...)` ->
    `functional.m(self, ...)`; `self.p` of a property -> `functional.p(self)`; `self.CONST`
    -> `Cls.CONST`; anything else with self: not eligible."""

    def __init__(self, me, fields, methods, constants, names, locals_, is_init, properties,
                 super_of):
        self.me, self.fields, self.methods, self.constants = me, fields, methods, constants
        self.names, self.locals, self.is_init = names, locals_, is_init
        self.properties, self.super_of = properties, super_of
        self.owner = getattr(super_of, "owner", None)   # (super(Owner, self): as super())

    def _is_self(self, node):
        return isinstance(node, gast.Name) and node.id == self.me

    kinds, delegate = {}, None

    def _kinded(self, node):
        """(field, its class's form name) for `self.f` of a field holding an object."""
        if isinstance(node, gast.Attribute) and self._is_self(node.value) \
                and node.attr in self.kinds and isinstance(node.ctx, gast.Load):
            return node.attr, self.kinds[node.attr][1]
        return None

    def _field(self, name, node):
        return gast.copy_location(gast.Subscript(gast.Name(self.me, gast.Load(), None, None),
                                                 gast.Constant(name, None), gast.Load()), node)

    def _object_call(self, node, field, form, method):
        node.args = [self._field(field, node)] + [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        node.func = gast.copy_location(gast.Attribute(
            gast.Name(form, gast.Load(), None, None), method, gast.Load()), node.func)
        return node

    def _object_read(self, node, field, form, attr):
        """`self.f.a` of the object in field f: its field f["a"], or its property a called."""
        ns = functional_form(self.kinds[field][0])
        inner = self._field(field, node)
        if attr in ns.__properties__:
            return gast.copy_location(gast.Call(gast.Attribute(
                gast.Name(form, gast.Load(), None, None), attr, gast.Load()), [inner], []), node)
        if attr in ns.__fields__:
            return gast.copy_location(gast.Subscript(inner, gast.Constant(attr, None),
                                                     gast.Load()), node)
        raise NotEligible(f"self.{field}.{attr}")

    members, globals = {}, {}

    def _passed_self(self, node):
        """`vmap(self)(x)`, `grad(self.m)(x)` in a method: a transform (written in place) of
        the object's __call__ or method m, read as `lambda x: functional.m(self, x)` (self:
        the dict of fields, a free local of the lambda), else None."""
        if not node.args or self.is_init or not self._is_factory(node.func):
            return None
        a = node.args[0]
        if self._is_self(a):
            method = "__call__"
        elif isinstance(a, gast.Attribute) and self._is_self(a.value) \
                and a.attr in self.methods and a.attr not in self.properties:
            method = a.attr
        else:
            return None
        lam = self._method_lambda(method, a)
        if lam is None:
            return None
        node.args = [lam] + [self.visit(x) for x in node.args[1:]]
        node.keywords = [self.visit(k) for k in node.keywords]
        node.func = self.visit(node.func)
        return node

    def _method_lambda(self, method, like):
        """`lambda x: functional.m(self, x)`: the object's bound method m as a function (its
        positional parameters without defaults: the others keep m's own), else None."""
        fn = self.members.get(method)
        params = _lambda_params(fn) if method in self.methods else None
        if params is None:
            return None
        names = _unshadowed(params, {self.me, self.names["functional"]})
        lam = gast.parse(f"lambda {', '.join(names)}: {self.names['functional']}.{method}("
                         f"{', '.join([self.me] + names)})").body[0].value
        for n in gast.walk(lam):
            if isinstance(n, gast.expr):
                gast.copy_location(n, like)
        return lam

    def _is_factory(self, func):
        """Whether `func` (a name or attribute chain) names a secant transform."""
        import builtins
        chain = []
        while isinstance(func, gast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name) or func.id == self.me:
            return False
        obj = self.globals.get(func.id, getattr(builtins, func.id, None))
        for attr in reversed(chain):
            obj = getattr(obj, attr, None)
        return bool(getattr(obj, "__secant_factory__", False))

    def visit_Call(self, node):
        f = node.func
        if (passed := self._passed_self(node)) is not None:  # vmap(self)(x)
            return passed
        if self._is_self(f) and "__call__" in self.methods and not self.is_init:
            node.args = [gast.Name(self.me, gast.Load(), None, None)] + \
                [self.visit(a) for a in node.args]          # self(x): functional.__call__
            node.keywords = [self.visit(k) for k in node.keywords]
            node.func = gast.copy_location(gast.Attribute(gast.Name(
                self.names["functional"], gast.Load(), None, None), "__call__", gast.Load()), f)
            return node
        if (kinded := self._kinded(f)) is not None:         # self.f(x): f's __call__
            return self._object_call(node, *kinded, "__call__")
        if isinstance(f, gast.Attribute) and (kinded := self._kinded(f.value)) is not None \
                and f.attr in vars(functional_form(self.kinds[kinded[0]][0])) \
                and not f.attr.startswith("__"):           # self.f.m(x)
            return self._object_call(node, *kinded, f.attr)
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Call) \
                and isinstance(f.value.func, gast.Name) and f.value.func.id == "super" \
                and not f.value.keywords and not self.is_init and (not f.value.args or [
                    gast.unparse(a).strip() for a in f.value.args] == [self.owner, self.me]):
            base = self.super_of(f.attr)    # super().m(x) -> functional.Base.m(self, x)
            node.args = [gast.Name(self.me, gast.Load(), None, None)] + \
                [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            node.func = gast.copy_location(gast.Attribute(gast.Attribute(
                gast.Name(self.names["functional"], gast.Load(), None, None), base,
                gast.Load()), f.attr, gast.Load()), f)
            return node
        if isinstance(f, gast.Attribute) and self._is_self(f.value) and f.attr in self.methods \
                and f.attr not in self.properties:
            if self.is_init:
                raise NotEligible("__init__ calls a method")
            node.args = [gast.Name(self.me, gast.Load(), None, None)] + \
                [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            node.func = gast.Attribute(gast.Name(self.names["functional"], gast.Load(), None,
                                                 None), f.attr, gast.Load())
            return node
        return self.generic_visit(node)

    def visit_Attribute(self, node):
        if isinstance(node.ctx, gast.Load) and (kinded := self._kinded(node.value)) is not None:
            return self._object_read(node, *kinded, node.attr)     # self.f.a
        if not self._is_self(node.value):
            return self.generic_visit(node)
        if node.attr in self.kinds:
            raise NotEligible(f"the object self.{node.attr} used as a value")
        if self.delegate is not None and isinstance(node.ctx, gast.Load) and not self.is_init \
                and node.attr not in self.fields and node.attr not in self.constants \
                and node.attr not in self.properties and node.attr not in self.methods:
            field, form = self.delegate, self.kinds[self.delegate][1]
            return self._object_read(node, field, form, node.attr)  # self.a by __getattr__
        if self.is_init and node.attr in self.locals:
            return gast.copy_location(gast.Name(self.locals[node.attr], node.ctx, None, None),
                                      node)
        if not isinstance(node.ctx, gast.Load):
            raise NotEligible("a method sets a field")
        if node.attr in self.properties and not self.is_init:
            call = gast.Call(gast.Attribute(gast.Name(self.names["functional"], gast.Load(),
                                                      None, None), node.attr, gast.Load()),
                             [gast.Name(self.me, gast.Load(), None, None)], [])
            return gast.copy_location(call, node)
        if node.attr in self.fields:
            return gast.copy_location(gast.Subscript(
                gast.Name(self.me, gast.Load(), None, None),
                gast.Constant(node.attr, None), gast.Load()), node)
        if node.attr in self.constants:
            return gast.copy_location(gast.Attribute(
                gast.Name(self.names["cls"], gast.Load(), None, None), node.attr, gast.Load()),
                node)
        if node.attr in self.methods and not self.is_init:     # lax.scan(self.step, ...)
            lam = self._method_lambda(node.attr, node)
            if lam is not None:
                return lam
        raise NotEligible(f"self.{node.attr}")

    def visit_Name(self, node):
        # (a method's self: the dict of fields, read only through the forms above)
        if node.id == self.me and not isinstance(node.ctx, gast.Param):
            raise NotEligible("self used as a value")
        if node.id in ("super", "__class__"):
            raise NotEligible(node.id)      # (other than super().m(...) in a method)
        return node


def in_place_call(src_resolve, tracked, node):
    """`C(a)(x)` -> `C.AUTO.__call__(C.AUTO.__init__(a), x)` and `C(a).m(x)` ->
    `C.AUTO.m(C.AUTO.__init__(a), x)` when C is a simple user class and `a` holds tracked
    values (`tracked(expr)`); None otherwise."""
    func = node.func
    if isinstance(func, gast.Call) and len(func.args) == 1 and not func.keywords \
            and isinstance(func.args[0], gast.Attribute) \
            and isinstance(func.args[0].value, gast.Call):
        from secant.transformer.functionalize import staged_method
        if src_resolve(func.func) is staged_method:     # jit's form of C(a).m(x) (its method's
            func = func.args[0]         # control flow staged): the object as its fields too
    if isinstance(func, gast.Call):
        build, method = func, "__call__"
    elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Call):
        build, method = func.value, func.attr
    else:
        return None
    if not any(tracked(a) for a in build.args + [k.value for k in build.keywords]):
        return None
    cls = src_resolve(build.func)
    args, keywords, kinds = _kinded(src_resolve, build) if inspect.isclass(cls) \
        else (build.args, build.keywords, ())
    ns = functional_form(cls, kinds) if inspect.isclass(cls) else None
    if ns is None or not hasattr(ns, method) or not hasattr(ns, "__init__"):
        return None
    form = f"({gast.unparse(build.func).strip()}).{form_name(kinds)}"
    init = gast.parse(f"{form}.__init__").body[0].value
    target = gast.parse(f"{form}.{method}").body[0].value
    made = gast.Call(func=init, args=args, keywords=keywords)
    new = gast.Call(func=target, args=[made] + list(node.args), keywords=node.keywords)
    for n in gast.walk(new):
        if getattr(n, "lineno", None) is None and isinstance(n, (gast.expr,)):
            gast.copy_location(n, node)
    return new


def held_object(src_resolve, tracked, fnode, target, value):
    """For `m = C(a)` (`target` = value) in the function `fnode`, with C a simple user class and
    `a` holding tracked values: (the call building m's dict of fields, the source of C's
    functional form, `(C).AUTO`), when `m`
    is bound only there and read only as `m(...)`, `m.method(...)` and `m.field` (so the dict
    never escapes as a value); else None."""
    if not (isinstance(target, gast.Name) and isinstance(value, gast.Call)) or \
            not any(tracked(a) for a in value.args + [k.value for k in value.keywords]):
        return None
    cls = src_resolve(value.func)
    args, keywords, kinds = _kinded(src_resolve, value) if inspect.isclass(cls) \
        else (value.args, value.keywords, ())
    ns = functional_form(cls, kinds) if inspect.isclass(cls) else None
    from secant.tree_util import _frozen_dataclass
    if ns is None or not hasattr(ns, "__init__") or not _used_as_object(
            fnode, target, ns, writes=not _frozen_dataclass(cls)):
        return None
    form = f"({gast.unparse(value.func).strip()}).{form_name(kinds)}"
    made = gast.Call(func=gast.parse(f"{form}.__init__").body[0].value, args=args,
                     keywords=keywords)
    for n in gast.walk(made):
        if getattr(n, "lineno", None) is None and isinstance(n, gast.expr):
            gast.copy_location(n, value)
    return made, form


def _used_as_object(fnode, target, ns, writes=True):
    """writes: m.w = v allowed (a new dict of fields; not for a frozen dataclass's object,
    where Python refuses it)."""
    name = target.id
    parents = {}
    for n in gast.walk(fnode):
        for c in gast.iter_child_nodes(n):
            parents[c] = n
    for n in gast.walk(fnode):
        if not (isinstance(n, gast.Name) and n.id == name) or n is target:
            continue
        if not isinstance(n.ctx, gast.Load):
            return False                # bound again
        p = parents.get(n)
        scope = p
        while scope is not None and scope is not fnode:
            if isinstance(scope, (gast.FunctionDef, gast.Lambda, gast.GeneratorExp)):
                return False            # read later by a nested function or generator
            scope = parents.get(scope)
        if isinstance(p, gast.Call) and p.func is n and hasattr(ns, "__call__"):
            continue                    # m(x)
        if isinstance(p, gast.Attribute) and p.value is n and isinstance(p.ctx, gast.Load):
            q = parents.get(p)
            if isinstance(q, gast.Call) and q.func is p and p.attr in vars(ns) \
                    and not p.attr.startswith("__") and p.attr not in ns.__properties__:
                continue                # m.apply(x)
            if (p.attr in ns.__fields__ and p.attr not in ns.__field_kinds__
                    or p.attr in ns.__properties__ or _delegated(ns, p.attr)) \
                    and not (isinstance(q, gast.Call) and q.func is p):
                continue                # m.w, m.prop, m.a read through __getattr__
        if writes and isinstance(p, gast.Attribute) and p.value is n and \
                p.attr in ns.__fields__ and p.attr not in ns.__field_kinds__ and \
                isinstance(parents.get(p), (gast.Assign, gast.AugAssign)) and \
                p in getattr(parents[p], "targets", [getattr(parents[p], "target", None)]) \
                and parents.get(parents[p]) is fnode:
            continue                    # m.w = v, m.w += v in the function's own body (not in
            #                             a loop or a branch): a new dict of fields
        return False
    return True


def _delegated(ns, attr):
    """Whether `m.attr` reads a field of the object in the field ns.__delegate__ (its class's
    __getattr__ delegating to it)."""
    if ns.__delegate__ is None or attr in ns.__fields__ or attr in vars(ns):
        return False
    inner = functional_form(ns.__field_kinds__[ns.__delegate__])
    return attr in inner.__fields__


def held_property(node, held, resolve):
    """`m.p` -> `m.p()` for a property p of the class of the object held in `m` (to be read
    by held_call), `m.a` -> `m["f"]["a"]` for a field a of the object in field f read through
    its class's __getattr__; None for a field."""
    ns = resolve(gast.parse(held[node.value.id][1]).body[0].value)
    if not isinstance(ns, types.SimpleNamespace):
        return None
    if _delegated(ns, node.attr):
        inner = gast.Subscript(node.value, gast.Constant(ns.__delegate__, None), gast.Load())
        read = gast.Subscript(inner, gast.Constant(node.attr, None), gast.Load())
        for n in gast.walk(read):
            gast.copy_location(n, node)
        return read
    if node.attr not in ns.__properties__:
        return None
    return gast.copy_location(gast.Call(func=node, args=[], keywords=[]), node)


def held_call(node, held, current):
    """`m(x)` -> `C.AUTO.__call__(m, x)`, `m.apply(x)` -> `C.AUTO.apply(m, x)` for a local m
    in `held` (user name -> (version, the source of C's functional form)) still bound to that
    object; else None."""
    func = node.func
    if isinstance(func, gast.Name):
        me, method = func, "__call__"
    elif isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
        me, method = func.value, func.attr
    else:
        return None
    hit = held.get(me.id)
    if hit is None or current.get(me.id) != hit[0]:
        return None
    target = gast.parse(f"{hit[1]}.{method}").body[0].value
    new = gast.Call(func=target, args=[gast.Name(me.id, gast.Load(), None, None)] +
                    list(node.args), keywords=node.keywords)
    for n in gast.walk(new):
        if getattr(n, "lineno", None) is None and isinstance(n, gast.expr):
            gast.copy_location(n, node)
    return new


def bound_method_lambda(src_resolve, node):
    """`C(a).m` (or `C(a)`, its __call__) of a simple class C, passed to a transform written
    in place (`vmap(Gaussian(mean, log_std).log_prob)(data)`): the lambda it stands for,
    `lambda x: C.AUTO.m(C.AUTO.__init__(a), x)` (the object built again on each call, as its
    fields: its __init__ only sets them), read as any lambda closing over the locals; else
    `node`."""
    if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Call) \
            and not node.attr.startswith("__"):
        build, method = node.value, node.attr
    elif isinstance(node, gast.Call):
        build, method = node, "__call__"
    else:
        return node
    if any(isinstance(a, gast.Starred) for a in build.args) or \
            any(k.arg is None for k in build.keywords):
        return node
    cls = src_resolve(build.func)
    if not inspect.isclass(cls):
        return node
    args, keywords, kinds = _kinded(src_resolve, build)
    ns = functional_form(cls, kinds)
    fn = getattr(ns, method, None) if ns is not None and hasattr(ns, "__init__") else None
    params = _lambda_params(fn)
    if params is None:
        return node
    names = _unshadowed(params, {n.id for n in gast.walk(build) if isinstance(n, gast.Name)})
    form = f"({gast.unparse(build.func).strip()}).{form_name(kinds)}"
    lam = gast.parse(f"lambda {', '.join(names)}: {form}.{method}(None, "
                     f"{', '.join(names)})").body[0].value
    lam.body.args[0] = gast.Call(func=gast.parse(f"{form}.__init__").body[0].value,
                                 args=args, keywords=keywords)   # (the build's own nodes)
    for n in gast.walk(lam):
        if isinstance(n, gast.expr) and getattr(n, "lineno", None) is None:
            gast.copy_location(n, node)
    return lam


def _lambda_params(fn):
    """The names of the parameters after self of the functional method `fn` that a lambda
    standing for its bound method takes: its positional ones without defaults (the others left
    to fn's own defaults; a lambda that closes over locals takes no defaults, whose values
    would shift onto those locals), else None (*args, **kwargs or a keyword-only parameter
    without a default)."""
    if not inspect.isfunction(fn):
        return None
    params = list(inspect.signature(fn).parameters.values())[1:]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.kind is p.KEYWORD_ONLY
           and p.default is p.empty for p in params):
        return None
    return [p.name for p in params if p.kind is not p.KEYWORD_ONLY and p.default is p.empty]


def _unshadowed(params, taken):
    """The parameter names `params` of a lambda written beside the names `taken`, each made
    distinct from them (and from each other) by trailing underscores."""
    taken, names = set(taken), []
    for p in params:
        while p in taken:
            p += "_"
        taken.add(p)
        names.append(p)
    return names


def stores_into_self(cls, name):
    """Whether the method `name` of the user class `cls` changes a list, dict or set its object
    holds (`self.tape.append(node)`, `self.vars[k] = v`, `self.items.pop()`), read from its
    source, or hands its object to a user class or function that does (`return Var(v, self)`,
    Var.__init__ appending to `tape.nodes`): a call of it hands what it is given on through its
    object, which a source transform cannot follow (the caller is traced instead)."""
    fn = getattr(cls, name, None) if isinstance(cls, type) else None
    return _stores_into(fn, 0, 3)


_stores = {}     # (code, position, depth) -> (fn, _stores_into's answer)


def _stores_into(fn, position, depth):
    """Whether the user function `fn` changes a container held by its parameter at `position`
    (or passes that parameter on to one that does, `depth` calls deep)."""
    if isinstance(fn, type):
        fn, position = getattr(fn, "__init__", None), position + 1
    if depth <= 0 or not inspect.isfunction(fn) or (fn.__module__ or "").split(".")[0] in (
            "secant", "numpy", "builtins"):
        return False
    key = (fn.__code__, position, depth)
    hit = _stores.get(key)
    if hit is None or hit[0] is not fn:     # (another function of the same code: its globals)
        if len(_stores) > 4096:
            _stores.clear()
        hit = _stores[key] = (fn, _reads_stores_into(fn, position, depth))
    return hit[1]


def _reads_stores_into(fn, position, depth):
    try:
        node = function_source(fn).node
    except SourceError:
        return False
    params = node.args.posonlyargs + node.args.args
    if position >= len(params):
        return False
    me = params[position].id
    from secant.transformer.nonlocals import changed_in_place
    if any(root.id == me for root in changed_in_place(gast.walk(node), fields=False)):
        return True         # (me.tape.append(v), me.vars[k] = v: a container it holds)
    for n in gast.walk(node):
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Name):
            at = [i for i, a in enumerate(n.args) if isinstance(a, gast.Name) and a.id == me]
            callee = fn.__globals__.get(n.func.id)
            if at and _stores_into(callee, at[0], depth - 1):
                return True
    return False

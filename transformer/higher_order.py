"""Functions passed as values: a helper called with a local function is specialised to it.

`rk4(f, y, dt)` with `f = lambda y: -theta * y` a local of the caller closes over `theta`,
a value the transforms follow. desugar lifts the local function to a function of its own
(`def f(y, theta)`: its free locals are parameters); this module writes the helper for it:

    def rk4_f(y, dt, theta):            # rk4 with its parameter f fixed to the lifted f
        k1 = f(y, theta)
        ...

and the caller's call becomes `rk4_f(y, 0.1, theta)`. The closure's values flow through
ordinary arguments, so every transform (grad, jvp, vmap, jit, any order) reads it as it reads
any call of a user function. A helper that passes `f` on to another helper (`odeint` calling
`rk4(f, ...)`) is specialised in turn. A function argument only known at run time keeps going
through `dynamic_call` (transformer/callees.py).
"""
import inspect
import types

from secant.backends.function_cache import FunctionCache
import gast

from secant.backends import once
from secant.codegen import loader
from secant.transformer.parse import FunctionSource, SourceError, function_source
from secant.transformer.hygiene import copy_tree

_cache = FunctionCache("higher_order")


class NotSpecialisable(Exception):
    pass


def is_helper(obj):
    """A user's Python function with source a call can be specialised in, or one of secant's
    library read as source that takes a function to call (scipy.sparse.linalg.cg's A)."""
    if not isinstance(obj, types.FunctionType) or getattr(obj, "__secant_custom__", False):
        return False
    module = getattr(obj, "__module__", "") or ""
    if module.split(".")[0] not in ("secant", "numpy"):
        return True
    return bool(getattr(obj, "__secant_takes_functions__", False))


def param_of(helper, call, index=None, keyword=None):
    """The parameter of `helper` the argument at position `index` (or `keyword`) of `call`
    binds; None when it is not a plain positional-or-keyword parameter."""
    try:
        sig = inspect.signature(helper, follow_wrapped=False)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY) for p in params):
        return None
    if keyword is not None:
        p = sig.parameters.get(keyword)
    else:
        p = params[index] if index < len(params) else None
    return p.name if p is not None and p.kind == p.POSITIONAL_OR_KEYWORD else None


def specialise(helper, param, target, extras, by_keyword, name):
    """`helper` with its parameter `param` fixed to the function `target`, which takes the
    values `extras` (names) after its own arguments (by keyword when `by_keyword`); the extras
    become the last parameters of the result, called `name`. Raises NotSpecialisable."""
    key = (helper, param, target, tuple(extras), by_keyword, name)
    def recursive():
        raise NotSpecialisable(f"{helper.__name__} passes {param} to itself")
    return once.build(_cache, key, lambda: _build(helper, param, target, list(extras),
                                                  by_keyword, name), recursive=recursive)


def _build(helper, param, target, extras, by_keyword, name):
    from secant.transformer.desugar import desugar
    try:        # (desugared first: the result is generated code, which is not desugared again)
        src = function_source(desugar(helper))
    except (SourceError, OSError, TypeError):
        raise NotSpecialisable(f"{helper.__name__} has no source") from None
    node = copy_tree(src.node)
    a = node.args
    names = [p.id for p in a.args]
    if param not in names or a.vararg or a.kwarg or a.posonlyargs:
        raise NotSpecialisable(f"{param} is not a plain parameter of {helper.__name__}")
    k = names.index(param)
    n_defaults = len(a.defaults)
    first_default = len(names) - n_defaults
    if k >= first_default:
        a.defaults = [d for j, d in enumerate(a.defaults) if first_default + j != k]
    a.args = [p for p in a.args if p.id != param]
    taken = {m.id for m in gast.walk(node) if isinstance(m, gast.Name)} | {name}
    new = []
    for v in extras:                    # the closure's values: parameters of their own
        fresh = v
        while fresh in taken:
            fresh += "_"
        taken.add(fresh)
        new.append(fresh)
    keyword_params = bool(a.defaults) or bool(a.kwonlyargs)
    a.args = list(a.args) + [gast.Name(v, gast.Param(), None, None) for v in new]
    if keyword_params:                  # after parameters with defaults: passed by keyword
        a.defaults = list(a.defaults) + [gast.Constant(None, None) for _ in new]
    node.name = name
    node.decorator_list, node.returns = [], None
    for m in gast.walk(a):
        if isinstance(m, gast.Name):
            m.annotation = None
    free = {param: target}
    _Rewrite(src, param, target, extras, new, by_keyword, free, taken).visit(node)
    from secant.transformer.functionalize import _Printer
    printer = _Printer(src, {})
    printer.stmt(node, 0)
    source = "\n".join(printer.lines) + "\n"
    used = {m.id for m in gast.walk(gast.parse(source)) if isinstance(m, gast.Name)}
    closure = {**{k: v for k, v in src.closure.items() if k in used}, **free}
    fn = loader.load(source, name, src.globals, closure, printer.origins)
    fn.__qualname__ = name
    fn.__module__ = helper.__module__
    fn.__secant_source__ = FunctionSource(fn, gast.parse(source).body[0],
                                          fn.__code__.co_filename, 1, source.splitlines(),
                                          src.globals, closure, generated=src.generated)
    fn.__secant_specialises__ = helper
    fn.__secant_keyword_extras__ = keyword_params
    return fn


class _Rewrite(gast.NodeTransformer):
    """In the helper's body: `f(a)` -> `f(a, theta)`; `g(f, b)` (g a helper) -> `g_f(b,
    theta)`; any other use of f needs the closure's values as one object: not specialisable."""

    def __init__(self, src, param, target, extras, new, by_keyword, free, taken):
        self.src, self.param, self.target = src, param, target
        self.extras, self.new, self.by_keyword = extras, new, by_keyword
        self.free, self.taken = free, taken

    def _values(self):
        return [gast.Name(v, gast.Load(), None, None) for v in self.new]

    def _is_callable_test(self, node):
        """Whether node is `callable(f)`: True in the helper specialised to the function f."""
        return isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
            and isinstance(node.args[0], gast.Name) and node.args[0].id == self.param \
            and _resolve(self.src, node.func) is callable

    def visit_If(self, node):
        """`if callable(f): body else: rest` -> body (a library function taking a function or
        an array: scipy.sparse.linalg.cg's A)."""
        if self._is_callable_test(node.test):
            return [self.visit(s) for s in node.body]
        return self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, gast.Name) and node.func.id == self.param:
            node.args = [self.visit(x) for x in node.args]
            node.keywords = [self.visit(x) for x in node.keywords]
            if self.by_keyword:
                node.keywords = list(node.keywords) + [
                    gast.keyword(arg=e, value=v) for e, v in zip(self.extras, self._values())]
            else:
                node.args = list(node.args) + self._values()
            return _located(node)
        passes = [i for i, x in enumerate(node.args)
                  if isinstance(x, gast.Name) and x.id == self.param]
        passes_kw = [kw for kw in node.keywords
                     if isinstance(kw.value, gast.Name) and kw.value.id == self.param]
        if passes == [0] and not passes_kw and self.new and getattr(
                _resolve(self.src, node.func), "__secant_factory__", False):
            # grad(f): grad(lambda x: f(x)), whose call of f passes the closure's values (the
            # transforms lift a lambda's free locals in turn)
            own = list(inspect.signature(self.target).parameters.values())
            own = own[:len(own) - len(self.extras)]
            if any(p.default is not p.empty or p.kind != p.POSITIONAL_OR_KEYWORD
                   or p.name in self.new for p in own):
                raise NotSpecialisable(f"{self.param} is passed to a transform with parameters "
                                       "other than plain positional ones")
            params = ", ".join(p.name for p in own)
            lam = gast.parse(f"lambda {params}: {self.param}({params})").body[0].value
            gast.copy_location(lam, node.args[0])
            node.args = [_located_in(lam, node)] + [self.visit(x) for x in node.args[1:]]
            node.args[0] = self.visit(node.args[0])
            node.keywords = [self.visit(x) for x in node.keywords]
            return _located(node)
        if (passes or passes_kw) and self.new:      # f passed on to another helper
            helper = _resolve(self.src, node.func)
            if not is_helper(helper) or len(passes) + len(passes_kw) != 1:
                raise NotSpecialisable(f"{self.param} is passed to a function secant cannot "
                                       "specialise")
            p = param_of(helper, node, index=passes[0]) if passes else \
                param_of(helper, node, keyword=passes_kw[0].arg)
            if p is None:
                raise NotSpecialisable(f"{self.param} binds no plain parameter")
            spec_name = f"{helper.__name__}_{self.target.__name__}"
            while spec_name in self.taken:
                spec_name += "_"
            self.taken.add(spec_name)
            spec = specialise(helper, p, self.target, self.new, self.by_keyword, spec_name)
            self.free[spec_name] = spec
            node.func = gast.Name(spec_name, gast.Load(), None, None)
            node.args = [self.visit(x) for j, x in enumerate(node.args) if j not in passes]
            node.keywords = [self.visit(kw) for kw in node.keywords if kw not in passes_kw]
            if spec.__secant_keyword_extras__:
                node.keywords += [gast.keyword(arg=v, value=gast.Name(v, gast.Load(), None, None))
                                  for v in self.new]
            else:
                node.args += self._values()
            return _located(node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == self.param and (self.new or not isinstance(node.ctx, gast.Load)):
            raise NotSpecialisable(f"{self.param} is used other than called")
        return node


def _located_in(new, node):
    """`new` (built from text) at `node`'s position, every sub-node included."""
    for m in gast.walk(new):
        if isinstance(m, (gast.expr, gast.keyword, gast.arguments)):
            gast.copy_location(m, node)
            m.end_lineno = getattr(node, "end_lineno", None)
            m.end_col_offset = getattr(node, "end_col_offset", None)
    return new


def _located(node):
    for m in gast.walk(node):
        if isinstance(m, (gast.expr, gast.keyword)) and getattr(m, "lineno", None) is None:
            gast.copy_location(m, node)
            m.end_lineno = getattr(node, "end_lineno", None)
            m.end_col_offset = getattr(node, "end_col_offset", None)
    return node


def _resolve(src, func):
    """The object a callee names: a name, or an attribute of a module it names
    (`secant.grad`); None for anything else."""
    if isinstance(func, gast.Attribute):
        owner = _resolve(src, func.value)
        return getattr(owner, func.attr, None) if isinstance(owner, types.ModuleType) else None
    if not isinstance(func, gast.Name):
        return None
    kind, obj = src.resolve_name(func.id)
    return None if kind == "unbound" else obj

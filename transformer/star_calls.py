"""Call sites the canonical form reads only spelled out (a desugaring step, desugar.py):

- `h(*g(a))`, `h(x, *pair)` where h's positional parameters are known (a lambda written in
  place, a nested def or `h = lambda ...` of the function, a function it names): the starred
  value unpacked into h's own parameter names just before the statement (`x, y = g(a)`) and
  the call reads `h(x, y)`; unpacking checks the length at run time, as the call would;
- `(lambda x, y: x @ y)(...)` called where it is written: named first (`fn = lambda x, y:
  ...`), so it is lifted and differentiated like any nested function.

Parts of a statement evaluated only sometimes (`a if c else b`, `and`/`or`) or in a scope of
their own (lambda bodies, comprehensions past their first iterable, which runs where
it is written: `[sum(c) for c in zip(*rows)]`) are left as written; the normaliser refuses a starred
argument of a transformed value there (normalize.py operand) rather than read it as a constant.
"""
import inspect

import gast

from secant.transformer.hoisting import Hoister
from secant.transformer.hygiene import walk
from secant.transformer.parse import assign


def rewrite(d, body):
    """`body` (a function's statements) with its call sites spelled out; d: the desugarer."""
    census = d.census()
    if census is not None and not (census.has(gast.Starred) or census.spread
                                   or census.called_in_place) or not _has_call_sites(body):
        return body     # (one walk, not the rewriter's three: issue 19, transformation time)
    return _CallSites(d).visit_body(body)


def _has_call_sites(body):
    """Whether `body` holds anything `_CallSites` rewrites: a starred argument, a `**kw`, or
    a call of a call (`jit(f)(x)`) or of a lambda written in place."""
    for s in body:
        for n in walk(s):
            if isinstance(n, gast.Starred) or isinstance(n, gast.keyword) and n.arg is None                     or isinstance(n, gast.Call) and isinstance(n.func, (gast.Call, gast.Lambda)):
                return True
    return False


class _CallSites(Hoister):
    def __init__(self, d):
        self.d = d
        self.local_defs = {}        # name -> [FunctionDef or Lambda] defined in the function
        stores = set(d.params)
        for n in walk(d.node):
            if isinstance(n, gast.FunctionDef) and n is not d.node:
                self.local_defs.setdefault(n.name, []).append(n)
            elif isinstance(n, gast.Assign) and len(n.targets) == 1 and \
                    isinstance(n.targets[0], gast.Name) and isinstance(n.value, gast.Lambda):
                self.local_defs.setdefault(n.targets[0].id, []).append(n.value)
            elif isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                stores.add(n.id)
        self.other_locals = stores - set(self.local_defs)
        self.chosen = set()         # parameter names already bound by an unpacking
        self.displays = _fixed_displays(d.node)

    def _outside(self, func):
        """Names read or bound outside the callee's own definition(s): the callee's parameter
        names are free to hold the unpacked values where no other code uses them."""
        defs = [func] if isinstance(func, gast.Lambda) else \
            self.local_defs.get(getattr(func, "id", None), [])
        if not defs:
            return None
        inside = {id(n) for f in defs for n in gast.walk(f)}
        return {n.id for n in gast.walk(self.d.node) if isinstance(n, gast.Name)
                and id(n) not in inside} | set(self.d.params)

    def visit_Call(self, node):
        if self._is_jit_of_a_function(node.func):
            # jit(f)(x), jit(lambda y: ...)(x) written in place: a transform reads f itself,
            # as it reads a jitted callee (jit's options change how it runs, not its values)
            node.func = node.func.args[0]
            self.d.changed = True
        if isinstance(node.func, gast.Lambda):     # (its body is a scope of its own)
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
        else:
            self.generic_visit(node)
        if self.lazy:
            return node
        self._spell_out_displays(node)
        starred = [k for k, a in enumerate(node.args) if isinstance(a, gast.Starred)]
        if len(starred) == 1 and not isinstance(node.args[starred[0]].value,
                                                (gast.Tuple, gast.List)):
            params = self._positional(node)
            if params is not None:
                params, optional = params
                k = starred[0]
                names = [p if self._outside(node.func) is not None
                         and p not in self._outside(node.func) and p not in self.chosen
                         else self.d.names.fresh(p) for p in params + list(optional)]
                self.chosen.update(names)
                required = names[:len(params)]
                if not optional:
                    self.pre.append(assign(_names(required), node.args[k].value, self.stmt))
                else:           # f(p, *batch) of def f(p, s, a, gamma=0.99): the items past
                    rest = self.d.names.fresh("rest")   # the required ones fill the defaults
                    target = _names(required)
                    target.elts.append(gast.Starred(gast.Name(rest, gast.Store(), None, None),
                                                    gast.Store()))
                    self.pre.append(assign(target, node.args[k].value, self.stmt))
                    filled = gast.parse(f"(*{rest}, *({', '.join(optional.values())},)"
                                        f"[len({rest}):])", mode="eval").body
                    self.pre.append(assign(_names(names[len(params):]), filled, self.stmt))
                node.args[k:k + 1] = [gast.copy_location(
                    gast.Name(n, gast.Load(), None, None), node.args[k]) for n in names]
                self.d.changed = True
        if isinstance(node.func, gast.Lambda) and not _has_scope(node.func.body):
            name = self.d.names.fresh("fn")
            self.pre.append(assign(gast.Name(name, gast.Store(), None, None), node.func,
                                    self.stmt))
            node.func = gast.copy_location(gast.Name(name, gast.Load(), None, None), node.func)
            self.d.changed = True
        return node

    def _spell_out_displays(self, node):
        """`f(*args)` / `f(**kw)` where `args` is bound once to a tuple or list display (never
        changed after) and `kw` to a dict display with string keys: `f(args[0], args[1])`,
        `f(scale=kw['scale'])`, as Python unpacks them (their lengths and keys are static)."""
        args = []
        for a in node.args:
            shown = self.displays.get(getattr(a.value, "id", None)) \
                if isinstance(a, gast.Starred) else None
            if isinstance(shown, (gast.Tuple, gast.List)) and not any(
                    isinstance(e, gast.Starred) for e in shown.elts):
                args += [_item(a.value, gast.Constant(i, None)) for i in range(len(shown.elts))]
                self.d.changed = True
            else:
                args.append(a)
        node.args = args
        keywords = []
        for k in node.keywords:
            shown = self.displays.get(getattr(k.value, "id", None)) if k.arg is None else None
            keys = [getattr(key, "value", None) for key in getattr(shown, "keys", [])]
            if isinstance(shown, gast.Dict) and keys and all(isinstance(key, str) for key in keys) \
                    and len(set(keys)) == len(keys) and not set(keys) & {
                        x.arg for x in node.keywords}:
                keywords += [gast.keyword(key, _item(k.value, gast.Constant(key, None)))
                             for key in keys]
                self.d.changed = True
            else:
                keywords.append(k)
        node.keywords = keywords

    def _positional(self, call):
        """The names of the parameters a call's one starred argument fills, when the callee's
        signature says how many (no *args), and those with constant defaults it may fill
        after them (name -> the default's source), else None."""
        params = self._signature(call.func)
        if params is None:
            return None
        names, defaults, varargs = params
        if varargs:
            return None
        given = {k.arg for k in call.keywords}
        if None in given:
            return None
        rest = names[len(call.args) - 1:]
        while rest and rest[-1] in given:       # h(*t, z=1): the keyword fills the last
            rest = rest[:-1]
        if not rest or any(p in given for p in rest):
            return None
        required = [p for p in rest if p not in defaults]
        optional = {p: defaults[p] for p in rest if p in defaults}
        if not required or rest[:len(required)] != required \
                or any(v is None for v in optional.values()):
            return None                 # (a default before a required one, or not a constant)
        return required, optional

    def _is_jit_of_a_function(self, func):
        if not isinstance(func, gast.Call) or not func.args or \
                isinstance(func.args[0], gast.Starred):
            return False
        chain, func = [], func.func
        while isinstance(func, gast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name) or func.id in self.other_locals or \
                func.id in self.local_defs or func.id in self.d.params:
            return False
        kind, obj = self.d.src.resolve_name(func.id)
        if kind == "unbound":
            return False
        for attr in reversed(chain):
            obj = getattr(obj, attr, None)
        import secant
        return obj is not None and (obj is secant.jit or
                                    obj is getattr(secant.jit, "__wrapped__", None))

    def _signature(self, func):
        """(positional parameter names, those with defaults, takes *args) of a callee."""
        if isinstance(func, gast.Lambda):
            return _of_args(func.args)
        if isinstance(func, gast.Name) and func.id in self.local_defs:
            sigs = {repr(_of_args(f.args)) for f in self.local_defs[func.id]}
            if len(sigs) != 1 or func.id in self.other_locals:
                return None
            return _of_args(self.local_defs[func.id][0].args)
        chain = []
        while isinstance(func, gast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name) or func.id in self.other_locals or \
                func.id in self.local_defs:
            return None
        kind, obj = self.d.src.resolve_name(func.id)
        if kind == "unbound":
            return None
        for attr in reversed(chain):
            obj = getattr(obj, attr, None)
        if not callable(obj) or inspect.isclass(obj):
            return None
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            return None
        P = inspect.Parameter
        names = [p.name for p in sig.parameters.values()
                 if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
        defaults = {p.name: _constant(p.default) for p in sig.parameters.values()
                    if p.default is not P.empty}
        varargs = any(p.kind is P.VAR_POSITIONAL for p in sig.parameters.values())
        return names, defaults, varargs


def _item(name, key):
    item = gast.Subscript(value=gast.Name(name.id, gast.Load(), None, None), slice=key,
                          ctx=gast.Load())
    for n in gast.walk(item):
        gast.copy_location(n, name)
    return item


def _fixed_displays(fnode, kinds=(gast.Tuple, gast.List, gast.Dict)):
    """Locals of `fnode` bound exactly once, by `name = (...)`, `[...]` or `{...}` (or the
    other `kinds` of value), and never changed in place (no method call on them, no item or
    slice assignment, no augmented assignment): name -> the display."""
    stores, displays, changed = {}, {}, set()
    for n in walk(fnode):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and \
                isinstance(n.targets[0], gast.Name) and \
                isinstance(n.value, kinds):
            displays[n.targets[0].id] = n.value
        if isinstance(n, (gast.Attribute, gast.Subscript)) and isinstance(n.value, gast.Name) \
                and (isinstance(n, gast.Attribute) or not isinstance(n.ctx, gast.Load)):
            changed.add(n.value.id)
        if isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            changed.add(n.target.id)
    params = {a.id for a in gast.walk(fnode.args) if isinstance(a, gast.Name)}
    return {k: v for k, v in displays.items()
            if stores.get(k) == 1 and k not in changed and k not in params}


def _names(names):
    return gast.Tuple([gast.Name(n, gast.Store(), None, None) for n in names], gast.Store())


def _of_args(a):
    params = list(getattr(a, "posonlyargs", None) or []) + list(a.args)
    names = [p.id for p in params]
    with_defaults = names[len(names) - len(a.defaults):] if a.defaults else []
    defaults = {n: _constant(d.value) if isinstance(d, gast.Constant) else None
                for n, d in zip(with_defaults, a.defaults)}
    return names, defaults, a.vararg is not None


def _constant(value):
    """The source of a default that is a plain constant, else None."""
    if type(value) in (int, float, bool, str, type(None)) and \
            repr(value) not in ("nan", "inf", "-inf"):
        return repr(value)
    return None


def _has_scope(node):
    return any(isinstance(n, (gast.Lambda, gast.ListComp, gast.GeneratorExp, gast.DictComp,
                              gast.SetComp, gast.NamedExpr, gast.Yield))
               for n in gast.walk(node))

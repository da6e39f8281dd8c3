"""A list or tuple of functions resolved element by element (a desugaring step, desugar.py).

`fs = [lambda t: snp.cos(t), lambda t: t * w]` (w a local the transforms trace), bound once at
the function's top level and only iterated (`for g in fs:`, `sum(g(x) for g in fs)`), indexed
with a constant (`fs[1](x)`), measured (`len(fs)`) or given to lax.switch, becomes one
assignment per lambda (`fs_0 = lambda t: ...`, `fs_1 = ...`: local functions, lifted and
differentiated like any other) and each use reads the elements themselves: the loop is
unrolled (`acc = acc + fs_0(x)`, `acc = acc + fs_1(x)`), the generator becomes the tuple of its
items (`sum((fs_0(x), fs_1(x)))`), `fs[1]` reads `fs_1`, `len(fs)` is 2, and
`lax.switch(i, fs, x)` is given the list as written (`lax.switch(i, [lambda t: ..., ...], x)`:
the branches where the normaliser reads them, also once a loop around the call is lifted into
a function of its own, as jit's lowering does; a lambda with defaults keeps the list). An
element that is not a lambda (`snp.sin`, a nested def) is read where it is used.

Any other use (the list passed on, returned, changed, read in a nested function, a loop
variable read after its loop or bound again in it, a comprehension with an `if`) leaves the
list as written: the normaliser refuses a stored lambda closing over a traced value clearly.
"""
import copy

import gast

_MAX_ITEMS = 8      # (a loop over more is unrolled no further: left as written)
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)


def rewrite(d, body):
    """`body` (a function's top-level statements) with each such list resolved; d: the
    desugarer (its names, params and `changed` flag)."""
    if not any(_candidate(s) for s in body):
        return body
    k = 0
    while k < len(body):
        s = body[k]
        done = _resolve(d, body, k) if _candidate(s) else None
        if done is None:
            k += 1
            continue
        body = done
        d.changed = True
    return body


def _candidate(s):
    return isinstance(s, gast.Assign) and len(s.targets) == 1 \
        and isinstance(s.targets[0], gast.Name) and isinstance(s.value, (gast.List, gast.Tuple)) \
        and 0 < len(s.value.elts) <= _MAX_ITEMS \
        and any(isinstance(e, gast.Lambda) for e in s.value.elts) \
        and all(isinstance(e, gast.Lambda) or _dotted(e) for e in s.value.elts)


def _dotted(e):
    while isinstance(e, gast.Attribute):
        e = e.value
    return isinstance(e, gast.Name)


def _root(e):
    while isinstance(e, gast.Attribute):
        e = e.value
    return e.id


def _names(nodes, name):
    return [n for s in nodes for n in gast.walk(s) if isinstance(n, gast.Name) and n.id == name]


def _bindings(nodes, name):
    """How many times `name` is bound in `nodes` (assigned, a parameter, a def, declared
    global or nonlocal)."""
    count = 0
    for s in nodes:
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and n.id == name and not isinstance(n.ctx, gast.Load):
                count += 1
            elif isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)) \
                    and n.name == name:
                count += 1
            elif isinstance(n, (gast.Global, gast.Nonlocal)) and name in n.names:
                count += 2
    return count


def _resolve(d, body, k):
    """`body` with the list bound by body[k] resolved, or None where it stays as written."""
    s = body[k]
    name, elts = s.targets[0].id, s.value.elts
    whole = [d.node.args] + body
    if name in d.params or _bindings(whole, name) != 1 or _names(body[:k], name):
        return None
    if any(_names([e], name) for e in elts):
        return None
    for e in elts:              # a function named: one bound once (or a global) only
        if not isinstance(e, gast.Lambda) and _bindings(whole, _root(e)) > 1:
            return None
    new, refs = [], []
    for j, e in enumerate(elts):
        if isinstance(e, gast.Lambda):
            item = d.names.fresh(f"{name}_{j}")
            new.append(_placed(gast.Assign(
                targets=[gast.Name(item, gast.Store(), None, None)], value=e,
                type_comment=None), s))
            refs.append(gast.Name(item, gast.Load(), None, None))
        else:
            refs.append(e)
    rest = copy.deepcopy(body[k + 1:])
    resolver = _Resolver(name, refs, whole, elts)
    rest = resolver.visit_body(rest)
    if resolver.failed or _names(rest, name):
        return None
    return body[:k] + new + rest


class _Resolver(gast.NodeTransformer):
    def __init__(self, name, refs, whole, elts):
        self.name, self.refs, self.whole, self.elts = name, refs, whole, elts
        self.failed = False

    def visit_body(self, stmts):
        out = []
        for st in stmts:
            got = self.visit(st)
            out.extend(got if isinstance(got, list) else [got] if got is not None else [])
        return out

    def _is_list(self, node):
        return isinstance(node, gast.Name) and node.id == self.name \
            and isinstance(node.ctx, gast.Load)

    def generic_visit(self, node):
        if isinstance(node, _SCOPES):
            return node         # (a read there is left: the rewrite is given up)
        for field, old in gast.iter_fields(node):
            if isinstance(old, list) and old and isinstance(old[0], gast.stmt):
                setattr(node, field, self.visit_body(old))
            elif isinstance(old, list):
                setattr(node, field, [self.visit(v) if isinstance(v, gast.AST) else v
                                      for v in old])
            elif isinstance(old, gast.AST):
                setattr(node, field, self.visit(old))
        return node

    def visit_For(self, node):
        if not self._is_list(node.iter):
            return self.generic_visit(node)
        g = node.target
        if not isinstance(g, gast.Name) or node.orelse or _exits(node.body) \
                or len(_names(self.whole, g.id)) != len(_names([node], g.id)) \
                or any(isinstance(n, _SCOPES) and _names([n], g.id) for n in gast.walk(node)) \
                or _bindings(node.body, g.id):
            self.failed = True
            return node
        out = []
        for ref in self.refs:
            out += self.visit_body(_substituted(node.body, g.id, ref))
        return out

    def _comprehension(self, node, make):
        gens = node.generators
        if len(gens) != 1 or not self._is_list(gens[0].iter):
            return self.generic_visit(node)
        g = gens[0].target
        if not isinstance(g, gast.Name) or gens[0].ifs or gens[0].is_async \
                or any(isinstance(n, _SCOPES) and _names([n], g.id) for n in gast.walk(node.elt)):
            self.failed = True
            return node
        items = [self.visit(_substituted([node.elt], g.id, ref)[0]) for ref in self.refs]
        return gast.copy_location(make(items), node)

    def visit_ListComp(self, node):
        return self._comprehension(node, lambda items: gast.List(elts=items, ctx=gast.Load()))

    def visit_GeneratorExp(self, node):
        return self._comprehension(node, lambda items: gast.Tuple(elts=items, ctx=gast.Load()))

    def visit_Subscript(self, node):
        at = _constant_index(node.slice)
        if self._is_list(node.value) and at is not None and isinstance(node.ctx, gast.Load) \
                and -len(self.refs) <= at < len(self.refs):
            return gast.copy_location(copy.deepcopy(self.refs[at]), node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, gast.Name) and node.func.id == "len" and len(node.args) == 1 \
                and self._is_list(node.args[0]) and not node.keywords \
                and _bindings(self.whole, "len") == 0:
            return gast.copy_location(gast.Constant(len(self.refs), None), node)
        if _spells_switch(node.func):       # lax.switch(i, fs, x): its branches written there
            if any(isinstance(e, gast.Lambda) and (e.args.defaults or e.args.kw_defaults)
                   for e in self.elts):
                self.failed = True      # (a default is evaluated where the lambda is made)
                return node
            display = gast.List(elts=[copy.deepcopy(e) for e in self.elts], ctx=gast.Load())
            node.args = [_placed(copy.deepcopy(display), a) if self._is_list(a) else a
                         for a in node.args]
            for k in node.keywords:
                if k.arg == "branches" and self._is_list(k.value):
                    k.value = _placed(copy.deepcopy(display), k.value)
        return self.generic_visit(node)


def _spells_switch(func):
    return isinstance(func, gast.Attribute) and func.attr == "switch" or \
        isinstance(func, gast.Name) and func.id == "switch"


def _constant_index(node):
    """The int `node` writes (`1`, `-1`), else None."""
    sign = 1
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        sign, node = -1, node.operand
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return sign * node.value
    return None


def _exits(stmts):
    """Whether `stmts` hold a break or continue of their own loop."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, (gast.Break, gast.Continue)):
            return True
        if isinstance(n, _SCOPES + (gast.For, gast.While, gast.expr)):
            continue
        stack.extend(gast.iter_child_nodes(n))
    return False


class _Substitute(gast.NodeTransformer):
    def __init__(self, var, ref):
        self.var, self.ref = var, ref

    def visit_Name(self, node):
        if node.id == self.var and isinstance(node.ctx, gast.Load):
            return gast.copy_location(copy.deepcopy(self.ref), node)
        return node


def _substituted(nodes, var, ref):
    """Copies of `nodes`, each read of `var` replaced by a copy of `ref` (placed there)."""
    return [_placed(_Substitute(var, ref).visit(n), n) for n in copy.deepcopy(nodes)]


def _placed(node, like):
    """`node`, each of its nodes with no position given `like`'s."""
    for m in gast.walk(node):
        if getattr(m, "lineno", None) is None and isinstance(m, (gast.expr, gast.stmt)):
            gast.copy_location(m, like)
    return node

"""`checkpoint(h)` of a nested def, a desugaring step (desugar.py):

- `jax.checkpoint(cell)` / `remat(cell)` of a nested def or `cell = lambda ...` (the keywords
  prevent_cse and policy at most) -> `cell`: rematerialisation changes what a derivative keeps
  for its reverse pass, never a value, and the nested def is then lifted as when passed directly
  (`lax.scan(cell, ...)`), its closure's values differentiated;
- `a if c else a` left by that (`body = jax.checkpoint(cell) if remat else cell`) -> `a`;
- a local only ever bound to one nested def (`body = cell`, perhaps in both branches of an if)
  -> that def's name where it is read, the bindings dropped.

A nested def used as a value otherwise stays as written; the normaliser refuses it when it closes
over differentiated values (normalize.py _check_function_value)."""
import gast

from secant.transformer.hygiene import walk

_KEYWORDS = {"prevent_cse", "policy"}


def rewrite(d, body):
    """`body` (a function's statements) with checkpoint(h) of its nested defs read as h; d: the
    desugarer."""
    census = d.census()
    if census is not None and census.defs <= 1 and not census.has(gast.Lambda):
        return body         # (no nested def nor lambda in the function)
    defs = set()
    for n in walk(d.node):
        if isinstance(n, gast.FunctionDef) and n is not d.node:
            defs.add(n.name)
        elif isinstance(n, gast.Assign) and len(n.targets) == 1 and \
                isinstance(n.targets[0], gast.Name) and isinstance(n.value, gast.Lambda):
            defs.add(n.targets[0].id)
    if not defs:
        return body
    stripped = _Strip(d, defs)
    body = [stripped.visit(s) for s in body]
    aliases = _aliases(d, body, defs)
    if stripped.changed or aliases:
        d.changed = True
    if aliases:
        body = _drop_bindings(body, aliases)
        for n in walk(gast.Module(body=body, type_ignores=[])):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id in aliases:
                n.id = aliases[n.id]
    return body


class _Strip(gast.NodeTransformer):
    def __init__(self, d, defs):
        self.d, self.defs, self.changed = d, defs, False

    def visit_Call(self, node):
        self.generic_visit(node)
        if len(node.args) == 1 and isinstance(node.args[0], gast.Name) and \
                node.args[0].id in self.defs and \
                all(k.arg in _KEYWORDS for k in node.keywords) and self._is_checkpoint(node.func):
            self.changed = True
            return node.args[0]
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if isinstance(node.body, gast.Name) and isinstance(node.orelse, gast.Name) and \
                node.body.id == node.orelse.id and node.body.id in self.defs:
            self.changed = True
            return node.body
        return node

    def _is_checkpoint(self, func):
        chain = []
        while isinstance(func, gast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name) or func.id in self.d.params or func.id in self.defs:
            return False
        _, obj = self.d.src.resolve_name(func.id)
        for attr in reversed(chain):
            obj = getattr(obj, attr, None)
        return getattr(obj, "__secant_factory__", None) == "checkpoint"


def _aliases(d, body, defs):
    """name -> the nested def it is only ever bound to (`body = cell`)."""
    bound = {}
    for n in walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            bound.setdefault(n.id, set()).add(None)
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and \
                isinstance(n.targets[0], gast.Name) and isinstance(n.value, gast.Name) and \
                n.value.id in defs:
            bound.setdefault(n.targets[0].id, set()).add(n.value.id)
    out = {}
    for name, values in bound.items():
        values = values - {None}        # (each such Assign's target counted once as a store)
        if len(values) == 1 and name not in defs and name not in d.params and \
                _stores(body, name) == _plain_bindings(body, name, defs):
            out[name] = next(iter(values))
    return out


def _stores(body, name):
    return sum(1 for n in walk(gast.Module(body=body, type_ignores=[]))
               if isinstance(n, gast.Name) and n.id == name
               and isinstance(n.ctx, (gast.Store, gast.Del)))


def _plain_bindings(body, name, defs):
    return sum(1 for n in walk(gast.Module(body=body, type_ignores=[]))
               if isinstance(n, gast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], gast.Name) and n.targets[0].id == name
               and isinstance(n.value, gast.Name) and n.value.id in defs)


def _drop_bindings(stmts, aliases):
    out = []
    for s in stmts:
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], gast.Name) and s.targets[0].id in aliases:
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(s, field, None)
            if isinstance(block, list) and not isinstance(s, (gast.FunctionDef, gast.Lambda)):
                setattr(s, field, _drop_bindings(block, aliases) or
                        [gast.copy_location(gast.Pass(), s)])
        out.append(s)
    return out

"""`checkpoint(h)` of a nested def, a desugaring step (desugar.py):

- `jax.checkpoint(blk)(x)` / `jax.checkpoint(blk.__call__)(x)` called in place, blk a local
  or parameter (a module object, a loop's block) -> `blk(x)`: as below, no value changes;

- `jax.checkpoint(cell)` / `remat(cell)` of a nested def or `cell = lambda ...` (the keywords
  prevent_cse and policy at most) -> `cell`: rematerialisation changes what a derivative keeps
  for its reverse pass, never a value, and the nested def is then lifted as when passed directly
  (`lax.scan(cell, ...)`), its closure's values differentiated;
- `@jax.checkpoint` / `@remat` / `@checkpoint(policy=...)` on a nested def -> the plain def,
  for the same reason, and `@jax.jit` (`@jit(static_argnums=...)`) too: inside a transformed
  function jit changes where the code compiles, never a value;
- `a if c else a` left by that (`body = jax.checkpoint(cell) if remat else cell`) -> `a`;
- a local only ever bound to one nested def (`body = cell`, perhaps in both branches of an if)
  -> that def's name where it is read, the bindings dropped.

A nested def used as a value otherwise stays as written; the normaliser refuses it when it closes
over differentiated values (normalize.py _check_function_value)."""
import functools

import gast

from secant.transformer.hygiene import walk

_KEYWORDS = {"prevent_cse", "policy"}
_JIT_KEYWORDS = {"static_argnums", "static_argnames", "donate_argnums", "donate_argnames",
                 "inline", "keep_unused"}


def rewrite(d, body):
    """`body` (a function's statements) with checkpoint(h) of its nested defs read as h; d: the
    desugarer."""
    census = d.census()
    if census is not None and census.defs <= 1 and not census.has(gast.Lambda) \
            and not census.called_in_place:
        return body         # (no nested def nor lambda in the function, no f(...)(x))
    defs, local = set(), set(d.params)
    for n in walk(d.node):
        if isinstance(n, gast.FunctionDef) and n is not d.node:
            defs.add(n.name)
        elif isinstance(n, gast.Assign) and len(n.targets) == 1 and \
                isinstance(n.targets[0], gast.Name) and isinstance(n.value, gast.Lambda):
            defs.add(n.targets[0].id)
        elif isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            local.add(n.id)
    if not defs and not _called_of_local(d, local):
        return body
    stripped = _Strip(d, defs, local)
    for n in walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(n, gast.FunctionDef) and n.decorator_list:
            kept = [dec for dec in n.decorator_list if not stripped.is_decorator(dec)]
            if len(kept) < len(n.decorator_list):
                n.decorator_list, stripped.changed = kept, True
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


def _called_of_local(d, local):
    """Whether the function calls `checkpoint(obj)(x)` or `checkpoint(obj.__call__)(x)` in
    place, obj a local (a module of a loop over blocks, a parameter)."""
    return any(isinstance(n, gast.Call) and _local_checkpointed(n, local)
               and _Strip(d, set(), local)._is_checkpoint(n.func.func) for n in walk(d.node))


def _local_checkpointed(node, local):
    """The object of `checkpoint(obj)(...)` / `checkpoint(obj.__call__)(...)` (the keywords
    prevent_cse, policy and static_argnums at most), obj rooted in a local, else None."""
    inner = node.func
    if not (isinstance(inner, gast.Call) and len(inner.args) == 1
            and all(k.arg in _KEYWORDS | {"static_argnums"} for k in inner.keywords)):
        return None
    obj = inner.args[0]
    if isinstance(obj, gast.Attribute) and obj.attr == "__call__":
        obj = obj.value
    root = obj
    while isinstance(root, gast.Attribute):
        root = root.value
    return obj if isinstance(root, gast.Name) and root.id in local else None


class _Strip(gast.NodeTransformer):
    def __init__(self, d, defs, local=()):
        self.d, self.defs, self.local, self.changed = d, defs, set(local), False

    def visit_Call(self, node):
        self.generic_visit(node)
        obj = _local_checkpointed(node, self.local)
        if obj is not None and self._is_checkpoint(node.func.func):
            # checkpoint(blk)(x), checkpoint(blk.__call__)(x) of a local object (a module):
            # blk(x), as for a nested def below
            self.changed = True
            return gast.copy_location(gast.Call(func=obj, args=node.args,
                                                keywords=node.keywords), node)
        if len(node.args) == 1 and isinstance(node.args[0], gast.Name) and \
                node.args[0].id in self.defs and \
                all(k.arg in _KEYWORDS for k in node.keywords) and self._is_checkpoint(node.func):
            self.changed = True
            return node.args[0]
        return node

    def is_decorator(self, dec):
        """`@checkpoint`, `@jax.remat`, `@jax.checkpoint(policy=...)`, `@jax.jit`,
        `@partial(jax.jit, static_argnums=1)`"""
        if not isinstance(dec, gast.Call):
            return self._is_checkpoint(dec) or self._is_jit(dec)
        func = dec.func
        if len(dec.args) == 1 and self._resolve(func) is functools.partial:
            func = dec.args[0]
        elif dec.args:
            return False
        words = {k.arg for k in dec.keywords}
        return words <= _KEYWORDS and self._is_checkpoint(func) or \
            words <= _JIT_KEYWORDS and self._is_jit(func)

    def _is_jit(self, func):
        import secant
        obj = self._resolve(func)
        return obj is not None and (obj is secant.jit or
                                    obj is getattr(secant.jit, "__wrapped__", None))

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if isinstance(node.body, gast.Name) and isinstance(node.orelse, gast.Name) and \
                node.body.id == node.orelse.id and node.body.id in self.defs:
            self.changed = True
            return node.body
        return node

    def _is_checkpoint(self, func):
        return getattr(self._resolve(func), "__secant_factory__", None) == "checkpoint"

    def _resolve(self, func):
        """the object `a.b.c` names (None: a local, or not found)"""
        chain = []
        while isinstance(func, gast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name) or func.id in self.d.params or func.id in self.defs:
            return None
        _, obj = self.d.src.resolve_name(func.id)
        for attr in reversed(chain):
            obj = getattr(obj, attr, None)
        return obj


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

"""A `types.SimpleNamespace` held in a local and used only through its fields (a desugaring
step, desugar.py): each field becomes a local of its own,

    b = types.SimpleNamespace(v=x)          b_v = x
    b.v += snp.sin(x)               ->      b_v += snp.sin(x)
    return b.v                              return b_v

which is what the object means when no other name can see it: `b` bound once, by keywords
only, and read or set only as `b.<field>` of a field the constructor names, outside nested
functions. Any other use keeps the normaliser's error."""
import types

import gast

from secant.transformer.hygiene import SCOPES, walk
from secant.transformer.parse import assign, located


def rewrite(d, body):
    """`body` with such namespaces' fields spelled as locals; d: the desugarer."""
    census = d.census()
    if census is not None and not census.keyword_calls:
        return body         # (no call of keywords only: no SimpleNamespace(k=v, ...))
    module = gast.Module(body=body, type_ignores=[])
    for s in [s for s in walk(module) if isinstance(s, gast.Assign)
              and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
              and _is_namespace(d, s.value)]:
        parents = {c: n for n in walk(module) for c in gast.iter_child_nodes(n)}
        fields = _fields_only(module, parents, s)
        if fields is not None:
            _spell_out(d, module, parents, s, fields)
    return module.body


def _is_namespace(d, value):
    """Whether `value` is `types.SimpleNamespace(k=v, ...)` (keywords only)."""
    if not (isinstance(value, gast.Call) and not value.args and value.keywords
            and all(k.arg is not None for k in value.keywords)):
        return False
    func, chain = value.func, []
    while isinstance(func, gast.Attribute):
        chain.append(func.attr)
        func = func.value
    if not isinstance(func, gast.Name) or func.id in d.params or _stored(d.node, func.id):
        return False
    _, obj = d.src.resolve_name(func.id)
    for attr in reversed(chain):
        obj = getattr(obj, attr, None)
    return obj is types.SimpleNamespace


def _stored(node, name):
    return any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Store)
               for n in gast.walk(node))


def _fields_only(module, parents, s):
    """The constructor's fields when every other use of s's name reads or sets one of them."""
    name = s.targets[0].id
    fields = [k.arg for k in s.value.keywords]
    if any(isinstance(n, (gast.Global, gast.Nonlocal)) and name in n.names
           for n in gast.walk(module)):
        return None                 # (another scope sees it)
    for n in gast.walk(module):
        if not (isinstance(n, gast.Name) and n.id == name) or n is s.targets[0]:
            continue
        parent = parents.get(n)
        if not (isinstance(parent, gast.Attribute) and parent.value is n
                and parent.attr in fields and not isinstance(parent.ctx, gast.Del)):
            return None
        p = parents.get(parent)
        while p is not None:
            if isinstance(p, SCOPES):       # a nested function, lambda or comprehension
                return None
            p = parents.get(p)
    return fields


def _spell_out(d, module, parents, s, fields):
    name = s.targets[0].id
    locals_ = {f: d.names.fresh(f"{name}_{f}") for f in fields}
    for n in list(gast.walk(module)):
        if isinstance(n, gast.Attribute) and isinstance(n.value, gast.Name) and \
                n.value.id == name and n.attr in locals_:
            new = located(gast.Name(locals_[n.attr], n.ctx, None, None), n)
            holder = parents[n]
            for field, value in gast.iter_fields(holder):
                if value is n:
                    setattr(holder, field, new)
                elif isinstance(value, list):
                    value[:] = [new if v is n else v for v in value]
    assigns = [assign(locals_[k.arg], k.value, s) for k in s.value.keywords]
    holder = parents[s]
    for field, value in gast.iter_fields(holder):
        if isinstance(value, list) and any(v is s for v in value):
            i = next(j for j, v in enumerate(value) if v is s)
            value[i:i + 1] = assigns
    d.changed = True

"""Hygiene: a user's name never means one of secant's, and secant's never means the user's.

Generated code calls secant's helpers by readable bare names (`unbroadcast`, `grad_seed`,
`snp.mean`), bound in the generated function's own closure. A user's function may use the same
names for its own things: a local `unbroadcast = 3.0`, a parameter `snp`, a global `mean_grad`.
Two steps keep both meanings apart, so the generated code reads exactly as the user's names
and secant's helpers only change spelling when they must:

1. `apart` (before normalisation): every name of the user's function that is *reserved* (a
   name secant's generated code may use for itself) and means something else in the user's
   code (bound by the function, or a free name whose value is not secant's object of that
   name) is renamed, throughout the function's tree, to a fresh placeholder (`unbroadcast_1`).
   Resolution of the placeholder reads the original name (FunctionSource.aliases). After this,
   every reserved name in the code secant writes is secant's, every placeholder is the user's.
2. `swap` (on the generated source): each clashing reserved name becomes a fresh name
   (`unbroadcast_2`: secant's helper, bound in the closure under that name) and each
   placeholder becomes the user's original name again. The generated function keeps the user's
   parameter names (keyword calls still work), locals and globals, and reads user globals from
   the module dict and user closure variables from the user's cells as before.

Both renamings are injective on names and avoid every name in the code, so the binding
structure of the code is unchanged: the result means what the collision-free code means.
"""
import ast
import copy
from collections import deque

import gast

from secant.codegen.naming import Names, push_children

_NOT_SECANTS = object()     # a reserved name whose every user use clashes (the generated def's)

# the nodes that open a scope of their own (a walk of one scope stops at them)
SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef, gast.ListComp,
          gast.SetComp, gast.DictComp, gast.GeneratorExp)


def walk(node):
    """The nodes of `node`'s tree in ast.walk's order (breadth first), at about half its cost:
    a transform walks a whole function many times (issue 19: transformation time). A node's
    fields are read from its __dict__ (so for ast's nodes as for gast's; one never set, or a
    class default, reads as None)."""
    todo = deque([node])
    pop, push = todo.popleft, todo.append
    while todo:
        node = pop()
        push_children(node, push)
        yield node


_ATOMIC = frozenset([str, int, float, complex, bytes, bool, type(None), type(Ellipsis)])


def copy_tree(node):
    """copy.deepcopy(node) of a syntax tree (ast or gast), at a fraction of its cost: each node
    a new node of its type with each attribute copied (a subtree reached twice is copied once,
    as deepcopy does); values of other types than nodes, lists and immutable atoms are left to
    deepcopy (issue 19: jit's functionalisation copies each function it reads)."""
    return _copy_tree(node, {})


def _copy_tree(x, memo):
    t = type(x)
    if t in _ATOMIC:
        return x
    new = memo.get(id(x))
    if new is not None:
        return new
    if isinstance(x, ast.AST):
        new = memo[id(x)] = t.__new__(t)
        d = new.__dict__
        for k, v in x.__dict__.items():
            d[k] = v if type(v) in _ATOMIC else _copy_tree(v, memo)
        return new
    if t is list:
        new = memo[id(x)] = []
        for v in x:
            new.append(v if type(v) in _ATOMIC else _copy_tree(v, memo))
        return new
    return copy.deepcopy(x, memo)


def walk_scope(nodes):
    """Nodes of `nodes` in source order, not descending into nested scopes (which are yielded
    themselves)."""
    stack = list(nodes)[::-1]
    pop, push, AST = stack.pop, stack.append, ast.AST
    while stack:
        n = pop()
        yield n
        if type(n) not in _SCOPE_TYPES:     # (its children, last first: popped in order)
            d = n.__dict__
            for field in reversed(n._fields):
                value = d.get(field)
                if type(value) is list:
                    for v in reversed(value):
                        if isinstance(v, AST):
                            push(v)
                elif isinstance(value, AST):
                    push(value)


_SCOPE_TYPES = frozenset(SCOPES)    # (by type: gast's node classes are never subclassed)


class Census:
    """What one walk of a function's tree holds, which the desugaring passes ask before each
    walks the tree for a construct of its own (issue 19: a dozen whole-tree walks, though most
    functions hold none of those constructs): `types` (the node classes), `names` (each
    Name's id and each def's name), `stores` (the ids of Names in a Store or Param context),
    `attributes` (the attribute names read or written), `call_chains` ((root name, attribute
    chain) of each call's function spelled as `a.b.c`), `defs` (how many defs, the function's
    own included), `keyword_calls` (whether a call passes keywords and no positional
    argument), `spread` (whether a call passes `**kw`), `called_in_place` (whether a call's
    function is a call or a lambda: `jit(f)(x)`, `(lambda x: x)(a)`) and `on_call` (whether a
    call's function is a call or an attribute of one: `C(a)(x)`, `C(a).m(x)`)."""

    def __init__(self, node):
        types, names, stores, attributes, chains = set(), set(), set(), set(), set()
        assigned, store_t = set(), gast.Store
        defs, keyword_calls, spread, called, on_call = 0, False, False, False, False
        name_t, def_t, attr_t, call_t = gast.Name, gast.FunctionDef, gast.Attribute, gast.Call
        storing = (gast.Store, gast.Param)
        for n in walk(node):
            t = type(n)
            types.add(t)
            if t is name_t:
                names.add(n.id)
                if isinstance(n.ctx, storing):
                    stores.add(n.id)
                    if type(n.ctx) is store_t:
                        assigned.add(n.id)
            elif t is attr_t:
                attributes.add(n.attr)
            elif t is call_t:
                keyword_calls = keyword_calls or bool(n.keywords and not n.args)
                spread = spread or any(k.arg is None for k in n.keywords)
                called = called or isinstance(n.func, (call_t, gast.Lambda))
                f, chain = n.func, []
                while type(f) is attr_t:
                    chain.append(f.attr)
                    f = f.value
                if type(f) is name_t:
                    chains.add((f.id, tuple(reversed(chain))))
                on_call = on_call or type(f) is call_t
            elif t is def_t:
                names.add(n.name)
                defs += 1
        self.types, self.names, self.stores, self.attributes = types, names, stores, attributes
        self.call_chains, self.defs, self.keyword_calls = chains, defs, keyword_calls
        self.spread, self.called_in_place, self.on_call = spread, called, on_call
        self.assigned = assigned

    def has(self, *kinds):
        """Whether the tree holds a node of one of `kinds`."""
        return any(k in self.types for k in kinds)


def _names(node, bound_too=False):
    """The names in `node`'s tree; bound_too: (those, `bound(node)`), in one walk."""
    out, bound_ = set(), set()
    for n in walk(node):
        if isinstance(n, gast.Name):
            out.add(n.id)
            if isinstance(n.ctx, (gast.Store, gast.Param, gast.Del)):
                bound_.add(n.id)
        elif isinstance(n, (gast.FunctionDef, gast.ClassDef)):
            out.add(n.name)
            if n is not node:
                bound_.add(n.name)
        elif isinstance(n, gast.alias):
            out.add((n.asname or n.name).split(".")[0])
            bound_.add((n.asname or n.name).split(".")[0])
    return (out, bound_) if bound_too else out


def bound(node):
    """Names the function binds anywhere in its tree (parameters, assignments, defs)."""
    out = set()
    for n in walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Param, gast.Del)):
            out.add(n.id)
        elif isinstance(n, (gast.FunctionDef, gast.ClassDef)) and n is not node:
            out.add(n.name)
        elif isinstance(n, gast.alias):
            out.add((n.asname or n.name).split(".")[0])
    return out


def apart(src, reserved, names=None):
    """(src, {name: placeholder}): `src` itself when no user name clashes with `reserved`
    (name -> secant's object of that name), else a copy whose tree is renamed. names:
    _names(src.node, bound_too=True), where a walk of the caller's read it already."""
    if not reserved:
        return src, {}
    used, bound_ = names or _names(src.node, bound_too=True)
    clash = set()
    for name in used & set(reserved):
        if name not in bound_:
            kind, value = src._lookup(name)
            if kind != "unbound" and value is reserved[name]:
                continue        # the user's `snp` is secant.numpy: one meaning, kept
        clash.add(name)
    if not clash:
        return src, {}
    names = Names(used | set(reserved) | set(src.closure))
    mapping = {n: names.fresh(n) for n in sorted(clash)}
    node = copy_tree(src.node)
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and n.id in mapping:
            n.id = mapping[n.id]
        elif isinstance(n, gast.FunctionDef) and n is not node and n.name in mapping:
            n.name = mapping[n.name]
    new = copy.copy(src)
    new.node = node
    new.aliases = {**src.aliases, **{p: n for n, p in mapping.items()}}
    new.resolutions = {}
    return new, mapping


def restore(node, mapping):
    """`node` (a part of a renamed tree, say a lambda lifted into a function of its own) with
    the user's own names back."""
    back = {p: n for n, p in mapping.items()}
    if not back:
        return node
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and n.id in back:
            n.id = back[n.id]
        elif isinstance(n, gast.FunctionDef) and n.name in back:
            n.name = back[n.name]
    return node


def swap(source, mapping, ours=None):
    """(source, {reserved name: the name secant's object now has}): the generated `source`
    with each placeholder back to the user's name and each clashing reserved name renamed
    (to the names `ours` gives, where given: a text whose names are among those of another
    that was swapped first, renamed alike).
    Names are replaced where the syntax tree puts them (never in attributes, keywords, strings
    or comments), so the text keeps its lines, comments and layout."""
    if not mapping:
        return source, {}
    tree = ast.parse(source)
    everything, spots = set(), []
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            everything.add(n.id)
            spots.append((n.lineno, n.col_offset, n.id))
        elif isinstance(n, ast.arg):
            everything.add(n.arg)
            spots.append((n.lineno, n.col_offset, n.arg))
        elif isinstance(n, ast.FunctionDef):
            everything.add(n.name)
            spots.append((n.lineno, n.col_offset + len("def "), n.name))
    if ours is None:
        names = Names(everything | set(mapping) | set(mapping.values()))
        ours = {n: names.fresh(n) for n in sorted(mapping)}
    table = {**ours, **{p: n for n, p in mapping.items()}}
    lines = [ln.encode() for ln in source.splitlines(True)]
    for line, col, name in sorted(spots, reverse=True):
        if name in table:
            text = lines[line - 1]
            assert text[col:col + len(name.encode())] == name.encode(), (text, col, name)
            lines[line - 1] = text[:col] + table[name].encode() + text[col + len(name.encode()):]
    return b"".join(lines).decode(), ours

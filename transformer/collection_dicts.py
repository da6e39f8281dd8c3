"""A local `collections.defaultdict` or `OrderedDict` used as a dict is a dict (issue 15):
JAX runs them as plain Python objects holding traced values, and so do the transforms once
they read them as the dict built with {} that they follow.

- `d = defaultdict(f)` -> `d = {}`, and before each statement that reads `d[k]` (`d[k] += v`,
  `d[k] * 2`) `d.setdefault(k, f())`: the factory's value where the key is missing, inserted
  as __missing__ does.
- `d = defaultdict(list)` (or `lambda: []`) grown by `d[k].append(v)` / `d[k].extend(vs)`
  statements -> `d[k] = d[k] + [v]` / `+ list(vs)` (after its setdefault): each list is the
  factory's own fresh one, which no other name holds (an item bound to a name, put in a
  display or returned leaves the collection as written).
- `d = {}` grown only by `d.setdefault(k, []).append(v)` (or `.extend(vs)`) statements ->
  `d.setdefault(k, [])` and `d[k] = d[k] + [v]` (each list the setdefault's fresh one).
- `d = OrderedDict(pairs)` -> the dict it builds (a dict keeps its insertion order).
- `dict([(k, v), ...])`, `OrderedDict([(k, v), ...], c=w)` of a display of pairs ->
  `{k: v, ..., 'c': w}`.

Only where the name is a local assigned there once and every use of it is one a dict answers
as the collection does (items read, written, deleted; get/items/keys/values/pop/setdefault/
update; `k in d`; len, sorted, list of it; a for loop over it), each key a pure expression and
each read of an item in a statement's own expressions (not in a lambda, a comprehension, a
conditional part or a while test), but a read there of a key d has (`[d[k] for k in d]`), or
one read as `(d[k] if k in d else f())` where no later read of d could see the key
__missing__ inserts (d read only by its items and setdefault). Anything else (the collection passed on, returned,
`move_to_end`, `default_factory`) is left as written."""
import collections
import copy

import gast

from secant.transformer.hygiene import SCOPES, walk as _walk
from secant.transformer.parse import located

_LATER = (gast.BoolOp, gast.IfExp) + SCOPES
_METHODS = {"get", "items", "keys", "values", "pop", "setdefault", "update"}
_READERS = {"len", "sorted", "list"}
_BLOCKS = ("body", "orelse", "finalbody")
_KINDS = (collections.defaultdict, collections.OrderedDict, dict)
_PURE_KEY = (gast.Name, gast.Constant, gast.Tuple, gast.Load, gast.Attribute, gast.Subscript,
             gast.BinOp, gast.UnaryOp, gast.operator, gast.unaryop, gast.Slice)


def rewrite(d, body):
    census = d.census()
    if census is not None and not any(
            _kind(_callee(d, root, chain)) for root, chain in census.call_chains):
        return body
    made = _made(d, body)
    for name, (stmt, kind, factory) in list(made.items()):
        if not _dict_uses(d.node, name, factory) or kind is not collections.defaultdict \
                and not _pairs(stmt.value):
            del made[name]
    new = _displays(d, body)
    if not made:
        return body if new is None else new
    d.changed = True
    for name, (stmt, kind, factory) in made.items():
        stmt.value = located(_pairs(stmt.value) or gast.Dict(keys=[], values=[]), stmt)
    grown = {name for name, (_, kind, factory) in made.items()
             if kind is collections.defaultdict and _list_factory(d, factory)}
    if grown:       # (the function's tree holds the new statements: container_updates.py
        body = d.node.body = _each_statement(body, _grown(grown))      # reads it for aliases)
    factories = {name: factory for name, (_, kind, factory) in made.items()
                 if kind is collections.defaultdict}
    if factories:       # (d[k] in a comprehension: read where it is)
        later = _LaterReads(factories, d.node)
        body = d.node.body = [later.visit(s) for s in body]
    return _block(body, factories)


def setdefault_growths(d, body):
    """`d.setdefault(k, []).append(v)` statements on a local `d = {}` rewritten as above (d:
    the desugarer); `body` itself where there are none."""
    census = d.census()
    if census is not None and "setdefault" not in census.attributes:
        return body
    stores, empty = _store_counts(d.node), set()
    for s in _statements(body):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Dict) and \
                not s.value.keys:
            empty.add(s.targets[0].id)
    names = {name for name in empty if stores.get(name) == 1 and name not in d.params
             and _grown_by_setdefault(d.node, name)}
    if not names:
        return body
    d.changed = True
    body = d.node.body = _each_statement(body, _setdefault_grown(names))
    return body


def _grown_by_setdefault(fn, name):
    """Whether `name` (a local `{}`) is grown by `name.setdefault(k, []).append(v)` statements
    (a pure key) and otherwise only read, its items handed to no other holder."""
    parents = {}
    for n in _walk(fn):
        for c in gast.iter_child_nodes(n):
            parents[id(c)] = n
    grown = False
    for n in _walk(fn):
        if not (isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)):
            continue
        p = parents.get(id(n))
        if isinstance(p, gast.Attribute) and p.attr == "setdefault":
            call = parents.get(id(p))
            method = parents.get(id(call))
            outer = parents.get(id(method))
            if not (isinstance(call, gast.Call) and call.func is p and len(call.args) == 2
                    and not call.keywords and _pure(call.args[0])
                    and isinstance(call.args[1], gast.List) and not call.args[1].elts
                    and isinstance(method, gast.Attribute) and method.value is call
                    and _setdefault_growth(parents.get(id(outer)), {name}) is not None
                    and not _later(call, parents, fn)):
                return False
            grown = True
            continue
        if isinstance(p, gast.Subscript) and p.value is n:
            if not isinstance(p.ctx, gast.Load) or _changed_in_place(p, parents) or \
                    _bound(p, parents):
                return False
            continue
        if isinstance(p, gast.Attribute) and p.attr in ("items", "keys", "values") and \
                isinstance(parents.get(id(p)), gast.Call):
            continue
        if isinstance(p, gast.Compare) and n in p.comparators or isinstance(p, gast.For) \
                and p.iter is n or isinstance(p, gast.Call) and n in p.args and \
                isinstance(p.func, gast.Name) and p.func.id in _READERS:
            continue
        return False
    return grown


def _setdefault_growth(s, names):
    """For a statement `d.setdefault(k, []).append(v)` (extend) with d in `names`: (d's name,
    the key, the tail it grows by), else None."""
    call = s.value if isinstance(s, gast.Expr) else None
    if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
            and call.func.attr in ("append", "extend") and len(call.args) == 1
            and not call.keywords and not isinstance(call.args[0], gast.Starred)):
        return None
    inner = call.func.value
    if not (isinstance(inner, gast.Call) and isinstance(inner.func, gast.Attribute)
            and inner.func.attr == "setdefault" and isinstance(inner.func.value, gast.Name)
            and inner.func.value.id in names and len(inner.args) == 2):
        return None
    return inner.func.value.id, inner.args[0], _tail(call)


def _setdefault_grown(names):
    """`d.setdefault(k, []).append(v)` -> `d.setdefault(k, [])` / `d[k] = d[k] + [v]` (for
    _each_statement), None for any other statement."""
    def rewrite(s):
        grown = _setdefault_growth(s, names)
        if grown is None:
            return None
        name, key, tail = grown
        item = gast.Subscript(value=gast.Name(name, gast.Load(), None, None),
                              slice=copy.deepcopy(key), ctx=gast.Store())
        return [located(gast.Expr(value=s.value.func.value), s, only_new=True),
                _grown_item(item, tail, s)]
    return rewrite


def _grown_item(item, tail, s):
    """`d[k] = d[k] + tail` at the statement `s` (item: the Store of d[k])."""
    read = gast.Subscript(value=gast.Name(item.value.id, gast.Load(), None, None),
                          slice=copy.deepcopy(item.slice), ctx=gast.Load())
    if getattr(item, "lineno", None) is not None:
        gast.copy_location(read, item)
    return located(gast.Assign(targets=[item], value=gast.BinOp(
        left=read, op=gast.Add(), right=tail), type_comment=None), s, only_new=True)


def _each_statement(body, rewrite):
    """`body` with each statement (in blocks too, not in nested defs and classes) for which
    `rewrite(s)` gives a list replaced by that list."""
    out = []
    for s in body:
        if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            out.append(s)
            continue
        for field in _BLOCKS:
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, _each_statement(getattr(s, field), rewrite))
        for h in getattr(s, "handlers", None) or ():
            h.body = _each_statement(h.body, rewrite)
        new = rewrite(s)
        out += [s] if new is None else new
    return out


def _callee(d, root, chain):
    from secant.transformer.desugar import ANY
    obj = d.module_callee(root, list(chain))
    return None if obj is ANY else obj


def _call_of(d, value):
    """collections.defaultdict / OrderedDict / dict where `value` calls it, else None."""
    if not isinstance(value, gast.Call):
        return None
    f, chain = value.func, []
    while isinstance(f, gast.Attribute):
        chain.insert(0, f.attr)
        f = f.value
    if not isinstance(f, gast.Name):
        return None
    return _kind(_callee(d, f.id, chain))


def _kind(obj):
    return next((c for c in _KINDS if obj is c), None)


def _store_counts(fn_node):
    """{name: how many times the function stores it}; a global or nonlocal counts as stored
    more than once (it may change elsewhere)."""
    stores = {}
    for n in _walk(fn_node):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            for name in n.names:
                stores[name] = 2
    return stores


def _made(d, body):
    """{name: (its assignment, the class, the factory expression or None)} for each local
    assigned a defaultdict(f) / OrderedDict(...) call once and nowhere else."""
    stores, made = _store_counts(d.node), {}
    for s in _statements(body):
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name)):
            continue
        kind = _call_of(d, s.value)
        name = s.targets[0].id
        if kind is None or kind is dict or stores.get(name) != 1 or name in d.params:
            continue
        call = s.value
        if any(isinstance(a, gast.Starred) for a in call.args) or \
                any(k.arg is None for k in call.keywords):
            continue
        factory = None
        if kind is collections.defaultdict:
            if len(call.args) != 1 or call.keywords or not _pure_factory(call.args[0]):
                continue
            factory = call.args[0]
        made[name] = (s, kind, factory)
    return made


def _list_factory(d, factory):
    """Whether the factory is the builtin `list` or `lambda: []` (a fresh empty list)."""
    if isinstance(factory, gast.Lambda):
        return isinstance(factory.body, gast.List) and not factory.body.elts
    return isinstance(factory, gast.Name) and factory.id == "list" and \
        d.src.resolve_name("list")[0] == "builtin"


def _growth(s, names):
    """For a statement `d[k].append(v)` / `d[k].extend(vs)` with d in `names`: (the item
    `d[k]`, the tail `[v]` / `list(vs)` it grows by), else None."""
    call = s.value if isinstance(s, gast.Expr) else None
    if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
            and call.func.attr in ("append", "extend") and len(call.args) == 1
            and not call.keywords and not isinstance(call.args[0], gast.Starred)):
        return None
    item = call.func.value
    if not (isinstance(item, gast.Subscript) and isinstance(item.value, gast.Name)
            and item.value.id in names and not isinstance(item.slice, gast.Slice)):
        return None
    return item, _tail(call)


def _tail(call):
    """`[v]` for `....append(v)`, `list(vs)` for `....extend(vs)`: what the list grows by."""
    if call.func.attr == "append":
        return gast.List(elts=[call.args[0]], ctx=gast.Load())
    return gast.Call(func=gast.Name("list", gast.Load(), None, None), args=call.args,
                     keywords=[])


def _grown(names):
    """`d[k].append(v)` -> `d[k] = d[k] + [v]` (extend: `+ list(vs)`), for _each_statement."""
    def rewrite(s):
        grown = _growth(s, names)
        if grown is None:
            return None
        item, tail = grown
        item.ctx = gast.Store()
        return [_grown_item(item, tail, s)]
    return rewrite


def _pure_factory(node):
    """A factory written as a name, an attribute chain or a lambda with no parameters (called
    again at each missing key, as __missing__ calls it)."""
    if isinstance(node, gast.Lambda):
        a = node.args
        return not (a.args or a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg)
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name)


def _pairs(call):
    """`{k: v, ...}` for a call with no argument, or one display of (k, v) pairs, and
    keywords; else None."""
    if not isinstance(call, gast.Call) or len(call.args) > 1:
        return None
    keys, values = [], []
    if call.args:
        seq = call.args[0]
        if not isinstance(seq, (gast.List, gast.Tuple)):
            return None
        for e in seq.elts:
            if not isinstance(e, (gast.Tuple, gast.List)) or len(e.elts) != 2 or \
                    any(isinstance(x, gast.Starred) for x in e.elts):
                return None
            keys.append(e.elts[0])
            values.append(e.elts[1])
    for k in call.keywords:
        if k.arg is None:
            return None
        keys.append(gast.Constant(k.arg, None))
        values.append(k.value)
    return gast.Dict(keys=keys, values=values)


def _dict_uses(fn, name, factory):
    """Whether every load of `name` in the function is one a dict answers as the collection
    does (and, for a defaultdict, each item read can take its setdefault before it)."""
    parents = {}
    for n in _walk(fn):
        for c in gast.iter_child_nodes(n):
            parents[id(c)] = n
    grown = bound = False
    for n in _walk(fn):
        if not (isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)):
            continue
        p = parents.get(id(n))
        if isinstance(p, gast.Subscript) and p.value is n:
            if factory is not None and not isinstance(p.ctx, gast.Del) and not (
                    isinstance(p.ctx, gast.Store) and not isinstance(parents.get(id(p)),
                                                                     gast.AugAssign)):
                if _later(p, parents, fn) and _read_later(p, parents, fn, name):
                    continue
                if not _pure(p.slice) or _later(p, parents, fn) or _changed_in_place(
                        p, parents) and not _grown_in_place(p, parents, fn):
                    return False
                grown = grown or _grown_in_place(p, parents, fn)
                bound = bound or _bound(p, parents)
            continue
        if isinstance(p, gast.Attribute) and p.value is n and p.attr in _METHODS and \
                isinstance(parents.get(id(p)), gast.Call) and parents[id(p)].func is p:
            continue
        if isinstance(p, gast.Compare) and n in p.comparators and \
                isinstance(p.ops[p.comparators.index(n)], (gast.In, gast.NotIn)):
            continue
        if isinstance(p, gast.Call) and n in p.args and len(p.args) == 1 and \
                isinstance(p.func, gast.Name) and p.func.id in _READERS:
            continue
        if isinstance(p, (gast.For, gast.comprehension)) and p.iter is n:
            continue
        return False
    return not (grown and bound)


def _read_later(item, parents, fn, name):
    """An item read `d[k]` of a defaultdict evaluated only sometimes or elsewhere (in a
    comprehension: `sum(d[k] * x[k] for k in range(3))`) that can be read as `(d[k] if k in d
    else f())` (_LaterReads): the key's presence never observed after (no load of d but its
    items and setdefault), or a key d has (a comprehension over d's own keys)."""
    if not isinstance(item.ctx, gast.Load) or _changed_in_place(item, parents) \
            or not _pure(item.slice):
        return False
    if _own_key(item, parents, fn):
        return True
    for n in _walk(fn):
        if isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load):
            p = parents.get(id(n))
            if not (isinstance(p, gast.Subscript) and p.value is n or isinstance(
                    p, gast.Attribute) and p.attr == "setdefault"):
                return False
    return True


def _own_key(item, parents, fn):
    """`d[k]` in a comprehension one of whose generators takes k from d itself (`for k in d`,
    `sorted(d)`, `d.keys()`), k bound nowhere else in it: a key d has."""
    if not isinstance(item.slice, gast.Name):
        return False
    p = parents.get(id(item))
    while p is not None and p is not fn:
        if isinstance(p, (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)):
            for g in p.generators:
                it = g.iter
                if isinstance(it, gast.Call) and len(it.args) == 1 and not it.keywords \
                        and isinstance(it.func, gast.Name) and it.func.id in ("sorted", "list"):
                    it = it.args[0]
                if isinstance(it, gast.Call) and not it.args and isinstance(
                        it.func, gast.Attribute) and it.func.attr == "keys":
                    it = it.func.value
                if isinstance(g.target, gast.Name) and g.target.id == item.slice.id \
                        and isinstance(it, gast.Name) and it.id == item.value.id:
                    return True
        p = parents.get(id(p))
    return False


class _LaterReads(gast.NodeTransformer):
    """Each item read of a defaultdict `_read_later` allows -> `(d[k] if k in d else f())`
    (a key d has: `d[k]` as written)."""

    def __init__(self, factories, fn):
        self.factories, self.fn, self.parents = factories, fn, {}
        for n in _walk(fn):
            for c in gast.iter_child_nodes(n):
                self.parents[id(c)] = n

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if not (isinstance(node.value, gast.Name) and node.value.id in self.factories
                and id(node) in self.parents and _later(node, self.parents, self.fn)
                and isinstance(node.ctx, gast.Load)) or _own_key(node, self.parents, self.fn):
            return node
        test = gast.Compare(left=copy.deepcopy(node.slice), ops=[gast.In()],
                            comparators=[gast.Name(node.value.id, gast.Load(), None, None)])
        made = gast.Call(func=copy.deepcopy(self.factories[node.value.id]), args=[],
                         keywords=[])
        return located(gast.IfExp(test=test, body=node, orelse=made), node, only_new=True)


def _changed_in_place(item, parents):
    """`d[k].append(v)`, `d[k][i] = v`: an item changed where it is (left as written)."""
    p = parents.get(id(item))
    return isinstance(p, gast.Attribute) or isinstance(p, gast.Subscript) and \
        not isinstance(p.ctx, gast.Load)


def _grown_in_place(item, parents, fn):
    """`d[k].append(v)` / `d[k].extend(vs)` written as a statement (see _grown)."""
    p = parents.get(id(item))
    call = parents.get(id(p))
    return isinstance(p, gast.Attribute) and isinstance(call, gast.Call) and \
        call.func is p and _growth(parents.get(id(call)), {item.value.id}) is not None


def _bound(item, parents):
    """An item handed to another holder (bound to a name, in a display, returned, yielded):
    a growth of it in place would then be seen there too."""
    p = parents.get(id(item))
    return isinstance(p, (gast.Assign, gast.AnnAssign, gast.NamedExpr, gast.Return,
                          gast.Yield, gast.List, gast.Tuple, gast.Set, gast.Dict)) and \
        getattr(p, "targets", None) != [item] and getattr(p, "target", None) is not item


def _pure(key):
    return all(isinstance(m, _PURE_KEY) or isinstance(m, gast.expr_context)
               for m in gast.walk(key))


def _later(node, parents, fn):
    """Whether `node` is evaluated only sometimes or elsewhere (in a lambda, a comprehension,
    a conditional part, a while test) rather than with its statement."""
    child, p = node, parents.get(id(node))
    while p is not None and p is not fn:
        if isinstance(p, _LATER):
            return True
        if isinstance(p, gast.While) and child is p.test:
            return True
        if isinstance(p, gast.stmt):
            return False
        child, p = p, parents.get(id(p))
    return False


def _statements(body):
    for s in body:
        yield s
        if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        for field in _BLOCKS:
            yield from _statements(getattr(s, field, None) or [])
        for h in getattr(s, "handlers", None) or ():
            yield from _statements(h.body)


def _block(body, factories, present=frozenset()):
    """present: (d, k) where the key k (a name) is one of d's: in `for k in d:`."""
    out = []
    for s in body:
        if not isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            inner = present | _keys_iterated(s, factories)
            for field in _BLOCKS:
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, _block(getattr(s, field), factories,
                                             inner if field == "body" else present))
            for h in getattr(s, "handlers", None) or ():
                h.body = _block(h.body, factories, present)
        out += _defaults(s, factories, present) + [s]
    return out


def _keys_iterated(s, factories):
    """{(d, k)} for `for k in d:` / `for k in d.keys():` / `for k, v in d.items():` of a
    defaultdict d, k assigned nowhere in the loop's body: each d[k] there reads a key d has."""
    if not isinstance(s, gast.For):
        return frozenset()
    it, target = s.iter, s.target
    if isinstance(it, gast.Call) and not it.args and isinstance(it.func, gast.Attribute) and \
            it.func.attr in ("keys", "items"):
        if it.func.attr == "items":
            if not (isinstance(target, gast.Tuple) and len(target.elts) == 2):
                return frozenset()
            target = target.elts[0]
        it = it.func.value
    if not (isinstance(it, gast.Name) and it.id in factories and isinstance(target, gast.Name)):
        return frozenset()
    if any(isinstance(n, gast.Name) and n.id == target.id and not isinstance(n.ctx, gast.Load)
           for b in s.body for n in gast.walk(b)):
        return frozenset()
    return frozenset({(it.id, target.id)})


def _defaults(s, factories, present):
    """`d.setdefault(k, f())` for each item of a defaultdict that statement `s`'s own
    expressions read (not its blocks), but one of a key it surely has."""
    heads = [getattr(s, f) for f in ("value", "test", "iter", "target", "targets", "items",
                                     "exc")
             if getattr(s, f, None) is not None]
    if isinstance(s, gast.AugAssign):
        heads = [s.target, s.value]
    out, seen = [], set()
    todo = []
    for h in heads:
        todo.extend(h if isinstance(h, list) else [h])
    reads = []
    while todo:
        n = todo.pop(0)
        if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and \
                n.value.id in factories and (isinstance(n.ctx, gast.Load) or (
                    isinstance(s, gast.AugAssign) and n is s.target)):
            reads.append(n)
        if isinstance(n, SCOPES):
            continue
        todo.extend(gast.iter_child_nodes(n))
    for n in reads:
        if isinstance(n.slice, gast.Name) and (n.value.id, n.slice.id) in present:
            continue
        key = gast.unparse(n.slice).strip()
        if (n.value.id, key) in seen:
            continue
        seen.add((n.value.id, key))
        factory = gast.unparse(factories[n.value.id]).strip()
        if isinstance(factories[n.value.id], gast.Lambda):
            factory = f"({factory})"
        out.append(located(gast.parse(f"{n.value.id}.setdefault({key}, {factory}())").body[0],
                           s))
    return out


def _displays(d, body):
    """`dict([(k, v), ...])` / `OrderedDict(...)` of a display of pairs passed on, anywhere in
    the body's statements: the dict display. None where there is none."""
    changed = False

    class Displays(gast.NodeTransformer):
        def visit_Call(self, node):
            nonlocal changed
            self.generic_visit(node)
            if node.args and _call_of(d, node) is dict and (pairs := _pairs(node)) is not None:
                changed = True
                return located(pairs, node, only_new=True)
            return node
    out = [Displays().visit(s) for s in body]
    if changed:
        d.changed = True
    return out if changed else None

"""Item assignment on a local list or dict, rewritten to rebuild the container (desugar).

`l[i] = v` -> `l = l[:i] + [v] + l[i + 1:]`, `l[i] += v` -> `l = l[:i] + [l[i] + v] + ...`,
`d[k] = v` -> `d = d | {k: v}` (a new key goes last, an old one keeps its place, as Python's
item assignment does). The rebuilt container is a new value, so the rewrite means what Python
means only where no other name can see the old one: `l` is a local bound only to fresh lists
(a display, a comprehension, list(...), a concatenation, [0.0] * n) or fresh dicts, read by
no nested function, and until its last item assignment read only through `l[...]`, `len(l)`,
methods such as l.append(v), and calls that cannot keep it (sum(l), snp.stack(l), print(l));
a loop that assigns its items does not hand it out either. Anything else is left as written,
and the normaliser refuses it. `d.update(...)`, `d.setdefault(k, v)` and `v = d.pop(k)` as
statements rebuild a dict the same way (rewrite_method).
"""
import gast

from secant.transformer.hygiene import SCOPES, walk, walk_scope
from secant.transformer.parse import assign, located

_FRESH_LIST_CALLS = {"list", "sorted"}
_FRESH_DICT_CALLS = {"dict"}
# methods that change or read a list or dict without handing it (or a view of it) out
_IN_PLACE_METHODS = {"append", "extend", "insert", "pop", "index", "count", "get", "copy",
                     "update", "setdefault", "reverse", "sort", "clear"}
# list methods written as a statement that rewrite_method rebuilds the list for
_LIST_REBUILDS = ("insert", "reverse", "sort", "clear")
_LAZY_BUILTINS = {"zip", "enumerate", "reversed", "iter"}
# builtins that read a list without keeping it (lazy ones, enumerate/zip/iter/reversed, keep it)
_READING_BUILTINS = {"len", "sum", "max", "min", "print", "sorted", "list", "tuple", "any", "all",
                     "str", "repr"}


def rewrite(d, s):
    """The statements that replace `s`, an item assignment `name[key] = v` (or `+=`, ...) on a
    local list or dict (d: the desugarer), or None to leave it as written."""
    target = s.targets[0] if isinstance(s, gast.Assign) else s.target
    if isinstance(s, gast.Assign) and len(s.targets) != 1:
        return None
    if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)) or \
            isinstance(target.slice, gast.Slice) or _has_effects(target.slice):
        return None
    name = target.value.id
    if name not in d.updatable:     # read before the first rewrite changes the body
        d.updatable[name] = _kind(d, name) if _unaliased(d, name) else None
    kind = d.updatable[name]
    if kind is None:
        return None
    value = s.value
    if isinstance(s, gast.AugAssign):       # l[i] += v: the item read, then rebound
        value = gast.BinOp(left=gast.Subscript(value=gast.Name(name, gast.Load(), None, None),
                                               slice=target.slice, ctx=gast.Load()),
                           op=s.op, right=value)
    key = gast.unparse(target.slice).strip()
    item = d.names.fresh("item")        # a placeholder for the user's own node (and lines)
    if kind == "dict":
        text = f"{name} = {name} | {{{key}: {item}}}"
    else:
        text = f"{name} = {_rebuilt_list(name, target.slice, key, item)}"
    new = located(gast.parse(text).body[0], s)     # (at the user's line; v keeps its own)
    for n in walk(new.value):
        for field in ("elts", "values"):
            items = getattr(n, field, None) or []
            for k, e in enumerate(items):
                if isinstance(e, gast.Name) and e.id == item:
                    items[k] = value
    d.names.taken.discard(item)
    d.changed = True
    if kind == "dict" or isinstance(s, gast.AugAssign):     # (l[i] += v reads l[i] first)
        return d.statement(new)
    # a rebuilt list would grow where Python's l[i] = v raises: the same IndexError first
    check = located(gast.parse(
        f"if not -len({name}) <= {key} < len({name}):\n"
        f"    raise IndexError('list assignment index out of range')").body[0], s)
    return d.statement(check) + d.statement(new)


def rewrite_method(d, s):
    """The statements that replace `d.update(...)` / `d.setdefault(k, v)` / `[v =] d.pop(k[,
    default])` written as a statement on a local dict no other name sees: `d = d | {...}` /
    `if k not in d: d = d | {k: v}` / `v = d[k]` and `d = {i: d[i] for i in d if i != k}` (the
    arguments evaluated first, once, as the call would; a missing key raises KeyError as pop
    does), or None to leave it as written. `[v =] l.pop([i])` on a local list likewise."""
    call = s.value if isinstance(s, gast.Expr) else None
    popped = None       # v = d.pop(k): the name v
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
            isinstance(s.targets[0], gast.Name):
        call, popped = s.value, s.targets[0].id
    if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
            and isinstance(call.func.value, gast.Name)
            and call.func.attr in (("pop",) if popped else ("update", "setdefault", "pop")
                                   + _LIST_REBUILDS)):
        return None
    name = call.func.value.id
    if name not in d.updatable:
        d.updatable[name] = _kind(d, name) if _unaliased(d, name) else None
    if d.updatable[name] == "list" and call.func.attr == "pop":
        return _rewrite_list_pop(d, s, call, name, popped)
    if call.func.attr in _LIST_REBUILDS:
        return _rewrite_list_method(d, s, call, name) if d.updatable[name] == "list" else None
    if d.updatable[name] != "dict" or any(k.arg is None for k in call.keywords) or \
            any(isinstance(a, gast.Starred) for a in call.args):
        return None
    if call.func.attr == "setdefault" and (len(call.args) != 2 or call.keywords):
        return None
    if call.func.attr == "update" and len(call.args) > 1 or call.func.attr == "pop" and (
            call.keywords or len(call.args) not in (1, 2)):
        return None
    values = []             # (fresh name, the user's node): evaluated first, in order
    for a in call.args + [k.value for k in call.keywords]:
        values.append((d.names.fresh("key" if call.func.attr in ("setdefault", "pop")
                                     and not values else "value"), a))
    names = [v for v, _ in values]
    if call.func.attr == "pop":
        item = d.names.fresh("k")
        kept = f"{name} = {{{item}: {name}[{item}] for {item} in {name} if {item} != {names[0]}}}"
        take = f"{popped} = {name}[{names[0]}]\n    " if popped else ""
        text = f"if {names[0]} in {name}:\n    {take}{kept}\nelse:\n    " + (
            f"{popped} = {names[1]}" if popped and len(names) == 2 else "pass" if len(names) == 2
            else f"raise KeyError({names[0]})")
    elif call.func.attr == "setdefault":
        text = f"if {names[0]} not in {name}:\n    {name} = {name} | {{{names[0]}: {names[1]}}}"
    else:
        given = dict(zip([k.arg for k in call.keywords], names[len(call.args):]))
        parts = [f"dict({names[0]})"] if call.args else []
        if given:
            parts.append("{" + ", ".join(f"{k!r}: {v}" for k, v in given.items()) + "}")
        text = f"{name} = {' | '.join([name] + parts)}"
    out = []
    for v, a in values:     # (the user's argument keeps its own position)
        out.append(assign(v, a, s))
    d.changed = True
    return out + [located(gast.parse(text).body[0], s)]


def _rewrite_list_pop(d, s, call, name, popped):
    """`[v =] l.pop([i])` on a local list: `v = l[i]` and `l = l[:i] + l[i:][1:]` (the index
    evaluated once, first; an empty list or a bad index raises IndexError as pop does)."""
    if call.keywords or len(call.args) > 1 or any(isinstance(a, gast.Starred) for a in call.args) \
            or d.src.generated:     # (a derivative's stacks pop as written: read again, they
        return None                 # stay the lists the reverse pass consumes)
    out = []
    if call.args:
        key = d.names.fresh("index")
        out.append(assign(key, call.args[0], s))
        kept = f"{name}[:{key}] + {name}[{key}:][1:]"
    else:
        key, kept = "-1", f"{name}[:-1]"
    text = f"{popped or d.names.fresh('popped')} = {name}[{key}]\n{name} = {kept}"
    d.changed = True
    return out + [located(stmt, s) for stmt in gast.parse(text).body]


def _rewrite_list_method(d, s, call, name):
    """`l.insert(i, v)` / `l.reverse()` / `l.sort(key=..., reverse=...)` / `l.clear()` on a
    local list: `l = l[:i] + [v] + l[i:]` / `l = l[::-1]` / `l = sorted(l, ...)` / `l = []`
    (the arguments evaluated once, first). Left as a call, the statement ran for its effect,
    which a replay of the function (a callee's forward inside a derivative) skips: the list
    kept its old items there and the derivative was silently wrong."""
    attr = call.func.attr
    if d.src.generated or any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords) or (
            attr == "insert" and (len(call.args) != 2 or call.keywords)) or (
            attr in ("reverse", "clear") and (call.args or call.keywords)) or (
            attr == "sort" and (call.args or any(k.arg not in ("key", "reverse")
                                                 for k in call.keywords))):
        return None
    out = []
    if attr == "insert":
        key, value = d.names.fresh("index"), d.names.fresh("value")
        out += [assign(key, call.args[0], s), assign(value, call.args[1], s)]
        text = f"{name} = {name}[:{key}] + [{value}] + {name}[{key}:]"
    elif attr == "reverse":
        text = f"{name} = {name}[::-1]"
    elif attr == "clear":
        text = f"{name} = []"
    else:
        keys = [d.names.fresh(k.arg) for k in call.keywords]
        out += [assign(v, k.value, s) for v, k in zip(keys, call.keywords)]
        text = f"{name} = sorted({', '.join([name] + [f'{k.arg}={v}' for k, v in zip(call.keywords, keys)])})"
    d.changed = True
    return out + [located(gast.parse(text).body[0], s)]


class _Hoist(gast.NodeTransformer):
    """hoist_pops' walk over one statement's expression: each hoisted `d.pop(k)` (or `l.pop([i])`)
    appended to `pre` as `v = d.pop(k)`, read as `v` where it was."""

    def __init__(self, d, s, pre, root, seen):
        self.d, self.s, self.pre = d, s, pre
        self.root, self.seen = root, seen       # seen: names read so far, in order

    def visit_Call(self, n):
        d, s, pre = self.d, self.s, self.pre
        f = n.func
        if n is not self.root and isinstance(f, gast.Attribute) and f.attr == "pop" and \
                isinstance(f.value, gast.Name) and f.value.id not in self.seen:
            name = f.value.id
            if name not in d.updatable:
                d.updatable[name] = _kind(d, name) if _unaliased(d, name) else None
            kind = d.updatable[name]
            if kind == "dict" or kind == "list" and not n.keywords and len(n.args) <= 1 and \
                    not d.src.generated and not any(isinstance(a, gast.Starred) for a in n.args):
                if not any(isinstance(m, gast.Name) and m.id == name
                           for a in n.args + n.keywords for m in walk(a)):
                    key = n.args[0] if n.args and kind == "dict" else None
                    v = d.names.fresh(key.value if isinstance(key, gast.Constant) and isinstance(
                        key.value, str) and key.value.isidentifier() else "popped")
                    pre.append(assign(v, n, s))
                    return gast.copy_location(gast.Name(v, gast.Load(), None, None), n)
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                f.attr in _IN_PLACE_METHODS and f.value.id not in self.seen:
            # l.append(l.pop() * 2): the receiver is the list itself, whichever binding of it
            # the hoisted pop leaves; it counts as read once its arguments are
            n.args = [self.visit(a) for a in n.args]
            n.keywords = [self.visit(k) for k in n.keywords]
            self.seen.add(f.value.id)
            return n
        return self.generic_visit(n)

    def visit_Name(self, n):
        self.seen.add(n.id)
        return n

    def _keep(self, n):         # evaluated only sometimes, or in a scope of its own
        self.seen.update(m.id for m in walk(n) if isinstance(m, gast.Name))
        return n

    visit_BoolOp = visit_IfExp = visit_Lambda = visit_ListComp = visit_DictComp = _keep
    visit_SetComp = visit_GeneratorExp = _keep


def hoist_pops(d, s):
    """`return d.pop(k) * d["a"]` -> `a = d.pop(k)` before the statement (rewritten by
    rewrite_method), then `return a * d["a"]`: a d.pop(...) inside a larger expression on a local
    dict no other name sees (or a local list's l.pop([i]): `b, a = l.pop(), l.pop()`, a stack), evaluated where nothing before it reads d, and not in a part
    evaluated only sometimes (and/or, x if c else y, a lambda, a comprehension). Returns the
    statements before s (s's expression changed in place), or []."""
    pre = []
    if not isinstance(s, (gast.Return, gast.Assign, gast.AugAssign, gast.Expr, gast.If)):
        return pre
    census = d.census()
    if census is not None and "pop" not in census.attributes:
        return pre          # (no `.pop` anywhere in the function: no walk of the statement)
    expr = s.test if isinstance(s, gast.If) else s.value
    if expr is not None:        # (an augmented target is read first)
        seen = {m.id for m in walk(s.target) if isinstance(m, gast.Name)} \
            if isinstance(s, gast.AugAssign) else set()
        root = expr if isinstance(s, (gast.Expr, gast.Assign)) else None    # (rewrite_method)
        if not any(isinstance(m, gast.Attribute) and m.attr == "pop" for m in walk(expr)):
            return pre      # (no `.pop` to hoist: the common case, without the rewrite's walk)
        new = _Hoist(d, s, pre, root, seen).visit(expr)
        if isinstance(s, gast.If):
            s.test = new
        else:
            s.value = new
    return pre


def _rebuilt_list(name, index, key, item):
    if isinstance(index, gast.Constant) and type(index.value) is int:
        k = index.value
        if k == 0:
            return f"[{item}] + {name}[1:]"
        if k == -1:
            return f"{name}[:-1] + [{item}]"
        return f"{name}[:{k}] + [{item}] + {name}[{k + 1}:]"
    # an index only known when it runs may be negative: l[i:][1:] is right for i == -1 too
    return f"{name}[:{key}] + [{item}] + {name}[{key}:][1:]"


def _has_effects(node):
    """Whether evaluating `node` twice could differ from once (a call, a walrus, a yield)."""
    return any(isinstance(n, (gast.Call, gast.NamedExpr, gast.Yield, gast.YieldFrom, gast.Await))
               for n in walk(node))


def _kind(d, name):
    """"list" or "dict" when every binding of the local `name` is a fresh one of that kind."""
    if name in d.params or name in d.src.closure:
        return None
    kinds, paired = set(), set()
    for n in walk_scope(d.node.body):
        if isinstance(n, (gast.Global, gast.Nonlocal)) and name in n.names:
            return None
        if isinstance(n, gast.Assign) and any(isinstance(t, gast.Name) and t.id == name
                                              for t in n.targets):
            if len(n.targets) != 1:
                return None
            kinds.add(_fresh_kind(n.value))
        elif isinstance(n, gast.Assign) and len(n.targets) == 1 and _pairs(n):
            for t, v in _pairs(n):          # a, b = [], []: each name its own display
                if isinstance(t, gast.Name) and t.id == name:
                    kinds.add(_fresh_kind(v))
                    paired.add(t)
        elif isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, (gast.Store,
                                                                             gast.Del)):
            if n not in paired and not _bound_by_plain_assign(d.node.body, n):
                return None
    return kinds.pop() if len(kinds) == 1 and None not in kinds else None


def _pairs(assign):
    """(target, value) pairs of `a, b = x, y` (displays of one length, nothing starred)."""
    t, v = assign.targets[0], assign.value
    if isinstance(t, (gast.Tuple, gast.List)) and isinstance(v, (gast.Tuple, gast.List)) and \
            len(t.elts) == len(v.elts) and not any(isinstance(e, gast.Starred)
                                                  for e in t.elts + v.elts):
        return list(zip(t.elts, v.elts))
    return []


def _bound_by_plain_assign(body, name_node):
    return any(isinstance(n, gast.Assign) and any(t is name_node for t in n.targets)
               for n in walk_scope(body))


def _fresh_kind(value):
    if isinstance(value, (gast.List, gast.ListComp)):
        return "list"
    if isinstance(value, (gast.Dict, gast.DictComp)):
        return "dict"
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Name):
        if value.func.id in _FRESH_LIST_CALLS:
            return "list"
        if value.func.id in _FRESH_DICT_CALLS:
            return "dict"
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add) and \
            "list" in (_fresh_kind(value.left), _fresh_kind(value.right)):
        return "list"
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.Mult) and \
            "list" in (_fresh_kind(value.left), _fresh_kind(value.right)):
        return "list"                   # [0.0] * n
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.BitOr) and \
            "dict" in (_fresh_kind(value.left), _fresh_kind(value.right)):
        return "dict"
    return None


def _unaliased(d, name):
    """Whether no other name can see `name`'s container when an item assignment changes it."""
    body = d.node.body
    parents = {}
    for n in walk(gast.Module(body=body, type_ignores=[])):
        for c in gast.iter_child_nodes(n):
            parents[c] = n
    methods = ("update", "setdefault", "pop") + _LIST_REBUILDS
    updates = [s for s in walk_scope(body) if isinstance(s, (gast.Assign, gast.AugAssign))
               and _updates(s, name) or _method_update(s, name, methods)
               or "pop" in methods and _method_update(gast.Expr(value=s), name, ("pop",))]
    if not updates:
        return False
    last = max(s.end_lineno for s in updates)
    loops = [s for s in walk_scope(body) if isinstance(s, (gast.For, gast.While))
             and any(u in set(walk_scope(s.body)) for u in updates)]
    for n in walk(gast.Module(body=body, type_ignores=[])):
        if not (isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)):
            continue
        if _in_nested_function(n, parents, generators=n.lineno <= last):
            return False                # (a generator made after the last change sees it)
        parent = parents.get(n)
        if isinstance(parent, gast.Subscript) and parent.value is n:
            continue                    # l[i]: an item read (or the assignment's own target)
        if _read_by_call(d, n, parent) or _iterated(d, n, parents, updates) or \
                isinstance(parent, (gast.If, gast.While, gast.IfExp)) and parent.test is n or \
                isinstance(parent, gast.UnaryOp) and isinstance(parent.op, gast.Not):
            continue                    # (`if l:` reads its truth only)
        if isinstance(parent, gast.Attribute) and parent.attr in _IN_PLACE_METHODS and \
                isinstance(parents.get(parent), gast.Call) and parents[parent].func is parent:
            continue                    # l.append(v): changes l itself, hands nothing out
        if n.lineno <= last or any(n in set(walk(loop)) for loop in loops):
            return False
    return True


def _updates(s, name):
    target = s.targets[0] if isinstance(s, gast.Assign) else s.target
    return isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) and \
        target.value.id == name


def _method_update(s, name, methods):
    """`name.update(...)` / `name.setdefault(...)` written as a statement (`v = name.pop(k)`
    too, `methods` saying which)."""
    call = s.value if isinstance(s, (gast.Expr, gast.Assign)) else None
    return isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and \
        isinstance(call.func.value, gast.Name) and call.func.value.id == name and \
        call.func.attr in methods


def _in_nested_function(n, parents, generators=True):
    eager = (gast.ListComp, gast.SetComp, gast.DictComp) + (() if generators else
                                                             (gast.GeneratorExp,))
    p = parents.get(n)
    while p is not None:
        if isinstance(p, SCOPES) and not isinstance(p, eager):
            return True                 # a def, lambda or generator may read it later
        p = parents.get(p)
    return False


def _iterated(d, n, parents, updates):
    """Whether `n` is read through zip/enumerate/reversed/iter (any nesting) by a reading call
    (`list(zip(a, b))`) or by a for loop whose body changes no container (`for u, v in zip(a,
    b):`): the lazy iterator is used up before any change."""
    node, parent = n, parents.get(n)
    while isinstance(parent, gast.Call) and node in parent.args and \
            isinstance(parent.func, gast.Name) and parent.func.id in _LAZY_BUILTINS and \
            not _is_local(d, parent.func.id) and d.src.resolve_name(parent.func.id)[0] == "builtin":
        node, parent = parent, parents.get(parent)
    if node is n:
        return False
    if isinstance(parent, gast.For) and parent.iter is node:
        inside = set(walk_scope(parent.body))
        return not any(u in inside for u in updates)
    return _read_by_call(d, node, parent)


def _read_by_call(d, n, call):
    """Whether `n` is an argument of a call that reads it without keeping it: len(l),
    sum(l), a NumPy or secant.numpy function (snp.stack(l))."""
    if not (isinstance(call, gast.Call) and n in call.args):
        return False
    func = call.func
    if isinstance(func, gast.Name):
        return func.id in _READING_BUILTINS and not _is_local(d, func.id) and \
            d.src.resolve_name(func.id)[0] == "builtin"
    while isinstance(func, gast.Attribute):
        func = func.value
    if not isinstance(func, gast.Name) or _is_local(d, func.id):
        return False
    module = getattr(d.src.resolve_name(func.id)[1], "__name__", "") or ""
    return module.split(".")[0] == "numpy" or module.startswith("secant.numpy")


def _is_local(d, name):
    return name in d.params or any(isinstance(n, gast.Name) and n.id == name
                                   and isinstance(n.ctx, gast.Store)
                                   for n in walk_scope(d.node.body))

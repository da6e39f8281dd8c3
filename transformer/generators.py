"""Generator functions a transformed function calls -> functions returning what they yield.

`def layers_of(params): ... yield w, b` called in a transformed function (`for w, b in
layers_of(params)`, `list(...)`, `zip(...)`, a comprehension) is read as `layers_of_list`:
the same function with `yielded = []` first, each `yield v` -> `yielded.append(v)`, each
`yield from g` -> `yielded.extend(g)` and each `return` -> `return yielded`, which every
transform reads like any user function (a generator def inside the function: rewritten in
place, its name kept). JAX runs the generator in Python as it traces; here
it runs to the end before its items are used, which differs only for a generator that never
ends or one whose side effects interleave with the loop's (rewrite(): the call sites).
"""
import inspect

from secant.backends.function_cache import FunctionCache
import gast

from secant.backends import once
from secant.codegen.naming import Names
from secant.transformer.hygiene import walk as _walk, walk_scope
from secant.transformer.parse import SourceError, function_source

_cache = FunctionCache("generators")


def rewrite(d, body):
    """`body` (the statements of the function `d` desugars) with each call of a user generator
    function, a pure look-up in the function's environment, calling its list form instead
    (bound in d.lifted, under the name `<name>_list`)."""
    census = d.census()
    for n in _walk(d.node) if census is None or census.has(gast.Yield, gast.YieldFrom) else ():
        if isinstance(n, gast.FunctionDef) and n is not d.node and any(
                isinstance(m, (gast.Yield, gast.YieldFrom)) for m in walk_scope(n.body)):
            to_list(d.src, n)   # (a local generator def: its list form in place)
            d.changed = True
    census = d.census()
    stores = (census.stores if census is not None else {
        m.id for m in _walk(d.node) if isinstance(m, gast.Name)
        and isinstance(m.ctx, (gast.Store, gast.Param))}) | d.params
    for stmt in body:
        for call in _walk(stmt):
            if not isinstance(call, gast.Call) or \
                    not isinstance(call.func, (gast.Name, gast.Attribute)):
                continue
            try:
                obj = d._callee_object(call.func, stores)
            except Exception:       # (a look-up that fails is not one to rewrite here)
                continue
            if not inspect.isgeneratorfunction(obj):
                continue
            listed = as_list(obj)
            if listed is None:
                continue
            name = _bound_name(d, obj, listed)
            call.func = gast.copy_location(gast.Name(name, gast.Load(), None, None), call.func)
            d.changed = True
    return body


def _bound_name(d, obj, listed):
    for name, value in d.lifted.items():
        if value is listed:
            return name
    name = d.names.fresh(f"{obj.__name__}_list")
    d.lifted[name] = listed
    return name


def as_list(fn):
    """The list form of generator function `fn` (cached), or None without its source."""
    hit = _cache.get(fn)
    if hit is not None:
        return hit
    return once.build(_cache, fn, lambda: _as_list(fn))


def _as_list(fn):
    try:
        src = function_source(fn)
    except (SourceError, OSError, TypeError, SyntaxError):
        return None
    node = src.node
    to_list(src, node)
    node.name = f"{node.name}_list"
    from secant.transformer.desugar import _Desugarer      # (which imports this module)
    d = _Desugarer(src, node)
    node.body = d.function(node)
    listed = d.load(fn, node)
    listed.__qualname__ = f"{fn.__qualname__}_list"
    return listed


def to_list(src, node):
    """Generator function `node` (a gast.FunctionDef) rewritten in place to return the list of
    what it yields (a generator that never ends: a SourceError at its endless loop, as running
    it to the end would hang)."""
    endless = _endless_loop(src, node)
    if endless is not None:
        raise src.error(endless, f"generator {node.name} never ends (nothing leaves this loop: "
                        "no break, return or raise): secant runs a generator that a transformed "
                        "function calls to its end before using its items, so a consumer that "
                        "stops early (zip, break, next) does not help; bound the loop (e.g. "
                        "`for i in range(n)`) or pass the items as a list")
    names = Names(m.id for m in _walk(node) if isinstance(m, gast.Name))
    out = names.fresh("yielded")

    def method(name, value, like):
        call = gast.Call(func=gast.Attribute(value=gast.Name(out, gast.Load(), None, None),
                                             attr=name, ctx=gast.Load()),
                         args=[value], keywords=[])
        return _at(like, gast.Expr(value=_at(like, call)))

    def block(stmts):
        new = []
        for s in stmts:
            if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                new.append(s)           # (a scope of its own)
                continue
            if isinstance(s, gast.Expr) and isinstance(s.value, gast.Yield):
                value = s.value.value if s.value.value is not None else \
                    gast.Constant(None, None)
                new.append(method("append", value, s))
                continue
            if isinstance(s, gast.Expr) and isinstance(s.value, gast.YieldFrom):
                new.append(method("extend", s.value.value, s))
                continue
            if isinstance(s, gast.Return):
                new.append(_at(s, gast.Return(value=_at(s, gast.Name(out, gast.Load(), None,
                                                                      None)))))
                continue
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], gast.AST):
                    setattr(s, field, block(inner))
            new.append(s)
        return new

    node.body = block(node.body)
    for n in walk_scope(node.body):
        if isinstance(n, (gast.Yield, gast.YieldFrom, gast.Await)):
            raise src.error(n, "a yield used as a value (a coroutine's send) cannot be "
                            "transformed; yield in a statement of its own")
    first = node.body[0]
    node.body = [_at(first, gast.Assign(targets=[gast.Name(out, gast.Store(), None, None)],
                                        value=gast.List(elts=[], ctx=gast.Load()),
                                        type_comment=None))] + node.body
    if not isinstance(node.body[-1], gast.Return):
        last = node.body[-1]
        node.body.append(_at(last, gast.Return(value=gast.Name(out, gast.Load(), None, None))))


def _endless_loop(src, node):
    """A loop of generator `node` that never ends: `while True:` (a constant true test) or `for
    ... in itertools.count()` (or cycle, or repeat of one argument), with no break of its own,
    no return and no raise in its body; else None."""
    for n in walk_scope(node.body):
        if isinstance(n, gast.While):
            if not (isinstance(n.test, gast.Constant) and n.test.value):
                continue
        elif not (isinstance(n, gast.For) and _endless_iterable(src, n.iter)):
            continue
        if any(isinstance(m, (gast.Return, gast.Raise)) for m in walk_scope(n.body)):
            continue
        if any(isinstance(m, gast.Break) for m in _own_loop_body(n.body)):
            continue
        return n
    return None


def _endless_iterable(src, it):
    if not isinstance(it, gast.Call):
        return False
    func, path = it.func, []
    while isinstance(func, gast.Attribute):
        path.append(func.attr)
        func = func.value
    if not isinstance(func, gast.Name):
        return False
    try:
        obj = src.resolve_name(func.id)[1]
        for attr in reversed(path):
            obj = getattr(obj, attr)
    except Exception:           # (an unknown name: not one known to be endless)
        return False
    import itertools
    return obj in (itertools.count, itertools.cycle) or \
        (obj is itertools.repeat and len(it.args) == 1 and not it.keywords)


def _own_loop_body(stmts):
    """Nodes of a loop body, not descending into nested loops or scopes (its own breaks)."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (gast.For, gast.While, gast.AsyncFor, gast.FunctionDef,
                              gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)):
            stack.extend(gast.iter_child_nodes(n))


def _at(like, node):
    return gast.copy_location(node, like)

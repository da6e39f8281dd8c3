"""`it = iter(xs)` read only by `next(it)` / `next(it, default)` -> a list the calls take from
the front: `it = list(xs)`, and `a = next(it)` -> `a = it[0]` / `it = it[1:]`
(`next(it, d)`: `(it + [d])[0]`, the default where the list is empty), which every transform
follows as it follows any list (issue 15). A next() inside and/or, a conditional expression, a
lambda or a comprehension (evaluated only sometimes), or an iterator read any other way
(passed to a function, returned) is left as written; one for loop or comprehension over it
after every next() (`first = next(it)` / `for v in it:`, at the function's top level) iterates
what is left of the list."""
import copy

import gast

from secant.transformer.hygiene import SCOPES, walk as _walk, walk_scope
from secant.transformer.parse import located

_LATER = (gast.BoolOp, gast.IfExp) + SCOPES     # parts evaluated only sometimes, or elsewhere
_VALUED = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Return)


def rewrite(d, body):
    census = d.census()
    if census is not None and not {"iter", "next"} <= census.names:
        return body
    if d.rebound("iter") or d.rebound("next"):
        return body
    made = _iterators(body)
    if not made:
        return body
    loads = {}
    for n in _walk(d.node):
        if isinstance(n, gast.Name) and n.id in made and not isinstance(n.ctx, gast.Store):
            loads[n.id] = loads.get(n.id, 0) + 1
    taken = [(k, c) for k, s in enumerate(body) for c in _next_calls([s], made)]
    iterated = _iterated(body, made)
    for name in list(made):     # each read of it the first argument of a next() taken here,
        at = [k for k, c in taken if c.args[0].id == name]      # but one read by a loop or a
        loops = iterated.get(name, [])                          # comprehension after them all
        if loads.get(name, 0) != len(at) + len(loops) or len(loops) > 1 or name in d.params \
                or loops and any(k >= loops[0] for k in at):
            del made[name]
    if not made:
        return body
    d.changed = True
    known = {name: len(a.value.args[0].elts) for name, a in made.items()
             if isinstance(a.value.args[0], (gast.List, gast.Tuple))
             and not any(isinstance(e, gast.Starred) for e in a.value.args[0].elts)}
    return _block(d, body, made, known)


def _iterators(body):
    """{name: its assignment} for each name assigned `iter(e)` once and nowhere else."""
    stores, made = {}, {}
    for s in walk_scope(body):
        for n in _walk(s) if isinstance(s, gast.stmt) else ():
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
        if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name) and _is_call(s.value, "iter", 1):
            made[s.targets[0].id] = s
    return {k: v for k, v in made.items() if stores.get(k) == 1}


def _iterated(body, made):
    """{name: [k]}: the top-level statement k of `body` iterates the name as it stands, as a
    for loop's iterable or a comprehension's first (not inside a lambda or a nested def)."""
    out = {}
    for k, s in enumerate(body):
        reads = [s.iter] if isinstance(s, gast.For) else []
        todo = [] if isinstance(s, gast.For) else [s]
        while todo:
            n = todo.pop()
            if isinstance(n, (gast.Lambda, gast.FunctionDef, gast.AsyncFunctionDef,
                              gast.ClassDef)) and n is not s:
                continue
            if isinstance(n, (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)):
                reads.append(n.generators[0].iter)
            todo.extend(gast.iter_child_nodes(n))
        for r in reads:
            if isinstance(r, gast.Name) and r.id in made:
                out.setdefault(r.id, []).append(k)
    return out


def _is_call(n, name, *counts):
    return isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id == name \
        and len(n.args) in counts and not n.keywords \
        and not any(isinstance(a, gast.Starred) for a in n.args)


def _is_next(n, made):
    return _is_call(n, "next", 1, 2) and isinstance(n.args[0], gast.Name) \
        and n.args[0].id in made


def _next_calls(body, made):
    """The next(it) calls of statements' values outside parts evaluated only sometimes."""
    out = []
    for s in _statements(body):
        if isinstance(s, _VALUED) and s.value is not None:
            todo = [s.value]
            while todo:
                n = todo.pop()
                if isinstance(n, _LATER):
                    continue
                if _is_next(n, made):
                    out.append(n)
                todo.extend(gast.iter_child_nodes(n))
    return out


def _statements(body):
    for s in walk_scope(body):
        if isinstance(s, gast.stmt):
            yield s


def _block(d, body, made, known, top=True):
    """known: {name: how many items the list surely holds here} (an iter() of a display, less
    the next() calls at the function's top level), where next(it) needs no exhausted check."""
    out = []
    for s in body:
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list) and \
                    not isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                setattr(s, field, _block(d, getattr(s, field), made, known, False))
        for h in getattr(s, "handlers", None) or ():
            h.body = _block(d, h.body, made, known, False)
        if any(s is a for a in made.values()):
            call = s.value
            call.func = gast.copy_location(gast.Name("list", gast.Load(), None, None), call.func)
            out.append(s)
            continue
        if not isinstance(s, _VALUED) or s.value is None:
            out.append(s)
            continue
        if isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name) and _is_next(s.value, made) \
                and s.targets[0].id != s.value.args[0].id:
            check = _exhausted(s.value, s, known, top)
            s.value = _taken(s.value, s)[0]     # a = next(it): a = it[0]; it = it[1:]
            out += check + [s, _rest(s.value, s)]
            continue
        pre = []

        class Take(gast.NodeTransformer):
            def visit(self, n):
                if isinstance(n, _LATER):
                    return n
                n = self.generic_visit(n)
                if _is_next(n, made):
                    name = d.names.fresh(f"{n.args[0].id}_next")
                    pre.extend(_exhausted(n, s, known, top))
                    first, it = _taken(n, s)
                    pre.append(located(gast.Assign(
                        targets=[gast.Name(name, gast.Store(), None, None)], value=first,
                        type_comment=None), s))
                    pre.append(_rest(first, s))
                    return gast.copy_location(gast.Name(name, gast.Load(), None, None), n)
                return n
        s.value = Take().visit(s.value)
        out += pre + [s]
    return out


def _exhausted(call, like, known, top):
    """`if len(it) == 0: raise StopIteration` before next(it) with no default, where the list may
    be empty: an exhausted iterator's StopIteration, as Python raises it (never it[0]'s
    IndexError)."""
    it = call.args[0].id
    left = known.get(it, 0)
    if top and left:
        known[it] = left - 1
    else:
        known.pop(it, None)     # (a next() in a branch or loop: how many are left is unknown)
    if len(call.args) == 2 or top and left:
        return []
    check = located(gast.parse(f"if len({it}) == 0:\n    raise StopIteration").body[0], like)
    check._secant_exhausted = True      # (caught below, where a try catches StopIteration)
    return [check]


def caught(s, builtin):
    """`try: v = next(it)` / `except StopIteration: H` (one handler, no `as`; StopIteration
    the builtin), the body's exhausted check (above) at its top level: the check's test picks
    the handler, as Python's raise does: `if len(it) == 0: H` / `else:` the rest of the body
    (a later check in a try of its own) and the else: block; then the finally: block. Else
    None."""
    if len(s.handlers) != 1 or not builtin:
        return None
    h = s.handlers[0]
    if h.name is not None or not isinstance(h.type, gast.Name) or h.type.id != "StopIteration":
        return None
    at = next((k for k, t in enumerate(s.body) if getattr(t, "_secant_exhausted", False)), None)
    if at is None:
        return None
    check, rest = s.body[at], s.body[at + 1:]
    if any(getattr(t, "_secant_exhausted", False) for t in rest):
        rest = [gast.copy_location(gast.Try(body=rest, handlers=[copy.deepcopy(h)],
                                            orelse=s.orelse, finalbody=[]), s)]
    else:
        rest = rest + s.orelse
    branch = gast.If(test=check.test, body=h.body, orelse=rest)
    return s.body[:at] + [gast.copy_location(branch, check)] + s.finalbody


def _taken(call, like):
    """next(it) -> it[0]; next(it, d) -> (it + [d])[0]; and it's name."""
    it = call.args[0].id
    seq = gast.Name(it, gast.Load(), None, None)
    if len(call.args) == 2:
        seq = gast.BinOp(left=seq, op=gast.Add(), right=gast.List(
            elts=[call.args[1]], ctx=gast.Load()))
    first = gast.Subscript(value=seq, slice=gast.Constant(0, None), ctx=gast.Load())
    return located(first, like, only_new=True), it


def _rest(first, like):
    """it = it[1:] after first = it[0] (or (it + [d])[0])."""
    seq = first.value if isinstance(first.value, gast.Name) else first.value.left
    return located(gast.Assign(
        targets=[gast.Name(seq.id, gast.Store(), None, None)],
        value=gast.Subscript(value=gast.Name(seq.id, gast.Load(), None, None),
                             slice=gast.Slice(gast.Constant(1, None), None, None),
                             ctx=gast.Load()), type_comment=None), like)


def grouped(call):
    """`zip(*[iter(xs)] * n)` (one iterator shared by zip's n arguments: the items of xs in
    groups of n, an incomplete last group dropped), xs a plain read and n an int constant: the same
    groups as `zip(xs[0::n], xs[1::n], ..., xs[n - 1::n])`, the slices every transform follows
    (their shortest is the number of whole groups); else None."""
    if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], gast.Starred):
        return None
    times = call.args[0].value
    if not isinstance(times, gast.BinOp) or not isinstance(times.op, gast.Mult):
        return None
    seq, n = (times.left, times.right) if isinstance(times.left, gast.List) else \
        (times.right, times.left)
    if not (isinstance(seq, gast.List) and len(seq.elts) == 1 and _is_call(seq.elts[0], "iter", 1)
            and _plain(seq.elts[0].args[0]) and isinstance(n, gast.Constant)
            and type(n.value) is int and 1 <= n.value <= 64):
        return None
    xs = seq.elts[0].args[0]
    args = [gast.Subscript(value=copy.deepcopy(xs), slice=gast.Slice(
        gast.Constant(i, None), None, gast.Constant(n.value, None)), ctx=gast.Load())
        for i in range(n.value)]
    return located(gast.Call(func=call.func, args=args, keywords=[]), call, only_new=True)


def _plain(e):
    """A read evaluated again with no effect: a name, its attributes and items by constants
    (`xs`, `p.rows`, `x[:4]`)."""
    return all(isinstance(m, (gast.Name, gast.Attribute, gast.Subscript, gast.Constant,
                              gast.Slice, gast.UnaryOp, gast.USub, gast.expr_context))
               for m in gast.walk(e))

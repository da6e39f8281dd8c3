"""Statements the canonical form does not have, rewritten by transformer/desugar.py into ones it
has, in the user's names and lines:

- `global G` of a global the function only reads -> dropped (a declaration; reads of G read the
  global either way); one the function assigns keeps the normaliser's error;
- `del t` of local names no later line reads before binding them again -> dropped;
- `for ... else:` / `while ... else:` with no break and no return in the loop -> the loop, then
  the else block (it always runs);
- `match subject:` -> `subject_1 = subject` and an if/elif chain: value patterns (`case 1`,
  `case "a" | "b"`) compare with ==, `None/True/False` with `is`, a capture or `_` always
  matches, a sequence pattern (`case (k, "b")`) checks the type, the length and each item; a
  guard joins the test with `and` (its captured names read as what they capture); a star
  (`case [a, *rest]`), mapping (`case {"k": v}`) or class pattern (`case Cfg(kind="a", n=n)`,
  positional ones through the class's __match_args__) tests the same way;
- `for k, v in enumerate(a, start):` -> `for i, v in enumerate(a):` and `k = i + start`;
- `a, b = zip(*pairs)` of a display of pairs -> `a = (pairs[0][0], pairs[1][0], ...)`, ...
- `a, b = zip(*pairs)` / `for u, v in zip(*pairs):` of a comprehension of k-item displays
  (`[(c * x, d * x) for c, d in cs]`, written in place or bound once to a name) -> `a =
  tuple(pair[0] for pair in pairs)`, ... (the transposition, its items' number known);
- `dot = operator.methodcaller("dot", w)` (`get = operator.itemgetter(k)`) given a value that
  is not a literal -> `dot_arg = w` and `def dot(obj): return obj.dot(dot_arg)` (`get_key = k`,
  `def get(obj): return obj[get_key]`): the call it makes, its arguments read once, where it is
  made (literal ones are read where it is called, transformer/callees.py getter_read).
"""
import copy
import operator

import gast

from secant.transformer.hygiene import walk as _walk
from secant.transformer.parse import located


def rewrite(d, s):
    """The statements `s` becomes, or None when it is not one of the above (d: the
    desugarer, for its names and errors)."""
    if isinstance(s, gast.Global):
        assigned = [n for n in s.names if _stores(d.node, n)]
        if assigned:
            raise d.error(s, f"the global {assigned[0]} is assigned in the function: secant "
                             "cannot transform a function that sets a global; return the "
                             "value instead")
        return []
    if isinstance(s, gast.Delete) and all(isinstance(t, gast.Name) for t in s.targets) \
            and all(_unread_after(d.node, s, t.id) for t in s.targets):
        return []
    if isinstance(s, (gast.For, gast.While)) and s.orelse and not _exits(s.body):
        orelse, s.orelse = s.orelse, []
        return [s] + orelse
    if isinstance(s, gast.Match):
        return match_statement(d, s)
    if isinstance(s, gast.For) and _enumerate_from(d, s.iter) is not None:
        return enumerate_from(d, s)
    if isinstance(s, gast.Assign):
        return unzip(d, s) or transpose(d, s) or getter(d, s)
    if isinstance(s, gast.For):
        return transpose(d, s)
    return None


def _getter_kind(d, call):
    """operator.methodcaller / itemgetter / attrgetter where `call` makes one, else None."""
    if not isinstance(call, gast.Call):
        return None
    f, chain = call.func, []
    while isinstance(f, gast.Attribute):
        chain.insert(0, f.attr)
        f = f.value
    if not isinstance(f, gast.Name) or d._binds_local(f.id):
        return None
    kind = d.module_callee(f.id, chain)
    return kind if kind in (operator.methodcaller, operator.itemgetter,
                            operator.attrgetter) else None


def getter(d, s):
    """`name = operator.methodcaller("m", a, k=b)` / `name = operator.itemgetter(k1, k2)` /
    `name = operator.attrgetter("a.b")` -> the arguments that are not literals bound to fresh
    names, in order, then `def name(obj): return obj.m(name_arg, k=b)` / `... return
    (obj[k1], obj[name_key])` / `... return obj.a.b` (a getter held by a local name, one holding
    a differentiated or batched value too, is a function the transforms read); None for
    anything else."""
    target, call = s.targets[0], s.value
    if len(s.targets) == 1 and isinstance(target, (gast.Tuple, gast.List)) and \
            isinstance(call, gast.Tuple) and len(target.elts) == len(call.elts) and \
            all(isinstance(t, gast.Name) for t in target.elts):
        # get_w, get_b = itemgetter("w"), itemgetter("b"): one getter a name, each made
        # before any is bound (no argument reads a name bound here)
        names = {t.id for t in target.elts}
        if len(names) == len(target.elts) and all(_getter_kind(d, v) is not None and not any(
                isinstance(m, gast.Name) and m.id in names for m in _walk(v)) for v in call.elts):
            return [located(gast.Assign(targets=[t], value=v, type_comment=None), s,
                            only_new=True) for t, v in zip(target.elts, call.elts)]
        return None     # (each read again as its own assignment below)
    kind = _getter_kind(d, call)
    if not (len(s.targets) == 1 and isinstance(target, gast.Name) and kind is not None
            and call.args and not any(isinstance(a, gast.Starred) for a in call.args)
            and all(k.arg is not None for k in call.keywords)):
        return None
    if kind is operator.methodcaller:
        method, args = call.args[0].value, call.args[1:]
        if not (isinstance(method, str) and method.isidentifier()):
            return None
    elif call.keywords or kind is operator.attrgetter and not all(
            isinstance(a, gast.Constant) and isinstance(a.value, str) and all(
                p.isidentifier() for p in a.value.split(".")) for a in call.args):
        return None
    else:
        args = call.args
    name, obj, out = target.id, d.names.fresh("obj"), []
    texts = []      # each argument: its literal, or the fresh name it is bound to first
    for a, k in [(a, None) for a in args] + [(k.value, k.arg) for k in call.keywords]:
        if isinstance(a, gast.Constant):
            texts.append(repr(a.value))
            continue
        hint = k or ("arg" if kind is operator.methodcaller else "key")
        texts.append(d.names.fresh(f"{name}_{hint}"))
        out.append(located(gast.Assign(targets=[gast.Name(texts[-1], gast.Store(), None, None)],
                                       value=a, type_comment=None), s, only_new=True))
    if kind is operator.methodcaller:
        given = texts[:len(args)] + [f"{k.arg}={v}" for k, v in
                                     zip(call.keywords, texts[len(args):])]
        body = f"{obj}.{method}({', '.join(given)})"
    else:
        reads = [f"{obj}[{v}]" if kind is operator.itemgetter else f"{obj}.{a.value}"
                 for v, a in zip(texts, args)]
        body = reads[0] if len(reads) == 1 else f"({', '.join(reads)})"
    made = gast.parse(f"def {name}({obj}):\n    return {body}").body[0]
    return out + [located(made, s)]


def unzip(d, s):
    """`a, b = zip(p0, p1, p2)` (star_calls.py spells out `zip(*pairs)` of a display) where
    each argument's length is static -> `a = (p0[0], p1[0], p2[0])`, `b = (p0[1], ...)`; None
    for anything else."""
    from secant.transformer.star_calls import _fixed_displays
    target, call = s.targets[0], s.value
    if not (len(s.targets) == 1 and isinstance(target, (gast.Tuple, gast.List))
            and all(isinstance(e, gast.Name) for e in target.elts)
            and isinstance(call, gast.Call) and isinstance(call.func, gast.Name)
            and call.func.id == "zip" and not d.rebound("zip") and call.args
            and not call.keywords):
        return None
    displays = _fixed_displays(d.node)

    def length(a):
        shown = a
        if isinstance(a, gast.Subscript) and isinstance(a.value, gast.Name) and \
                isinstance(a.slice, gast.Constant) and type(a.slice.value) is int:
            outer = displays.get(a.value.id)
            items = getattr(outer, "elts", None)
            shown = items[a.slice.value] if items and -len(items) <= a.slice.value < len(
                items) else None
        if isinstance(shown, (gast.Tuple, gast.List)) and \
                not any(isinstance(e, gast.Starred) for e in shown.elts):
            return len(shown.elts)
        return None
    lengths = [length(a) for a in call.args]
    if None in lengths or min(lengths) != len(target.elts) or any(
            isinstance(n, (gast.Call, gast.NamedExpr)) for a in call.args for n in _walk(a)):
        return None
    sources = [gast.unparse(a).strip() for a in call.args]
    out = []
    for j, e in enumerate(target.elts):
        items = ", ".join(f"{src}[{j}]" for src in sources)
        out.append(located(gast.parse(f"{e.id} = ({items},)").body[0], s))
    return out


def _transposed(d, call):
    """For `zip(*rows)` with rows a comprehension whose items are displays of k items (written
    in place, or a local bound once to one), or a display of displays written in place (k:
    the shortest's length, as zip stops there): (rows, k, the display's number of rows or
    None); else None."""
    from secant.transformer.star_calls import _fixed_displays
    if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Name)
            and call.func.id == "zip" and not d.rebound("zip") and len(call.args) == 1
            and isinstance(call.args[0], gast.Starred) and not call.keywords):
        return None
    rows = call.args[0].value
    comp = _fixed_displays(d.node, (gast.ListComp, gast.GeneratorExp)).get(rows.id) \
        if isinstance(rows, gast.Name) else rows
    items = [comp.elt] if isinstance(comp, (gast.ListComp, gast.GeneratorExp)) else \
        comp.elts if isinstance(comp, (gast.List, gast.Tuple)) else []
    if not items or not all(isinstance(e, (gast.Tuple, gast.List)) and e.elts and not any(
            isinstance(v, gast.Starred) for v in e.elts) for e in items):
        return None
    return rows, min(len(e.elts) for e in items), None if getattr(comp, "elt", None) \
        is not None else len(items)


def transpose(d, s):
    """`a, b = zip(*rows)` / `cols = list(zip(*rows))` / `for u, v in zip(*rows):` (see
    _transposed) -> `a = tuple(row[0] for row in rows)`, ... (`cols = [tuple(row[0] ...),
    ...]`, `for u, v in (tuple(row[0] ...), ...):`; `a = (rows[0][0], rows[1][0], ...)` of a
    display), rows built first where it is written in place; None for anything else. (An empty comprehension gives k empty tuples, where
    Python's zip gives none.)"""
    value = s.value if isinstance(s, gast.Assign) else s.iter
    listed = None       # list(zip(*rows)) / tuple(...) bound to one name
    if isinstance(s, gast.Assign) and isinstance(value, gast.Call) and isinstance(
            value.func, gast.Name) and value.func.id in ("list", "tuple") and len(
            value.args) == 1 and not value.keywords and not d.rebound(value.func.id) and \
            len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
        listed, value = value.func.id, value.args[0]
    found = _transposed(d, value)
    if found is None:
        return None
    rows, k, n = found
    if isinstance(s, gast.Assign) and listed is None and not (
            len(s.targets) == 1 and isinstance(s.targets[0], (gast.Tuple, gast.List))
            and len(s.targets[0].elts) == k
            and not any(isinstance(e, gast.Starred) for e in s.targets[0].elts)):
        return None
    out = []
    if not isinstance(rows, gast.Name):
        built = d.names.fresh("pairs" if k == 2 else "rows")
        out.append(located(gast.Assign(targets=[gast.Name(built, gast.Store(), None, None)],
                                       value=rows, type_comment=None), s, only_new=True))
        rows = built
    else:
        rows = rows.id
    if n is None:
        row = d.names.fresh("pair" if k == 2 else "row")
        columns = [f"tuple({row}[{j}] for {row} in {rows})" for j in range(k)]
    else:       # (a display: its rows written out)
        columns = [f"({''.join(f'{rows}[{i}][{j}], ' for i in range(n))})" for j in range(k)]
    shown = f"[{', '.join(columns)}]" if listed == "list" else f"({', '.join(columns)},)"
    if isinstance(s, gast.Assign) and listed is None:
        for e, column in zip(s.targets[0].elts, columns):
            out.append(located(gast.Assign(targets=[e], value=gast.parse(column).body[0].value,
                                           type_comment=None), s))
        return out
    if isinstance(s, gast.Assign):
        s.value = located(gast.parse(shown).body[0].value, s)
    else:
        s.iter = located(gast.parse(shown).body[0].value, s)
    return out + [s]


def _enumerate_from(d, it):
    """The start of `enumerate(a, start)` / `enumerate(a, start=start)` (builtin), else None."""
    if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name)
            and it.func.id == "enumerate" and not d.rebound("enumerate")):
        return None
    if len(it.args) == 2 and not it.keywords:
        return it.args[1]
    if len(it.args) == 1 and len(it.keywords) == 1 and it.keywords[0].arg == "start":
        return it.keywords[0].value
    return None


def enumerate_from(d, s):
    """`for k, v in enumerate(a, 1):` -> `for k_0, v in enumerate(a):` with `k = k_0 + 1`
    first in the body (the start evaluated once, before the loop, as Python does)."""
    start = _enumerate_from(d, s.iter)
    first = d.names.fresh("start")
    before = gast.Assign(targets=[gast.Name(first, gast.Store(), None, None)], value=start,
                         type_comment=None)
    s.iter.args, s.iter.keywords = s.iter.args[:1], []
    index = d.names.fresh("i")
    if isinstance(s.target, (gast.Tuple, gast.List)) and len(s.target.elts) == 2:
        own, s.target.elts[0] = s.target.elts[0], gast.Name(index, gast.Store(), None, None)
        value = gast.parse(f"{index} + {first}").body[0].value
    else:
        own, s.target = s.target, gast.Name(index, gast.Store(), None, None)
        value = gast.parse(f"({index}[0] + {first}, {index}[1])").body[0].value
    s.body = [located(gast.Assign(targets=[own], value=value, type_comment=None), s)] + s.body
    s.target = located(s.target, s)
    before = gast.copy_location(before, s)
    before.end_lineno, before.end_col_offset = s.end_lineno, s.end_col_offset
    before.targets[0] = located(before.targets[0], s)
    return [before, s]


def _unread_after(fnode, s, name):
    """Whether no line after `del name` reads the deleted value: the first later mention of
    name is a plain `name = value` in the del's own block that does not read it (or there is
    none), and no loop holds the del (the next iteration could read it)."""
    parents = {c: n for n in _walk(fnode) for c in gast.iter_child_nodes(n)}
    p = parents.get(s)
    while p is not None and p is not fnode:
        if isinstance(p, (gast.For, gast.While)):
            return False
        p = parents.get(p)
    later = [n for n in _walk(fnode) if isinstance(n, gast.Name) and n.id == name
             and n.lineno > s.end_lineno]
    if not later:
        return True
    first = min(later, key=lambda n: (n.lineno, n.col_offset))
    stmt = parents.get(first)
    while stmt is not None and not isinstance(stmt, gast.stmt):
        stmt = parents.get(stmt)
    block = next((b for f in ("body", "orelse", "finalbody", "cases")
                  for b in [getattr(parents.get(s), f, None) or []] if any(x is s for x in b)),
                 [])
    return isinstance(stmt, gast.Assign) and any(x is stmt for x in block) and \
        any(t is first for t in stmt.targets) and \
        not any(isinstance(m, gast.Name) and m.id == name for m in _walk(stmt.value))


def _stores(node, name):
    return any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Store)
               for n in _walk(node))


def _exits(stmts):
    """Whether a loop body breaks out of its loop or returns (not counting nested loops'
    breaks nor nested functions)."""
    for s in stmts:
        if isinstance(s, (gast.Break, gast.Return)):
            return True
        if isinstance(s, (gast.FunctionDef, gast.ClassDef)):
            continue
        if isinstance(s, (gast.For, gast.While)):
            if any(isinstance(n, gast.Return) for n in _walk(s)):
                return True
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(s, field, None) or []
            inner = [b for h in inner for b in getattr(h, "body", [h])] \
                if field in ("handlers", "cases") else inner
            if _exits(inner):
                return True
    return False


def match_statement(d, s):
    subject = d.names.fresh("subject")
    first = gast.Assign(targets=[gast.Name(subject, gast.Store(), None, None)],
                        value=s.subject, type_comment=None)
    chain = chain_after = []
    for case in reversed(s.cases):
        test, binds = _pattern(d, case.pattern, subject)
        if case.guard is not None:      # (its captured names read as what they capture)
            guard = gast.unparse(_captured(case.guard, dict(binds))).strip()
            test = f"({test}) and ({guard})" if test else guard
        body = [located(gast.parse(f"{name} = {value}").body[0], case.pattern)
                for name, value in binds] + case.body
        if test is None:
            chain = body
        else:
            chain = [located(gast.If(test=gast.parse(test).body[0].value, body=[], orelse=[]),
                             case.pattern)]
            chain[0].body, chain[0].orelse = body, chain_after
        chain_after = chain
    first = gast.copy_location(first, s)
    first.end_lineno, first.end_col_offset = s.end_lineno, s.end_col_offset
    first.targets[0] = located(first.targets[0], s)
    return [first] + chain


_SELF_MATCHING = (bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple)


def _captured(guard, binds):
    """The guard with each name a case captured replaced by the source of what it captures."""
    class Sub(gast.NodeTransformer):
        def visit_Name(self, n):
            if isinstance(n.ctx, gast.Load) and n.id in binds:
                return gast.copy_location(gast.parse(binds[n.id]).body[0].value, n)
            return n
    return Sub().visit(copy.deepcopy(guard))


def _pattern(d, p, value):
    """(the test's source, or None when it always matches; [(name, value source)] it binds)."""
    if isinstance(p, gast.MatchValue):
        return f"{value} == {gast.unparse(p.value).strip()}", []
    if isinstance(p, gast.MatchSingleton):
        return f"{value} is {p.value!r}", []
    if isinstance(p, gast.MatchAs):
        test, binds = (None, []) if p.pattern is None else _pattern(d, p.pattern, value)
        return test, binds + ([(p.name, value)] if p.name else [])
    if isinstance(p, gast.MatchOr):
        parts = [_pattern(d, q, value) for q in p.patterns]
        if any(b for _, b in parts):
            raise d.error(p, "a match or-pattern that captures names cannot be transformed yet")
        if any(t is None for t, _ in parts):
            return None, []
        return " or ".join(f"({t})" for t, _ in parts), []
    if isinstance(p, gast.MatchSequence):
        stars = [i for i, q in enumerate(p.patterns) if isinstance(q, gast.MatchStar)]
        n = len(p.patterns)
        tests = [f"isinstance({value}, (list, tuple))",
                 f"len({value}) >= {n - 1}" if stars else f"len({value}) == {n}"]
        binds = []
        for i, q in enumerate(p.patterns):
            if isinstance(q, gast.MatchStar):       # [first, *rest]: rest = list(v)[1:]
                end = f"len({value}) - {n - 1 - i}" if i < n - 1 else ""
                binds += [(q.name, f"list({value})[{i}:{end}]")] if q.name else []
                continue
            # (after the star: list(v)[-1], an item of a list, as vmap reads it too)
            t, b = _pattern(d, q, f"{value}[{i}]" if not stars or i < stars[0]
                            else f"list({value})[{i - n}]")
            tests += [f"({t})"] if t else []
            binds += b
        return " and ".join(tests), binds
    if isinstance(p, gast.MatchMapping):            # {"kind": k, **rest}
        tests, binds = [f"isinstance({value}, dict)"], []
        keys = [gast.unparse(k).strip() for k in p.keys]
        for key, q in zip(keys, p.patterns):
            tests.append(f"{key} in {value}")
            t, b = _pattern(d, q, f"{value}[{key}]")
            tests += [f"({t})"] if t else []
            binds += b
        if p.rest:
            binds.append((p.rest, f"{{k: v for k, v in {value}.items() "
                                  f"if k not in ({', '.join(keys)}{',' if len(keys) == 1 else ''})}}"))
        return " and ".join(tests), binds
    if isinstance(p, gast.MatchClass):              # Cfg(kind="poly", power=p)
        cls_src = gast.unparse(p.cls).strip()
        tests, binds = [f"isinstance({value}, {cls_src})"], []
        attrs = []
        if p.patterns:
            cls = d._resolved_object(p.cls)
            if cls in _SELF_MATCHING and len(p.patterns) == 1:
                t, b = _pattern(d, p.patterns[0], value)
                tests += [f"({t})"] if t else []
                binds += b
            else:
                names = getattr(cls, "__match_args__", None) if isinstance(cls, type) else None
                if not isinstance(names, tuple) or len(names) < len(p.patterns):
                    raise d.error(p, f"secant cannot read the positional patterns of {cls_src}"
                                     "(...) here: it needs the class's __match_args__ known "
                                     "when the function is transformed; name the fields "
                                     f"({cls_src}(field=...))")
                attrs = list(zip(names, p.patterns))
        attrs += list(zip(p.kwd_attrs, p.kwd_patterns))
        for attr, q in attrs:
            t, b = _pattern(d, q, f"{value}.{attr}")
            tests += [f"({t})"] if t else []
            binds += b
        return " and ".join(tests), binds
    raise d.error(p, f"secant cannot transform this match pattern ({type(p).__name__}) yet; "
                     "use value, capture, or and sequence patterns, or if/elif")

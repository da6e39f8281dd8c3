"""A class defined inside the function (issue 15): `class Acc:` with methods, used to build and
read values. JAX runs the class statement each time it traces; the transforms read the class
the statement makes as they read a module's class (transformer/user_objects.py), so it is made
once, now, from the user's own lines (its methods' source and lines are the user's), and the
statement is dropped: each `Acc(...)` names that class.

Only a class statement at the top of the function's body (run once per call, before any use),
its name bound nowhere else in the function, whose body and methods read no local of the
function (a class closing over `x` is left as written, and the normaliser refuses it)."""
import symtable
import textwrap

import gast

from secant.transformer.hygiene import walk as _walk


def rewrite(d, body):
    """`body` without the class statements made here; each class bound where the function's
    names resolve (d: the desugarer)."""
    if not any(isinstance(s, gast.ClassDef) for s in body):
        return body
    stores = {}
    for n in _walk(d.node):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, (gast.FunctionDef, gast.ClassDef)) and n is not d.node:
            stores[n.name] = stores.get(n.name, 0) + 1
    closing = _closing_classes(d.src)
    out = []
    for s in body:
        if isinstance(s, gast.ClassDef) and stores.get(s.name) == 1 and \
                s.name not in d.params and closing is not None and s.name not in closing:
            cls = _make(d.src, s)
            if cls is not None:
                d.src.imports[s.name] = d.lifted[s.name] = cls
                d.changed = True
                continue
        out.append(s)
    return out


def _closing_classes(src):
    """The names of the function's top-level classes that read one of its locals, or None
    when its source cannot be read that way."""
    try:
        table = symtable.symtable("\n".join(src.lines) + "\n", src.filename, "exec")
        fn = next(t for t in table.get_children() if t.get_type() == "function")
    except (SyntaxError, StopIteration, ValueError):
        return None
    own = set(fn.get_locals()) | set(fn.get_parameters())
    out = set()
    for child in fn.get_children():
        if child.get_type() != "class":
            continue
        todo, frees = [child], set()
        while todo:
            t = todo.pop()
            frees |= {s.get_name() for s in t.get_symbols() if s.is_free()}
            todo.extend(t.get_children())
        if frees & own - {child.get_name()}:      # (its own name: bound here, now)
            out.add(child.get_name())
    return out


def _make(src, node):
    """The class the statement `node` makes, run from the user's lines (so its methods'
    source and line numbers are the user's) in a copy of the function's globals; None when
    it cannot be made now."""
    first = min([node.lineno] + [dec.lineno for dec in node.decorator_list])
    last = getattr(node, "end_lineno", None)
    if last is None:
        return None
    text = textwrap.dedent("\n".join(src.lines[first - 1:last]))
    text = "\n" * (src.first_line + first - 2) + text + "\n"
    scope = dict(src.globals)
    try:
        exec(compile(text, src.filename, "exec", dont_inherit=True), scope)
    except Exception:       # (a base or decorator known only when the function runs)
        return None
    return scope.get(node.name)

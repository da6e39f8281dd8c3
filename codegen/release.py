"""Generated functions drop each local as soon as nothing later reads it.

A Python frame keeps every local alive until the function returns, so an eager gradient would
hold every forward temporary and every cotangent to the end (issue 19: "the eager reverse pass
keeps only live residuals"). The loader compiles the function with a `del` after the top-level
statement that last mentions a local; the text shown (inspect.getsource, secant.source,
tracebacks) stays the generated text, and the `del`s share the line of the statement they
follow, so stepping and tracebacks see the same lines.

Only what is surely safe is released: names bound solely by plain top-level assignments (so
they are bound wherever the `del` runs), never parameters, names a nested function, lambda,
class or comprehension reads (closures), names bound any other way (loop targets, `with`,
`except`, imports, walrus, nested defs, an existing `del`), `global`/`nonlocal` names, or any
name of a function that calls locals(), vars(), dir(), eval(), exec() or breakpoint()."""
import ast

from secant.transformer.hygiene import walk as _walk

_OPAQUE = frozenset(("locals", "vars", "dir", "eval", "exec", "breakpoint"))
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.GeneratorExp,
           ast.ListComp, ast.SetComp, ast.DictComp)
_PLAIN = (ast.Assign, ast.AnnAssign, ast.AugAssign)


def release_dead_names(fdef):
    """A copy of the FunctionDef `fdef` (its statements shared, not copied) with `del name`
    after each local's last top-level mention; `fdef` itself when nothing can be released."""
    body = fdef.body
    args = fdef.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    last, unsafe, plain = {}, set(params), set()
    for k, stmt in enumerate(body):
        for name, kind in _mentions(stmt):
            if kind == "opaque":
                return fdef
            last[name] = k
            if kind == "unsafe":
                unsafe.add(name)
        if isinstance(stmt, _PLAIN):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = _target_names(targets)
            if names is None or isinstance(stmt, ast.AnnAssign) and stmt.value is None:
                unsafe.update(n.id for t in targets for n in _walk(t)
                              if isinstance(n, ast.Name))
            else:
                plain.update(names)
    after = {}
    for name in plain - unsafe:
        k = last[name]
        if k < len(body) - 1 and not isinstance(body[k], (ast.Return, ast.Raise)):
            after.setdefault(k, []).append(name)
    if not after:
        return fdef
    new_body = []
    for k, stmt in enumerate(body):
        new_body.append(stmt)
        if k in after:
            at = dict(lineno=stmt.lineno, col_offset=stmt.col_offset,
                      end_lineno=stmt.lineno, end_col_offset=stmt.col_offset)
            new_body.append(ast.Delete(
                targets=[ast.Name(n, ast.Del(), **at) for n in sorted(after[k])], **at))
    out = type(fdef)(**{f: getattr(fdef, f) for f in fdef._fields})
    out.body = new_body
    ast.copy_location(out, fdef)
    return out


def _target_names(targets):
    """The names plain assignment targets bind (names, tuples and lists of them, starred), or
    None when a target is an attribute or subscript (it reads its base: not a binding)."""
    names = []
    stack = list(targets)
    while stack:
        t = stack.pop()
        if isinstance(t, ast.Name):
            names.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            stack.extend(t.elts)
        elif isinstance(t, ast.Starred):
            stack.append(t.value)
        else:
            return None
    return names


def _mentions(stmt):
    """[(name, kind)] for each name a top-level statement mentions: "unsafe" for a binding that
    is not a plain top-level assignment or for a name read inside a nested scope, "opaque" for
    a call of locals() and the like, else "plain". (One walk, a stack of (node, whether inside
    a nested scope), no generator: every statement of every generated function is read here,
    issue 19; the order of the pairs is no matter to release_dead_names.)"""
    top_plain = isinstance(stmt, _PLAIN)
    AST, Name, Load = ast.AST, ast.Name, ast.Load
    out = []
    add = out.append
    stack = [(stmt, False)]
    pop, push = stack.pop, stack.append
    while stack:
        node, inside = pop()
        kind = type(node)
        if kind is Name:
            if inside:
                add((node.id, "unsafe"))
            elif node.id in _OPAQUE and type(node.ctx) is Load:
                add((node.id, "opaque"))
            elif top_plain or type(node.ctx) is Load:
                add((node.id, "plain"))
            else:
                add((node.id, "unsafe"))
            continue        # (a Name's only child is its context)
        if kind in _SPECIAL:
            if kind in _SCOPES:     # everything it mentions is a closure's (or its own)
                inside = True
            for name in _bound_by(node):
                add((name, "unsafe"))
        d = node.__dict__
        for field in node._fields:
            value = d.get(field)
            if type(value) is list:
                for v in value:
                    if isinstance(v, AST):
                        push((v, inside))
            elif isinstance(value, AST):
                push((value, inside))
    return out


def _bound_by(node):
    """The names a statement or clause other than an assignment binds (or declares)."""
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return node.names
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    name = getattr(node, "name", None)      # except ... as name, case ... as name / *name
    return [name] if name else []


_SPECIAL = frozenset(_SCOPES + (ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom,
                                ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.MatchMapping))

"""A global the function assigns (`global COUNT` / `COUNT = COUNT + 1`, issue 15): JAX runs the
Python function as it traces, so the module's global changes then (once per trace under jit,
once per call eagerly); the transforms read the function with COUNT a local read from the
module where it is read and written where it is assigned:

    write_global("COUNT", read_global("COUNT") + 1)
    return x * read_global("COUNT")

read_global and write_global are constants to every transform (no derivative, no batching):
a write is a call run for its effect, once per call, never again in a derivative's replay,
whose reads (after the writes, as in the user's program) see what the call wrote.
A global that carries a differentiated value is refused there (its derivative would be
dropped). Only where every assignment of the name is the function's own (`G = ...`,
`G += ...`), never a nested function's; anything else keeps the error.

A free variable the function rebinds (`nonlocal n` / `n += 1` in `step`, made by a factory
`make()` and called many times) is its enclosing call's state in the same way: JAX's eager
transforms run the body once per call, so n advances once per call and the result uses the new
n (under jit, once per trace). It is read and written through the function's own closure cell,
as `read_cell("n")` / `write_cell("n", ...)`, with the same rules."""
import ast
import os
import re
import types

import gast

from secant.transformer.hygiene import walk, walk_scope
from secant.transformer.parse import located

def rewrite(d, body):
    """`body` with its own `global` declarations of names it assigns rewritten as above (d: the
    desugarer); `body` itself when there is none."""
    body = _rewrite(d, body, gast.Global, lambda n: True, "global", d.src.globals)
    cells = d.src.cells
    return _rewrite(d, body, gast.Nonlocal, lambda n: n in cells, "cell", _Cells(cells))


def _rewrite(d, body, declaration, known, what, namespace):
    """`body` with the names its `declaration` statements (Global, Nonlocal) declare, that
    `known` accepts and only the function's own statements assign, read and written through
    `namespace` (the module's dict, or _Cells)."""
    declared = [s for s in body if isinstance(s, declaration)]
    if not declared:
        return body
    names = {n for s in declared for n in s.names if known(n) and _writable(d.node, n)}
    if not names:
        return body
    reader, writer = d.names.fresh(f"read_{what}"), d.names.fresh(f"write_{what}")
    d.src.imports[reader] = d.lifted[reader] = _reader(namespace, reader)
    d.src.imports[writer] = d.lifted[writer] = _writer(namespace, writer)
    d.changed = True
    out = []
    for s in body:
        if isinstance(s, declaration):
            s.names = [n for n in s.names if n not in names]
            if not s.names:
                continue
        out.append(s)
    early = sorted(n for n in names if not _settled(out, n))
    if early:       # read before (or between) its writes: a local, read once on entry
        out = _Locals(set(early), writer).visit_body(out)
        out = [located(gast.parse(f"{n} = {reader}({n!r})").body[0], declared[0])
               for n in early] + out
    return _Globals(names - set(early), reader, writer).visit_body(out)


def _settled(body, name, match=None):
    """Whether every read of `name` in `body` (but the one an update `name += v` makes) comes
    after every store of it, none of them in a loop: each read then sees the value the call
    leaves, which a derivative that recomputes the function (its writes left out, as its
    caller's call made them) reads again, the same. `match(node)`: whether a node is the
    state (an attribute `self.calls`), else a Name `name`."""
    order, stores, reads = 0, [], []
    if match is None:
        def match(n):
            return isinstance(n, gast.Name) and n.id == name

    def visit(stmts, loop):
        nonlocal order
        for s in stmts:
            order += 1
            here = order
            if isinstance(s, (gast.For, gast.AsyncFor, gast.While)):
                visit(s.body, True)
                visit(s.orelse, True)
                loop_reads = [n for n in walk_scope([s.iter if not isinstance(s, gast.While)
                                                     else s.test]) if match(n)]
                reads.extend((here, True) for _ in loop_reads)
                continue
            if isinstance(s, (gast.If, gast.With, gast.AsyncWith, gast.Try)):
                head = [s.test] if isinstance(s, gast.If) else [
                    i.context_expr for i in getattr(s, "items", [])]
                reads.extend((here, loop) for n in walk_scope(head) if match(n))
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(s, field, []) or [], loop)
                for h in getattr(s, "handlers", []) or []:
                    visit(h.body, loop)
                continue
            names = [n for n in walk_scope([s]) if match(n)]
            stored = any(not isinstance(n.ctx, gast.Load) for n in names)
            if stored:
                stores.append((order, loop))
                continue        # (its own read of the old value: left out with the write)
            reads.extend((order, loop) for n in names)
    visit(body, False)
    if not stores or not reads:
        return True
    last = max(o for o, _ in stores)
    return not any(loop for _, loop in stores) and all(o > last for o, _ in reads)


class _Locals(gast.NodeTransformer):
    """A global or free variable read before its writes: a local of the function (read once on
    entry), each store of it followed by `write_global('G', G)`, so that every read is a value
    of the function's own data flow, which a derivative keeps (never read again later)."""

    def __init__(self, names, writer):
        self.names, self.writer = names, writer

    def visit_body(self, body):
        out = []
        for s in body:
            got = self.visit(s)
            out.extend(got if isinstance(got, list) else [got])
        return out

    def _stored(self, s):
        target = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 else \
            getattr(s, "target", None) if isinstance(s, gast.AugAssign) else None
        if isinstance(target, gast.Name) and target.id in self.names:
            write = gast.parse(f"{self.writer}({target.id!r}, {target.id})").body[0]
            return [s, located(write, s)]
        return s

    visit_Assign = visit_AugAssign = _stored

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                setattr(node, field, self.visit_body(inner))
        for h in getattr(node, "handlers", None) or []:
            h.body = self.visit_body(h.body)
        return node

    def _scope(self, node):
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _scope


class _Cells:
    """The function's closure cells (name -> cell) read and written as a namespace: the user's
    own cells, so the enclosing function's other closures see what a call wrote."""

    __secant_holds__ = ("cells",)   # (what secant/code_cache.py follows: a derivative that
                                    # holds these is not a template for another closure)

    def __init__(self, cells):
        self.cells = cells

    def __getitem__(self, name):
        try:
            return self.cells[name].cell_contents
        except ValueError:      # (an empty cell: Python's own error)
            raise NameError(f"cannot access free variable {name!r} where it is not "
                            "associated with a value in enclosing scope") from None

    def __setitem__(self, name, value):
        self.cells[name].cell_contents = value


def _writable(fn, name):
    """Whether every store of `name` is one of the function's own statements that assign it
    alone (`G = v`, `G += v`), none in a nested function or class."""
    own = [n for n in walk_scope(fn.body) if isinstance(n, gast.Name) and n.id == name
           and not isinstance(n.ctx, gast.Load)]
    if not own:
        return False
    everywhere = [n for n in gast.walk(fn) if isinstance(n, gast.Name) and n.id == name
                  and not isinstance(n.ctx, gast.Load)]
    if len(everywhere) != len(own):
        return False
    targets = set()
    for s in walk_scope(fn.body):
        if isinstance(s, gast.Assign) and len(s.targets) == 1:
            targets.add(id(s.targets[0]))
        elif isinstance(s, gast.AugAssign):
            targets.add(id(s.target))
    return all(id(n) in targets for n in own)


class _Globals(gast.NodeTransformer):
    """Each read of a global G -> `read_global('G')`, each `G = v` -> `write_global('G', v)`,
    `G += v` -> `write_global('G', read_global('G') + v)` (nested scopes but comprehensions,
    which read the global as the function does, left as they are)."""

    def __init__(self, names, reader, writer):
        self.names, self.reader, self.writer = names, reader, writer

    def visit_body(self, body):
        return [self.visit(s) for s in body]

    def read(self, name, like):
        return located(gast.parse(f"{self.reader}({name!r})").body[0].value, like)

    def visit_Name(self, node):
        if node.id in self.names and isinstance(node.ctx, gast.Load):
            return self.read(node.id, node)
        return node

    def write(self, s, name, value):
        call = located(gast.parse(f"{self.writer}({name!r}, value)").body[0], s)
        call.value.args[1] = value
        return call

    def visit_Assign(self, s):
        target = s.targets[0]
        s.value = self.visit(s.value)
        if len(s.targets) == 1 and isinstance(target, gast.Name) and target.id in self.names:
            return self.write(s, target.id, s.value)
        return self.generic_visit(s)

    def visit_AugAssign(self, s):
        s.value = self.visit(s.value)
        if isinstance(s.target, gast.Name) and s.target.id in self.names:
            value = located(gast.BinOp(left=self.read(s.target.id, s.target), op=s.op,
                                       right=s.value), s, only_new=True)
            return self.write(s, s.target.id, value)
        return self.generic_visit(s)

    def _scope(self, node):
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _scope


def _reader(namespace, name):
    def read_global(name):
        try:
            return namespace[name]
        except KeyError:
            raise NameError(f"name {name!r} is not defined") from None
    read_global.__name__ = read_global.__qualname__ = name
    read_global.__secant_placeholder__ = True     # (a constant: no derivative, no batching)
    return read_global


def _writer(namespace, name):
    def write_global(name, value):
        namespace[name] = value
    write_global.__name__ = write_global.__qualname__ = name
    write_global.__secant_placeholder__ = True
    write_global.__secant_writes_global__ = True    # (a loop that calls it runs as Python)
    return write_global


def rebound_callee(src, name):
    """Whether `name`, read by the function `src` is the source of, is a global of its module
    naming a function (or any callable but a module) that a function of that module assigns
    under a `global` declaration (`global act` / `act = snp.tanh` in a setup the function calls
    first): Python calls what the name holds when the line runs, which a callee may have just
    rebound, so it is left to run time (a call through a name known only then), never resolved
    when the function is transformed. Resolved then, the call that rebinds it would have run
    the old callee and been run again with code generated for the new one: the user's Python
    twice in one call (issue 15, tests/test_effects15b_rebound.py)."""
    if name in src.imports or name in src.closure or src.aliases.get(name, name) != name:
        return False
    value = src.globals.get(name, _NONE)
    if value is _NONE or isinstance(value, types.ModuleType) or not callable(value):
        return False
    return name in declared_global(src.globals)


_NONE = object()
_GLOBAL_WORD = re.compile(rb"\bglobal\b")
_DECLARED = {}      # module file -> ((mtime, size), the names its functions declare global)


def declared_global(namespace):
    """The names a `global` statement of the module whose globals are `namespace` declares
    (read from its file, again when the file changes); none for a module without one."""
    path = namespace.get("__file__")
    if not isinstance(path, str) or not path.endswith(".py"):
        return frozenset()
    try:
        stat = os.stat(path)
    except OSError:
        return frozenset()
    stamp = (stat.st_mtime_ns, stat.st_size)
    hit = _DECLARED.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    try:
        with open(path, "rb") as f:
            text = f.read()
        # (a file without the word declares nothing: not parsed, issue 19; a corpus module's
        # parse was a tenth of its first transform)
        tree = ast.parse(text) if _GLOBAL_WORD.search(text) else None
    except (OSError, SyntaxError, ValueError):
        names = frozenset()
    else:
        names = frozenset() if tree is None else frozenset(
            n for node in walk(tree) if isinstance(node, ast.Global) for n in node.names)
    if len(_DECLARED) > 1024:
        _DECLARED.clear()
    _DECLARED[path] = (stamp, names)
    return names

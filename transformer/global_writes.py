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
`G += ...`), never a nested function's; anything else keeps the error."""
import ast
import os
import types

import gast

from secant.transformer.hygiene import walk_scope
from secant.transformer.parse import located

def rewrite(d, body):
    """`body` with its own `global` declarations of names it assigns rewritten as above (d: the
    desugarer); `body` itself when there is none."""
    declared = [s for s in body if isinstance(s, gast.Global)]
    if not declared:
        return body
    names = {n for s in declared for n in s.names if _writable(d.node, n)}
    if not names:
        return body
    namespace = d.src.globals
    reader, writer = d.names.fresh("read_global"), d.names.fresh("write_global")
    d.src.imports[reader] = d.lifted[reader] = _reader(namespace)
    d.src.imports[writer] = d.lifted[writer] = _writer(namespace)
    d.changed = True
    out = []
    for s in body:
        if isinstance(s, gast.Global):
            s.names = [n for n in s.names if n not in names]
            if not s.names:
                continue
        out.append(s)
    return _Globals(names, reader, writer).visit_body(out)


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


def _reader(namespace):
    def read_global(name):
        try:
            return namespace[name]
        except KeyError:
            raise NameError(f"name {name!r} is not defined") from None
    read_global.__secant_placeholder__ = True     # (a constant: no derivative, no batching)
    return read_global


def _writer(namespace):
    def write_global(name, value):
        namespace[name] = value
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
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        names = frozenset()
    else:
        names = frozenset(n for node in ast.walk(tree) if isinstance(node, ast.Global)
                          for n in node.names)
    if len(_DECLARED) > 1024:
        _DECLARED.clear()
    _DECLARED[path] = (stamp, names)
    return names

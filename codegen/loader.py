"""Generated source -> a real Python function.

The function is compiled from its own text, registered in linecache under a stable
`<secant: NAME>` file name (so inspect.getsource, tracebacks and pdb show it), and built the
way pyct does: free names (secant's API, helpers) become closure cells of a factory, and the
function's globals stay the user module's own dict, never merged. The user's own closure
variables are bound to the user's own cells (`cells`), so the generated function reads them
when it runs, as the user's function does, never a value copied at transform time.
Each generated line can map back to a user line (the origin map) for error messages.
"""
import ast
import linecache
import threading
import types

from secant.backends import errors
from secant.codegen.release import release_dead_names

_counts = {}
_counts_lock = threading.Lock()     # two threads must never get the same file name


def _filename(name):
    with _counts_lock:
        n = _counts.get(name, 0)
        _counts[name] = n + 1
    return f"<secant: {name}>" if n == 0 else f"<secant: {name} #{n + 1}>"


def register(name, source, origins=None):
    """The file name under which `source` is registered (linecache, and its origin map)."""
    filename = _filename(name)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    if origins:
        errors.register_origins(filename, origins)
    return filename


def load(source, name, fn_globals, free, origins=None, tree=None, cells=None):
    """Compile `source` (one `def name(...)`; `tree`, its ast if already parsed) with `free`
    (name -> value) as closure values; the names in `cells` (name -> a cell object, the user's
    own) are bound to those very cells instead."""
    filename = register(name, source)
    tree = tree if tree is not None else ast.parse(source, filename)
    factory = ast.parse(f"def __secant_factory__({', '.join(sorted(free))}):\n    pass\n")
    fdef = factory.body[0]
    fdef.lineno = fdef.end_lineno = 1    # the factory line is invisible: keep user-facing lines
    # (every node placed: `tree` is parsed, release_dead_names places its dels; the return is
    # placed as fix_missing_locations would place it, without walking the whole tree)
    at = {a: getattr(fdef, a) for a in ("lineno", "col_offset", "end_lineno", "end_col_offset")}
    fdef.body = [release_dead_names(s) if isinstance(s, ast.FunctionDef) and s.name == name
                 else s for s in tree.body] + [ast.Return(ast.Name(name, ast.Load(), **at), **at)]
    code = compile(factory, filename, "exec")
    scope = {}
    exec(code, fn_globals, scope)
    fn = scope["__secant_factory__"](*[free[k] for k in sorted(free)])
    if cells and fn.__closure__ and any(k in cells for k in fn.__code__.co_freevars):
        closure = tuple(cells.get(k, c) for k, c in zip(fn.__code__.co_freevars, fn.__closure__))
        own = types.FunctionType(fn.__code__, fn_globals, fn.__name__, fn.__defaults__, closure)
        own.__kwdefaults__ = fn.__kwdefaults__
        fn = own
    if origins:
        errors.register_origins(filename, origins)
    return fn

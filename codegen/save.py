"""Saving a generated function as a standalone Python module.

`save_source(g, path)` writes a file that runs in a fresh interpreter importing only secant (and
NumPy or whatever modules the user's code imports): the imports the code needs, the helpers it
calls (`from secant.ad.helpers import unbroadcast, ...`), the source of every generated function
it calls (a helper's vjp such as `layer_vjp`), the source of the user functions its forward pass
calls (`layer`, read with inspect.getsource), plain constants written with repr, and at the end
the generated function itself under its own name.

What cannot be written as source (a closed-over array, an open file, an object of a user class)
is a SecantError that names the free variable and the function that reads it.
"""
import builtins
import importlib
import inspect
import io
import keyword
import math
import os
import symtable
import sys
import sysconfig
import textwrap
import tokenize

import numpy as np

from secant.backends.errors import SecantError
from secant.transformer.parse import closure_values

_GENERATED_PREFIX = "<secant: "
_MISSING = object()


class SaveError(SecantError):
    """A generated function that cannot be written as a standalone module."""


# --- what kind of value is a free name bound to -------------------------------------------------
def _unwrap(g):
    """The generated function behind what grad/value_and_grad/vjp/jit returned."""
    from secant.api import JitFunction
    seen = 0
    while seen < 20:
        seen += 1
        if isinstance(g, JitFunction):
            g = g._fun
        elif getattr(g, "__secant_generated__", None) is not None:
            g = g.__secant_generated__
        elif getattr(g, "__secant_saves__", None) is not None:   # vjp's pullback: its vjp,
            g = g.__secant_saves__                                 # which takes the primals
        else:
            break
    return g


def _is_generated(fn):
    return (inspect.isfunction(fn) and getattr(fn, "__secant_source__", None) is not None
            and fn.__code__.co_filename.startswith(_GENERATED_PREFIX))


def _library_dirs():
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.abspath(p) + os.sep)
    import secant
    # secant's own sub-packages live at the repository root (secant.ad is ad/, ...)
    root = os.path.dirname(os.path.dirname(os.path.abspath(secant.__file__)))
    for sub in ("secant", "transformer", "ad", "batching", "codegen", "backends"):
        dirs.add(os.path.join(root, sub) + os.sep)
    return tuple(dirs)


def _importable_as(value):
    """(module, attribute path) when `value` can be imported by name, else None."""
    mod = getattr(value, "__module__", None)
    qual = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if isinstance(value, type(math)) or not mod or not qual or "<" in qual:
        return None
    if mod == "__main__":
        return None
    if inspect.isfunction(value):
        # a function from a file the fresh interpreter may not be able to import (the user's
        # script or test module) is copied as source instead
        path = os.path.abspath(inspect.getsourcefile(value) or value.__code__.co_filename)
        if not path.startswith(_library_dirs()):
            return None
    try:
        obj = importlib.import_module(mod)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return (mod, qual) if obj is value else None


def _constant_src(value):
    """Source for a plain constant whose repr reads back as an equal value, else None."""
    plain = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis))
    if isinstance(value, tuple) and type(value) is not tuple:
        return None
    if not isinstance(value, plain + (tuple, frozenset)) or (
            isinstance(value, (tuple, frozenset)) and not all(
                _constant_src(v) is not None for v in value)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    text = repr(value)
    try:
        back = eval(text, {"__builtins__": {}}, {})
    except Exception:       # noqa: BLE001 - any failure means "cannot be written"
        return None
    if type(back) is not type(value) or back != value:
        return None
    return text


# --- source-level helpers -------------------------------------------------------------------------
def _free_names(text):
    """Names a top-level snippet (defs, assignments) reads from its module scope."""
    top = symtable.symtable(text, "<saved>", "exec")
    free = set()

    def visit(table):
        for sym in table.get_symbols():
            name = sym.get_name()
            if table.get_type() == "module":
                if sym.is_referenced() and not sym.is_assigned() and not sym.is_imported():
                    free.add(name)
            elif sym.is_global() and sym.is_referenced():
                free.add(name)
        for child in table.get_children():
            visit(child)
    visit(top)
    assigned = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    return free - assigned, assigned


def _rename(text, mapping):
    """Rename the names in `mapping` (not attributes, not keyword arguments) keeping comments."""
    if not mapping or not any(k != v for k, v in mapping.items()):
        return text
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    edits = []
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.OP:
            depth += tok.string in "([{"
            depth -= tok.string in ")]}"
        if tok.type != tokenize.NAME or tok.string not in mapping:
            continue
        prev = tokens[i - 1] if i else None
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if prev is not None and prev.type == tokenize.OP and prev.string == ".":
            continue
        if depth and nxt is not None and nxt.type == tokenize.OP and nxt.string == "=":
            continue
        edits.append((tok.start, tok.end, mapping[tok.string]))
    lines = text.splitlines(True)
    for (r0, c0), (r1, c1), new in reversed(edits):
        line = lines[r0 - 1]
        lines[r0 - 1] = line[:c0] + new + line[c1:]
    return "".join(lines)


# --- the writer ---------------------------------------------------------------------------------
class _Module:
    def __init__(self):
        self.bound = {}          # module-level name -> value (by identity, or equality for consts)
        self.by_id = {}          # id(value) -> module-level name (functions and modules)
        self.imports = []        # import lines
        self.constants = []      # "name = repr" lines
        self.defs = []           # function sources, dependencies first
        self.aliases = []        # "name = expression" lines that need the defs above them
        self.keep = []           # keep values alive so ids stay unique

    def _fresh(self, base):
        name, k = base, 1
        while name in self.bound or keyword.iskeyword(name):
            k += 1
            name = f"{base}_{k}"
        return name

    def _claim(self, preferred, value):
        """(module-level name for `value`, preferring `preferred`; whether it is new)."""
        if id(value) in self.by_id:
            return self.by_id[id(value)], False
        name = self._fresh(preferred)
        self.bound[name] = value
        self.by_id[id(value)] = name
        self.keep.append(value)
        return name, True

    def bind(self, name, value, reader):
        """Write whatever makes module-level `name` (as `reader` uses it) hold `value`; returns
        the name actually used in the module."""
        if isinstance(value, type(math)):
            return self._bind_module(name, value)
        if _is_generated(value):
            return self._bind_function(name, value, generated=True)
        from secant.api import JitFunction
        if isinstance(value, JitFunction):
            return self._bind_jit(name, value, reader)
        if getattr(value, "__secant_custom__", False):
            return self._bind_custom(name, value, reader)
        where = _importable_as(value)
        if where is not None:
            mod, qual = where
            chosen, new = self._claim(name, value)
            if new:
                if "." in qual:                    # a method or nested attribute
                    head, rest = qual.split(".", 1)
                    self.imports.append(f"from {mod} import {head} as _{head}")
                    self.aliases.append(f"{chosen} = _{head}.{rest}")
                else:
                    alias = "" if chosen == qual else f" as {chosen}"
                    self.imports.append(f"from {mod} import {qual}{alias}")
            return chosen
        if inspect.isfunction(value):
            return self._bind_function(name, value, generated=False)
        if value is np.index_exp:          # (the `.at` rules' index written as a value)
            chosen, new = self._claim(name, value)
            if new:
                alias = "" if chosen == "index_exp" else f" as {chosen}"
                self.imports.append(f"from numpy import index_exp{alias}")
            return chosen
        src = _constant_src(value)
        if src is not None:
            same = self.bound.get(name, _MISSING)
            if type(same) is type(value) and _constant_src(same) == src:
                return name             # the same constant under the same name, written already
            chosen = self._fresh(name)
            self.bound[chosen] = value
            self.keep.append(value)
            self.constants.append(f"{chosen} = {src}")
            return chosen
        raise SaveError(
            f"cannot save {reader}: it reads the free variable {name!r}, a "
            f"{type(value).__module__}.{type(value).__qualname__} that cannot be written as "
            "source (only modules, functions, and constants such as ints, floats, strings and "
            f"tuples of them can); pass {name!r} as an argument instead of closing over it")

    def _bind_module(self, name, mod):
        chosen, new = self._claim(name, mod)
        if new:
            full = mod.__name__
            if chosen == full:
                self.imports.append(f"import {full}")
            elif "." in full and full.rsplit(".", 1)[1] == chosen:
                parent, last = full.rsplit(".", 1)
                self.imports.append(f"from {parent} import {last}")
            else:
                self.imports.append(f"import {full} as {chosen}")
        return chosen

    def _bind_jit(self, name, jitted, reader):
        fn = jitted._fun
        if getattr(jitted, "_static_nums", None) or getattr(jitted, "_static_names", None):
            raise SaveError(f"cannot save {reader}: it calls the jitted function {name!r}, which "
                            "has static arguments; call the plain function there instead")
        if _has_jit_decorator(fn):      # `@secant.jit def f`: its source re-creates the jit
            return self._bind_function(name, fn, generated=False, alias_of=jitted)
        chosen, new = self._claim(name, jitted)
        if new:
            inner = self.bind(fn.__name__, fn, reader)
            secant_name = self._bind_module("secant", sys.modules["secant"])
            self.aliases.append(f"{chosen} = {secant_name}.jit({inner})")
        return chosen

    # a custom_jvp / custom_vjp / custom_vmap object: its function and rules as plain defs, then
    # the object built from them and the rules attached, as the user's decorators did
    _RULES = {"custom_jvp": ("defjvp", ("jvp",)), "custom_vjp": ("defvjp", ("fwd", "bwd")),
              "custom_vmap": ("def_vmap", ("vmap_rule",)), "checkpoint": (None, ())}

    def _bind_custom(self, name, custom, reader):
        chosen, new = self._claim(name, custom)
        if not new:
            return chosen
        kind = type(custom).__name__
        secant_name = self._bind_module("secant", sys.modules["secant"])
        method, attrs = self._RULES[kind]
        rules = [vars(custom).get(a) for a in attrs]
        # the rules first, without their decorators: a generated function (a custom_jvp
        # function's f_fwd, transforms.checked_forward) may call one by name
        names = [self._bind_plain(r.__name__, r, reader) for r in rules] \
            if method and all(r is not None for r in rules) else None
        fun = self._bind_plain(custom.fun.__name__, custom.fun, reader)
        nondiff = getattr(custom, "nondiff_argnums", ())
        options = f", nondiff_argnums={nondiff!r}" if nondiff else ""
        if not getattr(custom, "prevent_cse", True):
            options = ", prevent_cse=False"
        self.aliases.append(f"{chosen} = {secant_name}.{kind}({fun}{options})")
        if names is not None:
            self.aliases.append(f"{chosen}.{method}({', '.join(names)})")
        return chosen

    def _bind_plain(self, name, value, reader):
        """A user function without its decorators (they made the object being rebuilt)."""
        if inspect.isfunction(value) and not _is_generated(value) \
                and _importable_as(value) is None:
            return self._bind_function(name, value, generated=False, plain=True)
        return self.bind(name, value, reader)

    def _bind_function(self, name, fn, generated, alias_of=None, plain=False):
        key = alias_of if alias_of is not None else fn
        chosen, new = self._claim(name, key)
        if not new:
            return chosen
        if generated:
            text = inspect.getsource(fn)
            values = dict(fn.__secant_source__.closure)
            scope = fn.__globals__
        else:
            text = _user_source(fn, plain)
            values = closure_values(fn)
            scope = fn.__globals__
        free, _ = _free_names(text)
        mapping = {fn.__name__: chosen}
        label = f"{'generated function ' if generated else ''}{fn.__qualname__}"
        for free_name in sorted(free):
            if free_name == fn.__name__ and free_name not in values and \
                    scope.get(free_name) in (fn, alias_of):
                continue                                  # recursion: the def's own name
            if free_name in values:
                value = values[free_name]
            elif free_name in scope:
                value = scope[free_name]
            elif hasattr(builtins, free_name):
                continue
            else:
                raise SaveError(f"cannot save {label}: the name {free_name!r} is not defined "
                                "in its module, closure or builtins")
            mapping[free_name] = self.bind(free_name, value, label)
        self.defs.append(_rename(text, mapping).rstrip() + "\n")
        return chosen


def _has_jit_decorator(fn):
    try:
        text = _user_source(fn)
    except SaveError:
        return False
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    return first.startswith("@") and "jit" in first


def _user_source(fn, plain=False):
    """fn's source; `plain`: from its `def` line on, without decorators."""
    try:
        text = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        raise SaveError(f"cannot save {fn.__qualname__}: its source is not available (was it "
                        "defined with exec or at an interactive prompt?)") from None
    if plain and text.lstrip().startswith("@"):
        import ast
        node = ast.parse(text).body[0]
        text = "".join(text.splitlines(True)[node.lineno - 1:])
    if fn.__name__ == "<lambda>":
        raise SaveError(f"cannot save the lambda {fn.__qualname__} defined at "
                        f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}; "
                        "write it with def")
    return text


def module_source(g):
    """The text of the standalone module `save_source` writes for `g`."""
    gen = _unwrap(g)
    if not _is_generated(gen):
        raise SaveError(f"save_source expects a function made by secant.grad, value_and_grad or "
                        f"vjp (or a generated function), got {gen!r}")
    m = _Module()
    name = m._bind_function(gen.__name__, gen, generated=True)
    header = (f'"""{name}: written by secant.save_source.\n\n'
              "A standalone module: import it and call the function, eagerly or under "
              "secant.jit.\n\"\"\"\n")
    imports = _sorted_imports(m.imports)
    parts = [header, "\n".join(imports) + "\n"]
    if m.constants:
        parts.append("\n".join(m.constants) + "\n")
    parts += m.defs[:-1]
    if m.aliases:
        parts.append("\n".join(m.aliases) + "\n")
    parts.append(m.defs[-1])
    return "\n\n".join(p.rstrip("\n") + "\n" for p in parts if p.strip())


def _sorted_imports(lines):
    """`import` lines first, then `from` lines merged per module (secant's first)."""
    plain, froms = [], {}
    for line in lines:
        if line.startswith("from "):
            mod, names = line[5:].split(" import ", 1)
            froms.setdefault(mod, [])
            if names not in froms[mod]:
                froms[mod].append(names)
        elif line not in plain:
            plain.append(line)

    def rank(mod):
        return (0 if mod.split(".")[0] != "secant" else 1, mod)
    plain.sort(key=lambda line: rank(line.split()[1]))
    out = list(plain)
    for mod in sorted(froms, key=rank):
        line = f"from {mod} import {', '.join(sorted(froms[mod]))}"
        if len(line) > 99:
            body = textwrap.fill(", ".join(sorted(froms[mod])), 95, initial_indent="    ",
                                 subsequent_indent="    ")
            line = f"from {mod} import (\n{body},\n)"
        out.append(line)
    return out


def save_source(g, path):
    """Write `g` (what secant.grad/value_and_grad/vjp return, or a generated function) as a
    standalone module at `path`; returns the path."""
    name = getattr(_unwrap(g), "__name__", repr(g))
    try:
        text = module_source(g)
    except SaveError as e:
        raise SaveError(f"{e} (saving {name} to {str(path)!r})") from None
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise SaveError(f"cannot save {name} to {str(path)!r}: {_os_reason(e, path)}") \
            from None
    return path


def _os_reason(e, path):
    """Why `open(path, "w")` failed, in words that say what to change."""
    folder = os.path.dirname(os.path.abspath(path))
    if isinstance(e, FileNotFoundError) and not os.path.isdir(folder):
        return f"the directory {folder!r} does not exist (create it first)"
    if isinstance(e, IsADirectoryError):
        return "it is a directory; give a file name such as 'f_grad.py'"
    if isinstance(e, PermissionError):
        return f"permission denied (is {folder!r} or the file read-only?)"
    return e.strerror or str(e)

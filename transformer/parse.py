"""Source retrieval: a Python function -> its gast FunctionDef, file, line numbers and scope.

The source read is the function's own (its code object's file and first line; `__wrapped__`
is never followed). Closure values are read at transform time to resolve callees; every
resolution that decides what the generated code calls is recorded (`resolutions`), so a cached
derivative can tell when a cell or global it resolved now holds something else. The generated
code itself reads the user's closure cells and module globals when it runs (codegen/loader.py
binds the user's own cells), never values frozen at transform time.
"""
import ast
import builtins
import copy
import dis
import inspect
import linecache
import os
import re
import textwrap
import types
import weakref

import gast

from secant.backends import errors as _errors
from secant.transformer import gast_parse
from secant.transformer.hygiene import copy_tree

from secant.backends.errors import (ConcretizationTypeError, NonConcreteBooleanIndexError,
                                    SecantError, TracerArrayConversionError,
                                    TracerBoolConversionError, TracerIntegerConversionError,
                                    origin)


class SourceError(SecantError):
    """A function secant cannot read or cannot transform, with the user's file and line."""


class ArgumentSourceError(SourceError, TypeError):
    """A call with arguments its callee does not take (Python's TypeError), found in the
    source."""


class BoolConversionSourceError(SourceError, TracerBoolConversionError):
    """bool() of a differentiated or batched value, found in the source."""


class IntegerConversionSourceError(SourceError, TracerIntegerConversionError):
    """int()/range()/operator.index() of a differentiated or batched value."""


class ConcretizationSourceError(SourceError, ConcretizationTypeError):
    """float()/complex() of a differentiated or batched value."""


class ArrayConversionSourceError(SourceError, TracerArrayConversionError):
    """buf[i] = x storing a differentiated or batched value into a container built from
    constants (a NumPy work array): NumPy would convert the traced value."""


class BooleanIndexSourceError(SourceError, NonConcreteBooleanIndexError):
    """x[mask] with a batched boolean mask: the result's shape differs per example."""


def conversion_error(callee):
    """The error class for a Python conversion builtin applied to a tracked value, as JAX raises
    it for a tracer; None for any other callee."""
    import operator
    for fns, cls in (((bool,), BoolConversionSourceError),
                     ((int, range, operator.index), IntegerConversionSourceError),
                     ((float, complex), ConcretizationSourceError)):
        if any(callee is f for f in fns):
            return cls
    return None


class FunctionSource:
    """A function's syntax tree plus what name resolution needs."""

    def __init__(self, fn, node, filename, first_line, lines, globals_, closure, indent=0,
                 generated=None):
        self.fn = fn
        self.indent = indent          # columns removed by dedenting the source
        self.node = node              # gast.FunctionDef; its linenos count from 1 at first_line
        #                               (or a function making it, called on first use)
        self.filename = filename
        self.first_line = first_line
        self.lines = lines            # the function's own source lines
        self.globals = globals_
        self.closure = closure        # free variable name -> value
        self.imports = {}             # name an import inside the function binds -> its object
        self.resolutions = {}         # (name, attribute chain) -> what it resolved to
        self.aliases = {}             # placeholder -> the user's name (transformer/hygiene.py)
        # secant's own derivative code (stacks, generated names), not the user's code rewritten
        # (desugared, functionalised, traced) that is loaded under a `<secant: ...>` name too
        self.generated = filename.startswith("<secant") if generated is None else generated

    @property
    def cells(self):
        """Free variable name -> the function's own closure cell (live, never a copy)."""
        code = getattr(self.fn, "__code__", None)
        if code is None:
            return {}
        return dict(zip(code.co_freevars, self.fn.__closure__ or ()))

    @property
    def node(self):
        node = self._node
        if callable(node):              # built lazily (generated code a transform may never read)
            node = self._node = node()
        return node

    @node.setter
    def node(self, value):
        self._node = value

    @property
    def name(self):
        return self.node.name

    def file_line(self, node):
        """The line in this function's file of a node of this tree."""
        return self.first_line + getattr(node, "lineno", 1) - 1

    def user_position(self, node):
        """(file, line) in the user's own source: generated code (a functionalised function)
        maps back through the origin map."""
        return origin(self.filename, self.file_line(node))

    def line_text(self, node):
        filename, line = self.user_position(node)
        if filename != self.filename:
            return linecache.getline(filename, line).strip()
        i = getattr(node, "lineno", 1) - 1
        return self.lines[i].strip() if 0 <= i < len(self.lines) else ""

    def error(self, node, message, cls=SourceError):
        filename, line = self.user_position(node)
        if _errors._is_internal(os.path.abspath(filename)):     # secant's own source (a library
            here = _errors.where()                              # function's, passed directly
            if here:                                            # to a transform): the user's
                return cls(f"{message}\n  (in secant's {self._fn_name()}){here}")  # call site
        at = f"{filename}:{line}"
        if filename == self.filename:
            at += f":{getattr(node, 'col_offset', 0) + 1 + self.indent}"
        return cls(f"{message}\n  at {at}\n    {self.line_text(node)}")

    def _fn_name(self):
        fn = getattr(self.fn, "__wrapped__", self.fn)
        mod = (getattr(fn, "__module__", None) or "").replace("secant.lax_control_flow", "secant.lax")
        return ".".join(p for p in (mod, getattr(fn, "__name__", "")) if p) or "function"

    def resolve_name(self, name):
        """(kind, value) for a free name: 'closure', 'global', 'builtin'; ('unbound', None)."""
        kind, value = self._lookup(name)
        self.resolutions.setdefault((self.aliases.get(name, name), ()), (kind, value))
        return kind, value

    def _lookup(self, name):
        if name in self.imports:
            return "import", self.imports[name]
        name = self.aliases.get(name, name)
        if name in self.closure:
            return "closure", self.closure[name]
        if name in self.globals:
            return "global", self.globals[name]
        if hasattr(builtins, name):
            return "builtin", getattr(builtins, name)
        return "unbound", None

    def note(self, name, chain, value):
        """Records that `name.chain...` resolved to `value` (a callee, say) at transform time."""
        self.resolutions.setdefault((self.aliases.get(name, name), tuple(chain)), (None, value))

    def guards(self):
        """A Guard over every resolution recorded so far."""
        return Guard(self, dict(self.resolutions))


_MISSING = object()


class Guard:
    """What a derivative assumed about the names its source resolved at transform time (a
    callee in a closure cell or a global): `holds()` re-reads each one where Python would
    (the same cell, the module dict, builtins) and compares identities. A derivative whose
    guard no longer holds is generated again (secant/transforms.py), never called stale."""

    def __init__(self, src, resolutions):
        cells = src.cells
        self.checks = []
        for (name, chain), (_, value) in resolutions.items():
            kind = resolutions.get((name, ()), ("unbound",))[0]
            if kind == "unbound" and name in cells and not chain:
                # a cell not filled yet (a class defined after the function): generated again
                self.checks.append((cells[name], src.globals, name, (), _MISSING))  # once it is
                continue
            if kind in ("unbound", "import") or kind == "closure" and name not in cells:
                continue        # (a value secant itself bound: it cannot change)
            cell = cells.get(name) if kind == "closure" else None
            check = (cell, src.globals, name, chain, value)
            if _same(_read(check), value):      # (a look-up that makes a new object each
                self.checks.append(check)       # time, a property, cannot be guarded)

    def holds(self):
        for check in self.checks:       # (a loop: every eager call of a derivative asks)
            now = _read(check)
            if now is not check[-1] and not _same(now, check[-1]):
                return False
        return True


def _read(check):
    """What the name and attribute chain of a check name now, read where Python reads it."""
    cell, globals_, name, chain, _ = check
    if cell is not None:
        try:
            obj = cell.cell_contents
        except ValueError:
            return _MISSING
    else:
        obj = globals_.get(name, _MISSING)
        if obj is _MISSING:
            obj = getattr(builtins, name, _MISSING)
    for attr in chain:
        try:
            obj = getattr(obj, attr, _MISSING)
        except Exception:
            return _MISSING
    return obj


def _same(a, b):
    """The same object, or the same bound method (each attribute read makes a new one)."""
    if a is b:
        return True
    return inspect.ismethod(a) and inspect.ismethod(b) and a.__self__ is b.__self__ \
        and a.__func__ is b.__func__


class NoSourceError(SourceError):
    """A function with no source file (exec, the interactive prompt, python -c): the
    transforms trace it instead (transformer/trace_source.py)."""


class StaleSourceError(SourceError):
    """The text at a function's file and line is not the source of its live code object (the
    file was edited after the function was defined)."""

    def __init__(self, fn):
        code = fn.__code__
        super().__init__(f"the source of {fn.__qualname__} at {code.co_filename}:"
                         f"{code.co_firstlineno} does not match the function that is running "
                         "(was the file changed since it was imported?); reload the module "
                         "(importlib.reload) so the running function and its file agree")


def closure_values(fn):
    """Free variable name -> the value its cell holds now (transform time), and the names
    non-literal defaults are read under (default_values)."""
    code = fn.__code__
    cells = fn.__closure__ or ()
    out = default_values(fn) if getattr(fn, "__secant_source__", None) is None else {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:      # a cell not filled yet (recursive definition): leave it unbound
            pass
    return out


def _lambda_node(fn, tree, first_line=1, indent=0, shift=0):
    """The Lambda node of `fn` in `tree` (the parsed source lines of its statement).

    Matched by the positions of the lambda's code (Python 3.11's co_positions) against each
    Lambda node's body, so two lambdas on one line with the same parameters
    (`lax.cond(p, lambda v: v * 2, lambda v: v - 1, x)`) are told apart; by parameter names
    when positions are not available."""
    lambdas = [n for n in gast.walk(tree) if isinstance(n, gast.Lambda)]
    argnames = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    matches = [n for n in lambdas if [a.id for a in n.args.args] == argnames]
    if len(matches) > 1:
        matches = _by_position(fn, matches, first_line, indent, shift) or matches
    if len(matches) > 1:        # the one whose compiled code is fn's
        matches = [n for n in matches if compiles_to(fn, n)] or matches
    if not matches or not compiles_to(fn, matches[0]):
        raise StaleSourceError(fn)
    if len(matches) != 1:
        raise SourceError(f"cannot find the source of lambda {fn.__qualname__} unambiguously "
                          f"(several lambdas on one line?); use a def instead")
    return lambda_function_node(matches[0])


def _by_position(fn, lambdas, first_line, indent, shift):
    """The lambdas whose body holds the most instruction positions of fn's code (innermost)."""
    positions = getattr(fn.__code__, "co_positions", None)
    if positions is None:
        return []
    points = {(line, col) for line, _, col, _ in positions()
              if line is not None and col is not None}

    def absolute(line, col):
        return first_line + line - 1, col + indent - (shift if line == 1 else 0)

    scored = []
    for lam in lambdas:
        body = lam.body
        start = absolute(body.lineno, body.col_offset)
        end = absolute(body.end_lineno, body.end_col_offset)
        hits = sum(start <= p < end or p == start for p in points)
        if hits:
            scored.append((-hits, end[0] - start[0], end[1] - start[1], id(lam), lam))
    scored.sort(key=lambda t: t[:3])
    if not scored or len(scored) > 1 and scored[0][:3] == scored[1][:3]:
        return []
    return [scored[0][-1]]


_FUTURE_FLAGS = 0
for _feature in __import__("__future__").all_feature_names:
    _FUTURE_FLAGS |= getattr(__import__("__future__"), _feature).compiler_flag
_verified = {}          # (code object, source text) -> whether the text compiles to the code


def _code_key(code, prefix=""):
    """What a code object computes (not where it sits): its instructions with their arguments
    (jump targets as instruction indices; LOAD_METHOD read as LOAD_ATTR, since the compiler
    picks one by whether the module imported the name; no CACHE or EXTENDED_ARG), names and
    constants."""
    ins, index, pending = [], {}, []
    for i in dis.get_instructions(code):
        if i.opname in ("CACHE", "EXTENDED_ARG", "PUSH_NULL"):   # (offsets, call plumbing)
            pending.append(i.offset)
            continue
        for offset in pending + [i.offset]:
            index[offset] = len(ins)
        pending = []
        ins.append(i)
    out = []
    for i in ins:
        if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs:
            arg = index.get(i.argval)
        elif inspect.iscode(i.argval):
            arg = _code_key(i.argval, prefix)
        elif isinstance(i.argval, str):     # a nested def's or class's qualified name: its
            arg = i.argval                  # part inside the function
            if prefix and arg.startswith(prefix):
                arg = "<in>." + arg[len(prefix):]
        else:
            arg = (type(i.argval).__name__, repr(i.argval))
        out.append(({"LOAD_METHOD": "LOAD_ATTR"}.get(i.opname, i.opname), arg))
    return (tuple(out), code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount)


def _same_code(a, b):
    """Whether code objects `a` and `b` are byte for byte the same program, with the same names
    and constants (the common case of compiles_to, without walking the instructions)."""
    if (a.co_code != b.co_code or a.co_names != b.co_names or a.co_varnames != b.co_varnames
            or a.co_freevars != b.co_freevars or a.co_cellvars != b.co_cellvars
            or a.co_argcount != b.co_argcount or a.co_posonlyargcount != b.co_posonlyargcount
            or a.co_kwonlyargcount != b.co_kwonlyargcount
            or len(a.co_consts) != len(b.co_consts)):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if inspect.iscode(x):
            if not (inspect.iscode(y) and _same_code(x, y)):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):
            return False
    return True


def _imported_modules(fn):
    """The global names `fn`'s code (nested code too) reads that name modules."""
    names, todo = set(), [fn.__code__]
    while todo:
        code = todo.pop()
        names.update(code.co_names)
        todo.extend(c for c in code.co_consts if inspect.iscode(c))
    glob = getattr(fn, "__globals__", {})
    return sorted(n for n in names if isinstance(glob.get(n), types.ModuleType)
                  and n.isidentifier())     # (not pytest's `@pytest_ar` of a test module)


def compiles_to(fn, node, source=None):
    """Whether `node` (the gast FunctionDef or Lambda read for `fn`) is the source of fn's live
    code: compiled with fn's free variables as the enclosing function's locals and fn's future
    flags, it must give the same bytecode, names and constants. A file edited after import
    (or any source that does not belong to the code object) fails this. `source`: the text
    whose first statement `node` is, when there is one (parsed again with `ast`, it is much
    cheaper than converting a copy of the gast tree)."""
    code = fn.__code__
    text = ("source", source) if source is not None else gast.dump(node)
    hit = _verified.get((code, text))
    if hit is not None:
        return hit
    try:
        if source is not None and not code.co_freevars and isinstance(node, gast.FunctionDef):
            # (the common case, a def at module level: its text and the imports compiled as
            # they are, not parsed into a tree first, issue 19; decorators are compiled into
            # the module's code, never the function's)
            imports = "".join(f"import {n}\n" for n in _imported_modules(fn))
            compiled = compile(source.rstrip("\n") + "\n" + imports, code.co_filename, "exec",
                               flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
            if _compiled_to(compiled, fn, f"{code.co_name}.<locals>.", (code, text)):
                return True     # (else asked again the way below, which compares a tree)
        inner = (ast.parse(source).body[0] if source is not None
                 else gast.gast_to_ast(node))   # (a new tree: node itself is left as it is)
        if isinstance(inner, ast.FunctionDef):
            inner.decorator_list = []
            stmt = inner
        else:
            stmt = ast.Return(value=inner)
        if code.co_freevars:    # compiled inside a function whose locals they are
            setup = [ast.Assign(targets=[ast.Name(v, ast.Store())], value=ast.Constant(None))
                     for v in code.co_freevars]
            outer = ast.FunctionDef(name="__secant_outer__", args=ast.arguments(
                posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                kwarg=None, defaults=[]), body=setup + [stmt] + [ast.Return(ast.Constant(None))],
                decorator_list=[], returns=None, type_params=[])
            body, mine = [outer], f"__secant_outer__.<locals>.{code.co_name}.<locals>."
        else:       # at module level (inside a function, its own name would be a free one)
            body = [stmt if stmt is inner and isinstance(inner, ast.FunctionDef)
                    else ast.Expr(value=inner)]
            mine = f"{code.co_name}.<locals>."
        # the module's imports, as the compiler saw them: `snp.sin(x)` on an imported name
        # compiles to other bytes (LOAD_ATTR, not LOAD_METHOD) than on any other name; so the
        # common case needs no instruction by instruction comparison (never run, only compiled)
        body += [ast.Import(names=[ast.alias(name=n)]) for n in _imported_modules(fn)]
        module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
        if "@pytest_ar" in getattr(fn, "__globals__", {}) and any(
                isinstance(n, ast.Assert) for n in ast.walk(module)):
            _pytest_asserts(module)     # a test module pytest imported: asserts as it compiles them
        compiled = compile(module, code.co_filename, "exec",
                           flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
        if code.co_freevars:
            compiled = next(c for c in compiled.co_consts if inspect.iscode(c))
    except (SyntaxError, ValueError, TypeError, StopIteration):
        _verified[(code, text)] = False
        return False
    return _compiled_to(compiled, fn, mine, (code, text))


def _pytest_asserts(module):
    """The asserts in `module` rewritten as pytest rewrites those of the test modules it
    imports (a function defined in a test file, with an assert, is then not read as stale)."""
    try:
        from _pytest.assertion.rewrite import rewrite_asserts
    except ImportError:
        return
    try:
        rewrite_asserts(module, ast.unparse(module).encode(), module_path="<secant>")
    except Exception:       # (pytest's own internals: the source then reads as stale, as before)
        return
    for n in ast.walk(module):      # (its new nodes' positions need not be valid ranges; the
        for attr in ("lineno", "end_lineno", "col_offset", "end_col_offset"):  # comparison
            if attr in getattr(n, "__dict__", ()):                           # reads no line)
                delattr(n, attr)
    ast.fix_missing_locations(module)


def _compiled_to(compiled, fn, mine, key):
    """Whether the module (or enclosing function) code `compiled` defines fn's code (recorded
    in _verified under `key`)."""
    code = fn.__code__
    try:
        candidates = [c for c in compiled.co_consts
                      if inspect.iscode(c) and c.co_name == code.co_name]
        same = any(_same_code(c, code) for c in candidates)
        if not same:    # (the same computation in other bytes: compared instruction by instruction)
            want = _code_key(code, f"{fn.__qualname__}.<locals>.")
            same = any(_code_key(c, mine) == want for c in candidates)
    except (SyntaxError, ValueError, TypeError, StopIteration):
        same = False
    _verified[key] = same
    return same


def located(node, like, only_new=False):
    """`node` with every statement and expression in it (only_new: those without a position
    yet) at the source position of the user's `like` (so errors in code secant wrote name the
    user's line)."""
    for m in gast.walk(node):
        placed = getattr(m, "lineno", None) is not None
        if isinstance(m, (gast.stmt, gast.expr)) and not (only_new and placed):
            gast.copy_location(m, like)
            m.end_lineno = getattr(like, "end_lineno", m.lineno)
            m.end_col_offset = getattr(like, "end_col_offset", m.col_offset)
    return node


def assign(target, value, like):
    """`target = value` at the position of the user's statement `like` (`value` keeps its own
    position); target: a name or a Store node."""
    if isinstance(target, str):
        target = gast.Name(target, gast.Store(), None, None)
    return located(gast.Assign(targets=[target], value=value, type_comment=None), like,
                   only_new=True)


def lambda_function_node(lam, name="lambda_", extra_params=()):
    """A FunctionDef `def name(<lambda's params>, *extra_params): return <lambda's body>` with
    the lambda's source positions (its lines are the user's)."""
    ret = gast.Return(value=lam.body)
    gast.copy_location(ret, lam.body)
    args = copy.copy(lam.args)
    args.args = list(lam.args.args) + [gast.Name(p, gast.Param(), None, None)
                                       for p in extra_params]
    node = gast.FunctionDef(name=name, args=args, body=[ret], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])
    gast.copy_location(node, lam)
    return node


def opaque(wrapper, why):
    """`wrapper` (made with functools.wraps) without the attributes it copied from the
    function it wraps, so no transform reads that function in its place; a transform of it
    raises `why` (function_source)."""
    for attr in [a for a in vars(wrapper) if a.startswith("__secant_")] + ["__wrapped__"]:
        if attr in vars(wrapper):
            delattr(wrapper, attr)
    wrapper.__secant_opaque__ = why
    return wrapper


# code object -> (its file, lines, first line): the source text verified to compile to it, read
# once (inspect's block finding tokenizes the whole function each time)
_source_lines = weakref.WeakKeyDictionary()


def source_verified(fn):
    """Whether function_source already read `fn`'s source and found it to be its code's."""
    code = getattr(fn, "__code__", None)
    known = _source_lines.get(code) if code is not None else None
    return known is not None and known[0] == code.co_filename


_DEF_LINE = re.compile(r'^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)')


def _source_of(fn):
    """inspect.getsourcelines(fn.__code__): (the lines of fn's def or lambda, its first line),
    with fn's globals as the module linecache may ask for the text. (inspect searches
    sys.modules for the module of a code object: 10 ms and more in a fresh process, then about
    0.5 ms each time; issue 19.)"""
    code = fn.__code__
    file = inspect.getsourcefile(code)
    if file:
        linecache.checkcache(file)
    else:
        file = inspect.getfile(code)
        if not (file.startswith("<") and file.endswith(">")):
            raise OSError("source code not available")
    lines = linecache.getlines(file, fn.__globals__)
    if not lines:
        raise OSError("could not get source code")
    lnum = code.co_firstlineno - 1
    while lnum > 0:         # (as inspect.findsource: up to the def, lambda or decorator line)
        if lnum >= len(lines):
            raise OSError("lineno is out of bounds")
        if _DEF_LINE.match(lines[lnum]):
            break
        lnum -= 1
    return _def_block(lines, lnum) or inspect.getblock(lines[lnum:]), lnum + 1


def _def_block(lines, lnum):
    """inspect.getblock(lines[lnum:]) for a plain `def` at lines[lnum], read from indentation
    (getblock tokenizes: its first use in a process compiles tokenize's patterns, ~2 ms of a
    first call; issue 19), or None where that reading is not sure. The block is the def's line
    and every following line up to the first, not blank and no comment, indented no deeper than
    the def, less trailing blank lines and comments no deeper than the def. Cut inside a bracket, a string or after a
    backslash, the block does not parse; where it parses, the cut starts a statement at the
    def's indentation, where tokenize ends the block too."""
    head = lines[lnum]
    stripped = head.lstrip(" ")
    if not (stripped.startswith("def ") or stripped.startswith("async def ")):
        return None
    indent = len(head) - len(stripped)
    end = lnum + 1
    for end in range(lnum + 1, len(lines) + 1):
        if end == len(lines):
            break
        line = lines[end]
        body = line.lstrip(" ")
        if body and body[0] not in "#\r\n" and len(line) - len(body) <= indent:
            break
    block = lines[lnum:end]
    while len(block) > 1:       # (trailing comments no deeper than the def are not its)
        body = block[-1].lstrip(" ")
        if body[:1] not in ("\r", "\n", "") and not (
                body[:1] == "#" and len(block[-1]) - len(body) <= indent):
            break
        block.pop()
    if len(block) > 1 and block[-1].lstrip(" ")[:1] == "#":
        return None     # (a deeper trailing comment: getblock keeps those indented as the body)
    text = "".join(block)
    if "\t" in text or "\f" in text:
        return None
    text = textwrap.dedent(text)
    try:
        tree = compile(text, "<block>", "exec", ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError, Warning):     # (a warning raised: getblock decides)
        return None
    _checked[text] = tree       # (function_source parses this very text next: _parsed_text)
    if len(_checked) > 8:
        del _checked[next(iter(_checked))]
    return block


_checked = {}       # dedented text _def_block parsed -> its ast tree, until _parsed_text reads it


_parsed_texts = {}      # a function's source text -> its tree, never handed out (copies are)


def _parsed_text(text):
    """gast_parse.parse(text), a tree of the caller's own: a transform reads a function's source
    more than once (desugar.py, then normalize.py), and a copy of the tree parsed before costs a
    quarter of parsing it again (issue 19: transformation time)."""
    tree = _parsed_texts.pop(text, None)
    if tree is None:
        checked = _checked.pop(text, None)      # (the tree _def_block parsed to check it)
        tree = gast_parse.parse(text) if checked is None else gast_parse.to_gast(checked)
    _parsed_texts[text] = tree              # (the most recent last)
    if len(_parsed_texts) > 64:
        del _parsed_texts[next(iter(_parsed_texts))]
    return copy_tree(tree)


def function_source(fn):
    """Read, dedent and parse `fn` (generated functions carry their source already)."""
    attached = getattr(fn, "__secant_source__", None)
    if attached is not None:
        return attached
    if getattr(fn, "__secant_opaque__", None):    # a wrapper with no source of its own
        raise getattr(fn, "__secant_source_error__", None) or SourceError(
            fn.__secant_opaque__ + _errors.where())
    if not inspect.isfunction(fn):
        raise SourceError(f"cannot transform {fn!r}: only Python functions defined with def or "
                          "lambda have source to transform (builtins and C functions do not)"
                          + _errors.where())
    known = _source_lines.get(fn.__code__)     # (equal code objects of two files: the file's)
    known = known[1:] if known is not None and known[0] == fn.__code__.co_filename else None
    try:        # the function's own code, never what `__wrapped__` points to (a decorator's)
        lines, first_line = known or _source_of(fn)
    except (OSError, TypeError) as e:
        raise NoSourceError(f"cannot transform {fn.__qualname__}: its source is not available "
                            f"({e}); define it in a file, not in an interactive prompt") from None
    text = textwrap.dedent("".join(lines))
    filename = inspect.getsourcefile(fn.__code__) or fn.__code__.co_filename
    if fn.__code__.co_name == "<lambda>":
        common = min((len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()), default=0)
        try:
            tree, shift = gast_parse.parse(text), 0
        except SyntaxError:     # a lambda inside a call that spans lines: parse it alone
            try:
                stripped = text.strip().rstrip(",")
                tree = gast_parse.parse("(" + stripped + ")")
                shift = 1 - (len(text) - len(text.lstrip()))   # columns added on line 1
            except SyntaxError:     # a lambda inside a longer statement: read the whole file
                lines = linecache.getlines(filename)
                try:
                    tree = gast_parse.parse("".join(lines))
                except SyntaxError:
                    raise SourceError(f"cannot parse the source of lambda at {filename}:"
                                      f"{first_line}; use a def instead") from None
                text, first_line, common, shift = "".join(lines), 1, 0, 0
        node = _lambda_node(fn, tree, first_line, common, shift)
    else:
        tree = _parsed_text(text)
        node = tree.body[0]
        # generated text secant registered (compiled with releases: codegen/release.py), or
        # secant's own library source (read by source, never edited while it runs): not stale
        ours = filename.startswith("<secant") or (fn.__module__ or "").split(".")[0] == "secant"
        if isinstance(node, gast.FunctionDef) and not ours and not compiles_to(fn, node, text) \
                or not isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
            raise StaleSourceError(fn)
        if known is None and isinstance(node, gast.FunctionDef):
            _source_lines[fn.__code__] = (fn.__code__.co_filename, lines, first_line)
        if not isinstance(node, gast.FunctionDef):
            what = "async def" if isinstance(node, gast.AsyncFunctionDef) else type(node).__name__
            raise SourceError(f"cannot transform {fn.__qualname__}: {what} is not supported\n"
                              f"  at {filename}:{first_line}")
    node.decorator_list = []
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    _bind_defaults(fn, node)
    return FunctionSource(fn, node, filename, first_line, text.splitlines(), fn.__globals__,
                          closure_values(fn), indent)


def default_values(fn):
    """Bound name -> value for each default of `fn` that is not a literal: Python evaluated it
    once, where `fn` was defined (`lambda a, o=o: ...` in a loop), so generated code must not
    evaluate its text again; it reads the value under a name of its own (`o_default`)."""
    if not inspect.isfunction(fn):
        return {}
    code = fn.__code__
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    positional = params[:code.co_argcount]
    values = dict(zip(positional[len(positional) - len(fn.__defaults__ or ()):],
                      fn.__defaults__ or ()))
    values.update(fn.__kwdefaults__ or {})
    taken = set(code.co_names) | set(code.co_varnames) | set(code.co_freevars)
    out = {}
    for p, v in values.items():
        if _is_literal(v):
            continue
        name = f"{p}_default"
        while name in taken:
            name += "_"
        taken.add(name)
        out[name] = v
    return out


def _is_literal(value):
    try:
        return type(value) in (int, float, complex, str, bool, bytes, type(None), tuple) and \
            ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _bind_defaults(fn, node):
    """Rewrite node's defaults as their live values: a literal as itself (`o=2`), anything else
    as the name default_values(fn) binds it to."""
    names = iter(default_values(fn))
    a = node.args
    params = [p.id for p in a.posonlyargs + a.args]
    values = dict(zip(params[len(params) - len(fn.__defaults__ or ()):], fn.__defaults__ or ()))
    values.update(fn.__kwdefaults__ or {})

    def live(p, d):
        if d is None or p not in values:
            return d
        v = values[p]
        new = gast.parse(repr(v), mode="eval").body if _is_literal(v) else \
            gast.Name(next(names), gast.Load(), None, None)
        return gast.copy_location(new, d)
    a.defaults = [live(p, d) for p, d in zip(params[len(params) - len(a.defaults):], a.defaults)]
    a.kw_defaults = [live(p.id, d) for p, d in zip(a.kwonlyargs, a.kw_defaults)]

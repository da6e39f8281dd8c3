"""Source retrieval: a Python function -> its gast FunctionDef, file, line numbers and scope.

Closures are read at transform time (free variable -> current cell value); globals stay the
function's own module dict, never merged with anything (generated code runs in them too).
"""
import builtins
import inspect
import textwrap

import gast

from secant.backends.errors import SecantError


class SourceError(SecantError):
    """A function secant cannot read or cannot transform, with the user's file and line."""


class FunctionSource:
    """A function's syntax tree plus what name resolution needs."""

    def __init__(self, fn, node, filename, first_line, lines, globals_, closure, indent=0):
        self.fn = fn
        self.indent = indent          # columns removed by dedenting the source
        self.node = node              # gast.FunctionDef; its linenos count from 1 at first_line
        self.filename = filename
        self.first_line = first_line
        self.lines = lines            # the function's own source lines
        self.globals = globals_
        self.closure = closure        # free variable name -> value

    @property
    def name(self):
        return self.node.name

    def file_line(self, node):
        """The line in the user's file of a node of this tree."""
        return self.first_line + getattr(node, "lineno", 1) - 1

    def line_text(self, node):
        i = getattr(node, "lineno", 1) - 1
        return self.lines[i].strip() if 0 <= i < len(self.lines) else ""

    def error(self, node, message):
        line, col = self.file_line(node), getattr(node, "col_offset", 0) + 1 + self.indent
        return SourceError(f"{message}\n  at {self.filename}:{line}:{col}\n    {self.line_text(node)}")

    def resolve_name(self, name):
        """(kind, value) for a free name: 'closure', 'global', 'builtin'; ('unbound', None)."""
        if name in self.closure:
            return "closure", self.closure[name]
        if name in self.globals:
            return "global", self.globals[name]
        if hasattr(builtins, name):
            return "builtin", getattr(builtins, name)
        return "unbound", None


def _closure_values(fn):
    code = fn.__code__
    cells = fn.__closure__ or ()
    out = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:      # a cell not filled yet (recursive definition): leave it unbound
            pass
    return out


def _lambda_node(fn, tree):
    lambdas = [n for n in gast.walk(tree) if isinstance(n, gast.Lambda)]
    argnames = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
    matches = [n for n in lambdas if [a.id for a in n.args.args] == argnames]
    if len(matches) != 1:
        raise SourceError(f"cannot find the source of lambda {fn.__qualname__} unambiguously "
                          f"(several lambdas on one line?); use a def instead")
    lam = matches[0]
    ret = gast.Return(value=lam.body)
    gast.copy_location(ret, lam.body)
    node = gast.FunctionDef(name="lambda_", args=lam.args, body=[ret], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])
    gast.copy_location(node, lam)
    return node


def function_source(fn):
    """Read, dedent and parse `fn` (generated functions carry their source already)."""
    attached = getattr(fn, "__secant_source__", None)
    if attached is not None:
        return attached
    if not inspect.isfunction(fn):
        raise SourceError(f"cannot transform {fn!r}: only Python functions defined with def or "
                          "lambda have source to transform (builtins and C functions do not)")
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise SourceError(f"cannot transform {fn.__qualname__}: its source is not available "
                          f"({e}); define it in a file, not in an interactive prompt") from None
    text = textwrap.dedent("".join(lines))
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    if fn.__name__ == "<lambda>":
        try:
            tree = gast.parse(text)
        except SyntaxError:     # a lambda inside a call that spans lines: parse it alone
            try:
                tree = gast.parse("(" + text.strip().rstrip(",") + ")")
            except SyntaxError:
                raise SourceError(f"cannot parse the source of lambda at {filename}:{first_line}; "
                                  "use a def instead") from None
        node = _lambda_node(fn, tree)
    else:
        tree = gast.parse(text)
        node = tree.body[0]
        if not isinstance(node, gast.FunctionDef):
            what = "async def" if isinstance(node, gast.AsyncFunctionDef) else type(node).__name__
            raise SourceError(f"cannot transform {fn.__qualname__}: {what} is not supported\n"
                              f"  at {filename}:{first_line}")
    node.decorator_list = []
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    return FunctionSource(fn, node, filename, first_line, text.splitlines(), fn.__globals__,
                          _closure_values(fn), indent)

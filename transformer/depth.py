"""Deeply nested user expressions: room for the transformer to recurse, and a clear error where
there is none.

The transformer's passes (gast's conversion of the parsed tree, the visitors of desugar,
functionalize and normalize) recurse once per nesting level of an expression, about four Python
frames per level: `x + x + ... + x` with 1,500 terms needs a recursion limit of ~6,200, more
than Python's default 1,000, while Python itself compiles ~3 levels per unit of the limit (a
file of 2,987 terms imports at the default limit). `room()` raises the limit to `LIMIT` while a
transform runs, so every expression a file can hold at the default limit (up to ~3,800 terms)
is transformed (measured: 5,000 terms transform, 12,000 do not); `guard(fn, build)` turns
what remains into a `NestingError` naming the user's line. A pass whose depth comes from the
user's code must raise that, never RecursionError.
"""
import ast
import contextlib
import inspect
import sys
import textwrap
import threading

from secant.backends.errors import SecantError

# The recursion limit while a transform runs: ~16,000 Python frames stay far inside the C stack
# of a main thread or a default (8 MiB) thread on Python 3.11, whose Python-to-Python calls
# do not recurse in C (measured: 3,700 terms transform and jit with no crash).
LIMIT = 16000

_lock = threading.Lock()
_state = {"inside": 0, "restore": None}


class NestingError(SecantError):
    """An expression nested more deeply than the transformer can read."""


@contextlib.contextmanager
def room():
    """Raise the recursion limit to LIMIT (never lower it) until the outermost `room` exits;
    nested and concurrent uses share one raise, restored by the last to leave."""
    with _lock:
        if _state["inside"] == 0:
            old = sys.getrecursionlimit()
            _state["restore"] = old if old < LIMIT else None
            if old < LIMIT:
                sys.setrecursionlimit(LIMIT)
        _state["inside"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["inside"] -= 1
            old = _state["restore"]
            if _state["inside"] == 0 and old is not None and sys.getrecursionlimit() == LIMIT:
                try:
                    sys.setrecursionlimit(old)
                except RecursionError:      # this thread is deeper than `old` now: keep LIMIT
                    pass


def guard(fn, build):
    """`build()` with room to recurse; a RecursionError out of it is a NestingError naming the
    deepest expression of `fn` (the function being read)."""
    with room():
        try:
            return build()
        except RecursionError:
            err = nesting_error(fn)
    raise err from None


def nesting_error(fn):
    """The error for a transform of `fn` that ran out of recursion: names the statement of `fn`
    whose expression is nested deepest (file:line), or fn's first line."""
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    filename = code.co_filename if code is not None else "<unknown>"
    line, depth, text = (code.co_firstlineno if code is not None else 0), 0, ""
    try:
        lines, first = inspect.getsourcelines(code)
        filename = inspect.getsourcefile(code) or filename
        tree = ast.parse(textwrap.dedent("".join(lines)))
        depth, at = _deepest(tree)
        if at is not None:
            line = first + at - 1
            text = lines[at - 1].strip()
    except (OSError, TypeError, SyntaxError, RecursionError, MemoryError, ValueError):
        pass
    if depth >= 100:
        what = (f"an expression of {name} is nested {depth} levels deep (a chain such as "
                "x + x + ... counts one level per operator), more than secant's transforms can "
                f"read within Python's recursion limit ({LIMIT} frames, about "
                f"{LIMIT // 4} levels); split it into several statements (s = x + x; "
                "s = s + x ...) or a loop")
    else:
        what = (f"transforming {name} exceeded Python's recursion limit ({LIMIT} frames) "
                "inside secant")
    shown = f"\n    {text[:200]}" + (" ..." if len(text) > 200 else "") if text else ""
    return NestingError(f"{what}\n  at {filename}:{line}{shown}")


def _deepest(tree):
    """(depth, line) of the most deeply nested expression below one statement, walked with an
    explicit stack (a recursive walk would fail on exactly these trees)."""
    best, best_line = 0, None
    stack = [(tree, 0, None)]
    while stack:
        node, depth, line = stack.pop()
        if isinstance(node, ast.stmt):
            depth, line = 0, node.lineno
        elif depth > best and line is not None:
            best, best_line = depth, line
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + 1, line))
    return best, best_line

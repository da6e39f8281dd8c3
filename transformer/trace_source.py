"""Source for a function that has none: trace it once into straight-line Python.

A function defined in `exec`, at the interactive prompt or with `python -c` has no file to
read, and one whose file was edited after import has the wrong text there
(parse.StaleSourceError). Such a function is run once with recording values in place of its
parameters, with the modules and functions it names (`snp`, `np`, `lax`, a helper) replaced by
recorders of the same name: every operation appends one line (`sin_x = snp.sin(x)`), and the
lines become the function's source, with a first line saying it was traced. The transforms
read that source as they read any other (calls of user helpers stay calls, resolved and
differentiated through their own source), and the traced function reads the user's globals
and closure cells when it runs.

What a trace cannot see it refuses, never guesses: a Python branch, loop bound, `len`, `float`
or index taken from a traced value would fix one path for every input (jax.jit would raise a
ConcretizationTypeError there too), so it raises TraceSourceError naming the user's line.
"""
import builtins
import inspect
import keyword
import math
import sys
import types

import numpy as np

from secant.backends.function_cache import FunctionCache
from secant.backends import once
from secant.backends.errors import SecantError
from secant.codegen.naming import Names, suggest

_traced = FunctionCache("traced")        # function -> its traced form


class TraceSourceError(SecantError):
    """A function without source that cannot be traced faithfully."""


_BINOPS = {"__add__": ("+", "add"), "__sub__": ("-", "subtract"), "__mul__": ("*", "multiply"),
           "__truediv__": ("/", "true_divide"), "__floordiv__": ("//", "floor_divide"),
           "__mod__": ("%", "remainder"), "__pow__": ("**", "power"),
           "__matmul__": ("@", "matmul"), "__and__": ("&", "and"), "__or__": ("|", "or"),
           "__xor__": ("^", "xor"), "__lt__": ("<", "less"), "__le__": ("<=", "less_equal"),
           "__gt__": (">", "greater"), "__ge__": (">=", "greater_equal"),
           "__eq__": ("==", "equal"), "__ne__": ("!=", "not_equal")}
_REFLECTED = {"__radd__": "__add__", "__rsub__": "__sub__", "__rmul__": "__mul__",
              "__rtruediv__": "__truediv__", "__rfloordiv__": "__floordiv__",
              "__rmod__": "__mod__", "__rpow__": "__pow__", "__rmatmul__": "__matmul__",
              "__rand__": "__and__", "__ror__": "__or__", "__rxor__": "__xor__"}
_PRECEDENCE = {"**": 7, "@": 6, "*": 6, "/": 6, "//": 6, "%": 6, "+": 5, "-": 5, "&": 4,
               "^": 3, "|": 2}


class _Recording:
    """The lines written so far, the names taken, and the constants the lines refer to."""

    def __init__(self, fn, taken, context=None):
        self.fn = fn
        self.context = context      # why it is traced, for refusals (default: no source)
        self.lines = []
        self.names = Names(taken)
        self.consts = {}        # name in the source -> object (bound in the traced closure)
        self.patched = None     # the globals the run reads (recorders in place)
        self.cells = {}         # id(the run's closure cell) -> the user's cell
        self._const_ids = {}

    def emit(self, name_hint, expr):
        name = self.names.fresh(name_hint)
        self.lines.append(f"{name} = {expr}")
        return _Value(self, name)

    def const(self, obj, hint):
        key = id(obj)
        if key not in self._const_ids:
            name = self.names.fresh(hint)
            self._const_ids[key] = name
            self.consts[name] = self._unpatched(obj)
        return self._const_ids[key]

    def _unpatched(self, obj):
        """A function the traced run defined (`jvp(lambda x: snp.sin(x), ...)`) reads the
        run's recorders as its globals and closure cells: the same function reading the
        user's own, as it will when the traced source runs."""
        if not (isinstance(obj, types.FunctionType) and obj.__globals__ is self.patched):
            return obj
        cells = tuple(self.cells.get(id(c), c) for c in obj.__closure__ or ())
        out = types.FunctionType(obj.__code__, self.fn.__globals__, obj.__name__,
                                 obj.__defaults__, cells or None)
        out.__kwdefaults__ = obj.__kwdefaults__
        out.__qualname__ = obj.__qualname__
        return out

    def source(self, value):
        """Python source for `value` (a recorded value, a recorder, a literal or container)."""
        if isinstance(value, (_Value, _Named)):
            return value._expr
        if value is None or isinstance(value, (bool, int, str, bytes)) \
                or type(value) is float and math.isfinite(value) \
                or value is Ellipsis:
            return repr(value)
        if type(value) is float:
            return f"float({str(value)!r})"
        if isinstance(value, tuple):
            inner = ", ".join(self.source(v) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if isinstance(value, list):
            return "[" + ", ".join(self.source(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self.source(k)}: {self.source(v)}"
                                   for k, v in value.items()) + "}"
        if isinstance(value, slice):
            parts = [self.source(p) if p is not None else "" for p in
                     (value.start, value.stop, value.step)]
            return ":".join(parts[:2] if value.step is None else parts)
        if isinstance(value, (complex, np.generic)):
            return repr(value.item() if isinstance(value, np.generic) else value)
        if isinstance(value, types.FunctionType) and any(
                isinstance(_cell_contents(c), _Value) for c in value.__closure__ or ()):
            self.refuse(f"passes the function {value.__name__}, which closes over a traced "
                        "value, as an argument (its derivative would be lost)")
        return self.const(value, getattr(value, "__name__", None) or type(value).__name__
                          .lower() + "_const")

    def index_source(self, idx):
        if isinstance(idx, tuple) and idx:
            return ", ".join(self.index_source(i) for i in idx)
        if isinstance(idx, slice):
            return self.source(idx)
        return self.source(idx)

    def refuse(self, what):
        line = _user_line(self.fn)
        at = f" at {self.fn.__code__.co_filename}:{line}" if line else ""
        if self.context is not None:
            raise TraceSourceError(f"{self.context}; but it {what}{at}")
        raise TraceSourceError(
            f"{self.fn.__qualname__} has no source secant can read (defined in exec, at the "
            f"interactive prompt, with python -c, or its file changed since import), so secant "
            f"traces it once; but it {what}{at}, which a trace would fix to one case for every "
            "input. Define the function in a file (or reload its module), or write the choice "
            "with snp.where / lax.cond")


def _cell_contents(cell):
    try:
        return cell.cell_contents
    except ValueError:          # an empty cell
        return None


def _user_line(fn):
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is fn.__code__ or frame.f_code.co_filename == fn.__code__.co_filename:
            return frame.f_lineno
        frame = frame.f_back
    return None


class _Value:
    """A traced value: the name of a line of the recording."""
    __array_priority__ = 1000       # NumPy defers to our reflected operators

    def __init__(self, rec, name):
        self._rec = rec
        self.name = name

    @property
    def _expr(self):
        return self.name

    def _binop(self, op, other, reflected=False):
        symbol, opname = _BINOPS[op]
        left, right = (other, self) if reflected else (self, other)
        ls, rs = self._rec.source(left), self._rec.source(right)
        hint = suggest(opname, [_Operand(left, ls), _Operand(right, rs)]) \
            if opname in ("add", "subtract", "multiply", "true_divide", "power", "matmul") \
            else f"{opname}_out"
        return self._rec.emit(hint, f"{ls} {symbol} {rs}")

    def __neg__(self):
        return self._rec.emit(f"neg_{self.name}", f"-{self._expr}")

    def __pos__(self):
        return self

    def __abs__(self):
        return self._rec.emit(f"abs_{self.name}", f"abs({self._expr})")

    def __invert__(self):
        return self._rec.emit(f"not_{self.name}", f"~{self._expr}")

    def __getitem__(self, idx):
        return self._rec.emit(f"{self.name}_item",
                              f"{self._expr}[{self._rec.index_source(idx)}]")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr in ("T", "mT", "real", "imag"):
            return self._rec.emit(f"{self.name}_{attr}", f"{self._expr}.{attr}")
        if attr in ("shape", "ndim", "size", "dtype"):       # static: written in place
            return _Static(self._rec, f"{self._expr}.{attr}", f"{self.name}_{attr}")
        return _Named(self._rec, f"{self._expr}.{attr}", attr)

    def __bool__(self):
        self._rec.refuse("takes a Python branch (if / while / and / or / bool) on a traced "
                         "value")

    def __len__(self):
        self._rec.refuse("asks len() of a traced value")

    def __index__(self):
        self._rec.refuse("uses a traced value as a Python int (a range bound or an index)")

    def __float__(self):
        self._rec.refuse("converts a traced value to a Python float")

    def __int__(self):
        self._rec.refuse("converts a traced value to a Python int")

    def __iter__(self):
        self._rec.refuse("iterates over a traced value")

    def __array__(self, *args, **kwargs):
        self._rec.refuse("passes a traced value to a function secant cannot record "
                         "(it asked for a NumPy array)")

    __hash__ = object.__hash__


def _make_binops():
    for op in _BINOPS:
        setattr(_Value, op, lambda self, other, _op=op: self._binop(_op, other))
    for rop, op in _REFLECTED.items():
        setattr(_Value, rop, lambda self, other, _op=op: self._binop(_op, other, True))


_make_binops()


class _Static(_Value):
    """A static query of a traced value (`x.shape[0]`), written in place where it is used."""

    def __init__(self, rec, expr, hint):
        super().__init__(rec, hint)
        self._static = expr

    @property
    def _expr(self):
        return self._static

    def __getitem__(self, idx):
        return _Static(self._rec, f"{self._static}[{self._rec.index_source(idx)}]",
                       f"{self.name}_item")


class _Operand:
    def __init__(self, value, src):
        self.name = value.name if isinstance(value, _Value) else None
        self.src = src


class _Named:
    """A recorder of something the function names: a module (`snp`), a function (`helper`,
    `snp.sin`), a method of a traced value (`x.sum`). Attributes extend the chain; a call is
    recorded as one line."""

    def __init__(self, rec, expr, leaf, obj=None):
        self._rec = rec
        self._expr = expr
        self._leaf = leaf
        self._obj = obj

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        obj = getattr(self._obj, attr) if self._obj is not None else None
        if self._obj is not None and not (isinstance(obj, types.ModuleType) or callable(obj)):
            return obj              # a constant of a module (snp.pi, snp.float32 stays named)
        return _Named(self._rec, f"{self._expr}.{attr}", attr, obj)

    def __getitem__(self, idx):     # x.at[i] (then .set(v), .multiply(v), ...): one chain
        return _Named(self._rec, f"{self._expr}[{self._rec.index_source(idx)}]", self._leaf)

    def __call__(self, *args, **kwargs):
        parts = [self._rec.source(a) for a in args]
        parts += [f"{k}={self._rec.source(v)}" for k, v in kwargs.items()]
        first = next((a for a in args if isinstance(a, _Value)), None)
        hint = f"{self._leaf}_{first.name}" if first is not None else f"{self._leaf}_out"
        if len(hint) > 24:
            hint = f"{self._leaf}_out"
        return self._rec.emit(hint, f"{self._expr}({', '.join(parts)})")

    def __bool__(self):
        return True

    def __repr__(self):
        return self._expr


def _replaceable(obj):
    """What a traced run must call through a recorder: modules and functions (not classes)."""
    if isinstance(obj, types.ModuleType):
        return True
    if isinstance(obj, type):
        return False
    return callable(obj) and not isinstance(obj, (_Value, _Named))


def _names_of_code(code):
    out = set(code.co_names)
    for c in code.co_consts:
        if inspect.iscode(c):
            out |= _names_of_code(c)
    return out


_RECORDED_BUILTINS = ("abs", "max", "min", "sum", "pow", "round")


def traced(fn):
    """A function equivalent to `fn` whose source is its trace (cached while the Python values
    the trace fixed, ints and other non-array values it read, still hold)."""
    hit = _traced.get(fn)
    if hit is not None and hit.__secant_guards__[0].holds():
        return hit
    return once.build(_traced, fn, lambda: _trace(fn),
                      valid=lambda hit: hit.__secant_guards__[0].holds())


class Recorded:
    """One run of a function on recording values: `rec.lines` so far, `result` (what it
    returned, recording values inside), and what the source written from it needs."""

    def __init__(self, rec, result, sig, cells, frozen):
        self.rec, self.result, self.sig, self.cells = rec, result, sig, cells
        self.guard = _Frozen(frozen)

    def value(self, hint):
        """A fresh recording value (a parameter of a later piece of source)."""
        return _Value(self.rec, self.rec.names.fresh(hint))

    def source(self, value):
        return self.rec.source(value)

    def params(self):
        return _params_source(self.sig, self.rec)

    def free(self):
        """The objects the recorded lines name (the user's filled closure cells, constants)."""
        user_cells = {k: c for k, c in self.cells.items() if _filled(c)}
        return {**{k: c.cell_contents for k, c in user_cells.items()}, **self.rec.consts}, \
            user_cells


def record(fn, context=None):
    """Runs `fn` once with recording values in place of its parameters (its modules and
    functions replaced by recorders of the same name): a Recorded. `context`: why it is traced,
    for the message of a refusal."""
    code = fn.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        raise TraceSourceError(f"{fn.__qualname__} has no source secant can read and takes "
                               "*args or **kwargs; define it in a file" if context is None else
                               f"{context}; but it takes *args or **kwargs")
    sig = inspect.signature(fn, follow_wrapped=False)
    params = list(sig.parameters)
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    names = _names_of_code(code)
    rec = _Recording(fn, set(params) | set(code.co_freevars) | names | set(dir(builtins)),
                     context)
    frozen = []                 # (cell or None, globals, name, value) the trace fixed

    def stand_in(name, value, cell):
        if _replaceable(value):
            return _Named(rec, name, name, value)
        if isinstance(value, (float, complex, np.ndarray, np.generic)) \
                or type(value).__name__ == "Array":
            return _Value(rec, name)        # an array or float: read by name when it runs
        frozen.append((cell, fn.__globals__, name, value))
        return value

    glob = dict(fn.__globals__)
    for name in names:
        if name in fn.__globals__:
            glob[name] = stand_in(name, fn.__globals__[name], None)
        elif name in _RECORDED_BUILTINS:
            glob[name] = _Named(rec, name, name, getattr(builtins, name))
    closure = []
    for name, cell in cells.items():
        closure.append(types.CellType(stand_in(name, cell.cell_contents, cell))
                       if _filled(cell) else types.CellType())
        rec.cells[id(closure[-1])] = cell
    rec.patched = glob
    runner = types.FunctionType(code, glob, fn.__name__, None, tuple(closure) or None)
    result = runner(**{p: _Value(rec, p) for p in params})
    return Recorded(rec, result, sig, cells, frozen)


def _trace(fn):
    from secant.codegen import loader
    from secant.transformer.parse import FunctionSource
    import gast
    code = fn.__code__
    run = record(fn)
    rec = run.rec
    out = rec.source(run.result)
    name = code.co_name if code.co_name.isidentifier() and not keyword.iskeyword(code.co_name) \
        else "lambda_"
    why = "its file changed since import" if _has_file(fn) else "no source: exec, prompt or -c"
    header = f"def {name}({run.params()}):"
    body = [f"# traced from {fn.__qualname__} ({why})"]
    body += rec.lines + [f"return {out}"]
    source = "\n".join([header] + ["    " + ln for ln in body]) + "\n"
    free, user_cells = run.free()
    gen = loader.load(source, name, fn.__globals__, free, cells=user_cells)
    gen.__qualname__ = fn.__qualname__
    gen.__module__ = fn.__module__
    gen.__doc__ = fn.__doc__
    gen.__secant_source__ = FunctionSource(gen, gast.parse(source).body[0],
                                           gen.__code__.co_filename, 1, source.splitlines(),
                                           fn.__globals__, free, generated=False)
    gen.__secant_traced__ = fn
    gen.__secant_guards__ = (run.guard,)
    return gen


class _Frozen:
    """The guard of a trace: the Python values it fixed (an int loop bound, a flag) are still
    the ones its cells and globals hold."""

    def __init__(self, frozen):
        self.frozen = frozen

    def holds(self):
        for cell, globals_, name, value in self.frozen:
            if cell is not None:
                if not _filled(cell) or cell.cell_contents is not value:
                    return False
            elif globals_.get(name, _MISSING) is not value:
                return False
        return True


_MISSING = object()


def _filled(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _has_file(fn):
    filename = fn.__code__.co_filename
    return not (filename.startswith("<") and filename.endswith(">"))


def _params_source(sig, rec):
    """The parameter list as the function's, defaults written as source (literals, or names
    of the default objects bound in the traced function's closure)."""
    out, star, params = [], False, list(sig.parameters.values())
    for k, p in enumerate(params):
        if p.kind == p.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        out.append(p.name if p.default is p.empty else f"{p.name}={rec.source(p.default)}")
        if p.kind == p.POSITIONAL_ONLY and (k + 1 == len(params)
                                            or params[k + 1].kind != p.POSITIONAL_ONLY):
            out.append("/")
    return ", ".join(out)

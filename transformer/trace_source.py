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
import contextlib
import copy
import functools
import inspect
import keyword
import math
import os
import re
import sys
import threading
import types
import weakref

import numpy as np

from secant.backends.function_cache import FunctionCache
from secant.backends import once
from secant.backends.errors import SecantError
from secant.transformer import in_place_calls
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
        self.where = []         # per line: (file, line) of the user's code that wrote it, or None
        self.names = Names(taken)
        self.consts = {}        # name in the source -> object (bound in the traced closure)
        self.patched = None     # the globals the run reads (recorders in place)
        self.cells = {}         # id(the run's closure cell) -> the user's cell
        self._const_ids = {}
        self.done = False       # the run ended: its values are dead
        self.follow = False     # run user functions through (their lines recorded), not called
        self.modules = {}       # id(a followed function's globals) -> its patched copy
        self.run_cells = {}     # id(a followed function's cell) -> the run's cell
        self.pinned = []        # (the objects whose ids those keys are, kept alive)
        self.objects = {}       # id(a user object met while following) -> its view (_Object)
        self.classes = {}       # id(a user class met while following) -> its view (_Class)
        self.arrays_named = False   # arrays met while following: constants named in the lines
        self.originals = {}     # id(a stand-in of a partial, dict or tuple) -> (it, the user's)
        self.unknown = set()    # ids of the parameters of a trace without arguments (any tree)

    def object(self, obj):
        view = self.objects.get(id(obj))
        if view is None:
            view = self.objects[id(obj)] = _object_view(self, obj)
            self.pinned.append(obj)
        return view

    def klass(self, cls):
        view = self.classes.get(id(cls))
        if view is None:        # (one view per class: `type(a) is type(b)`, `type(x) is C`)
            view = self.classes[id(cls)] = _Class(self, cls)
            self.pinned.append(cls)
        return view

    def emit(self, name_hint, expr):
        if self.done:       # (JAX: an UnexpectedTracerError)
            raise TraceSourceError(
                f"a value traced while secant traced {self.fn.__qualname__} was used after "
                f"that trace ended{_caller_line()}: it was kept outside the function's "
                "arguments and return value (a global, a cache, an object) and read again; "
                "compute it again instead of reading it back")
        name = self.names.fresh(name_hint)
        self.lines.append(f"{name} = {expr}")
        self.where.append(_user_position())
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
        value = self.original(value)
        if isinstance(value, (_Value, _Named)):
            if value._rec is not self:      # (an earlier trace's, read back from a cache)
                self.refuse(f"reads a value traced by an earlier trace of "
                            f"{value._rec.fn.__qualname__} (kept in a global, a cache or an "
                            "object across calls), which is not this call's value")
            return value._expr
        if value is Ellipsis:
            return "..."
        if value is None or isinstance(value, (bool, int, str, bytes)) \
                or type(value) is float and math.isfinite(value):
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
        if isinstance(value, (_Object, _Class, _Follow)):
            what = f"an object of class {value.__class__.__name__}" \
                if isinstance(value, _Object) else "a user class or function"
            self.refuse(f"passes {what}, which the trace follows, where "
                        "secant records a call: only arrays, numbers and containers of them can "
                        "be written into the trace")
        if _node(value) and _holds_recorded(value):
            self.refuse(f"passes an object of the pytree class {type(value).__name__} holding "
                        "traced values where secant records a call: only arrays, numbers and "
                        "containers of them can be written into the trace")
        held = [name for name, c in zip(value.__code__.co_freevars, value.__closure__ or ())
                if isinstance(_cell_contents(c), _Value)] \
            if isinstance(value, types.FunctionType) else []
        if held:
            self.refuse(f"passes the function {value.__name__}, which closes over the traced "
                        f"{held[0]}, as an argument (its derivative would be lost)",
                        f"Define the function in a file run as `python file.py` (secant "
                        f"transforms its source then), or pass {held[0]} to the function as "
                        "an argument")
        return self.const(value, getattr(value, "__name__", None) or type(value).__name__
                          .lower() + "_const")

    def original(self, value):
        """The user's own partial, dict or tuple a stand-in of a following trace stands for
        (_follow_stand_in: written into the trace, or into the user's dict, as itself), or
        `value` itself."""
        hit = self.originals.get(id(value))
        return value if hit is None or hit[0] is not value else hit[1]

    def stand_in(self, stand, value):
        self.originals[id(stand)] = (stand, value)
        return stand

    def index_source(self, idx):
        if isinstance(idx, tuple) and idx:
            return ", ".join(self.index_source(i) for i in idx)
        if isinstance(idx, slice):
            return self.source(idx)
        return self.source(idx)

    def check(self, test, why):
        """A line `assert test, why` (a static fact the trace relied on), written once."""
        line = f"assert {test}, {why!r}"
        if line not in self.lines:
            self.lines.append(line)
            self.where.append(_user_position())

    def refuse(self, what, fix=None):
        """Raise: the trace cannot record `what`; `fix`: what to write instead (else: how a
        Python choice on a traced value is written)."""
        line = _user_line(self.fn)
        at = f" at {self.fn.__code__.co_filename}:{line}" if line else ""
        if self.context is not None:
            raise TraceSourceError(f"{self.context}; but it {what}{at}")
        raise TraceSourceError(
            f"{self.fn.__qualname__} has no source secant can read (defined in exec, at the "
            f"interactive prompt, piped to `python -`, with python -c, or its file changed "
            f"since import), so secant traces it once; but it {what}{at}" + (
                f". {fix}" if fix else ", which a trace would fix to one case for every "
                "input. Define the function in a file (or reload its module), or write the "
                "choice with snp.where / lax.cond"))


def _cell_contents(cell):
    try:
        return cell.cell_contents
    except ValueError:          # an empty cell
        return None


def _caller_line():
    """ at file:line of the user's code that runs now (not secant's)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_HERE):
        frame = frame.f_back
    return f" at {frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else ""


_HERE = __file__.rsplit("/", 1)[0]


def _user_position():
    """(file, line) of the innermost frame running the user's code (not secant's), or None:
    where a recorded line came from, so that an error in the trace names the user's line."""
    from secant.backends import errors as _errors
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<") and not _errors._is_internal(os.path.abspath(name)) \
                and not name.startswith(_HERE):
            return name, frame.f_lineno
        frame = frame.f_back
    return None


def _origins(rec, first):
    """{line of the traced source: the user's (file, line)}, its recorded lines from `first`."""
    return {first + i: where for i, where in enumerate(rec.where) if where is not None}


def _user_line(fn):
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is fn.__code__ or frame.f_code.co_filename == fn.__code__.co_filename:
            return frame.f_lineno
        frame = frame.f_back
    return None


class _Value:
    """A traced value: the name of a line of the recording. It has no attributes of its own to
    set: an attribute the traced code sets on it (`b = copy.copy(self); b.scope = s`, or
    object.__setattr__) is refused, never kept on the recorder where no generated line reads
    it back (the derivative through it would be lost: zero)."""
    __array_priority__ = 1000       # NumPy defers to our reflected operators
    __slots__ = ("_rec", "name", "_static", "_shape", "__weakref__")

    def __init__(self, rec, name):
        object.__setattr__(self, "_rec", rec)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "_shape", None)    # (known: a per-call trace's argument)

    def __setattr__(self, attr, value):
        self._rec.refuse(f"sets the attribute {attr} of a traced value (a result it recorded, "
                         "such as a copy.copy of an object)")

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

    def __repr__(self):         # (print(x) while tracing, as JAX prints a tracer)
        return f"Traced<{self._expr}>"

    def __pos__(self):
        return self

    def __abs__(self):
        return self._rec.emit(f"abs_{self.name}", f"abs({self._expr})")

    def __invert__(self):
        return self._rec.emit(f"not_{self.name}", f"~{self._expr}")

    def __getitem__(self, idx):
        if isinstance(idx, str) and idx.replace("/", "_").replace("-", "_").isidentifier():
            return self._rec.emit(f"{self.name}_{idx}",     # params['l1/w']: params_l1_w
                                  f"{self._expr}[{idx!r}]")
        return self._rec.emit(f"{self.name}_item",
                              f"{self._expr}[{self._rec.index_source(idx)}]")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr in ("T", "mT", "real", "imag"):
            return self._rec.emit(f"{self.name}_{attr}", f"{self._expr}.{attr}")
        if attr in ("shape", "ndim", "size", "dtype"):       # static: written in place
            shape = self._shape         # (known: asserted where it is used)
            known = None if shape is None else shape if attr == "shape" else len(shape) \
                if attr == "ndim" else math.prod(shape) if attr == "size" else None
            return _Static(self._rec, f"{self._expr}.{attr}", f"{self.name}_{attr}", known)
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
        shape = self._shape
        if not shape:
            self._rec.refuse("iterates over a traced value")
        # (an argument of a per-call trace, its shape read from the call's array: unrolled,
        # and checked where the trace runs, so that a length read from a batched array (vmap's)
        # or another call's raises there, never unrolls a wrong count)
        self._rec.check(f"{self._expr}.shape[0] == {shape[0]}", f"secant unrolled the loop "
                        f"over {self._expr} to its length {shape[0]} in this call")
        return iter([self[i] for i in range(shape[0])])

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

    def __init__(self, rec, expr, hint, known=None):
        super().__init__(rec, hint)
        object.__setattr__(self, "_static", expr)
        object.__setattr__(self, "_known", known)   # its value in this call's arguments

    @property
    def _expr(self):
        return self._static

    def __getitem__(self, idx):
        known = self._known[idx] if isinstance(self._known, tuple) and isinstance(
            idx, (int, slice)) else None
        return _Static(self._rec, f"{self._static}[{self._rec.index_source(idx)}]",
                       f"{self.name}_item", known)

    def __index__(self):
        if type(self._known) is not int:        # (a range bound of x.shape[0] in a per-call
            return super().__index__()          # trace: that call's, asserted where it runs)
        self._rec.check(f"{self._static} == {self._known}", f"secant traced {self._static} "
                        f"as {self._known} in this call")
        return self._known

    __int__ = __index__


class _Len:
    """`len` as a followed function reads it: of a traced value, written in place as the static
    query `len(x)` (jnp.ones(len(sigma))); of anything else, Python's."""

    def __call__(self, obj):
        if isinstance(obj, _Value) and not isinstance(obj, _Static):
            shape = obj._shape
            return _Static(obj._rec, f"len({obj._expr})", f"len_{obj.name}",
                           shape[0] if shape else None)
        return len(obj)


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
        if self._rec.follow and _followed(obj) is not None:
            return _Follow(self._rec, obj)      # (a user module's function: run through)
        return _Named(self._rec, f"{self._expr}.{attr}", attr, obj)

    def __getitem__(self, idx):     # x.at[i] (then .set(v), .multiply(v), ...): one chain
        return _Named(self._rec, f"{self._expr}[{self._rec.index_source(idx)}]", self._leaf)

    def __instancecheck__(self, value):
        """isinstance(x, snp.ndarray) where the module's class is recorded (its calls are):
        against the class itself; a traced value is an array, as a jit tracer is."""
        if not isinstance(self._obj, type):
            return isinstance(value, self._obj)     # (Python's TypeError for a non-class)
        if isinstance(value, _Value) and not isinstance(value, _Static):
            from secant.backends.array import Array
            return issubclass(Array, self._obj)
        return isinstance(value, self._obj)

    def __subclasscheck__(self, kind):
        return issubclass(kind, self._obj)

    def __call__(self, *args, **kwargs):
        if self._rec.follow:
            done = _run_in_python(self._rec, self._obj, args, kwargs)
            if done is not _NOT_RUN:
                return done
        message = in_place_calls.refusal(self._obj, kwargs.get("inplace", True)) \
            if self._obj is not None else None
        if message is not None:     # snp.add.at(x, i, v) as NumPy's in-place idiom: raised as
            raise TraceSourceError(message + _caller_line())   # it would run, never dropped
        # (a generator, `sum(f(v) for v in leaves)`, runs now on the recording values: its
        # items written as a list, never the generator object kept to run again later)
        args = [list(a) if isinstance(a, types.GeneratorType) else a for a in args]
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


_NOT_RUN = object()


def _run_in_python(rec, fn, args, kwargs):
    """What a following trace does with a library call that only moves Python structure,
    run as Python on the recording values (nothing recorded), or _NOT_RUN: `copy.copy(obj)` of
    a followed object (flax's `bound = copy.copy(self)`: a new object with the same fields,
    followed too; its arrays are the same recorded values), and secant.tree_util's functions
    on containers holding recorded values (`tree_map(lambda v: v, variables)`: a function
    applied to each leaf, its operations recorded), never on a traced value itself."""
    if fn is copy.copy and len(args) == 1 and not kwargs and isinstance(args[0], _Object):
        obj = object.__getattribute__(args[0], "_secant_obj")
        return rec.object(copy.copy(obj))
    if getattr(fn, "__module__", None) == "secant.tree_util" and callable(fn) \
            and not isinstance(fn, type) \
            and not any(isinstance(a, (_Value, _Named)) for a in list(args) + list(kwargs.values())) \
            and any(isinstance(a, (list, tuple, dict)) or _node(a) for a in args) \
            and not _holds_unknown(rec, args):
        return fn(*args, **kwargs)
    return _NOT_RUN


def _holds_unknown(rec, args):
    """Whether a leaf of `args` is a parameter of a trace taken without arguments: a value
    whose structure the trace does not know (a dict of params read as one leaf would give
    tree_leaves the wrong leaves; the trace taken with the call's arguments knows it)."""
    from secant import tree_util
    return any(id(v) in rec.unknown for v in tree_util.tree_leaves(args))


def _holds_recorded(value):
    from secant import tree_util
    try:
        return any(isinstance(v, _Value) for v in tree_util.tree_leaves(value))
    except Exception:       # (a flatten that fails on recording values)
        return True


def _node(value):
    """Whether `value` is an object of a registered pytree class (a FrozenDict-like Mapping of
    recorded values: tree_leaves of it is a list, iterated as Python)."""
    from secant import tree_util
    return not isinstance(value, (_Value, _Named)) and tree_util.is_node_type(type(value))


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


_ARRAY_TYPES = (float, complex, np.ndarray, np.generic)


def _is_array_leaf(value):
    """An argument a per-call trace stands in for by a recording value: an array (a device
    array, a tracer of jit) or a float, what a transform may differentiate or batch."""
    return isinstance(value, _ARRAY_TYPES) and not isinstance(value, bool) \
        or type(value).__name__ in ("Array", "Tracer") or hasattr(value, "_aval")


def _holds_arrays(value, tracers=False, depth=0):
    """Whether `value` holds an array (`tracers`: a value jit traces) in its items or fields."""
    if _is_array_leaf(value):
        if not tracers:
            return True
        from secant.backends.core import Tracer
        return isinstance(value, Tracer)
    if depth > 8:
        return False
    if isinstance(value, (list, tuple)):        # (a namedtuple too)
        return any(_holds_arrays(v, tracers, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_holds_arrays(v, tracers, depth + 1) for v in value.values())
    if isinstance(value, (types.FunctionType, types.ModuleType, type, str, bytes, int)) \
            or value is None:
        return False
    try:        # (a registered pytree: its leaves, wherever its class keeps them)
        from secant import tree_util
        leaves = tree_util.tree_leaves(value)
    except Exception:
        leaves = []
    if not (len(leaves) == 1 and leaves[0] is value) and any(
            _holds_arrays(v, tracers, depth + 1) for v in leaves):
        return True
    fields = list(getattr(value, "__dict__", {}).values()) if isinstance(
        getattr(value, "__dict__", None), dict) else []
    for cls in type(value).__mro__:         # (__slots__ fields)
        for slot in getattr(cls, "__slots__", ()) if isinstance(
                getattr(cls, "__slots__", ()), (tuple, list)) else ():
            fields.append(getattr(value, slot, None))
    return any(_holds_arrays(v, tracers, depth + 1) for v in fields)


def _argument(rec, value, name, expr, follow, active=True):
    """What a per-call trace passes for an argument `value` (read as `expr` in the traced
    source): an array a recording value; a list, tuple or dict (string keys) of them the same
    container of its items, each read by a line of its own (`params_mu = params['mu']`);
    anything else (an object, a function, an int, a string) itself, followed where it is the
    user's. An object holding arrays that are differentiated or batched (`active`) or traced by
    jit is refused: read as itself, its arrays would be constants of the trace (a lost
    derivative)."""
    if _is_array_leaf(value):
        out = _Value(rec, expr) if expr == name else rec.emit(name, expr)
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple) and all(type(n) is int for n in shape) \
                and (not shape or shape[0] <= 256):
            object.__setattr__(out, "_shape", shape)     # (`for row in xs`: unrolled)
        return out
    if (type(value) in (list, tuple) or isinstance(value, tuple) and hasattr(value, "_fields")) \
            and len(value) <= 256 and _holds_arrays(value):
        items = [_argument(rec, v, f"{name}_{i}", f"{expr}[{i}]", follow, active)
                 for i, v in enumerate(value)]
        return items if type(value) is list else tuple(items) if type(value) is tuple \
            else type(value)(*items)        # (a namedtuple: its fields read by name too)
    if type(value) is dict and len(value) <= 256 and _holds_arrays(value) and all(
            type(k) is str for k in value):
        return {k: _argument(rec, v, f"{name}_{k}" if k.isidentifier() else f"{name}_item",
                             f"{expr}[{k!r}]", follow, active) for k, v in value.items()}
    if _holds_arrays(value, tracers=not active):
        rec.refuse(f"is given a {type(value).__name__} object holding "
                   f"{'differentiated or batched' if active else 'traced'} arrays as its "
                   f"argument {name}, which the trace would read as constants (a lost "
                   "derivative); pass the arrays themselves")
    return _follow_stand_in(rec, value, name) if follow else value


def record(fn, context=None, follow=False, arguments=None, active=()):
    """Runs `fn` once with recording values in place of its parameters (its modules and
    functions replaced by recorders of the same name): a Recorded. `context`: why it is traced,
    for the message of a refusal. `follow`: the user functions it calls (and theirs) run
    through on the recording values, their operations recorded, instead of recorded as calls
    (values that pass through a global between them are then followed too)."""
    code = fn.__code__
    fixed = follow and getattr(fn, "__secant_specialises__", None) is not None  # (f(*xs) for
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) and not fixed:   # a call)
        raise TraceSourceError(f"{fn.__qualname__} has no source secant can read and takes "
                               "*args or **kwargs; define it in a file" if context is None else
                               f"{context}; but it takes *args or **kwargs")
    _refuse_state_writes(fn, context, follow=follow)
    sig = inspect.signature(fn, follow_wrapped=False)
    params = list(sig.parameters)
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    names = _names_of_code(code)
    rec = _Recording(fn, set(params) | set(code.co_freevars) | names | set(dir(builtins)),
                     context)
    frozen = []                 # (cell or None, globals, name, value) the trace fixed

    rec.follow = follow

    def stand_in(name, value, cell):
        if fixed and value is fn.__secant_specialises__ and _followed(value) is None \
                and isinstance(value, types.FunctionType) and not getattr(
                    value, "__secant_custom__", False):
            # (the function the specialised one calls, run through even when it is a
            # decorator's wrapper: recorded as a call, its derivative is this trace again)
            return _Follow(rec, value, force=True)
        if follow and (isinstance(value, type) or _runs_through(value)):
            return _follow_stand_in(rec, value, name)
        if _replaceable(value):
            return _Named(rec, name, name, value)
        if isinstance(value, (float, complex, np.ndarray, np.generic)) \
                or type(value).__name__ == "Array":
            return _Value(rec, name)        # an array or float: read by name when it runs
        frozen.append((cell, fn.__globals__, name, value))
        return value

    glob = dict(fn.__globals__)
    if follow:      # (the functions it calls read the same patched module: its names are taken)
        rec.modules[id(fn.__globals__)] = (glob, set(names), True)
        rec.names.taken |= set(fn.__globals__)
    for name in names:
        if name in fn.__globals__:
            glob[name] = stand_in(name, fn.__globals__[name], None)
        elif name in _RECORDED_BUILTINS:
            glob[name] = _Named(rec, name, name, getattr(builtins, name))
        elif name == "len" and follow:
            glob[name] = _Len()
        elif name == "type" and follow:
            glob[name] = _TypeOf(rec)
    closure = []
    for name, cell in cells.items():
        closure.append(types.CellType(stand_in(name, cell.cell_contents, cell))
                       if _filled(cell) else types.CellType())
        rec.cells[id(closure[-1])] = cell
    rec.patched = glob
    runner = types.FunctionType(code, glob, fn.__name__, None, tuple(closure) or None)
    if arguments is not None:       # (a per-call trace: the call's own arguments, by name)
        rec.arrays_named = True
        try:
            given = {p: _argument(rec, arguments[p], p, p, follow, p in active)
                     for p in params}
            before = _globals_set(fn, glob)
            if fixed:       # (specialised for a call's *args: its code takes them so)
                keyword_only = [p for p, v in sig.parameters.items()
                                if v.kind == v.KEYWORD_ONLY]
                result = runner(*[given[p] for p in params if p not in keyword_only],
                                **{p: given[p] for p in keyword_only})
            else:
                result = runner(**given)
            _write_back(rec, fn, glob, before)
            out = Recorded(rec, result, sig, cells, frozen)
            rec.source(result)
        finally:
            rec.done = True
        return out
    if not follow:
        watched = [(name, value, _shallow(value), _copy(value)) for _, _, name, value in frozen]
        try:
            result = runner(**{p: _Value(rec, p) for p in params})
        except TypeError as e:      # (`self.calls += 1` of an object it names: a recorder)
            if not re.search(r"'_(?:Named|Value|ConstNamed)'", str(e)):
                raise
            for _, v, w, kept in watched:
                if w is not None:
                    _restore(v, kept)
            rec.refuse(f"uses a value the trace records where Python state is set or read "
                       f"({e})", "Define the function (or its class) in a file")
        for name, value, was, kept in watched:
            if was is not None and _shallow(value) != was:
                for _, v, w, k in watched:      # (the trace's changes undone: refused)
                    if w is not None:
                        _restore(v, k)
                rec.refuse(f"changes Python state when it runs ({name}, which it reads from "
                           "its globals or closure, changed in the trace), which a trace taken "
                           "once would change once, never at the calls after",
                           "Define the function in a file (or reload its module), or pass "
                           "the state in as an argument and return it")
        return Recorded(rec, result, sig, cells, frozen)
    try:
        given = {p: _Value(rec, p) for p in params}
        rec.unknown = {id(v) for v in given.values()}
        before = _globals_set(fn, glob)
        if fixed:       # (transformer/callees.py specialise: calls fn(*args, **kwargs))
            keyword_only = [p for p, v in sig.parameters.items() if v.kind == v.KEYWORD_ONLY]
            result = runner(*[given[p] for p in params if p not in keyword_only],
                            **{p: given[p] for p in keyword_only})
        else:
            result = runner(**given)
        _write_back(rec, fn, glob, before)
        out = Recorded(rec, result, sig, cells, frozen)
        rec.source(result)          # (refused here: a value of an earlier trace returned)
    finally:
        rec.done = True     # (values it left in a global are dead: used again, refused)
    return out


def _shallow(value):
    """What a trace would see change in `value`, a Python object a traced function reads
    from its globals or closure: a list's, dict's or set's items, an object's fields (their
    identities, one level deep), or None for anything else (a number: immutable)."""
    try:
        if isinstance(value, (list, tuple)):
            return len(value), tuple(id(v) for v in value[:256])
        if isinstance(value, dict):
            return len(value), tuple((k, id(v)) for k, v in list(value.items())[:256])
        if isinstance(value, (set, frozenset)):
            return len(value), frozenset(id(v) for v in value)
        if isinstance(value, (types.ModuleType, type, types.FunctionType)):
            return None
        fields = getattr(value, "__dict__", None)
        if isinstance(fields, dict):
            return tuple((k, id(v)) for k, v in fields.items())
    except Exception:       # (an object whose items cannot be read: not watched)
        return None
    return None


def _copy(value):
    """A shallow copy of what _shallow watches in `value`, for _restore."""
    try:
        if isinstance(value, list):
            return list(value)
        if isinstance(value, (dict, set)):
            return value.copy()
        fields = getattr(value, "__dict__", None)
        return dict(fields) if isinstance(fields, dict) and not isinstance(
            value, (types.ModuleType, type, types.FunctionType)) else None
    except Exception:
        return None


def _restore(value, kept):
    """`value` (a list, dict, set or object) given back the items or fields `kept` held."""
    if kept is None:
        return
    try:
        if isinstance(value, list):
            value[:] = kept
        elif isinstance(value, (dict, set)):
            value.clear()
            value.update(kept)
        else:
            value.__dict__.clear()
            value.__dict__.update(kept)
    except Exception:
        pass


def state_writes(code):
    """The Python state `code` (a function's, with the code nested in it) assigns: the names
    it sets by `global` (`global calls; calls += 1`) and those of its free variables it sets by
    `nonlocal`, as ("global", name) / ("nonlocal", name) pairs in the order met."""
    import dis
    found, stack, outer = [], [code], set(code.co_freevars)
    while stack:
        c = stack.pop()
        for ins in dis.get_instructions(c):
            if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
                hit = ("global", ins.argval)
            elif ins.opname in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in outer \
                    and ins.argval in c.co_freevars:
                hit = ("nonlocal", ins.argval)
            else:
                continue
            if hit not in found:
                found.append(hit)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return found


def _refuse_state_writes(fn, context, traced=None, follow=False, written=None):
    """Refuses to trace `fn` (or `traced`, which runs `fn` through) where fn's code sets a
    global or a nonlocal: a trace runs it on a copy of its globals and cells, so the write
    would be lost (or made once, at trace time), and a read of it after would be fixed to
    the value the trace saw: the counter of the user's program would stay where it was.
    `follow`: a trace taken again on each call, whose globals _write_back writes back after
    the run, as the user's call would have set them: only a nonlocal is refused then.
    `written`: the global (a name) whose new value is a recording value, refused."""
    writes = [("global", written)] if written is not None else [
        (k, n) for k, n in state_writes(fn.__code__) if not follow or k == "nonlocal"]
    if not writes:
        return
    kind, name = writes[0]
    top = traced if traced is not None else fn
    line = _user_line(top)
    at = f" at {top.__code__.co_filename}:{line}" if line else \
        f" at {fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
    what = (f"{'its callee ' + fn.__qualname__ + ' ' if fn is not top else ''}sets Python "
            f"state ({kind} {name}), which a trace runs on a copy of the globals and cells: "
            "the write would be lost, and a read of it fixed to the value the trace saw") \
        if written is None else (
            f"{'its callee ' + fn.__qualname__ + ' ' if fn is not top else ''}stores a value "
            f"computed from its arguments in the global {name}, which a trace cannot keep")
    if context is not None:
        raise TraceSourceError(f"{context}; but {what}{at}")
    raise TraceSourceError(
        f"{top.__qualname__} has no source secant can read (defined in exec, at the "
        f"interactive prompt, piped to `python -`, with python -c, or its file changed since "
        f"import), so secant traces it once; but it {what}{at}. Define the function in a "
        "file (or reload its module), or pass the state in as an argument and return it")


def _write_back(rec, fn, glob, before):
    """After a following trace ran `fn` on its patched module `glob` (`before`: what
    _globals_set gave before the run): each global fn's code set (`global act; act =
    snp.tanh`) written to the user's module, as the user's call would have set it (the trace is
    taken on each call). A recording value stored there is refused: the user's program could
    not read it after the trace."""
    for name, was in before.items():
        value = glob.get(name, _UNSET)
        if value is was or value is _UNSET:
            continue
        if isinstance(value, _Named) and value._obj is not None:
            value = value._obj          # (`act = snp.tanh`: the function its recorder names)
        elif isinstance(value, _Follow):
            value = value._value
        value = rec.original(value)
        if type(value).__module__ == __name__:
            _refuse_state_writes(fn, rec.context, rec.fn, written=name)
        fn.__globals__[name] = value


def _globals_set(fn, glob):
    """{name: its value in `glob` now} for each global fn's code sets (_write_back's before)."""
    return {name: glob.get(name, _UNSET) for kind, name in state_writes(fn.__code__)
            if kind == "global"}


_UNSET = object()


def _trace(fn):
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
    gen = _load_traced(fn, source, name, free, user_cells, _origins(rec, 3))
    gen.__secant_guards__ = (run.guard,)
    return gen


def _load_traced(fn, source, name, free, user_cells, origins=None):
    """The traced source `source` of `fn` as a function standing in for it: its names, its
    docstring, its source record (read as written, not generated) and a link back to `fn`."""
    from secant.codegen import loader
    from secant.transformer.parse import FunctionSource
    import gast
    gen = loader.load(source, name, fn.__globals__, free, origins=origins, cells=user_cells)
    gen.__qualname__ = fn.__qualname__
    gen.__module__ = fn.__module__
    gen.__doc__ = fn.__doc__
    gen.__secant_source__ = FunctionSource(gen, gast.parse(source).body[0],
                                           gen.__code__.co_filename, 1, source.splitlines(),
                                           fn.__globals__, free, generated=False)
    gen.__secant_traced__ = fn
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


# --- following user functions: values passing through a global between them -----------------
_LIBRARIES = frozenset({"secant", "numpy", "scipy", "jax", "jaxlib", "math", "builtins",
                        "functools", "operator", "itertools", "collections", "typing", "abc",
                        "dataclasses", "copy", "inspect", "types"})


def _followed(value):
    """(function, bound self or None) for a user function, bound method or callable object that
    a following trace runs through; None for anything else (secant's and NumPy's functions,
    classes, custom-rule and jitted functions stay recorded calls)."""
    bound = None
    if isinstance(value, types.MethodType):
        value, bound = value.__func__, value.__self__
    elif not isinstance(value, (types.FunctionType, type, types.ModuleType, _Value, _Named,
                                _Follow)) and callable(value):
        call = getattr(type(value), "__call__", None)
        if not isinstance(call, types.FunctionType):
            return None
        value, bound = call, value
    if not isinstance(value, types.FunctionType) or getattr(value, "__secant_custom__", False) \
            or hasattr(value, "__secant_source__") or hasattr(value, "__secant_generated__") \
            or hasattr(value, "__wrapped__") and not _user_wrapper(value):
        return None
    if (value.__module__ or "").split(".")[0] in _LIBRARIES:
        return None
    return value, bound


def _user_wrapper(fn):
    """Whether `fn`, a function with __wrapped__, is a wrapper the user's own code defines (a
    functools.wraps decorator: flax's @compact pushing the module on a global stack, then
    `return fn(self, *args, **kwargs)`): a following trace runs its code through as written,
    the function it wraps reached through its closure. Not a context manager's helper, nor a
    wrapper of a library's (secant's, the standard library's, an installed package's)."""
    code = getattr(fn, "__code__", None)
    if code is None or code is _CONTEXT_MANAGER_CODE:
        return False
    name = code.co_filename
    if name.startswith("<"):
        return False
    from secant.backends import errors as _errors
    name = os.path.abspath(name)
    return not _errors._is_internal(name) and not name.startswith(_LIBRARY_DIRS) \
        and not name.startswith(_HERE)


def _library_dirs():
    import sysconfig
    paths = sysconfig.get_paths()
    out = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    out |= {os.path.dirname(os.path.dirname(np.__file__))}
    out |= {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))+ os.sep + "secant"}
    return tuple(os.path.abspath(p) + os.sep for p in out if p)


_LIBRARY_DIRS = _library_dirs()


@contextlib.contextmanager
def _a_generator():
    yield


_CONTEXT_MANAGER_CODE = _a_generator.__code__     # (contextlib.contextmanager's helper)


def _context_generator(value):
    """The user's generator function that `value`, a @contextlib.contextmanager function, makes
    its contexts of (`with scaled(2.0):` pushing on a handler stack that a callee reads); None
    for anything else."""
    generator = getattr(value, "__wrapped__", None)
    if not isinstance(value, types.FunctionType) or value.__code__ is not _CONTEXT_MANAGER_CODE \
            or not inspect.isgeneratorfunction(generator) \
            or _followed(generator) is None:
        return None
    return generator


class _Follow:
    """A user function called while a following trace runs: run through on its arguments, its
    globals and closure cells read through recorders of the same recording."""

    def __init__(self, rec, value, force=False):
        self._rec, self._value = rec, value
        self._fn, self._self = (value, None) if force else _followed(value)

    def __call__(self, *args, **kwargs):
        fn = self._fn
        rec = self._rec
        _refuse_state_writes(fn, rec.context, rec.fn, follow=True)
        defaults = fn.__defaults__ and tuple(_follow_stand_in(rec, d, "default")
                                             for d in fn.__defaults__)
        glob = _patched_module(rec, fn.__globals__, fn.__code__)
        runner = types.FunctionType(fn.__code__, glob, fn.__name__, defaults,
                                    _patched_cells(rec, fn))
        runner.__kwdefaults__ = fn.__kwdefaults__ and {
            k: _follow_stand_in(rec, d, k) for k, d in fn.__kwdefaults__.items()}
        if self._self is not None:
            args = (self._self,) + args
        before = _globals_set(fn, glob)
        out = runner(*args, **kwargs)
        _write_back(rec, fn, glob, before)
        return out

    def __get__(self, obj, objtype=None):       # (a followed function stored on a class)
        return self if obj is None else types.MethodType(self, obj)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(self._fn, attr)


def _runs_through(value):
    """Whether a following trace reads `value`, a global or free value of a function it runs,
    through a stand-in of its own (_follow_stand_in) rather than a recorder or itself."""
    return _user_class(type(value)) or _followed(value) is not None \
        or _context_generator(value) is not None or _holds_followed(value)


def _holds_followed(value, depth=0):
    """Whether `value` is a functools.partial of a function a following trace runs through, or
    a dict or tuple (a namedtuple too; of at most 256 items, nested twice at most) holding a
    user function,
    object or class or such a partial: the trace reads it through a stand-in
    (_container_stand_in) so that `layers["dense"](w, x)` runs the user's function through as
    `dense(w, x)` would, never calls it on the trace's recording values."""
    if type(value) is functools.partial:
        return _followed(value.func) is not None
    if depth > 1 or type(value) not in (dict, tuple) and not _named_tuple(value) or \
            len(value) > 256:
        return False
    return any(_user_class(v) if isinstance(v, type) else _user_class(type(v))
               or _followed(v) is not None or _holds_followed(v, depth + 1)
               for v in (value.values() if type(value) is dict else value))


def _named_tuple(value):
    """Whether `value` is a collections.namedtuple or typing.NamedTuple (a tuple with fields)."""
    return isinstance(value, tuple) and isinstance(getattr(type(value), "_fields", None), tuple) \
        and callable(getattr(type(value), "_make", None))


def _container_stand_in(rec, value, hint):
    """The stand-in of `value` (_holds_followed) in a following trace, one per object: a
    partial of the function's _Follow with its arguments' stand-ins; a tuple or dict of its
    items' stand-ins (a dict's writes made to the user's dict too: _FollowedDict). Written into
    the trace (an argument of a recorded call) it is the user's object itself (rec.source)."""
    hit = rec.originals.get(("view", id(value)))
    if hit is not None:
        return hit[0]
    if type(value) is functools.partial:
        stand = functools.partial(_follow_stand_in(rec, value.func, hint),
                                  *[_follow_stand_in(rec, a, hint) for a in value.args],
                                  **{k: _follow_stand_in(rec, v, k)
                                     for k, v in value.keywords.items()})
    elif type(value) is tuple:
        stand = tuple(_follow_stand_in(rec, v, hint) for v in value)
    elif _named_tuple(value):       # (haiku's Transformed(init, apply): its fields by name)
        stand = type(value)._make(_follow_stand_in(rec, v, f) for f, v in zip(
            value._fields, value))
    else:
        stand = _FollowedDict({k: _follow_stand_in(rec, v, k if isinstance(k, str)
                                                   and k.isidentifier() else hint)
                               for k, v in value.items()})
        stand._secant_rec, stand._secant_dict = rec, value
    rec.originals[("view", id(value))] = (stand, value)
    return rec.stand_in(stand, value)


class _FollowedDict(dict):
    """A user's dict holding functions or objects a following trace runs through, as the trace
    reads it: their stand-ins; what the traced code writes into it is written into the user's
    dict too (as itself where it is a stand-in), as the user's code would."""
    __slots__ = ("_secant_rec", "_secant_dict")

    def _own(self, value):
        """`value` as the user's dict holds it: the object a stand-in of this trace stands for
        (a followed function, object or class, a partial, dict or tuple), else itself."""
        value = self._secant_rec.original(value)
        if isinstance(value, _Object):
            return object.__getattribute__(value, "_secant_obj")
        if type(value) in (_Follow, _Class):
            return value._value if type(value) is _Follow else value._cls
        return value

    def __setitem__(self, key, value):
        self._secant_dict[key] = self._own(value)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key):
        del self._secant_dict[key]
        dict.__delitem__(self, key)

    def pop(self, key, *default):
        self._secant_dict.pop(key, *default)
        return dict.pop(self, key, *default)

    def popitem(self):
        key, value = dict.popitem(self)
        self._secant_dict.pop(key, None)
        return key, value

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other):
        self.update(other)
        return self

    def clear(self):
        self._secant_dict.clear()
        dict.clear(self)


def _user_class(cls):
    """A class of the user's own (haiku's hk.Module, a frame), plain objects all the way up: its
    instances made or read while following are followed too (_Object)."""
    return isinstance(cls, type) and not issubclass(cls, BaseException) and all(
        c is object or (c.__module__ or "").split(".")[0] not in _LIBRARIES
        and c.__module__ not in sys.stdlib_module_names and type(c) is type
        for c in cls.__mro__)


def _follow_stand_in(rec, value, hint):
    """A followed function's global or free value as the run reads it: user functions, classes
    and objects followed, modules and library functions recorded (named by a constant of the
    traced source, since they are not the traced function's own globals), anything else
    itself."""
    if type(value) in (_Object, _DictObject, _Follow, _Class, _TypeOf):
        return value        # (a view stored on a followed object: substitute(model)'s in
                            # trace(...).fn)
    if rec.arrays_named and (isinstance(value, np.ndarray) or type(value).__name__ == "Array"):
        # (an array a followed object or function holds, in a trace with a call's arguments:
        # a constant of the traced source, so that arithmetic with recorded values records)
        return _Value(rec, rec.const(value, hint if hint.isidentifier() else "array"))
    if isinstance(value, type):
        return rec.klass(value) if _user_class(value) else value
    if _user_class(type(value)):
        return rec.object(value)
    generator = _context_generator(value)
    if generator is not None:       # (`with scaled(2.0):`: its generator run through)
        return contextlib.contextmanager(_Follow(rec, generator, force=True).__call__)
    if _followed(value) is not None:
        return _Follow(rec, value)
    if _holds_followed(value):
        return _container_stand_in(rec, value, hint)
    if _replaceable(value):
        return _ConstNamed(rec, hint, value)
    return value


class _ConstNamed(_Named):
    """A recorder of a module or function a followed function names: written as a constant of
    the traced source (bound to that object), named when first written."""

    def __init__(self, rec, leaf, obj):
        name = getattr(obj, "__name__", None)
        if isinstance(name, str) and name.isidentifier():
            leaf = name         # (an activation passed as a default: tanh_x, not default_x)
        self._rec, self._leaf, self._obj = rec, leaf, obj

    @property
    def _expr(self):
        return _spelled(self._rec, self._obj) or self._rec.const(self._obj, self._leaf)


def _spelled(rec, obj):
    """`jnp.tanh` for an object the traced function's own module names (`jnp` itself, or a
    function of a module it names), else None (then a constant of the traced source)."""
    glob = rec.fn.__globals__
    for name, value in glob.items():
        if value is obj and not name.startswith("_") and not isinstance(value, (int, float)):
            return name if name.isidentifier() else None
    leaf = getattr(obj, "__name__", None)
    if not isinstance(leaf, str) or not leaf.isidentifier():
        return None
    for name, value in glob.items():
        if isinstance(value, types.ModuleType) and not name.startswith("_") \
                and getattr(value, leaf, None) is obj:
            return f"{name}.{leaf}"
    return None


def _patched_module(rec, globals_, code):
    """The globals a followed function with `code` runs with: one copy of its module's per
    recording, the names it reads replaced (patched as functions that read them are met)."""
    hit = rec.modules.get(id(globals_))
    if hit is None:
        hit = rec.modules[id(globals_)] = (dict(globals_), set(), False)
    glob, done, top = hit
    for name in _code_names(code) - done:
        done.add(name)
        if name == "len" and name not in globals_:
            glob[name] = _Len()         # (len of a traced array: its length where it runs)
            continue
        if name == "type" and name not in globals_:
            glob[name] = _TypeOf(rec)   # (type(self) of a followed object: its class)
            continue
        if name not in globals_ or name.startswith("__"):
            continue
        value = globals_[name]
        if top and not (isinstance(value, type) or _runs_through(value)) \
                and _replaceable(value):
            glob[name] = _Named(rec, name, name, value)     # (the traced function's own module)
        else:
            glob[name] = _follow_stand_in(rec, value, name)
    return glob


_code_names_cache = {}     # code -> the names it reads (bounded)


def _code_names(code):
    hit = _code_names_cache.get(code)
    if hit is None:
        if len(_code_names_cache) > 4096:
            _code_names_cache.clear()
        hit = _code_names_cache[code] = frozenset(_names_of_code(code))
    return hit


def _patched_cells(rec, fn):
    """fn's closure as a followed run reads it: one run cell per user cell in a recording (two
    closures sharing a cell, one writing it with nonlocal, still share it)."""
    if not fn.__closure__:
        return None
    out = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
        run = rec.run_cells.get(id(cell))
        if name == "__class__":     # (super()'s cell: the class itself)
            run = cell
        if run is None:
            run = types.CellType(_follow_stand_in(rec, cell.cell_contents, name)) \
                if _filled(cell) else types.CellType()
            rec.run_cells[id(cell)] = run
            rec.pinned.append(cell)
        out.append(run)
    return tuple(out)


_retraced = weakref.WeakKeyDictionary()    # function -> OrderedDict: (source, free objects' ids) -> (traced, pinned)
_RETRACED_KEPT = 8


def pythons_own(error):
    """`error`, raised while a function was traced with its call's arguments, where it is the
    user's code's own Python error, as running the function raises it (an undeclared
    attribute set on a __slots__ object): no refusal of secant's, raised in a user's frame
    or by an object of the user's as this module's views forward to it. Its traceback then
    ends at the user's line, as Python's does (JAX runs the Python: its error is Python's);
    else None (the trace's own failure: the transform's refusal stands)."""
    if isinstance(error, SecantError) or not isinstance(error, Exception) \
            or _about_stand_ins(error):
        return None
    from secant.backends import errors
    from secant.transformer.nonlocals import _standard_library
    tb, last = error.__traceback__, None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not name.startswith("<") and not errors.is_internal_file(name) \
                and not _standard_library(name):
            last = tb       # (a user's frame)
        elif last is not None and name != __file__:
            last = None     # (raised inside secant's own code or a library's, below the user's)
        tb = tb.tb_next
    if last is None:
        return None
    last.tb_next = None
    return error


def _about_stand_ins(error):
    """Whether `error` is about one of the trace's own stand-ins (a traced value formatted:
    "unsupported format string passed to _Value.__format__"), or secant's tracer: what the
    trace cannot do, not the user's code's error (with the arrays it would run)."""
    if not _STAND_IN_NAMES:
        _STAND_IN_NAMES.extend(sorted(
            {c.__name__ for c in list(globals().values()) if isinstance(c, type)
             and c.__module__ == __name__} | {"Tracer", "Traced", "Array"}))
    culprit = getattr(error, "obj", None)       # (AttributeError: the object read)
    return (type(culprit).__module__ or "").startswith("secant.") or any(
        re.search(rf"\b{n}\b", str(error)) for n in _STAND_IN_NAMES)


_STAND_IN_NAMES = []    # the trace's own classes (and the tracer's): named by its errors


def retraced(fn, why, arguments=None, active=()):
    """`fn` traced now, following its calls into user functions (record(follow=True)): a
    function whose source is the trace. Traced again on every call, since what it reads (a
    global frame stack, a module-level cache) is Python state no identity guard watches; two
    traces with the same text and the same objects bound to its free names are one function,
    so the one built first is returned (and the transforms' caches keep its derivatives)."""
    import collections
    taken = _calls.get(_ident()) if arguments is None else None
    if taken is not None and (fn, why) in taken:    # (this call's trace: taken once)
        _collect(fn, why, taken[fn, why])
        return taken[fn, why]
    name = fn.__name__ if fn.__name__.isidentifier() and not keyword.iskeyword(fn.__name__) \
        else "lambda_"
    run = record(fn, context=f"{fn.__qualname__} is traced on each call ({why})", follow=True,
                 arguments=arguments, active=active)
    rec = run.rec
    out = rec.source(run.result)
    header = f"def {name}({run.params()}):"
    body = [f"# traced from {fn.__qualname__} on each call: {why}"]
    if arguments is not None:
        body = [f"# traced from {fn.__qualname__} for each call's arguments: {why}"]
    source = "\n".join([header] + ["    " + ln for ln in body + rec.lines + [f"return {out}"]])
    source += "\n"
    free, user_cells = run.free()
    key = (source, tuple((k, id(v)) for k, v in sorted(free.items())),
           tuple((k, id(c)) for k, c in sorted(user_cells.items())))
    kept = _retraced.setdefault(fn, collections.OrderedDict())
    hit = kept.get(key)
    if hit is not None:
        kept.move_to_end(key)
        if arguments is None:
            _collect(fn, why, hit[0])
            if taken is not None:
                taken[fn, why] = hit[0]
        return hit[0]
    gen = _load_traced(fn, source, name, free, user_cells, _origins(rec, 3))
    # (one traced for a call's arguments is traced again by its dispatcher at each call,
    # secant/transforms.py _per_call: what was generated from it stands while it is the same)
    gen.__secant_guards__ = (SameTrace(fn, why, gen),) if arguments is None else ()
    gen.__secant_reads_lengths__ = any(ln.startswith("assert ") for ln in rec.lines)
    kept[key] = (gen, (free, user_cells))       # (ids in the key stay those objects' own)
    while len(kept) > _RETRACED_KEPT:
        kept.popitem(last=False)
    if arguments is None:
        _collect(fn, why, gen)
        if taken is not None:
            taken[fn, why] = gen
    return gen


# thread id -> {(fn, why): its trace} of the transformed call that thread runs (a dict keyed
# by thread, not a threading.local: setting a local's attribute costs ~1 us, and every eager
# call of a transformed function opens one: issue 19)
_calls = {}
_ident = threading.get_ident


@contextlib.contextmanager
def once_per_call():
    """`with once_per_call():` around one call of a transformed function: each function
    traced on each call (retraced without a call's arguments) is traced once in it, however
    many times the transform's guards and generation ask for its trace (jvp's generation takes
    it, then the guard of the derivative made from it asks again; jacfwd reads its output's
    layout, then its jvp): its Python effects run once per call, as JAX traces a function once
    per transformation call. Calls nested in it share its traces."""
    tid = _ident()
    if tid in _calls:
        yield
        return
    _calls[tid] = {}
    try:
        yield
    finally:
        del _calls[tid]


def once_in(call, args, kwargs):
    """call(*args, **kwargs) inside once_per_call (a transformed function's whole call: its
    run, the guards asked before it and a run again after a rebound callee share one trace of
    each function traced on each call), at the cost of one dict test when nested."""
    tid = _ident()
    if tid in _calls:
        return call(*args, **kwargs)
    _calls[tid] = {}
    try:
        return call(*args, **kwargs)
    finally:
        del _calls[tid]


_collecting = threading.local()     # .stack: the guard lists of the jit traces running


@contextlib.contextmanager
def guards_collected():
    """A list that receives the guard of every function traced on each call (retraced) while
    a jit trace runs (secant/api.py): the compiled program asks them before each call."""
    stack = _collecting.__dict__.setdefault("stack", [])
    guards = []
    stack.append(guards)
    try:
        yield guards
    finally:
        stack.pop()


def _collect(fn, why, traced):
    for guards in getattr(_collecting, "stack", ()):
        guards.append(SameTrace(fn, why, traced))


class _Class:
    """A user class named by followed code: instances it makes are followed (_Object), their
    __init__ run through; isinstance and class attributes read the class itself."""

    def __init__(self, rec, cls):
        self._rec, self._cls = rec, cls

    def __call__(self, *args, **kwargs):
        cls = self._cls
        obj = cls.__new__(cls) if cls.__new__ is object.__new__ else \
            cls.__new__(cls, *args, **kwargs)
        view = self._rec.object(obj)
        init = cls.__init__
        if isinstance(init, types.FunctionType):
            _Follow(self._rec, types.MethodType(init, view))(*args, **kwargs)
        return view

    def __instancecheck__(self, obj):
        return isinstance(obj, self._cls)

    def __subclasscheck__(self, cls):
        return issubclass(cls, self._cls)

    def __getattr__(self, attr):
        if attr.startswith("__") and attr not in _CLASS_FACTS:
            raise AttributeError(attr)
        return getattr(self._cls, attr)


_CLASS_FACTS = frozenset({"__name__", "__qualname__", "__module__", "__doc__", "__mro__",
                          "__bases__"})


class _Object:
    """A user object met while following (a module, a frame): its methods run through with
    `self` this view, its attributes read and set on the object itself; a library function or
    module stored on it (`self.act = snp.tanh`) recorded. Its properties and its class's own
    __setattr__ run through too. A view of an object with a __dict__ (_DictObject) shares that
    dict, so `object.__setattr__(view, name, v)` (flax's `_bind`) sets the object's field."""
    __slots__ = ("_secant_rec", "_secant_obj", "__weakref__")

    def __init__(self, rec, obj):
        object.__setattr__(self, "_secant_rec", rec)
        object.__setattr__(self, "_secant_obj", obj)

    @property
    def __class__(self):        # (isinstance, and super() in its methods)
        return type(object.__getattribute__(self, "_secant_obj"))

    def __getattribute__(self, attr):
        if attr in ("__class__", "__dict__"):
            return object.__getattribute__(self, attr)
        return _Object._secant_getattr(self, attr)

    def _secant_getattr(self, attr):
        obj = object.__getattribute__(self, "_secant_obj")
        rec = object.__getattribute__(self, "_secant_rec")
        prop = _class_attribute(type(obj), attr)
        if isinstance(prop, property) and _followed(prop.fget) is not None:
            return _Follow(rec, types.MethodType(prop.fget, self))()    # (Variable.value)
        value = getattr(obj, attr)
        if isinstance(value, types.MethodType) and value.__self__ is obj:
            if _followed(value) is not None:
                return _Follow(rec, types.MethodType(value.__func__, self))
            return value
        return value if attr.startswith("__") else _follow_stand_in(rec, value, attr)

    def __setattr__(self, attr, value):
        obj = object.__getattribute__(self, "_secant_obj")
        rec = object.__getattribute__(self, "_secant_rec")
        prop = _class_attribute(type(obj), attr)
        if isinstance(prop, property) and prop.fset is not None \
                and _followed(prop.fset) is not None:       # (`v.value = x` of a Variable)
            _Follow(rec, types.MethodType(prop.fset, self))(value)
            return
        setter = getattr(type(obj), "__setattr__", None)
        if isinstance(self, _DictObject) and isinstance(setter, types.FunctionType) \
                and _followed(setter) is not None:
            # (the class's own __setattr__, run through: flax's binding of a submodule
            # assigned in setup(); its object.__setattr__(self, ...) sets the shared dict)
            _Follow(rec, types.MethodType(setter, self))(attr, value)
            return
        setattr(obj, attr, value)

    def __delattr__(self, attr):
        delattr(object.__getattribute__(self, "_secant_obj"), attr)

    def __call__(self, *args, **kwargs):
        obj = object.__getattribute__(self, "_secant_obj")
        call = getattr(type(obj), "__call__", None)
        if not isinstance(call, types.FunctionType) or _followed(call) is None:
            return obj(*args, **kwargs)
        return _Follow(object.__getattribute__(self, "_secant_rec"),
                       types.MethodType(call, self))(*args, **kwargs)

    def _secant_dunder(self, name, *args):
        """type(obj).name(self, *args) run through (a user's method) or called on obj; a
        TypeError as Python's where its class has none (`with` of a plain object)."""
        obj = object.__getattribute__(self, "_secant_obj")
        method = getattr(type(obj), name, None)
        if method is None:
            raise TypeError(f"'{type(obj).__name__}' object does not support the context "
                            f"manager protocol")
        if not isinstance(method, types.FunctionType):
            return getattr(obj, name)(*args)
        return _Follow(object.__getattribute__(self, "_secant_rec"),
                       types.MethodType(method, self))(*args)

    def __enter__(self):        # (`with self:` in a numpyro-like handler's __call__)
        return _Object._secant_dunder(self, "__enter__")

    def __exit__(self, *exc):
        return _Object._secant_dunder(self, "__exit__", *exc)

    def __getitem__(self, key):
        return object.__getattribute__(self, "_secant_obj")[key]

    def __setitem__(self, key, value):
        object.__getattribute__(self, "_secant_obj")[key] = value

    def __len__(self):
        return len(object.__getattribute__(self, "_secant_obj"))

    def __iter__(self):
        return iter(object.__getattribute__(self, "_secant_obj"))

    def __contains__(self, key):
        return key in object.__getattribute__(self, "_secant_obj")

    def __bool__(self):
        return bool(object.__getattribute__(self, "_secant_obj"))

    __hash__ = object.__hash__


def _object_operator(name):
    """`a * b` of a view: the viewed class's own `__mul__` run through with `self` the view
    (a tape's Var, a dual number), NotImplemented where the class has none of its own (Python
    then tries the other operand's reflected one, as it would)."""
    def operator(self, *args):
        obj = object.__getattribute__(self, "_secant_obj")
        method = getattr(type(obj), name, None)
        if not isinstance(method, types.FunctionType):
            return NotImplemented
        return _Follow(object.__getattribute__(self, "_secant_rec"),
                       types.MethodType(method, self))(*args)
    operator.__name__ = name
    return operator


for _name in [n for n in list(_BINOPS) + list(_REFLECTED) if n not in ("__eq__", "__ne__")] + [
        "__neg__", "__pos__", "__abs__", "__invert__"]:
    setattr(_Object, _name, _object_operator(_name))


class _DictObject(_Object):
    """(_Object of an object with a __dict__: the view's __dict__ is that dict itself)"""
    __slots__ = ("__dict__",)


def _object_view(rec, obj):
    """The view of `obj` a following trace reads it through: sharing its __dict__ where it
    has one (an object of __slots__ only: a view of its own, which sets nothing of its own)."""
    try:
        fields = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        fields = None
    if type(fields) is not dict:
        return _Object(rec, obj)
    view = _view_class(type(obj))(rec, obj)
    object.__setattr__(view, "__dict__", fields)
    return view


class _NoSetter(TraceSourceError, AttributeError):
    """object.__setattr__ of a property without a setter (Python's AttributeError)."""


class _SetThrough:
    """On a view's class, for a data descriptor (a property) of the viewed object's class:
    `object.__setattr__(view, name, v)` runs that descriptor's __set__ as Python would on the
    object (a property's setter run through; no setter: Python's AttributeError), never a
    field stored in the shared __dict__ that the property would then hide."""

    def __init__(self, attr):
        self.attr = attr

    def __get__(self, view, owner=None):
        return self if view is None else _Object._secant_getattr(view, self.attr)

    def __set__(self, view, value):
        obj = object.__getattribute__(view, "_secant_obj")
        rec = object.__getattribute__(view, "_secant_rec")
        prop = _class_attribute(type(obj), self.attr)
        if isinstance(prop, property):
            if prop.fset is None:       # (Python's AttributeError, at the user's line)
                raise _NoSetter(f"property {self.attr!r} of {type(obj).__name__!r} object has "
                                f"no setter (setting it cannot bypass the property, in Python "
                                f"as in a trace){_caller_line()}")
            if _followed(prop.fset) is not None:
                _Follow(rec, types.MethodType(prop.fset, view))(value)
                return
        prop.__set__(obj, value)

    def __delete__(self, view):
        _class_attribute(type(object.__getattribute__(view, "_secant_obj")),
                         self.attr).__delete__(object.__getattribute__(view, "_secant_obj"))


_VIEW_CLASSES = weakref.WeakKeyDictionary()


def _view_class(cls):
    """_DictObject, or (a class with data descriptors, properties) its subclass that sets them
    through (_SetThrough)."""
    try:
        return _VIEW_CLASSES[cls]
    except (KeyError, TypeError):
        pass
    described = {a for c in getattr(cls, "__mro__", ())[:-1] for a, d in vars(c).items()
                 if a not in ("__dict__", "__weakref__", "__class__") and not a.startswith("__")
                 and hasattr(type(d), "__set__") and a not in _DictObject.__dict__}
    view = _DictObject
    if described:
        view = type(f"_DictObject_{cls.__name__}", (_DictObject,),
                    {"__slots__": (), **{a: _SetThrough(a) for a in described}})
    try:
        _VIEW_CLASSES[cls] = view
    except TypeError:
        pass
    return view


def _class_attribute(cls, attr):
    """cls's own attribute `attr` (a property, a function), found along its MRO without
    running a descriptor; None where none defines it."""
    for c in getattr(cls, "__mro__", ()):
        d = c.__dict__
        if attr in d:
            return d[attr]
    return None


class _TypeOf:
    """`type` as a followed function reads it: type(view) of a followed object its class (a
    view of it, as the class's name reads: `type(self)(root, path)` builds a followed object),
    anything else Python's."""

    def __init__(self, rec):
        self._rec = rec

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], _Object):
            cls = type(object.__getattribute__(args[0], "_secant_obj"))
            return _follow_stand_in(self._rec, cls, "type")
        return type(*args, **kwargs)

    def __instancecheck__(self, obj):
        return isinstance(obj, (type, _Class))

    def __subclasscheck__(self, cls):
        return issubclass(cls, type)


class SameTrace:
    """The guard of a function traced on each call (retraced): `fn` traced again now is still
    `traced` (the same text, the same objects bound to its free names), so what was generated
    from `traced` is what would be generated now. Sound, not heuristic: the trace is the whole
    of what the generated code took from the Python state the run read (the global's contents,
    a Python branch's flag), and it is taken again each time the guard is asked."""

    # (asked before a run only: taken again after it, the trace would run the user's Python
    # a second time in the call, and the run used the trace taken for this call's state)
    runs_user_code = True

    def __init__(self, fn, why, traced):
        self.fn, self.why = fn, why
        self.traced = weakref.ref(traced)

    def holds(self):
        return retraced(self.fn, self.why) is self.traced()   # (a trace refused now: raised)

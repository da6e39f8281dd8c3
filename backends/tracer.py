"""The jit trace: Tracers record each primitive as StableHLO text into one `func.func public @main`,
each op tagged with `loc("file":line:col)` of the user's line that produced it."""
import contextlib
import linecache
import re
import threading

import numpy as np

from secant.backends import core, dtypes
from secant.backends.core import Tracer, aval_of
from secant.backends.emitter import Body, ttype
from secant.backends.errors import (SecantError, SecantTypeError, UnexpectedTracerError, origin,
                                    user_frame, where)

_positions = {}


def _column(frame):
    code = frame.f_code
    pos = _positions.get(code)
    if pos is None:
        pos = _positions[code] = list(code.co_positions())
    i = frame.f_lasti // 2
    col = pos[i][2] if i < len(pos) and pos[i][2] is not None else 0
    return col + 1


_scopes = threading.local()       # names of the enclosing named_scope / named_call blocks


@contextlib.contextmanager
def named(name):
    """Ops traced inside carry `name` (joined with the enclosing names by "/") in their
    location: `loc("encoder/dense"("file.py":12:5))`, as JAX's named_scope."""
    stack = getattr(_scopes, "stack", None)
    if stack is None:
        stack = _scopes.stack = []
    stack.append(name)
    try:
        yield
    finally:
        stack.pop()


def current_loc():
    f = user_frame()
    if f is None:
        return ""
    fn, line = origin(f.f_code.co_filename, f.f_lineno)
    fn = fn.replace("\\", "\\\\").replace('"', '\\"')
    site = f'("{fn}":{line}:{_column(f)})'
    stack = getattr(_scopes, "stack", None)
    if stack:
        scope = "/".join(stack).replace("\\", "\\\\").replace('"', '\\"')
        return f' loc("{scope}"{site})'
    return f" loc{site}"


LeakedTracerError = UnexpectedTracerError     # the name this module used before


_LOC = re.compile(r'\("((?:[^"\\]|\\.)*)":(\d+):\d+\)')     # (inside a named loc too)


def _site(loc):
    """'FILE:LINE' and the source line of a Tracer's `loc(...)` text, or None."""
    m = _LOC.search(loc or "")
    if m is None:
        return None
    fn = re.sub(r"\\(.)", r"\1", m.group(1))
    line = int(m.group(2))
    src = linecache.getline(fn, line).strip()
    return f"{fn}:{line}" + (f"\n    {src}" if src else "")


def leaked(t, using=None):
    """The UnexpectedTracerError for Tracer `t` used where its value does not exist: after its
    trace finished, in another trace (`using`), or outside the loop/branch body that made it.
    Names the user's line that made the value and the line that used it."""
    mine = t._trace
    if mine.live and mine.thread != threading.get_ident():
        head = (f"a traced value {t.aval.str_short()} of the {mine.what} was used in another "
                f"thread ({threading.current_thread().name}) while thread {mine.thread_name} "
                "was still tracing: it escaped the traced function (stored in a global, a "
                "closure or a list); a trace's values belong to the thread tracing it")
        hint = ("Pass the value between threads only as a result of the jitted function "
                "(after its call returns).")
    elif not mine.live:
        head = (f"a traced value {t.aval.str_short()} of the {mine.what} was used after that trace "
                "finished: it escaped the traced function (stored in a global, a closure or a "
                "list), and outside it has no value")
        hint = "Return the value from the function instead of storing it."
    elif using is not None and using is not mine:
        head = (f"a traced value {t.aval.str_short()} of the {mine.what} was used in another "
                f"trace ({using.what}): it escaped the function that made it (stored in a "
                "global, a closure or a list)")
        hint = "Pass the value as an argument or return it instead of storing it."
    else:
        head = (f"a traced value {t.aval.str_short()} was used outside the function or "
                "branch/loop body that made it (it escaped the body, e.g. stored in a list or a "
                "closure)")
        hint = "Return the value from the body (a loop carry or output) instead of storing it."
    made = _site(t._loc)
    if made:
        made = (f"\n  created as an argument of the traced function, by the call at {made}"
                if any(p is t for p in mine.params) else f"\n  created at {made}")
    used = where().replace("\n  at ", "\n  used at ", 1)
    raise UnexpectedTracerError(head + (made or "") + used
                                + "\n  " + hint)


_active = []      # the traces being built now, innermost last


class _ThreadState(threading.local):
    def __init__(self):
        self.active = []      # the traces this thread is building now, innermost last


_state = _ThreadState()      # per thread: two threads tracing at once never see each other's


def active_trace():
    """The trace jit is building right now in this thread, or None in eager code."""
    active = _state.active
    return active[-1] if active else None


class Trace:
    """One function being traced: its parameters, body, and constants."""

    live = True       # cleared by finish(): its Tracers are then dead (any use raises)

    # (x * 1, x / 1 and a reshape of a reshape emitted as less: jit's trace; make_jaxpr's
    # records every primitive as the function applied it, secant/jaxpr.py)
    simplify = True

    def __init__(self, name="f", kind="jit"):
        self.name = re.sub(r"\W", "_", name) or "f"
        self.what = f"{kind} trace of {name}"
        self.thread = threading.get_ident()         # its values are used in this thread only
        self.thread_name = threading.current_thread().name
        self._arg_loc = None
        self.body = Body()
        self.params = []
        self._consts = {}
        self._open = [self.body]      # the function body and the regions being traced in it
        # jit's own traces: a concrete array of more than one element met in the function's
        # own body (a closed-over batch) becomes a parameter of its own, after the arguments,
        # whose value each call passes (`hoisted`), not a literal in the module text: closures
        # over other values of the same shapes then share one compiled program (issue 19)
        self.hoist = False
        self.hoisted = []
        self._ones = set()      # the SSA names of values holding a real one everywhere
        #                         (_times_one; names are unique in a module)
        self._reshaped = {}     # the SSA name of a reshape's result -> its operand (_reshapes)

    def finish(self):
        """The function is traced: a Tracer of it used from now on raises (it leaked)."""
        self.live = False

    def leaked(self, t):
        leaked(t, self)

    def owned_here(self):
        return self.thread == threading.get_ident()

    def new_arg(self, aval):
        if self._arg_loc is None:       # a parameter is made by the call that traces
            self._arg_loc = current_loc()
        t = Tracer(self, aval, f"%arg{len(self.params)}", self._open[0], self._arg_loc)
        self.params.append(t)
        return t

    @contextlib.contextmanager
    def activate(self):
        """Mark this trace as the one being built (loops then stage instead of unrolling)."""
        active = _state.active
        active.append(self)
        try:
            yield self
        finally:
            active.pop()

    @contextlib.contextmanager
    def region(self, arg_avals=()):
        """Trace into a nested region (a branch, a loop body): ops go to a new Body whose block
        arguments are `arg_avals`; values of enclosing bodies stay usable (implicit capture)."""
        parent = self.body
        body = Body(parent.namer, parent.indent + "    ")
        loc = current_loc() if arg_avals else ""    # block arguments: made by the lax call
        args = [Tracer(self, a, body.fresh(), body, loc) for a in arg_avals]
        self.body = body
        self._open.append(body)
        try:
            yield body, args
        finally:
            self._open.pop()
            self.body = parent

    def const(self, value, aval):
        """A concrete operand (a closed-over array, a Python scalar) becomes a constant op."""
        key = None
        if type(value) is core._Array or isinstance(value, np.ndarray):
            key = (id(self.body), id(value), aval)
            hit = self._consts.get(key)
            if hit is not None and hit[0] is value and hit[2] is self.body:
                return hit[1]
        if key is not None and self.hoist and self.body is self._open[0] \
                and np.size(value) > 1:
            name = f"%arg{len(self.params)}"
            self.params.append(Tracer(self, aval, name, self._open[0], self._arg_loc))
            self.hoisted.append(value)
            self._consts[key] = (value, name, self.body)
            return name
        v = value._value() if type(value) is core._Array else value
        name = self.body.constant(np.asarray(v, dtype=aval.dtype), aval.dtype)
        if key is not None:
            # holds `value` and the body so their ids stay unique: a closed region's Body
            # must not be freed and its id reused by a later region, which would then name a
            # constant defined inside the closed region (an undeclared SSA value)
            self._consts[key] = (value, name, self.body)
        return name

    def lift(self, x):
        """Any value -> a Tracer of this trace."""
        if isinstance(x, Tracer):
            self._check(x)
            return x
        aval = aval_of(x)
        self.body.loc = current_loc()
        t = Tracer(self, aval, self.const(x, aval), self.body)
        if _all_ones(x):
            self._ones.add(t.name)
        return t

    def _check(self, t):
        if t._trace is not self or not self.live or (t._body is not None
                                                     and t._body not in self._open) \
                or self.thread != threading.get_ident():
            leaked(t, self)

    def emit(self, prim, args, params):
        from secant.backends.lowering import LOWERINGS  # noqa: F401 (registers all)
        loc = current_loc()
        self.body.loc = loc
        if self.simplify:
            args, params = self._reshapes(prim, args, params)
            if args is None:
                return params       # (a reshape to the shape its operand had before)
        avals, names = [], []
        for a in args:
            if isinstance(a, Tracer):
                self._check(a)
                avals.append(a.aval)
                names.append(a.name)
            else:
                av = aval_of(a)
                avals.append(av)
                names.append(self.const(a, av))
        try:
            out = prim.shape_rule(*avals, **params)
        except SecantError:
            raise
        except Exception as e:  # a rule failing on odd input is still the user's input error
            raise SecantTypeError(f"{prim.name}: {e}{where()}") from e
        w = prim.out_weak([a.weak_type for a in avals], params)
        outs = out if prim.multiple_results else [out]
        outs = [o if o.weak_type == w else o.update(weak_type=w) for o in outs]
        same = None if prim.multiple_results or not self.simplify else \
            _times_one(self, prim, args, outs[0])
        if same is not None:
            return same
        self.body.loc = loc
        lower = LOWERINGS.get(prim.name)
        if lower is None:
            raise SecantError(f"primitive {prim.name} has no StableHLO lowering")
        res = lower(self.body, avals, outs if prim.multiple_results else outs[0], *names, **params)
        if prim.multiple_results:
            return [Tracer(self, o, r, self.body) for o, r in zip(outs, res)]
        t = Tracer(self, outs[0], res, self.body)
        if prim.name in ("reshape", "expand_dims") and isinstance(args[0], Tracer):
            self._reshaped[t.name] = args[0]
        if prim.name in _SHAPED and args and self._is_ones(args[0]) and \
                outs[0].dtype.kind in "biuf":
            self._ones.add(t.name)      # (a one broadcast, reshaped or cast: ones)
        return t

    def _reshapes(self, prim, args, params):
        """(args, params) of `prim` with a reshaped operand read from before its reshape
        where that is the same op: a reshape of a reshape is one reshape of the first's
        operand (None, that operand, where it has the shape asked for), a broadcast of a
        reshaped scalar broadcasts the scalar (a reduction's cotangent made (1, 1) then
        broadcast: ad/helpers.py unreduce). The reshape emitted before stays only if
        something else reads it (the module keeps only what its results read)."""
        if not args or not isinstance(args[0], Tracer) or args[0].name not in self._reshaped:
            return args, params
        src = self._reshaped[args[0].name]
        if src._body not in self._open or src._trace is not self:
            return args, params
        if prim.name == "reshape":
            if tuple(params.get("new_sizes", ())) == src.aval.shape and \
                    set(params) == {"new_sizes"}:
                return None, src
            return [src] + list(args[1:]), params
        if prim.name == "broadcast_in_dim" and src.aval.shape == () and \
                set(params) == {"shape", "broadcast_dimensions"}:
            return [src] + list(args[1:]), dict(params, broadcast_dimensions=())
        return args, params

    def _is_ones(self, c):
        return c.name in self._ones if isinstance(c, Tracer) else _all_ones(c)

    def module(self, outs, num_replicas=1, kind="jit"):
        """The module text for `outs` (a flat list of Tracers or concrete values); pmap's
        per-device program says num_replicas = its device count."""
        outs = [self.lift(o) for o in outs]
        args = ", ".join(f"{p.name}: {ttype(p.aval)}" for p in self.params)
        res_types = ", ".join(ttype(o.aval) for o in outs)
        ret = f"    return {', '.join(o.name for o in outs)} : {res_types}" if outs else "    return"
        body = self.body.text(tail=[ret])       # (its ops pruned: what `ret` reads, once)
        text = (f"module @{kind}_{self.name} attributes {{mhlo.num_partitions = 1 : i32, "
                f"mhlo.num_replicas = {int(num_replicas)} : i32}} {{\n"
                f"  func.func public @main({args}) -> ({res_types}) {{\n"
                + body + "\n  }\n}\n")
        return text, [o.aval for o in outs]


_SHAPED = ("broadcast_in_dim", "reshape", "convert_element_type")


def _times_one(trace, prim, args, out):
    """The traced operand t of `t * c`, `c * t` or `t / c` where c is a real one (every
    element: grad's seed, `1.0`, a concrete scalar, or such a constant lifted into the trace,
    broadcast, reshaped or cast) and the result has t's shape, dtype and weak type:
    t itself, exactly (x * 1 and x / 1 are x in IEEE arithmetic for real x, NaN, inf and -0.0
    included; not for complex x, where inf * (1 + 0j) is nan), so no constant, broadcast and
    multiply are emitted (a derivative's `2 * hs * grad_seed_like(hs)`). Else None."""
    if prim.name not in ("mul", "div") or len(args) != 2:
        return None
    for k in ((0, 1) if prim.name == "mul" else (0,)):
        t, c = args[k], args[1 - k]
        if not isinstance(t, Tracer) or t.aval != out or dtypes.is_complex(out.dtype) or \
                not trace._is_ones(c):
            continue
        return t
    return None


def _all_ones(c):
    """Whether concrete c is a real one of one element (a scalar: a literal in the module,
    never a hoisted parameter whose value a later call may change, Trace.const)."""
    if isinstance(c, Tracer):
        return False
    try:
        v = np.asarray(c._value() if type(c) is core._Array else c)
    except Exception:       # (not a plain array: never read as one)
        return False
    return v.dtype.kind in "biuf" and v.size == 1 and bool(v.reshape(()) == 1)


def canonical_aval(x):
    """The abstract value jit keys and traces on, for an argument leaf."""
    if isinstance(x, Tracer) or type(x) is core._Array:
        return x.aval
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return core.ShapedArray((), dtypes.python_scalar_dtype(x), not isinstance(x, bool))
    x = np.asarray(x) if not hasattr(x, "dtype") else x
    return core.ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype), False)

"""make_jaxpr: the program jit traces for a function, one primitive per line, typed.

`make_jaxpr(f)(*args)` traces f as jit does (backends/tracer.py), recording every primitive it
applies, and returns a ClosedJaxpr: its text is JAX's jaxpr notation (`{ lambda ; a:f32[3]. let
b:f32[3] = sin a ... in (c,) }`), and its `.jaxpr` (`.eqns`, `.invars`, `.outvars`,
`.constvars`), `.in_avals`, `.out_avals`, `.consts` and `.literals` serve the common uses of
JAX's (counting equations, `eqn.primitive.name`, the avals of inputs and outputs). The primitives
are secant's (backends/primitives), named as JAX names its own where both have one; lax.cond /
switch show as `cond` and loops (while_loop, fori_loop, scan) as `while`, with their branches
and bodies as nested jaxprs. Works on any function jit takes, so on grad(f), vmap(f), jvp, ...
"""
import contextlib
import functools
import re

import numpy as np

from secant.backends.core import ShapedArray, Tracer
from secant.backends.emitter import Body
from secant.backends.tracer import Trace, canonical_aval

_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
          "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
          "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool",
          "complex64": "c64", "complex128": "c128"}
_FROM_IR = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16",
            "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
            "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64",
            "complex<f32>": "complex64", "complex<f64>": "complex128"}


def aval_text(aval):
    """`f32[3,4]` (JAX's short form of an aval)."""
    return f"{_SHORT.get(aval.dtype.name, aval.dtype.name)}[{','.join(map(str, aval.shape))}]"


class Var:
    """A variable of a jaxpr: its `aval`; str() is its name (a, b, ..., z, ba, ...)."""
    __slots__ = ("aval", "_name")

    def __init__(self, aval, name):
        self.aval, self._name = aval, name

    def __str__(self):
        return self._name

    def __repr__(self):
        return f"{self._name}:{aval_text(self.aval)}"


class Literal:
    """A constant operand written into an equation (a Python scalar)."""
    __slots__ = ("val", "aval")

    def __init__(self, val, aval):
        self.val, self.aval = val, aval

    def __str__(self):
        v = self.val.item() if isinstance(self.val, np.ndarray) else self.val
        return f"{v!r}:{aval_text(self.aval)}"

    __repr__ = __str__


class Primitive:
    """A control-flow primitive (cond, while): only its name, as JAX's Primitive."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name

    __str__ = __repr__


_COND, _WHILE = Primitive("cond"), Primitive("while")


class JaxprEqn:
    """One equation: `outvars = primitive[params] invars`."""

    def __init__(self, primitive, invars, outvars, params):
        self.primitive, self.invars, self.outvars, self.params = primitive, invars, outvars, params

    def __str__(self):
        return _eqn_text(self, "")

    __repr__ = __str__


class Jaxpr:
    """The equations of a function: constvars, invars, eqns, outvars."""

    def __init__(self, constvars, invars, eqns, outvars):
        self.constvars, self.invars, self.eqns, self.outvars = constvars, invars, eqns, outvars
        self.effects = frozenset()

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    def __str__(self):
        return _jaxpr_text(self, "")

    __repr__ = __str__

    def pretty_print(self, **_):
        return str(self)


class ClosedJaxpr:
    """A Jaxpr with the values of its constvars (`consts`), as JAX's make_jaxpr returns."""

    def __init__(self, jaxpr, consts):
        self.jaxpr, self.consts = jaxpr, list(consts)

    literals = property(lambda self: self.consts)
    eqns = property(lambda self: self.jaxpr.eqns)
    constvars = property(lambda self: self.jaxpr.constvars)
    invars = property(lambda self: self.jaxpr.invars)
    outvars = property(lambda self: self.jaxpr.outvars)
    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    effects = property(lambda self: self.jaxpr.effects)

    def __str__(self):
        return str(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self, **_):
        return str(self)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


# --- text -------------------------------------------------------------------------------------
def _typed(v):
    return f"{v}:{aval_text(v.aval)}"


def _param_text(v):
    if isinstance(v, np.dtype) or isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if isinstance(v, Jaxpr):
        return None
    return repr(v)


def _eqn_text(eqn, indent):
    params = []
    for k, v in eqn.params.items():
        if isinstance(v, (Jaxpr, list)) and v and all(isinstance(j, Jaxpr) for j in
                                                     (v if isinstance(v, list) else [v])):
            inner = indent + "      "
            if isinstance(v, Jaxpr):
                params.append(f"\n{inner}{k}={_jaxpr_text(v, inner)}")
            else:
                items = (",\n" + inner + "  ").join(_jaxpr_text(j, inner + "  ") for j in v)
                params.append(f"\n{inner}{k}=(\n{inner}  {items}\n{inner})")
            continue
        params.append(f"{k}={_param_text(v)}")
    head = " ".join(_typed(o) for o in eqn.outvars) or "_"
    ptext = f"[{', '.join(params)}]" if params else ""
    if "\n" in ptext:
        ptext = "[" + ",".join(params) + "\n" + indent + "    ]"
    return f"{head} = {eqn.primitive.name}{ptext} {' '.join(map(str, eqn.invars))}".rstrip()


def _jaxpr_text(jaxpr, indent):
    consts = " ".join(_typed(v) for v in jaxpr.constvars)
    ins = " ".join(_typed(v) for v in jaxpr.invars)
    lines = [f"{{ lambda {consts}; {ins}. let"]
    for eqn in jaxpr.eqns:
        lines.append(f"{indent}    {_eqn_text(eqn, indent + '    ')}")
    outs = ", ".join(map(str, jaxpr.outvars))
    lines.append(f"{indent}  in ({outs}{',' if len(jaxpr.outvars) == 1 else ''}) }}")
    return "\n".join(lines)


# --- recording ----------------------------------------------------------------------------------
class _RecordingBody(Body):
    """A Body that keeps the equations traced into it; a control-flow op written to it takes
    the regions (branches, loop bodies) closed just before as nested jaxprs."""

    def __init__(self, trace, namer=None, indent="    "):
        super().__init__(namer, indent)
        self.trace, self.eqns, self.pending = trace, [], []

    def op(self, text):
        name = super().op(text)
        self.trace._control(self, text, [name])
        return name

    def op_multi(self, text, n):
        names = super().op_multi(text, n)
        self.trace._control(self, text, names)
        return names

    def line(self, text):
        super().line(text)
        if text.startswith('"stablehlo.'):       # a control-flow op without results
            self.trace._control(self, text, [])


_CONTROL = re.compile(r'^"stablehlo\.(if|case|while)"\(([^)]*)\)')
_TENSOR = re.compile(r"tensor<((?:\d+x)*)([^>]+(?:>)?)>")


class _RecordingTrace(Trace):
    simplify = False        # (every primitive recorded as applied, as JAX's make_jaxpr)

    def __init__(self, name):
        super().__init__(name, kind="make_jaxpr")
        self.body = _RecordingBody(self)
        self._open = [self.body]
        self._vars = {}         # SSA name -> Var / Literal
        self._count = 0
        self.constvars, self.consts = [], []

    # names
    def _fresh(self, aval):
        n, s = self._count, ""
        self._count += 1
        while True:
            s = chr(ord("a") + n % 26) + s
            n = n // 26
            if n == 0:
                break
            n -= 1
        return Var(aval, s)

    def var(self, tracer):
        v = self._vars.get(tracer.name)
        if v is None:
            v = self._vars[tracer.name] = self._fresh(tracer.aval)
        return v

    def _operand(self, x):
        if isinstance(x, Tracer):
            return self.var(x)
        value = x._value() if hasattr(x, "_value") else x
        aval = canonical_aval(x)
        if np.ndim(value) == 0:
            return Literal(np.asarray(value, aval.dtype).item() if isinstance(value, np.ndarray)
                           else value, aval)
        v = self._fresh(aval)
        self.constvars.append(v)
        self.consts.append(value)
        return v

    # tracing
    def new_arg(self, aval):
        t = super().new_arg(aval)
        self.var(t)
        return t

    def lift(self, x):
        t = super().lift(x)
        if not isinstance(x, Tracer) and t.name not in self._vars:
            self._vars[t.name] = self._operand(x)
        return t

    def emit(self, prim, args, params):
        ins = [self._operand(a) for a in args]
        body = self.body
        out = super().emit(prim, args, params)
        outs = out if prim.multiple_results else [out]
        body.eqns.append(JaxprEqn(prim, ins, [self.var(o) for o in outs], dict(params)))
        return out

    @contextlib.contextmanager
    def region(self, arg_avals=()):
        parent = self.body
        body = _RecordingBody(self, parent.namer, parent.indent + "    ")
        from secant.backends.tracer import current_loc
        loc = current_loc() if arg_avals else ""
        args = [Tracer(self, a, body.fresh(), body, loc) for a in arg_avals]
        arg_vars = [self.var(a) for a in args]
        self.body = body
        self._open.append(body)
        try:
            yield body, args
        finally:
            self._open.pop()
            self.body = parent
            parent.pending.append((body, arg_vars))

    def _control(self, body, text, names):
        m = _CONTROL.match(text)
        if m is None:
            return
        kind = m.group(1)
        operands = [n.strip() for n in m.group(2).split(",") if n.strip()]
        regions = body.pending[-2:] if kind == "while" else list(body.pending)
        body.pending = []
        types = text.rsplit("->", 1)[-1]
        avals = [ShapedArray([int(d) for d in dims.split("x") if d],
                             _FROM_IR.get(dt, dt)) for dims, dt in _TENSOR.findall(types)]
        outs = []
        for n, aval in zip(names, avals):
            v = self._vars[n] = self._fresh(aval)
            outs.append(v)
        ins = [self._vars.get(n) or Var(None, n) for n in operands]
        jaxprs = [Jaxpr([], args, b.eqns, self._region_outs(b)) for b, args in regions]
        if kind == "while":
            params = {"cond_jaxpr": jaxprs[0], "body_jaxpr": jaxprs[1]}
            eqn = JaxprEqn(_WHILE, ins, outs, params)
        else:
            eqn = JaxprEqn(_COND, ins, outs, {"branches": jaxprs[::-1] if kind == "if"
                                                else jaxprs})
        body.eqns.append(eqn)

    def _region_outs(self, body):
        """The values a region returns (its `stablehlo.return` line)."""
        for line in reversed(body.lines):
            s = line.strip()
            if s.startswith("stablehlo.return"):
                names = s[len("stablehlo.return"):].split(":")[0]
                return [self._vars.get(n.strip()) or Var(None, n.strip())
                        for n in names.split(",") if n.strip()]
        return []

    def module(self, outs, num_replicas=1, kind="jit"):
        self.outvars = [self._operand(o) if not isinstance(o, Tracer) else self.var(o)
                        for o in outs]
        return super().module(outs, num_replicas, kind)


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False,
               abstracted_axes=None):
    """`make_jaxpr(f)(*args)`: the ClosedJaxpr of f at these arguments' shapes and dtypes (see
    the module's docstring); with return_shape=True, also the output's ShapeDtypeStructs."""
    from secant.api import JitFunction, _flatten, _leaf_key
    from secant.backends.control_flow import CarryChanged
    from secant.transformer.functionalize import unrolled
    jitted = fun if isinstance(fun, JitFunction) else JitFunction(fun, static_argnums)

    @functools.wraps(fun)
    def make(*args, **kwargs):
        dyn_args, dyn_kwargs, _ = jitted._split(args, kwargs)
        if jitted._simple and not kwargs:
            leaves, treedef = _flatten(args)
        else:
            leaves, treedef = _flatten((dyn_args, dyn_kwargs))
        for x in leaves:
            _leaf_key(x)
        in_avals = [canonical_aval(x) for x in leaves]
        name = getattr(jitted._fun, "__name__", "f")

        def record():
            trace = _RecordingTrace(name)
            try:
                return trace, jitted._trace_into(trace, args, kwargs, treedef, in_avals, name)
            finally:
                trace.finish()
        try:
            trace, (_, _, out_avals, out_tree) = record()
        except CarryChanged as e:       # as jit: a Python loop whose carry changes shape
            try:
                with unrolled():
                    trace, (_, _, out_avals, out_tree) = record()
            except Exception:
                raise e from None
        jaxpr = Jaxpr(trace.constvars, [trace.var(p) for p in trace.params], trace.body.eqns,
                      trace.outvars)
        closed = ClosedJaxpr(jaxpr, trace.consts)
        if return_shape:
            import secant
            struct = getattr(secant, "ShapeDtypeStruct", ShapeDtypeStruct)
            shapes = out_tree.unflatten([struct(a.shape, a.dtype) for a in out_avals])
            return closed, shapes
        return closed
    return make


class ShapeDtypeStruct:
    """(shape, dtype) of a value, as jax.ShapeDtypeStruct."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"



def eval_jaxpr(jaxpr, consts, *args):
    """Evaluate `jaxpr` (a Jaxpr; its constvars bound to `consts`) on `args` with each
    primitive's NumPy implementation; returns the list of outputs (as jax.core.eval_jaxpr)."""
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr, consts = jaxpr.jaxpr, consts if consts is not None else jaxpr.consts
    env = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[id(v)] = np.asarray(x)
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"the jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    return _eval(jaxpr, env, [np.asarray(getattr(a, "_value", lambda: a)()) for a in args])


def _eval(jaxpr, env, args):
    env = dict(env)         # a region reads the values of the jaxprs around it

    def read(v):
        return np.asarray(v.val, v.aval.dtype) if isinstance(v, Literal) else env[id(v)]

    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        if eqn.primitive is _COND:
            branches = eqn.params["branches"]
            index = int(np.clip(ins[0], 0, len(branches) - 1))
            outs = _eval(branches[index], env, [])
        elif eqn.primitive is _WHILE:
            carry = ins
            while bool(_eval(eqn.params["cond_jaxpr"], env, carry)[0]):
                carry = _eval(eqn.params["body_jaxpr"], env, carry)
            outs = carry
        else:
            out = eqn.primitive.impl(*ins, **eqn.params)
            outs = out if eqn.primitive.multiple_results else [out]
        for v, x in zip(eqn.outvars, outs):
            env[id(v)] = np.asarray(x)
    return [read(v) for v in jaxpr.outvars]

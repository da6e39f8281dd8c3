"""secant.custom_gradient, as jax.custom_gradient: `fun(*args)` returns `(value, vjp)`, where
`vjp(out_cotangent)` gives the cotangents of the arguments (a tuple, one per argument; a lone
value for a function of one argument). A secant.custom_vjp with the vjp function as the
residual, in three short functions named after fun's parameters:

    def f(x, y):                    def f_fwd(x, y):                def f_bwd(vjp, out_bar):
        value, _ = fun(x, y)            value, vjp = fun(x, y)          return as_tuple(vjp(out_bar))
        return value                    return value, vjp

Called directly (eagerly or under jit) these run. The transforms cannot follow the vjp
function, a closure over the arguments handed on as a value; so, as JAX does (it traces fun
and closure-converts the vjp into a jaxpr), the transforms read fun *traced* once into straight
lines (transformer/trace_source.py), its vjp called on a recorded cotangent, the values the
vjp reads from fun becoming explicit residuals:

    def f(x):                   def f_fwd(x):                   def f_bwd(res, out_bar):
        # traced from f ...         sin_x = snp.sin(x)              x, = res
        sin_x = snp.sin(x)          return sin_x, (x,)              cos_x = snp.cos(x)
        return sin_x                                                mul = out_bar * cos_x
                                                                    return (mul,)

so vmap, grad of grad (differentiating the vjp), vmap of grad and jit of them all work. A fun
that a trace cannot fix to one path (a Python branch on a traced value) keeps the first form:
grad works, vmap of it and of its derivatives runs it once per example (per_example: a Python
loop, as vmap's definition; under jit the branch on a traced value is an error, as in JAX), and
second derivatives are clear errors saying why. jvp is an error, as in
JAX (a custom_vjp function has no forward-mode derivative)."""
import ast
import inspect

from secant.backends.errors import SecantError, SecantTypeError, UnsupportedError, where
from secant.custom import custom_vjp


class _CustomGradient(custom_vjp):
    """The custom_vjp of custom_gradient(fun): the transforms read its traced form."""

    def __init__(self, made, user_fun):
        super().__init__(made[""])
        self.defvjp(made["_fwd"], made["_bwd"])
        self.user_fun = user_fun
        self._converted = None      # (custom_vjp of the traced form, its guard) or the reason

    def generate_rule(self, mode, params, wrt, staged, batch):
        from secant.transforms import generate
        converted = self.converted()
        if isinstance(converted, tuple):
            custom, guard = converted
            out = generate(custom, wrt, mode, staged=staged, batch=batch)
            out.__secant_guards__ = tuple(getattr(out, "__secant_guards__", ())) + (guard,)
            return out
        why = (f"secant.custom_gradient could not trace {self.__name__} to follow its vjp "
               f"function ({converted})")
        if mode == "vmap":      # (batching fun's body would meet the vjp function as a value)
            return per_example(self, wrt, batch, why)
        plain = custom_vjp(self.fun).defvjp(self.fwd, self.bwd)
        try:
            out = generate(plain, wrt, mode, staged=staged, batch=batch)
        except SecantError as e:
            e.args = (f"{e.args[0] if e.args else e}\n({why})",) + e.args[1:]
            raise
        out.__secant_per_example__ = why    # vmap of its derivative: per example too
        return out

    def converted(self):
        from secant.transformer.trace_source import TraceSourceError
        hit = self._converted
        if isinstance(hit, tuple) and hit[1].holds() or isinstance(hit, str):
            return hit
        try:
            self._converted = _closure_converted(self.user_fun, self.__name__)
        except (TraceSourceError, TypeError, NameError, AttributeError, ValueError) as e:
            self._converted = str(e).splitlines()[0]
        return self._converted


def custom_gradient(fun):
    if not callable(fun):
        raise SecantTypeError(f"custom_gradient expects a function, got {fun!r}{where()}")
    from secant.transforms import load_generated
    sig = inspect.signature(fun)
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not sig.parameters or any(p.kind not in kinds or p.default is not p.empty
                                 for p in sig.parameters.values()):
        raise SecantTypeError(f"custom_gradient: {fun.__name__}{sig} must take positional "
                              f"parameters without defaults, as secant.custom_vjp does{where()}")
    params = ", ".join(sig.parameters)
    name = _name(fun)
    made = {}
    for kind, source in (
            ("", f"def {name}({params}):\n    value, _ = fun({params})\n    return value\n"),
            ("_fwd", f"def {name}_fwd({params}):\n    value, vjp = fun({params})\n"
                     f"    return value, vjp\n"),
            ("_bwd", f"def {name}_bwd(vjp, out_bar):\n    return as_tuple(vjp(out_bar))\n")):
        made[kind] = load_generated(source, name + kind, fun.__globals__,
                                    {"fun": fun, "as_tuple": as_tuple})
    made[""].__doc__, made[""].__qualname__ = fun.__doc__, fun.__qualname__
    return _CustomGradient(made, fun)


def _name(fun):
    return fun.__name__ if fun.__name__.isidentifier() else "custom_gradient_fn"


def as_tuple(cotangents):
    """A vjp function's result as custom_vjp's bwd returns it: one entry per argument."""
    return cotangents if isinstance(cotangents, tuple) else (cotangents,)


# (read by a transform only in the rule of a fun no trace could follow: _CustomGradient)
as_tuple.__secant_opaque__ = (
    "secant.custom_gradient could not trace this function once (a Python branch on a traced "
    "value, say), so its vjp function, a closure handed on as a value, cannot be "
    "differentiated or batched again; write its rule with secant.custom_vjp instead")


def _closure_converted(fun, name):
    """A custom_vjp equivalent to custom_gradient(fun), written from one trace of fun and of
    its vjp function (module docstring), and the guard of that trace."""
    from secant.transformer.trace_source import TraceSourceError, record
    from secant.transforms import load_generated
    context = (f"secant.custom_gradient traces {fun.__qualname__} once so that the transforms "
               "can follow its vjp function")
    run = record(fun, context)
    result = run.result
    if not isinstance(result, (tuple, list)) or len(result) != 2 or not callable(result[1]):
        raise TraceSourceError(f"{context}; but it does not return (value, vjp function)")
    value, vjp = result
    forward = list(run.rec.lines)
    value_src = run.source(value)
    out_bar = run.value("out_bar")
    cotangents = run.source(as_tuple(vjp(out_bar)))
    backward = run.rec.lines[len(forward):]
    params = list(run.sig.parameters)
    defined = params + [line.split(" = ", 1)[0] for line in forward]
    used = {n.id for line in backward + [cotangents] for n in ast.walk(ast.parse(line))
            if isinstance(n, ast.Name)}
    residuals = [n for n in defined if n in used]
    res = run.rec.names.fresh("res")
    comma = "," if len(residuals) == 1 else ""
    header = f"    # traced from {fun.__qualname__} by secant.custom_gradient"
    body = ["    " + line for line in forward]
    unpack = f"    {', '.join(residuals)}{comma} = {res}\n" if residuals else ""
    sources = {
        "": f"def {name}({run.params()}):\n{header}\n" + "".join(b + "\n" for b in body)
            + f"    return {value_src}\n",
        "_fwd": f"def {name}_fwd({run.params()}):\n{header}\n" + "".join(b + "\n" for b in body)
                + f"    return {value_src}, ({', '.join(residuals)}{comma})\n",
        "_bwd": f"def {name}_bwd({res}, {out_bar.name}):\n{header}\n{unpack}"
                + "".join(f"    {line}\n" for line in backward) + f"    return {cotangents}\n"}
    free, cells = run.free()
    made = {kind: load_generated(source, name + kind, fun.__globals__, free, cells=cells)
            for kind, source in sources.items()}
    return custom_vjp(made[""]).defvjp(made["_fwd"], made["_bwd"]), run.guard


def per_example(fn, wrt, batch, why):
    """vmap of fn (a custom_gradient function no trace could follow, or its derivative) as a
    Python loop over the examples of the arguments in `wrt`, the results stacked."""
    from secant import tree_util
    import secant.numpy as snp
    if batch.out_axes not in (0, "free") or batch.axis_name is not None:
        raise UnsupportedError(f"vmap of {fn.__name__} with out_axes={batch.out_axes!r} or an "
                               f"axis_name: {why}; write its rule with secant.custom_vjp "
                               f"instead{where()}")
    moved = dict(batch.in_axes)

    def batched(*args):
        args = [tree_util.tree_map(lambda leaf: snp.moveaxis(leaf, moved[i], 0), a)
                if i in moved else a for i, a in enumerate(args)]
        size = len(tree_util.tree_leaves(args[wrt[0]])[0])
        outs = [fn(*[tree_util.tree_map(lambda leaf: leaf[k], a) if i in wrt else a
                     for i, a in enumerate(args)]) for k in range(size)]
        return tree_util.tree_map(lambda *leaves: snp.stack(leaves), *outs)
    batched.__name__ = f"{fn.__name__}_vmap"
    batched.__secant_out_batched__ = True
    batched.__secant_opaque__ = (f"{why}: vmap runs it once per example, which the transforms "
                                 "cannot read again (jacrev, grad of vmap, vmap of vmap); write "
                                 "its rule with secant.custom_vjp instead")
    return batched

"""grad, value_and_grad and vjp: each writes a new Python function (the derivative's source) once
per (function, argnums, has_aux), and returns it ready to call eagerly or under jit."""
import ast
import functools
import inspect
import re

import gast
import numpy as np

import secant.numpy as snp
from secant import lax, tree_util
from secant.backends.array import Array
from secant.ad import helpers, reverse
from secant.backends import dtypes
from secant.backends.errors import SecantError, SecantTypeError, SecantValueError, where
from secant.backends.tracer import active_trace
from secant.codegen import loader
from secant.codegen.naming import Names
from secant.transformer import ir
from secant.transformer.normalize import normalise
from secant.transformer.parse import FunctionSource, closure_values

_generated = {}      # (function, mode, wrt, has_aux) -> generated function
_in_progress = set()


def _unwrap(fn):
    from secant.api import JitFunction
    while True:
        if isinstance(fn, JitFunction):
            fn = fn._fun
        elif getattr(fn, "__secant_generated__", None) is not None:
            fn = fn.__secant_generated__
        else:
            return fn


def _op_function(fun):
    """A library function with a rule (np.sin, snp.sum) is differentiated through a one-line
    function that calls it, so its rule applies; anything else is unwrapped as usual."""
    from secant.transformer.ops import OPS, op_for
    fun = _unwrap(fun)
    name = op_for(fun)
    if name is None or inspect.isfunction(fun) and fun.__module__ == "secant.ad.helpers":
        return fun
    hit = _op_functions.get(name)
    if hit is None:
        spec = OPS[name]
        params = [p for p in spec.signature.parameters.values()
                  if p.kind == p.POSITIONAL_OR_KEYWORD]
        args = ", ".join(str(p) for p in params)
        call = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.name}" for p in params)
        source = f"def {name}({args}):\n    return {name}_op({call})\n"
        hit = _op_functions[name] = loader.load(source, name, {}, {f"{name}_op": fun})
    return hit


_op_functions = {}


def _names_of(fn_ir):
    taken = set(fn_ir.params)

    def visit(stmts):
        for s in stmts:
            if isinstance(s, ir.Op):
                taken.update(s.targets)
            elif isinstance(s, ir.Plain):
                taken.update(s.defines)
            elif isinstance(s, ir.If):
                taken.add(s.test)
                visit(s.body)
                visit(s.orelse)
            elif isinstance(s, ir.For):
                taken.update((s.target, s.iterable))
                visit(s.body)
    visit(fn_ir.body)
    return taken


def generate(fn, wrt, mode, has_aux=False, tuple_out=False, staged=False):
    """The generated derivative of `fn` with respect to parameter positions `wrt`; `staged`:
    of its functionalised form, and so for every function it calls (what jit traces)."""
    fn = _unwrap(fn)
    if staged:
        from secant.transformer.functionalize import functionalize
        fn = functionalize(fn)
    key = (fn, mode, tuple(wrt), has_aux, tuple_out, staged)
    hit = _generated.get(key)
    if hit is not None:
        return hit
    if key in _in_progress:
        raise SecantError(f"cannot differentiate the recursive function {fn.__name__}")
    _in_progress.add(key)
    try:
        gen = _generate(fn, tuple(wrt), mode, has_aux, tuple_out, staged)
    finally:
        _in_progress.discard(key)
    _generated[key] = gen
    return gen


def _generate(fn, wrt, mode, has_aux, tuple_out, staged):
    fn_ir = normalise(fn, wrt)
    names = Names(_names_of(fn_ir) | set(helpers.by_name()) | {"snp", "lax"})
    callees = {}

    def vjp_of_callee(callee, active):
        sub = generate(callee, active, "vjp", staged=staged)
        name = callees.get(sub)
        if name is None:
            name = callees[sub] = names.fresh(f"{sub.__name__}")
        return name

    wrt_names = [fn_ir.params[i] for i in wrt]
    try:
        lines, out_bar = reverse.build(fn_ir, wrt_names, mode, names, vjp_of_callee, has_aux,
                                       tuple_out)
    except ValueError as e:
        raise SecantTypeError(f"{e}\n  in {fn.__qualname__}") from None
    gen_name = f"{fn_ir.name}_{mode}"
    args_src = fn_ir.args_src
    if mode == "vjp":
        args_src = f"{out_bar}, {args_src}" if args_src else out_bar
    text = [f"def {gen_name}({args_src}):"]
    origins = {}
    for ln in lines:
        for code in ln.code.split("\n"):
            text.append("    " * ln.indent + code if code else "")
            if ln.origin is not None:
                origins[len(text)] = (ln.origin.filename, ln.origin.line)
    source = "\n".join(text) + "\n"
    src_info = getattr(fn, "__secant_source__", None)
    closure = dict(src_info.closure) if src_info else closure_values(fn)
    api = {}
    for alias, module in (("snp", snp), ("lax", lax)):
        # the user's own `snp`/`lax` (if any) must keep meaning what it means in their code
        name = alias
        while {**fn.__globals__, **closure}.get(name, module) is not module:
            name += "_"
        if name != alias:
            source = re.sub(rf"\b{alias}\.", f"{name}.", source)
        api[name] = module
    free = {**closure, **api,
            **helpers.by_name(),
            **{name: sub for sub, name in callees.items()}}
    tree = ast.parse(source)            # parsed once: names, compilation, attached AST
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    free = {k: v for k, v in free.items() if k in used}
    gen = loader.load(source, gen_name, fn.__globals__, free, origins, tree)
    node = gast.ast_to_gast(tree).body[0]
    gen.__secant_source__ = FunctionSource(gen, node, gen.__code__.co_filename, 1,
                                           source.splitlines(), fn.__globals__, free)
    return gen


# --- the public transforms ------------------------------------------------------------------
def _positions(argnums, fn):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    try:
        n = len([p for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):
        n = None
    out = []
    for a in nums:
        if not isinstance(a, int):
            raise SecantTypeError(f"argnums must be ints, got {a!r}")
        if n is not None and not -n <= a < n:
            raise SecantValueError(f"argnums {a} out of range for a function of {n} "
                                   "positional parameters")
        out.append(a % n if n else a)
    return tuple(out)


def _to_array(leaf, differentiated):
    """NumPy arrays become secant arrays (as jax.grad's inputs become jax arrays); Python numbers
    stay numbers unless they are differentiated."""
    if type(leaf) is np.ndarray and leaf.dtype == dtypes.canonicalize_dtype(leaf.dtype):
        view = leaf.view()          # no copy: the call reads it and returns new arrays
        view.flags.writeable = False
        return Array._wrap(view)
    if isinstance(leaf, (np.ndarray, np.generic)):
        return snp.asarray(leaf)
    if differentiated and isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
        return snp.asarray(leaf)
    return leaf


def _as_arrays(args, positions):
    return tuple(tree_util.tree_map(lambda leaf: _to_array(leaf, i in positions), a)
                 if isinstance(a, (np.ndarray, np.generic, int, float, list, tuple, dict))
                 or i in positions else a
                 for i, a in enumerate(args))


def _check_differentiable(args, positions, what):
    for i in positions:
        if i >= len(args):
            raise SecantTypeError(f"{what}: argument {i} was requested by argnums but only "
                                  f"{len(args)} positional arguments were given{where()}")
        for leaf in tree_util.tree_leaves(args[i]):
            dt = snp.result_type(leaf)
            if not dtypes.is_inexact(dt):
                raise SecantTypeError(
                    f"{what} requires real- or complex-valued inputs (a floating-point dtype), "
                    f"but argument {i} has dtype {dt.name}; convert it with .astype(float) or "
                    f"leave it out of argnums{where()}")


def staged(fun):
    """What a transform reads for `fun` while jit traces: its Python control flow rewritten into
    secant.lax calls (transformer/functionalize.py), so a loop or `if` on traced values stages
    into one XLA loop or conditional instead of failing or unrolling; for a transformed
    function, the same transform of the staged original."""
    from secant.api import JitFunction
    from secant.transformer.functionalize import functionalize
    while isinstance(fun, JitFunction):
        fun = fun._fun
    make = getattr(fun, "__secant_staged__", None)
    return make() if make is not None else functionalize(fun)


def _transform(fun, argnums, mode, has_aux):
    """The wrapper of grad/value_and_grad: eager calls run the derivative of `fun` as written;
    calls while jit traces run the derivative of its staged form."""
    base = _op_function(fun)
    positions = _positions(argnums, base)
    tuple_out = not isinstance(argnums, int)
    gen = generate(base, positions, mode, has_aux, tuple_out)

    def staged_gen():
        return generate(_op_function(staged(fun)), positions, mode, has_aux, tuple_out,
                        staged=True)

    @functools.wraps(gen)
    def transformed(*args, **kwargs):
        args = _as_arrays(args, positions)
        _check_differentiable(args, positions, mode)
        try:
            return (gen if active_trace() is None else staged_gen())(*args, **kwargs)
        except Exception as e:
            _note_user_lines(e)
            raise
    transformed.__secant_generated__ = gen
    transformed.__secant_staged__ = staged_gen
    transformed.__name__ = transformed.__qualname__ = gen.__name__
    return transformed


def _note_user_lines(exc):
    """Tracebacks through generated code show its lines; add the user lines they came from."""
    import linecache
    from secant.backends.errors import origin
    tb = exc.__traceback__
    notes = []
    while tb is not None:
        filename, line = tb.tb_frame.f_code.co_filename, tb.tb_lineno
        user_file, user_line = origin(filename, line)
        if user_file != filename:
            text = linecache.getline(user_file, user_line).strip()
            notes.append(f"  {filename} line {line} comes from {user_file}, line {user_line}: "
                         f"{text}")
        tb = tb.tb_next
    if notes and not getattr(exc, "_secant_noted", False):
        exc.add_note("In generated code:\n" + "\n".join(notes))
        exc._secant_noted = True


def grad(fun, argnums=0, has_aux=False):
    """The gradient of scalar-valued `fun` as a new, readable Python function.

    `inspect.getsource(grad(f))` (or `secant.source`) shows the generated derivative."""
    return _transform(fun, argnums, "grad", has_aux)


def value_and_grad(fun, argnums=0, has_aux=False):
    return _transform(fun, argnums, "value_and_grad", has_aux)


def vjp(fun, *primals, has_aux=False):
    """(fun(*primals), vjp_fun): vjp_fun(cotangent) returns one cotangent per primal."""
    tracing = active_trace() is not None
    base = _op_function(staged(fun) if tracing else fun)
    positions = tuple(range(len(primals)))
    primals = _as_arrays(primals, positions)
    gen = generate(base, positions, "vjp", has_aux=False, staged=tracing)
    if tracing:
        from secant.transformer.functionalize import functionalize
        fun = functionalize(fun)
    out = fun(*primals)
    aux = None
    if has_aux:
        out, aux = out

    def vjp_fun(cotangent):
        ct = (cotangent, snp.zeros_like(aux)) if has_aux else cotangent
        grads = gen(ct, *primals)
        return grads if len(primals) > 1 else (grads,)

    vjp_fun.__secant_generated__ = gen
    return (out, vjp_fun, aux) if has_aux else (out, vjp_fun)


def source(fn):
    """The source text of a generated (or any) function; for `jit(f)`, the source jit traces
    (f with its Python control flow rewritten into secant.lax calls)."""
    from secant.api import JitFunction
    if isinstance(fn, JitFunction):
        from secant.transformer.functionalize import functionalized_source
        return functionalized_source(fn._fun)
    return inspect.getsource(_unwrap(fn) if getattr(fn, "__secant_generated__", None) else fn)

"""grad, value_and_grad and vjp: each writes a new Python function (the derivative's source) once
per (function, argnums, has_aux), and returns it ready to call eagerly or under jit."""
import ast
import builtins
import contextlib
import copy
import functools
import gc
import inspect
import keyword
import re
import weakref
import threading
import types

import numpy as np

import secant.numpy as snp
from secant import lax, tree_util
from secant import grad_options as _options
from secant.backends.function_cache import ATTR as _CACHE_ATTR, FunctionCache, Stamp, \
    fresh as fresh_function
from secant.backends.array import Array
from secant.ad import forward, helpers, reverse
from secant.batching import helpers as batch_helpers, rules as batch_rules, vectorize
from secant.backends import dtypes, once
from secant.backends.core import quiet_enter, quiet_exit
from secant.backends import errors as _errors
from secant.backends.errors import (SecantError, def_line, SecantTypeError, SecantValueError,
                                    UnsupportedError, register_internal_file, where)
from secant.backends.placeholder import RefusedTangent
from secant.backends.tracer import active_trace
from secant.custom import size_params as _size_params
from secant.codegen import loader
from secant.codegen.display import show_source
from secant.codegen.naming import Names, versions_dropped
from secant.transformer import depth, gast_parse, hygiene, ir, operators
from secant.transformer.callees import check_distinct, check_keywords, dynamic_call, \
    signature_of
from secant.transformer.properties import (PlainReads, attribute_reader, may_be_computed,
                                           reads_computed)
from secant.transformer.desugar import desugar
from secant.transformer.nonlocals import changed_since, data_read
from secant.transformer.normalize import normalise
from secant.transformer.parse import FunctionSource, closure_values, opaque
from secant.transformer.runnable import runnable
from secant.transformer.trace_source import once_in
from secant import code_cache, raw_eager

# (function, mode, wrt, has_aux, ...) -> generated function, kept as long as the function
_generated = FunctionCache("generated")


def _unwrap(fn):
    from secant.api import JitFunction
    while True:
        if isinstance(fn, JitFunction):
            fn = fn._fun
        elif getattr(getattr(fn, "__secant_current__", None), "owner", None) is fn:
            fn = fn.__secant_current__()        # generated again if what it called changed
        elif getattr(fn, "__secant_generated__", None) is not None:
            fn = fn.__secant_generated__
        elif getattr(fn, "__secant_pmap__", False):
            raise UnsupportedError("grad, vmap and jvp of a pmapped function are not supported; "
                                   "put the transform inside pmap instead (pmap(grad(f)), "
                                   "pmap(vmap(f)))" + where())
        else:
            return fn


def _op_function(fun):
    """A library function with a rule (np.sin, snp.sum) is differentiated through a one-line
    function that calls it, so its rule applies (a secant.numpy function is never read as
    source); a bound method, functools.partial or callable object through a one-line function
    taking what it takes, whose call transformer/callees.py resolves; anything else is
    unwrapped as usual."""
    from secant.transformer.callees import is_user_callable_object
    from secant.transformer.ops import NUMPY_POSITIONAL, OPS, op_for
    if not callable(fun):       # as JAX: a TypeError where the transform is applied
        raise SecantTypeError(f"expected a callable value to transform, got {fun!r}{where()}")
    fun = _unwrap(fun)
    if getattr(fun, "__secant_composite__", None) is not None:   # a composition of ops
        return fun.__secant_composite__                          # (secant/numpy/composite.py)
    if _per_call(fun):      # vmap(f), vectorize(f): read per call shape (_shaped)
        return fun
    if fun is list or fun is tuple:     # kind_of(c)(items), type(c)(items): a function calling
        def kind_caller():              # it, whose call the normaliser reads (a container)
            source = f"def {fun.__name__}_of(items):\n    return {fun.__name__}(items)\n"
            hit = load_generated(source, f"{fun.__name__}_of", {}, {})
            _errors.register_internal_file(hit.__code__.co_filename)
            hit.__secant_items_kind__ = True    # (items: a container, never an array's rows)
            return hit
        return once.build(_op_functions, ("kind", fun), kind_caller)
    if isinstance(getattr(fun, "__self__", None), np.ufunc) and inspect.isbuiltin(fun):
        return _ufunc_method(fun)       # np.add.reduce, np.multiply.outer
    if any(fun is b for b in _BUILTIN_PARAMS):   # grad(pow), vmap(float): a function calling
        def builtin_caller():                      # it, read as user code's call is (float of
            params = _BUILTIN_PARAMS[fun]          # a traced value: JAX's concretization error)
            source = f"def {fun.__name__}_of({params}):\n    return {fun.__name__}({params})\n"
            hit = load_generated(source, f"{fun.__name__}_of", {}, {})
            _errors.register_internal_file(hit.__code__.co_filename)
            return hit
        return once.build(_op_functions, ("builtin", fun), builtin_caller)
    if _is_user_class(fun):     # Registry[name](a, b): a constructor known only at run time,
        def class_caller():     # read as user code's call of the class is (a pytree class:
            name = fun.__name__.lower() if fun.__name__.isidentifier() else "construct"
            plain = _plain_constructor(fun, name)
            if plain is not None:
                return plain
            hit = _calling_function(inspect.signature(fun), name, f"{name}_",  # its fields)
                                    {f"{name}_": fun}, {})
            hit.__secant_user_code__ = True     # (desugared: transformer/desugar.py)
            _errors.register_internal_file(hit.__code__.co_filename)
            return hit
        return once.build(_op_functions, ("class", fun), class_caller)
    if getattr(fun, "__secant_custom__", False):     # grad(f) of a custom_vjp f: a caller
        def caller():
            params = ", ".join(fun.params())
            name = fun.__name__ if fun.__name__.isidentifier() else "fn"    # (of a lambda)
            source = f"def {name}({params}):\n    return {name}_({params})\n"
            hit = load_generated(source, name, {}, {f"{name}_": fun})
            _errors.register_internal_file(hit.__code__.co_filename)   # secant's, not the user's
            return hit
        return once.build(_op_functions, fun, caller)
    fun = _array_method_op(fun)
    name = op_for(fun)
    if name is None and (isinstance(fun, (functools.partial, types.MethodType))
                         or is_user_callable_object(fun)):
        return _callable_function(fun)
    if name is None and _is_array_constructor(fun):     # snp.asarray: a function calling it,
        def array_caller():                             # read as user code's call is
            hit = _calling_function(inspect.signature(fun), fun.__name__, f"{fun.__name__}_",
                                    {f"{fun.__name__}_": fun}, {})
            _errors.register_internal_file(hit.__code__.co_filename)
            return hit
        return once.build(_op_functions, ("array", id(fun)), array_caller)
    if name is None and inspect.isfunction(fun) and fun.__module__ == "secant.random" \
            and getattr(fun, "__secant_random__", None):
        # vmap(random.normal): a function calling the sampler, whose call vmap batches as it
        # does in user code (random_batched), never the sampler's own implementation
        def random_caller():
            hit = _calling_function(inspect.signature(fun), fun.__name__, f"{fun.__name__}_",
                                    {f"{fun.__name__}_": fun}, {})
            _errors.register_internal_file(hit.__code__.co_filename)
            return hit
        return once.build(_op_functions, ("random", id(fun)), random_caller)
    if name is None and inspect.isfunction(fun) and not hasattr(fun, "__secant_source__") \
            and getattr(fun, "__secant_variadic__", None) is None \
            and not fun.__globals__.get("__secant_by_source__") \
            and (fun.__module__ or "").split(".")[:2] in (["secant", "numpy"], ["numpy"]):
        # never read the implementation of a numpy function: it is an op with a rule, or not
        # differentiable by secant yet (as when user code calls it)
        raise SecantTypeError(f"secant has no derivative or batching rule for "
                              f"{'numpy' if fun.__module__.startswith('numpy') else 'secant.numpy'}"
                              f".{fun.__name__} yet: it is not an op of transformer/ops.py"
                              f"{where()}")
    if name is None and _library_variadic(fun):     # lax.cond passed directly: a function
        def variadic_caller():                       # calling it, read as user code's call is
            hit = _calling_function(inspect.signature(fun), fun.__name__, f"{fun.__name__}_",
                                    {f"{fun.__name__}_": fun}, {})
            _errors.register_internal_file(hit.__code__.co_filename)
            return hit
        return once.build(_op_functions, ("variadic", id(fun)), variadic_caller)
    if name is None or inspect.isfunction(fun) and fun.__module__ == "secant.ad.helpers":
        return fun
    def op_caller():
        hit = _calling_function(OPS[name].signature, name, f"{name}_op", {f"{name}_op": fun}, {},
                                by_name=name in NUMPY_POSITIONAL)   # (sum_op(a, axis=axis,
        # keepdims=keepdims): a reduction's parameters, not NumPy's positional order)
        _errors.register_internal_file(hit.__code__.co_filename)   # secant's, not the user's
        return hit
    return once.build(_op_functions, name, op_caller)


# builtins passed as the function to a transform, with the parameters their calling function
# takes (abs, max, min are ops: transformer/ops.py)
_BUILTIN_PARAMS = {pow: "base, exp", round: "number", divmod: "x, y", float: "x",
                   complex: "real", int: "x", bool: "x"}


def _extremum_caller(fun):
    """`def max_of(first, *rest): return max(first, *rest)`: builtin max or min called by
    generated code with arguments counted when it runs (max(*[...]), call_starred), which the
    dispatcher specialises to that count (its op takes two; the normaliser folds more)."""
    def caller():
        name = fun.__name__
        source = f"def {name}_of(first, *rest):\n    return {name}(first, *rest)\n"
        hit = load_generated(source, f"{name}_of", {}, {})
        _errors.register_internal_file(hit.__code__.co_filename)
        return hit
    return once.build(_op_functions, ("extremum", fun), caller)


def _ufunc_method(fun):
    """`np.add.reduce`, `np.subtract.outer` passed as the function: secant.numpy's method of
    that ufunc (secant/numpy/ufunc_methods.py, read as source)."""
    from secant.numpy.counterparts import counterpart
    ours = counterpart(fun)
    if ours is None:
        ufunc = fun.__self__.__name__
        raise SecantTypeError(f"secant has no derivative or batching rule for numpy.{ufunc}."
                              f"{fun.__name__} (secant.numpy has no ufunc {ufunc} with that "
                              f"method){where()}")
    return ours[0]


def plain_constructor(cls):
    """_plain_constructor's function for class cls (built once), or None: the normaliser reads
    `C(a)` of a plain class C building an object that escapes (returned, stored in a list or
    dict, passed on) as its call."""
    from secant import tree_util

    def build():
        name = cls.__name__.lower() if cls.__name__.isidentifier() else "construct"
        return (_plain_constructor(cls, name),)
    if cls in tree_util._later:     # (read plain, then registered by the user)
        return None
    return once.build(_op_functions, ("plain", cls), build)[0]


def _plain_constructor(cls, name):
    """For a plain class (not registered: secant/tree_util.py plain_object) of a simple form
    (transformer/user_objects.py): `def normal(loc, scale): return object_of(normal_,
    normal_fields(loc, scale))`, its __init__ read as the fields it sets and the object built
    from them without running it, so each field carries its derivative and batch axis and the
    object's cotangent is an object of its class. None for any other class."""
    from secant import tree_util
    from secant.ad.helpers import object_of
    from secant.transformer.user_objects import functional_form
    if (cls not in tree_util._plain_types and tree_util.is_node_type(cls)) \
            or not tree_util._plain_class(cls):     # (read plain, its own __setattr__: no)
        return None
    ns = functional_form(cls)
    init = getattr(ns, "__init__", None) if ns is not None else None
    if not inspect.isfunction(init):
        return None
    hit = _calling_function(inspect.signature(cls), name, f"{name}_fields",
                            {f"{name}_fields": init, f"{name}_": cls, "object_of": object_of},
                            {}, wrap=f"object_of({name}_, {{}})")
    hit.__secant_user_code__ = True         # (desugared: transformer/desugar.py)
    _errors.register_internal_file(hit.__code__.co_filename)
    return hit


def _is_user_class(fun):
    return inspect.isclass(fun) and (getattr(fun, "__module__", "") or "").split(".")[0] not in (
        "secant", "numpy", "builtins")


def _is_array_constructor(fun):
    import secant.numpy as snp
    return any(fun is f for f in (np.array, np.asarray, snp.array, snp.asarray))


def _is_op_or_callable(fun):
    from secant.transformer.callees import is_user_callable_object
    from secant.transformer.ops import op_for
    return op_for(fun) is not None or isinstance(fun, (functools.partial, types.MethodType)) \
        or is_user_callable_object(fun) or fun is list or fun is tuple


def _callable_function(fun):
    """`def apply(x): return apply_(x)` for a bound method, partial or callable object `fun`
    (its own signature; what the call means, transformer/callees.py resolves)."""
    # a bound method is a new object at each look-up: keyed by its function and object
    key = ("method", fun.__func__, id(fun.__self__)) if isinstance(fun, types.MethodType) \
        else ("callable", id(fun))
    return once.build(_op_functions, key, lambda: (fun, _make_callable_function(fun)),
                      valid=lambda hit: hit[0] is fun or isinstance(fun, types.MethodType)
                      and hit[0].__self__ is fun.__self__)[1]


def _array_method_op(fun):
    """Array.__rmul__, Array.__pow__, Array.reshape (secant/numpy/methods.py's own functions,
    unbound): a function calling the op they call (`def multiply(self, other): return
    multiply_(other, self)`); any other `fun` as it is."""
    from secant.numpy import methods
    hit = methods.op_function(fun) if inspect.isfunction(fun) else None
    if hit is None:
        return fun
    target, swapped = hit
    if not swapped:
        return target
    source = f"def {target.__name__}(self, other):\n    return {target.__name__}_(other, self)\n"
    def build():
        made = load_generated(source, target.__name__, {}, {f"{target.__name__}_": target})
        _errors.register_internal_file(made.__code__.co_filename)
        return made
    return once.build(_op_functions, ("swapped", target), build)


def _bound_array_method(fun):
    """`v.dot`, `v.__mul__`, `v.__rsub__`, `v.clip` of an array v passed as the function: `def
    dot(b): return dot_(array, b)` (`def subtract(x): return subtract_(x, array)`), the op's
    own parameters but the array's, which is bound; None for any other callable."""
    from secant.backends.array import Array
    from secant.backends.core import Tracer
    from secant.numpy import methods
    from secant.numpy.indexing import _AtRef
    from secant.transformer.ops import OPS, op_for
    if isinstance(fun, types.MethodType) and isinstance(fun.__self__, _AtRef) \
            and not fun.__name__.startswith("_"):
        # v.at[1].set: `def set(values, ...): return array.at[index].set(values, ...)`, the
        # update user code writes
        made = _calling_function(inspect.signature(fun), fun.__name__,
                                 f"array.at[index].{fun.__name__}",
                                 {"array": fun.__self__.array, "index": fun.__self__.index}, {})
        _errors.register_internal_file(made.__code__.co_filename)
        return made
    if not isinstance(fun, types.MethodType) or not isinstance(fun.__self__, (Array, Tracer)):
        return None
    target, swapped = methods.op_function(fun.__func__) or (fun.__func__, False)
    name = op_for(target)
    params = list(OPS[name].signature.parameters.values()) if name is not None else []
    if len(params) < (2 if swapped else 1) or any(
            p.kind != p.POSITIONAL_OR_KEYWORD or p.default is not p.empty
            and type(p.default) not in (type(None), bool, int, float, str) for p in params):
        return None     # (the bound method's own calling function: _make_callable_function)
    params.pop(1 if swapped else 0)
    free = {f"{name}_": target, "array": fun.__self__}
    call = [p.name if p.default is p.empty else f"{p.name}={p.name}" for p in params]
    call.insert(len(call) if swapped else 0, "array")
    sig = str(inspect.Signature([p.replace(annotation=p.empty) for p in params]))
    source = f"def {name}{sig}:\n    return {name}_({', '.join(call)})\n"
    made = load_generated(source, name, {}, free)
    _errors.register_internal_file(made.__code__.co_filename)
    return made


def _make_callable_function(fun):
    from secant.transformer.ops import KEYWORD_ALIASES, OPS, op_for
    made = _bound_array_method(fun)
    if made is not None:
        return made
    target = fun.func if isinstance(fun, functools.partial) else fun
    name = getattr(target, "__name__", type(target).__name__.lower())
    name = name if name.isidentifier() else "fn"
    try:
        spec = OPS.get(op_for(target)) if isinstance(fun, functools.partial) else None
        if spec is not None:        # partial(snp.var, axis=0): what the op's rule takes
            def takes():
                pass
            takes.__signature__ = _operands_trimmed(op_for(target), spec.signature, fun)
            renamed = KEYWORD_ALIASES.get(op_for(target), {})
            signature = inspect.signature(functools.partial(
                takes, *fun.args, **{renamed.get(k, k): v for k, v in fun.keywords.items()}))
        else:
            signature = inspect.signature(fun)
    except (TypeError, ValueError):
        raise SecantTypeError(f"cannot transform {fun!r}: secant cannot read its "
                              f"signature{where()}") from None
    callee, free, lead = f"{name}_", {f"{name}_": fun}, ()
    method = getattr(fun, "__func__", None)
    owner = getattr(fun, "__self__", None) if isinstance(fun, types.MethodType) else fun
    cls = type(owner)
    attr = "__call__" if method is None else method.__name__
    if not isinstance(fun, functools.partial) and not isinstance(owner, type) \
            and inspect.getattr_static(cls, attr, None) is (method or cls.__call__):
        # Layer.apply(layer, x): the method's own function, the object its first argument
        this = cls.__name__.lower()
        if this in (name, cls.__name__):        # class gaussian_kde: its object is another name
            this = f"{this}_"
        callee, free, lead = f"{cls.__name__}.{attr}", {cls.__name__: cls, this: owner}, (this,)
    # (an op's caller is secant's, not its library module's: a transform reads it as source)
    fn_globals = {} if spec is not None else getattr(target, "__globals__", {})
    return _calling_function(signature, name, callee, free, fn_globals, lead)


def _operands_trimmed(name, signature, partial):
    """einsum's signature with only the operand slots its subscripts use, when the partial
    fixes them (`partial(snp.einsum, "i,i->")` takes two operands, not eight)."""
    subscripts = partial.args[0] if partial.args else partial.keywords.get("subscripts")
    if name != "einsum" or not isinstance(subscripts, str):
        return signature
    n = subscripts.partition("->")[0].count(",") + 1
    return signature.replace(parameters=[
        p for p in signature.parameters.values()
        if not (p.name.startswith("x") and p.name[1:].isdigit() and int(p.name[1:]) >= n)])


def _calling_function(signature, name, callee, free, fn_globals, lead=(), wrap="{}",
                      by_name=False):
    """`def name(<signature>): return callee(*lead, <its parameters>)`, its free names bound
    from `free`; defaults that are not literals are bound as names of their own; `by_name`:
    the parameters past the first passed by keyword."""
    free = dict(free)
    params, args = [], list(lead)
    for p in signature.parameters.values():
        if p.default is not p.empty:
            try:
                literal = ast.literal_eval(repr(p.default)) == p.default
            except (ValueError, SyntaxError, TypeError):
                literal = False
            if not literal:
                free[f"{p.name}_default"] = p.default
            p = p.replace(default=_Source(repr(p.default) if literal else f"{p.name}_default"))
        params.append(p.replace(annotation=p.empty))
        args.append(f"*{p.name}" if p.kind == p.VAR_POSITIONAL else
                    f"**{p.name}" if p.kind == p.VAR_KEYWORD else
                    f"{p.name}={p.name}" if p.kind == p.KEYWORD_ONLY or by_name and len(params) > 1
                    else p.name)
    sig = str(inspect.Signature(params))
    call = wrap.format(f"{callee}({', '.join(args)})")
    source = f"def {name}{sig}:\n    return {call}\n"
    return load_generated(source, name, fn_globals, free)


class _Source:
    """A default shown as the source text that makes it."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


_op_functions = {}


def _names_of(fn_ir):
    taken = set(fn_ir.params) | set(re.findall(r"\w+", fn_ir.args_src))   # (keyword-only too)

    def visit(stmts):
        for s in stmts:
            if isinstance(s, ir.Op):
                taken.update(s.targets)
                if s.callee_name:       # a callee's own name: its derivative's must differ
                    taken.add(s.callee_name.split(".")[0])
            elif isinstance(s, ir.Plain):
                taken.update(s.defines)
            elif isinstance(s, ir.If):
                taken.add(s.test)
                visit(s.body)
                visit(s.orelse)
            elif isinstance(s, ir.For):
                taken.update((s.target, s.iterable))
                visit(s.body)
            elif isinstance(s, ir.While):
                visit(s.body)
    visit(fn_ir.body)
    visit = None   # (it names itself: freed now, not by the cyclic collector)
    return taken


def _own_helper(fn):
    """A helper of generated code (ad/, batching/): it branches on static flags and shapes
    only, so jit runs its Python as written (staging its ifs as lax.cond would batch them)."""
    return (getattr(fn, "__module__", None) or "").startswith(("secant.ad.", "secant.batching."))


def generate(fn, wrt, mode, has_aux=False, tuple_out=False, staged=False, batch=None):
    """The generated derivative of `fn` with respect to parameter positions `wrt`; `staged`:
    of its functionalised form, and so for every function it calls (what jit traces). Mode
    "vmap": the batched function, batched in the parameters `wrt` (`batch`: its BatchOptions,
    secant/batch.py)."""
    answer = getattr(fn, "__secant_answer__", None)     # (a derivative _Answer wraps)
    fn = getattr(fn, "__secant_answers__", fn)
    lazy = getattr(fn, "__secant_lazy__", None)     # (grad of a function traced on each
    if lazy is not None:                            # call, built lazily: its trace's now)
        fn = lazy()
    with _gc_paused():
        try:
            gen = _generate_cached(fn, wrt, mode, has_aux, tuple_out, staged, batch)
        except SecantError as e:
            gen = _forward_instead(fn, wrt, mode, has_aux, tuple_out, staged, batch, e)
    if answer is None or mode not in _ANSWERED_MODES or not isinstance(gen, types.FunctionType):
        return gen
    return answer.then((wrt, mode, has_aux, tuple_out, staged, batch)).wrap(gen)


_FORWARD_GRADS = {}     # (fn, position, mode, limit) -> grad of fn written by forward mode

# The most input elements (the sum over the differentiated argument's leaves) for which grad,
# value_and_grad or vjp of a function whose reverse pass secant refuses (it would run a call
# that sets Python state again: ad/reverse.py _state_error) runs forward mode instead: one jvp
# per element, so n runs of the function. Past it the gradient raises a SecantError saying why
# rather than silently take n times as long. Read when the gradient is generated.
FORWARD_FALLBACK_LIMIT = 4096


def _forward_instead(fn, wrt, mode, has_aux, tuple_out, staged, batch, error):
    """grad (value_and_grad; has_aux, argnums a tuple) of a scalar function whose reverse pass
    would read Python state again at another time than the user's call (a counter's function called twice, in a loop, by a callee:
    ad/reverse.py _state_error): its Jacobian by forward mode, the jvp over the input's basis,
    which runs the function once, as JAX's grad does, written as its source
    (_jacobian_source). Other modes raise `error`, and so does jit of a function with a
    while loop: the staged jvp's loop, batched over the basis, runs its body's Python once
    (jit(jacfwd(f)) of such a loop reads the counter once: a known gap, state15o)."""
    if not getattr(error, "state_rerun", False) or mode not in ("grad", "value_and_grad") \
            or batch is not None or not wrt or len(wrt) != 1 and not tuple_out \
            or not isinstance(fn, types.FunctionType) or staged and _has_while(fn):
        raise error
    argnums = tuple(wrt) if tuple_out else wrt[0]   # (argnums=(0, 1): a tuple of gradients)
    key = (fn, argnums, mode, has_aux, FORWARD_FALLBACK_LIMIT)
    hit = _FORWARD_GRADS.get(key)
    if hit is None:
        hit = _jacobian_source(_Jacobian(fn, argnums, has_aux, "jacfwd"), grad=mode)
        if hit is None:
            raise error
        if len(_FORWARD_GRADS) > 256:
            _FORWARD_GRADS.clear()
        _FORWARD_GRADS[key] = hit
    return hit


def _has_while(fn):
    """Whether fn's source has a while loop (or cannot be read)."""
    try:
        return "while" in inspect.getsource(fn)
    except (OSError, TypeError):
        return True


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic collector paused while a transform builds (the outermost one resumes
    it): a transform allocates many long-lived syntax-tree nodes, and the collector's passes
    over them made transformation time grow faster than the function's size (issue 19)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _generate_cached(fn, wrt, mode, has_aux, tuple_out, staged, batch):
    fn = _unwrap(fn)
    gen = _generate_cached_unwrapped(fn, wrt, mode, has_aux, tuple_out, staged, batch)
    if not staged and type(gen) is types.FunctionType and gen is not fn:
        gen.__secant_made_from__ = (fn, tuple(wrt), mode, has_aux, tuple_out, batch)  # restaged
    return gen


def _generate_cached_unwrapped(fn, wrt, mode, has_aux, tuple_out, staged, batch):
    if type(fn) is not types.FunctionType:
        return _generate_cached_plain(fn, wrt, mode, has_aux, tuple_out, staged, batch)
    # (its code or defaults replaced since: what was built from them dropped, built again)
    if fresh_function(fn):
        _TRACED_PER_CALL.pop(fn, None)
    if fn not in _TRACED_PER_CALL and fn not in _TRACED_WITH_ARGUMENTS:
        # a new function with the code of one transformed before (a lambda written in a
        # training loop): that one's derivative, bound to this one's cells (secant/code_cache.py)
        hit = code_cache.lookup(fn, tuple(wrt), mode, has_aux, tuple_out, staged, batch,
                                _current)
        if hit is not None:
            return _stamped(hit, fn)
        gen = _generate_cached_plain(fn, wrt, mode, has_aux, tuple_out, staged, batch)
        if not isinstance(gen, _Recursive) and fn not in _TRACED_PER_CALL \
                and fn not in _TRACED_WITH_ARGUMENTS and not hasattr(gen, "__secant_lazy__"):
            code_cache.remember(fn, gen, tuple(wrt), mode, has_aux, tuple_out, staged, batch)
        return _stamped(gen, fn)
    return _stamped(_generate_cached_plain(fn, wrt, mode, has_aux, tuple_out, staged, batch), fn)


def _stamped(gen, fn):
    """`gen` guarded by fn's code, defaults and keyword defaults (backends/function_cache.py
    Stamp): replaced after the transform, gen is stale (it wrote the old defaults into its
    signature), and so is each derivative that calls it (guards pass to callers)."""
    if isinstance(gen, _Recursive) or not isinstance(gen, types.FunctionType):
        return gen
    guards = gen.__dict__.get("__secant_guards__", ())
    for g in guards:
        if type(g) is Stamp and g.fn() is fn:
            return gen
    gen.__secant_guards__ = tuple(guards) + (Stamp(fn),)
    return gen


def _generate_cached_plain(fn, wrt, mode, has_aux, tuple_out, staged, batch):
    why = _TRACED_PER_CALL.get(fn) if isinstance(fn, types.FunctionType) else None
    outermost = not _generating.__dict__.get("depth", 0)
    if why is not None and outermost and _lazy_build.__dict__.get("on") and \
            mode in ("grad", "value_and_grad"):     # (built: traced when it is called)
        return _lazily_traced(fn, why, wrt, mode, has_aux, tuple_out)
    if why is not None:         # values pass through a global: the derivative of its trace now
        from secant.transformer.trace_source import retraced
        fn = retraced(fn, why)
    if outermost and isinstance(fn, types.FunctionType) and fn not in _TRACED_WITH_ARGUMENTS:
        whole = _escalated_origin(fn)       # (its functionalised form, while jit traces)
        if whole is not None and mode in _PER_CALL_MODES:
            return _per_call_dispatcher(whole, wrt, mode, has_aux, tuple_out, staged, batch)
    if (outermost or _generating.__dict__.get("callees", False)) and isinstance(
            fn, types.FunctionType) and fn in _TRACED_WITH_ARGUMENTS and mode in _PER_CALL_MODES:
        return _per_call_dispatcher(fn, wrt, mode, has_aux, tuple_out, staged, batch)
    _generating.depth = _generating.__dict__.get("depth", 0) + 1
    try:
        gen = _generate_cached_source(fn, wrt, mode, has_aux, tuple_out, staged, batch)
        if outermost and not _answering.__dict__.get("dispatching", False) \
                or mode not in _ANSWERED_MODES or not _dispatches(gen):
            return gen
        return _answered_by_trace(gen, fn, (mode, tuple(wrt), has_aux, tuple_out, staged, batch))
    except SecantError as e:
        e.per_call_function = None      # (a callee's: not this function's)
        if outermost and _lazy_build.__dict__.get("on") and _traces_lazily(fn, e, mode):
            return _lazily_traced(fn, e.global_flow, wrt, mode, has_aux, tuple_out)
        traced = _traced_instead(fn, e)
        if traced is None:
            # traced for each call's arguments: the function the transform was asked for, or
            # a callee of it only where that one cannot be traced whole (its trace follows
            # into the callee with its own arguments: a callee's trace would fail at run time
            # where the whole one would not)
            user = e.per_call_function
            if user is None or mode not in _PER_CALL_MODES or not (
                    outermost or _generating.__dict__.get("callees", False)):
                raise
            return _per_call_dispatcher(user, wrt, mode, has_aux, tuple_out, staged, batch)
    finally:
        _generating.depth -= 1
    return _generate_cached_source(traced, wrt, mode, has_aux, tuple_out, staged, batch)


_generating = threading.local()     # .depth: generate calls running (callees inside callers)


# a callee's derivative that dispatches on a callee known only at run time: when that dispatch
# fails for an error a whole-function trace answers (traced_for_call_instead), the callee
# itself is traced with the arguments its derivative was given, so that the call in progress
# finishes from the values its caller already computed: the user's Python before the failing
# call does not run again (issue 15: effects once per call). The function the transform was
# asked for is then traced whole for later calls, as before (RetryAnswered). A transform of
# such a derivative (vmap(grad(f)): the batched vjp of the callee; hessian: the jvp of its vjp)
# answers the same way: its form made from the callee's trace (_Answer.then).
_ANSWERED_MODES = ("vjp", "vjp_out", "jvp", "vmap")
_answering = threading.local()      # .errors: the run-time callee errors answered so


def _dispatches(gen):
    code = getattr(gen, "__code__", None)
    return code is not None and any(n.startswith("dynamic_call")
                                    for n in code.co_names + code.co_freevars)


def _calling(answer):
    def answered(*args, **kwargs):
        return answer(args, kwargs)
    return answered


class _Answer:
    """How a derivative `gen` of the user's function `own` is answered when a run-time callee
    in it fails: own traced with the arguments gen was given (read by name: the derivative keeps
    the user's parameter names; a cotangent or tangent has a fresh one), and `remake(traced)`,
    the same derivative of that trace, called as gen was."""

    def __init__(self, own, params, active, remake, batched=None):
        self.own, self.params, self.active, self.remake = own, params, active, remake
        self.batched = batched      # (a batched form's batched parameter positions)

    def then(self, how):
        """This answer for the transform `how` (wrt, mode, ...) of gen (vmap, jvp, vjp of the
        derivative)."""
        return _Answer(self.own, self.params, {p.name for p in self.params},
                       lambda traced: generate(self.remake(traced), *how),
                       how[0] if how[1] == "vmap" else None)

    def arguments(self, gen, args, kwargs):
        """own's arguments in a call of gen, by name (None where one is not given)."""
        try:
            given = inspect.signature(gen).bind(*args, **kwargs).arguments
        except (TypeError, ValueError):
            return None
        out = {}
        for p in self.params:
            if p.name in given:
                out[p.name] = given[p.name]
            elif p.default is not p.empty:
                out[p.name] = p.default
            else:
                return None
        return out

    def wrap(self, gen):
        """gen, answering a run-time callee's error from the values of the call it fails in
        (one wrapper per gen: what a further transform or a size binding keys on is the same
        object at every call)."""
        made = gen.__dict__.get("__secant_answered__")
        if made is not None:
            return made

        def answer(args, kwargs):
            try:
                return gen(*args, **kwargs)
            except SecantError as e:
                errors = _answering.__dict__.get("errors")
                arguments = None if errors is None or getattr(
                    e, "run_time_callee", None) is None else self.arguments(gen, args, kwargs)
                if arguments is None:
                    raise
                error = e
            from secant.transformer.trace_source import retraced
            try:
                traced = retraced(self.own, f"a callee known only at run time: "
                                  f"{error.global_flow}", arguments, self.active)
                remade = self.remake(traced)
                out = _called_as(remade, gen, args, kwargs)
                if self.batched is not None:        # (its outputs batched where gen's are)
                    out = _batched_as(out, gen, remade, _batch_size(gen, self.batched, args,
                                                                      kwargs))
            except Exception:      # (not traceable with them either: the caller retries whole)
                raise error from None
            errors.append(error)
            return out
        answered = _calling(answer)
        # (gen's globals: a transform reading the wrapper resolves gen's names in them)
        answered = types.FunctionType(answered.__code__, gen.__globals__, gen.__name__, None,
                                      answered.__closure__)
        functools.update_wrapper(answered, gen)
        answered.__signature__ = inspect.signature(gen)
        answered.__secant_answers__ = gen       # (what a transform of it reads: generate)
        answered.__secant_answer__ = self
        gen.__secant_answered__ = answered
        return answered


def _batch_size(gen, positions, args, kwargs):
    """The batch size of a call of the batched function gen (its size parameter's value, or
    the leading axis of its first batched array argument)."""
    size = kwargs.get(getattr(gen, "__secant_size_param__", None) or "", None)
    if size is not None:
        return size
    for p in positions:
        for leaf in tree_util.tree_leaves(args[p]) if p < len(args) else ():
            if np.ndim(leaf):
                return np.shape(leaf)[0]
    return None


def _batched_as(out, gen, remade, size):
    """`out`, what `remade` returned for a call of the batched function gen, with each output
    gen returns batched (its __secant_out_batched__) broadcast along the batch axis where
    remade returned it unbatched (a tangent-free primal output of a trace's jvp)."""
    def flags(fn, n):
        f = getattr(fn, "__secant_out_batched__", True)
        return (f,) * n if isinstance(f, bool) or f is None else tuple(f)
    outs = out if isinstance(out, tuple) else (out,)
    want, got = flags(gen, len(outs)), flags(remade, len(outs))
    if want == got:
        return out
    if size is None or len(want) != len(outs) or len(got) != len(outs) or any(
            g and not w for w, g in zip(want, got)):
        raise SecantError("internal: an answered callee's batched outputs differ" + where())
    outs = tuple(tree_util.tree_map(lambda v: snp.broadcast_to(v, (size,) + np.shape(v)), o)
                 if w and not g else o for o, w, g in zip(outs, want, got))
    return outs if isinstance(out, tuple) else outs[0]


def _called_as(remade, gen, args, kwargs):
    """remade, made for the same call as gen from the callee's trace, called with gen's
    arguments: matched by position in the two signatures, as their parameters stand for the
    same values (a cotangent's or tangent's fresh name may differ); each one's batch size
    parameter (a batched form's) to the other's."""
    gs, rs = inspect.signature(gen), inspect.signature(remade)
    given = gs.bind(*args, **kwargs).arguments
    g_size = getattr(gen, "__secant_size_param__", None)
    r_size = getattr(remade, "__secant_size_param__", None)
    gp = [p for p in gs.parameters.values() if p.name != g_size]
    rp = [p for p in rs.parameters.values() if p.name != r_size]
    if len(gp) != len(rp) or any(p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL, p.VAR_KEYWORD)
                                 for p in gp + rp):
        raise SecantError("internal: an answered callee's derivative takes other parameters"
                          + where())
    call = {r.name: given[g.name] for g, r in zip(gp, rp) if g.name in given}
    if r_size is not None and given.get(g_size) is not None:
        call[r_size] = given[g_size]
    return remade(**call)


def _answered_by_trace(gen, fn, how):
    if not isinstance(fn, types.FunctionType) or not isinstance(gen, types.FunctionType) \
            or _generated_code(fn):      # (a transform of a derivative: its _Answer.then)
        return gen
    params = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return gen
    mode, wrt, has_aux, tuple_out, staged, batch = how
    return _Answer(_users_own(fn), params, {names[i] for i in wrt if i < len(names)},
                   lambda traced: generate(traced, wrt, mode, has_aux, tuple_out, staged,
                                           batch)).wrap(gen)


def _generated_code(fn):
    return getattr(getattr(fn, "__secant_source__", None), "generated", False) \
        or hasattr(fn, "__secant_generated__")


def _users_own(fn):
    """The user's own function `fn` was rewritten from (desugared, functionalised for jit: a
    trace of that form records its staged calls, which it refuses), specialised for the same
    call where fn was (a callee taking *args)."""
    spec = getattr(fn, "__secant_specialises__", None)
    if spec is not None:
        own = _users_own(spec)
        if own is spec:
            return fn
        from secant.transformer.callees import specialise
        params = inspect.signature(fn, follow_wrapped=False).parameters.values()
        return specialise(own, sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                   for p in params),
                          [p.name for p in params if p.kind == p.KEYWORD_ONLY])
    while getattr(fn, "__secant_rewritten_from__", None) is not None:
        fn = fn.__secant_rewritten_from__
    return fn


class RetryAnswered:
    """`with RetryAnswered(fn) as answered:` around a transform's run of `fn`'s source
    derivative: a run-time callee's error met inside is answered by tracing the callee with
    its arguments (_Answer) where fn could be traced whole instead."""

    def __init__(self, fn):
        self.fn = fn

    def __enter__(self):
        self.was = _answering.__dict__.get("errors")
        # (a run inside another transform's, of a function that is not the user's (a vmap of
        # a Jacobian's generated jvp): answered for the outer one, which traces the user's
        # function whole from the next call)
        self.errors = _answering.errors = [] if _escalates(_escalation_target(self.fn)[1]) \
            else self.was
        return self

    def __exit__(self, *exc):
        _answering.errors = self.was
        return False

    def escalated(self):
        """Whether a run-time callee's error was answered inside: fn is then traced whole
        for later calls (traced_for_call_instead)."""
        return bool(self.errors) and traced_for_call_instead(self.fn, self.errors[0])


_TRACED_PER_CALL = weakref.WeakKeyDictionary()     # function -> why its trace is transformed
# function -> (why, the error of its source transform): its trace needs the call's arguments
# (a parameter that is an object, a function or a container: a recording value cannot stand
# in for it), so what the transforms make of it is a dispatcher tracing it at each call
_TRACED_WITH_ARGUMENTS = weakref.WeakKeyDictionary()
_PER_CALL_MODES = ("grad", "value_and_grad", "vjp", "jvp", "vmap", "replay", "vjp_given_out",
                   "vjp_out")
_per_call_dispatchers = FunctionCache("per_call_dispatchers")
# function -> True: traced with each call's arguments because a callee it reaches through an
# object known only at run time could not be transformed (traced_for_call_instead)
_ESCALATED = weakref.WeakKeyDictionary()
_ESCALATION_FAILED = weakref.WeakKeyDictionary()    # function -> True: its whole trace failed


def _escalated_origin(fn):
    """The user's function an escalated one was rewritten into `fn` from (desugared,
    functionalised for jit), or None."""
    seen = 0
    while fn is not None and seen < 8:
        if isinstance(fn, types.FunctionType) and fn in _ESCALATED:
            return fn
        fn = getattr(fn, "__secant_rewritten_from__", None)
        seen += 1
    return None


def traced_for_call_instead(fn, error):
    """Whether `fn`, the user's function a transform was asked for, is now traced with each
    call's arguments (registered here), because running its derivative met `error`: a callee
    known only at run time (flax's `self._bind(scope)` inside `model.apply`) that no transform
    can take, as its values pass through a global or an object's own state (error.global_flow)
    and its trace cannot be returned on its own (it builds an object of differentiated values).
    Traced whole from `fn`, with its arguments, the trace follows the calls into that callee
    and its objects (transformer/trace_source.py), and returns arrays only. The caller then
    generates fn's form again and runs it once more."""
    stale, fn = _escalation_target(fn)
    callee = getattr(error, "run_time_callee", None)
    if callee is None or not _escalates(fn):
        return False
    name = getattr(callee, "__qualname__", None) or getattr(callee, "__name__", None) \
        or type(callee).__name__
    why = (f"{name}, called through an object known only at run time, cannot be transformed "
           f"on its own: {error.global_flow}")
    _TRACED_WITH_ARGUMENTS[fn] = (why, error)
    _ESCALATED[fn] = True
    if isinstance(stale, types.FunctionType):
        stale.__secant_guards__ = tuple(getattr(stale, "__secant_guards__", ())) + (
            _NotEscalated(fn),)
    return True


def _escalation_target(fn):
    """(the derivative generated before that escalating fn makes stale, or None; the user's
    function traced_for_call_instead would register)"""
    stale = None
    if getattr(fn, "__secant_reads__", None) is not None \
            and getattr(fn, "__secant_current__", None) is not None:
        # (vmap(grad(f)): f, whose grad generated before is stale from now)
        stale, fn = getattr(fn, "__secant_generated__", None), fn.__secant_reads__[0]
    return stale, _unwrap(fn)


def _escalates(fn):
    """Whether traced_for_call_instead would trace `fn` whole for a run-time callee's error."""
    return not (not isinstance(fn, types.FunctionType)
            or fn in _TRACED_WITH_ARGUMENTS or fn in _ESCALATED or fn in _ESCALATION_FAILED \
            or getattr(fn, "__secant_traced__", None) is not None \
            or (fn.__module__ or "").split(".")[0] == "secant" \
            or _generated_code(fn)
            or fn.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))


class _NotEscalated:
    """The guard of a derivative generated from fn's source before fn was traced with each
    call's arguments instead (traced_for_call_instead): stale from then on (`escalated`: the
    guard of fn's per-call dispatcher, stale once that trace failed)."""

    def __init__(self, fn, escalated=False):
        self.fn = weakref.ref(fn)
        self.escalated = escalated

    def holds(self):
        fn = self.fn()
        return fn is None or (fn in _ESCALATED) == self.escalated


def _per_call_dispatcher(fn, wrt, mode, has_aux, tuple_out, staged, batch):
    """The `mode` form of `fn`, traced only with a call's actual arguments: generated code
    that traces fn with the arguments it is given (arrays recorded, containers of them taken
    apart, objects and functions passed as themselves: trace_source.retraced), and calls the
    `mode` form of that trace (generated once per trace):

        def potential_vjp(out_bar, params):
            # potential is traced for each call's arguments (...): its vjp is made from that trace
            return per_call(fn_, how_, params=params)(out_bar, params)

    (fn_ the function, how_ the transform's parameters)."""
    key = (fn, mode, tuple(wrt), has_aux, tuple_out, staged, batch)
    hit = _per_call_dispatchers.get(key)
    if hit is not None:
        return hit
    why, error = _TRACED_WITH_ARGUMENTS[fn]
    params = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
    if mode not in _PER_CALL_MODES or any(
            p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise error
    names = Names([p.name for p in params] + ["per_call", "fn_", "how_"])
    free = {"per_call": _traced_for_call, "fn_": fn}
    head, call = _dispatcher_signature(fn, params, wrt, mode, names, free)
    arguments = ", ".join(f"{p.name}={p.name}" for p in params)
    what = {"vmap": "batched form", "value_and_grad": "value and gradient",
            "replay": "forward pass"}.get(mode, mode.partition("_")[0])
    name = _generated_name(fn.__name__ if fn.__name__.isidentifier() else "f", mode)
    free["how_"] = (mode, tuple(wrt), has_aux, tuple_out, staged, batch)
    look = f"per_call(fn_, how_, {arguments})"
    source = (f"def {name}{inspect.Signature(head)}:\n"
              f"    # {fn.__name__} is traced for each call's arguments ({why}): its {what} is "
              f"made from that trace\n"
              f"    return {look}({', '.join(call)})\n")
    gen = _internal(load_generated(source, name, {}, free))
    gen.__secant_out_batched__ = True
    gen.__secant_traced_with_arguments__ = fn
    if fn in _ESCALATED:
        gen.__secant_guards__ = (_NotEscalated(fn, escalated=True),)
    _per_call_dispatchers[key] = gen
    return gen


def _dispatcher_signature(fn, params, wrt, mode, names, free):
    """(the parameters of a dispatcher standing for the `mode` form of fn, the arguments it
    passes on) for fn's `params`: a vjp's cotangent (and given output) first, a jvp's tangents
    after the positional parameters; a default kept in `free`, shown as its name."""
    out_bar = names.fresh("out_bar")
    head, call = [], []
    for p in params:
        if p.default is not p.empty:
            free[names.fresh(f"{p.name}_default")] = p.default
            p = p.replace(default=_Source(list(free)[-1]))
        head.append(p.replace(annotation=p.empty))
        call.append(p.name if p.kind != p.KEYWORD_ONLY else f"{p.name}={p.name}")
    if mode in ("vjp",) + _GIVEN_OUT:    # (the output's cotangent; the output given)
        given = [out_bar] + ([names.fresh("out")] if mode in _GIVEN_OUT else [])
        head[0:0] = [inspect.Parameter(g, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                     for g in given]
        call[0:0] = given
    elif mode == "jvp":     # (the tangents after the positional parameters; keyword-only
        at = next((i for i, p in enumerate(head) if p.kind == p.KEYWORD_ONLY), len(head))
        keyword = any(p.default is not p.empty for p in head[:at])      # after defaults:
        dots = [names.fresh(f"{params[i].name}_dot") for i in wrt]      # ad/forward.py)
        head[at:at] = [inspect.Parameter(d, inspect.Parameter.KEYWORD_ONLY if keyword else
                                         inspect.Parameter.POSITIONAL_OR_KEYWORD) for d in dots]
        call[at:at] = [f"{d}={d}" if keyword else d for d in dots]
    return head, call


# grad and value_and_grad being built (_eager_generated): a function traced on each call is
# then traced at its first call, not at the build (_lazily_traced)
_lazy_build = threading.local()


def _traces_lazily(fn, error, mode):
    """Whether the build of grad/value_and_grad of the user's `fn`, whose source transform
    raised `error`, leaves its trace (_traced_instead) to the first call."""
    return mode in ("grad", "value_and_grad") and isinstance(fn, types.FunctionType) \
        and getattr(error, "global_flow", None) is not None \
        and getattr(fn, "__secant_rewritten_from__", None) is None \
        and getattr(fn, "__secant_specialises__", None) is None \
        and getattr(fn, "__secant_traced__", None) is None \
        and (fn.__module__ or "").split(".")[0] != "secant" and not _generated_code(fn) \
        and fn not in _TRACED_WITH_ARGUMENTS and not any(
            p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            for p in inspect.signature(fn, follow_wrapped=False).parameters.values())


def _lazily_traced(fn, why, wrt, mode, has_aux, tuple_out):
    """grad (value_and_grad) of `fn`, a function traced on each call (_traced_instead: a
    value passes through a global, or a callee changes Python state), built without running
    it, as JAX's grad runs nothing until it is called: generated code that, at each call,
    takes fn's trace once (once_per_call: the guard asking for it again gets the same one) and
    calls the derivative of that trace; a transform of it transforms that derivative. The
    first call transforms fn as the build did before (its source transform refused, then
    _traced_instead), so where the trace fails fn is traced for each call's arguments, or
    refused, as before."""
    params = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
    names = Names([p.name for p in params] + ["made_"])
    how = (tuple(wrt), mode, has_aux, tuple_out)

    def made():
        from secant.transformer.trace_source import once_per_call
        with once_per_call():       # (its first call: the source transform fails again)
            return generate(fn, *how)
    free = {"made_": made}
    head, call = _dispatcher_signature(fn, params, wrt, mode, names, free)
    what = "value and gradient" if mode == "value_and_grad" else mode
    name = _generated_name(fn.__name__ if fn.__name__.isidentifier() else "f", mode)
    source = (f"def {name}{inspect.Signature(head)}:\n"
              f"    # {fn.__name__} is traced on each call ({why}): its {what} is made from "
              f"that trace when it is called\n"
              f"    return made_()({', '.join(call)})\n")
    gen = _internal(load_generated(source, name, {}, free))
    gen.__secant_lazy__ = made      # (what a transform of it transforms: generate)
    return gen


def _traced_for_call(fn, how, /, **arguments):
    """(per_call(fn, how, **arguments): the form `how` says of fn traced with `arguments`)"""
    from secant.transformer.trace_source import pythons_own, retraced
    mode, wrt, has_aux, tuple_out, staged, batch = how
    why, error = _TRACED_WITH_ARGUMENTS[fn]
    if how in _CALLEES_PER_CALL.get(fn, ()):
        return _callees_per_call(fn, how)
    try:
        names = _parameter_names(fn)
        given = arguments
        if mode == "vmap":      # (the trace reads an argument's length: one example's)
            axes = dict(batch.in_axes) if batch is not None else {}
            given = {k: _one_example(v, axes.get(names.index(k), 0))
                     if k in names and names.index(k) in wrt else v
                     for k, v in arguments.items()}
        traced = retraced(fn, why, given, {names[i] for i in wrt if i < len(names)})
    except Exception as t:      # (not traceable with the arguments either)
        own = pythons_own(t)    # (the user's code's own Python error: raised as Python's)
        if fn in _ESCALATED:    # (traced whole for a run-time callee's error: that error
            del _ESCALATED[fn]  # stands, and fn is transformed from its source again)
            _TRACED_WITH_ARGUMENTS.pop(fn, None)
            _ESCALATION_FAILED[fn] = True
            raise (own or error) from None
        if own is not None:
            raise own from None
        try:    # fn's own source, its callees traced with their arguments where they must be
            if not isinstance(t, SecantError):  # (where the trace refused, not where the
                raise error                     # user's code failed on its values)
            gen = _callees_per_call(fn, how)
        except SecantError:
            reason = str(t) if isinstance(t, SecantError) else f"{type(t).__name__}: {t}"
            refused = copy.copy(error)
            refused.args = (f"{error.args[0]}\n  (secant traces {fn.__qualname__} for each "
                            f"call's arguments instead, but that trace failed: {reason})",) \
                + error.args[1:]
            if fn not in _ESCALATED:
                _mark_run_time_callee(refused, fn)
            raise refused from None
        _CALLEES_PER_CALL.setdefault(fn, set()).add(how)
        return gen
    gen = generate(traced, wrt, mode, has_aux, tuple_out, staged, batch)
    if mode == "vmap" or not getattr(traced, "__secant_reads_lengths__", False):
        return gen
    # (the trace unrolled `for row in x` to x's length in this call; called by a batched
    # caller (vmap(grad(f))), x is the batch: _dispatch traces again with one example)
    def call(*args, **kwargs):
        return gen(*args, **kwargs)
    call.__secant_generated__ = gen
    call.__secant_per_call__ = (fn, how, arguments)
    return call


# function -> the transforms (how) whose form of it is its own source with its callees traced
# per call, as its whole trace fails: per transform, as that form may be made for one (vmap)
# and refused for another (grad: a differentiated object stored in a global), whose error a
# caller's trace then answers (a mark for every transform would raise it there instead)
_CALLEES_PER_CALL = weakref.WeakKeyDictionary()


def _callees_per_call(fn, how):
    """The form `how` says of fn's own source, where each callee that cannot be transformed
    nor traced with recording values is a dispatcher tracing it with its call's arguments."""
    mode, wrt, has_aux, tuple_out, staged, batch = how
    was = _generating.__dict__.get("callees", False)
    _generating.callees = True
    try:
        with _gc_paused():
            return _generate_cached_source(fn, wrt, mode, has_aux, tuple_out, staged, batch)
    finally:
        _generating.callees = was


_traced_for_call.__secant_dispatcher__ = True   # per_call(fn, ...)(x=x)(x): found when it runs


def _trace_taken(fn):
    """fn's trace where fn (or the user's function it was desugared or staged from) is traced
    on each call (_traced_instead), taken once per call (trace_source.once_per_call); None
    otherwise."""
    while isinstance(fn, types.FunctionType) and fn not in _TRACED_PER_CALL:
        fn = getattr(fn, "__secant_rewritten_from__", None)
    if fn is None:
        return None
    from secant.transformer.trace_source import retraced
    return retraced(fn, _TRACED_PER_CALL[fn])


def _traced_instead(fn, error):
    """The trace of `fn` (transformer/trace_source.py retraced: its calls followed into user
    functions, classes and objects), where its source transform raised `error` because a
    differentiated value passes through a global (haiku's frame stack: `_FRAMES.append(
    Frame(params))` in one function, `_FRAMES[-1].params[name]` read in another) or a function
    called for its side effect (a module-level cache), which a source transform cannot follow;
    None otherwise, or where the trace cannot follow it either (its reason then added to the
    error, which a caller's trace may still answer).

    The trace reads Python state (what the global holds now) that no identity guard watches,
    so it is taken again whenever a derivative of it is about to run: its guard
    (trace_source.SameTrace) traces again and holds while the trace is the same text with the
    same objects bound to its free names, which is the same function."""
    why = getattr(error, "global_flow", None)
    from secant.transformer.trace_source import _followed
    while getattr(fn, "__secant_rewritten_from__", None) is not None or getattr(
            fn, "__secant_specialises__", None) is not None and _followed(
                fn.__secant_specialises__) is None:
        fn = getattr(fn, "__secant_rewritten_from__", None) or fn.__secant_specialises__
        # (desugared, functionalised: the user's own; specialised for a call's *args, of a
        # function the trace does not run through (a functools.wraps wrapper): the user's
        # own too, as the trace of the specialised one recorded `orig(self, args_0)`, a call
        # of the function it stands for, whose derivative was that trace's own: a recursion
        # without end)
    if why is None or not isinstance(fn, types.FunctionType) \
            or getattr(fn, "__secant_traced__", None) is not None \
            or (fn.__module__ or "").split(".")[0] == "secant" \
            or getattr(getattr(fn, "__secant_source__", None), "generated", False):
        return None
    from secant.transformer.trace_source import retraced
    try:
        traced = retraced(fn, why)
    except Exception as t:      # (the user's code failing on recording values: not traceable)
        if fn not in _TRACED_WITH_ARGUMENTS:
            _TRACED_WITH_ARGUMENTS[fn] = (why, error)
        error.per_call_function = fn        # (traced with each call's arguments instead)
        if not getattr(error, "trace_noted", False):
            reason = str(t) if isinstance(t, SecantError) else f"{type(t).__name__}: {t}"
            error.args = (f"{error.args[0]}\n  (secant traces such a function instead, but "
                          f"{fn.__qualname__}'s trace cannot be taken either: {reason})",) \
                + error.args[1:]
            error.trace_noted = True
        return None
    _TRACED_PER_CALL[fn] = why
    return traced


def _generate_cached_source(fn, wrt, mode, has_aux, tuple_out, staged, batch):
    if not _current(fn):
        raise SecantError(f"{fn.__name__} was generated for callees that have changed since "
                          "(a closure cell or global now names another function); transform "
                          "the function again" + where())
    if not getattr(fn, "__secant_custom__", False):
        fn = desugar(fn)        # Python syntax outside the canonical subset, rewritten
    if staged and not _staged_as_written(fn):
        from secant.transformer.functionalize import functionalize
        fn = restaged(fn) if getattr(_restaging, "on", False) and getattr(
            fn, "__secant_made_from__", None) is not None else functionalize(fn)
    key = (fn, mode, tuple(wrt), has_aux, tuple_out, staged, batch)
    if staged:      # jit(grad(f)) after grad(f), f without control flow to stage: the same code
        plain = _generated.get(key[:-2] + (False, batch))
        if plain is not None and _current(plain) and _same_staged(plain):
            return plain
    while True:     # (threads: one builds each key, the others wait for it: backends/once.py)
        hit = _generated.get(key)
        if hit is not None and _current(hit):
            return hit
        mine = once.claim(_generated, key)
        if mine is once.RECURSIVE:
            return _Recursive(key, fn, mode)    # a recursive call: the generated function itself
        if mine:
            break
    try:
        hit = _generated.get(key)
        if hit is not None and _current(hit):
            return hit
        gen = depth.guard(fn, lambda: _generate(fn, tuple(wrt), mode, has_aux, tuple_out,
                                                staged, batch))
        if mode == "vmap" and (getattr(gen, "__secant_recursive__", False)
                               or key in _assumed_batched) and not (
                gen.__secant_out_batched__ is True
                or isinstance(gen.__secant_out_batched__, tuple)
                and all(gen.__secant_out_batched__)):
            # its own calls were batched assuming every output batched: not so, refuse
            raise SecantError(f"cannot batch the recursive function {fn.__name__}: some of "
                              "its outputs are not batched")
        _generated[key] = gen       # (before the threads waiting for it wake)
        for hook in GENERATE_HOOKS:     # (`secant run --show-source`: secant/source_log.py)
            hook(fn, mode, tuple(wrt), staged, gen)
        return gen
    finally:
        _assumed_batched.discard(key)
        once.release(_generated, key)


# called as hook(fn, mode, wrt, staged, generated) for each function generate builds (once per
# key): the one place every transform's source is written
GENERATE_HOOKS = []

_assumed_batched = set()    # keys of functions in progress whose recursive calls were batched
                            # assuming every output batched (generate checks it)


def _same_staged(gen):
    """Whether `gen`, generated for jit's eager (unstaged) use, is also what its staged
    generation would write: jit's functionalisation leaves the function it derives as it is, and
    `gen` itself (a derivative's own loops and branches, as grad of a filtered comprehension
    writes, would be staged), and the same holds for each derivative it calls."""
    from secant.transformer.functionalize import unchanged
    staging = getattr(gen, "__secant_staging__", None)     # (fn, derivatives it calls)
    return staging is not None and (_staged_as_written(staging[0]) or unchanged(staging[0])
                                    and unchanged(gen)) and all(
        _same_staged(sub) for sub in staging[1])


def _staged_as_written(fn):
    """Whether jit derives `fn` as written, never its functionalised form: a custom rule, a
    dispatcher, or a helper of generated code, whose branches test shapes and flags only, and
    so do its derivatives' (which jit then reuses when made eagerly before, not generated
    again after functionalising copies of them it would not use: issue 19)."""
    return getattr(fn, "__secant_custom__", False) or \
        getattr(fn, "__secant_dispatch__", None) is not None or _own_helper(fn)


def _current(gen, after_run=False):
    """Whether every callee `gen` (or a derivative it calls) resolved at transform time through
    a closure cell or a global still names the same object: if not, Python would call another
    function now, and the derivative is generated again. after_run: asked after gen ran, where
    a guard that runs the user's code (a trace taken again) is not asked again."""
    for guard in getattr(gen, "__secant_guards__", ()):
        if after_run and getattr(guard, "runs_user_code", False):
            continue
        if not guard.holds():
            return False
    return True


def rerun_if_rebound(gen, out, again, fn):
    """`out`, what `gen` returned, if what it resolved when it was generated still holds after
    it ran; else the call ran against names the user's code rebound while it ran (a global
    callee rebound by a callee, a class defined or first met then): `again()`, the call run
    again by the code generated now. A call that rebinds them again each time is refused,
    never answered by code generated for another callee.

    This is the one place a call runs the user's Python twice under a transform (issue 15:
    effects once per call): the values the first run computed used the callee bound before,
    and generated code cannot resume mid-function. A global callee its module assigns under a
    `global` declaration is read at run time instead (transformer/global_writes.py
    rebound_callee), so this answers what that does not see: a class defined or first met
    during the call, a name rebound through the module object or a closure cell."""
    if _current(gen, after_run=True):
        return out
    gen, out = again()
    if not _current(gen, after_run=True):
        raise SecantError(f"{getattr(fn, '__name__', 'the function')} rebinds a function it "
                          "calls (a global or closure cell) each time it runs: secant resolves "
                          "callees when it transforms the code; bind them before the call, or "
                          "pass the function as an argument" + where())
    return out


def rerun_if_met(call, again=None):
    """call(), run once more (by again(), or call() again, which generates the code again)
    where it was refused for reading as a field an attribute that a class first met while it
    ran computes (ad/helpers.py field_in_aux: an object built inside the function, its
    property): the code generated now reads it through the class's code. As rerun_if_rebound,
    the call's Python effects run twice then, on the first call that meets the class only."""
    try:
        return call()
    except SecantError as e:
        name = getattr(e, "met_in_call", None)
        if name is None or not may_be_computed(name):
            raise
    return (again or call)()


_CUSTOM_REPLAYS = weakref.WeakKeyDictionary()     # a custom_jvp body's replay -> its custom_jvp


def _custom_replay(custom, replay, staged):
    """custom_jvp(replay) with custom's rule as its replay (one per replay, so that its
    derivatives are generated once; custom_vjp(replay) with custom's rules): a recompute's rule runs without the Python side effects
    of the rule and of custom's body in it (the caller's forward pass ran the body, and the
    check in custom's vjp the rule, ad/custom_rules.vjp_of_custom_jvp)."""
    out = _CUSTOM_REPLAYS.get(replay)
    if out is None:
        out = _CUSTOM_REPLAYS[replay] = type(custom)(replay, custom.nondiff_argnums)
        out.__secant_replay_of__ = custom
        if getattr(custom, "jvp", None) is None:        # custom_vjp: its rules (a caller's
            out.defvjp(custom.fwd, custom.bwd)          # vjp calls custom's own vjp)
            return out
        out.defjvp(_rule_replay(custom.jvp, staged, pending=out))
    return out


class _Recursive:
    """A function's own derivative, asked for while it is being generated (recursion on static
    values, `p(x, n - 1)`): the generated code calls itself by name; called from elsewhere
    (mutual recursion), this finds the finished function when it runs."""

    def __init__(self, key, fn, mode):
        self.key = key
        self.__name__ = _generated_name(fn.__name__, mode)
        every = list(inspect.signature(fn).parameters.values())   # (what wrt indexes)
        params = [p for p in every if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if mode in forward.MODES:       # (primals, tangents): what forward.py reads
            wrt = key[2]
            taken = Names(p.name for p in every)    # (fresh: a jvp's own x_dot is a param)
            # as forward._signature: after a parameter with a default, the tangents are
            # keyword-only (r_jvp(a, shift, axis=None, *, a_dot)), before the function's own
            # keyword-only ones (a jvp's tangents, differentiated again)
            keyword = any(p.default is not p.empty for p in params)
            kind = inspect.Parameter.KEYWORD_ONLY if keyword else \
                inspect.Parameter.POSITIONAL_OR_KEYWORD
            dots = [inspect.Parameter(taken.fresh(f"{every[i].name}_dot"), kind) for i in wrt]
            kwonly = [p for p in every if p.kind == p.KEYWORD_ONLY]
            if keyword or kwonly:
                self.__signature__ = inspect.Signature(params + dots + kwonly)
                return
            params += dots
        self.__signature__ = inspect.Signature(
            [p.replace(default=inspect.Parameter.empty) for p in params])

    def __call__(self, *args, **kwargs):
        gen = _generated.get(self.key)
        while gen is None:      # (threads: another one may be finishing it; wait for it)
            mine = once.claim(_generated, self.key)
            if mine is True:        # nobody builds it: its generation failed in another thread
                once.release(_generated, self.key)
                raise SecantError(f"{self.__name__} could not be generated (its generation "
                                  "failed in another thread)" + where())
            if mine is once.RECURSIVE:
                raise SecantError(f"{self.__name__} was called while it is generated (a secant "
                                  "bug, please report it)")
            gen = _generated.get(self.key)
        return gen(*args, **kwargs)

    @property
    def __secant_resolved__(self):
        """The finished function (None while it is generated): what a transform of code that
        calls this placeholder reads (a recursive derivative differentiated again)."""
        return _generated.get(self.key)


_recursive_callees = weakref.WeakSet()     # functions whose vjp_out met itself (see above)
# reverse modes whose vjp takes the function's output as its second parameter: a lax loop body's
# (vjp_given_out: the step's saved outputs) and a called function's (vjp_out: the caller's value)
_GIVEN_OUT = ("vjp_given_out", "vjp_out")


def _state_params(fn_ir, names):
    """The state parameters of a vjp_state form (ad/state_inputs.py state_params), its
    canonical form rewritten to take them; NotStateLeaf where they cannot follow its own."""
    from secant.ad.state_inputs import NotStateLeaf, state_params
    if re.search(r"[*=]", fn_ir.args_src or ""):
        raise NotStateLeaf("starred or default parameters")
    return state_params(fn_ir, names)


def _generated_name(name, mode):
    return f"{name}_jvp" if mode in forward.MODES else \
        f"{name}_vjp" if mode in _GIVEN_OUT else f"{name}_{mode}"


def _callee_name(sub, callees):
    """The name a generated function binds a derivative it calls to: its own, or, where that
    names other derivatives of the same function it calls (for other arguments), the
    derivative's with what it differentiates or batches (`_layer_vjp_w`)."""
    name = sub.__name__
    wrt = getattr(sub, "__secant_wrt_names__", ())
    others = [getattr(o, "__secant_wrt_names__", ()) for o in callees if o.__name__ == name]
    if wrt and others and wrt not in others:
        return f"{name}_{'_'.join(wrt)}"
    return name


def _split_aux(fn_ir, names):
    """has_aux with a returned call's value, a pair only when it runs (`return f(x)`): read
    as `value, aux = f(x)`; `return value, aux`, as if written so (Python checks the pair)."""
    result = fn_ir.result
    if not isinstance(result.value, ir.Var):
        return
    pair = result.value.name
    made = [s for s in ir.nested(fn_ir.body) if pair in getattr(s, "targets", ())]
    if not (made and all(s.op == "call" for s in made)):
        return      # (an array op's value is never a pair: the error says so when generating)
    items = [names.fresh("value"), names.fresh("aux")]
    result.value = ir.Seq(tuple(ir.Var(i) for i in items), "tuple")
    if fn_ir.body and fn_ir.body[-1] is made[0]:    # `value, aux = f(x)` (Python checks it)
        made[0].targets = items
        return
    fn_ir.body.extend(ir.Op([item], "field", {"tree": ir.Var(pair)}, {"key": str(k)},
                            result.origin) for k, item in enumerate(items))
    fn_ir.containers.add(pair)


def _marked(fn, mark):
    """Whether fn, or the function it was rewritten from (desugared: a comprehension of a
    helper's written as a loop), carries `mark`."""
    while fn is not None:
        if getattr(fn, mark, False):
            return True
        fn = getattr(fn, "__secant_rewritten_from__", None)
    return False


def _with_size_param(args_src, size):
    """A batched function's parameters with `size=None`, its caller's batch size (vectorize.
    build): keyword-only, last, before a `**kwargs`. A caller passes it by name, so no transform
    of the batched function (the vjp under jacrev's vmap, a Jacobian's source form) reads it as
    one of the function's positional arguments; each leaves it at its default or forwards it."""
    params = ast.parse(f"def f({args_src}): pass").body[0].args
    star = "" if params.vararg is not None or params.kwonlyargs else "*, "
    if params.kwarg is not None:
        head, _, kwarg = args_src.rpartition("**")
        return f"{head}{star}{size}=None, **{kwarg}"
    return f"{args_src}, {star}{size}=None" if args_src.strip() else f"{star}{size}=None"


def _outputs_batched(staged, batch):
    """The normaliser's reading, under vmap, of which of the n outputs of a call unpacked into
    names are batched (callee, positions, n -> flags, None where unknown): those of the batched
    callee the vectorizer calls for it (batched_callee in _generate, out_axes "free"), read as
    the vectorizer reads them (vectorize.targets_batched): one answer for both."""
    from secant.batch import BatchOptions
    options = BatchOptions((), "free", getattr(batch, "axis_name", None), None,
                           getattr(batch, "computed", frozenset()))

    def outputs_batched(callee, positions, n):
        try:
            sub = generate(callee, positions, "vmap", staged=staged, batch=options)
        except SecantError:     # (the vectorizer's own call of it says why, or restages it)
            return None
        if isinstance(sub, _Recursive):     # (its calls assumed batched: every output)
            return None
        return vectorize.targets_batched(sub.__secant_out_batched__, n)
    return outputs_batched


def _outputs_active(staged, mode):
    """The normaliser's reading, differentiating in `mode`, of which of the n outputs of a
    call unpacked into names are differentiated (callee, positions, n -> flags, None where
    unknown): those the callee's derivative that ad/ calls for it says it differentiates
    (its __secant_out_active__: forward.build, reverse.build), the derivative generated once
    for both. Reverse mode reads the vjp given its output (reads_given_out's, every plain
    callee's first) where not staged; a replay, the callee's replay."""
    sub_mode = "jvp" if mode in forward.MODES else "replay" if mode == "replay" else \
        "vjp" if staged else "vjp_out"

    def outputs_active(callee, positions, n):
        try:
            sub = generate(callee, positions, sub_mode, staged=staged)
        except SecantError:     # (the caller's derivative of the call says why)
            return None
        flags = getattr(sub, "__secant_out_active__", None)
        return flags if flags is not None and len(flags) == n else None
    return outputs_active


def _generate(fn, wrt, mode, has_aux, tuple_out, staged, batch=None):
    state_in = mode == "vjp_state"      # (a vjp taking the state it reads: ad/state_inputs.py)
    if state_in:
        mode = "vjp"
    if getattr(fn, "__secant_custom__", False):
        return _generate_custom(fn, wrt, mode, staged, batch)
    if getattr(fn, "__secant_refused__", None) is not None:
        return _generate_refused(fn, wrt, mode, staged, batch)
    if getattr(fn, "__secant_dispatch__", None):
        return _generate_dispatch(fn, wrt, mode, staged, batch)
    if mode == "vmap" and getattr(fn, "__secant_dispatched__", None):
        return _generate_batched_dispatch(fn, wrt, staged, batch)
    if mode in ("vjp", "jvp") and getattr(fn, "__secant_batched_dispatch__", None):
        return _generate_batched_dispatch_derivative(fn, wrt, mode, staged)
    if mode == "vmap" and getattr(fn, "__secant_batched_dispatch__", None) and 0 in wrt:
        return _generate_batched_dispatch_vmap(fn, wrt, staged, batch)
    if mode in ("vjp", "jvp") and getattr(fn, "__secant_dispatched__", None) \
            and "fn" in [list(inspect.signature(fn).parameters)[i] for i in wrt]:
        return _generate_dispatch_derivative(fn, wrt, mode, staged)
    if mode == "vmap" and getattr(fn, "__secant_per_example__", None):
        from secant.custom_gradient import per_example      # (an untraceable custom_gradient)
        return per_example(fn, wrt, batch, fn.__secant_per_example__)
    fn = _faithful(fn)
    reserved = _reserved()
    fn_ir = normalise(fn, wrt, "vmap", batch_rules.opaque(
        {**helpers.by_name(), **batch_helpers.by_name()}), reserved,
        _outputs_batched(staged, batch), getattr(batch, "computed", frozenset())) \
        if mode == "vmap" else normalise(fn, wrt, reserved=reserved,
                                         outputs_of=_outputs_active(staged, mode))
    owner = [p for p in fn.__qualname__.split(".")[:-1] if p.isidentifier()]
    base_name = fn_ir.name if fn_ir.name != "__call__" else \
        (owner[-1].lower() if owner else "") + "_call"     # Layer.__call__: layer_call_grad
    gen_name = _generated_name(base_name, mode)
    while gen_name in helpers.by_name() or gen_name in batch_helpers.by_name():
        gen_name += "_"         # grad(snp.mean) is not the helper mean_grad its code calls
    if gen_name in fn_ir.user_names:    # the user's code names something f_grad: ours yields
        gen_name = Names(fn_ir.user_names | set(reserved)).fresh(gen_name)
    # the generated function's own name is taken: a callee named like it would be shadowed;
    # so are the user's names (free ones too: a callee must not shadow a global it reads)
    # names the function reads from its closure keep their meaning: fresh names avoid them
    src_info = getattr(fn, "__secant_source__", None)
    closure = dict(src_info.closure) if src_info else closure_values(fn)
    names = Names(_names_of(fn_ir).union(fn_ir.free_names, reserved.keys(), (gen_name,),
                                         closure.keys()))
    callees = {}
    self_calls = []
    flags = None
    derived = []    # the derivatives it calls (None: a recursive one, not generated yet)

    def batched_callee(callee, positions, out_axes, items=None, probe=False):
        """(name in the code, which outputs are batched) of a callee's batched function;
        `items`: position -> the leaves' flags of a tuple argument batched leaf by leaf (and
        batched_callee.leaves[name]: its outputs' leaves' flags, vectorize.build). probe: a
        trial (a loop's fixpoint), named nowhere: (which outputs are batched, their leaves')."""
        from secant.batch import BatchOptions
        leafwise = tuple((i, ("items", m)) for i, m in sorted((items or {}).items()))
        options = BatchOptions(leafwise, out_axes, batch.axis_name, None,
                               fn_ir.computed_queries)     # (objects fn's code may pass it)
        try:
            sub = generate(callee, positions, "vmap", staged=staged, batch=options)
        except SecantError as e:
            # a Python `while` on a value batched here, in a derivative of a user's while (the
            # vjp that jacrev's rows_of vmaps): batch the same derivative of the user's staged
            # form, whose loop is a lax.while_loop (run while any example's test holds)
            # (where that form is called otherwise than the callee, as the code calling it was
            # written for the callee, the caller is restaged: the error goes up to its caller)
            if not getattr(e, "batched_test", False):
                raise
            try:
                again = restaged(callee)
                if not _same_interface(_unwrap(callee), again):
                    raise e
                with _restaging_on():
                    sub = generate(again, positions, "vmap", staged=True, batch=options)
            except Exception:
                raise e from None
        if probe:       # (a trial the code does not call: no name taken from the real one)
            return (True, None) if isinstance(sub, _Recursive) else \
                (sub.__secant_out_batched__, getattr(sub, "__secant_out_leaves__", None))
        derived.append(None if isinstance(sub, _Recursive) else sub)
        if isinstance(sub, _Recursive) and sub.key == (fn, mode, wrt, has_aux, tuple_out,
                                                       staged, batch):
            self_calls.append(sub)      # recursion: assumed batched, checked when generated
            batched_callee.size_params[gen_name] = batched_callee.own_size
            return gen_name, True
        name = callees.get(sub)
        if name is None:
            name = callees[sub] = names.fresh(_callee_name(sub, callees))
        if isinstance(sub, _Recursive):   # mutual recursion (a staged branch calls fn back):
            _assumed_batched.add(sub.key)   # assumed batched, checked when it is generated
            return name, True
        batched_callee.size_params[name] = getattr(sub, "__secant_size_param__", None)
        batched_callee.leaves[name] = getattr(sub, "__secant_out_leaves__", None)
        return name, sub.__secant_out_batched__
    batched_callee.size_params = {}     # name -> its parameter taking the caller's batch size
    batched_callee.own_size = None      # fn's own, where it takes one (vectorize.build)
    batched_callee.leaves = {}          # name -> its outputs' leaves' flags (where known)

    def vjp_of_callee(callee, active, mode="vjp"):     # (mode None: name callee itself)
        sub = generate(callee, active, mode, staged=staged) if mode else callee
        if mode:
            derived.append(None if isinstance(sub, _Recursive) else sub)
        if isinstance(sub, _Recursive) and sub.key == (fn, mode, wrt, has_aux, tuple_out,
                                                       staged, batch):
            self_calls.append(sub)
            vjp_of_callee.generated[gen_name] = sub
            return gen_name             # recursion: the generated function calls itself
        name = callees.get(sub)
        if name is None:
            name = callees[sub] = names.fresh(_callee_name(sub, callees))
        vjp_of_callee.generated[name] = sub
        vjp_of_callee.array_params[name] = getattr(sub, "__secant_array_params__", frozenset())
        vjp_of_callee.unread[name] = getattr(sub, "__secant_unread__", frozenset())
        return name
    def reads_given_out(callee, active):
        """Whether the vjp of `callee` given its output (vjp_out) reads that output: a
        caller that has it passes it only then (else the plain vjp computes what it needs)."""
        if staged:
            return False
        sub = generate(callee, active, "vjp_out", staged=staged)
        if isinstance(sub, _Recursive):     # (a recursive callee keeps its plain vjp: one
            _recursive_callees.add(callee)  # derivative calling itself, as staging expects)
        return callee not in _recursive_callees and \
            "out" not in getattr(sub, "__secant_unread__", {"out"})
    def replay_of(callee, active):
        """The name of `callee`'s replay form (its forward pass without its Python side
        effects, ad/reverse.py build), which a derivative's recompute calls instead of the
        callee: the caller's primal call ran them; None where it has none to leave out. A
        custom_jvp function's replay is a custom_jvp function too, with the same rule (so
        that a higher-order derivative of the recompute still uses the user's rule)."""
        if getattr(callee, "__secant_constant__", False):
            return None     # (a shape helper's batched form, basis_like_vmap: no effects)
        custom = callee if getattr(callee, "__secant_custom__", False) else None
        if custom is not None:
            if not (type(custom).__name__ == "custom_jvp" and custom.jvp is not None
                    or type(custom).__name__ == "custom_vjp" and custom.fwd is not None
                    and not _is_library(custom.fun)):     # (secant's own: no effects)
                return None     # (custom_vmap, a function with no rule: called as written)
            try:
                sub = generate(custom.fun, active, "replay", staged=staged)
            except SecantError:     # a body no transform reads (its rule stands for it)
                return None
        else:
            sub = generate(callee, active, "replay", staged=staged)
        if isinstance(sub, _Recursive) or not getattr(sub, "__secant_effects__", False):
            return None
        if custom is not None:
            sub = _custom_replay(custom, sub, staged)
        return vjp_of_callee(sub, None, None)
    def output_dtype(callee, active):
        """What callee's own canonical form proves of its output's dtype (transformer/
        dataflow.py output_dtype), read from the vjp a call of it is differentiated with (the
        one reads_given_out generates; staged: the plain vjp), or None."""
        try:
            sub = generate(callee, active, "vjp" if staged else "vjp_out", staged=staged)
        except SecantError:         # (refused where its call is differentiated, as before)
            return None
        return getattr(sub, "__secant_output_dtype__", None)
    vjp_of_callee.reads_given_out = reads_given_out
    vjp_of_callee.output_dtype = output_dtype
    vjp_of_callee.checked_forward = checked_forward
    vjp_of_callee.pair_forward = lambda callee, active, ran: pair_forward(callee, active, staged,
                                                                          ran)
    vjp_of_callee.replay_of = replay_of
    vjp_of_callee.generated = {}        # name -> the generated callee it names
    vjp_of_callee.array_params = {}     # name -> positions of the callee's array parameters
    vjp_of_callee.unread = {}   # name -> a loop body vjp's parameters it does not read ("out")

    # keyword-only ones too; a vmapped function's own wrapper reads as what it wraps
    every = [fn_ir.renamed.get(p, p) for p in signature_of(
        fn, follow_wrapped=bool(getattr(fn, "__secant_vmap__", 0))).parameters]
    wrt_names = [every[i] for i in wrt]
    if has_aux and mode != "vmap":
        _split_aux(fn_ir, names)
    canonical = None    # the lines before folding (ad/fold.py), where they differ
    size_param = None   # (vmap: the parameter taking the caller's batch size)
    state = _state_params(fn_ir, names) if state_in else ()
    try:
        if mode == "vmap":                  # vmap: batching/vectorize.py
            in_axes = {every[i]: a for i, a in batch.in_axes}
            lines, flags, size_param, out_leaves = vectorize.build(
                fn_ir, wrt_names, names, batched_callee, batch.axis_name, batch.axis_size,
                in_axes, batch.out_axes)
        elif mode in forward.MODES:           # forward mode: ad/forward.py
            lines, jvp_args = forward.build(fn_ir, wrt_names, mode, names, vjp_of_callee,
                                            has_aux)
        else:
            # vjp_given_out: a loop body's vjp that takes the step's saved outputs
            lines, out_bar, given, canonical = reverse.build(
                fn_ir, wrt_names, "vjp" if mode in _GIVEN_OUT else mode, names,
                vjp_of_callee, has_aux, tuple_out, given_out=mode in _GIVEN_OUT,
                loop_body=mode == "vjp_given_out", state_in=state_in)
    except SecantError as e:
        if fn_ir.lowered:       # a derivative's lax loop read again (loop_lowering.py): under
            e.lax_loop_derivative = True    # jit, the derivative's Python loop as written
        raise
    except vectorize.BatchingError as e:
        o = e.origin
        at = f"\n  at {o.filename}:{o.line}\n    {o.text}" if o is not None else ""
        if o is not None and _errors.is_internal_file(o.filename):
            # a line of secant's own (vmap(v.reshape)'s calling function): the user's line
            err = SecantValueError(f"{e}\n  (in secant's {fn.__name__}){where()}")
        else:
            err = SecantValueError(f"{e}{at}\n  in {fn.__qualname__}")
        err.no_batching_rule = True     # (a nested Jacobian's next plan may not need it)
        raise err from None
    except ValueError as e:
        raise SecantTypeError(f"{e}\n  in {fn.__qualname__}{where()}") from None
    args_src = fn_ir.args_src if mode not in forward.MODES else jvp_args
    if size_param is not None:
        args_src = _with_size_param(args_src, size_param)
    inline = _inline_form(fn, fn_ir, mode, canonical, out_bar, given, every, callees,
                          derived, self_calls) if mode in ("vjp", "vjp_out") and not state \
        else None
    if mode in ("vjp",) + _GIVEN_OUT:
        args_src = ", ".join([out_bar] + ([given] if given else []) + ([args_src] if args_src
                                                                      else [])
                             + [p for p, *_ in state])
    source, origins = _text(lines, f"def {gen_name}({args_src}):", fn, mode)
    # secant's own free names: helpers, the API modules, builtins it calls, callees' derivatives
    ours = dict(_ours())     # (a batched derivative differentiated again: its rules call
    ours.update({name: sub for sub, name in callees.items()})       # batching's too)
    # hygiene (transformer/hygiene.py): the user's names back, ours renamed where they clashed
    # (alike in the canonical lines, whose names include the folded text's)
    if canonical is not None and canonical != lines:
        canonical, canonical_origins = _text(canonical, f"def {gen_name}({args_src}):", fn,
                                             mode)
        canonical, moved = hygiene.swap(canonical, fn_ir.renamed)
        source, _ = hygiene.swap(source, fn_ir.renamed, moved)
    else:
        canonical = None
        source, moved = hygiene.swap(source, fn_ir.renamed)
    if mode not in forward.MODES and mode != "vmap":    # (a reverse pass: `y` for the only
        source = versions_dropped(source, {   # version left, `y_1`, of a user's variable)
            v for v, u in getattr(fn_ir, "versions", {}).items() if v.startswith(u + "_")})
    for name, new in moved.items():
        ours[new] = ours.pop(name) if name in ours else reserved[name]
        ours.pop(name, None)
    # callees that cannot run as written: their names bound to their runnable forms
    placeholders = {p: n for n, p in fn_ir.renamed.items()}
    ours.update({placeholders.get(n, n): form
                 for n, form in getattr(fn_ir, "bindings", {}).items()})
    # builtins our code calls (len, range, ...) are ours too: a module global named like one
    # must not change them; the user's own reads of builtins stay the user's
    back = {p: n for n, p in fn_ir.renamed.items()}
    user_free = {back.get(n, n) for n in fn_ir.free_names}       # (names after the swap)
    values = vars(builtins)
    ours.update({n: values[n] for n in _public_builtins()
                 if n not in user_free and n not in ours})
    free = {**{k: v for k, v in closure.items() if k not in ours}, **ours}
    # the user's closure variables: the user's own cells, read when the derivative runs
    cells = {k: c for k, c in _cells(fn).items() if k in closure and k not in ours}
    gen = load_generated(source, gen_name, fn.__globals__, free, origins, cells)
    if canonical is not None:       # a transform of it reads every value under its name
        gen.__secant_source__ = _canonical_source(gen, canonical, canonical_origins, free)
    gen.__secant_out_batched__ = flags
    gen.__secant_out_active__ = getattr(fn_ir, "outputs_active", None)
    if mode == "vmap":
        gen.__secant_out_leaves__ = out_leaves
    if size_param is not None:
        gen.__secant_size_param__ = moved.get(size_param, size_param)
    gen.__secant_inline__ = inline
    if mode in ("vjp", "vjp_out"):      # (a caller's seed reads it: ad/reverse.py)
        gen.__secant_output_dtype__ = getattr(fn_ir, "output_dtype", None)
    # what it differentiates or batches, by the user's names (codegen/program.py prints by them)
    gen.__secant_wrt_names__ = tuple(back.get(p, p) for p in wrt_names)
    gen.__secant_effects__ = mode == "replay" and getattr(fn_ir, "effects", False)
    gen.__secant_state_params__ = tuple(state)
    if mode == "vmap" and _marked(fn, "__secant_constant__"):
        gen.__secant_constant__ = True      # a shape helper's batched form: shapes, no derivative
    if mode == "vmap" and getattr(fn, "__secant_batched_only__", False):
        gen.__secant_batched_only__ = True  # (minimize's batched form: no derivative either)
    if mode in ("vjp",) + _GIVEN_OUT:    # an output and its cotangent may be pytrees
        gen.__secant_tree_params__ = {out_bar} | ({given} if given else set())
    # the parameters it reads as arrays (a caller adds their cotangents with +)
    arrays = getattr(fn_ir, "arrays", None)     # (an empty set: it reads no array as one)
    if arrays is None:
        arrays = reverse.arrays_read(fn_ir.body)
    gen.__secant_array_params__ = frozenset(i for i, p in enumerate(every) if p in arrays)
    if mode in ("vjp",) + _GIVEN_OUT:    # what a loop's reverse pass need not save for it
        read = set().union(*(ln.uses for ln in lines))      # (or a checkpoint put behind a barrier)
        gen.__secant_unread__ = frozenset(i for i, p in enumerate(every) if p not in read) | (
            frozenset() if given in read else frozenset({"out"}))
    # each guard once: a callee's guards are its own callees' too, and a deep composition
    # reaches the same ones along many paths (hessian(jvp(hessian(f))): 116,352 for 319)
    gen.__secant_guards__ = tuple({id(g): g for g in (fn_ir.guard, *(
        g for sub in (fn, *callees) for g in getattr(sub, "__secant_guards__", ())))}.values())
    queries = getattr(fn_ir, "plain_queries", ())       # (vmap: x.shape as the array's)
    if getattr(fn_ir, "plain_attributes", None) or queries:  # m.p read as a field: generated
        gen.__secant_guards__ += (PlainReads(   # again if p becomes a getter
            fn_ir.plain_attributes, *getattr(fn_ir, "plain_reach", ()), queries=queries),)
    if not staged and (not self_calls and None not in derived or _staged_as_written(fn)):
        # (a recursive helper staged as written, grads_as: its calls of itself are this code)
        gen.__secant_staging__ = (fn, tuple(d for d in derived if d is not None))
    if self_calls:      # a recursive derivative names itself: a transform of it reads that
        gen.__secant_source__.closure[gen_name] = gen
        gen.__secant_recursive__ = True
    operators.carry_objects(fn, gen, every)     # (a transform of it: its parameters that hold
    return gen                                  # user objects call grad(f)(p, q)'s objects form)


# a helper's vjp whose canonical body has at most this many statements, called at most
# INLINE_CALLS times by its caller, is written in place in the caller's derivative (ad/reverse.py
# reverse_call): the chain rule where the call is, as a person writes it
INLINE_STATEMENTS = 6
INLINE_CALLS = 2


class InlineForm:
    """A small vjp's canonical lines, which a caller writes in place of a call of it: its
    parameters (output cotangent, given output, the function's own), the statements before its
    return, the returned expressions, and its temporaries (names of no user value)."""

    def __init__(self, params, lines, returned, temporaries):
        self.params, self.lines = params, lines
        self.returned, self.temporaries = returned, temporaries


def _inline_form(fn, fn_ir, mode, canonical, out_bar, given, every, callees, derived,
                 self_calls):
    """The InlineForm of a vjp just built, or None where it is not written in place: a body
    of straight-line statements (no block, loop stack or nested def) reading only its
    parameters, its own values and secant's helpers, a plain signature, no name of the
    user's changed by hygiene, no callee of its own left called."""
    if canonical is None or fn_ir.renamed or getattr(fn_ir, "bindings", None) or \
            self_calls or None in derived or getattr(fn, "__secant_traced__", None) is not None:
        return None
    try:
        sig = signature_of(fn, follow_wrapped=False)
    except (TypeError, ValueError):
        return None
    if any(p.kind is not p.POSITIONAL_OR_KEYWORD or p.default is not p.empty
           for p in sig.parameters.values()) or list(sig.parameters) != list(every):
        return None
    body = [ln for ln in canonical if ln.kind not in ("comment", "blank")]
    if not body or any(ln.kind != "stmt" or ln.indent != 1 for ln in body):
        return None
    *stmts, ret = body
    if len(stmts) > INLINE_STATEMENTS or not ret.code.startswith("return "):
        return None
    try:
        value = ast.parse(ret.code).body[0].value
        trees = [ast.parse(ln.code).body[0] for ln in stmts]
    except SyntaxError:
        return None
    if not all(isinstance(t, ast.Assign) and all(
            isinstance(x, ast.Name) or isinstance(x, ast.Tuple) and all(
                isinstance(e, ast.Name) for e in x.elts) for x in t.targets) for t in trees):
        return None
    returned = value.elts if isinstance(value, ast.Tuple) else [value]
    params = [out_bar] + ([given] if given else []) + list(every)
    ours = set(helpers.by_name()) | {"snp", "lax"}
    bound = set(params).union(*(ln.defines for ln in stmts))
    free = set().union(*(ln.uses for ln in body)) - bound
    if not free <= ours or any(ln.defines & (ours | set(params)) for ln in stmts) or \
            not all(ln.code.isascii() for ln in body) or \
            any(name in ours for name in params):
        return None
    if any(name in callees.values() for ln in body for name in ln.uses):
        return None
    temporaries = set(getattr(fn_ir, "temporaries", ())) - set(params)
    return InlineForm(params, stmts, [ast.unparse(r) for r in returned], temporaries)


def _text(lines, header, fn, mode):
    """(source, origins: its line -> the user's (file, line)) of a generated function."""
    text = [header]
    if getattr(fn, "__secant_traced__", None) is not None:     # say so, first
        text.append(fn.__secant_source__.lines[1])
    origins = {}
    for ln in lines:
        rows = ln.code.split("\n")
        depth, noted = 0, None      # (the note after the row that closes the call's statement,
        above = []                  # or above its first row where it would pass 100 columns)
        for r, code in enumerate(rows):
            if noted is None and "dynamic_call_" in code and _DYNAMIC.search(code) and \
                    "#" not in code:    # (the word first: a search of every row, issue 19)
                noted, depth = r, 0
            if noted is not None:
                depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
                if depth <= 0:
                    note = _DYNAMIC_NOTE[mode if mode in _DYNAMIC_NOTE else "vjp"]
                    if len("    " * ln.indent + code + note) <= 100:
                        rows[r] += note
                    else:
                        above.append((noted, note.strip()))
                    noted = None
        for r, note in reversed(above):
            rows.insert(r, note)
        for code in rows:
            text.append("    " * ln.indent + code if code else "")
            if ln.origin is not None:
                origins[len(text)] = (ln.origin.filename, ln.origin.line)
    return "\n".join(text) + "\n", origins


def _canonical_source(gen, source, origins, free):
    """What a transform of the derivative `gen` reads: its lines before folding (ad/fold.py),
    every value under its canonical name, so that the next order's names come from the user's
    as the first order's do (`om_sq_bar`, never a call's `unbroadcast_out`). The text is
    registered as a file of its own (errors and comments of the next order quote its lines).
    Its free names are gen's and those of `free` it reads besides (a helper the folded text
    no longer calls: ad/algebra.py reads `unreduce(t, a) * u` as `t * u`)."""
    filename = loader.register(f"{gen.__name__} (unfolded)", source, origins)

    def node():                         # (parsed only if a later transform reads it)
        return gast_parse.parse(source).body[0]
    closure = gen.__secant_source__.closure
    extra = {k: free[k] for k in set(re.findall(r"\w+", source)) - closure.keys() if k in free}
    return FunctionSource(gen, node, filename, 1, source.splitlines(), gen.__globals__,
                          {**closure, **extra} if extra else closure)


# --- callees known only at run time ---------------------------------------------------------
# The canonical form writes `fn(x)` with fn known only when the code runs as
# `dynamic_call(fn, x)` (transformer/callees.py); its derivative (vjp, jvp) or batched form is a
# dispatcher that finds fn's own generated function on first use (generate caches it by the
# identity of fn's function) and calls it. One rule per transform, the same shape each.
_DYNAMIC = re.compile(r"\bdynamic_call_(vjp|jvp|vmap)\(")
_DYNAMIC_NOTE = {m: f"  # callee known only at run time: its {what} is made on first use"
                 for m, what in (("vjp", "vjp"), ("jvp", "jvp"), ("vmap", "batched form"))}


def _generate_dispatch(caller, wrt, mode, staged, batch):
    """The derivative or batched form of `dynamic_call(fn, x1, ..., xn, *, k)` (or of
    `call_starred(fn, x1, ..., xn, rest, kw, *, k)`, transformer/callees.py): a dispatcher that
    calls what _dispatch finds for fn and the call's shape (n positional arguments and the
    keywords; a starred call spells them out when it runs: n + len(rest), k and kw's keys).
    rest and kw hold no differentiated or batched values (the normaliser refuses a call where
    they do)."""
    n, keywords = caller.__secant_dispatch__
    star, double_star = getattr(caller, "__secant_starred__", None) or (0, 0)
    starred = star or double_star
    params = list(inspect.signature(caller).parameters)
    if starred and any(params[i] in ("rest", "kw") for i in wrt):
        return _generate_spelled_dispatch(caller, wrt, mode, staged, batch)
    # each active operand: its position in the call, or its keyword; "self" when the callee
    # itself holds differentiated or batched values (a model object: `model(x)`)
    active = tuple("self" if i == 0 else i - 1 if i <= n else params[i] for i in wrt)
    positional = params[:1 + n + star + double_star]
    kw_sig = ", *, " + ", ".join(keywords) if keywords else ""
    call_args = (["fn"] if 0 in wrt else []) + params[1:1 + n]   # (fn: its __call__'s self)
    args = call_args + ["*rest"] * star + [f"{k}={k}" for k in keywords] + ["**kw"] * double_star
    # the call's shape: a callee with *args / **kwargs is generated for it (callees.specialise);
    # then the positions (in call_args) of operands that may be user objects with operators
    shape = (len(call_args), tuple(keywords))
    objects = getattr(caller, "__secant_objects__", ())
    if objects and not starred:
        shape += (tuple(i + len(call_args) - n for i in objects),)
    shape_src = f"({len(call_args)}{' + len(rest)' * star}, {tuple(keywords)!r}" \
        f"{' + tuple(kw)' * double_star})" if starred else repr(shape)
    note = ("    # fn and its arguments' number and names are known only at run time: its {} "
            "is generated on first use of each\n") if starred else \
        "    # fn is known only at run time: its {} is generated on first use\n"
    dots = [f"{params[i]}_dot" for i in wrt]
    if mode == "vjp":
        call = f"dispatch(fn, {active!r}, 'vjp', {staged}, shape={shape_src})" \
            f"({', '.join(['out_bar'] + args)})"
    elif mode == "jvp":
        # (a starred call's by name, after *rest: _jvp_call's t0, t1, ...; a further transform
        # reads *rest last)
        tangents = [f"t{j}={d}" for j, d in enumerate(dots)] if starred else dots
        spread = len(call_args) + star
        call = f"dispatch(fn, {active!r}, 'jvp', {staged}, None, {shape_src})" \
            f"({', '.join(args[:spread] + tangents + args[spread:])})"
    elif mode == "vmap" and batch.out_axes in (0, "free", "leaves"):
        # the caller's batch size, for a batched form whose batched arguments may hold no
        # array (the cotangent of a function a module holds, batched by jacrev: vectorize.build)
        size = Names(set(params) | set(keywords)).fresh("batch_size")
        kw_sig = (kw_sig or ", *") + f", {size}=None"
        call = f"dispatch(fn, {active!r}, 'vmap', {staged}, {batch.axis_name!r}, " \
            f"shape={shape_src}, size={size})({', '.join(args)})"
    else:
        raise SecantTypeError(f"{mode} of a call of a function known only at run time is not "
                              f"supported yet{where()}")
    name, source = _dispatcher_source(mode, positional, dots, kw_sig, note, call)
    gen = _internal(load_generated(source, name, {}, {"dispatch": _dispatch}))
    gen.__secant_out_batched__ = True
    if mode == "vmap":
        gen.__secant_size_param__ = size
    if starred:
        return gen
    if mode == "vmap":      # grad of it: the vjp of the batched form it finds
        gen.__secant_batched_dispatch__ = (active, staged, batch.axis_name, shape)
    if mode in ("vjp", "jvp"):      # vmap of it: the batched form of what it dispatches to
        passed = (["out_bar"] if mode == "vjp" else []) + call_args + \
            (dots if mode == "jvp" else [])
        dispatch_args = (mode, active, staged) + (
            (None, shape) if mode == "jvp" else (None, None, shape))
        gen.__secant_dispatched__ = (source, tuple(passed), tuple(keywords), dispatch_args)
    return gen


def _internal(dispatcher):
    """A dispatcher (`dynamic_call_vjp`: generates its callee's derivative when it runs) whose
    frames are secant's: an error raised while it generates names the user's line that called
    it (the generated code of the user's function maps back to it), not the dispatcher's."""
    _errors.register_internal_file(dispatcher.__code__.co_filename)
    return dispatcher


def _dispatcher_source(mode, params, dots, kw_sig, note, call):
    """(name, text) of a dispatcher `def dynamic_call_<mode>(...): return <call>`: a vjp takes
    the cotangent first, a jvp the tangents `dots` after `params`; `note` says what is made
    on first use."""
    name = f"dynamic_call_{mode}"
    head = (["out_bar"] if mode == "vjp" else []) + list(params) + \
        (list(dots) if mode == "jvp" else [])
    what = "batched form" if mode == "vmap" else mode
    return name, (f"def {name}({', '.join(head)}{kw_sig}):\n" + note.format(what)
                  + f"    return {call}\n")


def _generate_spelled_dispatch(caller, wrt, mode, staged, batch):
    """The derivative or batched form of `call_starred(fn, x1, ..., xn, rest, kw, *, k)` whose
    rest or kw holds differentiated or batched values (`Registry[name](*params)`): a dispatcher
    that, when it runs (rest's length and kw's keys known), transforms _spelled_call's function
    for that shape, which unpacks them into a call transformed as any other."""
    if mode == "vmap" and batch.out_axes not in (0, "free", "leaves"):
        raise SecantTypeError(f"vmap with out_axes={batch.out_axes!r} of a call of a function "
                              f"known only at run time is not supported yet{where()}")
    n, keywords = caller.__secant_dispatch__
    star, double_star = caller.__secant_starred__
    params = list(inspect.signature(caller).parameters)
    positional = params[:1 + n + star + double_star]
    kw_sig = ", *, " + ", ".join(keywords) if keywords else ""
    shape = f"spelled({n}, {'len(rest)' if star else None}, {'tuple(kw)' if double_star else None}," \
        f" {tuple(keywords)!r})"
    args = positional + [f"{k}={k}" for k in keywords]
    dots = [f"{params[i]}_dot" for i in wrt]
    note = "    # fn and its arguments' number and names are known only at run time: its {} " \
        "is generated on first use of each\n"
    wrt = tuple(wrt)
    if mode == "vjp":
        call = f"dispatch({shape}, {wrt!r}, 'vjp', {staged})({', '.join(['out_bar'] + args)})"
    elif mode == "jvp":
        call = f"dispatch({shape}, {wrt!r}, 'jvp', {staged}, None, ({len(positional)}, " \
            f"{tuple(keywords)!r}))({', '.join(positional + dots + args[len(positional):])})"
    else:
        call = f"dispatch({shape}, {wrt!r}, 'vmap', {staged}, {batch.axis_name!r})" \
            f"({', '.join(args)})"
    name, source = _dispatcher_source(mode, positional, dots, kw_sig, note, call)
    gen = _internal(load_generated(source, name, {}, {"dispatch": _dispatch,
                                                      "spelled": _spelled_call}))
    gen.__secant_out_batched__ = True
    return gen


def _spelled_call(n, m, kw_keys, keywords):
    """`def call_starred_2(fn, x1, rest, kw, *, k): rest_0, rest_1 = rest; kw_a = kw['a'];
    return fn(x1, rest_0, rest_1, k=k, a=kw_a)`: call_starred (transformer/callees.py) for a
    rest of m items and a kw of keys kw_keys, as generated code the transforms read (rest and
    kw containers unpacked, so their cotangents and batch axes are theirs)."""
    return once.build(_spelled_calls, (n, m, kw_keys, keywords),
                      lambda: _make_spelled_call(n, m, kw_keys, keywords))


def _make_spelled_call(n, m, kw_keys, keywords):
    if any(not isinstance(k, str) or not k.isidentifier() or keyword.iskeyword(k)
           for k in kw_keys or ()):
        raise SecantTypeError(f"secant spells **kwargs out by their keys, which must be names; "
                              f"got {kw_keys!r}{where()}")
    xs = [f"x{i + 1}" for i in range(n)]
    items = [f"rest_{j}" for j in range(m or 0)]
    params = ["fn"] + xs + (["rest"] if m is not None else []) + (["kw"] if kw_keys is not None
                                                                   else [])
    sig = ", ".join(params + (["*"] + list(keywords) if keywords else []))
    body = []
    if m:
        body.append(f"    {', '.join(items)}{',' if m == 1 else ''} = rest\n")
    body += [f"    kw_{k} = kw[{k!r}]\n" for k in kw_keys or ()]
    call = xs + items + [f"{k}={k}" for k in keywords] + [f"{k}=kw_{k}" for k in kw_keys or ()]
    name = f"call_starred_{m or 0}" + (f"_{len(kw_keys)}" if kw_keys else "")
    source = f"def {name}({sig}):\n" + "".join(body) + f"    return fn({', '.join(call)})\n"
    made = load_generated(source, name, {}, {})
    _errors.register_internal_file(made.__code__.co_filename)
    return made


_spelled_calls = {}


def _generate_batched_dispatch(disp, wrt, staged, batch):
    """vmap of a derivative dispatcher (`dynamic_call_vjp`: vmap(grad(f)) where f calls a
    function known only at run time): a dispatcher that, on first use, batches the derivative
    the original one finds. A callee holding batched values it does not differentiate
    (`Layer(w)(x)`, grad in x, vmap over w) is differentiated as `self` too (vjp), its
    cotangent dropped."""
    source, passed, keywords, dispatch_args = disp.__secant_dispatched__
    if batch.out_axes not in (0, "free", "leaves"):
        raise SecantTypeError(f"vmap with out_axes={batch.out_axes!r} of a derivative of a call "
                              f"of a function known only at run time is not supported yet"
                              f"{where()}")
    params = list(inspect.signature(disp).parameters)
    batched = tuple(params[i] for i in wrt)
    mode, active = dispatch_args[0], dispatch_args[1]
    as_self = "fn" in batched and "fn" not in passed
    if as_self:
        if mode != "vjp":
            raise SecantTypeError("secant cannot batch the jvp of a call of a function known "
                                  "only at run time that holds batched values it does not "
                                  "differentiate; batch the function's values as arguments"
                                  f"{where()}")
        passed = passed[:1] + ("fn",) + passed[1:]
        # (the call's shape counts fn too once it is an operand, as _generate_dispatch's does)
        n, keywords_ = dispatch_args[-1]
        dispatch_args = (mode, ("self",) + tuple(active)) + tuple(dispatch_args[2:-1]) + (
            (n + 1, keywords_),)
    header = source.split("\n", 1)[0]
    name = disp.__name__ + "_vmap"
    args = ", ".join(list(passed) + [f"{k}={k}" for k in keywords])
    # the caller's batch size, for a derivative whose batched arguments may hold no array
    # (the cotangent of a function a module holds: vectorize.build)
    size = Names(set(params) | set(keywords)).fresh("batch_size")
    options = ", ".join(f"{k}={v!r}" for k, v in (
        ("batched", batched), ("passed", passed), ("keywords", keywords),
        ("axis_name", batch.axis_name), ("drop_self", as_self))) + f", size={size}"
    inner = header[header.index("(") + 1:header.rindex(")")]
    text = (f"def {name}({_with_size_param(inner, size)}):\n"
            + "    # fn is known only at run time: its batched derivative is generated on first "
              "use\n"
            + f"    return batch_dispatch(fn, {', '.join(map(repr, dispatch_args))}, "
              f"{options})({args})\n")
    gen = _internal(load_generated(text, name, {}, {"batch_dispatch": _batch_dispatched}))
    gen.__secant_out_batched__ = True
    gen.__secant_size_param__ = size
    return gen


def _batch_dispatched(fn, mode, active, staged, *dispatch_args, batched, passed, keywords,
                      axis_name, drop_self, size=None):
    """The batched form of the derivative _dispatch finds for fn, its arguments batched where
    the dispatcher's parameters `batched` are (`passed`: the parameters it passes by position,
    `keywords`: by name); with drop_self, without the cotangent of fn itself; given the
    caller's batch `size` where it takes one (vectorize.build)."""
    from secant.batch import BatchOptions
    derivative, bound = _dispatch_target(fn, active, mode, staged, *dispatch_args)
    if bound:           # (the derivative of fn's class's __call__: fn passed as self)
        passed = passed[:1] + ("fn",) + passed[1:]
    params = _parameter_names(derivative)
    positions = tuple(passed.index(p) if p in passed else params.index(p) for p in batched)
    gen = generate(derivative, positions, "vmap", staged=staged,
                   batch=BatchOptions((), 0, axis_name, None))
    gen = _with_size(gen, size)
    if bound:
        gen = _bind_object(gen, fn, mode)
    if not drop_self:
        return gen
    return _without_self_cotangent(gen, len(active) == 2)


_batch_dispatched.__secant_dispatcher__ = True  # batch_dispatch(fn, ...)(x): what it returns is
                                                # generated code, which a further transform reads
                                                # as any function known at run time


def _generate_batched_dispatch_derivative(disp, wrt, mode, staged):
    """Reverse or forward mode of a batched dispatcher (`dynamic_call_vmap`: grad or jvp of a
    function calling vmap(model)(x), model known only at run time): a dispatcher that, on first
    use, generates the vjp (jvp) of the batched form the original one finds (the model
    differentiated as self)."""
    size = disp.__secant_size_param__           # (its caller's batch size: passed on)
    keywords = [p.name for p in inspect.signature(disp).parameters.values()
                if p.kind == p.KEYWORD_ONLY and p.name != size]
    return _derivative_dispatcher(
        disp, wrt, mode, keywords, "out_bar", "batched form",
        lambda wrt_names, positional: (
            f"batched_derivative(fn, {', '.join(map(repr, disp.__secant_batched_dispatch__))}, "
            f"{wrt_names!r}, {tuple(positional)!r}, {tuple(keywords)!r}, {mode!r}, "
            f"size={size})"),
        {"batched_derivative": _batched_derivative}, size)


def _generate_batched_dispatch_vmap(disp, wrt, staged, batch):
    """vmap, in its callee fn among others, of a batched dispatcher (`dynamic_call_vmap`:
    vmap of a function calling vmap(model)(x), the model batched by the outer vmap too, as
    equinox's loss under vmap): a dispatcher that, on first use, batches over the outer axis
    the batched form the original one finds (the model as its self)."""
    if batch.out_axes not in (0, "free", "leaves"):
        raise SecantTypeError(f"vmap with out_axes={batch.out_axes!r} of vmap(fn) of a function "
                              f"known only at run time is not supported yet{where()}")
    size = disp.__secant_size_param__           # (its caller's inner batch size: passed on)
    keywords = [p.name for p in inspect.signature(disp).parameters.values()
                if p.kind == p.KEYWORD_ONLY and p.name != size]
    gen = _derivative_dispatcher(
        disp, wrt, "vmap", keywords, None, "batched form",
        lambda wrt_names, positional: (
            f"batched_derivative(fn, {', '.join(map(repr, disp.__secant_batched_dispatch__))}, "
            f"{wrt_names!r}, {tuple(positional)!r}, {tuple(keywords)!r}, 'vmap', "
            f"size={size}, outer_axis={batch.axis_name!r})"),
        {"batched_derivative": _batched_derivative}, size)
    gen.__secant_out_batched__ = True
    return gen


def _derivative_dispatcher(disp, wrt, mode, keywords, lead, what, call, helpers, size=None):
    """The generated function `{disp}_{mode}` taking the dispatcher's parameters (after
    `lead`, the cotangent, in reverse mode; with their tangents in forward mode; `size`, the
    caller's batch size, last) that calls what `call(wrt_names, positional)` makes on first
    use with them."""
    params = [p for p in inspect.signature(disp).parameters if p != size]
    wrt_names = tuple(params[i] for i in wrt)
    positional = [p for p in params if p not in keywords]
    kw_sig = ", *, " + ", ".join(keywords) if keywords else ""
    if size is not None:
        kw_sig = (kw_sig or ", *") + f", {size}=None"
    dots = []
    for w in (wrt_names if mode == "jvp" else ()):     # (a jvp's own dots are parameters:
        dot = f"{w}_dot"                                # fn_dot's tangent beside fn's)
        while dot in params or dot in dots:
            dot += "_"
        dots.append(dot)
    lead = [lead] if mode == "vjp" else []
    args = ", ".join(lead + positional + dots + [f"{k}={k}" for k in keywords])
    name = f"{disp.__name__}_{mode}"
    text = (f"def {name}({', '.join(lead + positional + dots)}{kw_sig}):\n"
            f"    # fn is known only at run time: the {mode} of its {what} is generated "
            "on first use\n"
            f"    return {call(wrt_names, positional)}({args})\n")
    return _internal(load_generated(text, name, {}, helpers))


def _batched_derivative(fn, active, staged, axis_name, shape, wrt, positional, keywords, mode,
                        size=None, outer_axis=None):
    """The vjp (jvp), in the dispatcher's parameters `wrt` (fn: the callee itself, as self), of
    the batched form _dispatch finds for the callee fn, as generated code called as the
    dispatcher's derivative ((out_bar, fn, x1, ...) / (fn, x1, ..., tangents)): a further
    transform (hessian of vmap(model)) reads it as any function known at run time. Given the
    caller's batch `size` where the batched form takes one."""
    held = "fn" in wrt and "self" not in active and _is_held_function(fn)
    method = "fn" in wrt and "self" not in active and _is_object_method(fn)
    if method:          # vmap(model.energy)(x), model batched again: fn.__self__ read as a field
        batched, bound = _held_target(fn, active, "vmap", staged, axis_name, shape,
                                      _method_caller), False
    else:
        batched, bound = _dispatch_target(fn, active, "vmap", staged, axis_name, shape=shape,
                                          held=held)
    through_class = bound or held or method or "self" in active       # (fn passed as self)
    if "fn" in wrt and not through_class:
        raise SecantTypeError(f"secant differentiates a function known only at run time "
                              f"in itself only when it is an object with a __call__; "
                              f"{fn!r} is not{where()}")
    first = 0 if through_class else 1           # x1 is the callee's first (or second)
    positions = tuple(0 if w == "fn" else positional.index(w) - first
                      if w in positional else _parameter_names(batched).index(w)
                      for w in wrt)
    if mode == "vmap":      # (batched again, over an enclosing vmap's axis)
        from secant.batch import BatchOptions
        gen = generate(batched, positions, mode, staged=staged,
                       batch=BatchOptions((), 0, outer_axis, None))
    else:
        gen = generate(batched, positions, mode, staged=staged)
    takes_size = getattr(batched, "__secant_size_param__", None)    # (its derivative's too)
    sized = size is not None and takes_size in _parameter_names(gen)
    if mode == "jvp":
        gen = _jvp_call(gen, len(positions), len(positional) - first,
                        tuple(keywords) + ((takes_size,) if sized else ()))
    if not through_class:
        gen = _without_callee(gen, mode)
    return _with_size(gen, size, takes_size) if sized else gen


_batched_derivative.__secant_dispatcher__ = True    # batched_derivative(fn, ...)(out_bar, fn,
                                                    # x): generated code, read by a further
                                                    # transform as any function known at run time


def _generate_dispatch_derivative(disp, wrt, mode, staged):
    """Reverse or forward mode, in its callee fn among others, of a derivative dispatcher
    (`dynamic_call_vjp(out_bar, fn, x)`: grad of a function whose inner grad calls a function
    held by a differentiated object, flax's `state.apply_fn` of a TrainState): a dispatcher
    that, on first use, generates the derivative of the one the original finds, that one
    taking fn as its first argument (_held_caller) or as its self (an object's __call__)."""
    source, passed, keywords, dispatch_args = disp.__secant_dispatched__
    return _derivative_dispatcher(
        disp, wrt, mode, keywords, "out_bar_", "derivative",
        lambda wrt_names, positional: (
            f"dispatched_derivative(fn, {dispatch_args!r}, {wrt_names!r}, "
            f"{tuple(positional)!r}, {tuple(keywords)!r}, {mode!r}, {staged!r})"),
        {"dispatched_derivative": _dispatched_derivative})


def _dispatched_derivative(fn, dispatch_args, wrt, positional, keywords, mode, staged):
    """The vjp (jvp), in the dispatcher's parameters `wrt` (fn among them), of the derivative
    _dispatch finds for fn, as generated code taking the dispatcher's own arguments."""
    first_mode, active = dispatch_args[0], dispatch_args[1]
    held = first_mode == "vjp" and "self" not in active and _is_held_function(fn)
    if held:
        first, bound = _dispatch_target(fn, active, "vjp", dispatch_args[2],
                                        shape=dispatch_args[-1], held=True)
    else:
        first, bound = _dispatch_target(fn, active, first_mode, *dispatch_args[2:])
    if not (held or bound or "self" in active):
        raise SecantTypeError(f"secant differentiates a function known only at run time "
                              f"in itself only when it is an object with a __call__ or a "
                              f"function holding no arrays; {fn!r} is neither{where()}")
    names = _parameter_names(first)
    positions = tuple(positional.index(w) if w in positional else names.index(w) for w in wrt)
    gen = generate(first, positions, mode, staged=staged)
    if mode == "jvp":
        gen = _jvp_call(gen, len(positions), len(positional), keywords)
    return gen


_dispatched_derivative.__secant_dispatcher__ = True    # dispatched_derivative(fn, ...)(...):
                                                        # generated code, read by a further
                                                        # transform as any function known at
                                                        # run time


def _without_callee(gen, mode):
    """`def g_fn(out_bar, fn, *args): return g(out_bar, *args)` (jvp: without out_bar), gen's
    parameters spelled out: generated code that takes the callee fn it does not read."""
    def make():
        params = list(inspect.signature(gen).parameters.values())
        k = 1 if mode == "vjp" else 0
        callee = "fn_"          # (apart from gen's own: a derivative of one may take fn_)
        while callee in {p.name for p in params}:
            callee += "_"
        sig = inspect.Signature(params[:k] + [inspect.Parameter(
            callee, inspect.Parameter.POSITIONAL_OR_KEYWORD)] + params[k:])
        args = [f"*{p.name}" if p.kind == p.VAR_POSITIONAL else f"**{p.name}"
                if p.kind == p.VAR_KEYWORD else f"{p.name}={p.name}"
                if p.kind == p.KEYWORD_ONLY else p.name for p in params]
        name = f"{gen.__name__}_fn"
        return load_generated(f"def {name}{sig}:\n    return {gen.__name__}({', '.join(args)})"
                              f"\n", name, {}, {gen.__name__: gen})
    return once.build(_without_callees, (gen, mode), make)


_without_callees = FunctionCache("without_callees")
_bound_sources = weakref.WeakKeyDictionary()       # _bind_object function -> _bound_source's
_parameter_names_of = weakref.WeakKeyDictionary()     # function -> its parameter names


def _parameter_names(fn):
    """fn's parameter names, read once (a dispatcher asks at every call)."""
    try:
        names = _parameter_names_of.get(fn)
    except TypeError:       # (not weakly referable)
        return list(inspect.signature(fn).parameters)
    if names is None:
        names = _parameter_names_of[fn] = list(inspect.signature(fn).parameters)
    return names


def _without_self_cotangent(gen, single):
    def batched_vjp(*args, **kwargs):
        out = gen(*args, **kwargs)
        return out[1] if single else tuple(out[1:])
    return batched_vjp


def _dispatch(fn, active, mode, staged, axis_name=None, call=None, shape=None, size=None):
    """The generated `mode` function of fn (a function, bound method, partial, callable object
    or library op), active in `active` (positions of the call, or keywords); for "jvp", `call`
    (n positional arguments, keywords) shapes it to take the tangents after the positional
    arguments (_jvp_call); for "vmap", given the caller's batch `size` where it takes one."""
    if mode == "vmap" and getattr(fn, "__secant_per_call__", None) is not None:
        return _per_example_trace(fn.__secant_per_call__, active, staged, axis_name, call,
                                  shape, size)
    gen, bound = _dispatch_target(fn, active, mode, staged, axis_name, call, shape)
    gen = _with_size(gen, size)
    return _bind_object(gen, fn, mode) if bound else gen


def _one_example(value, axis):
    """The first example of a batched array argument (its batch axis `axis`); anything else
    itself."""
    ndim = getattr(value, "ndim", None)
    if not isinstance(ndim, int) or not isinstance(axis, int) or not -ndim <= axis < ndim:
        return value
    return value[(slice(None),) * (axis % ndim) + (0,)]


def _per_example_trace(per_call, active, staged, axis_name, call, shape, size):
    """The batched form of a function traced for a call's arguments (_traced_for_call) whose
    trace read an argument's length (`for row in x` unrolled): traced again, when it runs,
    with one example of each argument its batched caller passes batched (axis 0), not with the
    batch itself (whose length is the batch size)."""
    fn, how, arguments = per_call

    def batched(*args, **kwargs):
        ids = {id(args[a]) for a in active if isinstance(a, int) and a < len(args)} | {
            id(kwargs[a]) for a in active if isinstance(a, str) and a in kwargs}
        one = {k: _one_example(v, 0) if id(v) in ids else v for k, v in arguments.items()}
        gen = _traced_for_call(fn, how, **one)
        gen = getattr(gen, "__secant_generated__", gen)
        return _dispatch(gen, active, "vmap", staged, axis_name, call, shape, size)(
            *args, **kwargs)
    return batched


def _with_size(gen, size, takes_size=None):
    """The batched function `gen` given its caller's batch `size` as its parameter
    `takes_size` (by default its __secant_size_param__), where it takes one (vectorize.build:
    its batched arguments may hold no array); gen itself otherwise. The same object for the
    same size: a further transform of it (grad of a dispatcher's batched form) is generated
    once, not at every call."""
    takes_size = takes_size or getattr(gen, "__secant_size_param__", None)
    if takes_size is None or size is None:
        return gen
    key = (gen, takes_size, size)
    try:
        return once.build(_sized_forms, key,
                          lambda: functools.partial(gen, **{takes_size: size}))
    except TypeError:       # (a size that is not hashable)
        return functools.partial(gen, **{takes_size: size})


_sized_forms = FunctionCache("sized_forms")     # (gen, its size parameter, size) -> gen bound


def _bind_object(gen, fn, mode):
    """`gen`, generated for fn's class's __call__, called with fn as its self (after a vjp's
    cotangent); a transform of it (a derivative of the dispatcher) reads _bound_source."""
    if mode == "vjp":
        def bound(out_bar, *args, **kwargs):
            return gen(out_bar, fn, *args, **kwargs)
    else:
        def bound(*args, **kwargs):
            return gen(fn, *args, **kwargs)
    bound.__secant_bound__ = (gen, fn, mode)
    return bound


def _bound_source(bound):
    """A _bind_object function as generated code: `def f_vjp_bound(out_bar, x): return
    f_vjp(out_bar, obj, x)`, the object a free name (a constant of its transforms)."""
    gen, obj, mode = bound.__secant_bound__
    params = list(inspect.signature(gen).parameters.values())
    k = 1 if mode == "vjp" else 0           # (self: after a vjp's cotangent)
    args = [("obj_" if i == k else f"*{p.name}" if p.kind == p.VAR_POSITIONAL else
             f"**{p.name}" if p.kind == p.VAR_KEYWORD else
             f"{p.name}={p.name}" if p.kind == p.KEYWORD_ONLY else p.name)
            for i, p in enumerate(params)]
    sig = inspect.Signature([p for i, p in enumerate(params) if i != k])
    # (gen given its caller's batch size, _with_size: a partial, its size a default here)
    called = gen.func.__name__ if isinstance(gen, functools.partial) else gen.__name__
    name = f"{called}_bound"
    return load_generated(f"def {name}{sig}:\n    return {called}({', '.join(args)})\n",
                          name, {}, {called: gen, "obj_": obj})


def _dispatch_target(fn, active, mode, staged, axis_name=None, call=None, shape=None,
                     held=False):
    """(_dispatch_target_of's, an error of a callee that a whole trace may answer marked so:
    run_time_callee, read by traced_for_call_instead)"""
    was = _answering.__dict__.get("dispatching", False)
    _answering.dispatching = True       # (its callee's derivative answered by its trace too)
    try:
        return _dispatch_target_of(fn, active, mode, staged, axis_name, call, shape, held)
    except SecantError as e:
        _mark_run_time_callee(e, fn)
        raise
    finally:
        _answering.dispatching = was


def _mark_run_time_callee(error, fn):
    if getattr(error, "global_flow", None) is not None \
            and getattr(error, "run_time_callee", None) is None:
        error.run_time_callee = fn


def _dispatch_target_of(fn, active, mode, staged, axis_name=None, call=None, shape=None,
                        held=False):
    """_dispatch's generated function, and whether it is that of fn's class's __call__ for an
    object fn that does not hold active values: generated once for the class, not once per
    object (a model object built at each call), the caller passing fn as self. With `held`
    (or fn a plain function active as `self`), that of _held_caller: fn passed first."""
    if mode == "jvp" and call is not None:
        return _jvp_call(_dispatch(fn, active, mode, staged, shape=call), len(active),
                         *call[:2]), False       # (call[2]: its user objects' positions)
    from secant.transformer.callees import is_user_callable_object
    from secant.transformer.normalize import _is_library, source_of
    if held or "self" in active and _is_held_function(fn):
        return _held_target(fn, active, mode, staged, axis_name, shape), False
    if "self" in active and _is_object_method(fn):
        return _held_target(fn, active, mode, staged, axis_name, shape, _method_caller), False
    target = _unwrap(fn)
    if getattr(target, "__secant_bound__", None):     # a dispatcher's bound derivative,
        wrapper = target                                # transformed itself
        target = once.build(_bound_sources, wrapper, lambda: _bound_source(wrapper))
    bound = mode in ("vjp", "vmap") and "self" not in active and is_user_callable_object(fn) \
        and not inspect.ismethod(fn)
    if "self" in active or bound:       # a callable object (holding active values: fn as an
        target = _unwrap(getattr(type(fn), "__call__", None))   # active `self`)
        active = tuple(0 if a == "self" else a + 1 if isinstance(a, int) else a for a in active)
        if not inspect.isfunction(target) or inspect.ismethod(fn):
            raise SecantTypeError(f"secant transforms a call of a differentiated or batched "
                                  f"object through its class's __call__; {fn!r} has none with "
                                  f"source{where()}")
    target = source_of(target) or target
    custom = target if getattr(target, "__secant_custom__", False) else None
    key = None
    if custom is not None and mode != "vmap":     # a custom function made anew at each call
        try:                                        # (its rules' code seen before): its
            params = custom.params()                # function generated once, bound to its
            key = _custom_code_key(custom, mode, tuple(     # rules each time
                a if isinstance(a, int) else params.index(a) for a in active), staged)
        except (ValueError, SecantError):
            key = None
        key = key if key is None else ("dispatch", bound, shape) + key
        hit = _CUSTOM_TEMPLATES.get(key) if key is not None else None
        if hit is not None and _current(hit[0]):
            return _rebound(hit[0], _custom_roles(hit[1], custom)), bound
    if shape is not None and (target is builtins.max or target is builtins.min):
        target = _extremum_caller(target)       # max(*xs): specialised to xs's count below
    elif shape is not None and not bound and _per_call(target):
        # vectorize(f) or vmap(f) (a ufunc's methods fold their ufunc: ufunc_methods.py):
        # the function calling it for this call's shape, as a known callee's is read
        target = _shaped(target, range(shape[0]), dict.fromkeys(shape[1]))
    elif _is_op_or_callable(target) or custom is not None or _is_user_class(target):
        target = _op_function(target)
    elif not inspect.isfunction(target) or _is_library(target):
        raise SecantTypeError(f"secant has no derivative or batching rule for {fn!r}, called by "
                              f"generated code with a function known only at run time{where()}")
    from secant.transformer.callees import is_variadic, specialise
    if shape is not None and inspect.isfunction(target) and is_variadic(target) \
            and not getattr(target, "__secant_custom__", False):
        n = shape[0] + 1 if bound else shape[0]      # (self passed too)
        target = specialise(target, n, shape[1])    # def apply(params, x, **kwargs): the
                                                    # function for this call's shape
    if shape is not None and len(shape) > 2 and inspect.isfunction(target):
        from secant.transformer.operators import objects_form      # f(Dual(x, 1.0)): d * d
        k = 1 if bound else 0                                       # in f is Dual.__mul__
        target = objects_form(target, [i - k in shape[2] for i in range(
            len(inspect.signature(target).parameters))])
    params = _parameter_names(target)
    try:
        positions = tuple(a if isinstance(a, int) else params.index(a) for a in active)
    except ValueError:
        raise SecantTypeError(f"{fn!r} takes no keyword argument among {active}{where()}") \
            from None
    _check_call_shape(fn, target, positions, shape, bound)
    if mode == "vmap":
        from secant.batch import BatchOptions
        return generate(target, positions, "vmap", staged=staged,
                        batch=BatchOptions((), 0, axis_name, None)), bound
    gen = generate(target, positions, mode, staged=staged)
    if key is not None:
        _CUSTOM_TEMPLATES[key] = (gen, custom)
    return gen, bound


def _check_call_shape(fn, target, positions, shape, bound):
    """A call, by generated code, of a function known only at run time with arguments it does
    not take (`g = getattr(snp, name)`, then `g(x, x)` for snp.cos): Python's TypeError
    message, naming the user's line, as the call itself would raise (not an internal error
    where the transform reads a parameter that is not there)."""
    try:
        sig = signature_of(target)      # (remembered: this runs at every dispatched call)
    except (TypeError, ValueError):
        return
    # checked once per signature and argument structure: the result depends on nothing else
    # (a callee whose code or defaults change has a new signature object: checked again)
    try:
        key = (id(sig), positions, shape, bound)
        if _CALL_SHAPES_CHECKED.get(key) is sig:
            return
    except TypeError:       # (an unhashable part: checked each time)
        key = None
    if shape is not None:
        n = shape[0] + 1 if bound else shape[0]
        try:
            sig.bind(*range(n), **dict.fromkeys(shape[1]))
        except TypeError as e:
            raise SecantTypeError(f"bad arguments for {_run_time_callee_name(fn)}: "
                                  f"{e}{where()}") from None
    P = inspect.Parameter
    if positions and max(positions) >= len(sig.parameters) and not any(
            p.kind is P.VAR_POSITIONAL for p in sig.parameters.values()):
        raise SecantTypeError(f"bad arguments for {_run_time_callee_name(fn)}: it takes "
                              f"{len(sig.parameters)} argument(s), called with more{where()}")
    if key is not None:
        if len(_CALL_SHAPES_CHECKED) > 4096:
            _CALL_SHAPES_CHECKED.clear()
        _CALL_SHAPES_CHECKED[key] = sig     # (held: its id is not reused while remembered)


_CALL_SHAPES_CHECKED = {}       # (id(signature), positions, shape, bound) -> that signature


def _run_time_callee_name(fn):
    return getattr(fn, "__name__", None) or repr(fn)


_dispatch.__secant_dispatcher__ = True     # dispatch(fn, ...)(x): a function known at run time


def _is_held_function(fn):
    """A function read from a differentiated or batched object, holding no arrays of its own
    (a static field: equinox's activation=jnp.tanh, a lambda, a functools.partial of
    constants): the transforms read its call as `_held_caller`'s. Not an object with a
    __call__, a pytree (tree_util.Partial) or a partial of arrays: those may hold active
    values (an error or their class's __call__, never a silent zero)."""
    import numpy as np
    from secant import tree_util
    if isinstance(fn, functools.partial):
        leaves = tree_util.tree_leaves(fn)
        return len(leaves) == 1 and leaves[0] is fn and _is_held_function(fn.func) and not any(
            hasattr(leaf, "shape") for leaf in tree_util.tree_leaves((fn.args, fn.keywords)))
    if inspect.ismethod(fn) and isinstance(fn.__self__, type):
        return True         # (self.scale() of a classmethod: bound to the class, no arrays)
    return isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, np.ufunc)) \
        and not getattr(fn, "__secant_bound__", None)


def _is_object_method(fn):
    """A method bound to an object (`m.predict` of a differentiated or batched model m): its
    class's function with source, the object its `self`."""
    return inspect.ismethod(fn) and inspect.isfunction(fn.__func__) \
        and not isinstance(fn.__self__, type) and not _is_library(fn.__func__)


def _is_library(fn):
    from secant.transformer.normalize import _is_library
    return _is_library(fn)


def _held_target(fn, active, mode, staged, axis_name, shape, caller=None):
    """The `mode` function of _held_caller(fn) (or `caller`'s) for a call of `shape` (n
    positional arguments, fn first among them, and keywords): active in fn ("self") and the
    call's other operands."""
    if shape is None:
        raise SecantTypeError(f"secant cannot transform this call of {fn!r}, a function held by "
                              f"a differentiated or batched value{where()}")
    n = shape[0] - 1 if "self" in active else shape[0]
    target = (caller or _held_caller)(fn, n, tuple(shape[1]))
    params = _parameter_names(target)
    positions = tuple(0 if a == "self" else a + 1 if isinstance(a, int) else params.index(a)
                      for a in active)
    if mode == "vmap":
        from secant.batch import BatchOptions
        return generate(target, positions, "vmap", staged=staged,
                        batch=BatchOptions((), 0, axis_name, None))
    return generate(target, positions, mode, staged=staged)


def _held_caller(fn, n, keywords):
    """`def tanh_held(fn, x1, ..., *, k): return tanh_(x1, ..., k=k)`, tanh_ the function fn:
    its call known when the transforms read it (and fn's own cotangent fn itself, as a value
    with no arrays: ad/helpers.py _zeros_leaf)."""
    def make():
        name = getattr(fn, "__name__", "fn")
        name = name if name.isidentifier() and name != "fn" else "callee"
        params = ["fn"] + [f"x{i + 1}" for i in range(n)]
        sig = ", ".join(params + (["*"] + list(keywords) if keywords else []))
        args = ", ".join(params[1:] + [f"{k}={k}" for k in keywords])
        source = f"def {name}_held({sig}):\n    return {name}_({args})\n"
        hit = load_generated(source, f"{name}_held", {}, {f"{name}_": fn})
        _errors.register_internal_file(hit.__code__.co_filename)
        return fn, hit
    return once.build(_op_functions, ("held", id(fn), n, keywords), make,
                      valid=lambda hit: hit[0] is fn)[1]


def _method_caller(fn, n, keywords):
    """`def predict_method(fn, x1, ..., *, k): return predict_(fn.__self__, x1, ..., k=k)` for
    a bound method fn (predict_ its class's function): the object read from the method as a
    field, so that its cotangent is the method bound to the object's cotangent
    (ad/helpers.py grad_of_fields), its tangent the method of the object's tangent."""
    func = fn.__func__
    def make():
        name = func.__name__ if func.__name__.isidentifier() and func.__name__ != "fn" \
            else "method"
        params = ["fn"] + [f"x{i + 1}" for i in range(n)]
        sig = ", ".join(params + (["*"] + list(keywords) if keywords else []))
        args = ", ".join(["fn.__self__"] + params[1:] + [f"{k}={k}" for k in keywords])
        source = f"def {name}_method({sig}):\n    return {name}_({args})\n"
        hit = load_generated(source, f"{name}_method", {}, {f"{name}_": func})
        _errors.register_internal_file(hit.__code__.co_filename)
        return func, hit
    return once.build(_op_functions, ("method", func, n, keywords), make,
                      valid=lambda hit: hit[0] is func)[1]


def _jvp_call(gen, m, n, keywords):
    """A generated function that calls `gen` (a jvp with m tangents) for a call site of n
    positional arguments and `keywords`: (arguments, tangents, keywords=...), the tangents
    passed to gen by name; generated code, so that further transforms read it as any other."""
    return once.build(_jvp_calls, (gen, m, n, keywords),
                      lambda: _make_jvp_call(gen, m, n, keywords))


def _tangents_last(gen, m, n):
    """`gen` (a jvp with m tangents) as a function of n positional primals then the tangents
    (a jvp of a function with defaults takes its tangents by keyword: `g_jvp(a, *, a_dot)`)."""
    return _jvp_call(gen, m, n, ()) if forward._tangent_params(gen, m)[1] else gen


def _make_jvp_call(gen, m, n, keywords):
    names, _, _ = forward._tangent_params(gen, m)
    args, dots = [f"a{i}" for i in range(n)], [f"t{j}" for j in range(m)]
    kw_sig = ", *, " + ", ".join(keywords) if keywords else ""
    name = f"{gen.__name__}_call"
    call = ", ".join(args + [f"{k}={k}" for k in keywords]
                     + [f"{t}={d}" for t, d in zip(names, dots)])
    source = (f"def {name}({', '.join(args + dots)}{kw_sig}):\n"
              f"    return {gen.__name__}({call})\n")
    return load_generated(source, name, {}, {gen.__name__: gen})


_jvp_calls = FunctionCache("jvp_calls")


def _faithful(fn):
    """`fn`, or its trace (transformer/trace_source.py) when it has no source to read or the
    text in its file is not its running code."""
    from secant.transformer.parse import (NoSourceError, StaleSourceError, function_source,
                                          source_verified)
    if not inspect.isfunction(fn) or getattr(fn, "__secant_source__", None) is not None \
            or source_verified(fn):
        return fn
    try:
        function_source(fn)
        return fn
    except (NoSourceError, StaleSourceError):
        from secant.transformer.trace_source import traced     # (imported only when needed)
        return traced(fn)


def _ours():
    """secant's own names every generated function may read (the helpers, the API modules):
    one table, copied by each transform (issue 19: built again for every function)."""
    global _OURS
    if _OURS is None or _OURS[0] is not helpers.by_name() or \
            _OURS[1] is not batch_helpers.by_name():
        _OURS = (helpers.by_name(), batch_helpers.by_name(), {
            "snp": snp, "lax": lax, "dynamic_call": dynamic_call,
            "check_keywords": check_keywords, "check_distinct": check_distinct,
            "attribute_reader": attribute_reader, **helpers.by_name(),
            **batch_helpers.by_name()})
    return _OURS[2]


_OURS = None


def _public_builtins():
    """The names of the public builtins, in dir()'s order (sorted once, again if builtins
    gains a name; each transform read dir(builtins), issue 19)."""
    global _PUBLIC_BUILTINS
    values = vars(builtins)
    if _PUBLIC_BUILTINS[0] != len(values):
        _PUBLIC_BUILTINS = (len(values), tuple(n for n in sorted(values)
                                               if not n.startswith("_")))
    return _PUBLIC_BUILTINS[1]


_PUBLIC_BUILTINS = (None, ())


def _reserved():
    """Every name generated code may use for itself -> its object (transformer/hygiene.py)."""
    global _RESERVED
    if _RESERVED is None:
        import builtins
        _RESERVED = {**{n: getattr(builtins, n) for n in dir(builtins) if not n.startswith("__")},
                     **batch_helpers.by_name(), **helpers.by_name(), "snp": snp, "lax": lax,
                     "dynamic_call": dynamic_call, "check_keywords": check_keywords,
                     "check_distinct": check_distinct,
                     "attribute_reader": attribute_reader}
    return _RESERVED


_RESERVED = None


def _cells(fn):
    code = getattr(fn, "__code__", None)
    return dict(zip(code.co_freevars, fn.__closure__ or ())) if code is not None else {}


_NOT_PARAMETERS = frozenset(keyword.kwlist) | {"__debug__"}


def load_generated(source, name, fn_globals, free, origins=None, cells=None):
    """The function `name` that `source` defines, its free names bound from `free` (those it
    uses; the names in `cells` to the user's own cells), with its canonical AST attached so a
    later transform reads it without re-parsing."""
    tree = ast.parse(source)            # parsed once: compilation, attached AST
    # the names it uses and more (cheaper than a walk; one it does not read is a parameter of
    # loader's factory only), less what no parameter can be named (None, True, ...)
    words = set(re.findall(r"\w+", source)) - _NOT_PARAMETERS
    free = {k: v for k, v in free.items() if k in words}
    gen = loader.load(source, name, fn_globals, free, origins, tree, cells)
    def node():                         # gast, built when a later transform reads it
        return gast_parse.to_gast(tree).body[0]

    gen.__secant_source__ = FunctionSource(gen, node, gen.__code__.co_filename, 1,
                                           source.splitlines(), fn_globals,
                                           closure_values(gen))
    return gen


_LOADED = {}        # source -> (its code, globals, parsed tree, lines): _load_again


def _load_again(source, name, free):
    """load_generated(source, name, {}, free) for vjp's `vjp_fun`, compiled once per source
    text: a vjp called again (each step of odeint's adjoint) binds the same code to its own
    values (new cells) instead of parsing, compiling and registering a new file (a tenth of
    odeint's third derivative, issue 19). Errors name the caller's line (internal file)."""
    hit = _LOADED.get(source)
    if hit is None:
        fun = load_generated(source, name, {}, free)
        register_internal_file(fun.__code__.co_filename)
        if len(_LOADED) > 1024:
            _LOADED.clear()
        src = fun.__secant_source__
        _LOADED[source] = (fun.__code__, fun.__globals__, ast.parse(source), src.lines)
        return fun
    code, fn_globals, tree, lines = hit
    fun = types.FunctionType(code, fn_globals, code.co_name, None,
                             tuple(types.CellType(free[k]) for k in code.co_freevars))

    def node():
        return gast_parse.to_gast(tree).body[0]
    fun.__secant_source__ = FunctionSource(fun, node, code.co_filename, 1, lines, {},
                                           closure_values(fun))
    return fun


# (code key of a custom_vjp / custom_jvp function, mode, wrt, staged) -> (its rule's generated
# function, the custom function it was written for): see _rebound
_CUSTOM_TEMPLATES = {}


def _custom_code_key(custom, mode, wrt, staged):
    """What the short function ad/custom_rules.py writes for `custom`'s vjp (custom_vjp) or
    jvp (custom_jvp) depends on: the code of the function and of its rules, its name, module
    and nondiff_argnums; None where it may depend on more (a subclass, rules of a library's
    own, a rule that is not a plain function)."""
    from secant.custom import custom_jvp, custom_vjp
    kind = type(custom)
    if kind is custom_vjp and mode == "vjp":
        rules = (custom.fun, custom.fwd, custom.bwd)
    elif kind is custom_jvp and mode == "jvp":
        rules = (custom.fun, custom.jvp)
    else:
        return None
    if not all(isinstance(r, types.FunctionType) for r in rules) or \
            getattr(custom, "generate_rule", None) is not None or \
            getattr(custom, "jvp_twin", None) is not None:
        return None
    return (kind, tuple(r.__code__ for r in rules), id(custom.__globals__), custom.__name__,
            custom.nondiff_argnums, mode, tuple(wrt), staged)


def _custom_roles(old, custom):
    """id of `old` (a custom_vjp / custom_jvp function) and of each of its rules -> `custom`'s
    own."""
    roles = {id(old): custom}
    for attr in ("fun", "fwd", "bwd", "jvp"):
        if getattr(old, attr, None) is not None:
            roles[id(getattr(old, attr))] = getattr(custom, attr)
    return roles


def _rebound(gen, roles, memo=None):
    """The generated function `gen` with each closure cell holding one of `roles`' objects
    bound to its replacement instead, and each holding a generated function that does so in
    turn bound to that function rebound (a caller's vjp calling a custom function's vjp);
    `gen` itself where nothing changes. What a fresh custom_vjp / custom_jvp with the code of
    the one `gen` was generated for gets (issue 15: a nested `@custom_vjp def h` defined anew
    at each call of its enclosing function): the generated code calls the function and its
    rules when it runs, and was written from their code alone (_custom_code_key)."""
    memo = {} if memo is None else memo
    if id(gen) in memo:
        return memo[id(gen)]
    memo[id(gen)] = gen                 # (a recursive one: itself)
    cells, changed = [], False
    for cell in gen.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:
            cells.append(cell)
            continue
        if id(value) in roles:
            new = roles[id(value)]
        elif isinstance(value, types.FunctionType) and \
                getattr(value, "__secant_source__", None) is not None and \
                value.__code__.co_filename.startswith("<secant"):
            new = _rebound(value, roles, memo)
        else:
            new = value
        changed |= new is not value
        cells.append(types.CellType(new) if new is not value else cell)
    if not changed:
        return gen
    out = types.FunctionType(gen.__code__, gen.__globals__, gen.__name__, gen.__defaults__,
                             tuple(cells))
    out.__kwdefaults__ = gen.__kwdefaults__
    out.__dict__.update(gen.__dict__)
    src = gen.__secant_source__
    out.__secant_source__ = FunctionSource(out, lambda: src.node, src.filename, src.first_line,
                                           src.lines, src.globals,
                                           {**src.closure, **closure_values(out)},
                                           src.indent, src.generated)
    memo[id(gen)] = out
    return out


def _generate_custom(custom, wrt, mode, staged, batch=None):
    """The vjp or jvp of a custom_vjp / custom_jvp function: ad/custom_rules.py writes a short
    function calling the user's rules; the batched function of a custom_vmap function:
    batching/custom_rules.py writes one calling the user's rule. A custom function with the
    code of one already seen reuses its function, bound to its own rules."""
    key = _custom_code_key(custom, mode, wrt, staged)
    hit = _CUSTOM_TEMPLATES.get(key) if key is not None else None
    if hit is not None:
        return _rebound(hit[0], _custom_roles(hit[1], custom))
    gen = _generate_custom_anew(custom, wrt, mode, staged, batch)
    if key is not None:
        _CUSTOM_TEMPLATES[key] = (gen, custom)
    return gen


def _generate_custom_anew(custom, wrt, mode, staged, batch=None):
    from secant.ad import custom_rules
    from secant.custom import checkpoint, custom_jvp, custom_vmap
    params = custom.params()
    if getattr(custom, "generate_rule", None) is not None:    # rules of its own (lax_implicit)
        return custom.generate_rule(mode, params, wrt, staged, batch)
    if isinstance(custom, checkpoint):
        if mode != "vjp":       # only reverse mode sees the checkpoint
            return generate(custom.fun, wrt, mode, staged=staged, batch=batch)
        inner = generate(custom.fun, wrt, "vjp", staged=staged)
        unread = getattr(inner, "__secant_unread__", frozenset())
        source, name = custom_rules.vjp_of_checkpoint(custom, params, wrt, inner.__name__,
                                                      unread)
        return load_generated(source, name, custom.fun.__globals__,
                              {inner.__name__: inner, "lax": lax})
    if mode == "vmap" and isinstance(custom, custom_vmap):
        return _generate_custom_vmap(custom, params, wrt, batch)
    if mode == "vmap":      # custom_vjp / custom_jvp: vmap batches the function and its rules
        return _batched_custom(custom, params, wrt, staged, batch)
    if isinstance(custom, custom_vmap):
        if getattr(custom, "no_derivative", None):      # (a library's own reason)
            return _refused(custom, mode, UnsupportedError, custom.no_derivative)
        if mode == "jvp" or getattr(custom, "reverse_by_body", False):
            return generate(custom.fun, wrt, mode, staged=staged)   # (forward mode: as JAX)
        raise SecantTypeError(f"can't apply reverse-mode autodiff (grad/vjp) to a custom_vmap "
                              f"function ({custom.__name__}), as in JAX; to give it a gradient "
                              "too, stack it under custom_vjp: custom_vjp(custom_vmap(f)) with "
                              f"defvjp(fwd, bwd){where()}")
    if mode == "jvp" and getattr(custom, "jvp_twin", None) is not None:   # (a library's own
        return _generate_custom(custom.jvp_twin, wrt, mode, staged, batch)  # forward rule)
    bad = [params[i] for i in wrt if i in custom.nondiff_argnums]
    if bad:
        raise SecantTypeError(f"{custom.__name__}: cannot differentiate with respect to "
                              f"{', '.join(bad)}, which nondiff_argnums marks as not "
                              "differentiable")
    is_jvp = isinstance(custom, custom_jvp)
    rule = custom.jvp if is_jvp else custom.fwd
    if rule is None:
        raise SecantTypeError(f"{custom.__name__} is a {type(custom).__name__} function with no "
                              f"rule yet: call {custom.__name__}."
                              f"{'defjvp' if is_jvp else 'defvjp'}(...) before differentiating it")
    if mode == "jvp" and not is_jvp:
        named = getattr(custom, "__secant_replay_of__", None) or custom    # (a recompute's)
        return _refused_tangent(custom, params, wrt, (
            f"can't apply forward-mode autodiff (jvp) to a custom_vjp function "
            f"({named.__name__}); use custom_jvp for a rule that works in both modes"))
    derived = ()    # the derivatives its function calls (read by _same_staged)
    if mode == "jvp":
        source, name, free = custom_rules.jvp_of_custom_jvp(custom, params, wrt)
    elif mode == "vjp" and not is_jvp:
        source, name, free = custom_rules.vjp_of_custom_vjp(custom, params, wrt)
    elif mode == "vjp":
        t_source, t_name, t_free = custom_rules.tangent_of_custom_jvp(custom, params)
        replays = {k: _rule_replay(v, staged) for k, v in t_free.items() if v is custom.jvp}
        t_free.update(replays)
        tangent = load_generated(t_source, t_name, custom.fun.__globals__, t_free)
        diff = [i for i in range(len(params)) if i not in custom.nondiff_argnums]
        tangent_vjp = generate(tangent, [len(params) + diff.index(i) for i in wrt], "vjp",
                               staged=staged)
        source, name, free = custom_rules.vjp_of_custom_jvp(
            custom, params, wrt, tangent_vjp,
            checked=getattr(custom, "__secant_checked_forward__", None) is None)
        derived = (tangent_vjp, *(r for r in replays.values() if r is not custom.jvp))
    else:
        raise SecantTypeError(f"{mode} of the custom function {custom.__name__} directly")
    sizes = _size_params(custom.fun)
    if sizes:       # (a batched custom function's callers pass their batch sizes: left unread)
        head, rest = source.split("\n", 1)
        for size in sizes:
            head = f"def {name}({_with_size_param(head[head.index('(') + 1:-2], size)}):"
        source = f"{head}\n{rest}"
    gen = load_generated(source, name, custom.fun.__globals__, {**free, "snp": snp},
                         _rule_lines(source, free))
    if sizes:
        gen.__secant_size_param__ = custom.fun.__secant_size_param__
    if not staged:      # the user's rules are called as written, eagerly and under jit alike
        gen.__secant_staging__ = (custom, derived)
    return gen


def checked_forward(custom):
    """What a caller's reverse mode calls for a custom_jvp function's value: `f_fwd`, its
    checked rule at zero tangents (ad/custom_rules.fwd_of_custom_jvp), itself a custom_jvp
    function with the same rule, whose vjp checks nothing again (the rule, and the function's
    body in it, run once per call, as in JAX). None for other functions."""
    from secant.ad import custom_rules
    from secant.custom import custom_jvp
    if type(custom) is not custom_jvp or custom.jvp is None:
        return None
    out = _CHECKED_FORWARDS.get(custom)
    if out is None or out.jvp is not custom.jvp:
        source, name, free = custom_rules.fwd_of_custom_jvp(custom, custom.params())
        fwd = load_generated(source, name, custom.fun.__globals__, {**free, "snp": snp})
        out = custom_jvp(fwd, custom.nondiff_argnums)
        out.defjvp(custom.jvp)
        out.__secant_checked_forward__ = custom
        _CHECKED_FORWARDS[custom] = out
    return out


_CHECKED_FORWARDS = weakref.WeakKeyDictionary()


def pair_forward(custom, active, staged, ran):
    """(f_fwd, f_bwd) for a custom_vjp function `custom` called in a caller's forward pass
    with `active` arguments: `out, res = f_fwd(x)` there (the user's fwd, checked), and
    `x_bar = f_bwd(out_bar, res, x)` in its reverse pass (the user's bwd on those residuals),
    so that fwd, and the function's body in it, run once per call, as in JAX
    (ad/custom_rules.fwd_pair_of_custom_vjp; `ran`: the caller's primal call ran the body).
    None for other functions, or where the plain f_vjp says what is wrong."""
    from secant.ad import custom_rules
    from secant.custom import custom_vjp
    if type(custom) is not custom_vjp or custom.fwd is None or custom.bwd is None or \
            getattr(custom, "generate_rule", None) is not None or _is_library(custom.fun) or \
            any(i in custom.nondiff_argnums for i in active):
        return None
    try:
        params = custom.params()
    except SecantError:
        return None
    ran = custom.__dict__.get("__secant_replay_of__", custom) if ran else None
    if ran is not None:     # (a body without Python side effects runs as written in fwd; a
        from secant.custom import _body_replay      # replay's fwd calls the function's own)
        ran = ran if _body_replay(ran, staged) is not ran.fun else None
    key = (tuple(active), staged, ran)
    table = _PAIR_FORWARDS.setdefault(custom, {})
    hit = table.get(key)
    if hit is not None and hit[0] is custom.fwd and hit[1] is custom.bwd:
        return hit[2]
    made = []
    for source, name, free in (custom_rules.fwd_pair_of_custom_vjp(custom, params, ran),
                               custom_rules.bwd_of_custom_vjp(custom, params, list(active))):
        gen = load_generated(source, name, custom.fun.__globals__, free,
                             _rule_lines(source, free))
        if not staged:      # (the user's rules are called as written, eagerly and under jit)
            gen.__secant_staging__ = (custom, ())
        made.append(gen)
    table[key] = (custom.fwd, custom.bwd, tuple(made))
    return tuple(made)


_PAIR_FORWARDS = weakref.WeakKeyDictionary()


def _rule_replay(rule, staged, pending=None):
    """The rule a custom_jvp function's transpose recomputes: its replay (transforms.py
    replay_of), without the Python side effects of the rule and of the functions it calls
    (the custom function's own body among them), which the checked call of the rule in its
    vjp ran (ad/custom_rules.vjp_of_custom_jvp); the rule itself where it has none, or where
    no transform reads it. `pending`: a replay's custom_jvp function (_custom_replay) asking
    while the rule's replay is generated (the replay calls the function's replay): it gets
    the rule's replay once that is finished."""
    key = (id(rule), staged)
    try:
        params = list(inspect.signature(rule).parameters)
        sub = generate(rule, tuple(range(len(params))), "replay", staged=staged)
    except BaseException as error:
        _PENDING_RULES.pop(key, None)
        if isinstance(error, (SecantError, TypeError, ValueError)):
            return rule
        raise
    if isinstance(sub, _Recursive):
        if pending is not None:
            _PENDING_RULES.setdefault(key, (rule, []))[1].append(pending)
        return rule
    out = sub if getattr(sub, "__secant_effects__", False) else rule
    waiting = _PENDING_RULES.pop(key, None)
    for custom in waiting[1] if waiting is not None and waiting[0] is rule else ():
        custom.defjvp(out)      # (none of its derivatives generated yet: it was made for the
    return out                  # replay being generated, which calls it by name)


# (id of a rule, staged) -> (the rule, replays' custom_jvp functions waiting for its replay)
_PENDING_RULES = {}


def _refused(custom, mode, error, message):
    """The `mode` function of a custom function that has none: it raises `error` when called
    (as JAX, which refuses when it traces the call: a branch not taken is no error)."""
    name = f"{custom.__name__.lstrip('_')}_{mode}_refused"
    source = f"def {name}(*args, **kwargs):\n    raise error({message!r} + where())\n"
    return load_generated(source, name, {}, {"error": error, "where": where})


def _refused_tangent(custom, params, wrt, message, fun=None):
    """The jvp of a custom_vjp function (`fun`: its batched form, under vmap): its value, and
    for a tangent what raises `message` where it is read (as JAX's, whose tangent is evaluated
    only where it is needed: jvp of grad of a function whose fwd rule calls the function
    itself reads its value only)."""
    fun = custom if fun is None else fun
    names = Names(params + ["fun", "where", "refused_tangents"])
    dots = [names.fresh(f"{params[i]}_dot") for i in wrt]
    sizes = list(_size_params(fun))
    name = f"{custom.__name__.lstrip('_')}_jvp_refused"
    args = ", ".join(params + [f"{k}={k}" for k in sizes])
    head = ", ".join(params + dots + (["*"] + [f"{k}=None" for k in sizes] if sizes else []))
    source = (f"def {name}({head}):\n"
              f"    return refused_tangents(fun({args}), {message!r} + where())\n")
    gen = load_generated(source, name, {}, {"fun": fun, "where": where,
                                            "refused_tangents": _refused_tangents})
    gen.__secant_refused__ = (custom, params, wrt, message)
    if sizes:
        gen.__secant_size_param__ = fun.__secant_size_param__
    return gen


def _generate_refused(fn, wrt, mode, staged, batch):
    """A transform of _refused_tangent's function: under vmap, the same of the batched custom
    function (vmap of jvp of grad); any other, the refusal raised where it is called."""
    _, params, active, message = fn.__secant_refused__
    # (the function it calls, as bound to this one: one of the same code rebinds it)
    custom = fn.__closure__[fn.__code__.co_freevars.index("fun")].cell_contents
    if mode != "vmap":
        return _refused(custom, mode, SecantTypeError, message)
    primals = [i for i in wrt if i < len(params)]
    batched = generate(custom, primals, "vmap", staged=staged, batch=batch) if primals else \
        custom          # (jacfwd: only the tangents batched)
    gen = _refused_tangent(custom, params, active, message, batched)
    gen.__secant_out_batched__ = bool(primals)
    return gen


def _refused_tangents(out, message):
    """(out, a RefusedTangent for each leaf of out)"""
    return out, tree_util.tree_map(lambda _: RefusedTangent(message), out)


def no_refused_tangent(tree):
    """tree, where no leaf is a RefusedTangent (_refused_tangent's): jvp, linearize and vmap
    return none to the user, as JAX asks for the tangent there (and refuses)."""
    for leaf in tree_util.tree_leaves(tree):
        if isinstance(leaf, RefusedTangent):
            leaf._fail()
    return tree


def example_axes(batch, n, wrt, what):
    """Each of n arguments' batch axis (None: unbatched) for the batched rule of a function
    called from batched code, whose outputs go at axis 0 (or where they fall)."""
    if batch.out_axes not in (0, "free", "leaves"):
        raise SecantTypeError(f"vmap of {what} here needs its outputs at "
                              f"out_axes={batch.out_axes!r}; call it from a function "
                              f"instead{where()}")
    moved = dict(batch.in_axes)
    return tuple(moved.get(i, 0) if i in wrt else None for i in range(n))


def _batched_custom(custom, params, wrt, staged, batch):
    """vmap of a custom_vjp / custom_jvp function, as JAX's: the batched function, itself a
    custom function whose rules are the user's rules vmapped (so a derivative of the batched code
    still uses them); a cotangent of an unbatched argument is summed over the batch."""
    from secant.batch import vmap
    from secant.custom import custom_jvp
    has_rule = custom.jvp is not None if isinstance(custom, custom_jvp) else \
        custom.fwd is not None
    if not has_rule:
        return generate(custom.fun, wrt, "vmap", staged=staged, batch=batch)
    axes = example_axes(batch, len(params), wrt, f"the custom function {custom.__name__}")
    fun = generate(custom.fun, wrt, "vmap", staged=staged, batch=batch._replace(out_axes=0))
    nondiff = custom.nondiff_argnums
    nd_axes = tuple(axes[i] for i in nondiff)
    diff = [i for i in range(len(params)) if i not in nondiff]
    if isinstance(custom, custom_jvp):
        out = custom_jvp(fun, nondiff_argnums=nondiff)
        out.defjvp(_batched_jvp_rule(custom, params, axes))
    else:
        out = type(custom)(fun, nondiff_argnums=nondiff)
        summed = [k for k, i in enumerate(diff) if axes[i] is None]
        bwd_v = vmap(custom.bwd, in_axes=nd_axes + (0, 0), out_axes=0)

        def bwd(*args):     # (an unbatched argument's cotangent: summed over the batch)
            cts = bwd_v(*args)
            if not summed or not isinstance(cts, (tuple, list)):
                return cts
            return type(cts)(tree_util.tree_map(lambda c: snp.sum(c, 0), c)
                             if k in summed and c is not None else c
                             for k, c in enumerate(cts))
        bwd.__name__ = getattr(custom.bwd, "__name__", "bwd")
        bwd.__secant_rule_of__ = custom.bwd     # (errors name the user's rule)
        fwd = vmap(custom.fwd, in_axes=axes, out_axes=0)
        fwd.__secant_rule_of__ = custom.fwd
        out.defvjp(fwd, bwd)
        twin = getattr(custom, "jvp_twin", None)
        if twin is not None:    # (a library's forward rule for its custom_vjp: batched too)
            out.jvp_twin = _batched_custom(twin, params, wrt, staged, batch)
    out.__secant_out_batched__ = True       # (every output batched, the rules' too)
    # (what it batches, with which axes: its body's replay is vmap of the body's replay,
    # secant/custom.py _batched_replay)
    out.__secant_batch_of__ = (custom, wrt, batch._replace(out_axes=0))
    return out


def _batched_jvp_rule(custom, params, axes):
    """The user's custom_jvp rule vmapped, as generated source (reverse mode transposes it):

        def f_jvp_flat(x, w, x_dot, w_dot):           def f_vmap_jvp(primals, tangents):
            return f_jvp((x, w), (x_dot, w_dot))          x, w = primals
                                                          x_dot, w_dot = tangents
                                                          return f_jvp_flat_vmap(x, w, x_dot, w_dot)
    """
    from secant.ad.custom_rules import _tuple
    from secant.batch import vmap
    names = Names(params)
    nondiff = [params[i] for i in custom.nondiff_argnums]
    diff_i = [i for i in range(len(params)) if i not in custom.nondiff_argnums]
    primals = [params[i] for i in diff_i]
    dots = [names.fresh(f"{p}_dot") for p in primals]
    rule, flat_name = names.fresh(f"{custom.__name__}_jvp"), names.fresh(f"{custom.__name__}_jvp_flat")
    flat = load_generated(
        f"def {flat_name}({', '.join(nondiff + primals + dots)}):\n"
        f"    return {rule}({', '.join(nondiff + [_tuple(primals), _tuple(dots)])})\n",
        flat_name, custom.fun.__globals__, {rule: custom.jvp})
    d_axes = tuple(axes[i] for i in diff_i)
    flat_v = vmap(flat, in_axes=tuple(axes[i] for i in custom.nondiff_argnums) + d_axes + d_axes,
                  out_axes=0)
    name, p_name, t_name = (names.fresh(n) for n in (f"{custom.__name__}_vmap_jvp", "primals",
                                                      "tangents"))
    v_name = names.fresh(f"{flat_name}_vmap")
    comma = "," if len(primals) == 1 else ""
    batched = load_generated(
        f"def {name}({', '.join(nondiff + [p_name, t_name])}):\n"
        f"    {', '.join(primals)}{comma} = {p_name}\n"
        f"    {', '.join(dots)}{comma} = {t_name}\n"
        f"    return {v_name}({', '.join(nondiff + primals + dots)})\n",
        name, custom.fun.__globals__, {v_name: flat_v})
    batched.__secant_rule_of__ = custom.jvp     # (errors name the user's rule)
    return batched


def _rule_lines(source, free):
    """{generated line: the def line of the user's rule it calls}: an error raised there (a
    rule's result checked, ad/custom_checks.py) names the rule in the user's file."""
    free = {n: getattr(f, "__secant_rule_of__", f) for n, f in free.items()}
    rules = {n: f.__code__ for n, f in free.items()
             if getattr(f, "__code__", None) is not None and not getattr(f, "__secant_checks__",
                                                                         False)
             and not getattr(f, "__secant_check__", False)
             and not getattr(f, "__secant_custom__", False)}
    out = {}
    for i, line in enumerate(source.splitlines(), 1):
        for n, code in rules.items():
            if f"{n}(" in line or f"custom_jvp_rule_checked({n}," in line:
                out[i] = def_line(code)
    return out


def _generate_custom_vmap(custom, params, wrt, batch):
    from secant.batching import custom_rules
    if custom.vmap_rule is None:
        raise SecantTypeError(f"{custom.__name__} is a custom_vmap function with no batching "
                              f"rule yet: define one with @{custom.__name__}.def_vmap before "
                              f"vmapping it{where()}")
    if batch.out_axes not in (0, "free", "leaves"):
        raise SecantTypeError(f"vmap of the custom_vmap function {custom.__name__} here needs "
                              f"its outputs at out_axes={batch.out_axes!r}; call it from a "
                              f"function instead{where()}")
    source, name, free = custom_rules.vmap_of_custom_vmap(custom, params, wrt, batch.in_axes,
                                                           batch.axis_size)
    gen = load_generated(source, name, custom.fun.__globals__,
                         {**free, "snp": snp, **batch_helpers.by_name()})
    gen.__secant_out_batched__ = True       # unbatched outputs of the rule are broadcast
    return gen


# --- the public transforms ------------------------------------------------------------------
def _positions(argnums, fn):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if _plain(fn):      # (what its signature says, read from its code: issue 19)
        code = fn.__code__
        n = None if code.co_flags & inspect.CO_VARARGS else code.co_argcount
    else:
        try:
            params = inspect.signature(fn, follow_wrapped=False).parameters.values()
            n = len([p for p in params
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
            if any(p.kind == p.VAR_POSITIONAL for p in params):
                n = None        # f(*xs): argnums index the positional arguments of each call
        except (TypeError, ValueError):
            n = None
    out = []
    for a in nums:
        if not isinstance(a, int):
            raise SecantTypeError(f"argnums must be ints, got {a!r}{where()}")
        if n is not None and not -n <= a < n:
            raise SecantTypeError(f"argnums {a} out of range for a function of {n} "
                                  f"positional parameters{where()}")
        out.append(a % n if n else a)
    return tuple(out)


_FLOAT_SCALARS = frozenset([np.float32, np.float64])
# the argument types a derivative's run on NumPy's values may take (raw_run: _as_arrays makes
# them arrays or leaves them numbers without a tree walk; raw_eager takes the float ones)
_RAW_ARGUMENTS = frozenset([Array, np.ndarray, np.float32, np.float64, float, int])
_FAST_INEXACT = (np.dtype("float32"), np.dtype("float64"))


def _to_array(leaf, differentiated):
    """NumPy arrays become secant arrays (as jax.grad's inputs become jax arrays); Python numbers
    stay numbers unless they are differentiated."""
    if type(leaf) is np.ndarray and leaf.dtype == dtypes.canonicalize_dtype(leaf.dtype):
        view = leaf.view()          # no copy: the call reads it and returns new arrays
        view.flags.writeable = False
        return Array._wrap(view)
    if type(leaf) in _FLOAT_SCALARS and leaf.dtype == dtypes.canonicalize_dtype(leaf.dtype):
        return Array._wrap_ndarray(leaf, False)     # (immutable: held as the eager paths hold
    if isinstance(leaf, (np.ndarray, np.generic)):  # a 0-d result, backends/array.py _value)
        return snp.asarray(leaf)
    if differentiated and isinstance(leaf, (int, float, complex)) and not isinstance(leaf, bool):
        return snp.asarray(leaf)
    return leaf


def _float_to_array(leaf):
    """_to_array(leaf, True), a float32 (float64 under x64) NumPy array read at once."""
    if type(leaf) is np.ndarray:
        dt = leaf.dtype
        if dt == _F32 or dt == _F64 and dtypes.X64[0]:      # (canonical: _to_array's view)
            view = leaf.view()
            view.flags.writeable = False
            return Array._wrap_ndarray(view, False)
    return _to_array(leaf, True)


_F32, _F64 = np.dtype("float32"), np.dtype("float64")


def _as_arrays(args, positions):
    out = []
    for i, a in enumerate(args):
        t = type(a)
        if t is Array:                      # (leaves: converted without a tree walk)
            out.append(a)
        elif t is np.float32 or t is np.float64 and dtypes.X64[0]:     # (canonical: _to_array)
            out.append(Array._wrap_ndarray(a, False))
        elif t is np.ndarray:
            out.append(_float_to_array(a))      # (an array's conversion: differentiated or not)
        elif isinstance(a, (np.ndarray, np.generic, int, float, complex)):
            out.append(_to_array(a, i in positions))
        elif i in positions:        # (a dict of parameters, say: its leaves, no lambda)
            leaves, treedef = tree_util.tree_flatten(a)
            out.append(treedef.unflatten([_float_to_array(leaf) for leaf in leaves]))
        elif isinstance(a, (list, tuple, dict)):
            # a container of constants: its NumPy leaves as arrays, in a copy; one with none to
            # convert (a log list, a config dict) is passed itself, as JAX passes it, so what
            # the function appends or sets there is seen by the caller
            leaves, treedef = tree_util.tree_flatten(a)
            converted = [_to_array(leaf, False) for leaf in leaves]
            same = all(c is leaf for c, leaf in zip(converted, leaves))
            out.append(a if same else tree_util.tree_unflatten(treedef, converted))
        else:
            out.append(a)
    return tuple(out)


def _check_differentiable(args, positions, what):
    for i in positions:
        if i >= len(args):
            raise SecantTypeError(f"{what}: argument {i} was requested by argnums but only "
                                  f"{len(args)} positional arguments were given{where()}")
        a = args[i]
        if type(a) is Array and a.dtype in _FAST_INEXACT:
            continue                        # (the common case, without a tree walk)
        for leaf in ((a,) if type(a) is Array else tree_util.tree_leaves(a)):
            try:
                dt = leaf.dtype if type(leaf) is Array else snp.result_type(leaf)
            except (TypeError, ValueError):
                raise SecantTypeError(f"{what}: argument {i} holds a {type(leaf).__name__}, which "
                                      f"is not an array type{where()}") from None
            if not dtypes.is_inexact(dt):
                raise SecantTypeError(
                    f"{what} requires real- or complex-valued inputs (a floating-point dtype), "
                    f"but argument {i} has dtype {dt.name}; convert it with .astype(float) or "
                    f"leave it out of argnums{where()}")


def _in_parameter_dtypes(out, args, positions, mode, has_aux, tuple_out):
    """grad's result with each float cotangent in its parameter's float dtype, as JAX's (the
    transpose of a promotion casts back): the generated code casts them already
    (ad/helpers.unbroadcast; grads_as where it returns a real scalar's cotangent read from its
    operands', ad/reverse.py mixed_scalars); a derivative generated per call shape, or of
    objects, is cast here too."""
    value = mode == "value_and_grad"
    grads = out[1] if value else out[0] if has_aux else out
    one = len(positions) == 1 and not tuple_out
    if one and type(grads) is dict:     # (a dict of parameters, each cotangent already in
        kept = _dict_in_dtypes(grads, args[positions[0]])     # its dtype: no tree_map)
        if kept is not None:
            return (out[0], kept) if value else (kept, out[1]) if has_aux else kept
    kept = helpers.grads_as(grads, args[positions[0]]) if one else \
        tuple(helpers.grads_as(g, args[p]) for g, p in zip(grads, positions))
    if kept is grads or not one and all(k is g for k, g in zip(kept, grads)):
        return out
    return (out[0], kept) if value else (kept, out[1]) if has_aux else kept


def _dict_in_dtypes(grads, params):
    """helpers.grads_as(grads, params) for a dict of array cotangents each of its parameter's
    dtype (what tree_map(grads_as, ...) gives then: the cotangents, unflattened as the
    registry orders a dict); None for anything else."""
    leaves, treedef = tree_util.tree_flatten(grads)
    try:
        others = treedef.flatten_up_to(params)
    except (ValueError, TypeError):
        return None
    for g, p in zip(leaves, others):
        if type(g) is not Array or type(p) is not Array or g.dtype != p.dtype:
            return None
    return treedef.unflatten(leaves)


def staged(fun):
    """What a transform reads for `fun` while jit traces: its Python control flow rewritten into
    secant.lax calls (transformer/functionalize.py), so a loop or `if` on traced values stages
    into one XLA loop or conditional instead of failing or unrolling; for a transformed
    function, the same transform of the staged original."""
    from secant.api import JitFunction
    from secant.transformer.functionalize import functionalize
    while isinstance(fun, JitFunction):
        fun = fun._fun
    if getattr(fun, "__secant_custom__", False):     # its rules are read as written
        return fun
    if _is_op_or_callable(fun):     # snp.var, a bound method, a partial: its calling function
        return _op_function(fun)    # (secant's own implementation is never read)
    make = getattr(fun, "__secant_staged__", None)
    if make is not None:
        return make()
    try:
        return functionalize(desugar(fun))
    except SecantError as e:
        if getattr(e, "global_flow", None) is None:
            raise
        return fun      # (a `with` of a handler stack: the transform traces it instead)


_restaging = threading.local()     # .on: restaged is generating (its callees restaged too)


def restaged(fun):
    """The staged form of `fun` made from the staged forms of what it derives: for a function
    secant generated (f's vjp, the vmap of that vjp, its jvp), the same transform of its
    source's restaged form, down to the user's function, whose loops are lax loops
    (functionalised), where `staged` rewrites the generated loops themselves (a derivative's
    Python `while`, with stacks it appends to, which no lax loop can run batched); for any
    other function, its staged form. The derivatives its generation reads are restaged too."""
    if isinstance(fun, _Jacobian):
        return fun._restaged().__secant_generated__ or _op_function(staged(fun))
    fun = _unwrap(fun)
    made = getattr(fun, "__secant_made_from__", None)
    if made is None:
        jacobian = getattr(fun, "__secant_jacobian_of__", None)   # (a Jacobian's source form)
        return _op_function(staged(fun)) if jacobian is None else restaged(jacobian)
    source, wrt, mode, has_aux, tuple_out, batch = made
    with _restaging_on():
        return generate(restaged(source), wrt, mode, has_aux, tuple_out, staged=True,
                        batch=batch)


@contextlib.contextmanager
def _restaging_on():
    was = getattr(_restaging, "on", False)
    _restaging.on = True
    try:
        yield
    finally:
        _restaging.on = was


def _same_interface(gen, again):
    """Whether generated `again` can stand in for `gen` in code written to call `gen`: the same
    parameters (`again` may add a batched function's size parameter, which a call that does
    not pass leaves at None), the same outputs batched (a batched function) or
    differentiated (a derivative: what its callers' canonical forms read), and for a vjp,
    the same cotangents summed as arrays and parameters it does not read."""
    made = getattr(gen, "__secant_made_from__", None)
    if made is None:        # (a user's function: its staged form is the same function)
        return True
    size = getattr(gen, "__secant_size_param__", None)
    attrs = ("__secant_out_batched__", "__secant_out_active__", "__secant_unread__") + (
        ("__secant_size_param__",) if size else ()) + (
        ("__secant_array_params__",) if made[2] == "vjp" else ())
    added = getattr(again, "__secant_size_param__", None) if not size else None
    try:    # (positional parameters by place: their names follow the code each was made from)
        params = [[(p.kind, p.default, p.name if p.kind == p.KEYWORD_ONLY else None)
                   for p in inspect.signature(f).parameters.values() if p.name != added]
                  for f in (gen, again)]
    except (TypeError, ValueError):
        return False
    return params[0] == params[1] and all(getattr(gen, a, None) == getattr(again, a, None)
                                          for a in attrs)


def _objects_form(fn, args):
    """fn's form that knows which of `args` are user objects with operators
    (transformer/operators.py), or None where none is (arrays: the common case, checked
    first); for a transform of a function (grad(f)), that transform of f's form."""
    if all(type(a) is Array for a in args):
        return None
    objects_of = getattr(fn, "__secant_objects_of__", None)
    if objects_of is not None:
        return objects_of(args)
    from secant.transformer.operators import objects_in
    form = objects_in(fn, args)
    return None if form is fn else form


def _objects_generated(base, args, positions, mode, has_aux, tuple_out):
    form = _objects_form(base, args)
    if form is None:
        return None
    gen = generate(form, positions, mode, has_aux, tuple_out)
    from secant.transformer.operators import is_operator_object, objects_form
    return objects_form(gen, [is_operator_object(a) for a in args]) \
        if isinstance(gen, types.FunctionType) else gen    # (a transform of it knows them too)


def _remade_for_objects(gen, base, positions, mode, has_aux, tuple_out):
    """Mark `gen` (grad's derivative of `base`, written for arrays) with the way to make it
    again for user objects with operators at the positions a caller knows (flags): a function
    that calls grad(f)(v, w) of objects and is differentiated itself must differentiate that
    derivative, never the array one (whose `v + w` rule is an array sum's)."""
    if isinstance(gen, types.FunctionType) and gen is not base:
        from secant.transformer.operators import objects_form
        gen.__secant_objects_remade__ = lambda flags: objects_form(generate(
            objects_form(base, flags), positions, mode, has_aux, tuple_out),
            flags)      # (and read again knowing them: `q * 3.0` left as written is q's __mul__)


def _transform(fun, argnums, mode, has_aux):
    """The wrapper of grad/value_and_grad: eager calls run the derivative of `fun` as written;
    calls while jit traces run the derivative of its staged form."""
    base = _op_function(fun)
    positions = _positions(argnums, base)
    tuple_out = not isinstance(argnums, int)
    if _variadic(base) or _per_call(fun):     # def f(*xs, **kw): generated per call shape
        return _transform_variadic(fun, fun if _per_call(fun) else base, positions, mode,
                                   has_aux, tuple_out)
    own_code = fun is base and type(base) is types.FunctionType    # (a plain function)
    gen = _eager_generated(base, positions, mode, has_aux, tuple_out, own_code)
    _remade_for_objects(gen, base, positions, mode, has_aux, tuple_out)

    def staged_gen():
        if own_code and base not in _TRACED_WITH_ARGUMENTS:
            # a fresh closure of code staged before: that derivative, rebound
            hit = code_cache.lookup(base, positions, mode, has_aux, tuple_out, True, None,
                                    _current)
            if hit is not None:
                return hit
        try:
            out = generate(_op_function(staged(fun)), positions, mode, has_aux, tuple_out,
                           staged=True)
            if own_code and base not in _TRACED_WITH_ARGUMENTS:
                code_cache.remember(base, out, positions, mode, has_aux, tuple_out, True, None)
            return out
        except SecantError as e:
            if not getattr(e, "lax_loop_derivative", False):
                raise
            # jit rolls a derivative's Python loop into a lax loop, which reverse mode cannot
            # take again yet: trace the derivative as written (its loops unroll, as a Python
            # loop does under jax.jit)
            return gen

    def current():
        nonlocal gen
        if not _current(gen):       # a callee it resolved was rebound: generate it again
            gen = transformed.__secant_generated__ = generate(_op_function(fun), positions,
                                                              mode, has_aux, tuple_out)
        return gen

    raw_ok = not has_aux        # (secant/raw_eager.py: its results are only float arrays)

    one = mode == "grad" and not has_aux and len(positions) == 1 and not tuple_out

    def keep(out, args=None):
        if args is None:            # (a generated function: called, then its result kept)
            return lambda *a, **k: keep(out(*a, **k), a)
        if one and type(out) is Array:      # (the common case, at once)
            a = args[positions[0]]
            if type(a) is Array and (out._npy if out._npy is not None else out._aval).dtype \
                    is (a._npy if a._npy is not None else a._aval).dtype:
                return out
        return _in_parameter_dtypes(out, args, positions, mode, has_aux, tuple_out)

    def raw_run(args):
        """The call on NumPy's values (secant/raw_eager.py) ahead of the general path, or
        NOT_RAW where that does not apply (FAILED: it applied and failed). A derivative that
        runs so calls NumPy's functions only: it meets no run-time callee (RetryAnswered),
        reads no computed field (rerun_if_met) and runs no code that could rebind a name it
        resolved (rerun_if_rebound after the run)."""
        if raw_eager.raw_version(gen) is None or active_trace() is not None:
            return raw_eager.NOT_RAW
        for a in args:
            if type(a) not in _RAW_ARGUMENTS:
                return raw_eager.NOT_RAW
        try:
            args = _as_arrays(args, positions)
        except Exception:           # (an array NumPy holds and secant does not: the general
            return raw_eager.NOT_RAW    # path's error)
        if not _current(gen) or reads_computed(gen, args):
            return raw_eager.NOT_RAW        # (the general path generates it again)
        token = quiet_enter()
        try:
            out = raw_eager.run(gen, args)
        finally:
            quiet_exit(token)
        return out if out is raw_eager.NOT_RAW or out is raw_eager.FAILED else keep(out, args)

    @functools.wraps(gen)
    def transformed(*args, **kwargs):
        tried = None
        if raw_ok and not kwargs:       # (the fast path, ahead of once_in's ~0.3 us)
            out = raw_run(args)
            if out is raw_eager.FAILED:
                tried = out             # (the general path runs it as written: not again)
            elif out is not raw_eager.NOT_RAW:
                return out
        # (a function traced on each call is traced once in the call: issue 15, effects once)
        return once_in(call, (args, kwargs, tried), {})

    def call(args, kwargs, tried):
        nonlocal gen
        try:
            with RetryAnswered(base) as answered:
                out = rerun_if_met(lambda: run_as(args, kwargs, tried))
            if not answered.escalated():
                return out
        except SecantError as e:
            if not traced_for_call_instead(base, e):
                raise
        else:       # (answered from the values this call computed: traced whole from now)
            gen = transformed.__secant_generated__ = generate(base, positions, mode, has_aux,
                                                              tuple_out)
            return out
        # (a callee known only at run time cannot be transformed: fun traced whole instead)
        gen = transformed.__secant_generated__ = generate(base, positions, mode, has_aux,
                                                          tuple_out)
        return run(*args, **kwargs)

    def run(*args, **kwargs):
        return run_as(args, kwargs)

    def run_as(args, kwargs, tried=None):
        args = _as_arrays(args, positions)
        _check_differentiable(args, positions, mode)
        form = _objects_form(base, args)        # (v - w of user objects: Vec.__sub__)
        try:
            if active_trace() is not None:
                if form is not None:
                    return keep(generate(_op_function(staged(form)), positions, mode, has_aux,
                                         tuple_out, staged=True))(*args, **kwargs)
                fn = staged_gen()       # (traced again if a callee was rebound as it ran)
                return keep(rerun_if_rebound(fn, fn(*args, **kwargs), lambda: (
                    staged_gen(), staged_gen()(*args, **kwargs)), base), args)
            token = quiet_enter()       # once for the call, not once per operation
            try:
                fn = current() if form is None else \
                    generate(form, positions, mode, has_aux, tuple_out)
                if form is None and reads_computed(fn, args):   # (an object's __getattr__
                    fn = current()                  # computes a name read as a field: again)
                # plain arithmetic on floats runs on NumPy's values (secant/raw_eager.py)
                out = raw_eager.run(fn, args) if raw_ok and not kwargs and tried is None \
                    else tried or raw_eager.NOT_RAW
                if out is raw_eager.NOT_RAW or out is raw_eager.FAILED:
                    # (the helpers it calls in their versions for eager float matrices)
                    failed, out = out is raw_eager.FAILED, \
                        raw_eager.helpers_version(fn)(*args, **kwargs)
                    if failed:
                        raw_eager.stop(fn)
                if form is None:
                    out = rerun_if_rebound(fn, out, lambda: (current(), current()(
                        *args, **kwargs)), base)
                return keep(out, args)
            finally:
                quiet_exit(token)
        except Exception as e:
            _bad_call(e, base)
            _note_user_lines(e)
            raise
    transformed.__secant_generated__ = gen
    transformed.__secant_current__ = current      # (functools.wraps copies it: owner says
    current.owner = transformed                     # whose it is)
    transformed.__secant_staged__ = staged_gen
    transformed.__secant_reads__ = (base, positions, "grad")
    transformed.__secant_objects_of__ = lambda args: _objects_generated(
        base, args, positions, mode, has_aux, tuple_out)      # (vmap of it, given objects)
    transformed.__name__ = transformed.__qualname__ = gen.__name__
    if own_code:    # (jit of a fresh closure: made again around a copy, secant/jit_closures.py)
        transformed.__secant_rebuild__ = (base, (mode, positions, has_aux, tuple_out),
                                          lambda new: _transform(new, argnums, mode, has_aux))
    return show_source(transformed)


def _eager_generated(base, positions, mode, has_aux, tuple_out, own_code):
    """grad's eager derivative of `base`: generated, or with the persistent cache's index on,
    loaded from the source a process generated before (secant/gen_index.py)."""
    from secant import gen_index
    name = gen_index.key(base, positions, mode, has_aux, tuple_out) if own_code else None
    if name is not None and base not in _TRACED_PER_CALL and not fresh_function(base) \
            and code_cache.lookup(base, tuple(positions), mode, has_aux, tuple_out, False, None,
                                  _current) is None:
        gen = gen_index.load(name, base)
        if gen is not None:     # (what it is made from, as _generate_cached records: restaged)
            gen.__secant_made_from__ = (base, tuple(positions), mode, has_aux, tuple_out, None)
            return gen
    was = _lazy_build.__dict__.get("on", False)
    _lazy_build.on = True
    try:
        gen = generate(base, positions, mode, has_aux, tuple_out)
    finally:
        _lazy_build.on = was
    if name is not None:
        gen_index.store(name, base, gen)
    return gen


_STARRED = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _plain(fn):
    """Whether `fn` is a plain function whose signature its code tells (no wrapper attributes,
    no __signature__: inspect.signature would read just its code), as a fresh lambda is."""
    return type(fn) is types.FunctionType and all(k == _CACHE_ATTR for k in fn.__dict__)


def _variadic(fn):
    from secant.transformer.callees import is_variadic
    if _plain(fn) and not fn.__code__.co_flags & _STARRED:
        return False        # (the common case, without building its signature: issue 19)
    return inspect.isfunction(fn) and is_variadic(fn) \
        and not getattr(fn, "__secant_custom__", False) \
        and (getattr(fn, "__secant_variadic__", None) is not None
             or not (fn.__module__ or "").startswith("secant")
             or fn.__globals__.get("__secant_by_source__", False))   # snp.atleast_3d's source


def _library_variadic(fun):
    """A secant library function with *args that is not read by source (lax.cond, lax.switch):
    never read its implementation; the transforms read a call of it instead."""
    from secant.transformer.callees import is_variadic
    return inspect.isfunction(fun) and (fun.__module__ or "").split(".")[0] == "secant" \
        and is_variadic(fun) \
        and not fun.__globals__.get("__secant_by_source__", False) \
        and not hasattr(fun, "__secant_source__") and not hasattr(fun, "__secant_variadic__")


def _read_form(fun):
    """What the transforms read for `fun`: a library function's composite source (snp.atleast_3d
    is read through `def atleast_3d(*arys)`), else `fun` unwrapped."""
    fun = _unwrap(fun)
    if _library_variadic(fun):
        return _op_function(fun)
    return getattr(fun, "__secant_composite__", None) or fun


def _per_call(fn):
    """Whether `fn` is vmap(f), whose batched function depends on which of f's parameters a
    call passes (those left at their defaults are not mapped): generated per call shape."""
    return getattr(fn, "__secant_call_gen__", None) is not None


def _shaped(base, args, kwargs):
    """`base` (with *args / **kwargs) for one call's shape (transformer/callees.py)."""
    from secant.transformer.callees import specialise
    inner = getattr(base, "__secant_variadic__", None)
    if callable(inner):         # vmap(vmap(f)) of a variadic f: the inner one for this shape
        return inner(args, kwargs)
    if _per_call(base):         # vmap(f): the batched f for the parameters this call passes
        by_call = base.__secant_call_gen__(len(args), tuple(kwargs))
        if by_call is not None:
            return by_call
        base = _unwrap(base)
        inner = getattr(base, "__secant_variadic__", None)
    if inner is not None:       # grad(grad(f)) of a variadic f: the inner one for this shape
        fun, positions, mode, has_aux, tuple_out = inner
        return generate(_shaped(_op_function(fun), args, kwargs), positions, mode, has_aux,
                        tuple_out)
    return specialise(base, len(args), tuple(kwargs))


def _transform_variadic(fun, base, positions, mode, has_aux, tuple_out):
    """grad of `def f(*xs)`: argnums index the positional arguments of the call, as in JAX;
    the derivative is generated once per call shape (number of arguments, keywords)."""
    positions = tuple(p % len(positions) if p < 0 else p for p in positions)

    def transformed(*args, **kwargs):
        args = _as_arrays(args, positions)
        _check_differentiable(args, positions, mode)
        shaped = _shaped(base, args, kwargs)
        try:
            if active_trace() is None:
                gen = generate(shaped, positions, mode, has_aux, tuple_out)
            else:
                gen = generate(staged(shaped), positions, mode, has_aux, tuple_out, staged=True)
            return _in_parameter_dtypes(gen(*args, **kwargs), args, positions, mode, has_aux,
                                        tuple_out)
        except Exception as e:
            _note_user_lines(e)
            raise
    transformed.__name__ = transformed.__qualname__ = f"{base.__name__}_{mode}"
    transformed.__secant_reads__ = (base, positions, mode)
    transformed.__secant_variadic__ = (fun, positions, mode, has_aux, tuple_out)
    transformed.__secant_source_error__ = SecantValueError(
        f"{mode} of {base.__qualname__} (a function with *args or **kwargs) is generated per "
        "call shape (number of arguments and keywords), so it has no one source; name the "
        f"parameters of {base.__name__} to see it")
    return transformed


def _bad_call(exc, fn):
    """Arguments that do not fit the function (a TypeError raised by the call itself, not inside
    it): Python's message under the user's function name, at the caller's line."""
    if isinstance(exc, TypeError) and not isinstance(exc, SecantError) \
            and exc.__traceback__ is not None and exc.__traceback__.tb_next is None:
        import re
        name = getattr(fn, "__name__", "f")
        raise SecantTypeError(re.sub(r"^[\w.<>]*\(\)", f"{name}()", str(exc)) + where()) \
            from None


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
            note = (f"  {filename} line {line} comes from {user_file}, line {user_line}: "
                    f"{text}")
            if note not in notes:           # once each, even through deep recursion
                notes.append(note)
        tb = tb.tb_next
    if notes and not getattr(exc, "_secant_noted", False):
        exc.add_note("In generated code:\n" + "\n".join(notes))
        exc._secant_noted = True


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """The gradient of scalar-valued `fun` as a new, readable Python function.

    `inspect.getsource(grad(f))` (or `secant.source`) shows the generated derivative. A complex
    output needs holomorphic=True (complex inputs too), as in JAX: the result is f'(z).
    allow_int=True gives integer arguments float0 zeros (secant/grad_options.py)."""
    _options.check_reduce_axes(reduce_axes, "grad")
    if allow_int and not holomorphic:
        return _options.allow_int(fun, argnums, has_aux, False,
                                  lambda nums, fn=fun: grad(fn, nums, has_aux),
                                  lambda f: _positions(argnums, _op_function(f)))
    if holomorphic:
        return _holomorphic(fun, argnums, has_aux, with_value=False)
    return _transform(fun, argnums, "grad", has_aux)


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
    _options.check_reduce_axes(reduce_axes, "grad")
    if allow_int and not holomorphic:
        return _options.allow_int(fun, argnums, has_aux, True,
                                  lambda nums, fn=fun: value_and_grad(fn, nums, has_aux),
                                  lambda f: _positions(argnums, _op_function(f)))
    if holomorphic:
        return _holomorphic(fun, argnums, has_aux, with_value=True)
    return _transform(fun, argnums, "value_and_grad", has_aux)


def _holomorphic(fun, argnums, has_aux, with_value):
    """grad(fun, holomorphic=True): the generated vjp of fun seeded with one (JAX's
    convention: for holomorphic fun, f'(z)); inputs and output must be complex."""
    base = _op_function(fun)
    positions = _positions(argnums, base)

    @functools.wraps(base)
    def holomorphic_grad(*args):
        args = _as_arrays(args, positions)
        for i in positions:
            for leaf in tree_util.tree_leaves(args[i]):
                if not dtypes.is_complex(_dtype_of(leaf)):
                    raise SecantTypeError(
                        "grad with holomorphic=True requires inputs with complex dtype, but got "
                        f"{_dtype_of(leaf).name}{where()}")
        tracing = active_trace() is not None
        gen = generate(_op_function(staged(fun)) if tracing else base, positions, "vjp",
                       staged=tracing)
        res = (_functionalized(fun) if tracing else fun)(*args)
        out, aux = res if has_aux else (res, None)
        if np.shape(out) != () or not dtypes.is_complex(_dtype_of(out)):
            raise SecantTypeError("grad with holomorphic=True requires a scalar output with "
                                  f"complex dtype, but got {_dtype_of(out).name}"
                                  f"{list(np.shape(out))}{where()}")
        ct = snp.ones_like(out)
        grads = gen((ct, _zeros_tree(aux)) if has_aux else ct, *args)
        if not isinstance(argnums, int) and len(positions) == 1:
            grads = (grads,)
        result = (grads, aux) if has_aux else grads
        return ((out, aux) if has_aux else out, grads) if with_value else result
    source = None if has_aux or with_value else _holomorphic_source(base, positions, argnums)
    if source is None:
        return opaque(holomorphic_grad, "grad(..., holomorphic=True) with has_aux or a value "
                      "cannot be transformed again yet (its seed is applied at run time); "
                      "apply the other transform inside")
    holomorphic_grad.__secant_generated__ = source
    return holomorphic_grad


def _holomorphic_source(base, positions, argnums):
    """What the transforms read for grad(f, holomorphic=True) (jit, vmap, grad of it):

        def f_holomorphic_grad(z):
            # grad(f, holomorphic=True): f'(z), the vjp of f seeded with one
            out = f(z)
            return f_vjp(snp.ones_like(out), z)

    None where f's parameters are not plain positional ones."""
    try:
        params = list(inspect.signature(base).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return None
    names = Names([p.name for p in params])
    args = ", ".join(p.name for p in params)
    fn = names.fresh(base.__name__ if base.__name__.isidentifier() else "f")
    vjp, out = names.fresh(f"{fn}_vjp"), names.fresh("out")
    name = names.fresh(f"{fn}_holomorphic_grad")
    call = f"{vjp}(snp.ones_like({out}), {args})"
    if not isinstance(argnums, int) and len(positions) == 1:
        call = f"({call},)"
    source = (f"def {name}({args}):\n"
              f"    # grad({fn}, holomorphic=True): {fn}'(z), the vjp of {fn} seeded with one\n"
              f"    {out} = {fn}({args})\n"
              f"    return {call}\n")
    return load_generated(source, name, getattr(base, "__globals__", {}),
                          {fn: base, vjp: generate(base, positions, "vjp"), "snp": snp})


def _functionalized(fun):
    from secant.transformer.functionalize import functionalize
    return functionalize(fun)


# `grad(f)(x)` written in code a transform reads is read as the call of the generated function
# (read in code a transform reads: transformer/normalize.py _made_by_factory; "argnums": the
# positions it differentiates are given, so a lifted function's extra parameters are not)
grad.__secant_factory__ = value_and_grad.__secant_factory__ = "argnums"


def vjp(fun, *primals, has_aux=False, reduce_axes=()):
    """(fun(*primals), vjp_fun): vjp_fun(cotangent) returns one cotangent per primal."""
    _options.check_reduce_axes(reduce_axes, "vjp")
    tracing = active_trace() is not None
    if _per_call(fun):
        fun = _shaped(fun, primals, {})
    elif _variadic(_read_form(fun)):
        fun = _shaped(_read_form(fun), primals, {})
    base = _op_function(staged(fun) if tracing else fun)
    ints = tuple(i for i, p in enumerate(primals) if _options.all_int(p))  # (float0 cotangents)
    positions = tuple(i for i in range(len(primals)) if i not in ints)
    primals = _as_arrays(primals, range(len(primals)))     # (as JAX: all of them arrays)
    base = _objects_form(base, primals) or base             # (d * d of user objects: __mul__)
    try:
        gen = generate(base, positions, "vjp", has_aux=False, staged=tracing) if positions \
            else None
    except SecantError as e:
        if not getattr(e, "state_rerun", False) or tracing or has_aux or positions != (0,) \
                or len(primals) != 1 or not isinstance(base, types.FunctionType):
            raise
        return _forward_vjp(base, primals[0], e)
    if tracing:
        from secant.transformer.functionalize import functionalize
        fun = functionalize(fun)
    else:       # the output of what the derivative reads (`y[i] = v` runs as y.at[i].set(v),
        form = runnable(fun)                # in fun or in a function it calls)
        fun = form if form is not fun else desugar(fun)
    out = fun(*primals)
    aux = None
    if has_aux:
        out, aux = out

    vjp_fun = _vjp_closure(gen, primals, aux if has_aux else _NO_AUX, out, ints,
                           None if tracing else data_read(base))
    return (out, vjp_fun, aux) if has_aux else (out, vjp_fun)


_NO_AUX = object()


def _forward_vjp(fn, x, error):
    """vjp(fn, x) where fn's reverse pass would read Python state again (ad/reverse.py
    _state_error): fn's output and Jacobian from one forward-mode run (its jvp over x's basis,
    the user's one call, as JAX's vjp runs fn once), the pullback their contraction. An output
    that is not one array raises `error`."""
    source = _jacobian_source(_Jacobian(fn, 0, False, "jacfwd"), grad="vjp")
    if source is None:
        raise error
    out, jac = source(x)
    if not isinstance(out, Array):
        raise error

    def vjp_fun(ct):
        if np.shape(ct) != np.shape(out):
            raise SecantValueError(f"the cotangent's shape {np.shape(ct)} is not the output's "
                                   f"{np.shape(out)}" + where())
        return (snp.tensordot(ct, jac, axes=np.ndim(out)),)
    return out, vjp_fun


def vjp_pullback(fun, n):
    """The pullback `vjp(fun, *primals)` returns, as a function of the primals too:
    `f_pullback(x, y, cotangent, *rest)` -> the cotangents of fun's first n parameters (a
    tuple); `rest`, fun's further parameters, held fixed (a lambda's free locals, lifted). Its
    source is generated, so a transform of the code calling vjp reads it as any function
    (transformer/vjp_calls.py writes `pb(ct)` as a call of it)."""
    gen = generate(_op_function(fun), tuple(range(n)), "vjp")
    # one per derivative and n, kept on it: a vjp called again (each step of a loop: odeint's
    # adjoint) returns the same function, whose transforms are then built once, not once a
    # call (a hessian of odeint: 780 jvp transforms of fresh pullbacks, issue 19)
    made = getattr(gen, "__secant_pullbacks__", {}).get(n)
    if made is not None:
        return made
    params = list(inspect.signature(gen).parameters)[1:]
    names = Names(set(params) | {gen.__name__})
    ct = names.fresh("cotangent")
    base = gen.__name__[:-len("_vjp")] if gen.__name__.endswith("_vjp") else gen.__name__
    name = names.fresh(f"{base}_pullback")
    call = f"{gen.__name__}({', '.join([ct] + params)})"
    source = f"def {name}({', '.join(params[:n] + [ct] + params[n:])}):\n" \
             f"    return {call if n > 1 else f'({call},)'}\n"
    pullback = load_generated(source, name, {}, {gen.__name__: gen})

    def made(*args):
        return pullback(*args)
    made.__secant_generated__ = pullback            # (what transforms read)
    if isinstance(gen, types.FunctionType):
        gen.__dict__.setdefault("__secant_pullbacks__", {})[n] = made
    return made


vjp_pullback.__secant_factory__ = "argnums"


def _vjp_closure(gen, primals, aux, out, ints=(), state=None):
    """vjp's `vjp_fun`, as generated source (so grad, vmap and jit read it like any function):
    `def f_vjp_fun(out_bar): return f_vjp(out_bar, x, w)` with the primals bound by name, the
    cotangent checked against the output's structure, shapes and dtypes (as JAX checks it).
    An integer or boolean primal (positions `ints`, which gen does not differentiate) gets
    float0 zeros as its cotangent, as in JAX."""
    from secant.ad.custom_checks import output_spec, vjp_cotangent
    params = list(signature_of(gen).parameters)[1:1 + len(primals)] if gen else \
        [f"primal{i}" for i in range(len(primals))]
    names = Names(set(params) | {getattr(gen, "__name__", "vjp"), "vjp_cotangent"})
    name = names.fresh(f"{getattr(gen, '__name__', 'vjp')}_fun")
    ct = names.fresh("cotangent")
    spec = names.fresh("out_spec")
    free = {getattr(gen, "__name__", name): gen, **dict(zip(params, primals)), "vjp_cotangent": vjp_cotangent,
            spec: output_spec(out)}
    free[spec].state = state     # (the values it read: rebound before the pullback, refused)
    check = f"    {ct} = vjp_cotangent({ct}, {spec})\n"
    seed = ct
    if aux is not _NO_AUX:          # aux's cotangent: zeros
        zeros = names.fresh("aux_bar")
        free[zeros] = _zeros_tree(aux)
        seed = f"({ct}, {zeros})"
    if ints:
        zeros = [names.fresh(f"{params[i]}_float0") for i in ints]
        free.update({z: _options.float0_zeros(primals[i]) for z, i in zip(zeros, ints)})
        bars = [names.fresh(f"{p}_bar") for i, p in enumerate(params) if i not in ints]
        cts = iter(bars)
        result = ", ".join(zeros[ints.index(i)] if i in ints else next(cts)
                           for i in range(len(params)))
        unpack = f"    {', '.join(bars)} = {gen.__name__}({', '.join([seed] + params)})\n" \
            if bars else ""         # (gen returns a tuple for two or more positions)
        source = f"def {name}({ct}):\n{check}{unpack}    return ({result},)\n"
    else:
        call = f"{gen.__name__}({', '.join([seed] + params)})"
        source = (f"def {name}({ct}):\n{check}    return {call}\n" if len(primals) > 1 else
                  f"def {name}({ct}):\n{check}    return ({call},)\n")
    fun = _load_again(source, name, free)
    fun.__secant_saves__ = gen      # secant.save writes the vjp (its primals are arguments)
    return fun


STAGES = ("source", "functionalised", "normalised", "generated")


def source(fn, stage="generated"):
    """The source text of a generated (or any) function; for `jit(f)`, the source jit traces
    (f with its Python control flow rewritten into secant.lax calls). For a transformed function,
    `stage` shows a step of the pipeline instead: "source" (the function the transform read),
    "functionalised" (its Python control flow on traced values as secant.lax calls, what jit
    reads), "normalised" (the canonical form the transform reads: one op per line, each under
    the line of yours it comes from) or "generated" (the result)."""
    from secant.api import JitFunction
    from secant.transformer.functionalize import functionalized_source
    stage = {"functionalized": "functionalised", "normalized": "normalised"}.get(stage, stage)
    if stage not in STAGES:
        raise SecantValueError(f"unknown stage {stage!r}; choose one of {STAGES}{where()}")
    if stage != "generated":
        reads = getattr(fn, "__secant_reads__", None)
        if reads is None and isinstance(fn, JitFunction):
            reads = (fn._fun, None, "jit")
        if reads is None:
            reads = (fn, None, "grad")
        fun, positions, mode = reads
        if stage == "source":
            return source(fun)
        if stage == "functionalised":
            return functionalized_source(_op_function(fun))
        if mode == "jit":
            raise SecantValueError("jit reads the functionalised source; it has no normalised "
                                   "stage (transforms such as grad and vmap have)" + where())
        return _normalised_source(_op_function(fun), positions, mode)
    if getattr(fn, "__secant_pmap__", False):     # pmap(f): the program each device runs
        return fn.per_device_source()
    if isinstance(fn, JitFunction):
        return functionalized_source(fn._fun)
    error = getattr(fn, "__secant_source_error__", None)
    if error is not None:
        raise error
    target = getattr(fn, "__secant_shows__", None) or (
        _unwrap(fn) if getattr(fn, "__secant_generated__", None) else fn)
    lazy = getattr(target, "__secant_lazy__", None)
    if lazy is not None:    # (grad of a function traced on each call: its trace taken now,
        target = lazy()     # as jax.make_jaxpr traces, and the derivative of that shown)
    if inspect.isfunction(target) and getattr(target, "__secant_source__", None) is None:
        target = _faithful(target)      # its trace, when its own text is absent or stale
        if getattr(target, "__secant_source__", None) is None:   # (never __wrapped__'s text)
            import textwrap
            return textwrap.dedent("".join(inspect.getsourcelines(target.__code__)[0]))
    return inspect.getsource(target)


def _normalised_source(fn, positions, mode):
    from secant.transformer.show import to_source
    fn = desugar(_faithful(fn))     # what the transforms normalise
    if positions is None:       # a plain function: every positional parameter tracked
        sig = inspect.signature(fn, follow_wrapped=False)
        positions = range(len([p for p in sig.parameters.values()
                               if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]))
    if mode == "vmap":
        opaque = batch_rules.opaque({**helpers.by_name(), **batch_helpers.by_name()})
        try:
            return to_source(normalise(fn, tuple(positions), "vmap", opaque,
                                       outputs_of=_outputs_batched(False, None)))
        except SecantError as e:    # an `if` on a batched value: vmap reads the lax.cond form
            if not getattr(e, "batched_test", False):
                raise
            return to_source(normalise(_op_function(staged(fn)), tuple(positions), "vmap",
                                       opaque, outputs_of=_outputs_batched(False, None)))
    return to_source(normalise(fn, tuple(positions), outputs_of=_outputs_active(False, "vjp")))


# --- forward mode: jvp, linearize, jacobians, hessian ------------------------------------------
# ad/forward.py writes the jvp of a function (`f_jvp(x, y, x_dot, y_dot)` -> (out, out_dot));
# these are the faces JAX users know. Jacobians vmap the generated jvp over the standard basis of
# the inputs (jacfwd) or the generated vjp over that of the outputs (jacrev): one batched call;
# a Jacobian of a Jacobian vmaps over both bases (a vmap of the vmap) where it goes by columns.
_FLOAT0 = np.dtype([("float0", np.void, 0)])      # jax.dtypes.float0: tangents of int primals


def _base(fun, args=None):
    """What the transforms read for `fun`: its staged form while jit traces; vmap(f) for the
    parameters a call with `args` passes; the form of it that knows which of `args` are user
    objects with operators (transformer/operators.py), as grad's, jvp's and vmap's wrappers
    pick it."""
    if args is not None and _per_call(fun) and active_trace() is None:
        return _shaped(fun, args, {})
    if args is not None:        # user objects with operators among args: fun's form for them
        fun = _objects_form(fun, args) or _objects_form(_op_function(fun), args) or fun
    return _op_function(staged(fun) if active_trace() is not None else fun)


def _staging():
    return active_trace() is not None


def _jvp_generated(fun, positions, has_aux=False):
    return generate(_base(fun), tuple(positions), "jvp", has_aux, staged=_staging())


def _dtype_of(x):
    if isinstance(x, np.ndarray) and x.dtype == _FLOAT0:
        return _FLOAT0
    return dtypes.canonicalize_dtype(snp.result_type(x))


def _check_jvp_args(primals, tangents):
    """JAX's checks (and messages) for jvp's primals and tangents."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise SecantTypeError("primal and tangent arguments to secant.jvp must be tuples or "
                              f"lists; found {type(primals).__name__} and "
                              f"{type(tangents).__name__}.{where()}")
    p_leaves, p_tree = tree_util.tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_util.tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise SecantTypeError("primal and tangent arguments to secant.jvp must have the same "
                              f"tree structure; primals have tree structure {p_tree} whereas "
                              f"tangents have tree structure {t_tree}.{where()}")
    for p, t in zip(p_leaves, t_leaves):
        pd, td = _dtype_of(p), _dtype_of(t)
        expected = pd if dtypes.is_inexact(pd) else _FLOAT0
        if td != expected:
            raise SecantTypeError(
                "primal and tangent arguments to secant.jvp do not match; dtypes must be equal, "
                "or in case of int/bool primal dtype the tangent dtype must be float0. Got "
                f"primal dtype {pd} and so expected tangent dtype {expected}, but got tangent "
                f"dtype {td} instead.{where()}")
        if np.shape(p) != np.shape(t):
            raise SecantValueError("jvp called with different primal and tangent shapes; Got "
                                   f"primal shape {np.shape(p)} and tangent shape as "
                                   f"{np.shape(t)}{where()}")


def _active(primals):
    """Positions of the primals that carry tangents: those whose leaves are all inexact."""
    return tuple(i for i, p in enumerate(primals)
                 if tree_util.tree_leaves(p)
                 and all(dtypes.is_inexact(_dtype_of(leaf)) for leaf in tree_util.tree_leaves(p)))


def _zeros_tree(tree):
    return tree_util.tree_map(lambda leaf: snp.zeros_like(leaf), tree)


def _float0_tangents(out):
    """jvp's (out, out_dot, ...) with JAX's tangent of each output leaf: float0 zeros for an
    integer or bool output (the generated derivative's are zeros of the output's own dtype)."""
    p_leaves, p_def = tree_util.tree_flatten(out[0])
    t_leaves = tree_util.tree_leaves(no_refused_tangent(out[1]))

    def dtype(p):       # (a Python int or bool a branch of an eager lax.cond returned: its own)
        return getattr(p, "dtype", None) or (np.dtype(type(p)) if isinstance(
            p, (bool, int)) else None)
    if len(p_leaves) != len(t_leaves) or all(
            dtype(p) is not None and dtypes.is_inexact(dtype(p)) for p in p_leaves):
        return out

    def tangent(p, t):
        dt = dtype(p)
        if dt is None or dt == _FLOAT0:
            return t
        return t if dtypes.is_inexact(dt) else np.zeros(np.shape(p), _FLOAT0)
    return (out[0], tree_util.tree_unflatten(p_def, [tangent(p, t) for p, t in zip(
        p_leaves, t_leaves)])) + tuple(out[2:])


def jvp(fun, primals, tangents, has_aux=False):
    """(fun(*primals), the directional derivative of fun at primals along tangents), as JAX's
    jvp; with has_aux=True fun returns (output, aux) and jvp returns (out, out_dot, aux).

    The derivative is generated source (ad/forward.py): `secant.source(secant.jvp_fn(fun))`
    or `secant.source(secant.linearize(fun, *primals)[1])` shows it."""
    _check_jvp_args(primals, tangents)
    if isinstance(fun, _Jacobian):
        if has_aux:
            raise SecantTypeError(f"jvp(..., has_aux=True) of a jacobian is not supported{where()}")
        return fun._jvp(tuple(primals), tuple(tangents))
    active = _active(primals)
    primals = _as_arrays(tuple(primals), active)
    tangents = [_as_arrays((tangents[i],), (0,))[0] for i in active]
    if not active:
        res = fun(*primals)
        out, aux = res if has_aux else (res, None)
        return _float0_tangents((out, _zeros_tree(out), aux) if has_aux else
                                (out, _zeros_tree(out)))
    if _per_call(fun):
        fun = _shaped(fun, primals, {})
    elif _variadic(_read_form(fun)):
        fun = _shaped(_read_form(fun), primals, {})
    fun = _objects_form(fun, primals) or fun
    def run():
        gen = _jvp_generated(fun, active, has_aux)
        if reads_computed(gen, primals):    # (an object's __getattr__ computes a name read
            gen = _jvp_generated(fun, active, has_aux)      # as a field: generated again)
        names, keyword, _ = forward._tangent_params(gen, len(active))
        if keyword:         # fun has parameters with defaults: tangents go by keyword
            return gen, gen(*primals, **dict(zip(names, tangents)))
        return gen, gen(*primals, *tangents)
    from secant.transformer.trace_source import once_per_call
    try:
        try:
            with RetryAnswered(fun) as answered, once_per_call():
                gen, out = rerun_if_met(run)
                out = rerun_if_rebound(gen, out, run, fun)
            answered.escalated()        # (answered from this call's values: traced whole
            return _float0_tangents(out)    # from the next call)
        except SecantError as e:
            # a callee known only at run time that no transform takes: fun traced whole,
            # with the call's arguments, instead (traced_for_call_instead)
            if not traced_for_call_instead(fun, e):
                raise
        with once_per_call():
            return _float0_tangents(run()[1])
    except Exception as e:
        _note_user_lines(e)
        raise


def jvp_fn(fun, argnums=None, has_aux=False):
    """The forward-mode derivative of `fun` as a new, readable Python function:
    `jvp_fn(f)(x, y, x_dot, y_dot)` returns `(f(x, y), out_dot)` (`argnums`: the parameters
    that take a tangent, all positional ones by default; with has_aux, `(out, out_dot, aux)`).

    `inspect.getsource(jvp_fn(f))` / `secant.source` show it; it can be called from code that
    grad, jvp or jit transform again."""
    base = _op_function(fun)
    if argnums is None:
        n = len([p for p in inspect.signature(base, follow_wrapped=False).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
        positions = tuple(range(n))
    else:
        positions = _positions(argnums, base)
    gen = generate(base, positions, "jvp", has_aux)

    def staged_gen():
        return generate(_op_function(staged(fun)), positions, "jvp", has_aux, staged=True)

    n_params = len([p for p in inspect.signature(gen).parameters.values()
                    if p.kind == p.POSITIONAL_OR_KEYWORD]) - len(positions)
    converted = positions + tuple(range(n_params, n_params + len(positions)))

    def current():
        nonlocal gen
        if not _current(gen):       # a callee it resolved was rebound: generate it again
            gen = transformed.__secant_generated__ = generate(_op_function(fun), positions,
                                                              "jvp", has_aux)
        return gen

    @functools.wraps(gen)
    def transformed(*args, **kwargs):
        args = _as_arrays(args, converted)
        try:
            if active_trace() is not None:
                return staged_gen()(*args, **kwargs)
            fn = current()
            return rerun_if_rebound(fn, fn(*args, **kwargs), lambda: (current(), current()(
                *args, **kwargs)), base)
        except Exception as e:
            _bad_call(e, base)
            _note_user_lines(e)
            raise
    transformed.__secant_generated__ = gen
    transformed.__secant_current__ = current      # (functools.wraps copies it: owner says
    current.owner = transformed                     # whose it is)
    transformed.__secant_staged__ = staged_gen
    transformed.__secant_reads__ = (base, positions, "jvp")
    transformed.__signature__ = inspect.signature(gen)  # (a call's keyword tangents, read as is)
    return show_source(transformed)


def _jvp_call_form(fun, n):
    """(jvp_fn of `fun` differentiating its first n parameters, the argnums it needs (None: all
    positional ones, its default), the names its tangents take by keyword (None: positional,
    after the primals: `fun` has no parameter with a default)) for `secant.jvp(fun, ps, ts)` with
    n primals, in code a transform reads."""
    made = jvp_fn(fun)
    argnums = None
    if len(made.__secant_reads__[1]) != n:
        argnums = tuple(range(n))
        made = jvp_fn(fun, argnums=argnums)
    names, keyword, _ = forward._tangent_params(made.__secant_generated__, n)
    return made, argnums, names if keyword else None


_jvp_closed = weakref.WeakKeyDictionary()       # generated function -> its jvp_closed


def jvp_closed(fun):
    """`def jvp_of(primals, tangents): return jvp(fun, primals, tangents)`, generated once per
    function (code a transform reads calls it for `jvp(f, primals, tangents)` with f known
    only at run time; the transform of that call reads this source, f resolved)."""
    base = _unwrap(fun)
    try:
        hit = _jvp_closed.get(base)
    except TypeError:
        hit, base = None, None
    if hit is None:
        name = getattr(base or fun, "__name__", "fn")
        name = f"{name}_jvp_of" if name.isidentifier() else "jvp_of"
        hit = load_generated(f"def {name}(primals, tangents):\n"
                             f"    return jvp(fn, primals, tangents)\n", name, {},
                             {"jvp": jvp, "fn": fun})
        if base is not None:
            _jvp_closed[base] = hit
    return hit


# code that grad or jvp transforms reads `secant.jvp(f, ps, ts)` as `secant.jvp_fn(f)(*ps, *ts)`
jvp.__secant_call_form__ = ("jvp_fn", _jvp_call_form)
jvp_fn.__secant_factory__ = True
jvp_closed.__secant_factory__ = True    # jvp_closed(f) with f a parameter: a dynamic call


def linearize(fun, *primals, has_aux=False):
    """(fun(*primals), f_jvp) as JAX's linearize: f_jvp(*tangents) is the derivative of fun at
    primals along tangents; with has_aux=True fun returns (output, aux) and linearize returns
    (output, f_jvp, aux). `secant.source(f_jvp)` shows the generated jvp it runs."""
    positions = tuple(range(len(primals)))
    primals = _as_arrays(primals, positions)
    _check_differentiable(primals, positions, "linearize")
    if active_trace() is None and _sets_python_state(fun):
        return _forward_linearize(fun, primals, has_aux)
    gen = _jvp_generated(fun, positions, has_aux)
    res = gen(*primals, *[_zeros_tree(p) for p in primals])
    out = res[0]
    primal_tree = tree_util.tree_structure(primals)
    state = data_read(_base(fun)) if active_trace() is None else None

    def f_jvp(*tangents):
        name = changed_since(state) if state else None
        if name is not None:
            raise SecantValueError(
                f"{name} was rebound since linearize was called: the linearized function "
                "computes the function again and would read its new value, where JAX's "
                f"keeps the value linearize's call read; call linearize again{where()}")
        if tree_util.tree_structure(tangents) != primal_tree:
            raise SecantValueError(
                "linearized function called on tangent values inconsistent with the original "
                f"primal values: tangents have tree structure {tree_util.tree_structure(tangents)}"
                f" whereas the primals have tree structure {primal_tree}{where()}")
        for p, t in zip(tree_util.tree_leaves(primals), tree_util.tree_leaves(tangents)):
            if np.shape(p) != np.shape(t) or _dtype_of(p) != _dtype_of(t):
                raise SecantValueError(
                    "linearized function called on tangent values inconsistent with the "
                    f"original primal values: got tangent {_dtype_of(t)}{list(np.shape(t))} "
                    f"for primal {_dtype_of(p)}{list(np.shape(p))}{where()}")
        return no_refused_tangent(gen(*primals, *_as_arrays(tangents, positions))[1])

    # what transforms of f_jvp read (vmap(f_jvp)): a function of the tangents alone, the
    # primals held in it, as f_jvp runs
    names = Names()
    held = [names.fresh(f"primal_{i}") for i in range(len(primals))]
    params = [names.fresh(f"tangent_{i}") for i in range(len(primals))]
    name = names.fresh(f"{gen.__name__}_at")
    source = f"def {name}({', '.join(params)}):\n" \
             f"    return {gen.__name__}({', '.join(held + params)})[1]\n"
    f_jvp.__secant_generated__ = load_generated(source, name, {}, {
        gen.__name__: gen, **dict(zip(held, primals))})
    f_jvp.__secant_shows__ = gen            # (secant.source: the jvp it runs)
    f_jvp.__name__ = f_jvp.__qualname__ = gen.__name__
    return (out, f_jvp, res[2]) if has_aux else (out, f_jvp)


def _sets_python_state(fun):
    """Whether the user's function `fun` sets Python state (a counter, an RNG object's key, a
    list it appends to: transformer/nonlocals.py), in itself or what it calls."""
    from secant.transformer.nonlocals import mutates_outside, reaches_state, reads_state_it_sets
    fn = _base(fun)
    if not isinstance(fn, types.FunctionType):
        return False
    return bool(reaches_state(fn) or reads_state_it_sets(fn) or mutates_outside(fn))


def _forward_linearize(fun, primals, has_aux):
    """linearize(fun, x) of a function that sets Python state: its output and Jacobian from
    one forward-mode run (the user's one call, as JAX's linearize traces fun once), the
    linearized function their contraction, which runs none of fun's Python again. Refused for
    several primals, aux, or an output that is not one array."""
    name = getattr(fun, "__qualname__", "the function")
    error = SecantValueError(
        f"{name} sets Python state (a counter, an object's field, a list it changes): "
        "linearize's function would run it again at each call and read another value; "
        "secant linearizes such a function of one array with one array output only (its "
        f"Jacobian taken at the call); use jvp, or pass the state in as an argument{where()}")
    if has_aux or len(primals) != 1 or not isinstance(primals[0], Array):
        raise error
    source = _jacobian_source(_Jacobian(_base(fun), 0, False, "jacfwd"), grad="vjp")
    if source is None:
        raise error
    x = primals[0]
    out, jac = source(x)
    if not isinstance(out, Array):
        raise error

    def f_jvp(t):
        if np.shape(t) != np.shape(x) or _dtype_of(t) != _dtype_of(x):
            raise SecantValueError(
                "linearized function called on tangent values inconsistent with the "
                f"original primal values: got tangent {_dtype_of(t)}{list(np.shape(t))} "
                f"for primal {_dtype_of(x)}{list(np.shape(x))}{where()}")
        return snp.tensordot(jac, t, axes=np.ndim(x))
    return out, f_jvp


def _basis(leaves):
    """The standard basis of the space of `leaves` (one element of one leaf set to one, all else
    zero), stacked: one array per leaf, of shape (n,) + leaf.shape."""
    sizes = [int(np.size(leaf)) for leaf in leaves]
    n = sum(sizes)
    if n == 0:
        raise SecantValueError(f"jacobians of zero-size arrays are not supported yet{where()}")
    eye = np.eye(n)
    basis, k = [], 0
    for leaf, size in zip(leaves, sizes):
        basis.append(eye[:, k:k + size].reshape((n,) + np.shape(leaf)).astype(_dtype_of(leaf)))
        k += size
    return basis, n


def _tangents_positional(gen, n):
    """`gen` (a jvp, whose tangents are keyword-only after primals with defaults) taking its
    first n parameters and then its keyword-only ones positionally, as vmap passes them: a
    generated adapter (vmap reads its source), or gen itself when it has none."""
    params = list(inspect.signature(gen).parameters.values())
    kw = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
    if not kw:
        return gen
    head = [p.name for p in params[:n]]
    name = f"{gen.__name__}_positional"
    call = ", ".join(head + [f"{k}={k}" for k in kw])
    source = f"def {name}({', '.join(head + kw)}):\n    return {gen.__name__}({call})\n"
    return load_generated(source, name, {}, {gen.__name__: gen})


def _without_effects(fn, positions):
    """`fn`'s replay form (ad/reverse.py: its forward pass without its Python side effects)
    where it has some (a callee appending to a list, bumping a counter), else `fn`: a Jacobian
    reads its output's layout from it where the derivative it runs then makes the user's one
    call, so each side effect runs once, as JAX's jacfwd/jacrev/hessian trace f once."""
    try:
        replay = generate(fn, tuple(positions), "replay", staged=_staging())
    except SecantError as e:    # (the derivative, generated next, says why)
        if getattr(e, "state_rerun", False):
            raise       # (fn itself would run its state's call twice: once here, once after)
        return fn
    why = _TRACED_PER_CALL.get(fn) if isinstance(fn, types.FunctionType) else None
    if why is not None:     # (traced on each call: its trace, taken once for the call, whose
        from secant.transformer.trace_source import retraced      # run made the effects)
        return retraced(fn, why)
    return replay if getattr(replay, "__secant_effects__", False) else fn


def _vmapped(gen, in_axes, *args, outer_axes=None, size=None):
    """gen mapped over the batched arguments (in_axes) by its generated batched function: one
    call for the whole basis of a Jacobian (and, with outer_axes, for every basis vector of an
    outer Jacobian too: a vmap of the vmap). size: the basis's size; a basis of one vector (the
    jacrev of a scalar function, as the Hessian's inner one) is gen's one call on it, its
    outputs given the axis, not gen batched over one example (code generated, traced and
    compiled for nothing: a vmap of the vmap for a Hessian)."""
    from secant.batch import vmap
    if size == 1:
        args = [_first(a, ax) for a, ax in zip(args, in_axes)]
        if outer_axes is None:
            return tree_util.tree_map(lambda leaf: snp.expand_dims(leaf, 0), gen(*args))
        return tree_util.tree_map(lambda leaf: snp.expand_dims(leaf, 1),
                                  vmap(gen, in_axes=tuple(outer_axes))(*args))
    fn = vmap(gen, in_axes=tuple(in_axes))
    if outer_axes is not None:
        fn = vmap(fn, in_axes=tuple(outer_axes))
    return fn(*args)



def _first(arg, axes):
    """`arg` (a pytree mapped by `axes`: 0, None, or a tuple of those for a tuple) with each
    mapped leaf's first example."""
    if axes is None:
        return arg
    if axes == 0:
        return tree_util.tree_map(lambda leaf: leaf[0], arg)
    return tuple(_first(a, ax) for a, ax in zip(arg, axes))


_BATCHED_ROWS = 1 << 24     # (elements of a Jacobian's rows' stacked factors taken at once)


def _over_basis(fn, leaves):
    """`fn` (a Python function that vmap cannot read: a Jacobian of a Jacobian) on each vector
    of the standard basis of the space of `leaves` (`fn` takes and returns lists of leaves), its
    outputs stacked along a new leading axis. Eagerly a Python loop; while jit traces, one
    lax.map (a single rolled loop in the module)."""
    basis, n = _basis(leaves)
    if active_trace() is None:
        rows = [tree_util.tree_leaves(fn([b[i] for b in basis])) for i in range(n)]
        return [snp.stack(column) for column in zip(*rows)]
    return list(lax.map(lambda b: tuple(tree_util.tree_leaves(fn(list(b)))), tuple(basis)))


def _offsets(leaves):
    out, k = [], 0
    for leaf in leaves:
        n = int(np.size(leaf))
        out.append((k, k + n))
        k += n
    return out


class _Jacobian:
    """jacfwd(fun) / jacrev(fun): the Jacobian of `fun` with respect to `argnums`, shaped as
    JAX's (for each output leaf, a pytree like the differentiated arguments holding arrays of
    shape out.shape + in.shape). jacfwd runs the generated jvp on every input basis vector,
    jacrev the generated vjp on every output basis vector, each as one call of its generated
    batched function (vmap); a Jacobian of a Jacobian (hessian = jacfwd(jacrev(f))) takes jvps
    (or vjps) of those generated functions in turn."""

    def __init__(self, fun, argnums, has_aux, kind, holomorphic=False):
        self.fun, self.argnums, self.has_aux, self.kind = fun, argnums, has_aux, kind
        self.holomorphic = holomorphic
        inner = fun._inner if isinstance(fun, _Jacobian) else _op_function(fun)
        self.__signature__ = inspect.signature(inner, follow_wrapped=False)
        self.__name__ = self.__qualname__ = f"{getattr(inner, '__name__', 'f')}_{kind}"
        self.__doc__ = f"{kind} of {getattr(inner, '__qualname__', inner)}"
        self._inner = inner
        self._plan = None

    def __repr__(self):
        return f"<secant.{self.kind} of {getattr(self._inner, '__qualname__', self._inner)}>"

    __secant_jacobian__ = True

    @property
    def __secant_generated__(self):
        """The Jacobian as a generated function (for arrays in and out), which grad, jvp,
        vmap and another Jacobian read like any function: jacfwd calls the vmapped jvp of
        `fun` on basis_like(x), jacrev the vmapped vjp on basis_like(fun(x)). None where it
        has no such form (pytree arguments by argnums tuple, has_aux, holomorphic)."""
        if "_source_form" not in self.__dict__:
            self._source_form = _jacobian_source(self)
        return self._source_form

    def _positions(self):
        return _positions(self.argnums, self._inner)

    def _restaged(self):
        """This Jacobian of fun's restaged form (a Jacobian of it for a Jacobian of Jacobians):
        every function its source form calls derived from the user's staged function alike
        (its loops lax loops), where a vmap of it batches a Python while on a batched value."""
        if "_twin" not in self.__dict__:
            inner = self.fun._restaged() if isinstance(self.fun, _Jacobian) else \
                restaged(self.fun)
            self._twin = _Jacobian(inner, self.argnums, self.has_aux, self.kind,
                                   self.holomorphic)
        return self._twin

    @property
    def __secant_staged__(self):
        def make():     # (what jit and vmap's staged form read; where fun has none, itself)
            from secant.transformer.functionalize import unrolling
            if unrolling():     # (jit's trace again with Python loops as written: the
                return self     # restaged form's loops are lax loops)
            try:
                return self._restaged().__secant_generated__ or self
            except SecantError:
                return self
        return make

    def _shaped(self, args):
        """This Jacobian of `def f(*xs)` (through Jacobians of it) for this call's shape."""
        if isinstance(self.fun, _Jacobian):
            inner = self.fun._shaped(args)
        elif _variadic(_read_form(self.fun)):
            inner = _shaped(_read_form(self.fun), args, {})
        else:
            return self
        if inner is self.fun:
            return self
        return _Jacobian(inner, self.argnums, self.has_aux, self.kind, self.holomorphic)

    def _of_trace(self, args):
        """This Jacobian of the trace of fun taken with `args`, where fun is traced with each
        call's arguments (a run-time callee no transform takes): traced once for the call,
        its Python effects once, as its output's layout and its derivative both read that
        trace (each would trace fun again). Self otherwise."""
        inner = self._inner
        if active_trace() is not None or not isinstance(inner, types.FunctionType) \
                or inner not in _TRACED_WITH_ARGUMENTS or inner in _CALLEES_PER_CALL:
            return self
        from secant.transformer.trace_source import retraced
        names = _parameter_names(inner)
        if len(args) != len(names):
            return self
        positions = {names[p] for p in self._positions()}
        try:
            traced = retraced(inner, _TRACED_WITH_ARGUMENTS[inner][0], dict(zip(names, args)),
                              positions)
        except Exception:   # (not traceable with these arguments: the per-call form, whose
            return self     # refusal says why, not the trace's error on its stand-ins)

        def over(j):
            fun = over(j.fun) if isinstance(j.fun, _Jacobian) else traced
            return _Jacobian(fun, j.argnums, j.has_aux, j.kind, j.holomorphic)
        return over(self)

    def __call__(self, *args):
        shaped = self._shaped(args)             # def f(*xs): for this call
        if shaped is not self:
            return shaped(*args)
        traced = self._of_trace(args)
        if traced is not self:
            return traced(*args)
        positions = self._positions()
        args = _as_arrays(args, positions)
        _check_differentiable(args, positions, self.kind)
        def run():
            self._used = None
            out = self._run(args, positions)
            return self._used, out

        from secant.transformer.trace_source import once_per_call
        try:
            try:
                # (a run-time callee no transform takes: answered from this call's values,
                # the function traced whole from the next call; else traced whole now)
                with RetryAnswered(self._inner) as answered, once_per_call():
                    used, out = rerun_if_met(run)
                    if used is not None:        # (a callee rebound as it ran: run again)
                        out = rerun_if_rebound(used, out, run, self.fun)
                answered.escalated()
            except SecantError as e:
                if not traced_for_call_instead(self._inner, e):
                    raise
                with once_per_call():
                    used, out = run()
            jac, _, aux = out
        except Exception as e:
            _note_user_lines(e)
            raise
        return (jac, aux) if self.has_aux else jac

    def _jvp(self, primals, tangents):
        """(jac(primals), its derivative along tangents) for jvp of a Jacobian."""
        active = _active(primals)
        primals = _as_arrays(primals, active)
        tangents = [_as_arrays((tangents[i],), (0,))[0] for i in active]
        jac, jac_dot, _ = self._run(primals, self._positions(), (active, tangents))
        return jac, jac_dot

    def _out(self, args, quiet=False):
        """(fun's output, aux) at args (the Jacobian's rows and columns are laid out by it);
        quiet: where the derivative run next makes the user's call (a jvp), computed without
        fun's Python side effects, which that call runs (_without_effects)."""
        if isinstance(self.fun, _Jacobian):
            return self.fun._shape(args), None
        base = _base(self.fun, args)
        # (a function traced on each call: its trace, which its derivative took in this call,
        # holds no Python effects; running fun again would run them twice)
        base = _trace_taken(base) or base
        res = (_without_effects(base, self._positions()) if quiet else base)(*args)
        return res if self.has_aux else (res, None)

    def _laid_out(self, quiet, args, res, lead):
        """(fun's output, aux) for jacfwd, after its jvp ran (res: that jvp's outputs, `lead`
        axes of basis vectors ahead): the output's layout from `quiet` (fun without its Python
        side effects) run now, which reads the state the user's call left (a cache it filled),
        and aux the user's call's own (a counter it read; the quiet run reads the state
        again)."""
        out = quiet(*args)
        if not self.has_aux:
            return out, None
        first = (0,) * lead
        return out[0], tree_util.tree_map(lambda leaf: leaf[first], res[2])

    def _shape(self, args):
        """Zeros shaped like this Jacobian's value at args (its layout, not its value)."""
        out, _ = self._out(args, quiet=True)
        in_leaves, in_tree = tree_util.tree_flatten(tuple(args[p] for p in self._positions()))
        blocks = []
        for o in tree_util.tree_leaves(out):
            per_arg = tree_util.tree_unflatten(in_tree, [
                np.zeros(np.shape(o) + np.shape(leaf), _dtype_of(o)) for leaf in in_leaves])
            blocks.append(per_arg[0] if isinstance(self.argnums, int) else per_arg)
        return tree_util.tree_unflatten(tree_util.tree_structure(out), blocks)

    def _assemble(self, stacked, out, in_leaves, in_tree, by_column, lead=()):
        """The Jacobian pytree from the stacked columns (jvps, by_column) or rows (vjps);
        `lead`: the shape of leading axes every stacked array has first (several Jacobians)."""
        out_leaves, out_tree = tree_util.tree_flatten(out)
        in_offsets, out_offsets = _offsets(in_leaves), _offsets(out_leaves)
        keep = (slice(None),) * len(lead)
        blocks = []
        for j, (o, (o_lo, o_hi)) in enumerate(zip(out_leaves, out_offsets)):
            per_in = []
            for k, (leaf, (i_lo, i_hi)) in enumerate(zip(in_leaves, in_offsets)):
                if by_column:       # stacked[j]: (inputs, *o.shape)
                    block = snp.moveaxis(stacked[j][keep + (slice(i_lo, i_hi),)], len(lead), -1)
                else:               # stacked[k]: (outputs, *leaf.shape)
                    block = stacked[k][keep + (slice(o_lo, o_hi),)]
                per_in.append(block.reshape(tuple(lead) + np.shape(o) + np.shape(leaf)))
            per_arg = tree_util.tree_unflatten(in_tree, per_in)
            blocks.append(per_arg[0] if isinstance(self.argnums, int) else per_arg)
        return tree_util.tree_unflatten(out_tree, blocks)

    def _run(self, args, positions, outer=None, outer_batched=False):
        """(jacobian, its jvp along outer = (positions, tangents) or None, aux); outer_batched:
        the outer tangents hold a leading axis of several, and so does the jvp."""
        in_leaves, in_tree = tree_util.tree_flatten(tuple(args[p] for p in positions))
        if isinstance(self.fun, _Jacobian):
            return self._run_nested(args, positions, outer, in_leaves, in_tree)
        base = _base(self.fun, args)
        if self.kind != "jacfwd":   # (generated first, as grad's: a refusal runs no user code)
            try:
                gen = self._used = generate(base, positions, "vjp", staged=_staging())
            except SecantError as e:
                if not getattr(e, "state_rerun", False) or self.holomorphic:
                    raise
                # (its reverse pass would read Python state again: the same matrix by forward
                # mode, which runs fun once, as JAX's jacrev does)
                forward = _Jacobian(self.fun, self.argnums, self.has_aux, "jacfwd")
                out = forward._run(args, positions, outer, outer_batched)
                self._used = forward._used
                return out
        # (jacfwd's jvp runs fun's side effects; jacrev's vjp recomputes fun without them)
        if self.kind == "jacfwd":     # the generated jvp, vmapped over the input basis
            quiet = _without_effects(base, self._positions())   # (refused before fun runs)
            gen = self._used = generate(base, positions, "jvp", self.has_aux, staged=_staging())
            basis, size = _basis(in_leaves)
            tangents = tree_util.tree_unflatten(in_tree, basis)
            n_args, n_t = len(args), len(tangents)
            gen = _tangents_last(gen, n_t, n_args)
            if outer is None:
                res = _vmapped(gen, (None,) * n_args + (0,) * n_t, *args, *tangents, size=size)
                out, aux = self._laid_out(quiet, args, res, 1)
                stacked = tree_util.tree_leaves(res[1])
            else:
                gen2 = generate(gen, tuple(outer[0]), "jvp", staged=_staging())
                n_o = len(outer[1])
                res, res_dot = _vmapped(
                    gen2, (None,) * n_args + (0,) * n_t + (None,) * n_o, *args, *tangents,
                    *outer[1], outer_axes=(None,) * (n_args + n_t) + (0,) * n_o
                    if outer_batched else None, size=size)
                out, aux = self._laid_out(quiet, args, res, 2 if outer_batched else 1)
                n_out = len(tree_util.tree_leaves(out))
                if outer_batched:
                    rows = tree_util.tree_leaves(res_dot[1])
                    jac_dot = self._assemble(rows, out, in_leaves, in_tree, True,
                                             np.shape(rows[0])[:1])
                    res_1 = tree_util.tree_leaves(res[1])
                    jac = self._assemble([r[0] for r in res_1], out, in_leaves, in_tree, True)
                    return jac, jac_dot, aux
                stacked = tree_util.tree_leaves(res[1]) + tree_util.tree_leaves(res_dot[1])
            n_out = len(tree_util.tree_leaves(out))
            jac = self._assemble(stacked[:n_out], out, in_leaves, in_tree, True)
            jac_dot = None if outer is None else \
                self._assemble(stacked[n_out:], out, in_leaves, in_tree, True)
            return jac, jac_dot, aux
        # jacrev: one vjp per output element
        out, aux = self._out(args)
        n_out, n_in = len(tree_util.tree_leaves(out)), len(in_leaves)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        for leaf in out_leaves:
            dt = _dtype_of(leaf)
            if not dtypes.is_inexact(dt) or dtypes.is_complex(dt) and not self.holomorphic:
                raise SecantTypeError(f"jacrev requires real-valued outputs (a floating-point "
                                      f"dtype), but got {dt.name}{where()}")
        single = len(positions) == 1
        # the generated vjp, vmapped over the output basis (aux's cotangent: zeros, unbatched)
        basis, size = _basis(out_leaves)
        ct = tree_util.tree_unflatten(out_tree, basis)
        ct, ct_axes = ((ct, _zeros_tree(aux)), (0, None)) if self.has_aux else (ct, 0)
        if outer is None:
            grads = _vmapped(gen, (ct_axes,) + (None,) * len(args), ct, *args, size=size)
            stacked = tree_util.tree_leaves((grads,) if single else grads)
        else:
            gen2 = _tangents_positional(
                generate(gen, tuple(1 + p for p in outer[0]), "jvp", staged=_staging()),
                1 + len(args))
            n_o = len(outer[1])
            grads, grads_dot = _vmapped(
                gen2, (ct_axes,) + (None,) * (len(args) + n_o), ct, *args, *outer[1],
                outer_axes=(None,) * (1 + len(args)) + (0,) * n_o if outer_batched else None,
                size=size)
            if outer_batched:
                rows = tree_util.tree_leaves((grads_dot,) if single else grads_dot)
                jac_dot = self._assemble(rows, out, in_leaves, in_tree, False,
                                         np.shape(rows[0])[:1])
                firsts = tree_util.tree_leaves((grads,) if single else grads)
                jac = self._assemble([r[0] for r in firsts], out, in_leaves, in_tree, False)
                return jac, jac_dot, aux
            stacked = tree_util.tree_leaves(((grads,), (grads_dot,)) if single
                                            else (grads, grads_dot))
        jac = self._assemble(stacked[:n_in], out, in_leaves, in_tree, False)
        jac_dot = None if outer is None else \
            self._assemble(stacked[n_in:], out, in_leaves, in_tree, False)
        return jac, jac_dot, aux

    def _run_nested(self, args, positions, outer, in_leaves, in_tree):
        """A Jacobian of a Jacobian (hessian = jacfwd(jacrev(f))): by columns, each the jvp of
        the inner Jacobian along one basis vector (jvps of its generated functions), or by
        rows, each a vjp of them. jacfwd(f) and jacrev(f) are the same function, so where one
        composition cannot be generated (forward mode over the reverse code of a loop, say),
        the same matrix comes from another: the first plan that generates is kept. Nested
        three deep or more, or under jvp (`outer`), _derivative takes it by forward mode."""
        if outer is not None or isinstance(self.fun.fun, _Jacobian):
            # nested three deep, or the derivative of a nested one: forward mode all the way
            # down, as JAX's jacfwd (jacrev(f) and jacfwd(f) are the same function)
            if self.fun.has_aux or self.has_aux:
                raise UnsupportedError(f"{self.kind}(..., has_aux=True) of a Jacobian nested "
                                       "three deep or under jvp is not supported; return the "
                                       "aux from the innermost function's call" + where())
            if outer is None:
                return _derivative(self, args, []), None, None
            tangents = tree_util.tree_map(lambda t: snp.expand_dims(t, 0), tuple(outer[1]))
            # (one run: the Jacobian is the primal half of its jvp's, as jvp runs f once)
            jac, jac_dot = _derivative(self, args, [(tuple(outer[0]), tangents)], True)
            return jac, tree_util.tree_map(lambda t: t[0], jac_dot), None
        from secant.transformer.parse import SourceError
        inner = self.fun
        twin = _Jacobian(inner.fun, inner.argnums, inner.has_aux,
                         "jacrev" if inner.kind == "jacfwd" else "jacfwd")
        order = ("columns", "rows") if self.kind == "jacfwd" else ("rows", "columns")
        plans = [(order[0], inner), (order[1], inner), (order[0], twin), (order[1], twin)]
        if self._plan:          # the plan that worked last time first
            plans.insert(0, self._plan)
        value = None        # (its layout, read after the user's call where the plan makes it
        error = None        # first: the quiet run then reads what it left, a cache it filled)
        for method, j in plans:
            try:
                if method == "columns":     # the inner Jacobian's jvps along the whole basis
                    basis = tree_util.tree_unflatten(in_tree, _basis(in_leaves)[0])
                    ran = j._run(args, j._positions(), (positions, basis), outer_batched=True)
                    stacked, aux = tree_util.tree_leaves(ran[1]), ran[2]
                    value = inner._shape(args) if value is None else value
                else:
                    value = inner._shape(args) if value is None else value
                    stacked = j._rows(args, j._positions(), positions, value)
                    aux = j._rows_aux
            except SecantError as e:
                # (the next plan may do: a refusal of the source or a batching rule, or a reverse
                # pass that would read Python state again; any other error is the answer, e.g.
                # a custom rule's own error, or forward mode of a custom_vjp function, as JAX)
                if not (getattr(e, "state_rerun", False) or getattr(e, "no_batching_rule", False)
                        or isinstance(e, (SourceError, _errors.UnsupportedError))
                        and not isinstance(e, SecantValueError)):
                    raise
                error = error or e          # (the next plan may do)
                continue
            self._plan = (method, j)
            jac = self._assemble(stacked, value, in_leaves, in_tree, method == "columns")
            return jac, None, aux       # (the inner function's aux: hessian's has_aux)
        raise error

    def _rows(self, args, positions, outer_positions, value):
        """For a Jacobian J of this (plain) function, laid out as `value`: the gradient with
        respect to args[outer_positions] of each element of J, stacked. An element of J pairs
        an output element with an input element: the vjp of the generated jvp (jacfwd) or vjp
        (jacrev) at that pair of basis vectors."""
        if isinstance(self.fun, _Jacobian):
            raise SecantError("internal: rows of a nested Jacobian are taken by _derivative"
                              + where())
        base = _base(self.fun, args)
        in_leaves, in_tree = tree_util.tree_flatten(tuple(args[p] for p in positions))
        out, aux = self._out(args)
        self._rows_aux = aux        # (read by the outer Jacobian: _run_nested)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        n_in = len(in_leaves)
        single = len(outer_positions) == 1
        if self.kind == "jacfwd":
            gen = _tangents_last(generate(base, positions, "jvp", self.has_aux,
                                          staged=_staging()), len(positions), len(args))
            gen_v = generate(gen, tuple(outer_positions), "vjp", staged=_staging())

            def call(ct_out, v):
                ct = (_zeros_tree(out), ct_out) + ((_zeros_tree(aux),) if self.has_aux else ())
                return gen_v(ct, *args, *tree_util.tree_unflatten(in_tree, v))
        else:
            gen = generate(base, positions, "vjp", staged=_staging())
            gen_v = generate(gen, tuple(1 + p for p in outer_positions), "vjp", staged=_staging())

            def call(ct_out, v):
                ct_grads = tree_util.tree_unflatten(in_tree, v)
                ct_grads = ct_grads[0] if len(positions) == 1 else ct_grads
                ct = (ct_out, _zeros_tree(aux)) if self.has_aux else ct_out
                return gen_v(ct_grads, ct, *args)

        def fn(basis):
            # basis: one-hot over J's leaves (out leaf major, in leaf minor), the product of a
            # one-hot output vector and a one-hot input vector: recover both factors
            ct_out = [snp.zeros(np.shape(o), _dtype_of(o)) for o in out_leaves]
            v = [snp.zeros(np.shape(leaf), _dtype_of(leaf)) for leaf in in_leaves]
            for k, b in enumerate(basis):
                o, leaf = out_leaves[k // n_in], in_leaves[k % n_in]
                block = b.reshape((int(np.size(o)), int(np.size(leaf))))
                ct_out[k // n_in] = ct_out[k // n_in] + snp.sum(block, axis=1).reshape(np.shape(o))
                v[k % n_in] = v[k % n_in] + snp.sum(block, axis=0).reshape(np.shape(leaf))
            grads = call(tree_util.tree_unflatten(out_tree, ct_out), v)
            return (grads,) if single else grads
        leaves = tree_util.tree_leaves(value)
        basis, n = _basis(leaves)
        if n * sum(int(np.size(leaf)) for leaf in out_leaves + in_leaves) > _BATCHED_ROWS:
            return _over_basis(fn, leaves)      # (the rows' batch would not fit: one by one)
        # every row's pair of factors, stacked: each basis vector of J's space is the product of
        # a one-hot output vector and a one-hot input vector
        ct_out = [np.zeros((n,) + np.shape(o), _dtype_of(o)) for o in out_leaves]
        v = [np.zeros((n,) + np.shape(leaf), _dtype_of(leaf)) for leaf in in_leaves]
        for k, b in enumerate(basis):
            o, leaf = out_leaves[k // n_in], in_leaves[k % n_in]
            block = b.reshape((n, int(np.size(o)), int(np.size(leaf))))
            ct_out[k // n_in] += block.sum(axis=2).reshape((n,) + np.shape(o))
            v[k % n_in] += block.sum(axis=1).reshape((n,) + np.shape(leaf))
        ct_out = tree_util.tree_unflatten(out_tree, ct_out)
        none = (None,) * len(args)
        if self.kind == "jacfwd":
            ct = (_zeros_tree(out), ct_out) + ((_zeros_tree(aux),) if self.has_aux else ())
            ts = tree_util.tree_unflatten(in_tree, v)
            operands = (ct, *args, *ts)
            axes = ((None, 0) + ((None,) if self.has_aux else ()),) + none + (0,) * len(ts)
        else:
            ct_grads = tree_util.tree_unflatten(in_tree, v)
            ct_grads = ct_grads[0] if len(positions) == 1 else ct_grads
            ct = (ct_out, _zeros_tree(aux)) if self.has_aux else ct_out
            operands = (ct_grads, ct, *args)
            axes = (0, (0, None) if self.has_aux else 0) + none
        from secant.transformer.parse import SourceError
        # the rows at once, by gen_v's batched function (as JAX's vmap of the pullback: the
        # user's rules run once for all of them); one by one where it has none
        try:
            grads = _vmapped(gen_v, axes, *operands, size=n)
        except (SourceError, _errors.UnsupportedError, SecantValueError) as e:
            if isinstance(e, SecantValueError) and not getattr(e, "no_batching_rule", False):
                raise
            return _over_basis(fn, leaves)
        return tree_util.tree_leaves((grads,) if single else grads)


def _derivative(fun, args, directions, split_first=False):
    """The derivative of `fun` (a function, or a Jacobian of Jacobians of one) at args along
    each of `directions`, [(positions, tangents)] with tangents a tuple like args[positions]
    whose leaves all hold a leading axis of several (m_1, ..., m_k): D^k fun(args)[t_1, ...,
    t_k] for every choice of one tangent from each, shaped (m_1, ..., m_k) + fun's output.

    A Jacobian jacfwd(g) (or jacrev(g), the same function) is the derivative of g along the
    standard basis of its arguments, so its k-th derivative is g's (k+1)-th with that basis as
    one more direction: the recursion ends at the plain function, differentiated by its
    generated jvp taken k times (the jvp of the jvp ...), vmapped once over every combination
    of tangents. This is jacfwd(f) = vmap(jvp(f)) of JAX, which nests to any depth.

    split_first: (the derivative along all directions but the first, the derivative along all)
    from the one run, the first without its leading axis."""
    lead = tuple(int(np.shape(tree_util.tree_leaves(ts)[0])[0]) for _, ts in directions)
    if not isinstance(fun, _Jacobian):
        return _forward_derivative(fun, args, directions, lead, split_first)
    if fun.has_aux or fun.holomorphic:
        raise SecantError(f"{fun.kind}(..., {'has_aux' if fun.has_aux else 'holomorphic'}=True)"
                          " inside a Jacobian of a Jacobian, or under jvp of one, is not "
                          "supported yet" + where())
    positions = fun._positions()
    _check_differentiable(args, positions, fun.kind)
    in_leaves, in_tree = tree_util.tree_flatten(tuple(args[p] for p in positions))
    if fun.kind == "jacrev":
        for leaf in tree_util.tree_leaves(fun._out(args, quiet=True)[0]):
            if not dtypes.is_float(_dtype_of(leaf)):
                raise SecantTypeError("jacrev requires real-valued outputs (a floating-point "
                                      f"dtype), but got {_dtype_of(leaf).name}{where()}")
    basis = tree_util.tree_unflatten(in_tree, _basis(in_leaves)[0])
    inner = _derivative(fun.fun, args, list(directions) + [(positions, basis)], split_first)
    # the layout of fun.fun's output, read off the derivative (leading axes: lead + inputs)
    full = inner[1] if split_first else inner
    out = tree_util.tree_map(lambda leaf: np.zeros(np.shape(leaf)[len(lead) + 1:]), full)
    jac = fun._assemble(tree_util.tree_leaves(full), out, in_leaves, in_tree, True, lead)
    if not split_first:
        return jac
    return fun._assemble(tree_util.tree_leaves(inner[0]), out, in_leaves, in_tree, True,
                         lead[1:]), jac


def _forward_derivative(fun, args, directions, lead, split_first=False):
    """D^k fun(args)[t_1, ..., t_k] for a plain function (see _derivative): its generated jvp
    taken k times, called once, vmapped over the product of the tangents' leading axes
    (split_first: with D^(k-1) along all but t_1, the primal half of the innermost jvp)."""
    base = _base(fun, args)
    if not directions:
        return base(*args)
    gen = base
    n = len(args)
    for positions, _ in directions:
        gen = _tangents_last(generate(gen, tuple(positions), "jvp", staged=_staging()),
                             len(positions), n)
        n += len(positions)
    total, tangents = int(np.prod(lead)), []
    for j, (_, ts) in enumerate(directions):        # row r of the product: (i_1, ..., i_k)
        where_j = (1,) * j + (lead[j],) + (1,) * (len(lead) - j - 1)
        tangents += [tree_util.tree_map(lambda t: snp.reshape(snp.broadcast_to(
            snp.reshape(t, where_j + np.shape(t)[1:]), lead + np.shape(t)[1:]),
            (total,) + np.shape(t)[1:]), tree) for tree in ts]
    res = _vmapped(gen, (None,) * len(args) + (0,) * len(tangents), *args, *tangents,
                   size=total)
    for _ in directions[1:]:
        res = res[1]                # (out, out_dot) at every level: the last derivative
    shaped = lambda leaf: snp.reshape(leaf, lead + np.shape(leaf)[1:])   # noqa: E731
    if not split_first:
        return tree_util.tree_map(shaped, res[1])
    # (the innermost jvp's primal half: alike along t_1's axis, read at its first tangent)
    return (tree_util.tree_map(lambda leaf: shaped(leaf)[0], res[0]),
            tree_util.tree_map(shaped, res[1]))


def _jacobian_source(jac, grad=None):
    """jac (a _Jacobian) written as source: see _Jacobian.__secant_generated__. grad: "grad"
    or "value_and_grad", jac a jacfwd, written as that of a scalar function
    (_forward_instead)."""
    from secant.batch import vmap
    several = isinstance(jac.argnums, tuple) and 0 < len(jac.argnums) and all(
        isinstance(a, int) for a in jac.argnums)
    if not (isinstance(jac.argnums, int) or several) or jac.holomorphic or \
            jac.has_aux and jac.kind != "jacfwd":
        return None
    try:
        params = list(inspect.signature(jac._inner, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return None
    # (a keyword with a default, a batched function's caller's size: left at its default)
    params = [p for p in params if not (p.kind == p.KEYWORD_ONLY and p.default is not p.empty)]
    argnums = jac.argnums if several else (jac.argnums,)
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) or \
            not all(-len(params) <= a < len(params) for a in argnums):
        return None
    names = Names()
    taken = [names.fresh(p.name) for p in params]
    positions = tuple(a % len(params) for a in argnums)
    if several and (len(set(positions)) < len(positions) or list(positions) != sorted(positions)):
        return None     # (argnums repeated or out of order: the Jacobian as it runs)
    # argnums=(1, 2): the Jacobian in the pytree (x1, x2) of those arguments: for each output
    # leaf, a tuple of the Jacobians in each argument, as JAX's (jacfwd(u, argnums=(1, 2))(p,
    # t, x) in a PINN)
    x = f"({', '.join(taken[a] for a in positions)},)" if several else taken[positions[0]]
    a, n = positions if several else positions[0], len(taken)
    fn_name = names.fresh(f"{getattr(jac._inner, '__name__', 'f')}_"
                          f"{grad or jac.kind}")
    fun, basis = names.fresh("fun"), names.fresh("basis")
    args = ", ".join(taken)
    if jac.kind == "jacfwd":
        columns, each = names.fresh("columns"), names.fresh("columns_of")
        tangents = ", ".join(f"{basis}[{k}]" for k in range(len(positions))) if several \
            else basis
        aux = names.fresh("aux") if jac.has_aux else None     # (has_aux: the aux of f(x), once,
        body = [f"{basis} = basis_like({x})",                  # not per basis vector)
                f"_, {columns}{f', {aux}' if aux else ''} = {each}({args}, {tangents})",
                f"return from_columns({columns}, {x}){f', {aux}' if aux else ''}"]
        if grad:        # (has_aux: the aux of the one run, returned beside the gradient)
            out = names.fresh("out")
            kept = f", {aux}" if aux else ""
            body = ["# by forward mode: the reverse pass would read Python state (a counter)",
                    f"# again, after later calls changed it: one jvp per element of {x}",
                    f"{basis} = basis_like({x}, limit={FORWARD_FALLBACK_LIMIT})",
                    f"{out}, {columns}{kept} = {each}({args}, {tangents})",
                    f"grad_seed({out}[0])  # (a real scalar output, or refused)",
                    f"return from_columns({columns}, {x}){kept}"]
            # (the seed checked, not multiplied in: the gradient of a dict input is a dict)
            if grad == "vjp":       # (its output and Jacobian, from the one run)
                body[-2:] = [f"return {out}[0], from_columns({columns}, {x})"]
            elif grad == "value_and_grad":
                value = names.fresh("value")
                body[-2:] = [f"{value} = {out}[0]",
                             f"grad_seed({value})  # (a real scalar output, or refused)",
                             f"return {f'({value}, {aux})' if aux else value}, "
                             f"from_columns({columns}, {x})"]
        plain = jac.fun
        if any(p.default is not p.empty for p in params):     # (its jvp's tangents then come
            plain = load_generated(                             # by keyword: all positional)
                f"def {fn_name}_plain({args}):\n    return {fun}({args})\n",
                f"{fn_name}_plain", {}, {fun: jac.fun})
        free = {each: vmap(jvp_fn(plain, argnums=a, has_aux=jac.has_aux),
                           in_axes=(None,) * n + (0,) * len(positions) if several else
                           (None,) * n + (0,), out_axes=(0, 0, None) if aux else 0)}
    else:
        out, rows, each = names.fresh("out"), names.fresh("rows"), names.fresh("rows_of")
        body = [f"{out} = {fun}({args})",
                f"{basis} = basis_like({out})",
                f"{rows} = {each}({basis}, {args})",
                f"return from_rows({rows}, {out}, {x})"]
        free = {each: vmap(generate(_op_function(jac.fun), positions, "vjp"),
                           in_axes=(0,) + (None,) * n)}
    free.update({fun: jac.fun, "basis_like": helpers.basis_like, "grad_seed": helpers.grad_seed,
                 "from_columns": helpers.from_columns, "from_rows": helpers.from_rows})
    source = _jacobian_function(fn_name, params, taken, body, free)
    if source is not None:
        source.__secant_jacobian_of__ = jac     # (restaged: the same Jacobian of fun's)
    return source


def _jacobian_function(fn_name, params, taken, body, free):
    """def fn_name(<params as taken, with their defaults>): body; None where a default is not
    a literal."""
    header = []                 # (the parameters' defaults as the function's own)
    for p, name in zip(params, taken):
        if p.default is p.empty:
            header.append(name)
        elif p.default is None or type(p.default) in (bool, int, float, str):
            header.append(f"{name}={p.default!r}")
        else:
            return None
    source = f"def {fn_name}({', '.join(header)}):\n" + "".join(f"    {line}\n"
                                                                for line in body)
    return load_generated(source, fn_name, {}, free)


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian of `fun` by forward mode (one jvp per input element), shaped as JAX's:
    for each output leaf, a pytree like the differentiated argument(s) of arrays of shape
    out.shape + in.shape (a tuple over argnums when argnums is a tuple)."""
    return _Jacobian(fun, argnums, has_aux, "jacfwd", holomorphic)


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian of `fun` by reverse mode (one vjp per output element), shaped as jacfwd's."""
    return _Jacobian(fun, argnums, has_aux, "jacrev", holomorphic)


def hessian(fun, argnums=0, has_aux=False):
    """The Hessian of scalar `fun`: jacfwd(jacrev(fun)) (forward over reverse), of shape
    out.shape + in.shape + in.shape for each pair of inputs, as JAX's; has_aux: `fun` returns
    (output, aux), and so does the Hessian, (hessian, aux)."""
    if has_aux:
        return jacfwd(jacrev(fun, argnums, has_aux=True), argnums, has_aux=True)
    return jacfwd(jacrev(fun, argnums), argnums)


jacfwd.__secant_factory__ = jacrev.__secant_factory__ = hessian.__secant_factory__ = "argnums"

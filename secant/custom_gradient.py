"""secant.custom_gradient, as jax.custom_gradient: `fun(*args)` returns `(value, vjp)`, where
`vjp(out_cotangent)` gives the cotangents of the arguments (a tuple, one per argument; a lone
value for a function of one argument). Built on secant.custom_vjp with the vjp function as the
residual, in three short functions named after fun's parameters:

    def f(x, y):                    def f_fwd(x, y):                def f_bwd(vjp, out_bar):
        value, _ = fun(x, y)            value, vjp = fun(x, y)          return as_tuple(vjp(out_bar))
        return value                    return value, vjp

Eager calls, jit, grad / vjp / value_and_grad (of fun and of code calling it, jitted or not)
follow custom_vjp's rules; jvp is an error, as in JAX (a custom_vjp function has no forward-mode
derivative). vmap and second derivatives would batch or differentiate the vjp function, a
closure over the arguments handed on as a value, which secant's transforms do not follow: they
are clear errors naming the vjp function (write the rule with secant.custom_vjp for those)."""
import inspect

from secant.backends.errors import SecantTypeError, where
from secant.custom import custom_vjp


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
    name = fun.__name__ if fun.__name__.isidentifier() else "custom_gradient_fn"
    made = {}
    for kind, source in (
            ("", f"def {name}({params}):\n    value, _ = fun({params})\n    return value\n"),
            ("_fwd", f"def {name}_fwd({params}):\n    value, vjp = fun({params})\n"
                     f"    return value, vjp\n"),
            ("_bwd", f"def {name}_bwd(vjp, out_bar):\n    return as_tuple(vjp(out_bar))\n")):
        made[kind] = load_generated(source, name + kind, fun.__globals__,
                                    {"fun": fun, "as_tuple": as_tuple})
    made[""].__doc__, made[""].__qualname__ = fun.__doc__, fun.__qualname__
    return custom_vjp(made[""]).defvjp(made["_fwd"], made["_bwd"])


def as_tuple(cotangents):
    """A vjp function's result as custom_vjp's bwd returns it: one entry per argument."""
    return cotangents if isinstance(cotangents, tuple) else (cotangents,)

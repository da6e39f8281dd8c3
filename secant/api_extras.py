"""JAX's small top-level helpers around tracing: ShapeDtypeStruct, eval_shape, named_call,
named_scope, ensure_compile_time_eval, typeof and linear_transpose."""
import contextlib
import functools

import numpy as np

from secant import tree_util
from secant.backends import dtypes
from secant.backends.core import ShapedArray, Tracer
from secant.backends.errors import SecantError, SecantTypeError, SecantValueError, where
from secant.backends.tracer import Trace, canonical_aval

__all__ = ["ShapeDtypeStruct", "eval_shape", "named_call", "named_scope",
           "ensure_compile_time_eval", "typeof", "linear_transpose"]


class ShapeDtypeStruct:
    """A shape and a dtype standing for an array (jax.ShapeDtypeStruct): what eval_shape returns
    and what pure_callback's result_shape_dtypes and eval_shape's arguments may be."""
    __slots__ = ("shape", "dtype", "sharding", "weak_type")

    def __init__(self, shape, dtype, *, sharding=None, weak_type=False):
        try:
            self.shape = tuple(int(d) for d in shape)
        except TypeError:
            raise SecantTypeError(f"ShapeDtypeStruct: shape must be a sequence of ints, got "
                                  f"{shape!r}" + where()) from None
        if dtype is None:
            raise SecantTypeError("ShapeDtypeStruct: dtype must be given" + where())
        self.dtype = np.dtype(dtype)
        self.sharding = sharding
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type)
                == (other.shape, other.dtype, other.weak_type))

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def _spec_aval(x):
    if isinstance(x, ShapeDtypeStruct) or (hasattr(x, "shape") and hasattr(x, "dtype")
                                           and not isinstance(x, (np.ndarray, np.generic))
                                           and not hasattr(x, "aval")):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype),
                           getattr(x, "weak_type", False))
    return canonical_aval(x)


def _struct(x):
    aval = x.aval if isinstance(x, Tracer) else canonical_aval(x)
    return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)


def eval_shape(fun, *args, **kwargs):
    """The shapes and dtypes of fun(*args, **kwargs) as a pytree of ShapeDtypeStruct, without
    computing it (jax.eval_shape): fun is traced, not compiled nor run. Arguments may be arrays
    or anything with .shape and .dtype (ShapeDtypeStruct)."""
    from secant.api import _functionalized
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    avals = [_spec_aval(x) for x in leaves]
    trace = Trace(getattr(fun, "__name__", "f"), kind="eval_shape")
    try:
        a, k = tree.unflatten([trace.new_arg(av) for av in avals])
        with trace.activate():
            out = _functionalized(fun)(*a, **k)
        return tree_util.tree_map(_struct, out)
    finally:
        trace.finish()


# a query of its arguments' shapes and dtypes: a constant of every derivative; vmap gives it
# each batched argument's per-example specs (batching/helpers.py example_spec)
eval_shape.__secant_static_query__ = eval_shape.__secant_spec_query__ = True


def named_call(fun, *, name=None):
    """fun, its ops named `name` (default: fun's name) in jit's StableHLO locations, as
    jax.named_call: `loc("name"("file.py":line:col))`. It computes exactly what fun computes;
    the transforms read fun itself."""
    if not callable(fun):
        raise SecantTypeError(f"named_call expects a callable, got {type(fun).__name__}"
                              + where())
    from secant.backends.tracer import named
    scope = name if name is not None else getattr(fun, "__name__", "named_call")

    @functools.wraps(fun)
    def named_fun(*args, **kwargs):
        with named(scope):
            return fun(*args, **kwargs)
    named_fun.__secant_generated__ = fun        # what grad, vmap and jvp read
    return named_fun


named_call.__secant_factory__ = True    # named_call(f, name=...)(x) in transformed code: f


@contextlib.contextmanager
def named_scope(name):
    """The ops traced inside the block carry `name` in jit's StableHLO locations (nested scopes
    joined by "/"), as jax.named_scope; they compute the same."""
    if not isinstance(name, str):
        raise SecantTypeError("named_scope name argument must be a string." + where())
    from secant.backends.tracer import named
    with named(name):
        yield


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Inside jit, compute on concrete values now instead of staging them into the program
    (jax.ensure_compile_time_eval). secant already does: only traced values are staged, every
    operation on concrete values runs when traced."""
    yield


def typeof(x):
    """The abstract value of x (jax.typeof): its shape, dtype and weak type, e.g. float32[3]."""
    return x.aval if isinstance(x, Tracer) else canonical_aval(x)


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of the linear function fun at inputs shaped as primals (arrays or
    ShapeDtypeStructs, pytrees of them), as jax.linear_transpose: `t(cotangent)` returns one
    cotangent per primal. A constant term of fun is dropped (its transpose is its linear
    part's, as JAX's); a fun that is not linear is a SecantValueError (its derivative at zero
    and at another point differ), where JAX finds an op with no transpose rule."""
    from secant.transforms import vjp
    if reduce_axes:
        raise SecantValueError(f"linear_transpose: reduce_axes is not supported{where()}")
    leaves, tree = tree_util.tree_flatten(primals)
    avals = [_spec_aval(x) for x in leaves]
    for aval in avals:
        if not dtypes.is_inexact(aval.dtype):
            raise SecantTypeError(f"linear_transpose only supports [float or complex] -> [float "
                                  f"or complex], got an input of dtype {aval.dtype}{where()}")
    zeros = tree_util.tree_unflatten(tree, [np.zeros(a.shape, a.dtype) for a in avals])
    out, pullback = vjp(fun, *zeros)
    name = getattr(fun, "__name__", "fun")
    _check_linear(fun, name, tree, avals, out, pullback)

    def transposed(out_cotangent):
        return pullback(out_cotangent)
    return transposed


def _check_linear(fun, name, tree, avals, out, pullback):
    """fun is linear where its pullback of a random cotangent at zero and at a random point
    agree (a constant term aside); under jit, where its pullback reads nothing of its input."""
    from secant.transforms import vjp
    rng = np.random.default_rng(0)
    point = tree_util.tree_unflatten(tree, [rng.normal(size=a.shape).astype(a.dtype)
                                            for a in avals])
    probe = tree_util.tree_map(lambda y: rng.normal(size=np.shape(y)).astype(
        _aval(y).dtype), out)
    at_zeros = tree_util.tree_leaves(pullback(probe))
    traced = [t for t in tree_util.tree_leaves(out) + at_zeros if isinstance(t, Tracer)]
    if traced:          # (under jit: fun closes over traced values)
        _check_linear_traced(traced[0]._trace, fun, name, tree, avals, out)
        return
    for at_zero, at_point in zip(at_zeros, tree_util.tree_leaves(vjp(fun, *point)[1](probe))):
        at_zero, at_point = np.asarray(at_zero), np.asarray(at_point)
        scale = max(float(np.max(np.abs(at_zero), initial=0.0)), 1.0)
        if not np.allclose(at_zero, at_point, rtol=1e-4, atol=1e-4 * scale):
            raise SecantValueError(f"linear_transpose: {name} is not linear (its derivative at "
                                   f"zero and at another point differ){where()}")


def _aval(y):
    return y.aval if isinstance(y, Tracer) else canonical_aval(y)


def _check_linear_traced(trace, fun, name, tree, avals, out):
    """Under jit fun's values are not known (it closes over traced arrays): fun is linear where
    its pullback, traced at an unknown point p and cotangent (the block arguments of a region
    that is never written into the program), reads nothing of p: its derivative is then the
    same everywhere. A pullback reading p, or failing on an unknown p (a Python `if` on it),
    is refused: linearity cannot be decided without values."""
    from secant.backends.emitter import _USE, prune
    from secant.transforms import vjp
    outs, out_tree = tree_util.tree_flatten(out)
    out_avals = [_aval(y) for y in outs]
    refused = SecantValueError(
        f"linear_transpose under jit: {name}'s derivative reads its input (or cannot be traced "
        f"at an unknown input), so whether it is linear cannot be decided without values; "
        f"call linear_transpose outside jit, or pass the closed-over arrays as concrete values"
        f"{where()}")
    with trace.region(avals + out_avals) as (body, args):
        point = tree_util.tree_unflatten(tree, args[:len(avals)])
        probe = tree_util.tree_unflatten(out_tree, args[len(avals):])
        try:
            back = tree_util.tree_leaves(vjp(fun, *point)[1](probe))
        except SecantError:
            raise refused from None
        names = [trace.lift(b).name for b in back]
        kept = prune(body.lines + [f"return {', '.join(names)}"])
    read = set(_USE.findall("\n".join(kept))) | set(names)
    if read & {a.name for a in args[:len(avals)]}:
        raise refused

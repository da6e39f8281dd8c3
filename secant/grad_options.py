"""grad's options for JAX programs: `allow_int=True` (integer and boolean arguments get float0
zeros as their gradient, as in JAX) and `reduce_axes` (deprecated in JAX: a non-empty value is
JAX's NotImplementedError)."""
import functools

import numpy as np

from secant import tree_util
from secant.backends import dtypes
from secant.backends.errors import SecantTypeError, where
from secant.transformer.parse import opaque

FLOAT0 = np.dtype([("float0", np.void, 0)])      # jax.dtypes.float0


def check_reduce_axes(reduce_axes, what):
    if tuple(reduce_axes):
        raise NotImplementedError(f"reduce_axes argument to {what} is deprecated")


def _result_type(x):
    import secant.numpy as snp
    return snp.result_type(x)


def _is_int(leaf):
    return not dtypes.is_inexact(dtypes.canonicalize_dtype(_result_type(leaf)))


def all_int(tree):
    """Whether every leaf of `tree` is an integer or boolean value (and there is one)."""
    leaves = tree_util.tree_leaves(tree)
    try:
        return bool(leaves) and not any(_is_int(leaf) is False for leaf in leaves)
    except (TypeError, ValueError):
        return False


def float0_zeros(tree):
    """float0 zeros shaped like every leaf of `tree` (the gradient of an integer argument)."""
    return tree_util.tree_map(lambda leaf: np.zeros(np.shape(leaf), FLOAT0), tree)


def allow_int(fun, argnums, has_aux, with_value, transform, positions_of):
    """grad/value_and_grad of `fun` where arguments in argnums may be integers: those get float0
    zeros, the others the gradient of `fun` with the integer ones held fixed.

    `transform(fun, argnums)` makes the plain grad (or value_and_grad) of fun; one is made per
    set of inexact positions."""
    made = {}

    def plain(positions):
        if positions not in made:
            made[positions] = transform(positions)
        return made[positions]

    @functools.wraps(fun)
    def grad_allow_int(*args, **kwargs):
        positions = positions_of(fun)
        ints = []
        for i in positions:
            if i >= len(args):
                break           # the plain transform says what is wrong
            leaves = tree_util.tree_leaves(args[i])
            kinds = set(map(_is_int, leaves))
            if kinds == {True, False}:
                raise SecantTypeError(
                    f"grad with allow_int=True: argument {i} mixes integer and floating-point "
                    f"leaves; secant differentiates an argument as a whole (pass the integer "
                    f"leaves as an argument of their own){where()}")
            if kinds == {True}:
                ints.append(i)
        if not ints:
            return plain(argnums)(*args, **kwargs)
        rest = tuple(p for p in positions if p not in ints)
        if rest:
            res = plain(rest)(*args, **kwargs)
            if with_value:
                value, grads = res
            elif has_aux:
                grads, aux = res
            else:
                grads = res
        else:       # nothing to differentiate: the value (and aux) of fun itself
            value, grads = fun(*args, **kwargs), ()
            out = value[0] if has_aux else value
            if not dtypes.is_inexact(dtypes.canonicalize_dtype(_result_type(out))):
                raise SecantTypeError(
                    "grad requires real-valued outputs (a floating-point dtype), but got "
                    f"{dtypes.canonicalize_dtype(_result_type(out)).name}; for "
                    f"differentiation of functions with integer outputs, use vjp{where()}")
            if has_aux:
                aux = value[1]
        by_position = dict(zip(rest, grads))
        out = tuple(by_position[p] if p in by_position else float0_zeros(args[p])
                    for p in positions)
        if isinstance(argnums, int):
            out = out[0]
        if with_value:
            return value, out
        return (out, aux) if has_aux else out
    return opaque(grad_allow_int, "grad(..., allow_int=True) cannot be transformed again (it "
                  "looks at its arguments' dtypes when called); apply the other transform inside")

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

    def plain(positions, fn=fun):
        if (positions, fn) not in made:
            made[positions, fn] = transform(positions, fn)
        return made[positions, fn]

    @functools.wraps(fun)
    def grad_allow_int(*args, **kwargs):
        positions = positions_of(fun)
        ints, mixed = [], {}
        for i in positions:
            if i >= len(args):
                break           # the plain transform says what is wrong
            leaves, treedef = tree_util.tree_flatten(args[i])
            kinds = tuple(map(_is_int, leaves))
            if set(kinds) == {True, False}:
                mixed[i] = (treedef, kinds)
            elif kinds and all(kinds):
                ints.append(i)
        if mixed:
            return _with_float_leaves(fun, args, kwargs, mixed, ints, positions, argnums,
                                      has_aux, with_value, plain)
        if not ints:
            return plain(argnums)(*args, **kwargs)
        rest = tuple(p for p in positions if p not in ints)
        if rest:
            value, grads, aux = _parts(plain(rest)(*args, **kwargs), with_value, has_aux)
        else:       # nothing to differentiate: the value (and aux) of fun itself
            value, grads, aux = fun(*args, **kwargs), (), None
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
        return _assembled(out, value, aux, argnums, with_value, has_aux)
    return opaque(grad_allow_int, "grad(..., allow_int=True) cannot be transformed again (it "
                  "looks at its arguments' dtypes when called); apply the other transform inside")


def _with_float_leaves(fun, args, kwargs, mixed, ints, positions, argnums, has_aux,
                       with_value, plain):
    """allow_int for arguments that mix integer and floating-point leaves (a dict of
    parameters with an integer count): the gradient of fun in the floating-point leaves, the
    integer ones held fixed (generated: `fun_float_leaves(a0, a1, ints_1)` rebuilds argument
    1 from its float leaves a1 and its integer leaves ints_1); float0 zeros for the integer
    leaves, as JAX gives."""
    if kwargs:
        raise SecantTypeError("grad with allow_int=True: an argument mixing integer and "
                              "floating-point leaves needs positional arguments only" + where())
    spec = tuple(sorted((i, treedef, kinds) for i, (treedef, kinds) in mixed.items()))
    g = _float_leaves_function(fun, len(args), spec, has_aux)
    new_args = list(args)
    extra = []
    for i, (treedef, kinds) in mixed.items():
        leaves = tree_util.tree_leaves(args[i])
        new_args[i] = [x for x, k in zip(leaves, kinds) if not k]
        extra.append([x for x, k in zip(leaves, kinds) if k])
    rest = tuple(p for p in positions if p not in ints)
    value, grads, aux = _parts(plain(rest, g)(*new_args, *extra), with_value, has_aux)
    by_position = dict(zip(rest, grads))
    out = []
    for p in positions:
        if p in mixed:
            treedef, kinds = mixed[p]
            floats = iter(by_position[p])
            int_leaves = iter(x for x, k in zip(tree_util.tree_leaves(args[p]), kinds) if k)
            out.append(treedef.unflatten([float0_zeros(next(int_leaves)) if k else next(floats)
                                          for k in kinds]))
        elif p in by_position:
            out.append(by_position[p])
        else:
            out.append(float0_zeros(args[p]))
    return _assembled(tuple(out), value, aux, argnums, with_value, has_aux)


def _parts(res, with_value, has_aux):
    """(value, grads, aux) of what grad / value_and_grad returned (None where absent)."""
    if with_value:
        value, grads = res
        return value, grads, None
    if has_aux:
        return None, res[0], res[1]
    return None, res, None


def _assembled(out, value, aux, argnums, with_value, has_aux):
    """The gradients per position, returned in the shape grad / value_and_grad return."""
    out = out[0] if isinstance(argnums, int) else out
    if with_value:
        return value, out
    return (out, aux) if has_aux else out


_float_leaf_fns = {}


def _float_leaves_function(fun, n_args, spec, has_aux):
    key = (fun, n_args, spec, has_aux)
    if key not in _float_leaf_fns:
        from secant.transforms import load_generated
        params = [f"a{k}" for k in range(n_args)]
        extras = [f"ints_{i}" for i, _, _ in spec]
        passed = list(params)
        free = {"fun_": fun, "tree_unflatten": tree_util.tree_unflatten}
        for i, treedef, kinds in spec:
            f_k = i_k = 0
            items = []
            for k in kinds:
                if k:
                    items.append(f"ints_{i}[{i_k}]")
                    i_k += 1
                else:
                    items.append(f"a{i}[{f_k}]")
                    f_k += 1
            free[f"treedef_{i}"] = treedef
            passed[i] = f"tree_unflatten(treedef_{i}, [{', '.join(items)}])"
        name = f"{getattr(fun, '__name__', 'f')}_float_leaves"
        if not name.isidentifier():
            name = "f_float_leaves"
        source = (f"def {name}({', '.join(params + extras)}):\n"
                  f"    # {getattr(fun, '__name__', 'f')} with the integer leaves held fixed "
                  f"(grad's allow_int)\n"
                  + (f"    out, aux = fun_({', '.join(passed)})\n    return out, aux\n"
                     if has_aux else f"    return fun_({', '.join(passed)})\n"))
        _float_leaf_fns[key] = load_generated(source, name, getattr(fun, "__globals__", {}),
                                              free)
    return _float_leaf_fns[key]

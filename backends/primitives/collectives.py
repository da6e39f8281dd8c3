"""Collective primitives: communication between the replicas of a pmap program.

They exist only inside a pmap trace (secant.pmap binds them, through secant.lax.psum & co.,
when the named axis is a pmap axis); each lowers to one StableHLO collective over
`replica_groups` (every replica of the program, in replica order). Their eager implementation
is an error: outside pmap there is only one replica, and secant.lax decides what a collective
means there (vmap's rules, or an unbound-axis error) before any of these is bound.
"""
from secant.backends.core import Primitive, ShapedArray, register
from secant.backends.errors import SecantError, where
from secant.backends.primitives.common import type_error


def _eager(name):
    def impl(*args, **params):
        raise SecantError(f"{name} is a collective between pmap replicas; it runs only inside "
                          "secant.pmap" + where())
    return impl


def define(name, rule, **options):
    return register(Primitive(name, rule, _eager(name), differentiable=False, **options))


def _groups_size(groups):
    return len(groups[0])


def _all_reduce_rule(x, reducer, groups):
    if reducer not in ("add", "max", "min"):
        type_error(f"all_reduce: unknown reducer {reducer!r}")
    if reducer == "add" and x.dtype.kind == "b":
        type_error("psum of a bool array; convert it to an integer type first")
    return x


def _all_gather_rule(x, axis, tiled, groups):
    n = _groups_size(groups)
    if tiled:
        if not 0 <= axis < x.ndim:
            type_error(f"all_gather: axis {axis} out of range for rank {x.ndim} (tiled=True)")
        shape = list(x.shape)
        shape[axis] *= n
    else:
        if not 0 <= axis <= x.ndim:
            type_error(f"all_gather: axis {axis} out of range for rank {x.ndim}")
        shape = list(x.shape[:axis]) + [n] + list(x.shape[axis:])
    return x.update(shape=tuple(shape))


def _permute_rule(x, pairs, n):
    sources = [s for s, _ in pairs]
    targets = [t for _, t in pairs]
    if any(not 0 <= i < n for i in sources + targets):
        type_error(f"ppermute: perm {list(pairs)} names an index outside 0..{n - 1}")
    if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
        type_error(f"ppermute: perm {list(pairs)} sends from or to one index twice; it must be "
                   "a (partial) permutation")
    return x


def _all_to_all_rule(x, split_axis, concat_axis, tiled, groups):
    n = _groups_size(groups)
    if not 0 <= split_axis < x.ndim:
        type_error(f"all_to_all: split_axis {split_axis} out of range for rank {x.ndim}")
    shape = list(x.shape)
    if tiled:
        if not 0 <= concat_axis < x.ndim:
            type_error(f"all_to_all: concat_axis {concat_axis} out of range for rank {x.ndim}")
        if shape[split_axis] % n:
            type_error(f"all_to_all: split_axis {split_axis} has size {shape[split_axis]}, not "
                       f"a multiple of the axis size {n} (tiled=True)")
        shape[split_axis] //= n
        shape[concat_axis] *= n
    else:
        if shape[split_axis] != n:
            type_error(f"all_to_all: split_axis {split_axis} has size {shape[split_axis]}, but "
                       f"it must equal the axis size {n}")
        if not 0 <= concat_axis < x.ndim:
            type_error(f"all_to_all: concat_axis {concat_axis} out of range for rank {x.ndim}")
        del shape[split_axis]
        shape.insert(concat_axis, n)
    return x.update(shape=tuple(shape))


def _replica_id_rule():
    return ShapedArray((), "int32")


all_reduce_p = define("all_reduce", _all_reduce_rule)
all_gather_p = define("all_gather", _all_gather_rule)
collective_permute_p = define("collective_permute", _permute_rule)
all_to_all_p = define("all_to_all", _all_to_all_rule)
replica_id_p = define("replica_id", _replica_id_rule, weak="never")

"""Small functions that generated batched code calls by name (looked up like ad/helpers.py's).

Generation is shape-agnostic: where a batching rule needs a rank (an operand that may have more
axes per example than a batched one, an axis argument that is not a literal, `axis=None`), the
generated code calls one of these with the batch axis in front (axis 0). They are written in
the subset of Python the transforms read, so batched code can be transformed again (grad of
vmap, vmap of vmap): shape logic in static `if`s, one return.
"""
import inspect
import types

import numpy as np

import secant.numpy as snp
from secant import lax, tree_util
from secant.ad.helpers import (add_at, add_at_grad, aux_attribute, broadcast_int, grad_of_fields,
                               count_items, is_user_container, is_user_sequence,
                               grad_seed, note_broadcast_int,
                               grad_seed_like, grad_seed_scaled, is_float0, structural, unbroadcast,
                               zeros_like_tree)
from secant.backends.errors import SecantTypeError, SecantValueError, UnsupportedError, where
from secant.transformer.properties import has_attr
from secant.backends.placeholder import (Undefined, Unbound, batched_unbound,  # noqa: F401
                                        check_bound, unbound_before_loop,
                                        unset_in_branch)  # (NAMES)


def shape_only(fn):
    """Helpers that compute shapes, axes or indices: constants for a derivative of batched code
    (read as source again by an enclosing vmap, which writes their shape queries per example)."""
    fn.__secant_constant__ = True
    return fn


@shape_only
def batch_size_of(*trees, axis=0, default=None):
    """The size of the batch axis (axis 0; `axis` under enclosing vmaps, whose batch axes come
    first: an int, or one for each tree) of batched values (any pytrees): that of the first
    holding an array. A function has no batch axis: a function held by a module (`self.act`),
    or its cotangent, is batched only as a dispatcher's output is (all of it), and sizes
    nothing; `default` where no tree holds an array (a scan's empty ys; a batched function
    whose batched parameters may hold none takes its caller's size: vectorize.build)."""
    axes = axis if isinstance(axis, tuple) else (axis,) * len(trees)
    for tree, ax in zip(trees, axes):
        leaves = [v for v in _method_leaves(tree)             # (a function passed as a static
                  if hasattr(v, "shape") or not (callable(v) or isinstance(v, slice)  # argument,
                                                 or v is Ellipsis)]   # an index's slice: one
                                                                      # for all, no axis)
        if not leaves:
            continue
        shape = getattr(leaves[0], "shape", None)       # (a BatchedUnbound placeholder's too)
        shape = np.shape(leaves[0]) if shape is None else tuple(shape)
        if len(shape) <= ax:
            raise _unsupported(leaves[0])
        return shape[ax]
    return default


def _method_leaves(tree):
    """tree's leaves, a bound method's read as its object's (the tangent of `obj.method`, a
    method of the tangent object, is batched where that object is)."""
    out = []
    for v in tree_util.tree_leaves(tree):
        if isinstance(v, types.MethodType) and not isinstance(v.__self__, type):
            out.extend(_method_leaves(v.__self__))
        else:
            out.append(v)
    return out


@structural
def _holds_arrays(leaf):
    """A bound method whose object holds arrays (a method of a tangent or cotangent object)."""
    return isinstance(leaf, types.MethodType) and not isinstance(leaf.__self__, type) and any(
        hasattr(v, "shape") for v in _method_leaves(leaf.__self__))


def _unsupported(value):
    """An index mixing slices and arrays, batched again, read as one batched value: a clear
    refusal (a Jacobian then tries its other orders)."""
    return UnsupportedError(f"vmap of this composition is not supported yet: it reads a "
                            f"{type(value).__name__} as batched (an index mixing slices and "
                            f"arrays, batched again){where()}")


batch_size_of.__secant_batch_size__ = True       # an enclosing vmap reads the next axis


def broadcast_batch(tree, n):
    """An unbatched value (any pytree) with a batch axis of size n in front."""
    return tree_util.tree_map(lambda leaf: _broadcast_leaf(leaf, n), tree)


def _no_batch_size():
    """n None: batch_size_of of a batched value with no arrays in it (a loop's empty outputs,
    or their cotangents) was all a batched helper had to size its batch by."""
    return UnsupportedError("vmap of this composition is not supported yet: the batch size of "
                            "a value with no arrays in it (a loop's empty outputs) is unknown"
                            + where())


def _broadcast_leaf(leaf, n):
    if isinstance(leaf, Unbound):       # a loop's placeholder: shaped as the batch
        return batched_unbound(leaf, n)
    if isinstance(leaf, Undefined):     # a branch's placeholder (select_batched drops it)
        return leaf
    if _holds_arrays(leaf):         # a method of an object holding arrays (the cotangent of
        return grad_of_fields(leaf, {"__self__": broadcast_batch(leaf.__self__, n)})  # (obj.
                                                        # method): its object broadcast
    if callable(leaf) and not hasattr(leaf, "shape"):   # a function passed as a static
        return leaf                                     # argument (odeint's func): one for all
    if isinstance(leaf, (str, bytes, slice)) or leaf is Ellipsis:     # a name beside batched
        return leaf     # values, ("a", x), or an index's slice: static, one for all examples
    if n is None:
        raise _no_batch_size()
    if is_float0(leaf):
        return np.zeros((n,) + np.shape(leaf), leaf.dtype)     # (an integer's cotangent)
    out = snp.broadcast_to(leaf, (n,) + np.shape(leaf))
    if _noted_int(out, leaf):   # a Python int (an item beside batched ones: range(d['n'])),
        return out              # noted as that int, which static_item reads back
    return out


@structural
def _noted_int(out, leaf):
    """Notes `out`, the broadcast of `leaf`, as the Python int leaf is or broadcasts (ad/helpers
    note_broadcast_int), and says whether it did. A query with an effect, read as a constant
    by every transform, so that the broadcast itself stays ordinary code: under a vmap of
    broadcast_batch `out` is the batched broadcast (the outer axis in front), whose every
    element is still that int. (Broadcasting here, in a structural helper, put the inner axis
    first, and an enclosing vmap then broadcast its result again.)"""
    static = leaf if type(leaf) in (int, bool, float, complex) else broadcast_int(leaf)
    if static is None:
        return False
    note_broadcast_int(out, static)
    return True


def _not_an_object(x, attr):
    """m.size / m.shape / m.ndim of a batched pytree object is its class's own (a property
    reading batched fields): not the per-example array query, refused."""
    if tree_util.is_node_type(type(x)):
        raise SecantTypeError(f"vmap cannot read .{attr} of a batched {type(x).__name__} object "
                              f"as an array's (np.shape of it is ()); compute it from an array "
                              f"field (m.w.{attr}){where()}")


@shape_only
def example_size(x, outer=0):
    """The number of elements of one example of batched x (`outer`: enclosing vmaps' batch
    axes in front of x's, which an enclosing vmap writes when it reads this call)."""
    _not_an_object(x, "size")
    size = 1
    for d in np.shape(x)[1 + outer:]:
        size = size * d
    return size


example_size.__secant_batch_depth__ = "size"     # read by a vmap: one more outer axis


@shape_only
def example_shape(x, outer=0):
    """x.shape[1:] where some pytree class computes `shape` (a property): written only then
    (transformer/normalize.py), so a batched object of such a class is refused, not read."""
    _not_an_object(x, "shape")
    return np.shape(x)[1 + outer:]


@shape_only
def example_ndim(x, outer=0):
    """x.ndim - 1 where some pytree class computes `ndim` (see example_shape)."""
    _not_an_object(x, "ndim")
    return np.ndim(x) - 1 - outer


example_shape.__secant_batch_depth__ = example_ndim.__secant_batch_depth__ = "size"


def example_len(x, outer=0):
    """len() of one example of batched x: the length of a list, tuple or dict (each leaf
    batched: its length is the example's), the first axis after the batch axes of an array."""
    if isinstance(x, (list, tuple, dict, str, bytes)):   # (a str beside batched values:
        return len(x)                                   # one for all examples)
    if is_user_sequence(x):             # (the user's container: its items, checked)
        return count_items(x)
    shape = np.shape(x)
    if len(shape) <= 1 + outer:
        raise SecantTypeError("len() of unsized object (a 0-d array)" + where())
    return shape[1 + outer]


example_len.__secant_batch_depth__ = "size"


@shape_only
def example_spec(x, outer=0):
    """Each leaf of batched x as one example's ShapeDtypeStruct (its batch axes dropped): what
    eval_shape is given for an argument vmap batches (transformer/normalize.py, as JAX's
    eval_shape sees a batched tracer's per-example aval)."""
    from secant.api_extras import ShapeDtypeStruct, _struct

    def spec(leaf):
        whole = _struct(leaf)
        return ShapeDtypeStruct(whole.shape[1 + outer:], whole.dtype, weak_type=whole.weak_type)
    return tree_util.tree_map(spec, x)


example_spec.__secant_batch_depth__ = "size"


def _at_rank(x, rank):
    """Batched x with size-1 axes after the batch axis, up to `rank` axes per example."""
    if isinstance(x, tuple):    # (an index of a batch, `(slice(None),) + idx`, batched again)
        raise _unsupported(x)
    missing = rank - (np.ndim(x) - 1)
    if missing > 0:
        x = snp.reshape(x, np.shape(x)[:1] + (1,) * missing + np.shape(x)[1:])
    return x


def align(x, y):
    """Batched x, ready to broadcast per example against unbatched y (x @ or * y)."""
    return _at_rank(x, np.ndim(y))


def align_batched(x, y):
    """Batched x, ready to broadcast per example against batched y."""
    return _at_rank(x, np.ndim(y) - 1)


@shape_only
def batch_axis(axis, x, outer=0):
    """An axis argument (int, tuple or None: all axes) of an op on one example of batched x, as
    the axis of the batched op. Read by an enclosing vmap (`outer` more batch axes in front of
    x), it stays the axis for one example of that vmap, which moves it past its own axis."""
    rank = np.ndim(x) - 1 - outer
    if x is None:       # an axis of secant's own helpers (batching/rules.py's `_next`), unchecked
        out = axis + 1 if axis >= 0 else axis
    elif axis is None:
        out = tuple(range(1, rank + 1))
    elif isinstance(axis, (tuple, list)):
        out = tuple(example_axis(a, rank) + 1 for a in axis)
    else:
        out = example_axis(axis, rank) + 1
    return out


batch_axis.__secant_batch_depth__ = True        # read by a vmap: one more outer axis


@shape_only
def batch_new_axis(axis, x, outer=0):
    """batch_axis for an op that inserts axes (expand_dims, stack): `axis` counts in the result,
    which has one more axis per example than x (or one per item of a tuple of axes)."""
    rank = np.ndim(x) - 1 - outer + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    if isinstance(axis, (tuple, list)):
        out = tuple(example_axis(a, rank) + 1 for a in axis)
    else:
        out = example_axis(axis, rank) + 1
    return out


batch_new_axis.__secant_batch_depth__ = True


def example_axis(axis, rank):
    """An axis of one example (negative: from the end) as a non-negative one, or a ValueError
    naming the user's line, as numpy's and JAX's: vmap must not let an axis past the example's
    first one reach the batch axis."""
    try:
        axis = int(axis.__index__())
    except (AttributeError, TypeError):
        raise SecantTypeError(f"an axis must be an integer, not {type(axis).__name__}"
                              + where()) from None
    if not -rank <= axis < rank:
        raise SecantValueError(f"axis {axis} is out of bounds for array of dimension {rank}"
                               + where())
    return axis % rank


@shape_only
def batch_shape(x, shape):
    """The shape argument of a reshape of one example, for batched x."""
    if isinstance(shape, (tuple, list)):
        out = np.shape(x)[:1] + tuple(shape)
    else:
        out = np.shape(x)[:1] + (shape,)
    return out


def flat_examples(x):
    """Batched x with each example flattened (ops whose axis=None means the flattened array)."""
    return snp.reshape(x, (np.shape(x)[0], example_size(x)))


def transpose_batched(x, axes=None):
    """transpose of each example of batched x (axes None: reversed)."""
    n = np.ndim(x) - 1
    if axes is None:
        perm = (0,) + tuple(range(n, 0, -1))
    else:
        perm = (0,) + tuple(example_axis(a, n) + 1 for a in axes)
    return snp.transpose(x, perm)


def squeeze_batched(x, axis=None):
    """squeeze of each example of batched x (axis None: every size-1 axis but the batch's)."""
    if axis is None:
        axis = _unit_axes(np.shape(x)[1:])
    return snp.squeeze(x, batch_axis(axis, x))


@shape_only
def _unit_axes(shape):
    return tuple(i for i, d in enumerate(shape) if d == 1)


def broadcast_batched(x, shape):
    """broadcast_to(example, shape) for each example of batched x."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    return snp.broadcast_to(_at_rank(x, len(shape)), np.shape(x)[:1] + shape)


def matmul_batched(x, y, x_batched=True, y_batched=True):
    """x @ y for each example, the batched operands with their batch axis in front."""
    if x_batched and y_batched:
        xe, ye = np.ndim(x) - 1, np.ndim(y) - 1
    elif x_batched:
        xe, ye = np.ndim(x) - 1, np.ndim(y)
    else:
        xe, ye = np.ndim(x), np.ndim(y) - 1
    if x_batched and not y_batched and ye == 2:     # (B, ..., n) @ (n, m): one product
        out = snp.matmul(x, y)
    elif y_batched and not x_batched and xe == 2 and ye == 1:     # (n, k) @ (B, k)
        out = snp.matmul(y, snp.swapaxes(x, -1, -2))
    elif y_batched and not x_batched and xe == 2:   # (n, k) @ (B, ..., k, m): one product,
        # not x broadcast over the batch (a batched product XLA runs example by example)
        out = snp.moveaxis(snp.tensordot(x, y, axes=([1], [np.ndim(y) - 2])), 0, -2)
    else:
        out = _matmul_general(x, y, x_batched, y_batched, xe, ye)
    return out


def _matmul_general(x, y, x_batched, y_batched, xe, ye):
    if not x_batched:
        x = snp.expand_dims(x, 0)
    if not y_batched:
        y = snp.expand_dims(y, 0)
    if xe == 1 and ye == 1:
        out = snp.sum(x * y, axis=-1)
    elif xe == 1:       # (n,) @ (..., n, m): a matrix with a leading batch axis
        out = snp.matmul(_at_rank(snp.expand_dims(x, -2), ye), y)[..., 0, :]
    elif ye == 1:       # (..., n, k) @ (k,)
        out = snp.matmul(x, _at_rank(snp.expand_dims(y, -1), xe))[..., 0]
    else:
        rank = max(xe, ye)
        out = snp.matmul(_at_rank(x, rank), _at_rank(y, rank))
    return out


def dot_batched(a, b, a_batched=True, b_batched=True, lax=False):
    """snp.dot of each example (dot contracts a's last axis with b's second-to-last); `lax`:
    lax.dot's, which takes examples of one or two axes only."""
    ae = np.ndim(a) - 1 if a_batched else np.ndim(a)
    be = np.ndim(b) - 1 if b_batched else np.ndim(b)
    if lax and not (ae in (1, 2) and be in (1, 2)):
        out = refuse("lax.dot takes 1-d or 2-d operands; use lax.dot_general")
    elif ae == 0 or be == 0:
        if a_batched and b_batched:
            out = align_batched(a, b) * align_batched(b, a)
        elif a_batched:
            out = align(a, b) * b
        else:
            out = a * align(b, a)
    elif be <= 2 or ae == 1:
        out = matmul_batched(a, b, a_batched, b_batched)
    else:
        out = refuse("vmap of snp.dot with an operand of more than two axes per example is "
                     "not supported yet; use snp.matmul or snp.einsum")
    return out


def outer_batched(a, b, a_batched=True, b_batched=True):
    """snp.outer of each example (both flattened)."""
    a = flat_examples(a) if a_batched else snp.expand_dims(snp.ravel(a), 0)
    b = flat_examples(b) if b_batched else snp.expand_dims(snp.ravel(b), 0)
    return snp.expand_dims(a, -1) * snp.expand_dims(b, -2)


def tensordot_batched(a, b, axes=2, a_batched=True, b_batched=True):
    """snp.tensordot of each example: the per-example contraction, then the batch axis first."""
    ae = np.ndim(a) - 1 if a_batched else np.ndim(a)
    if isinstance(axes, int):
        a_axes = tuple(range(ae - axes, ae))
        b_axes = tuple(range(axes))
    else:
        a_axes, b_axes = axes
        a_axes = (a_axes,) if isinstance(a_axes, int) else tuple(a_axes)
        b_axes = (b_axes,) if isinstance(b_axes, int) else tuple(b_axes)
    be = np.ndim(b) - 1 if b_batched else np.ndim(b)
    a_axes = tuple(x % ae for x in a_axes)
    b_axes = tuple(x % be for x in b_axes)
    if a_batched and b_batched:     # a dot_general with the batch axis as batch dimension
        out = lax.dot_general(a, b, (((tuple(x + 1 for x in a_axes)),
                                      tuple(x + 1 for x in b_axes)), ((0,), (0,))))
    elif a_batched:                 # free axes of a come first: the batch axis stays in front
        out = snp.tensordot(a, b, axes=(tuple(x + 1 for x in a_axes), b_axes))
    else:
        out = snp.tensordot(a, b, axes=(a_axes, tuple(x + 1 for x in b_axes)))
        free_a = ae - len(a_axes)
        out = snp.moveaxis(out, free_a, 0)
    return out


def dot_general_batched(lhs, rhs, dimension_numbers, lhs_batched=True, rhs_batched=True,
                        precision=None, preferred_element_type=None):
    """lax.dot_general of each example (JAX's rule: the batch axis joins the batch dimensions
    when both are batched, else it is a free dimension moved to the front)."""
    (lc, rc), (lb, rb) = dimension_numbers
    if lhs_batched and rhs_batched:
        dn = ((tuple(d + 1 for d in lc), tuple(d + 1 for d in rc)),
              ((0,) + tuple(d + 1 for d in lb), (0,) + tuple(d + 1 for d in rb)))
        out = lax.dot_general(lhs, rhs, dn, precision, preferred_element_type)
    elif lhs_batched:
        dn = ((tuple(d + 1 for d in lc), tuple(rc)), (tuple(d + 1 for d in lb), tuple(rb)))
        out = lax.dot_general(lhs, rhs, dn, precision, preferred_element_type)
        out = snp.moveaxis(out, len(lb), 0)
    else:
        dn = ((tuple(lc), tuple(d + 1 for d in rc)), (tuple(lb), tuple(d + 1 for d in rb)))
        out = lax.dot_general(lhs, rhs, dn, precision, preferred_element_type)
        out = snp.moveaxis(out, np.ndim(lhs) - len(lc), 0)
    return out


@shape_only
def batch_index(idx):
    """An index of one example (any index expression) as an index of the batch; a string is a
    dict's key (d[k] of a dict vmap read as an array: each of its values holds the batch)."""
    if isinstance(idx, str):
        return idx
    if isinstance(idx, tuple):
        out = (slice(None),) + idx
    else:
        out = (slice(None), idx)
    return out


def take_per_example(a, i, mode=None, fill_value=None):
    """a[i] (a.at[i].get(mode=...)) for each example: batched a read at batched integer indices
    i, or at a tuple of them (one per axis, every item batched, as a batched tuple is)."""
    n = np.shape(a)[0]
    if _mixed_index(i):
        return a.at[parts_index(i, _index_flags(i), np.shape(a))].get(mode=mode,
                                                                       fill_value=fill_value)
    if isinstance(i, tuple):
        rows = snp.reshape(snp.arange(n), (n,) + (1,) * (_index_rank(i) - 1))
        index = (rows,) + i
    else:
        rows = snp.reshape(snp.arange(n), (n,) + (1,) * (np.ndim(i) - 1))
        index = (rows, i)       # (named: vmap reads a batched index as one value)
    return a.at[index].get(mode=mode, fill_value=fill_value)


@structural
def _static_part(p):
    """An index part with no batch axis to give it: a slice, None or Ellipsis."""
    return p is None or p is Ellipsis or isinstance(p, slice)


@structural
def _mixed_index(i):
    """Whether a batched tuple index holds slices, None or Ellipsis beside its integer arrays
    (`(slice(None),) + idx`, batch_index's, batched again: parts_index reads it)."""
    return isinstance(i, tuple) and any(_static_part(p) for p in i) and \
        any(hasattr(p, "shape") for p in i)


@structural
def _index_flags(i):
    """Which items of a batched tuple index carry the batch axis (its arrays: every leaf)."""
    return tuple(hasattr(p, "shape") for p in i)


@shape_only
def parts_index(parts, batched, shape, a_batched=True, outer=0):
    """The index that reads one example's index tuple `parts` for every example at once, where
    `parts` mixes integer arrays that are batched (flags in `batched`) with slices, ints, None,
    Ellipsis and unbatched integer arrays (`a[:, o]` with o per example): every part becomes
    an integer array whose axes sit where NumPy puts them in one example's result (the indexed
    parts broadcast together, in place when adjacent, else first), behind the batch axis.
    `shape`: the indexed array's (its batch axis first when a_batched). Under `outer` enclosing
    vmaps (its rule, batching/rules.py HELPERS) every integer part has those batch axes in
    front as well, and so has the index (of size 1 where no part varies along one): one
    index per outer example, stacked, which take_per_example reads."""
    rank = len(shape) - int(a_batched)
    given = sum(1 for p in parts if p is not None and p is not Ellipsis)
    if given > rank:
        raise SecantValueError(f"too many indices: {given} for an example of rank {rank}"
                               f"{where()}")
    full, flags = [], []
    for p, b in zip(parts, batched):
        if outer:
            p = _outer_part(p, outer)
        elif isinstance(p, (list, tuple, int, np.integer)):
            p = np.asarray(p)           # ([0, 2], o): an index array of Python ints
        if p is Ellipsis:
            full += [slice(None)] * (rank - given)
            flags += [False] * (rank - given)
        else:
            full.append(p)
            flags.append(b)
    if not any(p is Ellipsis for p in parts):
        full += [slice(None)] * (rank - given)
        flags += [False] * (rank - given)
    taken = [k for k, p in enumerate(full) if p is not None and not isinstance(p, slice)]
    for k in taken:
        if np.issubdtype(full[k].dtype, np.bool_):
            raise UnsupportedError("a boolean mask in an index with a batched integer array "
                                   f"is not supported under vmap{where()}")
    dims = [np.shape(full[k])[outer + int(flags[k]):] for k in taken]
    block = np.broadcast_shapes(*dims)
    ones = (1,) * outer         # (the outer axes of the index items that vary along none)
    adjacent = taken == list(range(taken[0], taken[-1] + 1))
    start = sum(1 for p in full[:taken[0]] if p is None or isinstance(p, slice)) \
        if adjacent else 0
    out_rank = len(block) + sum(1 for p in full if p is None or isinstance(p, slice))
    index = []
    if a_batched:
        index.append(snp.reshape(snp.arange(shape[0]), ones + (shape[0],) + (1,) * out_rank))
    pos = 0 if adjacent else len(block)     # the next slice's (or None's) axis in the result
    axis = int(a_batched)                   # the next axis of the indexed array
    for k, p in enumerate(full):
        if k == taken[0] and adjacent:
            pos += len(block)
        if p is None:
            pos += 1
        elif isinstance(p, slice):
            items = np.arange(shape[axis])[p]
            index.append(np.reshape(items, ones + (1,) * (1 + pos) + (len(items),)
                                    + (1,) * (out_rank - pos - 1)))
            pos += 1
            axis += 1
        else:
            d = dims[taken.index(k)]
            lead = np.shape(p)[:outer + 1] if flags[k] else np.shape(p)[:outer] + (1,)
            index.append(snp.reshape(p, lead + (1,) * (start + len(block) - len(d)) + d
                                     + (1,) * (out_rank - start - len(block))))
            axis += 1
    return tuple(index)


@shape_only
def _outer_part(p, outer):
    """An index part of parts_index under `outer` enclosing vmaps: an integer array with those
    batch axes in front (a list of them, [0, i] with i batched, stacked past them); slices,
    None and Ellipsis as they are."""
    if _static_part(p):
        return p
    if isinstance(p, (list, tuple)):
        return snp.stack([_outer_part(q, outer) for q in p], axis=outer)
    if isinstance(p, (int, np.integer)):
        return np.reshape(p, (1,) * outer)
    return snp.asarray(p)


def _at_method(a, index, values, method, mode=None):
    """a.at[index].<method>(values, mode=mode), the method named by a string."""
    if method == "set":
        out = a.at[index].set(values, mode=mode)
    elif method == "add":
        out = a.at[index].add(values, mode=mode)
    elif method == "mul":
        out = a.at[index].mul(values, mode=mode)
    elif method == "min":
        out = a.at[index].min(values, mode=mode)
    else:
        out = a.at[index].max(values, mode=mode)
    return out


def update_per_example(a, i, values, method, size, a_batched=True, values_batched=True,
                       mode=None):
    """a.at[i].<method>(values, mode=...) for each example, i a batched integer index (or a
    batched tuple of them): each example updates its own row of a (broadcast if unbatched)."""
    if _mixed_index(i):
        return update_parts_per_example(a, i, _index_flags(i), values, method, size, a_batched,
                                        values_batched, mode)
    a = broadcast_batch(a, size) if not a_batched else snp.asarray(a)
    index = _per_example_index(i, size)
    if values_batched:      # per example: the indexed shape, then a's axes not indexed
        values = _at_rank(values, np.ndim(index[0]) - 1 + np.ndim(a) - len(index))
    return _at_method(a, index, values, method, mode=mode)


def take_per_example_at(a, indices, axis=None, mode=None, fill_value=None, a_batched=True):
    """snp.take(a, indices, axis, mode, fill_value) for each example, the indices batched (a
    too, when a_batched): the mode's indices (wrap: modulo the axis; clip: clamped into it)
    read at parts_index's index, out-of-range ones filled (mode 'fill', take's default)."""
    mode = "fill" if mode is None else mode
    if mode == "raise":
        raise UnsupportedError("take(mode='raise') with batched indices cannot check each "
                               f"example's indices; use mode='fill', 'clip' or 'wrap'{where()}")
    a = snp.asarray(a)
    if axis is None:            # the flattened examples
        a = snp.reshape(a, np.shape(a)[:1] + (-1,)) if a_batched else snp.ravel(a)
        axis = 0
    axis = axis % (np.ndim(a) - int(a_batched))
    n = np.shape(a)[axis + int(a_batched)]
    if mode == "wrap":
        indices = snp.remainder(indices, n)
    elif mode == "clip":
        indices = snp.clip(indices, 0, n - 1)
    index = parts_index((slice(None),) * axis + (indices,), (False,) * axis + (True,),
                        np.shape(a), a_batched)
    if mode == "fill":
        out = a.at[index].get(mode="fill", fill_value=fill_value)
    else:
        out = a[index]
    return out


def _window_parts(a, starts, sizes, a_batched):
    """lax.dynamic_slice's window for each example as index parts (parts_index): per axis the
    example's start, clamped into range as lax does, plus arange(size) on that axis."""
    shape = np.shape(a)[int(a_batched):]
    if not isinstance(starts, (tuple, list)):       # one batched array of starts: its columns
        starts = [starts[:, d] for d in range(len(shape))]
    parts = []
    for d in range(len(shape)):
        start = snp.clip(broadcast_batch(starts[d], 1) if np.ndim(starts[d]) == 0
                         else starts[d], 0, shape[d] - sizes[d])
        along = (1,) * d + (sizes[d],) + (1,) * (len(shape) - d - 1)
        parts.append(snp.reshape(start, (-1,) + (1,) * len(shape))
                     + snp.reshape(snp.arange(sizes[d]), (1,) + along))
    return tuple(parts)


def dynamic_slice_per_example(a, starts, sizes, a_batched=True):
    """lax.dynamic_slice(a, starts, sizes) for each example, the starts batched: one gather."""
    parts = _window_parts(a, starts, sizes, a_batched)
    return snp.asarray(a)[parts_index(parts, (True,) * len(parts), np.shape(a), a_batched)]


def dynamic_update_slice_per_example(a, update, starts, size, a_batched=True,
                                     update_batched=True):
    """lax.dynamic_update_slice(a, update, starts) for each example, the starts batched."""
    sizes = np.shape(update)[int(update_batched):]
    a = broadcast_batch(a, size) if not a_batched else snp.asarray(a)
    parts = _window_parts(a, starts, sizes, True)
    return a.at[parts_index(parts, (True,) * len(parts), np.shape(a))].set(update)


def update_parts_per_example(a, parts, batched, values, method, size, a_batched=True,
                             values_batched=True, mode=None):
    """a.at[parts].<method>(values, mode=...) for each example, `parts` an index tuple mixing
    batched integer arrays (flags in `batched`) with slices, ints and None (parts_index)."""
    a = broadcast_batch(a, size) if not a_batched else snp.asarray(a)
    index = parts_index(parts, batched, np.shape(a))
    if values_batched:      # per example: right-aligned against the indexed shape
        values = _at_rank(values, np.ndim(index[0]) - 1)
    return _at_method(a, index, values, method, mode=mode)


def update_per_example_batched(a, i, values, method, size, a_batched, values_batched, n,
                               a_outer, i_outer, values_outer):
    """update_per_example under an enclosing vmap of n examples (`*_outer`: the arguments it
    batches, their axis in front of the inner one): its n * size examples updated at once."""
    a = _outer_and_inner(a, a_batched, a_outer, size, n)
    values = _outer_and_inner(values, values_batched, values_outer, size, n)
    items = i if isinstance(i, tuple) else (i,)
    flat = tuple(k if _static_part(k) else _merge_two_axes(_outer_and_inner(k, True, i_outer,
                                                                           size, n))
                 for k in items)        # (a slice of a mixed index: one for all examples)
    out = update_per_example(_merge_two_axes(a), flat if isinstance(i, tuple) else flat[0],
                             _merge_two_axes(values), method, n * size)
    return snp.reshape(out, (n, size) + np.shape(out)[1:])


def _outer_and_inner(x, inner, outer, size, n):
    """x with the enclosing vmap's axis (n) and then the inner batch axis (size) in front."""
    x = snp.asarray(x)
    if not outer:
        x = broadcast_batch(x, n)
    if not inner:
        x = snp.broadcast_to(snp.expand_dims(x, 1), (n, size) + np.shape(x)[1:])
    return x


def _merge_two_axes(x):
    return snp.reshape(x, (np.shape(x)[0] * np.shape(x)[1],) + np.shape(x)[2:])


@shape_only
def _per_example_index(i, size):
    """A batched integer index (or a batched tuple of them: every item batched) as one index of
    the batch: each example's row first, its own index items aligned as NumPy broadcasts them
    for that example."""
    items = i if isinstance(i, tuple) else (i,)
    rank = _index_rank(items)
    index = [snp.reshape(snp.arange(size), (size,) + (1,) * (rank - 1))]
    for item in items:
        index.append(_at_rank(item, rank - 1))
    return tuple(index)


@shape_only
def _index_rank(index):
    """The rank of a batched tuple index's broadcast items (each an integer array: a slice or
    None among them would move the example axes, so it is refused)."""
    rank = 0
    for item in index:
        if not hasattr(item, "shape"):
            raise SecantTypeError("vmap reads a batched tuple index only when every item is an "
                                  f"integer array (got {type(item).__name__}){where()}")
        if np.ndim(item) > rank:
            rank = np.ndim(item)
    return rank


@shape_only
def refuse(message):
    """Raise SecantTypeError(message): a case a helper does not support (a call, so the helper
    stays a function the transforms read)."""
    raise SecantTypeError(f"{message}{where()}")


@shape_only
def pad_batched(pad_width, x):
    """snp.pad's pad_width of one example of batched x, with no padding on the batch axis."""
    n = np.ndim(x) - 1
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64).reshape(-1, 2)
                             if np.ndim(pad_width) else np.full((1, 2), pad_width), (n, 2))
    return ((0, 0),) + tuple((int(lo), int(hi)) for lo, hi in widths)


def update_batched(a, idx, values, method, values_batched=True, mode=None):
    """a.at[idx].<method>(values, mode=...) for each example (a batched; values batched or
    not)."""
    target = a[batch_index(idx)]
    target_rank = np.ndim(target) - 1
    if values_batched:
        values = _at_rank(values, target_rank)
    index = batch_index(idx)
    return _at_method(a, index, values, method, mode=mode)


def update_batched_outer(a, idx, values, method, values_batched, mode, n, a_outer, idx_outer,
                         values_outer):
    """update_batched under an enclosing vmap of n examples (`*_outer`: the arguments it
    batches, their axis in front of the inner one): the two batch axes merged into one of
    n * size examples, each updated at its own index (its outer example's: update_parts_per_
    example), as its inner example's `a.at[idx]` is."""
    a = _outer_and_inner(a, True, a_outer, 1, n)
    size = np.shape(a)[1]
    values = _outer_and_inner(values, values_batched, values_outer, size, n) \
        if values_batched or values_outer else values
    items = idx if isinstance(idx, tuple) else (idx,)
    if idx_outer:       # (every leaf batched: an int item is an array of n ints)
        parts = tuple(p if _static_part(p) else
                      _merge_two_axes(_outer_and_inner(p, False, True, size, n)) for p in items)
        flags = tuple(hasattr(p, "shape") for p in parts)
    merged = values_batched or values_outer
    flat = _merge_two_axes(a)
    values = _merge_two_axes(values) if merged else values
    if idx_outer and any(flags):
        out = update_parts_per_example(flat, parts, flags, values, method, n * size,
                                       values_batched=merged, mode=mode)
    else:
        out = update_batched(flat, idx, values, method, merged, mode=mode)
    return snp.reshape(out, (n, size) + np.shape(out)[1:])


def select_batched(pred, on_true, on_false):
    """For each example, on_true's value (any pytree) where its pred is true, else on_false's:
    lax.cond with a batched predicate."""
    check_selectable(on_true, on_false)
    return tree_util.tree_map(lambda t, f: _select_leaf(pred, t, f), on_true, on_false)


@structural
def check_selectable(on_true, on_false):
    """select_batched's sides of two structures: jit's CarryChanged, a batched while loop's
    body that changes its carry's structure (`xs = xs + [x]` with a static trip count, which
    jit traces again with Python loops as written, as jax.jit runs them)."""
    try:
        tree_util.tree_structure(on_true).flatten_up_to(on_false)
    except (ValueError, TypeError):
        from secant.backends.control_flow import CarryChanged
        raise CarryChanged(f"the values selected per example differ in structure: "
                           f"{tree_util.tree_structure(on_true)} and "
                           f"{tree_util.tree_structure(on_false)}{where()}") from None


check_selectable.__secant_check__ = True      # (a statement: no value)


def _select_leaf(pred, t, f):
    # a placeholder for a value only the other branch computes (a derivative's residual, read
    # only where the same test holds: transformer/functionalize.py) is that branch's value
    if isinstance(f, Undefined):
        return t
    if isinstance(t, Undefined):
        return f
    return snp.where(_at_rank(pred, np.ndim(t) - 1), t, f)


def choose_batched(index, branches):
    """For each example, the output of the branch its index selects (clamped, as lax.switch):
    lax.switch with a batched index."""
    index = snp.clip(index, 0, len(branches) - 1)
    out = branches[-1]
    for k in range(len(branches) - 2, -1, -1):
        out = select_batched(index == k, branches[k], out)
    return out


def any_example(pred):
    """Whether any example's predicate is true (a batched while_loop runs until none is)."""
    return snp.any(pred)


def unbound_axis(name, bound):
    raise SecantValueError(f"unbound axis name: {name!r} (the mapped axes here are "
                           f"{list(bound)}){where()}")


NAMES = ("batch_size_of", "broadcast_batch", "example_size", "example_len", "align", "align_batched",
         "example_shape", "example_ndim", "example_spec",
         "batch_axis", "batch_new_axis", "batch_shape", "flat_examples", "transpose_batched",
         "squeeze_batched",
         "broadcast_batched", "matmul_batched", "dot_batched", "outer_batched",
         "tensordot_batched", "dot_general_batched", "batch_index", "take_per_example",
         "parts_index", "update_parts_per_example", "take_per_example_at",
         "dynamic_slice_per_example", "dynamic_update_slice_per_example",
         "pad_batched", "update_batched", "update_batched_outer",
         "select_batched", "choose_batched", "any_example")


def by_name():
    """Every helper batched code may call, by the name it uses (a read-only table, built once
    NAMES is complete: every transform asks it several times, issue 19)."""
    global _BY_NAME
    if _BY_NAME[0] is not NAMES:        # (NAMES grows as this module loads)
        _BY_NAME = (NAMES, types.MappingProxyType({n: globals()[n] for n in NAMES}))
    return _BY_NAME[1]


_BY_NAME = (None, None)


def all_gather_batched(x, axis=0, tiled=False):
    """lax.all_gather over the vmapped axis: every example's x, stacked at `axis` (or
    concatenated, tiled); the same for every example, so unbatched."""
    out = snp.moveaxis(x, 0, axis)
    if tiled:
        shape = np.shape(out)
        out = snp.reshape(out, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:])
    return out


def psum_scatter_batched(x, scatter_dimension=0, tiled=False):
    """lax.psum_scatter over the vmapped axis: the batch's sum, each example keeping its own
    block of it along scatter_dimension (batched: example i's block i)."""
    n = np.shape(x)[0]
    blocks = snp.moveaxis(snp.sum(x, axis=0), scatter_dimension, 0)     # (a block per example)
    shape = np.shape(blocks)
    if shape[0] % n if tiled else shape[0] != n:
        raise SecantValueError(f"psum_scatter: dimension {scatter_dimension} of the operand has "
                               f"size {shape[0]}, which must "
                               f"{'be a multiple of' if tiled else 'equal'} the axis size {n}")
    if not tiled:
        return blocks
    d = scatter_dimension % len(shape)
    return snp.moveaxis(snp.reshape(blocks, (n, shape[0] // n) + shape[1:]), 1, d + 1)


def batch_second(tree):
    """Batched xs of a scan or map with the scanned axis first and the batch axis second."""
    return tree_util.tree_map(lambda leaf: snp.swapaxes(leaf, 0, 1), tree)


def batch_first(tree):
    """A scan's stacked ys (scanned axis first, batch axis second) with the batch axis first."""
    return tree_util.tree_map(lambda leaf: snp.swapaxes(leaf, 0, 1), tree)


def batch_axis_to(tree, axis, depth=0):
    """Every leaf of a batched output (a helper's tuple, say) with its batch axis at `axis` (vmap's
    out_axes; `depth` batch axes of enclosing vmaps in front). An axis out of range for an
    output is an error of the vmap call (secant/batch.py names the caller's line)."""
    return tree_util.tree_map(
        lambda leaf: snp.moveaxis(leaf, depth, out_batch_axis(axis, leaf, depth) + depth), tree)


@shape_only
def out_batch_axis(axis, x, outer=0):
    """Where batch_axis_to puts batched x's batch axis: out_axes `axis`, checked, as an axis of
    x past the `outer` batch axes of enclosing vmaps (as batch_axis counts them)."""
    rank = np.ndim(x) - outer       # of the output, with its batch axis
    if not -rank <= axis < rank:
        raise _out_axes_error(axis, rank)
    return axis % rank


out_batch_axis.__secant_batch_depth__ = True


def _out_axes_error(axis, rank):
    e = SecantValueError(f"vmap out_axes={axis} is out of bounds for an output of {rank - 1} "
                         f"dimension{'s' if rank != 2 else ''} per example (out_axes must be in "
                         f"[{-rank}, {rank - 1}])")
    e.vmap_call = True      # (secant/batch.py names the line of the vmapped call)
    return e


NAMES = NAMES + ("all_gather_batched", "psum_scatter_batched", "batch_second", "batch_first", "batch_axis_to",
                 "out_batch_axis")


def grad_of_fields_batched(tree, fields, n, tree_batched):
    """ad/helpers.py's grad_of_fields for batched field cotangents: the fields not read get
    zeros with a batch axis too."""
    if has_attr(tree, "shape") and not isinstance(tree, (dict, list, tuple)):
        # an array read at integer indices (ws[0]): each example's cotangent at its index
        out = snp.zeros_like(tree) if tree_batched else \
            snp.zeros((n,) + tuple(np.shape(tree)), snp.result_type(tree))
        for k, g in fields.items():      # (a read clamped k: added where it read)
            out = out.at[batch_index(k)].add(g, mode="clip")
        return out
    if not tree_batched and not _read_as_container(tree, fields):
        # a registered or plain object, a namedtuple, a method's object read field by field:
        # its zeros get the batch axis the fields' cotangents have (grad_of_fields adds a
        # method's cotangent to the zeros of its object: an unbatched zero added there would
        # broadcast against the batch axis of an enclosing vmap)
        tree = broadcast_batch(tree, n)
        tree_batched = True
    out = grad_of_fields(tree, fields)
    if not tree_batched:
        given = set(fields)
        if isinstance(out, dict):
            out = {k: v if k in given else broadcast_batch(v, n) for k, v in out.items()}
        elif isinstance(out, (list, tuple)) and not hasattr(out, "_fields"):
            items = [v if i in given else broadcast_batch(v, n) for i, v in enumerate(out)]
            out = tuple(items) if isinstance(out, tuple) else items
    return out


def _read_as_container(tree, fields):
    """Whether grad_of_fields_batched batches the zeros of an unbatched `tree` after
    grad_of_fields (a dict, a list, a plain tuple: item by item) or builds no zeros (a method
    whose cotangent is its object's, given)."""
    if isinstance(tree, (dict, list)) or isinstance(tree, tuple) and not hasattr(tree, "_fields"):
        return True
    return isinstance(tree, types.MethodType) and set(fields) == {"__self__"}


_read_as_container.__secant_static_query__ = True


def fields_of_batched(tree_bar, fields, n, tree_bar_batched):
    """ad/helpers.py's fields_of for a batched cotangent: an array's items at integer keys are
    read past the batch axis (each example's own item), a container's as written; an unbatched
    cotangent gets a batch axis first (the keys' values are not read)."""
    batched = tree_bar if tree_bar_batched else broadcast_batch(tree_bar, n)
    out = []
    for k in fields:
        out.append(_field_of_batched(batched, k, n))
    return tuple(out)


def _field_of_batched(tree_bar, k, n):
    # (tree_bar a parameter, k a name: vmap reads `tree_bar[k]` as an item of a container or
    # of each example, as it turns out when it runs)
    if isinstance(k, str) and not isinstance(tree_bar, dict):
        if aux_attribute(tree_bar, k):      # (a number in aux data: no cotangent)
            return broadcast_batch(zeros_like_tree(getattr(tree_bar, k)), n)
        return getattr(tree_bar, k)
    return item_of(tree_bar, k)     # (which a vmap of this reads past its own batch axis too)


@shape_only
def grad_seed_batched(out):
    """ad/helpers.py's grad_seed for a batch of scalar outputs (ones: a constant of a
    derivative, as grad_seed is)."""
    if np.ndim(out) != 1:                              # grad_seed's error, for one example
        return grad_seed(out[0] if np.ndim(out) else out)
    return snp.ones_like(out)


@shape_only
def grad_seed_like_batched(x, n, y=None):
    """ad/helpers.py's grad_seed_like for a batch of n outputs, each a scalar of x's dtype (or
    x's and y's promoted: the transform proved it): one seed an example, the dtype read as for
    one example."""
    return broadcast_batch(grad_seed_like(x, y), n)


@shape_only
def grad_seed_scaled_batched(x, k, n, k_batched):
    """ad/helpers.py's grad_seed_scaled for a batch of n outputs: each example's k a scalar
    (a batched k's rows), the dtype read as for one example."""
    return broadcast_batch(grad_seed_scaled(x, k[0] if k_batched else k), n)


def add_at_batched(tree_bar, idx, g, n, tree_bar_batched, idx_batched=False, g_batched=True):
    """ad/helpers.py's add_at with batched cotangents: an array's index moves past the batch
    axis (a batched index: each example adds at its own); a container's items add leaf by leaf
    (an unbatched container gets a batch axis)."""
    if not tree_bar_batched:
        tree_bar = broadcast_batch(tree_bar, n)
    container = is_user_container(tree_bar)     # (the user's pytree object: as a container)
    if isinstance(tree_bar, (list, tuple, dict)):
        container = True
    if container:
        if not g_batched:   # (its batch axis in front as the items': under a further vmap g
            g = broadcast_batch(g, n)   # has that vmap's axis in front, which must line up)
        return add_at(tree_bar, idx, g)
    if idx_batched:
        return update_per_example(tree_bar, idx, g, "add", n, True, g_batched, mode="clip")
    parts = idx if isinstance(idx, tuple) else (idx,)     # (no `a and b`: the transforms
    if any(i is Ellipsis for i in parts):                  # read this helper, vmap of it too)
        # flat[..., a:b] counts its axes from the end: the batch axis stays in front
        return tree_bar.at[(slice(None),) + parts].add(g, mode="clip")
    # the batch axis moved last, so that the index is the example's own (no slice in front: a
    # further vmap reads a batched idx as one value); a read clamped idx: add where it read
    g = snp.moveaxis(g, 0, -1) if g_batched else snp.expand_dims(g, -1)
    out = snp.moveaxis(tree_bar, 0, -1).at[idx].add(g, mode="clip")
    return snp.moveaxis(out, -1, 0)


def add_at_grad_batched(t, idx, item, n, t_batched, item_batched):
    """ad/helpers.py's add_at_grad with a batched cotangent: an array's item read past the batch
    axis and summed to one example's item shape; a container's item as written."""
    if not t_batched:
        t = broadcast_batch(t, n)
    container = is_user_container(t)
    if isinstance(t, (list, tuple, dict)):
        container = True
    if container:
        out = add_at_grad(t, idx, item)
        if isinstance(idx, slice) and not isinstance(item, (list, tuple)):
            out = snp.moveaxis(out, 0, 1)       # (stacked past the batch axis)
        return out
    idx = idx if isinstance(idx, tuple) else (idx,)
    got = t.at[(slice(None),) + idx].get(mode="clip")
    example = tuple(np.shape(item)[1:] if item_batched else np.shape(item))
    lead = np.ndim(got) - 1 - len(example)      # (item broadcast: summed, past the batch axis)
    if lead > 0:
        got = snp.sum(got, axis=tuple(range(1, 1 + lead)))
    return unbroadcast(got, snp.zeros((n,) + example, snp.result_type(got)))


# a container (a cotangent of a list of layers) and the item added into it where they are
# pytrees, though their branches for arrays read them as arrays (ad/reverse.py _tree_items)
add_at_batched.__secant_tree_args__ = add_at_grad_batched.__secant_tree_args__ = (0, 2)
NAMES = NAMES + ("grad_of_fields_batched", "fields_of_batched", "grad_seed_batched",
                 "grad_seed_like_batched", "grad_seed_scaled_batched",
                 "add_at_batched", "add_at_grad_batched")


def item_of(x, i, depth=1):
    """x[i] of one example: a field of a batched tuple, list or dict (each leaf batched), or
    element i of each example of a batched array; `depth` batch axes in front (nested vmap)."""
    if isinstance(x, (tuple, list, dict)):
        out = x[i]
    elif is_user_sequence(x):           # (its __getitem__, checked against its __iter__)
        count_items(x)
        out = x[i]
    elif depth == 1:
        out = x[:, i]
    else:
        out = snp.take(x, i, axis=depth)
    return out


def index_examples(x, idx, depth=1):
    """x[idx] of one example (idx a tuple, as index_exp[...] writes it): an item or slice of a
    list, tuple or dict (each leaf batched), or of each example of an array past its `depth`
    batch axes."""
    if isinstance(x, (list, tuple, dict)):
        return x[idx[0] if len(idx) == 1 else idx]
    return x[(slice(None),) * depth + tuple(idx)]


NAMES = NAMES + ("item_of", "index_examples", "update_per_example",
                 "update_per_example_batched")


def for_each_example(fn, *batched):
    """fn(*examples) for each example of the batched arrays (batch axis first): a debug.print or
    debug.callback under vmap, called once per example as in JAX."""
    for k in range(np.shape(batched[0])[0]):
        fn(*[b[k] for b in batched])


for_each_example.__secant_print__ = True        # (kept as written by an outer vmap or grad)
NAMES = NAMES + ("for_each_example",)


def unconcatenate_batched(t, arrays, axis, n, t_batched, arrays_batched):
    """ad/helpers.py's unconcatenate of each example: the pieces of t (batch axis first) sized
    like one example of each array."""
    if not t_batched:
        t = broadcast_batch(t, n)
    shapes = [tuple(np.shape(a)[1:]) if arrays_batched else tuple(np.shape(a)) for a in arrays]
    if axis is None:
        sizes = [int(np.prod(s)) for s in shapes]
        pieces = snp.split(snp.reshape(t, (np.shape(t)[0], -1)),
                           np.cumsum(sizes)[:-1].tolist(), axis=1)
        out = [snp.reshape(p, np.shape(t)[:1] + s) for p, s in zip(pieces, shapes)]
    else:
        axis = axis % len(shapes[0])
        sizes = [s[axis] for s in shapes]
        out = snp.split(t, np.cumsum(sizes)[:-1].tolist(), axis=axis + 1)
    return out


NAMES = NAMES + ("unconcatenate_batched",)


def add_n_grad_batched(t, arrays, t_batched=True, arrays_batched=True, size=None):
    """add_n_grad (ad/helpers.py) for each example: each item's cotangent t summed to that
    item's per-example shape. `t_batched` / `arrays_batched`: whether t / every item has the
    batch axis 0 (an item not batched has one shape for all examples: the cotangent of a
    primal computed once, pulled back by a batch of cotangents); the cotangents are batched."""
    pieces = []
    t_off = 1 if t_batched else 0
    for a in arrays:
        shape = np.shape(a)[1:] if arrays_batched else np.shape(a)     # one example's
        lead = np.ndim(t) - t_off - len(shape)
        axes = tuple(range(t_off, t_off + lead)) + tuple(
            i + lead + t_off for i in range(len(shape))
            if shape[i] == 1 and np.shape(t)[i + lead + t_off] != 1)
        piece = snp.sum(t, axis=axes) if axes else t
        if t_batched:
            piece = piece.reshape((np.shape(t)[0],) + tuple(shape))
        else:
            piece = snp.broadcast_to(piece.reshape(shape), (size,) + tuple(shape))
        pieces = pieces + [piece]
    return tuple(pieces) if isinstance(arrays, tuple) else pieces


def add_n_batched(items):
    """sum(items) for each example: every item batched (axis 0), each example broadcast
    against the others as NumPy would (missing axes go after the batch axis)."""
    rank = 0
    for a in items:
        if np.ndim(a) > rank:
            rank = np.ndim(a)
    total = _at_rank(items[0], rank - 1)
    for k in range(1, len(items)):
        total = total + _at_rank(items[k], rank - 1)
    return total


def stack_examples(items, axis=1, depth=1):
    """snp.stack of a batched list (every leaf batched, axis 0) for each example, `axis`
    already past the batch axis; an item that is a list itself is stacked first, as NumPy
    converts nested lists. `depth` batch axes in front (nested vmap)."""
    arrays = [stack_examples(a, depth, depth) if isinstance(a, (list, tuple)) else a
              for a in items]
    return snp.stack(arrays, axis=axis)


NAMES = NAMES + ("add_n_grad_batched", "add_n_batched", "stack_examples")


def random_batched(sampler, key, *args, batched=("key",), **kwargs):
    """A secant.random call for each example (vmap of `sampler(key, *args, **kwargs)`), the
    arguments named in `batched` with their batch axis in front. A batch of keys alone is hashed
    at once (threefry is elementwise in the key words: the same bits as one key at a time);
    other batched arguments map the call over the examples (a rolled loop under jit)."""
    from secant import random
    if tuple(batched) == ("key",) and sampler.__secant_random__ == "keys":
        return sampler(random.KeyBatch(key), *args, **kwargs)
    bound = inspect.signature(sampler).bind(key, *args, **kwargs).arguments
    names = tuple(batched)

    def one(example):
        return sampler(**{**bound, **dict(zip(names, example))})
    return lax.map(one, tuple(bound[n] for n in names))


def _defined(rule):
    code = getattr(rule, "__code__", None)
    at = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return f"{getattr(rule, '__name__', rule)}{at}"


def custom_vmap_outputs(out, out_batched, size, rule, depth=1):
    """A custom_vmap rule's outputs with the batch axis in front of every one: those it marks
    unbatched (out_batched: a bool, or a pytree of them like out) are broadcast. `depth`: the
    batch axis is the depth-th (an enclosing vmap's axes come first)."""
    leaves, treedef = tree_util.tree_flatten(out)
    if isinstance(out_batched, bool):
        flags = [out_batched] * len(leaves)
    else:
        flags = tree_util.tree_leaves(out_batched)
        if tree_util.tree_structure(out_batched) != treedef or \
                not all(isinstance(b, bool) for b in flags):
            raise SecantTypeError(f"custom_vmap rule {_defined(rule)} must return (out, "
                                  f"out_batched) with out_batched a bool or a pytree of bools "
                                  f"like out ({treedef}), got {out_batched!r}{where()}")
    moved = []
    for leaf, b in zip(leaves, flags):
        shape = np.shape(leaf)
        if b and shape[depth - 1:depth] != (size,):
            raise SecantValueError(f"custom_vmap rule {_defined(rule)} marked an output of "
                                   f"shape {shape[depth - 1:]} batched, but the batch size is "
                                   f"{size}: a batched output has the batch axis first{where()}")
        if not b:
            lead = shape[:depth - 1]
            leaf = snp.broadcast_to(snp.reshape(leaf, lead + (1,) + shape[depth - 1:]),
                                    lead + (size,) + shape[depth - 1:])
        moved.append(leaf)
    return treedef.unflatten(moved)


random_batched.__secant_random__ = "batched"     # vmap of vmap: read as a random call again
NAMES = NAMES + ("random_batched", "custom_vmap_outputs", "unset_in_branch", "unbound_before_loop",
                 "check_bound")

# windowed operations (issue 17): lax.conv_general_dilated of each example
from secant.batching.conv_helpers import NAMES as _CONV_NAMES, conv_batched  # noqa: E402,F401
NAMES = NAMES + _CONV_NAMES

# Their `if`s test flags and ranks, which are Python values even while jit traces: jit's
# functionalisation (transformer/functionalize.py) leaves them as Python `if`s
for _name in NAMES + ("_at_rank", "_matmul_general"):
    globals()[_name].__secant_functionalized__ = True


# an axis argument of an op whose axis=None means the flattened example (argmax, cumsum, take,
# sort), given as a value only known when the batched code runs (vmap(snp.argmax))
def flat_examples_if(x, axis):
    """Batched x with each example flattened when `axis` is None, else x as it is."""
    if axis is None:
        x = flat_examples(x)
    return x


@shape_only
def batch_flat_axis(axis, x, outer=0):
    """The batched op's axis for flat_examples_if(x, axis): 1 (the flattened examples) for
    None, else batch_axis's."""
    if axis is None:
        out = 1
    else:
        out = batch_axis(axis, x, outer)
    return out


batch_flat_axis.__secant_batch_depth__ = True        # read by a vmap: one more outer axis
NAMES = NAMES + ("flat_examples_if", "batch_flat_axis")

"""Products and contractions: dot, matmul, inner, outer, tensordot, einsum, kron, cross, trace.

Every contraction is one dot_general (plus transposes and reshapes), so all of them trace into a
single StableHLO dot_general under jit.
"""
import builtins

import numpy as np

from secant.backends import dtypes
from secant.backends.array import Array
from secant.backends.core import FAST_FLOATS, quiet_call
from secant.backends.errors import SecantTypeError, SecantValueError, ShapeError, where
from secant.backends.primitives import elementwise as ew
from secant.backends.primitives import structural as st
from secant.numpy.conversion import convert, ensure_array, promote
from secant.numpy.creation import diagonal
from secant.numpy.reductions import sum as _sum
from secant.numpy.shape import (_normalize_axis, _slice_axis, broadcast_shapes, broadcast_to,
                                conjugate, moveaxis, ravel, reshape, squeeze, stack, transpose)
from secant.numpy.ufuncs import multiply, subtract


def _dot_general(a, b, contract, batch=((), ()), preferred_element_type=None):
    """dot_general on promoted operands; booleans contract as integers and come back as bool."""
    pet = dtypes.canonicalize_dtype(preferred_element_type) \
        if preferred_element_type is not None else None
    dn = (tuple(contract[0]), tuple(contract[1])), (tuple(batch[0]), tuple(batch[1]))
    if dtypes.is_bool(a.dtype):
        counts = st.dot_general_p.bind(convert(a, dtypes.default_int()),
                                       convert(b, dtypes.default_int()), dimension_numbers=dn)
        out = ew.ne_p.bind(counts, convert(0, counts.dtype))
        return out if pet is None else convert(out, pet)
    return st.dot_general_p.bind(a, b, dimension_numbers=dn, preferred_element_type=pet)


def _operands(a, b):
    return promote(ensure_array(a), ensure_array(b))


def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's dot: a's last axis against b's second-to-last (or only) axis."""
    a, b = _operands(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    b_axis = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[b_axis]:
        raise ShapeError(f"dot: shapes {a.shape} and {b.shape} are not aligned (axis "
                         f"{a.ndim - 1} of size {a.shape[-1]} vs axis {b_axis} of size "
                         f"{b.shape[b_axis]}){where()}")
    return _dot_general(a, b, ((a.ndim - 1,), (b_axis,)),
                        preferred_element_type=preferred_element_type)


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's rules: 1-D operands gain and lose an axis, batches broadcast."""
    if type(a) is Array and type(b) is Array and preferred_element_type is None:
        v, w = a._npy, b._npy      # two eager float matrices of one dtype: NumPy's matmul, as
        if type(v) is np.ndarray and type(w) is np.ndarray and v.ndim == 2 == w.ndim \
                and v.dtype in FAST_FLOATS and w.dtype == v.dtype and v.shape[1] == w.shape[0]:
            return Array._wrap_ndarray(quiet_call(np.matmul, v, w),     # dot_general's impl
                                       a.weak_type and b.weak_type)    # computes them
    a, b = _operands(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise SecantValueError(f"matmul: operands must be at least 1-D, got shapes {a.shape} and "
                               f"{b.shape}{where()}")
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    a_shape = (1,) + a.shape if a_vec else a.shape      # (NumPy's rule: a vector gains an
    b_shape = b.shape + (1,) if b_vec else b.shape      # axis, which the result loses)
    if a_shape[-1] != b_shape[-2]:
        raise ShapeError(f"matmul: contracting dimensions differ: {a_shape} @ {b_shape} "
                         f"({a_shape[-1]} vs {b_shape[-2]}){where()}")
    if b_vec or a_vec and b.ndim == 2:
        # a vector contracts as it is, its axis neither added nor squeezed (one dot_general
        # under jit, as jax's; no reshape before and after it): a's last axis against b's first
        return _dot_general(a, b, ((a.ndim - 1,), (0,)),
                            preferred_element_type=preferred_element_type)
    if a_vec:
        a = reshape(a, (1,) + a.shape)
    if b.ndim == 2:
        # No batch on the right: contract directly, the left's batch dims stay in front.
        out = _dot_general(a, b, ((a.ndim - 1,), (0,)),
                           preferred_element_type=preferred_element_type)
    else:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = broadcast_to(a, batch + a.shape[-2:])
        b = broadcast_to(b, batch + b.shape[-2:])
        nb = len(batch)
        out = _dot_general(a, b, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))),
                           preferred_element_type=preferred_element_type)
    if a_vec:
        out = squeeze(out, -2)
    return out


def vdot(a, b, *, precision=None, preferred_element_type=None):
    a, b = _operands(a, b)
    return dot(conjugate(ravel(a)), ravel(b), preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Dot products of vectors along `axis`, broadcasting the other axes."""
    a, b = _operands(x1, x2)
    a, b = moveaxis(a, axis, -1), moveaxis(b, axis, -1)
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"vecdot: vector lengths differ: {a.shape[-1]} vs {b.shape[-1]}"
                         f"{where()}")
    out = matmul(reshape(conjugate(a), a.shape[:-1] + (1, a.shape[-1])),
                 reshape(b, b.shape + (1,)), preferred_element_type=preferred_element_type)
    return reshape(out, out.shape[:-2])


def inner(a, b, *, precision=None, preferred_element_type=None):
    a, b = _operands(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner: last dimensions differ: {a.shape} and {b.shape}{where()}")
    return _dot_general(a, b, ((a.ndim - 1,), (b.ndim - 1,)),
                        preferred_element_type=preferred_element_type)


def outer(a, b, out=None):
    a, b = _operands(a, b)
    a, b = ravel(a), ravel(b)
    return multiply(reshape(a, (a.shape[0], 1)), reshape(b, (1, b.shape[0])))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Contract a's `axes` with b's: an int N means a's last N against b's first N."""
    a, b = _operands(a, b)
    if isinstance(axes, int):
        if not 0 <= axes <= builtins.min(a.ndim, b.ndim):
            raise SecantValueError(f"tensordot: axes={axes} does not fit shapes {a.shape} and "
                                   f"{b.shape}{where()}")
        a_axes = tuple(range(a.ndim - axes, a.ndim))
        b_axes = tuple(range(axes))
    else:
        try:
            a_axes, b_axes = axes
        except (TypeError, ValueError):
            raise SecantTypeError(f"tensordot: axes must be an int or a pair of axis sequences, "
                                  f"got {axes!r}{where()}") from None
        a_axes = a_axes if isinstance(a_axes, (tuple, list)) else (a_axes,)
        b_axes = b_axes if isinstance(b_axes, (tuple, list)) else (b_axes,)
        a_axes = tuple(_normalize_axis(i, a.ndim) for i in a_axes)
        b_axes = tuple(_normalize_axis(i, b.ndim) for i in b_axes)
    if len(a_axes) != len(b_axes) or any(a.shape[i] != b.shape[j] for i, j in zip(a_axes, b_axes)):
        raise ShapeError(f"tensordot: contracted axes {a_axes} of {a.shape} and {b_axes} of "
                         f"{b.shape} do not match{where()}")
    return _dot_general(a, b, (a_axes, b_axes), preferred_element_type=preferred_element_type)


def kron(a, b):
    a, b = _operands(a, b)
    nd = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = reshape(b, (1,) * (nd - b.ndim) + b.shape)
    # Interleave: a on the even axes, b on the odd ones, then merge each pair.
    a_spread = reshape(a, tuple(x for d in a.shape for x in (d, 1)))
    b_spread = reshape(b, tuple(x for d in b.shape for x in (1, d)))
    return reshape(multiply(a_spread, b_spread), tuple(p * q for p, q in zip(a.shape, b.shape)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross products of 2- or 3-vectors along the given axes (2-vectors give the z component)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _operands(a, b)
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise SecantValueError(f"cross: vectors must have 2 or 3 components, got shapes "
                               f"{a.shape} and {b.shape}{where()}")

    def comps(v):
        parts = [squeeze(_slice_axis(v, v.ndim - 1, i, i + 1), -1) for i in range(v.shape[-1])]
        return parts + [None] * (3 - len(parts))

    a0, a1, a2 = comps(a)
    b0, b1, b2 = comps(b)
    z = subtract(multiply(a0, b1), multiply(a1, b0))
    if a2 is None and b2 is None:
        return z
    zero = convert(0, z.dtype)
    a2 = zero if a2 is None else a2
    b2 = zero if b2 is None else b2
    x = subtract(multiply(a1, b2), multiply(a2, b1))
    y = subtract(multiply(a2, b0), multiply(a0, b2))
    shape = broadcast_shapes(x.shape, y.shape, z.shape)
    out = stack([broadcast_to(c, shape) for c in (x, y, z)], -1)
    return moveaxis(out, -1, axisc)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return _sum(diagonal(a, offset, axis1, axis2), -1, dtype, out)


# --- einsum --------------------------------------------------------------------------------------
def einsum(subscripts, *operands, out=None, optimize=None, precision=None,
           preferred_element_type=None):
    """Einstein summation, contracted pairwise left to right with dot_general.

    Supports explicit ('ij,jk->ik') and implicit ('ij,jk') outputs, repeated labels within one
    operand (diagonals), and '...' for broadcast dimensions.
    """
    if not isinstance(subscripts, str):
        raise SecantTypeError("einsum's subscripts must be a string (the sublist form is not "
                              "supported)" + where())
    ops = list(promote(*[ensure_array(o) for o in operands]))
    if preferred_element_type is not None:
        # Accumulate in the requested type (e.g. int8 inputs summed in int32) from the start.
        ops = [convert(o, dtypes.canonicalize_dtype(preferred_element_type)) for o in ops]
    labels, out_labels = _parse_einsum(subscripts, [o.ndim for o in ops])
    sizes = {}
    for op, labs in zip(ops, labels):
        for lab, d in zip(labs, op.shape):
            if d != 1 and sizes.get(lab, 1) not in (1, d):
                raise ShapeError(f"einsum: label {_show(lab)} has sizes {sizes[lab]} and {d}"
                                 f"{where()}")
            sizes[lab] = builtins.max(sizes.get(lab, 1), d)
    missing = [lab for lab in out_labels if lab not in sizes]
    if missing:
        raise SecantValueError(f"einsum: output label {_show(missing[0])} appears in no input"
                               f"{where()}")
    terms = [_einsum_diagonals(op, labs) for op, labs in zip(ops, labels)]
    while len(terms) > 1:
        (x, xl), (y, yl) = terms[0], terms[1]
        later = {lab for _, labs in terms[2:] for lab in labs} | set(out_labels)
        terms = [_einsum_pair(x, xl, y, yl, later)] + terms[2:]
    x, xl = terms[0]
    x, xl = _einsum_sum_unused(x, xl, set(out_labels))
    return broadcast_to(transpose(x, [xl.index(lab) for lab in out_labels]),
                        tuple(sizes[lab] for lab in out_labels))


def _show(lab):
    return "'...'" if isinstance(lab, int) else repr(lab)


def _parse_einsum(subscripts, ndims):
    """Per-operand label lists and the output label list; '...' dims get int labels."""
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    in_specs = inputs.split(",")
    if len(in_specs) != len(ndims):
        raise SecantValueError(f"einsum: {len(in_specs)} operand specs in {subscripts!r} for "
                               f"{len(ndims)} operands{where()}")
    n_ellipsis = 0
    parsed = []
    for s, nd in zip(in_specs, ndims):
        head, dots, tail = s.partition("...")
        explicit = list(head + tail)
        if any(not c.isalpha() for c in explicit) or "..." in tail:
            raise SecantValueError(f"einsum: invalid operand spec {s!r}{where()}")
        n_ell = nd - len(explicit)
        if (n_ell != 0 and not dots) or n_ell < 0:
            raise SecantValueError(f"einsum: spec {s!r} has {len(explicit)} labels for an operand "
                                   f"of rank {nd}{where()}")
        parsed.append((list(head), n_ell if dots else 0, list(tail)))
        n_ellipsis = builtins.max(n_ellipsis, n_ell if dots else 0)
    # Ellipsis dims align from the right, as in broadcasting; label them by their offset.
    labels = [head + list(range(n_ellipsis - n, n_ellipsis)) + tail for head, n, tail in parsed]
    if arrow:
        head, dots, tail = output.partition("...")
        if any(not c.isalpha() for c in head + tail):
            raise SecantValueError(f"einsum: invalid output spec {output!r}{where()}")
        # an output without '...' sums the inputs' ellipsis dims away, as JAX's einsum does
        # ('i...,j...->ij': NumPy refuses it)
        out = list(head) + (list(range(n_ellipsis)) if dots else []) + list(tail)
        if len(set(out)) != len(out):
            raise SecantValueError(f"einsum: repeated label in output {output!r}{where()}")
        return labels, out
    counts = {}
    for labs in labels:
        for lab in labs:
            if not isinstance(lab, int):
                counts[lab] = counts.get(lab, 0) + 1
    return labels, list(range(n_ellipsis)) + sorted(lab for lab, c in counts.items() if c == 1)


def _einsum_diagonals(x, labs):
    """A label repeated within one operand selects that operand's diagonal."""
    labs = list(labs)
    while len(set(labs)) != len(labs):
        lab = next(lab for lab in labs if labs.count(lab) > 1)
        i = labs.index(lab)
        j = labs.index(lab, i + 1)
        x = diagonal(x, 0, i, j)
        labs = [lb for k, lb in enumerate(labs) if k not in (i, j)] + [lab]
    return x, labs


def _einsum_sum_unused(x, labs, keep):
    axes = tuple(i for i, lab in enumerate(labs) if lab not in keep)
    if not axes:
        return x, labs
    return _sum(x, axes, promote_integers=False), [lab for lab in labs if lab in keep]


def _einsum_pair(x, xl, y, yl, later):
    # A size-1 dim facing a bigger one broadcasts: drop it, the other operand carries the label.
    for lab in set(xl) & set(yl):
        dx, dy = x.shape[xl.index(lab)], y.shape[yl.index(lab)]
        if dx != dy and dx == 1:
            x, xl = squeeze(x, xl.index(lab)), [lb for lb in xl if lb != lab]
        elif dx != dy and dy == 1:
            y, yl = squeeze(y, yl.index(lab)), [lb for lb in yl if lb != lab]
    x, xl = _einsum_sum_unused(x, xl, later | set(yl))
    y, yl = _einsum_sum_unused(y, yl, later | set(xl))
    shared = [lab for lab in xl if lab in yl]
    batch = [lab for lab in shared if lab in later]
    contract = [lab for lab in shared if lab not in later]
    out = _dot_general(x, y, ([xl.index(lab) for lab in contract],
                              [yl.index(lab) for lab in contract]),
                       ([xl.index(lab) for lab in batch], [yl.index(lab) for lab in batch]))
    out_labels = batch + [lab for lab in xl if lab not in shared] + \
        [lab for lab in yl if lab not in shared]
    return out, out_labels

"""More functions that generated derivative code calls by name (the rules of ad/vjp_rules.py that
do not fit on one line): special functions, cumulative ops, sort, padding, slicing, dot_general,
take and the `.at[...]` updates.

Like ad/helpers.py they are written with secant.numpy / secant.lax in the subset of Python the
transform reads (static `if`s on shapes and parameters, one return, no loops), so a derivative
that calls them can be differentiated again; those marked `constant` compute masks or indices
(no derivative) and are treated as constants.
"""
import types

import numpy as np

import secant.numpy as snp
from secant import lax, tree_util
from secant.backends.array import Array
from secant.backends.placeholder import Unbound, Unset
from secant.backends.tracer import active_trace
from secant.lax_control_flow import trip_count as _trip_count
from secant.ad.helpers import (_axes, constant, max_share, min_share,
                               unbroadcast, unreduce)

index_exp = np.index_exp      # `index_exp[i, 1:3]`: an index as a value, for the `.at` rules


@constant
def inverse_permutation(permutation):
    """The axes that undo transpose(x, permutation)."""
    return tuple(int(i) for i in np.argsort(permutation))


# --- special functions ------------------------------------------------------------------------------
def trigamma(x):
    """psi'(x), the derivative of digamma: the recurrence psi'(z) = psi'(z + 1) + 1/z**2 six
    times, then the asymptotic series; the reflection formula below 1/2; inf at its poles."""
    reflect = x < 0.5
    z = snp.where(reflect, 1 - x, x)
    near = (1 / z ** 2 + 1 / (z + 1) ** 2 + 1 / (z + 2) ** 2 + 1 / (z + 3) ** 2
            + 1 / (z + 4) ** 2 + 1 / (z + 5) ** 2)
    w = z + 6
    w2 = 1 / (w * w)
    tail = (1 / w + w2 / 2
            + w2 / w * (1 / 6 - w2 * (1 / 30 - w2 * (1 / 42 - w2 * (1 / 30 - w2 * 5 / 66)))))
    direct = near + tail
    reflected = (np.pi / snp.sin(np.pi * x)) ** 2 - direct
    pole = (x <= 0) & (x == snp.floor(x))      # inf at 0, -1, -2, ... (sin(pi * x) is not 0
    # there), as JAX's: 1 / d**2 for d = 0 there (and 1 or more elsewhere, finite with finite
    # derivatives where it is not chosen), whose derivatives there are 0 / 0, nan, as JAX's
    # (polygamma(2, x) has no limit at a pole: -inf on its right, inf on its left); a constant
    # inf's were 0 (grad(grad(digamma)) at -1 gave 0.0)
    d = x - snp.round(x) + snp.where(pole, 0.0, 1.0)
    return snp.where(pole, 1 / (d * d), snp.where(reflect, reflected, direct))


def integer_pow_scale(t, x, y):
    """t * d/dx x**y for lax.integer_pow(x, y) (y a static int): the tangent of a tangent t and
    the cotangent of x of a cotangent t alike."""
    if y == 0:
        gx = snp.zeros_like(t)
    elif y == 1:
        gx = t
    elif y == 2:
        gx = 2 * x * t
    else:
        gx = t * y * lax.integer_pow(x, y - 1)
    return gx


def power_scale(x, y):
    """d(x ** y)/dx = y * x ** (y - 1); an integer y of 0 gives 0 (JAX's integer_pow: x ** 0
    is the constant 1, so at x = 0 its derivative is 0, not 0 * x ** -1 = nan). A float y of
    0 keeps JAX's nan at x = 0."""
    if isinstance(y, (int, np.integer)) and not isinstance(y, bool):
        if y == 0:
            return snp.zeros_like(x)
        return y * x ** (y - 1)
    d = y * x ** (y - 1)
    if snp.issubdtype(snp.result_type(y), snp.integer):
        d = snp.where(y == 0, 0, d)
    return d


# --- clip: jnp.clip(a, lo, hi) is minimum(maximum(a, lo), hi), so ties split as JAX splits them ---
@constant
def clip_share(a, a_min=None, a_max=None):
    """The share of d clip(a, a_min, a_max) that goes to a."""
    share = snp.ones_like(a)
    inner = a
    if a_min is not None:
        share = max_share(a, a_min)
        inner = snp.maximum(a, a_min)
    if a_max is not None:
        share = share * min_share(inner, a_max)
    return share


@constant
def clip_share_min(a, a_min, a_max=None):
    """The share that goes to the lower bound."""
    share = max_share(a_min, a)
    if a_max is not None:
        share = share * min_share(snp.maximum(a, a_min), a_max)
    return share


@constant
def clip_share_max(a, a_min, a_max):
    """The share that goes to the upper bound."""
    inner = a
    if a_min is not None:
        inner = snp.maximum(a, a_min)
    return min_share(a_max, inner)


# --- reductions -------------------------------------------------------------------------------------
def _exclusive_cumprod(x):
    """Products of the elements before each one along the last axis (1 for the first)."""
    ones = snp.ones_like(x[..., :1])
    return snp.concatenate([ones, snp.cumprod(x, axis=-1)[..., :-1]], axis=-1)


@constant
def _reduced_last(ndim, axis):
    """(axis order putting the reduced axes last, number of kept axes)."""
    axes = _axes(ndim, axis)
    kept = tuple(i for i in range(ndim) if i not in axes)
    return kept + axes, len(kept)


def product_grad(t, a, axis=None, keepdims=False):
    """Cotangent of a in prod(a, axis): t times the product of the *other* elements (from
    exclusive products on both sides, so zeros in `a` are handled exactly, as in JAX)."""
    if np.ndim(a) == 0:
        ga = t * snp.ones_like(a)
    else:
        order, kept = _reduced_last(np.ndim(a), axis)
        moved = snp.transpose(a, order)
        flat = moved.reshape(np.shape(moved)[:kept] + (-1,))
        left = _exclusive_cumprod(flat)
        right = snp.flip(_exclusive_cumprod(snp.flip(flat, -1)), -1)
        others = snp.transpose((left * right).reshape(np.shape(moved)),
                               inverse_permutation(order))
        ga = unreduce(t, a, axis, keepdims) * others
    return ga


# --- cumulative ops ---------------------------------------------------------------------------------
def cumsum_grad(t, a, axis=None):
    """Cotangent of a in cumsum(a, axis): the cumulative sum from the other end (axis=None
    flattened `a`, so the cotangent takes a's shape back)."""
    if axis is None:
        ga = snp.flip(snp.cumsum(snp.flip(t))).reshape(np.shape(a))
    else:
        ga = snp.flip(snp.cumsum(snp.flip(t, axis), axis=axis), axis)
    return ga


def cumsum_transpose(t, axis=0, reverse=False):
    """Cotangent of lax.cumsum: the cumulative sum taken the other way."""
    return lax.cumsum(t, axis, not reverse)


@constant
def _doublings(n):
    """1, 2, 4, ... below n: the strides of a Hillis-Steele scan over n elements."""
    return [1 << k for k in range(max(int(n) - 1, 0).bit_length())]


@constant
def _axis_slice(ndim, axis, start, stop):
    """The index of start:stop along `axis` (every position along the others)."""
    return (slice(None),) * (axis % ndim) + (slice(start, stop),)


def _shifted(x, s, axis, fill):
    """x moved s places along `axis` (towards the end), the first s places `fill`."""
    n, ndim = snp.shape(x)[axis], snp.ndim(x)
    head = snp.full_like(x[_axis_slice(ndim, axis, 0, s)], fill)
    return snp.concatenate([head, x[_axis_slice(ndim, axis, 0, n - s)]], axis=axis)


def linear_recurrence(c, v, axis):
    """x with x[j] = c[j] * x[j - 1] + v[j] along `axis` (x[-1] = 0), by doubling: log2(n)
    steps of products and sums, so that its own derivatives are exact at every order."""
    for s in _doublings(snp.shape(v)[axis]):
        v = v + c * _shifted(v, s, axis, 0)
        c = c * _shifted(c, s, axis, 1)
    return v


def _cumprod_grad_axis(t, a, axis):
    # a's cotangent at m: (product of a before m) * r[m], where r[m] = t[m] + a[m + 1] * r[m + 1]
    before = _shifted(snp.cumprod(a, axis=axis), 1, axis, 1)
    flipped = snp.flip(a, axis)
    r = snp.flip(linear_recurrence(_shifted(flipped, 1, axis, 1), snp.flip(t, axis), axis), axis)
    return before * r


def cumprod_grad(t, a, axis=None, reverse=False):
    """Cotangent of a in cumprod(a, axis): the transpose of cumprod_jvp, products and sums
    only (no division: exact with zeros in `a`, and at every order)."""
    if axis is None:
        ga = _cumprod_grad_axis(t, snp.ravel(a), 0).reshape(np.shape(a))
    elif reverse:
        ga = snp.flip(_cumprod_grad_axis(snp.flip(t, axis), snp.flip(a, axis), axis), axis)
    else:
        ga = _cumprod_grad_axis(t, a, axis)
    return ga


@constant
def _along_axis(idx, shape, axis):
    """An index tuple addressing `idx` along `axis` and every position along the others."""
    index = []
    for d in range(len(shape)):
        if d == axis:
            index.append(idx)
        else:
            index.append(np.arange(shape[d]).reshape([-1 if e == d else 1
                                                      for e in range(len(shape))]))
    return tuple(index)


@constant
def _running_source(a, ans, axis):
    """For each position, where along `axis` its running max/min came from: the last element up
    to it that equals the running value there."""
    n = np.shape(a)[axis]
    positions = np.arange(n).reshape([-1 if d == axis else 1 for d in range(np.ndim(a))])
    record = snp.where(a == ans, positions, 0)
    return _along_axis(lax.cummax(record, axis), np.shape(a), axis)


def cumextremum_grad(t, a, ans, axis=0, reverse=False):
    """Cotangent of a in lax.cummax / lax.cummin: each output's cotangent goes to the element it
    copies (on ties, the latest element equal to the running value)."""
    axis = axis % np.ndim(a)
    if reverse:
        ga = snp.flip(snp.zeros_like(t).at[_running_source(snp.flip(a, axis), snp.flip(ans, axis),
                                                           axis)].add(snp.flip(t, axis)), axis)
    else:
        ga = snp.zeros_like(t).at[_running_source(a, ans, axis)].add(t)
    return ga


# --- sort, take -------------------------------------------------------------------------------------
@constant
def _sort_index(a, axis, descending):
    if axis is None:
        index = snp.argsort(snp.ravel(a), descending=descending)
    else:
        index = _along_axis(snp.argsort(a, axis=axis, descending=descending), np.shape(a),
                            axis % np.ndim(a))
    return index


def sort_grad(t, a, axis=-1, kind=None, order=None, stable=True, descending=False):
    """Cotangent of a in sort(a): the cotangent permuted back to where each element came from."""
    if axis is None:
        ga = snp.zeros_like(t).at[_sort_index(a, None, descending)].set(t).reshape(np.shape(a))
    else:
        ga = snp.zeros_like(t).at[_sort_index(a, axis, descending)].set(t)
    return ga


@constant
def _take_index(indices, n, mode):
    """take's indices as `.at` uses them: wrapped or clipped as take did, out of range -> n
    (dropped by .at[...].add). Written with secant.numpy's ops, so that vmap reads it (the
    indices batched: vmap of grad through take_along_axis of an argsort)."""
    ind = snp.asarray(indices)
    if mode == "wrap":
        ind = snp.mod(ind, n)
    elif mode == "clip":
        ind = snp.clip(ind, 0, n - 1)
    else:           # fill (the default) or raise: negatives count from the end
        ind = snp.where(ind < 0, ind + n, ind)
        ind = snp.where((ind >= 0) & (ind < n), ind, n)
    return ind


def take_grad(t, a, indices, axis=None, mode=None, fill_value=None):
    """Cotangent of a in take(a, indices, axis): the cotangent added back at the taken places."""
    if axis is None:
        ga = (snp.zeros(np.size(a), snp.result_type(a))
              .at[_take_index(indices, np.size(a), mode)].add(t).reshape(np.shape(a)))
    else:       # (the axis moved first: one index, which vmap reads batched too)
        axis = axis % np.ndim(a)
        ind = _take_index(indices, np.shape(a)[axis], mode)
        taken = tuple(range(axis, axis + np.ndim(ind)))
        front = snp.moveaxis(snp.zeros(np.shape(a), snp.result_type(a)), axis, 0)
        ga = snp.moveaxis(front.at[ind].add(snp.moveaxis(t, taken, tuple(range(len(taken))))),
                          0, axis)
    return ga


@constant
def _take_along_index(arr_shape, indices, axis, mode):
    ind = _take_index(indices, arr_shape[axis], mode)
    return _along_axis(ind, arr_shape, axis)


@constant
def _take_along_shape(arr_shape, t_shape, axis):
    """arr's shape broadcast against the result's outside `axis`."""
    shape = tuple(np.broadcast_shapes(*[s[:axis] + (1,) + s[axis + 1:]    # (axis: arr's)
                                        for s in (tuple(arr_shape), tuple(t_shape))]))
    return tuple(arr_shape[d] if d == axis else shape[d] for d in range(len(shape)))


def take_along_axis_grad(t, arr, indices, axis, mode=None, fill_value=None):
    """Cotangent of arr in take_along_axis(arr, indices, axis)."""
    if axis is None:
        ga = (snp.zeros(np.size(arr), snp.result_type(arr))
              .at[_take_index(indices, np.size(arr), mode)].add(t).reshape(np.shape(arr)))
    else:
        axis = axis % np.ndim(arr)
        full = _take_along_shape(np.shape(arr), np.shape(t), axis)
        ga = unbroadcast(snp.zeros(full, snp.result_type(arr))
                         .at[_take_along_index(full, indices, axis, mode)].add(t), arr)
    return ga


# --- .at[...].mul / .min / .max ----------------------------------------------------------------------
@constant
def at_share_operand(a, values, ans, index):
    """x.at[i].max(v) / .min(v): the share of the result's cotangent that goes to x; ties
    between x and the values landing on it split equally (as JAX)."""
    hit_a = (a == ans).astype(snp.result_type(a))
    hit_v = (values == ans[index]).astype(snp.result_type(a))
    return hit_a / (hit_a + snp.zeros_like(hit_a).at[index].add(hit_v))


@constant
def at_share_values(a, values, ans, index):
    """The share that goes to each value (of the shape of ans[index])."""
    hit_a = (a == ans).astype(snp.result_type(a))
    hit_v = (values == ans[index]).astype(snp.result_type(a))
    count = hit_a + snp.zeros_like(hit_a).at[index].add(hit_v)
    return hit_v / count[index]


@constant
def at_set_won(t, index, mode=None):
    """For each update of x.at[index].set(v, mode=mode) (the shape of t[index], t shaped as x):
    1 where it is the update left at its element, 0 where another one landing there later wins
    (JAX's rule: numbered updates are scattered the same way, and each reads back whether its
    number stayed)."""
    shape = snp.shape(t[index])
    ids = snp.arange(1, int(np.prod(shape)) + 1, dtype="int32").reshape(shape)
    kept = snp.zeros(snp.shape(t), "int32").at[index].set(ids, mode=mode)
    back = kept[index] if mode == "clip" else kept.at[index].get(mode="fill", fill_value=0)
    return (back == ids).astype(snp.result_type(t))


def at_mul_others(a, values, index, mode=None):
    """d ans / d values of ans = a.at[index].mul(values, mode=mode), of the shape of a[index]:
    for each update, a's element it lands on times the other updates that land there (with
    repeated indices more than one). The updates are sorted by the element they land on, and
    each gets the product of those before it and of those after it in its run (a segmented scan
    in log2(n) doubling steps): products only, no division, so its derivatives of every order
    are exact whichever updates are 0 (a quotient by the update, made zero-safe, lost the third
    derivative where two updates landing together were 0)."""
    v = snp.broadcast_to(values, snp.shape(a[index]))
    cells = snp.arange(np.size(a)).reshape(np.shape(a))
    if mode == "clip":
        target = snp.ravel(cells[index])
    else:                   # (a dropped update lands nowhere: its own run, at -1)
        target = snp.ravel(cells.at[index].get(mode="fill", fill_value=-1))
    order = snp.argsort(target, stable=True)
    run = target[order]
    w = snp.ravel(v)[order]
    before = _run_product_before(w, run)
    after = snp.flip(_run_product_before(snp.flip(w), snp.flip(run)))
    others = (before * after)[snp.argsort(order)]
    return a[index] * others.reshape(snp.shape(v))


@constant
def _doublings(n):
    steps, s = [], 1
    while s < n:
        steps.append(s)
        s *= 2
    return tuple(steps)


def _run_product_before(w, run):
    """For each position of w, the product of the entries before it in its run (positions of
    equal `run`, which are contiguous): w shifted by one within runs, then a doubling scan."""
    same = snp.concatenate([snp.zeros(1, bool), run[1:] == run[:-1]])
    p = snp.where(same, snp.concatenate([snp.ones_like(w[:1]), w[:-1]]), 1)
    for s in _doublings(np.shape(w)[0]):
        same = snp.concatenate([snp.zeros(s, bool), run[s:] == run[:-s]])
        p = p * snp.where(same, snp.concatenate([snp.ones_like(w[:s]), p[:-s]]), 1)
    return p


# --- out-of-range indices (ad/index_modes.py), for a mode known only when the rule runs ---------
def read_back_mode(mode):
    """The mode of the scatter sending the cotangent of x.at[i].get(mode=mode) back: a filled
    read's is dropped where it filled, a clamped one's goes where it read."""
    return None if mode == "fill" else "clip"


def pick_mode(mode):
    """The mode of the read giving the values of x.at[i].set(v, mode=mode) their cotangent."""
    return "clip" if mode == "clip" else "fill"


# --- padding, slicing, broadcasting, reshaping (lax) --------------------------------------------------
@constant
def _pad_slices(shape, pad_width):
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (len(shape), 2)).tolist()
    return tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, shape))


def unpad(t, array, pad_width):
    """Cotangent of array in snp.pad(array, pad_width): the middle of the cotangent."""
    return t[_pad_slices(np.shape(array), pad_width)]


def lax_unpad(t, padding_config):
    """Cotangent of the operand of lax.pad: undo the edges (negative padding), then keep every
    (interior + 1)-th element."""
    unpadded = lax.pad(t, 0.0, [(-lo, -hi, 0) for lo, hi, _ in padding_config])
    return lax.slice(unpadded, [0] * np.ndim(t), np.shape(unpadded),
                     [interior + 1 for _, _, interior in padding_config])


@constant
def _slice_pads(operand_shape, t_shape, start_indices, limit_indices, strides):
    if strides is None or all(s == 1 for s in strides):
        return [(s, n - lim, 0) for s, n, lim in zip(start_indices, operand_shape, limit_indices)]
    real_limits = [s + (0 if m == 0 else 1 + (m - 1) * st)
                   for s, m, st in zip(start_indices, t_shape, strides)]
    return [(s, n - lim, st - 1)
            for s, n, lim, st in zip(start_indices, operand_shape, real_limits, strides)]


def slice_transpose(t, operand, start_indices, limit_indices, strides=None):
    """Cotangent of operand in lax.slice: the cotangent padded with zeros back to full size."""
    return lax.pad(t, 0.0, _slice_pads(np.shape(operand), np.shape(t), start_indices,
                                       limit_indices, strides))


@constant
def _broadcast_in_dim_axes(t_shape, operand_shape, broadcast_dimensions):
    """The axes broadcast_in_dim added or stretched."""
    dims = tuple(broadcast_dimensions)
    return tuple(d for d in range(len(t_shape)) if d not in dims) + tuple(
        d for k, d in enumerate(dims) if operand_shape[k] == 1 and t_shape[d] != 1)


def unbroadcast_in_dim(t, operand, broadcast_dimensions):
    """Cotangent of operand in lax.broadcast_in_dim: sum over the new and the stretched axes."""
    summed = _broadcast_in_dim_axes(np.shape(t), np.shape(operand), broadcast_dimensions)
    if summed:
        t = snp.sum(t, axis=summed)
    return t.reshape(np.shape(operand))


@constant
def _permuted(shape, dimensions):
    return tuple(shape[d] for d in dimensions)


def lax_reshape_grad(t, operand, dimensions=None):
    """Cotangent of operand in lax.reshape(operand, new_sizes, dimensions)."""
    if dimensions is None:
        ga = t.reshape(np.shape(operand))
    else:
        ga = snp.transpose(t.reshape(_permuted(np.shape(operand), dimensions)),
                           inverse_permutation(dimensions))
    return ga


# --- dot_general and tensordot ---------------------------------------------------------------------
@constant
def _ranges_like(*xs):
    start, out = 0, []
    for x in xs:
        out.append(tuple(range(start, start + len(x))))
        start += len(x)
    return out


@constant
def _remaining(n, *removed):
    gone = set(i for r in removed for i in r)
    return tuple(i for i in range(n) if i not in gone)


@constant
def _dot_general_lhs_plan(x_ndim, y_ndim, dimension_numbers, swap_ans):
    """(dimension numbers, permutation) giving x's cotangent from the result's (JAX's rule)."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_contract, y_contract = tuple(x_contract), tuple(y_contract)
    x_batch, y_batch = tuple(x_batch), tuple(y_batch)
    x_kept = _remaining(x_ndim, x_contract, x_batch)
    y_kept = _remaining(y_ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, y_batch))
    x_contract_sorted_by_y = tuple(x_contract[i] for i in np.argsort(y_contract))
    perm = tuple(int(i) for i in np.argsort(x_batch + x_kept + x_contract_sorted_by_y))
    return dims, perm


def _same_dtype(y, t):
    if snp.result_type(y) != snp.result_type(t):
        y = y.astype(snp.result_type(t))
    return y


def dot_general_grad_lhs(t, lhs, rhs, dimension_numbers, precision=None,
                         preferred_element_type=None):
    """Cotangent of lhs in lax.dot_general(lhs, rhs, dimension_numbers)."""
    dims, perm = _dot_general_lhs_plan(np.ndim(lhs), np.ndim(rhs), dimension_numbers, False)
    g = lax.transpose(lax.dot_general(t, _same_dtype(rhs, t), dims), perm)
    return _same_dtype(g, lhs)


@constant
def _swapped_dimension_numbers(dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    return (rc, lc), (rb, lb)


def dot_general_grad_rhs(t, lhs, rhs, dimension_numbers, precision=None,
                         preferred_element_type=None):
    """Cotangent of rhs in lax.dot_general(lhs, rhs, dimension_numbers)."""
    dims, perm = _dot_general_lhs_plan(np.ndim(rhs), np.ndim(lhs),
                                       _swapped_dimension_numbers(dimension_numbers), True)
    g = lax.transpose(lax.dot_general(t, _same_dtype(lhs, t), dims), perm)
    return _same_dtype(g, rhs)


@constant
def _tensordot_dims(a_ndim, b_ndim, axes):
    """tensordot's `axes` as dot_general dimension numbers (no batch dimensions)."""
    if isinstance(axes, int):
        dims = ((tuple(range(a_ndim - axes, a_ndim)), tuple(range(axes))), ((), ()))
    else:
        a_axes, b_axes = axes
        a_axes = (a_axes,) if isinstance(a_axes, int) else tuple(a_axes)
        b_axes = (b_axes,) if isinstance(b_axes, int) else tuple(b_axes)
        dims = ((tuple(i % a_ndim for i in a_axes), tuple(i % b_ndim for i in b_axes)),
                ((), ()))
    return dims


def tensordot_grad_a(t, a, b, axes=2):
    """Cotangent of a in tensordot(a, b, axes): tensordot is a dot_general without batch axes."""
    return dot_general_grad_lhs(t, a, b, _tensordot_dims(np.ndim(a), np.ndim(b), axes))


def tensordot_grad_b(t, a, b, axes=2):
    return dot_general_grad_rhs(t, a, b, _tensordot_dims(np.ndim(a), np.ndim(b), axes))



# --- lax control flow ---------------------------------------------------------------------------------
# The reverse pass of a loop is a loop: the forward pass keeps the carry each step started from
# (stacked, one row per step), the reverse pass is a reverse lax.scan over those rows that calls
# the generated vjp of the loop's body (which recomputes that step's forward values). Written
# with lax.scan, so they run as Python loops eagerly and stage as one StableHLO while loop
# under jit. They take functions as arguments, so unlike the helpers above they are not read
# by the transform: differentiating them again is reported (second-order reverse mode through
# loops is future work).
def _loop_helper(fn):
    fn.__secant_no_reverse__ = ("reverse-mode derivatives of a derivative through lax.fori_loop, "
                                "lax.scan or lax.map (second order) are not supported yet "
                                "(second order through lax.cond/switch is); use secant.hessian (it "
                                "picks an order that works) or jacfwd(jacfwd(f))")
    return fn


@constant
def zeros_like_tree(tree):
    """Zeros shaped like every leaf of a pytree (the cotangent of an output nobody reads): a
    constant of a derivative."""
    return tree_util.tree_map(_zeros_like, tree)


def _zeros_like(leaf):
    """snp.zeros_like(leaf); eagerly one zero broadcast read-only to the leaf's shape, so that
    the cotangent of an unread output (a scan's stacked ys) or a loop's cotangent accumulator
    before its first step costs no memory per element (arrays are immutable)."""
    if tree_util.plain_object(leaf):    # (a plain class's object, a model with a __call__:
        return tree_util.tree_map(_zeros_like, leaf)     # its fields' zeros, never itself)
    if is_static_leaf(leaf):
        method = zero_method(leaf)
        return leaf if method is None else method
    if isinstance(leaf, np.ndarray) and leaf.dtype.names == ("float0",):
        return leaf         # (an integer value's tangent, as secant.jvp gives it: its own zero)
    zero = snp.zeros_like(leaf, shape=())
    if active_trace() is not None or type(zero) is not Array or zero._npy is None:
        return snp.zeros_like(leaf)
    view = np.broadcast_to(zero._npy, np.shape(leaf))
    return Array._wrap_ndarray(view, zero.weak_type)


def is_static_leaf(leaf):
    """A function or a string as a leaf of a cotangent: a field of an object the code read
    (equinox's activation=jnp.tanh, secant/transforms.py _held_caller; kind="tanh" of an object
    carried as its dict of fields). It holds no arrays: its cotangent (and zero) is itself. Not
    a derivative's residual unset in a branch (backends/placeholder.py Unset, callable only to
    raise when called): its zero is snp.zeros_like's symbolic one, which adds nothing. A
    loop's Unbound placeholder is: its zero (the tangent of a variable no iteration assigned
    yet) is unbound too, raising where it is read, and vmap broadcasts it shaped as the batch
    (BatchedUnbound), whose zeros a batched reverse pass reads the shape of."""
    return isinstance(leaf, str) or callable(leaf) and not hasattr(leaf, "shape") \
        and (not isinstance(leaf, Unset) or isinstance(leaf, Unbound))


def zero_method(leaf):
    """The zero cotangent of a method bound to an object holding arrays (a table of methods
    `{"sq": m.sq}` read by key): the method bound to the object's zeros, as a method's
    cotangent is that of its object (ad/helpers.py grad_of_fields, add_grads); None for any
    other leaf (a function holding no arrays is its own zero)."""
    if not isinstance(leaf, types.MethodType) or isinstance(leaf.__self__, type):
        return None
    obj = leaf.__self__
    tree_util.plain_object(obj)         # (a plain class's object: read as its fields)
    leaves = tree_util.tree_leaves(obj)
    if len(leaves) == 1 and leaves[0] is obj:        # (not a pytree: its fields unknown)
        if any(hasattr(v, "shape") for v in getattr(obj, "__dict__", {}).values()):
            from secant.backends.errors import SecantTypeError, where
            raise SecantTypeError(f"cannot build the cotangent of the method "
                                  f"{leaf.__func__.__name__} of a {type(obj).__name__} object "
                                  f"holding arrays; register {type(obj).__name__} as a pytree "
                                  f"(tree_util.register_dataclass or register_pytree_node)"
                                  f"{where()}")
        return None
    return types.MethodType(leaf.__func__, zeros_like_tree(obj)) if leaves else None


def _plain_zeros_like(leaf):
    return snp.zeros_like(leaf)


_zeros_like.__secant_composite__ = _plain_zeros_like    # what the transforms read of it


def _add_trees(a, b):
    # (a function or string leaf, a field of an object the code closes over: itself)
    return tree_util.tree_map(lambda u, v: u if is_static_leaf(u) and is_static_leaf(v)
                              and not isinstance(u, types.MethodType)
                              and not isinstance(v, types.MethodType) else u + v, a, b)


def cast_like(new, old):
    """A cotangent carried through a loop keeps the dtypes it entered with: a body's vjp may
    return an integer or bool carry's cotangent as floats (the cotangent of an integer value
    read as a float); the loop's next step takes it in the dtype it entered with. Written out
    as the reverse loop's step at second order (transformer/loop_lowering.py), so every order
    carries the same dtypes (the tangent of an integer cast is zeros of that integer dtype)."""
    return tree_util.tree_map(lambda n, o: snp.asarray(n).astype(snp.result_type(o)), new, old)


def _scan(step, init, xs, reverse=False):
    """lax.scan(step, init, xs) of a reverse pass whose carry may hold static leaves (the
    cotangent of a function or string field of an object the loop closes over is that leaf
    itself, is_static_leaf: equinox's `act=jnp.tanh` kept among a module's children): they are
    held outside the loop, which carries arrays only, and put back for each step and after."""
    leaves, treedef = tree_util.tree_flatten(init)
    held = {i: leaf for i, leaf in enumerate(leaves)
            if is_static_leaf(leaf) and not isinstance(leaf, types.MethodType)}
    if not held:
        return lax.scan(step, init, xs, reverse=reverse)

    def arrays(tree):
        return [leaf for i, leaf in enumerate(tree_util.tree_leaves(tree)) if i not in held]

    def whole(carried):
        rest = iter(carried)
        return treedef.unflatten([held[i] if i in held else next(rest)
                                  for i in range(len(leaves))])

    def inner(carry, x):
        new, y = step(whole(carry), x)
        return arrays(new), y
    carry, ys = lax.scan(inner, arrays(init), xs, reverse=reverse)
    return whole(carry), ys


def _steps(lower, upper):
    from secant.backends.core import Tracer
    if isinstance(lower, Tracer) or isinstance(upper, Tracer):
        from secant.backends.errors import SecantError, where
        raise SecantError("Reverse-mode differentiation does not work for lax.while_loop or "
                          "lax.fori_loop with dynamic start/stop values (as in JAX): the bounds "
                          "depend on traced arguments; make them static (static_argnums) or use "
                          "lax.scan with a fixed length" + where())
    return snp.arange(int(lower), int(upper))


@_loop_helper
def fori_loop_with_carries(lower, upper, body_fun, init_val):
    """(lax.fori_loop(lower, upper, body_fun, init_val), the carry each step started from,
    stacked): the forward pass of fori_loop's derivative."""
    def step(carry, i):
        return body_fun(i, carry), carry
    return lax.scan(step, init_val, _steps(lower, upper))


@_loop_helper
def fori_loop_vjp(lower, upper, body_vjp, carry_bar, carries, closed=(), consts=(), *, out,
                  batch_size=None, closed_batched=()):
    """The reverse pass of fori_loop: from the last step to the first, the cotangent of the
    carry goes back through `body_vjp` (the generated vjp of the body, which returns the carry's
    cotangent and those of the differentiated values it closes over, `closed`). Each step's
    output is the next step's saved carry (`out`, the loop's result, for the last step): the
    body's vjp takes it rather than recomputing it. Under vmap (batching/vectorize.py),
    `batch_size` says the cotangents carry a batch axis in front, and `body_vjp` is batched."""
    def step(bars, step_in):
        carry_bar, closed_bars, carry_out = bars
        i, carry = step_in
        grads = body_vjp(carry_bar, carry_out, i, carry, *closed, *consts)
        if closed:
            closed_bars = _add_trees(closed_bars, tuple(grads[1:]))
            grads = grads[0]
        return (cast_like(grads, carry_bar), closed_bars, carry), None

    if carries is None and active_trace() is None:
        # eagerly with nothing saved: the indices as the forward loop gave them (Python ints),
        # not a scan over an array of them (its rows sliced out step by step)
        bars = (carry_bar, _zero_bars(closed, batch_size, closed_batched), None)
        for i in range(int(upper) - 1, int(lower) - 1, -1):
            bars, _ = step(bars, (i, None))
        carry_bar, closed_bars, _ = bars
        return (carry_bar,) + tuple(closed_bars) if closed else carry_bar
    steps = _steps(lower, upper)
    if np.shape(steps)[0] == 0:
        carry_bar, closed_bars = carry_bar, _zero_bars(closed, batch_size, closed_batched)
    else:
        zeros = _zero_bars(closed, batch_size, closed_batched)
        (carry_bar, closed_bars, _), _ = _scan(
            step, (carry_bar, zeros, _like_rows(out, carries)), (steps, carries), reverse=True)
    return (carry_bar,) + tuple(closed_bars) if closed else carry_bar


@_loop_helper
def while_loop_with_carries(cond_fun, body_fun, init_val, count=True):
    """(lax.while_loop(cond_fun, body_fun, init_val), what its reverse pass needs): eagerly the
    list of carries each step started from; under jit, where a loop cannot grow a stack, the
    carries stacked, in a tuple of one, when the trip count is known while tracing (a counter's
    loop: a scan of that length), else the number of steps taken (the reverse pass recomputes
    the carries from init_val). count=False (written where cond_fun or body_fun has Python
    side effects, ad/reverse.py): the trip count is not learnt, as learning it runs the body
    once per step while tracing, where the loop as written traces it once."""
    if active_trace() is None:
        carries = []
        val = init_val
        while cond_fun(val):
            carries.append(val)
            val = body_fun(val)
        return val, carries
    n = _trip_count(cond_fun, body_fun, init_val) if count else None
    if n is not None:
        out, carries = lax.scan(lambda carry, _: (body_fun(carry), carry), init_val, None,
                                length=n)
        return out, (carries,)
    out, n_steps = lax.while_loop(lambda state: cond_fun(state[0]),
                                  lambda state: (body_fun(state[0]), state[1] + 1), (init_val, 0))
    return out, n_steps


@constant
def trip_count(cond_fun, body_fun, init_val):
    """The trip count of while_loop(cond_fun, body_fun, init_val) when its test reads only
    counters (secant/lax_control_flow.py), else None: a derivative's while loop lowered for the
    next order (transformer/loop_lowering.py) then saves its carries as a scan does. One answer
    for every example of a batch (a batched counter gives None): read as is under vmap."""
    return _trip_count(cond_fun, body_fun, init_val)


trip_count.__secant_structure__ = True


@_loop_helper
def while_loop_vjp(body_fun, body_vjp, carry_bar, init_val, saved, closed=(), consts=(),
                   batch_size=None, closed_batched=(), active=None):
    """The reverse pass of while_loop, from the last step to the first. Eagerly `saved` is the
    list of carries; under jit the carries stacked in a tuple of one (a trip count known while
    tracing) or the step count n, and then step k's carry is recomputed by running the body k times from
    init_val: n * (n - 1) / 2 extra body evaluations and no memory per step (JAX refuses
    reverse mode here instead). Under vmap with a trip count per
    example, the loop ran while any example continued and `active(carry)` says which examples
    took that step: the others' cotangents pass it unchanged."""
    def back(carry, bars):
        carry_bar, closed_bars = bars
        grads = body_vjp(carry_bar, carry, *closed, *consts)
        carry_g, closed_g = (grads[0], tuple(grads[1:])) if closed else (grads, ())
        if active is not None:
            took = active(carry)
            carry_g = where_examples(took, carry_g, carry_bar)
            closed_g = where_examples(took, closed_g, zeros_like_tree(closed_g))
        return cast_like(carry_g, carry_bar), _add_trees(closed_bars, closed_g)

    bars = (carry_bar, _zero_bars(closed, batch_size, closed_batched))
    if isinstance(saved, list):
        for carry in reversed(saved):
            bars = back(carry, bars)
    elif isinstance(saved, tuple):       # (the stacked carries)
        bars, _ = _scan(lambda bars, carry: (back(carry, bars), None), bars, saved[0],
                        reverse=True)
    else:
        def step(j, bars):
            carry = lax.fori_loop(0, saved - 1 - j, lambda i, c: body_fun(c), init_val)
            return back(carry, bars)
        bars = lax.fori_loop(0, saved, step, bars)
    carry_bar, closed_bars = bars
    return (carry_bar,) + tuple(closed_bars) if closed else carry_bar


@_loop_helper
def scan_with_carries(f, init, xs=None, length=None, reverse=False):
    """((carry, ys) of lax.scan(f, init, xs), the carry each step started from, stacked)."""
    def step(carry, x):
        new, y = f(carry, x)
        return new, (y, carry)
    carry, (ys, carries) = lax.scan(step, init, xs, length=length, reverse=reverse)
    return (carry, ys), carries


@_loop_helper
def scan_vjp(f_vjp, out_bar, carries, xs=None, closed=(), consts=(), reverse=False,
             wrt_xs=False, *, out, batch_size=None, closed_batched=()):
    """The reverse pass of scan: a scan the other way over (carries, xs, cotangents of ys),
    calling `f_vjp` (the generated vjp of f, which takes each step's outputs, the next saved
    carry and the step's y from `out` = (carry, ys), rather than recomputing them); returns the
    cotangents of init, of xs (when wrt_xs) and of the differentiated values f closes over."""
    carry_bar, ys_bar = out_bar
    final, ys = out

    def step(bars, step_in):
        carry_bar, closed_bars, carry_out = bars
        carry, x, y_bar, y = step_in
        grads = f_vjp((carry_bar, y_bar), (carry_out, y), carry, x, *closed, *consts)
        grads = grads if wrt_xs or closed else (grads,)
        x_bar = grads[1] if wrt_xs else None
        closed_bars = _add_trees(closed_bars, tuple(grads[1 + int(wrt_xs):]))
        return (cast_like(grads[0], carry_bar), closed_bars, carry), x_bar

    (carry_bar, closed_bars, _), xs_bar = _scan(
        step, (carry_bar, _zero_bars(closed, batch_size, closed_batched),
               _like_rows(final, carries)), (carries, xs, ys_bar, ys), reverse=not reverse)
    outs = (carry_bar,) + ((xs_bar,) if wrt_xs else ()) + tuple(closed_bars)
    return outs if len(outs) > 1 else outs[0]


def _zero_bars(closed, batch_size=None, closed_batched=()):
    """The cotangents of the closed-over values before the first step: zeros, with a batch
    axis in front under vmap (each example's cotangents are summed over the steps)."""
    if batch_size is None:
        return zeros_like_tree(tuple(closed))
    return tuple(zeros_batched(c, batch_size, b) for c, b in zip(closed, closed_batched))


@constant
def zeros_batched(tree, batch_size, batched):
    """Zeros like a value of one example with the batch axes of the enclosing vmaps in front:
    `batch_size` their sizes (outermost first; an int under one vmap), `batched` whether the
    value already carries each of those axes (a bool under one vmap)."""
    sizes, flags = _flat(batch_size), _flat(batched)
    if all(flags):
        return zeros_like_tree(tree)
    return tree_util.tree_map(lambda leaf: snp.zeros(
        sizes + np.shape(leaf)[sum(flags):], snp.result_type(leaf)), tree)


def _flat(nested):
    """(1, (2, 3)) -> (1, 2, 3); 1 -> (1,)."""
    if not isinstance(nested, tuple):
        return (nested,)
    return tuple(v for item in nested for v in _flat(item))


def where_examples(took, a, b):
    """Per example (batch axis 0, or the leading axes of several vmaps: took's): a's value
    where `took`, b's elsewhere (pytrees alike)."""
    return tree_util.tree_map(
        lambda u, v: snp.where(snp.reshape(took, np.shape(took) + (1,) * (
            np.ndim(u) - np.ndim(took))), u, v), a, b)


def _like_rows(final, carries):
    """The loop's result as a row of the stack of saved carries (its dtype): the carry the last
    step ended with. The reverse pass carries "the carry this step ended with" along (each step's
    is the next step's saved carry) rather than a shifted copy of the whole stack; None when
    nothing was saved (a body's vjp that reads no carry)."""
    if carries is None:
        return None
    return tree_util.tree_map(lambda stack, last: snp.asarray(last, dtype=stack.dtype),
                              carries, final)


@_loop_helper
def map_vjp(f_vjp, ys_bar, xs, closed=(), consts=(), wrt_xs=True, batch_size=None,
            closed_batched=()):
    """The reverse pass of lax.map(f, xs): f_vjp on each (x, y cotangent), the cotangents of
    the closed-over values summed over the steps."""
    def step(closed_bars, step_in):
        x, y_bar = step_in
        grads = f_vjp(y_bar, x, *closed, *consts)
        grads = grads if int(wrt_xs) + len(closed) > 1 else (grads,)
        x_bar = grads[0] if wrt_xs else None
        return _add_trees(closed_bars, tuple(grads[int(wrt_xs):])), x_bar

    closed_bars, xs_bar = _scan(step, _zero_bars(closed, batch_size, closed_batched),
                                (xs, ys_bar))
    outs = ((xs_bar,) if wrt_xs else ()) + tuple(closed_bars)
    return outs if len(outs) > 1 else outs[0]


NAMES = ("index_exp", "inverse_permutation", "trigamma", "integer_pow_scale", "power_scale", "clip_share", "clip_share_min",
         "clip_share_max", "product_grad", "cumsum_grad", "cumsum_transpose", "cumprod_grad",
         "cumextremum_grad", "sort_grad", "take_grad", "take_along_axis_grad",
         "at_share_operand", "at_share_values", "at_set_won", "at_mul_others", "read_back_mode", "pick_mode", "unpad",
         "lax_unpad", "slice_transpose",
         "unbroadcast_in_dim", "lax_reshape_grad", "dot_general_grad_lhs", "dot_general_grad_rhs",
         "tensordot_grad_a", "tensordot_grad_b", "zeros_like_tree", "zeros_batched",
         "fori_loop_with_carries", "fori_loop_vjp", "scan_with_carries", "scan_vjp", "map_vjp",
         "while_loop_with_carries", "while_loop_vjp", "trip_count", "where_examples", "cast_like")

# windowed operations (issue 17): lax.conv_general_dilated's transposes
from secant.ad.conv_helpers import NAMES as _CONV_NAMES, conv_grad_lhs, conv_grad_rhs  # noqa: E402,F401,E501
NAMES = NAMES + _CONV_NAMES

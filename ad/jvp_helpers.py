"""Functions that generated forward-mode (jvp) code calls by name, for the rules of
ad/jvp_rules.py that do not fit on one line.

Like ad/helpers.py they are written with secant.numpy / secant.lax in the subset of Python the
transform reads (static `if`s on shapes and parameters, one return, no loops), so a jvp that
calls them can be differentiated again.
Each takes the operand's tangent `t` first, then the op's own arguments.
"""
import numpy as np

import secant.numpy as snp
from secant import tree_util
from secant.ad.helpers import (_count, _promoted_float, _promoted_to_complex, constant,
                               extremum_share, shape_of)
from secant.grad_options import FLOAT0
from secant.ad.rule_helpers import (_running_source, _shifted, _sort_index, linear_recurrence,
                                    product_grad)


def extremum_jvp(t, a, ans, axis=None, keepdims=False):
    """Tangent of max/min(a, axis): the mean of the tangents of the extremal elements (ties
    share equally, as in JAX). Another element's tangent is not read: a nan there (0 ** 0's)
    does not reach the max, as in JAX, whose jit compiles t * hits as a select (a nan max,
    no element equal to it: share 0 / 0, the tangent nan as JAX's)."""
    share = extremum_share(a, ans, axis, keepdims)
    return snp.sum(snp.where(share != 0, t * share, 0), axis=axis, keepdims=keepdims)


def prod_jvp(t, a, axis=None, keepdims=False):
    """Tangent of prod(a, axis): each tangent times the product of the *other* elements (exact
    with zeros in `a`, from the exclusive products product_grad computes)."""
    others = product_grad(snp.ones_like(snp.prod(a, axis=axis, keepdims=keepdims)), a, axis,
                          keepdims)
    return snp.sum(t * others, axis=axis, keepdims=keepdims)


def var_jvp(t, a, axis=None, ddof=0, keepdims=False):
    """Tangent of var(a, axis, ddof): 2 Re<a - mean(a), t - mean(t)> / (n - ddof) along the
    axes (t centred as JAX's derivative centres it: a shift's tangent, t - mean(t) = 0, gives
    exactly 0 where <a - mean(a), t> keeps the rounding of a large a's centring)."""
    centred = a - snp.mean(a, axis=axis, keepdims=True)
    t = t - snp.mean(t, axis=axis, keepdims=True)
    return 2 * snp.sum(snp.real(snp.conj(centred) * t), axis=axis,
                       keepdims=keepdims) / (_count(a, axis) - ddof)


def _cumprod_jvp_axis(t, a, axis):
    """Tangent of cumprod(a) along `axis`: out[j] = a[j] * out[j - 1] + t[j] * (product of a
    before j), products and sums only (exact with zeros in `a`, and at every order)."""
    before = _shifted(snp.cumprod(a, axis=axis), 1, axis, 1)
    return linear_recurrence(a, t * before, axis)


def cumprod_jvp(t, a, axis=None, reverse=False):
    """Tangent of cumprod(a, axis) (and lax.cumprod, which has `reverse`)."""
    if axis is None:
        out = _cumprod_jvp_axis(snp.ravel(t), snp.ravel(a), 0)
    elif reverse:
        out = snp.flip(_cumprod_jvp_axis(snp.flip(t, axis), snp.flip(a, axis), axis), axis)
    else:
        out = _cumprod_jvp_axis(t, a, axis)
    return out


def cumextremum_jvp(t, a, ans, axis=0, reverse=False):
    """Tangent of lax.cummax / lax.cummin: each output copies the tangent of the element its
    running value came from (on ties, the latest one)."""
    axis = axis % np.ndim(a)
    if reverse:
        out = snp.flip(snp.flip(t, axis)[_running_source(snp.flip(a, axis), snp.flip(ans, axis),
                                                          axis)], axis)
    else:
        out = t[_running_source(a, ans, axis)]
    return out


def sort_jvp(t, a, axis=-1, kind=None, order=None, stable=True, descending=False):
    """Tangent of sort(a): the tangents permuted as sort permutes the elements."""
    if axis is None:
        out = snp.ravel(t)[_sort_index(a, None, descending)]
    else:
        out = t[_sort_index(a, axis, descending)]
    return out


def transpose_pairs(pairs):
    """((a, a_dot), (b, b_dot)) -> ((a, b), (a_dot, b_dot)): what lax.scan returns in a jvp
    (a (primal, tangent) pair per output) as one pair of (carry, ys)."""
    carry, carry_dot = pairs[0]
    ys, ys_dot = pairs[1]
    return (carry, ys), (carry_dot, ys_dot)


def broadcast_like(t, ans):
    """The tangent t of one operand of an elementwise op (x + c) as the result's tangent: t
    broadcast to the result's shape, in the result's dtype where the other operand promoted it
    (float16 x + float32 c is float32, and so is its tangent: JAX converts x first; a real x
    that meets a complex c has a complex tangent). The twin of unbroadcast (ad/helpers.py)."""
    t = snp.broadcast_to(t, np.shape(ans))
    if _promoted(ans, t):
        t = t.astype(snp.result_type(ans))
    return t


def _promoted(ans, t):
    """Whether the result `ans` has a wider float or a complex dtype than tangent t (reads
    dtypes only)."""
    return _promoted_float(ans, t) or _promoted_to_complex(ans, t)


_promoted.__secant_static_query__ = True


def cast_jvp(t, dtype):
    """Tangent of x.astype(dtype): t cast, zeros through a cast to integers or bools (JAX's
    float0): zeros of that integer or bool dtype, as every integer value's tangent is, so a
    loop carrying one keeps its dtype (a bool flag's tangent stays bool)."""
    if snp.issubdtype(dtype, snp.inexact):
        out = t.astype(dtype)
    else:
        out = snp.zeros_like(t).astype(dtype)
    return out


def float0_tangents(pair):
    """secant.jvp's (out, out_dot) as JAX's: float0 zeros as the tangent of each integer or bool
    output (the generated jvp's are zeros of the output's own dtype, which a loop carries). Where
    a transform reads a call of secant.jvp as the generated jvp's (transformer/normalize.py:
    under vmap, whose batched form of this gives float0 zeros shaped as one example, broadcast
    over the batch as a constant is); an eager or traced call of secant.jvp converts its own."""
    if not _has_integers(pair[0]):
        return pair         # (the common case: every output a float)
    out, out_dot = pair
    return out, tree_util.tree_map(_float0_tangent, out, out_dot)


def _has_integers(tree):
    """Whether a leaf of `tree` is an integer or bool (reads types and dtypes only)."""
    return any(_integer_leaf(leaf) for leaf in tree_util.tree_leaves(tree))


_has_integers.__secant_static_query__ = True


def _float0_tangent(p, t):
    if _integer_leaf(p):
        return _float0_zeros(shape_of(p))
    return t


def _integer_leaf(p):
    """Whether `p` is an integer or bool array or Python value (reads its type and dtype)."""
    dt = getattr(p, "dtype", None)
    if isinstance(dt, np.dtype):
        return dt.kind in "iub"
    return isinstance(p, (bool, int, np.integer, np.bool_))


_integer_leaf.__secant_static_query__ = True


@constant
def _float0_zeros(shape):
    return np.zeros(shape, FLOAT0)


NAMES = ("broadcast_like", "cast_jvp", "float0_tangents", "extremum_jvp", "prod_jvp", "var_jvp", "cumprod_jvp", "cumextremum_jvp",
         "sort_jvp", "transpose_pairs")


def by_name():
    """The helpers generated jvp code may call, by the name it uses."""
    return {n: globals()[n] for n in NAMES}

"""The sources of secant/numpy/extra.py's functions: each computes its library
function's value with ops that have rules, so grad, jvp and vmap read it like user code
(secant/numpy/composite.py) and need no rules of their own. Comparisons, sorts' indices and
searches have no derivative: results computed from them are constants for grad, as in JAX.

Static work (index tables, shapes, dtypes) is done by extra's helpers on plain values."""
import math

import secant.numpy as snp
from secant.numpy import extra
from secant.numpy.composite import source_for

__secant_by_source__ = True      # transforms read this module like user code

_LN2 = math.log(2.0)


# --- comparisons --------------------------------------------------------------------------------
@source_for(extra.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    dtype = extra._inexact(snp.result_type(a, b))
    a = snp.asarray(a, dtype=dtype)
    b = snp.asarray(b, dtype=dtype)
    close = snp.abs(a - b) <= atol + rtol * snp.abs(b)
    a_inf = snp.isinf(a)
    b_inf = snp.isinf(b)
    close = snp.where(a_inf | b_inf, a == b, close)     # infinities: equal ones only
    if equal_nan:
        close = close | (snp.isnan(a) & snp.isnan(b))
    return close


@source_for(extra.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return snp.all(snp.isclose(a, b, rtol, atol, equal_nan))


@source_for(extra.iscomplex)
def iscomplex(x):
    return snp.imag(x) != 0


@source_for(extra.isreal)
def isreal(x):
    return snp.imag(x) == 0


@source_for(extra.real_if_close)
def real_if_close(a, tol=100):
    out = a
    if extra._is_complex(snp.result_type(a)):
        eps = snp.finfo(snp.result_type(a)).eps
        if snp.all(snp.abs(snp.imag(a)) < tol * eps):
            out = snp.real(a)
    return out


@source_for(extra.logaddexp2)
def logaddexp2(x1, x2):
    return snp.logaddexp(x1 * _LN2, x2 * _LN2) / _LN2


# --- inserting, deleting, joining ---------------------------------------------------------------
@source_for(extra.append)
def append(arr, values, axis=None):
    if axis is None:
        out = snp.concatenate([snp.ravel(arr), snp.ravel(values)])
    else:
        out = snp.concatenate([arr, values], axis=axis)
    return out


@source_for(extra.insert)
def insert(arr, obj, values, axis=None):
    index = extra._insert_index(snp.shape(arr), obj, snp.shape(values), axis)
    values = snp.asarray(values, dtype=snp.result_type(arr))
    both = snp.concatenate([snp.ravel(arr), snp.ravel(values)])
    return both[index]


@source_for(extra.delete)
def delete(arr, obj, axis=None):
    index = extra._delete_index(snp.shape(arr), obj, axis)
    return snp.ravel(arr)[index]


def _join(items, axis, ndmin, trans1d):
    """r_/c_: each item an array of at least ndmin axes (NumPy's trans1d placement), all
    joined along axis."""
    parts = []
    for item in items:
        item = snp.asarray(item)
        nd = snp.ndim(item)
        if nd < ndmin:
            item = snp.expand_dims(item, tuple(range(ndmin - nd)))
            if trans1d != -1:
                item = snp.transpose(item, extra._ndmin_axes(nd, ndmin, trans1d))
        parts.append(item)
    return snp.concatenate(parts, axis=axis)


@source_for(extra._r_concat)
def r_(*items, directive=None):
    if directive is None:
        out = _join(items, 0, 1, -1)
    else:
        axis, ndmin, trans1d = extra._index_directive(directive)
        out = _join(items, axis, ndmin, trans1d)
    return out


@source_for(extra._c_concat)
def c_(*items, directive=None):
    if directive is None:
        out = _join(items, -1, 2, 0)
    else:
        axis, ndmin, trans1d = extra._index_directive(directive)
        out = _join(items, axis, ndmin, trans1d)
    return out


# --- differences --------------------------------------------------------------------------------
def _edge(a, extra_part, axis):
    """prepend/append of diff: a scalar is broadcast to one slice of a along axis."""
    if snp.ndim(extra_part) == 0:
        extra_part = snp.broadcast_to(extra_part, extra._with_axis(snp.shape(a), axis, 1))
    return extra_part


@source_for(extra.diff)
def diff(a, n=1, axis=-1, prepend=None, append=None):
    nd = snp.ndim(a)
    axis = extra._axis(axis, nd)
    if prepend is not None:
        a = snp.concatenate([_edge(a, prepend, axis), a], axis=axis)
    if append is not None:
        a = snp.concatenate([a, _edge(a, append, axis)], axis=axis)
    if extra._is_bool(snp.result_type(a)):
        out = snp.zeros(extra._with_axis(snp.shape(a), axis, snp.shape(a)[axis] - n), bool)
        for odd, index in extra._diff_terms(nd, axis, n, snp.shape(a)[axis]):
            if odd % 2:           # the n-th difference of booleans: xor of the odd terms
                out = out ^ a[index]
    else:                         # sum_k (-1)^(n-k) C(n, k) a[k:len-n+k]: no loop carry of
        out = 0                   # changing shape
        for coefficient, index in extra._diff_terms(nd, axis, n, snp.shape(a)[axis]):
            out = out + coefficient * a[index]
    return out


@source_for(extra.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    flat = snp.ravel(ary)
    out = flat[1:] - flat[:-1]
    if to_begin is not None:
        out = snp.concatenate([snp.ravel(snp.asarray(to_begin, dtype=out.dtype)), out])
    if to_end is not None:
        out = snp.concatenate([out, snp.ravel(snp.asarray(to_end, dtype=out.dtype))])
    return out


def _gradient_axis(f, axis, h, edge_order):
    """np.gradient along one axis: h a scalar spacing or 1-D coordinates."""
    nd = snp.ndim(f)
    n = snp.shape(f)[axis]
    f0 = f[extra._along(nd, axis, 0, 1)]
    f1 = f[extra._along(nd, axis, 1, 2)]
    f2 = f[extra._along(nd, axis, 2, 3)]
    g0 = f[extra._along(nd, axis, n - 1, n)]        # the last three, backwards
    g1 = f[extra._along(nd, axis, n - 2, n - 1)]
    g2 = f[extra._along(nd, axis, n - 3, n - 2)]
    lower = f[extra._along(nd, axis, None, -2)]
    middle = f[extra._along(nd, axis, 1, -1)]
    upper = f[extra._along(nd, axis, 2, None)]
    if snp.ndim(h) == 0:
        inner = (upper - lower) / (2.0 * h)
        if edge_order == 2:
            first = (-1.5 * f0 + 2.0 * f1 - 0.5 * f2) / h
            last = (1.5 * g0 - 2.0 * g1 + 0.5 * g2) / h
        else:
            first = (f1 - f0) / h
            last = (g0 - g1) / h
    else:
        dx = h[1:] - h[:-1]
        d1 = snp.reshape(dx[:-1], extra._line(nd, axis, n - 2))
        d2 = snp.reshape(dx[1:], extra._line(nd, axis, n - 2))
        inner = (-d2 / (d1 * (d1 + d2))) * lower + ((d2 - d1) / (d1 * d2)) * middle \
            + (d1 / (d2 * (d1 + d2))) * upper
        if edge_order == 2:
            a1, a2 = dx[0], dx[1]
            first = (-(2.0 * a1 + a2) / (a1 * (a1 + a2))) * f0 + ((a1 + a2) / (a1 * a2)) * f1 \
                - (a1 / (a2 * (a1 + a2))) * f2
            b1, b2 = dx[-2], dx[-1]
            last = (b2 / (b1 * (b1 + b2))) * g2 - ((b1 + b2) / (b1 * b2)) * g1 \
                + ((2.0 * b2 + b1) / (b2 * (b1 + b2))) * g0
        else:
            first = (f1 - f0) / dx[0]
            last = (g0 - g1) / dx[-1]
    return snp.concatenate([first, inner, last], axis=axis)


@source_for(extra.gradient)
def gradient(f, *varargs, axis=None, edge_order=None):
    f = snp.asarray(f, dtype=extra._inexact(snp.result_type(f)))
    axes = extra._axes(axis, snp.ndim(f))
    order = 1 if edge_order is None else edge_order
    grads = []
    for i in range(len(axes)):
        if len(varargs) == 0:
            h = 1.0
        elif len(varargs) == 1:
            h = varargs[0]
        else:
            h = varargs[i]
        grads.append(_gradient_axis(f, axes[i], h, order))
    if len(axes) == 1:
        out = grads[0]
    else:
        out = grads
    return out


# --- choosing -----------------------------------------------------------------------------------
@source_for(extra.select)
def select(condlist, choicelist, default=0):
    out = default
    for i in range(len(condlist)):    # backwards: the first true condition is written last
        k = len(condlist) - 1 - i
        out = snp.where(condlist[k], choicelist[k], out)
    return out


def _piece(fn, x):
    if callable(fn):
        out = fn(x)
    else:
        out = fn
    return out


@source_for(extra.piecewise)
def piecewise(x, condlist, funclist, *args, **kw):
    if args or kw:                # f(x, *args, **kw): each f with its arguments bound
        funclist = extra._bind_arguments(funclist, args, kw)
    conds = condlist
    if not isinstance(condlist, (list, tuple)):
        conds = [condlist]
    n = len(conds)
    if len(funclist) == n + 1:
        out = snp.zeros_like(x) + _piece(funclist[n], x)
    else:
        out = snp.zeros_like(x)
    for i in range(len(conds)):   # a Python loop (over a list of functions)
        out = snp.where(conds[i], _piece(funclist[i], x), out)
    return snp.asarray(out, dtype=snp.result_type(x))


# --- sorting and searching ----------------------------------------------------------------------
@source_for(extra.partition)
def partition(a, kth, axis=-1):
    nd = snp.ndim(a)
    axis = extra._axis(axis, nd)
    k = extra._kth(kth, snp.shape(a)[axis])
    ordered = snp.sort(a, axis=axis)
    smallest = ordered[extra._along(nd, axis, None, k + 1)]
    largest = snp.flip(ordered[extra._along(nd, axis, k + 1, None)], axis=axis)
    return snp.concatenate([smallest, largest], axis=axis)


@source_for(extra.argpartition)
def argpartition(a, kth, axis=-1):
    nd = snp.ndim(a)
    axis = extra._axis(axis, nd)
    n = snp.shape(a)[axis]
    k = extra._kth(kth, n)
    smallest = snp.argsort(a, axis=axis)[extra._along(nd, axis, None, k + 1)]
    largest = snp.argsort(-a, axis=axis)[extra._along(nd, axis, None, n - k - 1)]
    return snp.concatenate([smallest, largest], axis=axis)


@source_for(extra.searchsorted)
def searchsorted(a, v, side="left", sorter=None, *, method="compare_all"):
    if sorter is not None:
        a = a[sorter]
    v = snp.expand_dims(v, -1)
    if snp.iscomplexobj(snp.empty((), snp.result_type(a, v))):
        # complex numbers in sort's order: by real part, then by imaginary part
        ar, ai, vr, vi = snp.real(a), snp.imag(a), snp.real(v), snp.imag(v)
        if side == "left":
            after = (vr > ar) | ((vr == ar) & (vi > ai))
        else:
            after = (vr > ar) | ((vr == ar) & (vi >= ai))
        return snp.sum(after.astype(snp.int32), axis=-1)
    # NumPy's sort order, NaN last: a NaN v goes after every number (and, with side="right",
    # after the NaNs of a too)
    if side == "left":
        after = (v > a) | (snp.isnan(v) & ~snp.isnan(a))
    else:
        after = (v >= a) | snp.isnan(v)
    return snp.sum(after.astype(snp.int32), axis=-1)


@source_for(extra.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    dtype = extra._inexact(snp.result_type(x, xp))
    x = snp.asarray(x, dtype=dtype)
    xp = snp.asarray(xp, dtype=dtype)
    fp = snp.asarray(fp, dtype=extra._inexact(snp.result_type(fp)))
    if period is not None:
        x = x % period
        xp = xp % period
        order = snp.argsort(xp)
        xp = xp[order]
        fp = fp[order]
        xp = snp.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = snp.concatenate([fp[-1:], fp, fp[:1]])
    i = snp.clip(snp.searchsorted(xp, x, side="right"), 1, snp.shape(xp)[0] - 1)
    df = fp[i] - fp[i - 1]
    dx = xp[i] - xp[i - 1]
    delta = x - xp[i - 1]
    flat = snp.abs(dx) <= extra._spacing_eps(dtype)    # repeated xp: no 0/0, no NaN gradient
    f = snp.where(flat, fp[i - 1], fp[i - 1] + (delta / snp.where(flat, 1, dx)) * df)
    if period is None:            # (take, not xp[0]: hessian mis-batches a parameter's [0])
        last = snp.shape(xp)[0] - 1
        below = x < snp.take(xp, 0)
        above = x > snp.take(xp, last)
        if left is None:
            f = snp.where(below, snp.take(fp, 0), f)
        else:
            f = snp.where(below, left, f)
        if right is None:
            f = snp.where(above, snp.take(fp, last), f)
        else:
            f = snp.where(above, right, f)
    return f


# --- convolution and polynomials ----------------------------------------------------------------
@source_for(extra.convolve)
def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    n = snp.shape(a)[0]
    m = snp.shape(v)[0]
    lo = extra._smaller(n, m)
    hi = extra._larger(n, m)
    if n < m:                     # NumPy slides the shorter over the longer
        longer, shorter = v, a
    else:
        longer, shorter = a, v
    index = extra._convolve_index(hi, lo, mode)
    padded = snp.pad(longer, (lo - 1, lo - 1))
    return padded[index] @ snp.flip(shorter)


@source_for(extra.correlate)
def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    if snp.shape(v)[0] > snp.shape(a)[0]:     # NumPy correlates v with a, then reverses
        out = snp.flip(snp.conj(snp.convolve(v, snp.flip(snp.conj(a)), mode)))
    else:
        out = snp.convolve(a, snp.flip(snp.conj(v)), mode)
    return out


@source_for(extra.polyval)
def polyval(p, x, *, unroll=16):
    y = snp.zeros_like(x)
    for i in range(snp.shape(p)[0]):
        y = y * x + p[i]
    return y


@source_for(extra.vander)
def vander(x, N=None, increasing=False):
    n = N
    if N is None:
        n = snp.shape(x)[0]
    out = snp.ones(snp.shape(x) + (n,), snp.result_type(x))
    for k in range(1, n):         # products, not x ** k: exact, no NaN slope at 0
        out = out.at[:, k].set(out[:, k - 1] * x)
    if not increasing:
        out = snp.flip(out, axis=-1)
    return out


# --- unique values, counts, histograms ----------------------------------------------------------
@source_for(extra.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None):
    size = extra._unique_size(size)     # (refuses None: JAX's grad of it is 0, silently)
    flat = snp.ravel(ar)
    n = snp.shape(flat)[0]
    perm = snp.argsort(flat)
    ordered = flat[perm]
    new = ordered[1:] != ordered[:-1]
    if equal_nan:
        new = new & ~(snp.isnan(ordered[1:]) & snp.isnan(ordered[:-1]))
    first = snp.concatenate([snp.ones((1,), bool), new])
    group = snp.cumsum(first.astype(snp.int32)) - 1
    slot = snp.where(first, snp.minimum(group, size), size)
    starts = snp.zeros((size + 1,), snp.int32).at[slot].set(snp.arange(n, dtype=snp.int32))
    starts = starts[:size]
    values = ordered[starts]
    if fill_value is not None:
        values = snp.where(snp.arange(size) < snp.sum(first), values, fill_value)
    out = [values]
    if return_index:
        out.append(perm[starts])
    if return_inverse:
        inverse = snp.zeros((n,), snp.int32).at[perm].set(group)
        out.append(snp.reshape(inverse, snp.shape(ar)))
    if return_counts:
        counts = snp.zeros((size + 1,), snp.int32).at[snp.minimum(group, size)].add(1)
        out.append(counts[:size])
    if len(out) == 1:
        result = values
    else:
        result = tuple(out)
    return result


@source_for(extra.bincount)
def bincount(x, weights=None, minlength=0, *, length=None):
    slot = snp.clip(x, 0, length)
    if weights is None:
        counts = snp.zeros((length + 1,), snp.int32).at[slot].add(1)
    else:
        counts = snp.zeros((length + 1,), snp.result_type(weights)).at[slot].add(weights)
    return counts[:length]


@source_for(extra.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    if snp.ndim(bins) == 1:
        edges = snp.asarray(bins)
    else:
        dtype = extra._inexact(snp.result_type(a))
        if range is None:
            lo = snp.min(a).astype(dtype)
            hi = snp.max(a).astype(dtype)
        else:
            lo = snp.asarray(range[0], dtype=dtype)
            hi = snp.asarray(range[1], dtype=dtype)
        same = lo == hi
        lo = snp.where(same, lo - 0.5, lo)
        hi = snp.where(same, hi + 0.5, hi)
        step = (hi - lo) / bins
        edges = lo + snp.arange(bins + 1, dtype=dtype) * step
        edges = edges.at[bins].set(hi)           # the last edge is exactly hi, as linspace's
    return edges


@source_for(extra.histogram)
def histogram(a, bins=10, range=None, weights=None, density=None):
    edges = snp.histogram_bin_edges(a, bins, range, weights)
    flat = snp.ravel(a)
    nbins = snp.shape(edges)[0] - 1
    slot = snp.searchsorted(edges, flat, side="right")
    slot = snp.where(flat == edges[-1], nbins, slot)     # the last bin is closed
    if weights is None:
        counts = snp.zeros((nbins + 2,), snp.result_type(a)).at[slot].add(1)
    else:
        counts = snp.zeros((nbins + 2,), snp.result_type(weights)).at[slot].add(
            snp.ravel(weights))
    counts = counts[1:-1]
    if density:
        counts = counts / (edges[1:] - edges[:-1]) / snp.sum(counts)
    return counts, edges

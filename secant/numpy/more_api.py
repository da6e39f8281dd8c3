"""More of jax.numpy (the names issue 15's coverage list found missing), written with
secant.numpy's ops and read by the transforms as source (`__secant_by_source__`), so grad, jvp
and vmap follow from the ops' rules: geomspace, gcd, lcm, unravel_index, ravel_multi_index, the
set operations setdiff1d / union1d / intersect1d, choose, compress, extract, nanquantile /
nanpercentile / nanmedian, polyfit, roots, trim_zeros, unwrap, frexp, lexsort, resize, and the
static grids mgrid / ogrid.

As in JAX, a result whose size depends on the values (set operations, compress, extract) needs
concrete inputs, or `size=` (padded with `fill_value`) under jit and vmap.
"""
import math

import numpy as np

import secant.numpy as snp
from secant import lax
from secant.backends import dtypes
from secant.backends.errors import SecantTypeError, where as _where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["geomspace", "gcd", "lcm", "unravel_index", "ravel_multi_index", "setdiff1d",
           "union1d", "intersect1d", "choose", "compress", "extract", "nanquantile",
           "nanpercentile", "nanmedian", "polyfit", "roots", "trim_zeros", "unwrap", "frexp",
           "lexsort", "resize", "mgrid", "ogrid"]


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """num numbers spaced evenly on a log scale from start to stop (same sign), the ends
    exact."""
    start = snp.asarray(start) * 1.0
    stop = snp.asarray(stop) * 1.0
    sign = snp.sign(start)
    out = sign * snp.logspace(snp.log10(start * sign), snp.log10(stop * sign), num,
                              endpoint=endpoint, base=10.0, axis=0)
    if num > 0:
        out = out.at[0].set(start)
        if endpoint and num > 1:
            out = out.at[-1].set(stop)
    if axis != 0:
        out = snp.moveaxis(out, 0, axis)
    if dtype is not None:
        out = out.astype(dtype)
    return out


def gcd(x1, x2):
    """The greatest common divisor of integers (Euclid's algorithm, elementwise)."""
    a, b = snp.broadcast_arrays(snp.abs(snp.asarray(x1)), snp.abs(snp.asarray(x2)))
    a, b = _promote_int(a, b)

    def step(ab):
        a, b = ab
        go = b != 0
        safe_b = snp.where(go, b, 1)
        return snp.where(go, b, a), snp.where(go, a % safe_b, 0)
    a, _ = lax.while_loop(lambda ab: snp.any(ab[1] != 0), step, (a, b))
    return a


def _promote_int(a, b):
    dt = snp.result_type(a, b)
    if not dtypes.is_int(dt):
        raise TypeError(f"gcd and lcm take integers, got {dt}")
    return a.astype(dt), b.astype(dt)


def lcm(x1, x2):
    """The least common multiple of integers (0 when either is 0)."""
    a, b = _promote_int(snp.asarray(x1), snp.asarray(x2))
    g = gcd(a, b)
    safe_g = snp.where(g == 0, 1, g)
    return snp.where(g == 0, 0, snp.abs(a // safe_g * b))


def unravel_index(indices, shape):
    """The coordinates of flat indices in an array of `shape` (a tuple of arrays); as JAX's,
    out-of-range indices are clamped to the first or last element."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    rest = snp.asarray(indices)
    out = [None] * len(shape)
    for i in reversed(range(len(shape))):
        rest, out[i] = snp.divmod(rest, shape[i])
    high = rest > 0
    low = rest < -1
    return tuple(snp.where(high, s - 1, snp.where(low, 0, o)) for s, o in zip(shape, out))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """The flat indices of coordinates in an array of shape `dims` (order 'C' or 'F'); mode
    'wrap' or 'clip' out-of-range coordinates ('raise' checks concrete ones)."""
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} coordinate arrays for "
                         f"{len(dims)} dimensions")
    coords = [snp.asarray(c) for c in multi_index]
    if mode == "raise":
        _check_in_range(coords, dims)
    elif mode == "wrap":
        coords = [c % d for c, d in zip(coords, dims)]
    elif mode == "clip":
        coords = [snp.clip(c, 0, d - 1) for c, d in zip(coords, dims)]
    else:
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip', got "
                         f"{mode!r}")
    order_axes = range(len(dims)) if order == "C" else reversed(range(len(dims)))
    out = None
    for i in order_axes:
        out = coords[i] if out is None else out * dims[i] + coords[i]
    return out


def _check_in_range(coords, dims):
    for c, d in zip(coords, dims):
        values = np.asarray(c)       # a traced coordinate cannot be checked: as JAX, an error
        if values.size and (values.min() < 0 or values.max() >= d):
            raise ValueError("ravel_multi_index: invalid entry in coordinates array")


def _fill(x, fill_value):
    return snp.zeros((), x.dtype) if fill_value is None else snp.asarray(fill_value, x.dtype)


def _pick(values, mask, size, fill_value):
    """values[mask] (concrete), or its first `size` entries padded with fill_value."""
    if size is None:
        return values[mask]
    (idx,) = snp.nonzero(mask, size=size, fill_value=0)
    picked = snp.take(values, idx)
    return snp.where(snp.arange(size) < snp.sum(mask), picked, _fill(values, fill_value))


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values of ar1 that are not in ar2."""
    ar1 = snp.ravel(snp.asarray(ar1))
    ar2 = snp.ravel(snp.asarray(ar2))
    if not assume_unique:
        ar1 = snp.unique(ar1) if size is None else \
            snp.unique(ar1, size=ar1.shape[0], fill_value=_unique_pad(ar1))
    mask = snp.isin(ar1, ar2, invert=True)
    if size is not None and not assume_unique and ar1.shape[0]:
        n_unique = ar1.shape[0] + 1 - snp.sum(ar1 == ar1[0])
        mask = mask & (snp.arange(ar1.shape[0]) < n_unique)
    return _pick(ar1, mask, size, fill_value)


def _unique_pad(x):
    """unique's padding when sizes are fixed: its first (smallest) value, as JAX's."""
    return snp.min(x)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values in ar1 or ar2."""
    both = snp.concatenate([snp.ravel(snp.asarray(ar1)), snp.ravel(snp.asarray(ar2))])
    if size is None:
        return snp.unique(both)
    return snp.unique(both, size=size, fill_value=fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """The sorted unique values in both ar1 and ar2 (with the indices of their first
    occurrences in each when return_indices)."""
    ar1 = snp.ravel(snp.asarray(ar1))
    ar2 = snp.ravel(snp.asarray(ar2))
    u1 = ar1 if assume_unique else _unique_or_padded(ar1, size)
    mask = snp.isin(u1, ar2)
    if size is not None and not assume_unique and u1.shape[0]:
        mask = mask & (snp.arange(u1.shape[0]) < u1.shape[0] + 1 - snp.sum(u1 == u1[0]))
    out = _pick(u1, mask, size, fill_value)
    if not return_indices:
        return out
    return out, _first_index(ar1, out), _first_index(ar2, out)


def _unique_or_padded(x, size):
    if size is None:
        return snp.unique(x)
    return snp.unique(x, size=x.shape[0], fill_value=_unique_pad(x))


def _first_index(arr, values):
    """The index of each value's first occurrence in arr."""
    return snp.argmax(arr[None, :] == values[:, None], axis=1)


def choose(a, choices, mode="raise"):
    """choices[a[i]][i] for every i (choices: a sequence of arrays of one shape, or one array
    whose first axis holds them), broadcast against a; mode 'wrap' or 'clip' out-of-range a ('raise' checks
    a concrete a)."""
    a = snp.asarray(a)
    if isinstance(choices, (list, tuple)):
        choices = snp.stack(choices)    # one shape (broadcast them first), as under vmap
    n = choices.shape[0]
    if mode == "raise":
        _check_in_range([a], [n])
    elif mode == "wrap":
        a = a % n
    elif mode == "clip":
        a = snp.clip(a, 0, n - 1)
    else:
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    shape = np.broadcast_shapes(snp.shape(a), snp.shape(choices)[1:])
    stacked = snp.broadcast_to(choices, (n,) + shape)
    return snp.take_along_axis(stacked, snp.broadcast_to(a, shape)[None], axis=0)[0]


def compress(condition, a, axis=None, *, size=None, fill_value=0):
    """The slices of a along `axis` (the flattened a when None) where condition holds."""
    a = snp.asarray(a)
    if axis is None:
        a = snp.ravel(a)
        axis = 0
    n = a.shape[axis]
    if size is None:
        return snp.take(a, _concrete_nonzero(condition, n), axis=axis)
    condition = snp.ravel(snp.asarray(condition)).astype(bool)
    if condition.shape[0] < n:
        condition = snp.concatenate([condition, snp.zeros(n - condition.shape[0], bool)])
    elif condition.shape[0] > n:
        condition = condition[:n]
    (idx,) = snp.nonzero(condition, size=size, fill_value=0)
    out = snp.take(a, idx, axis=axis)
    keep = snp.arange(size) < snp.sum(condition)
    keep = snp.reshape(keep, (size,) + (1,) * (a.ndim - axis - 1))
    return snp.where(keep, out, snp.asarray(fill_value, out.dtype))


def _concrete_nonzero(condition, n):
    """The indices below n where a concrete condition holds (a traced one needs size=, as in
    JAX)."""
    idx = np.flatnonzero(np.asarray(condition))
    return idx[idx < n]


def extract(condition, arr, *, size=None, fill_value=0):
    """The entries of arr (flattened) where condition (flattened) holds."""
    return compress(snp.ravel(condition), snp.ravel(arr), size=size, fill_value=fill_value)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False):
    """Quantiles ignoring nans: the sorted non-nan values interpolated (method 'linear',
    'lower', 'higher', 'nearest', 'midpoint'); nan where a slice holds only nans."""
    if out is not None or overwrite_input:
        raise ValueError("nanquantile: out and overwrite_input are not supported")
    a = snp.asarray(a) * 1.0
    nd = a.ndim
    every_axis = axis is None
    if every_axis:
        x = snp.ravel(a)
        axis = 0
    else:
        axis = axis % nd
        x = a
    q_arr = snp.asarray(q) * 1.0
    x = snp.moveaxis(x, axis, -1)
    xs = snp.sort(x, axis=-1)                     # nans last
    count = snp.sum(~snp.isnan(x), axis=-1, keepdims=True)
    qs = snp.reshape(q_arr, q_arr.shape + (1,) * xs.ndim)
    pos = qs * (count - 1)
    lo = snp.clip(snp.floor(pos), 0, xs.shape[-1] - 1)
    hi = snp.clip(snp.ceil(pos), 0, xs.shape[-1] - 1)
    low = _take_last(xs, lo)
    high = _take_last(xs, hi)
    if method == "linear":
        res = low + (high - low) * (pos - lo)
    elif method == "lower":
        res = low
    elif method == "higher":
        res = high
    elif method == "midpoint":
        res = (low + high) / 2
    elif method == "nearest":
        res = snp.where(pos - lo > 0.5, high, low)
    else:
        raise ValueError(f"nanquantile: method {method!r} is not supported")
    res = snp.where(count > 0, res, snp.nan)[..., 0]
    if keepdims and every_axis:
        res = snp.reshape(res, q_arr.shape + (1,) * nd)
    elif keepdims:
        res = snp.expand_dims(res, q_arr.ndim + axis)
    return res


def _take_last(xs, idx):
    """xs's entries at idx along the last axis (idx: q's shape, then xs's batch, then 1)."""
    full = snp.broadcast_to(xs, idx.shape[:-1] + xs.shape[-1:])
    return snp.take_along_axis(full, idx.astype(np.int32), axis=-1)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False):
    """nanquantile at q / 100."""
    return nanquantile(a, snp.asarray(q) / 100.0, axis=axis, out=out,
                       overwrite_input=overwrite_input, method=method, keepdims=keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median ignoring nans."""
    return nanquantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                       keepdims=keepdims)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """The least-squares polynomial of degree deg through (x, y) (highest power first; y may
    hold several columns), with weights w."""
    if full or cov:
        raise ValueError("polyfit: full=True and cov=True are not supported")
    x = snp.asarray(x) * 1.0
    y = snp.asarray(y) * 1.0
    order = deg + 1
    if rcond is None:
        rcond = x.shape[0] * float(snp.finfo(x.dtype).eps)
    lhs = snp.vander(x, order)
    rhs = y
    if w is not None:
        w = snp.asarray(w) * 1.0
        lhs = lhs * w[:, None]
        rhs = rhs * (w if rhs.ndim == 1 else w[:, None])
    scale = snp.sqrt(snp.sum(lhs * lhs, axis=0))
    lhs = lhs / scale[None, :]
    c = snp.linalg.lstsq(lhs, rhs, rcond=rcond)[0]
    return (c.T / scale).T


def roots(p, *, strip_zeros=True):
    """The roots of the polynomial p (highest power first; complex): the eigenvalues of its
    companion matrix. Leading zeros are stripped (p must be concrete then); trailing zeros
    are roots at 0."""
    p = snp.ravel(snp.asarray(p)) * 1.0
    if strip_zeros:
        nonzero = np.flatnonzero(np.asarray(p))
        if nonzero.size == 0:
            return snp.zeros(0, snp.result_type(p, 1j))
        p = p[int(nonzero[0]):]
        trailing = p.shape[0] - 1 - int(np.flatnonzero(np.asarray(p))[-1])
        p = p[:p.shape[0] - trailing]
    else:
        trailing = 0
    n = p.shape[0] - 1
    if n < 1:
        out = snp.zeros(0, snp.result_type(p, 1j))
    else:
        companion = snp.zeros((n, n), p.dtype)
        companion = companion.at[0, :].set(-p[1:] / p[0])
        if n > 1:
            companion = companion.at[snp.arange(1, n), snp.arange(n - 1)].set(1.0)
        out = snp.linalg.eigvals(companion)
    if trailing:
        out = snp.concatenate([out, snp.zeros(trailing, out.dtype)])
    return out


def trim_zeros(filt, trim="fb"):
    """filt without its leading ('f') and trailing ('b') zeros (filt must be concrete)."""
    filt = snp.asarray(filt)
    nonzero = np.flatnonzero(np.asarray(filt))
    if nonzero.size == 0:
        return filt[:0]
    start = int(nonzero[0]) if "f" in trim.lower() else 0
    stop = int(nonzero[-1]) + 1 if "b" in trim.lower() else filt.shape[0]
    return filt[start:stop]


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """p with jumps larger than discont (period / 2 by default) along axis replaced by their
    complement modulo period."""
    p = snp.asarray(p) * 1.0
    if p.shape[axis] == 0:
        return p
    if discont is None:
        discont = period / 2
    interval = period / 2
    dd = snp.diff(p, axis=axis)
    ddmod = snp.mod(dd + interval, period) - interval
    ddmod = snp.where((ddmod == -interval) & (dd > 0), interval, ddmod)
    ph_correct = snp.where(snp.abs(dd) < discont, 0.0, ddmod - dd)
    p = snp.moveaxis(p, axis, -1)
    up = p[..., 1:] + snp.cumsum(snp.moveaxis(ph_correct, axis, -1), axis=-1)
    return snp.moveaxis(snp.concatenate([p[..., :1], up], axis=-1), -1, axis)


def frexp(x):
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1
    (0, inf and nan give (x, 0))."""
    if snp.issubdtype(snp.result_type(x), snp.complexfloating):
        raise SecantTypeError("frexp does not support complex-valued inputs" + _where())
    x = snp.asarray(x) * 1.0
    finite = snp.isfinite(x) & (x != 0)
    ax = snp.where(finite, snp.abs(x), 1.0)
    e = snp.floor(snp.log2(ax)) + 1
    m = ax / snp.exp2(e)
    e = snp.where(m >= 1, e + 1, snp.where(m < 0.5, e - 1, e))
    m = ax / snp.exp2(e)
    mantissa = snp.where(finite, snp.sign(x) * m, x)
    exponent = snp.where(finite, e, 0).astype(np.int32)
    return mantissa, exponent


def lexsort(keys, axis=-1):
    """The indices that sort by the last key, then the one before, ...: stable argsorts from
    the first key to the last."""
    keys = [snp.asarray(k) for k in keys]
    if not keys:
        raise TypeError("lexsort: need at least one key")
    idx = snp.argsort(keys[0], axis=axis, stable=True)
    for k in keys[1:]:
        order = snp.argsort(snp.take_along_axis(k, idx, axis=axis), axis=axis, stable=True)
        idx = snp.take_along_axis(idx, order, axis=axis)
    return idx


def resize(a, new_shape):
    """a's entries repeated (flattened, cycled) to fill new_shape."""
    new_shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("resize: all elements of new_shape must be non-negative")
    flat = snp.ravel(snp.asarray(a))
    new_size = math.prod(new_shape)
    if flat.shape[0] == 0 or new_size == 0:
        return snp.zeros(new_shape, flat.dtype)
    repeats = -(-new_size // flat.shape[0])
    return snp.reshape(snp.tile(flat, repeats)[:new_size], new_shape)


class _Grid:
    """mgrid / ogrid: dense or open grids from slices (a complex step is a count of points,
    as numpy's), in JAX's default dtypes."""

    def __init__(self, sparse):
        self.sparse = sparse

    def __getitem__(self, key):
        grid = np.ogrid[key] if self.sparse else np.mgrid[key]
        if isinstance(grid, (list, tuple)):
            return [snp.asarray(g, dtype=_default(g.dtype)) for g in grid]
        return snp.asarray(grid, dtype=_default(grid.dtype))


def _default(dt):
    if np.issubdtype(dt, np.integer):
        return dtypes.default_int()
    return dtypes.default_float()


mgrid = _Grid(False)
ogrid = _Grid(True)

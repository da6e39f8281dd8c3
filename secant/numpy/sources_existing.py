"""Sources for secant.numpy functions that are short compositions of ops (see
secant/numpy/composite.py): the transforms read these to differentiate and batch the library
functions of the same name, whose own calls compute the values. Each computes the same values
and dtypes as its library function, with ops that have rules (static control flow on shapes,
dtypes and axis arguments only)."""
import functools
import importlib
import math

import numpy as np

import secant.numpy as snp
from secant import lax
from secant.numpy import creation, indexing, products, reductions, ufuncs
from secant.custom import custom_jvp
from secant.numpy.composite import source_for
from secant.backends.errors import SecantTypeError, SecantValueError, where as _where

shapes = importlib.import_module("secant.numpy.shape")    # (snp.shape is the function)

__secant_by_source__ = True      # transforms read this module like user code


def _static(fn):
    """A helper computing shapes or axes from static values: transforms call it as it is."""
    fn.__secant_static_query__ = True
    return fn


@_static
def _interleaved(first, second):
    """(first[0], second[0], first[1], second[1], ...) and the merged (first[i] * second[i])."""
    pairs = tuple(x for pair in zip(first, second) for x in pair)
    return pairs, tuple(p * q for p, q in zip(first, second))


@_static
def _padded_shape(shape, ndim):
    return (1,) * (ndim - len(shape)) + tuple(shape)


@_static
def _one_hot_shape(ndim, axis, size):
    """(1, ..., size at axis, ..., 1)."""
    return tuple(size if i == axis else 1 for i in range(ndim))


@_static
def _tile_layout(first, second):
    """Two shapes (or tile's reps) padded with leading 1s to their common rank."""
    first, second = tuple(np.atleast_1d(first).tolist()), tuple(np.atleast_1d(second).tolist())
    nd = max(len(first), len(second))
    return (1,) * (nd - len(first)) + first, (1,) * (nd - len(second)) + second, nd


@_static
def _quantile_points(p, n, method):
    """The sorted positions (lo, hi) a quantile p of n values reads, and hi's weight."""
    pos = p * (n - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if method == "lower" or (method == "linear" and lo == hi):
        hi, frac = lo, 0.0
    elif method == "higher":
        lo, frac = hi, 0.0
    elif method == "nearest":
        lo = hi = int(np.round(pos))
        frac = 0.0
    elif method == "midpoint":
        frac = 0.5
    else:
        frac = pos - lo
    return lo, hi, frac


@_static
def _quantile_layout(shape, axis):
    """For reducing `axis` of an array of `shape`: the axes, where they move (last), the shape
    of the kept axes and the number of reduced elements."""
    ndim = len(shape)
    axes = _axes(axis, ndim)
    rest = [i for i in range(ndim) if i not in axes]
    return (axes, tuple(range(len(rest), ndim)), tuple(shape[i] for i in rest),
            math.prod(shape[i] for i in axes), tuple(1 if i in axes else d
                                                     for i, d in enumerate(shape)))


# --- helpers ------------------------------------------------------------------------------------
def _inexact(x):
    """x as a floating (or complex) array: integers and bools take the default float."""
    if not snp.issubdtype(snp.result_type(x), snp.inexact):
        x = snp.asarray(x).astype(snp.result_type(x, 1.0))
    return x


def _axis(axis, ndim):
    return axis % ndim


def _axes(axis, ndim):
    """An axis argument (None: every axis; an int or a sequence) as a tuple of axes >= 0."""
    if axis is None:
        axes = tuple(range(ndim))
    elif isinstance(axis, (tuple, list)):
        axes = tuple(i % ndim for i in axis)
    else:
        axes = (axis % ndim,)
    return axes


# --- elementwise ----------------------------------------------------------------------------------
@source_for(ufuncs.deg2rad)
def deg2rad(x):
    return _inexact(x) * (np.pi / 180)


@source_for(ufuncs.rad2deg)
def rad2deg(x):
    return _inexact(x) * (180 / np.pi)


@source_for(ufuncs.sinc)
def sinc(x):
    x = _inexact(x)
    zero = x == 0
    pi_x = np.pi * x
    safe = snp.where(zero, 1.0, pi_x)
    return snp.where(zero, _sinc_maclaurin(0, pi_x), snp.sin(safe) / safe)


@_static
def _sinc_coefficient(k):
    """The k-th derivative of sin(t) / t at t = 0: (-1)^(k/2) / (k + 1) for even k, else 0."""
    return 0.0 if k % 2 else (-1.0) ** (k // 2) / (k + 1)


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _sinc_maclaurin(k, t):
    """The k-th derivative of sin(t) / t at 0, constant in t; its derivative is the (k+1)-th, so
    every derivative order of sinc is right at 0 (the where above only guards the division)."""
    return t * 0 + _sinc_coefficient(k)


@_sinc_maclaurin.defjvp
def _sinc_maclaurin_jvp(k, primals, tangents):
    t, = primals
    t_dot, = tangents
    return _sinc_maclaurin(k, t), _sinc_maclaurin(k + 1, t) * t_dot


@source_for(ufuncs.copysign)
def copysign(x1, x2):
    # (+ zeros_like(x2): promoted with x2 as jnp's, so copysign(1.0, x) is not weak)
    if snp.issubdtype(snp.result_type(x1, x2), snp.complexfloating):
        raise SecantTypeError("copysign does not support complex-valued inputs" + _where())
    magnitude = snp.abs(_inexact(x1)) + snp.zeros_like(x2)
    return snp.where(snp.signbit(x2), -magnitude, magnitude)


@source_for(ufuncs.fmax)
def fmax(x1, x2):
    # (as jnp.fmax: a tie takes x2, so x2 gets the whole derivative)
    return snp.where((x1 > x2) | snp.isnan(x2), x1, x2)


@source_for(ufuncs.fmin)
def fmin(x1, x2):
    return snp.where((x1 < x2) | snp.isnan(x2), x1, x2)


def _as(x, dtype):
    if snp.result_type(x) != dtype:
        x = snp.asarray(x).astype(dtype)
    return x


@source_for(ufuncs.fmod)
def fmod(x1, x2):
    dt = snp.result_type(x1, x2)
    if dt == snp.bool_:
        dt = snp.result_type(0)             # booleans count as the default int, as JAX's
    x1, x2 = _as(x1, dt), _as(x2, dt)
    if snp.issubdtype(dt, snp.integer):
        x2 = snp.where(x2 == 0, 1, x2)      # x % 0 is 0, as NumPy's and JAX's
    return lax.rem(x1, x2)


@source_for(ufuncs.heaviside)
def heaviside(x1, x2):
    if snp.issubdtype(snp.result_type(x1, x2), snp.complexfloating):
        raise SecantTypeError("heaviside does not support complex-valued inputs" + _where())
    x1 = _inexact(x1)
    return snp.where(x1 < 0, 0.0, snp.where(x1 > 0, 1.0, x2))


@source_for(ufuncs.float_power)
def float_power(x1, x2):
    dt = snp.result_type(1.0)       # float64 when x64 is on, else float32 (complex likewise)
    if snp.issubdtype(snp.result_type(x1, x2), snp.complexfloating):
        dt = snp.result_type(1j)
    return snp.power(snp.asarray(x1).astype(dt), snp.asarray(x2).astype(dt))


@source_for(ufuncs.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if snp.issubdtype(snp.result_type(x), snp.complexfloating):   # each part, as NumPy
        re = nan_to_num(snp.real(x), copy, nan, posinf, neginf)
        im = nan_to_num(snp.imag(x), copy, nan, posinf, neginf)
        x = lax.complex(re, im)
    elif snp.issubdtype(snp.result_type(x), snp.inexact):
        info = snp.finfo(snp.result_type(x))
        big, small = posinf, neginf
        if posinf is None:
            big = info.max
        if neginf is None:
            small = info.min
        x = snp.where(snp.isnan(x), nan, x)
        x = snp.where(snp.isinf(x) & (x > 0), big, x)
        x = snp.where(snp.isinf(x) & (x < 0), small, x)
    return x


@source_for(ufuncs.isposinf)
def isposinf(x):
    if snp.issubdtype(snp.result_type(x), snp.complexfloating):
        raise SecantValueError("isposinf does not support complex-valued inputs" + _where())
    return snp.isinf(x) & (x > 0)


@source_for(ufuncs.isneginf)
def isneginf(x):
    if snp.issubdtype(snp.result_type(x), snp.complexfloating):
        raise SecantValueError("isneginf does not support complex-valued inputs" + _where())
    return snp.isinf(x) & (x < 0)


@source_for(ufuncs.logical_and)
def logical_and(x1, x2):
    return snp.asarray(x1).astype(bool) & snp.asarray(x2).astype(bool)


@source_for(ufuncs.logical_or)
def logical_or(x1, x2):      # (not `|`: the transforms read `a | b` as a possible dict merge)
    return snp.bitwise_or(snp.asarray(x1).astype(bool), snp.asarray(x2).astype(bool))


@source_for(ufuncs.logical_xor)
def logical_xor(x1, x2):
    return snp.asarray(x1).astype(bool) ^ snp.asarray(x2).astype(bool)


@source_for(ufuncs.logical_not)
def logical_not(x):
    return ~snp.asarray(x).astype(bool)


@source_for(ufuncs.bitwise_not)
def bitwise_not(x):
    return ~x


@source_for(ufuncs.divmod)
def divmod(x1, x2):
    return x1 // x2, x1 % x2


# --- creation from (possibly traced) values ------------------------------------------------------
@source_for(creation.full)
def full(shape, fill_value, dtype=None):
    value = snp.asarray(fill_value)
    if dtype is not None:
        value = value.astype(dtype)
    return snp.broadcast_to(value, shape)


@source_for(creation.full_like)
def full_like(a, fill_value, dtype=None, shape=None):
    if dtype is None:
        dtype = snp.result_type(a)
    if shape is None:
        shape = snp.shape(a)
    return snp.broadcast_to(snp.asarray(fill_value).astype(dtype), shape)


@source_for(creation.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    if dtype is None:
        out_dt = snp.result_type(start, stop, float)
    else:
        out_dt = snp.dtype(dtype)
    calc_dt = out_dt
    if not snp.issubdtype(out_dt, snp.inexact):
        calc_dt = snp.result_type(1.0)
    start = snp.asarray(start).astype(calc_dt)
    stop = snp.asarray(stop).astype(calc_dt)
    bshape = snp.broadcast_shapes(snp.shape(start), snp.shape(stop))
    axis = _axis(axis, len(bshape) + 1)
    lo = snp.expand_dims(snp.broadcast_to(start, bshape), axis)
    hi = snp.expand_dims(snp.broadcast_to(stop, bshape), axis)
    out_shape = bshape[:axis] + (num,) + bshape[axis:]
    div = num - int(endpoint)
    if div > 0:
        step = (hi - lo) / div
        steps = snp.arange(num, dtype=calc_dt).reshape(
            tuple(num if i == axis else 1 for i in range(len(out_shape))))
        out = steps * step + lo
        if endpoint:
            out = snp.concatenate([snp.take(out, snp.arange(num - 1), axis=axis), hi], axis)
        step = step.reshape(bshape)
    else:
        step = snp.full(bshape, np.nan, calc_dt)
        out = snp.broadcast_to(lo, out_shape)
    if snp.issubdtype(out_dt, snp.integer):
        out = snp.floor(out)
    if out_dt != calc_dt:
        out = out.astype(out_dt)
    if retstep:
        out = (out, step)
    return out


@source_for(creation.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    lin = linspace(start, stop, num, endpoint, axis=axis)
    out = snp.power(snp.asarray(base).astype(lin.dtype), lin)
    if dtype is not None:
        out = out.astype(dtype)
    return out


# --- matrices -------------------------------------------------------------------------------------
@source_for(creation.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    sizes = [snp.size(x) for x in xi]
    dims, grid = _grid_layout(sizes, indexing)
    out = []
    for x, d in zip(xi, dims):
        column = snp.reshape(x, _one_hot_shape(len(dims), d, grid[d]))
        if not sparse:
            column = snp.broadcast_to(column, grid)
        out.append(column)
    return out


@_static
def _grid_layout(sizes, indexing):
    """meshgrid's axis for each input ('xy' swaps the first two) and the grid's shape."""
    dims = list(range(len(sizes)))
    if indexing == "xy" and len(sizes) >= 2:
        dims[0], dims[1] = 1, 0
    shape = [0] * len(sizes)
    for n, d in zip(sizes, dims):
        shape[d] = n
    return dims, tuple(shape)


@source_for(creation.tril)
def tril(m, k=0):
    rows, cols = snp.shape(m)[-2:]
    return snp.where(snp.tri(rows, cols, k, dtype=bool), m, 0)


@source_for(creation.triu)
def triu(m, k=0):
    rows, cols = snp.shape(m)[-2:]
    return snp.where(snp.tri(rows, cols, k - 1, dtype=bool), 0, m)


@_static
def _diagonal_positions(n, m, offset):
    """Where the offset diagonal of an n x m plane sits in the flattened plane: element
    (r, r + offset) at start + r * (m + 1)."""
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    start = offset if offset >= 0 else -offset * m
    return np.arange(length) * (m + 1) + start


@source_for(creation.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    ndim = snp.ndim(a)
    x = snp.moveaxis(a, (_axis(axis1, ndim), _axis(axis2, ndim)), (-2, -1))
    n, m = snp.shape(x)[-2:]
    flat = x.reshape(snp.shape(x)[:-2] + (n * m,))
    return snp.take(flat, _diagonal_positions(n, m, offset), axis=-1)


@_static
def _spread_shape(n, k):
    return (n, 1) if k >= 0 else (1, n)     # row i holds v[i] / column j holds v[j]


def _diag_of_vector(v, k):
    n = snp.shape(v)[0] + abs(k)
    spread = snp.pad(v, (0, abs(k))).reshape(_spread_shape(n, k))
    return snp.where(snp.eye(n, n, k, dtype=bool), spread, 0)


@source_for(creation.diag)
def diag(v, k=0):
    # (each branch one call: no shape-derived name crosses the if, which jit's staged form of
    # a derivative makes a cond whose operands it would then differentiate: snp.eye(n, ...))
    if snp.ndim(v) == 2:
        out = diagonal(v, k)
    else:
        out = _diag_of_vector(v, k)
    return out


@source_for(creation.diagflat)
def diagflat(v, k=0):
    return diag(snp.ravel(v), k)


@source_for(products.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    total = snp.sum(diagonal(a, offset, axis1, axis2), axis=-1)
    if dtype is not None:
        total = total.astype(dtype)
    return total


# --- shapes ----------------------------------------------------------------------------------------
@source_for(shapes.permute_dims)
def permute_dims(a, axes=None):
    return snp.transpose(a, axes)


@source_for(shapes.matrix_transpose)
def matrix_transpose(x):
    return snp.swapaxes(x, -1, -2)


@source_for(shapes.rollaxis)
def rollaxis(a, axis, start=0):
    ndim = snp.ndim(a)
    axis = _axis(axis, ndim)
    start = start + ndim if start < 0 else start
    if start > axis:
        start = start - 1
    return snp.moveaxis(a, axis, start)


@source_for(shapes.rot90)
def rot90(m, k=1, axes=(0, 1)):
    ax0, ax1 = _axis(axes[0], snp.ndim(m)), _axis(axes[1], snp.ndim(m))
    k = k % 4
    if k == 1:
        m = snp.swapaxes(snp.flip(m, ax1), ax0, ax1)
    elif k == 2:
        m = snp.flip(m, (ax0, ax1))
    elif k == 3:
        m = snp.flip(snp.swapaxes(m, ax0, ax1), ax1)
    return m


def _at_least(a, ndim):
    """a with axes of size 1 added as NumPy's atleast_1d/2d/3d add them."""
    rank = snp.ndim(a)
    if rank >= ndim:
        out = snp.asarray(a)
    elif ndim == 3 and rank == 1:
        out = snp.reshape(a, (1,) + snp.shape(a) + (1,))
    elif ndim == 3 and rank == 2:
        out = snp.reshape(a, snp.shape(a) + (1,))
    else:
        out = snp.reshape(a, (1,) * (ndim - rank) + snp.shape(a))
    return out


def _all_at_least(arys, ndim):
    out = [_at_least(a, ndim) for a in arys]
    if len(out) == 1:
        out = out[0]
    return out


@source_for(shapes.atleast_1d)
def atleast_1d(*arys):
    return _all_at_least(arys, 1)


@source_for(shapes.atleast_2d)
def atleast_2d(*arys):
    return _all_at_least(arys, 2)


@source_for(shapes.atleast_3d)
def atleast_3d(*arys):
    return _all_at_least(arys, 3)


def _joined(arrays, axis, dtype):
    out = snp.concatenate(arrays, axis)
    if dtype is not None:
        out = out.astype(dtype)
    return out


@source_for(shapes.vstack, shapes.row_stack)
def vstack(tup, dtype=None):
    return _joined([_at_least(a, 2) for a in tup], 0, dtype)


@source_for(shapes.hstack)
def hstack(tup, dtype=None):
    arrays = [_at_least(a, 1) for a in tup]
    axis = 1
    if snp.ndim(arrays[0]) == 1:
        axis = 0
    return _joined(arrays, axis, dtype)


@source_for(shapes.dstack)
def dstack(tup, dtype=None):
    return _joined([_at_least(a, 3) for a in tup], 2, dtype)


@source_for(shapes.column_stack)
def column_stack(tup):
    arrays = [snp.reshape(a, (snp.size(a), 1)) if snp.ndim(a) < 2 else a for a in tup]
    return snp.concatenate(arrays, 1)


@source_for(shapes.tile)
def tile(A, reps):
    dims, reps, nd = _tile_layout(snp.shape(A), reps)
    # a repeat axis before each data axis: (r0, d0, r1, d1, ...), each pair merged after
    spread_shape, _ = _interleaved((1,) * nd, dims)
    tiled_shape, out_shape = _interleaved(reps, dims)
    return snp.broadcast_to(snp.reshape(A, spread_shape), tiled_shape).reshape(out_shape)


def _repeat_uniform(a, axis, r):
    dims = snp.shape(a)
    spread = snp.expand_dims(a, axis + 1)
    spread = snp.broadcast_to(spread, dims[:axis + 1] + (r,) + dims[axis + 1:])
    return spread.reshape(dims[:axis] + (dims[axis] * r,) + dims[axis + 1:])


def _repeat_counts(a, repeats, axis):
    counts = np.asarray(repeats)
    if counts.ndim == 0 or counts.size == 1:
        out = _repeat_uniform(a, axis, int(counts.reshape(())))
    else:
        # element i of the axis, counts[i] times: one gather
        out = snp.take(a, np.repeat(np.arange(counts.size), counts), axis=axis)
    return out


def _repeat_to_length(a, repeats, axis, total):
    # counts known only when it runs (a graph's n_node): each place's element by a search
    index = snp.searchsorted(snp.cumsum(repeats), snp.arange(total), side="right")
    return snp.take(a, snp.minimum(index, snp.shape(a)[axis] - 1), axis=axis)


@source_for(shapes.repeat)
def repeat(a, repeats, axis=None, total_repeat_length=None):
    if axis is None:
        a = snp.ravel(a)
        axis = 0
    axis = _axis(axis, snp.ndim(a))
    if total_repeat_length is not None and snp.ndim(repeats) == 1:
        out = _repeat_to_length(a, repeats, axis, total_repeat_length)
    else:
        out = _repeat_counts(a, repeats, axis)
    return out


# --- products --------------------------------------------------------------------------------------
@source_for(products.inner)
def inner(a, b):
    if snp.ndim(a) == 0 or snp.ndim(b) == 0:
        out = a * b
    else:
        out = snp.tensordot(a, b, ((snp.ndim(a) - 1,), (snp.ndim(b) - 1,)))
    return out


@source_for(products.vdot)
def vdot(a, b):
    return snp.dot(snp.conj(snp.ravel(a)), snp.ravel(b))


@source_for(products.vecdot)
def vecdot(x1, x2, axis=-1):
    return snp.sum(snp.conj(snp.moveaxis(x1, axis, -1)) * snp.moveaxis(x2, axis, -1), axis=-1)


@source_for(products.kron)
def kron(a, b):
    a_dims, b_dims, nd = _tile_layout(snp.shape(a), snp.shape(b))
    # a on the even axes, b on the odd ones, each pair merged after
    a_spread, out_shape = _interleaved(a_dims, b_dims)
    b_spread, _ = _interleaved((1,) * nd, b_dims)
    a_spread, _ = _interleaved(a_dims, (1,) * nd)
    return (snp.reshape(a, a_spread) * snp.reshape(b, b_spread)).reshape(out_shape)


@source_for(products.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa, axisb, axisc = axis, axis, axis
    a = snp.moveaxis(a, axisa, -1)
    b = snp.moveaxis(b, axisb, -1)
    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if snp.shape(a)[-1] == 2 and snp.shape(b)[-1] == 2:
        out = z
    else:
        a2, b2 = snp.zeros_like(a0), snp.zeros_like(b0)
        if snp.shape(a)[-1] == 3:
            a2 = a[..., 2]
        if snp.shape(b)[-1] == 3:
            b2 = b[..., 2]
        x = a1 * b2 - a2 * b1
        y = a2 * b0 - a0 * b2
        common = snp.broadcast_shapes(snp.shape(x), snp.shape(y), snp.shape(z))
        out = snp.stack([snp.broadcast_to(x, common), snp.broadcast_to(y, common),
                         snp.broadcast_to(z, common)], -1)
        out = snp.moveaxis(out, -1, axisc)
    return out


# --- reductions ----------------------------------------------------------------------------------
@_static
def _cumulative_sum_dtype(dt, dtype):
    """cumulative_sum's dtype: as given, else jnp's promote_integers rule (int8 -> int32)."""
    return dtype if dtype is not None else reductions._accumulator_dtype(dt)


@source_for(reductions.cumulative_sum)
def cumulative_sum(a, axis=None, dtype=None, out=None):
    axis = reductions._array_api_axis("cumulative_sum", a, axis)
    return snp.cumsum(snp.asarray(a).astype(_cumulative_sum_dtype(snp.result_type(a), dtype)),
                      axis)


@source_for(reductions.cumulative_prod)
def cumulative_prod(a, axis=None, dtype=None, out=None):
    return snp.cumprod(a, reductions._array_api_axis("cumulative_prod", a, axis), dtype)


@source_for(reductions.ptp)
def ptp(a, axis=None, out=None, keepdims=False):
    return snp.max(a, axis=axis, keepdims=keepdims) - snp.min(a, axis=axis, keepdims=keepdims)


@source_for(reductions.average)
def average(a, axis=None, weights=None, returned=False, keepdims=False):
    if weights is None:
        avg = snp.mean(a, axis=axis, keepdims=keepdims)
        axes = _axes(axis, snp.ndim(a))
        total = snp.full(snp.shape(avg), math.prod(snp.shape(a)[i] for i in axes),
                         snp.result_type(avg))
    else:
        w = _inexact(weights)
        if snp.shape(w) != snp.shape(a):
            ax = _axis(axis, snp.ndim(a))
            w = snp.broadcast_to(w.reshape(tuple(snp.shape(w)[0] if i == ax else 1
                                                 for i in range(snp.ndim(a)))), snp.shape(a))
        total = snp.sum(w, axis=axis, keepdims=keepdims)
        avg = snp.sum(a * w, axis=axis, keepdims=keepdims) / total
    if returned:
        avg = (avg, total)
    return avg


def _nan_as(a, value):
    if snp.issubdtype(snp.result_type(a), snp.inexact):
        a = snp.where(snp.isnan(a), value, a)
    return a


@source_for(reductions.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    return snp.sum(_nan_as(a, 0), axis=axis, keepdims=keepdims)


@source_for(reductions.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    return snp.prod(_nan_as(a, 1), axis=axis, keepdims=keepdims)


@source_for(reductions.nanmax)
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    out = snp.max(_nan_as(a, -np.inf), axis=axis, keepdims=keepdims)
    if snp.issubdtype(snp.result_type(a), snp.inexact):
        out = snp.where(snp.all(snp.isnan(a), axis=axis, keepdims=keepdims), np.nan, out)
    return out


@source_for(reductions.nanmin)
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    out = snp.min(_nan_as(a, np.inf), axis=axis, keepdims=keepdims)
    if snp.issubdtype(snp.result_type(a), snp.inexact):
        out = snp.where(snp.all(snp.isnan(a), axis=axis, keepdims=keepdims), np.nan, out)
    return out


@source_for(reductions.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    a = _inexact(a)
    kept = ~snp.isnan(a)
    count = snp.sum(kept, axis=axis, keepdims=keepdims)
    return snp.sum(snp.where(kept, a, 0), axis=axis, keepdims=keepdims) / count


@source_for(reductions.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    a = _inexact(a)
    kept = ~snp.isnan(a)
    count = snp.sum(kept, axis=axis, keepdims=True)
    centre = snp.sum(snp.where(kept, a, 0), axis=axis, keepdims=True) / count
    squares = snp.where(kept, snp.square(snp.abs(a - centre)), 0)
    return snp.sum(squares, axis=axis, keepdims=keepdims) / snp.maximum(
        snp.sum(kept, axis=axis, keepdims=keepdims) - ddof, 0)


@source_for(reductions.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    return snp.sqrt(nanvar(a, axis, ddof=ddof, keepdims=keepdims))


@source_for(reductions.nancumsum)
def nancumsum(a, axis=None, dtype=None, out=None):
    return snp.cumsum(_nan_as(a, 0), axis=axis)


@source_for(reductions.nancumprod)
def nancumprod(a, axis=None, dtype=None, out=None):
    return snp.cumprod(_nan_as(a, 1), axis=axis)


@source_for(reductions.nanargmax)
def nanargmax(a, axis=None, out=None, keepdims=None):
    return snp.argmax(_nan_as(a, -np.inf), axis=axis, keepdims=keepdims)


@source_for(reductions.nanargmin)
def nanargmin(a, axis=None, out=None, keepdims=None):
    return snp.argmin(_nan_as(a, np.inf), axis=axis, keepdims=keepdims)


@source_for(reductions.count_nonzero)
def count_nonzero(a, axis=None, keepdims=False):
    return snp.sum(a != 0, axis=axis, keepdims=keepdims)


def _quantile_at(ordered, p, n, method):
    lo, hi, frac = _quantile_points(p, n, method)
    out = ordered[..., lo]
    if frac:
        out = out + (ordered[..., hi] - out) * frac
    return out


@source_for(reductions.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    qs = np.asarray(q, dtype=np.float64)
    a = _inexact(a)
    axes, last, kept_shape, n, full_shape = _quantile_layout(snp.shape(a), axis)
    ordered = snp.sort(snp.moveaxis(a, axes, last).reshape(kept_shape + (n,)), axis=-1)
    has_nan = snp.any(snp.isnan(ordered), axis=-1)
    results = [snp.where(has_nan, np.nan, _quantile_at(ordered, float(p), n, method))
               for p in np.atleast_1d(qs)]
    if keepdims:
        results = [r.reshape(full_shape) for r in results]
    if qs.ndim == 0:
        out = results[0]
    else:
        out = snp.stack(results)
    return out


@source_for(reductions.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False):
    return quantile(a, np.asarray(q) / 100, axis, method=method, keepdims=keepdims)


@source_for(reductions.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return quantile(a, 0.5, axis, keepdims=keepdims)


@_static
def _common_shape(shapes):
    return snp.broadcast_shapes(*shapes)


@source_for(shapes.broadcast_arrays)
def broadcast_arrays(*args):
    shapes_ = [snp.shape(a) for a in args]
    target = _common_shape(shapes_)
    return [snp.broadcast_to(a, target) for a in args]


# --- indices of nonzero elements (a static size=: the result's shape) -----------------------------
@_static
def _nonzero_size(size):
    if size is None:
        from secant.backends.errors import ConcretizationError, where
        raise ConcretizationError("nonzero of a traced or batched array needs size=: the number "
                                  "of nonzero elements is not known while transforming. Pass "
                                  "size=N (and fill_value=) for a fixed-size result" + where())
    return int(size)


@_static
def _fills(fill_value, ndim):
    if fill_value is None:
        fill_value = 0
    if np.ndim(fill_value) == 0:
        fill_value = (fill_value,) * ndim
    return tuple(fill_value)


@_static
def _strides(shape):
    """Row-major strides (in elements) of an array of `shape`, with its axis sizes (at least 1)."""
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    return [(max(s, 1), max(n, 1)) for s, n in zip(strides, shape)]


@source_for(indexing.nonzero)
def nonzero(a, *, size=None, fill_value=None):
    size = _nonzero_size(size)
    found = snp.ravel(a) != 0
    # the flat positions of the nonzero elements first, in order: a stable sort of "is zero"
    order = snp.argsort(~found, stable=True)
    order = snp.pad(order, (0, max(size - snp.size(a), 0)))[:size]
    used = snp.arange(size) < snp.sum(found)
    out = []
    for (stride, n), fill in zip(_strides(snp.shape(a)), _fills(fill_value, snp.ndim(a))):
        out.append(snp.where(used, order // stride % n, fill))
    return tuple(out)


@source_for(indexing.flatnonzero)
def flatnonzero(a, *, size=None, fill_value=None):
    return nonzero(snp.ravel(a), size=size, fill_value=fill_value)[0]


@source_for(indexing.argwhere)
def argwhere(a, *, size=None, fill_value=None):
    return snp.stack(nonzero(snp.atleast_1d(a), size=size, fill_value=fill_value), axis=1)

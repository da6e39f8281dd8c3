"""jax.scipy.stats' functions of samples: mode, rankdata and sem, written with secant.numpy's
ops and read by the transforms through its source (`__secant_by_source__`).

mode and rankdata sort along the axis and read the runs of equal values off the sorted array
(a run starts where a value differs from the one before it: its start is the running maximum
of those positions, its end the reversed running minimum of where the next run starts), so
they cost a sort, not a comparison of every pair. Neither has a derivative (JAX's gradient of
both is zero: the ranks and counts are integers)."""
from typing import NamedTuple

import secant.numpy as snp
from secant import lax
from secant.backends.errors import SecantValueError, where as _where

__secant_by_source__ = True      # transforms read this module like user code


class ModeResult(NamedTuple):
    mode: object
    count: object


def _nan_policy(name, nan_policy, omit=False):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise SecantValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                               "{'propagate', 'omit', 'raise'}" + _where())
    if nan_policy == "raise" or (nan_policy == "omit" and not omit):
        raise NotImplementedError(f"{name}: nan_policy={nan_policy!r} is not supported (as in "
                                  "JAX: only 'propagate')" + _where())


def _runs(sorted_x):
    """(start, end): for each position of `sorted_x` (sorted along its last axis), the first
    and last positions of its run of equal values (nan never equals itself: a run of one)."""
    n = sorted_x.shape[-1]
    position = snp.broadcast_to(snp.arange(n), sorted_x.shape)
    differs = sorted_x[..., 1:] != sorted_x[..., :-1]
    new_run = snp.concatenate([snp.ones_like(differs[..., :1]), differs], axis=-1)
    run_ends = snp.concatenate([differs, snp.ones_like(differs[..., :1])], axis=-1)
    start = lax.cummax(snp.where(new_run, position, 0), axis=sorted_x.ndim - 1)
    end = lax.cummin(snp.where(run_ends, position, n - 1), axis=sorted_x.ndim - 1, reverse=True)
    return start, end


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most common value along `axis` (the smallest of those tied) and its count (an int),
    as JAX's and SciPy's; axis=None: of the flattened array. An empty axis gives (nan, 0.)."""
    _nan_policy("mode", nan_policy)
    x = snp.atleast_1d(snp.asarray(a))
    if axis is None:
        x = snp.ravel(x)
        last = 0
    else:
        last = axis % x.ndim
    moved = snp.moveaxis(x, last, -1)
    if moved.shape[-1] == 0:
        values = snp.full(moved.shape[:-1], snp.nan)
        counts = snp.zeros(moved.shape[:-1])
    else:
        ordered = snp.sort(moved, axis=-1)
        start, end = _runs(ordered)
        run_length = end - start + 1
        best = snp.argmax(run_length, axis=-1)          # (the first: the smallest value)
        values = snp.take_along_axis(ordered, best[..., None], axis=-1)[..., 0]
        counts = snp.max(run_length, axis=-1)
    if keepdims:
        if axis is None:
            shape = (1,) * snp.ndim(a)
        else:
            shape = tuple(1 if i == last else s for i, s in enumerate(x.shape))
        values = snp.reshape(values, shape)
        counts = snp.reshape(counts, shape)
    return ModeResult(values, counts)


_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def _ranks(x, method):
    """The ranks of x along its last axis (floats); nan throughout where x has a nan."""
    order = snp.argsort(x, axis=-1, stable=True)
    ordered = snp.take_along_axis(x, order, axis=-1)
    inverse = snp.argsort(order, axis=-1, stable=True)
    if method == "ordinal":
        sorted_ranks = snp.broadcast_to(snp.arange(1, x.shape[-1] + 1), x.shape) * 1.0
    elif method == "dense":
        differs = ordered[..., 1:] != ordered[..., :-1]
        new_run = snp.concatenate([snp.ones_like(differs[..., :1]), differs], axis=-1)
        sorted_ranks = snp.cumsum(new_run, axis=-1) * 1.0
    else:
        start, end = _runs(ordered)
        if method == "min":
            sorted_ranks = start + 1.0
        elif method == "max":
            sorted_ranks = end + 1.0
        else:
            sorted_ranks = 0.5 * (start + end) + 1.0
    ranks = snp.take_along_axis(sorted_ranks, inverse, axis=-1)
    has_nan = snp.any(snp.isnan(x), axis=-1, keepdims=True)
    return snp.where(has_nan, snp.nan, ranks)


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """The ranks (from 1) of `a`'s values along `axis` (axis=None: of the flattened array),
    ties by `method` ("average", "min", "max", "dense", "ordinal"), as floats; all nan where
    the data has a nan (nan_policy "propagate", JAX's only one)."""
    _nan_policy("rankdata", nan_policy)
    if method not in _RANK_METHODS:
        raise SecantValueError(f"unknown method '{method}'" + _where())
    x = snp.asarray(a)
    if axis is None:
        return _ranks(snp.ravel(x), method)
    last = axis % x.ndim
    return snp.moveaxis(_ranks(snp.moveaxis(x, last, -1), method), -1, last)


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean, std(a, ddof) / sqrt(n) along `axis` (axis=None: of the
    flattened array); nan_policy="omit" leaves out the nans (n counts the rest), as JAX's."""
    if nan_policy not in ("propagate", "omit"):
        raise SecantValueError(f"{nan_policy} is not supported" + _where())
    x = snp.asarray(a) * 1.0
    if nan_policy == "omit":
        count = snp.sum(~snp.isnan(x), axis=axis, keepdims=keepdims)
        return (snp.nanstd(x, axis=axis, ddof=ddof, keepdims=keepdims)
                / snp.sqrt(count).astype(x.dtype))
    size = x.size if axis is None else x.shape[axis]
    return snp.std(x, axis=axis, ddof=ddof, keepdims=keepdims) / snp.sqrt(
        snp.asarray(size, dtype=x.dtype))

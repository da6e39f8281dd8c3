"""More of jax.lax (the names bench/jax_api_coverage.txt found missing), written with secant's
ops and read by the transforms as source (`__secant_by_source__`), so grad, jvp and vmap follow
from the ops' rules: square, reciprocal, erfc, the special functions lax names after XLA's
(igamma, igammac, igamma_grad_a, random_gamma_grad, polygamma, zeta, bessel_i0e, bessel_i1e,
betainc: secant.scipy.special's), cumlogsumexp, select_n, tile, split, stack, unstack, collapse,
index_in_dim, dynamic_update_slice_in_dim, broadcast_to_rank, broadcast_like, broadcast_shapes,
batch_matmul and empty. secant/__init__.py adds them to secant.lax once secant.scipy exists."""
import math

import numpy as np

import secant.numpy as snp
from secant import lax
from secant.backends.errors import SecantTypeError, SecantValueError, where
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["square", "reciprocal", "erfc", "igamma", "igammac", "igamma_grad_a",
           "random_gamma_grad", "polygamma", "zeta", "bessel_i0e", "bessel_i1e", "betainc",
           "cumlogsumexp", "select_n", "tile", "split", "stack", "unstack", "collapse",
           "index_in_dim", "dynamic_update_slice_in_dim", "broadcast_to_rank", "broadcast_like",
           "broadcast_shapes", "batch_matmul", "empty"]


# --- elementwise ---------------------------------------------------------------------------------
def square(x):
    return lax.integer_pow(x, 2)


def reciprocal(x):
    return lax.integer_pow(x, -1)


def erfc(x):
    return special.erfc(x)


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    return special.gammainc(a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return special.gammaincc(a, x)


def igamma_grad_a(a, x):
    """d/da P(a, x)."""
    return special._igam_da(a, x)


def random_gamma_grad(a, x):
    """d x / d a of a Gamma(a) sample x at fixed noise: -(dP/da) / (dP/dx) at x."""
    return -special._igam_da(a, x) / special._igam_density(a, x)


def polygamma(m, x):
    return special.polygamma(m, x)


def zeta(x, q):
    return special.zeta(x, q)


def bessel_i0e(x):
    return special.i0e(x)


def bessel_i1e(x):
    return special.i1e(x)


def betainc(a, b, x):
    return special.betainc(a, b, x)


def cumlogsumexp(operand, axis=0, reverse=False):
    """log(cumsum(exp(operand))) along `axis`, by a prefix scan of logaddexp (no overflow, no
    underflow of the early terms)."""
    return lax.associative_scan(snp.logaddexp, operand, reverse=reverse, axis=axis)


def select_n(which, *cases):
    """cases[which] elementwise: `which` a bool (False: cases[0]) or an integer in
    [0, len(cases)); one case is that case."""
    if not cases:
        raise SecantValueError("select_n() must have at least one case" + where())
    if len(cases) > 2 and snp.result_type(which) == snp.bool_:
        raise SecantTypeError("select_n: a boolean `which` selects between two cases, got "
                              f"{len(cases)}{where()}")
    out = cases[0]
    for i in range(1, len(cases)):
        out = snp.where(which == i, cases[i], out)
    return out


# --- shapes --------------------------------------------------------------------------------------
def _axis(axis, ndim, name):
    if not -ndim <= axis < ndim:
        raise SecantValueError(f"{name}: axis {axis} is out of bounds for rank {ndim}{where()}")
    return axis % ndim


def tile(operand, reps):
    """operand repeated reps[d] times along each dimension d (len(reps) == operand's rank)."""
    if len(reps) != snp.ndim(operand):
        raise SecantValueError(f"tile: len(reps) must equal the rank of the operand, got "
                               f"reps={tuple(reps)} for rank {snp.ndim(operand)}{where()}")
    return snp.tile(operand, tuple(reps))


def split(operand, sizes, axis=0):
    """operand split along `axis` into consecutive pieces of the given sizes (summing to the
    axis' size)."""
    axis = _axis(axis, snp.ndim(operand), "split")
    if sum(sizes) != snp.shape(operand)[axis]:
        raise SecantValueError(f"split: sizes {tuple(sizes)} must sum to the size of axis "
                               f"{axis}, {snp.shape(operand)[axis]}{where()}")
    return snp.split(operand, np.cumsum(sizes)[:-1].tolist(), axis=axis)


def stack(operands, axis=0):
    return snp.stack(operands, axis=axis)


def unstack(x, axis=0):
    return snp.unstack(x, axis=axis)


def collapse(operand, start_dimension, stop_dimension=None):
    """operand with dimensions start_dimension..stop_dimension-1 merged into one."""
    shape = snp.shape(operand)
    stop = len(shape) if stop_dimension is None else stop_dimension
    start = _axis(start_dimension, len(shape), "collapse") if shape else 0
    stop = stop % (len(shape) + 1) if stop < 0 else stop
    size = math.prod(shape[start:stop])
    return snp.reshape(operand, shape[:start] + (size,) + shape[stop:])


def index_in_dim(operand, index, axis=0, keepdims=True):
    """The slice `index` (static; negative counts from the end) along `axis`."""
    axis = _axis(axis, snp.ndim(operand), "index_in_dim")
    size = snp.shape(operand)[axis]
    if not -size <= index < size:
        raise SecantValueError(f"index_in_dim: index {index} is out of bounds for axis {axis} "
                               f"of size {size}{where()}")
    out = snp.take(operand, index % size, axis=axis)
    return snp.expand_dims(out, axis) if keepdims else out


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *,
                                allow_negative_indices=True):
    """operand with `update` written from start_index along `axis` (clamped so it fits; a
    negative start counts from the end unless allow_negative_indices=False)."""
    axis = _axis(axis, snp.ndim(operand), "dynamic_update_slice_in_dim")
    if allow_negative_indices:
        start_index = snp.where(start_index < 0, start_index + snp.shape(operand)[axis],
                                start_index)
    starts = [start_index if d == axis else 0 for d in range(snp.ndim(operand))]
    return lax.dynamic_update_slice(operand, update, starts)


def broadcast_to_rank(x, rank):
    """x with leading size-1 axes up to `rank` (unchanged when it has as many)."""
    shape = snp.shape(x)
    return snp.reshape(x, (1,) * max(rank - len(shape), 0) + shape)


def broadcast_like(arr, like_arr):
    return snp.broadcast_to(arr, snp.shape(like_arr))


def broadcast_shapes(*shapes):
    return tuple(np.broadcast_shapes(*shapes))


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over matching leading batch dimensions (both operands of one rank,
    at least 2)."""
    if snp.ndim(lhs) < 2 or snp.ndim(lhs) != snp.ndim(rhs) or \
            snp.shape(lhs)[:-2] != snp.shape(rhs)[:-2]:
        raise SecantTypeError(f"batch_matmul: operands must have the same batch dimensions and "
                              f"rank >= 2, got {snp.shape(lhs)} and {snp.shape(rhs)}{where()}")
    return snp.matmul(lhs, rhs)


def empty(shape, dtype, *, out_sharding=None):
    """An array of the shape and dtype (zeros: XLA arrays have no uninitialized memory)."""
    return snp.zeros(shape, dtype)

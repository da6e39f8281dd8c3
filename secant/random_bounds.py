"""What the transforms read for secant.random's uniform and truncated_normal when their bounds
are differentiated, and for choice and permutation when the array whose entries they draw is
(secant/numpy/composite.py's `source_for`).

A draw is noise from the sampler itself (uniform in [0, 1): a constant for grad) moved into the
bounds by secant.numpy ops, with jax.random's float operations in jax's order, so the values
are secant.random's (and jax.random's) bit for bit and grad gives JAX's derivative:
d uniform / d minval = 1 - u, d / d maxval = u; truncated_normal is sqrt(2) erf_inv of a
uniform between erf(lower / sqrt(2)) and erf(upper / sqrt(2)), clipped into the open interval
at bounds that are not differentiated (lax.stop_gradient, as JAX's). choice and permutation of
an array are its entries at the indices the same call draws for its size (permutation's sort of
the entries and of their positions is one stable sort by the same random keys), taken by
secant.numpy's take / take_along_axis, whose derivatives scatter back. vmap batches the samplers
by their own rule (batching/helpers.py random_batched) and never reads these.
"""
import numpy as np

import secant.numpy as snp
import secant.random as _random
from secant import lax
from secant.backends import dtypes
from secant.batching.helpers import random_batched
from secant.numpy.composite import source_for

__secant_by_source__ = True      # transforms read this module like user code


def _float(name, dtype):
    return _random._dtype(name, dtype, "float", dtypes.default_float)


@source_for(_random.uniform)
def uniform(key, shape=(), dtype=None, minval=0., maxval=1.):
    shape = _random._shape("uniform", shape)
    dtype = _float("uniform", dtype)
    minval_shape, maxval_shape = snp.shape(minval), snp.shape(maxval)
    _random._check_shape("uniform", shape, minval_shape, maxval_shape)
    floats = _random.uniform(key, shape, dtype)         # in [0, 1): the noise
    minval = lax.convert_element_type(minval, dtype)
    maxval = lax.convert_element_type(maxval, dtype)
    return snp.maximum(minval, floats * (maxval - minval) + minval)


@source_for(_random.truncated_normal)
def truncated_normal(key, lower, upper, shape=None, dtype=None):
    dtype = _float("truncated_normal", dtype)
    lower_shape, upper_shape = snp.shape(lower), snp.shape(upper)
    shape = _random._param_shape("truncated_normal", shape, lower_shape, upper_shape)
    sqrt2 = float(np.sqrt(2))
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    u = uniform(key, shape, dtype, lax.erf(lower / sqrt2), lax.erf(upper / sqrt2))
    out = lax.erf_inv(u) * sqrt2
    return snp.clip(out, lax.nextafter(lax.stop_gradient(lower), np.inf),
                    lax.nextafter(lax.stop_gradient(upper), -np.inf))


@source_for(_random.permutation)
def permutation(key, x, axis=0, independent=False):
    x = snp.asarray(x)
    if snp.ndim(x) == 0:        # (refused as the sampler refuses it)
        return _random.permutation(key, x, axis, independent)
    axis = _random._axis("permutation", axis, snp.ndim(x))
    if independent and snp.ndim(x) > 1:
        positions = lax.broadcasted_iota(dtypes.default_int(), snp.shape(x), axis)
        return snp.take_along_axis(x, _random.permutation(key, positions, axis, True), axis)
    return snp.take(x, _random.permutation(key, snp.shape(x)[axis]), axis=axis)


@source_for(_random.choice)
def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    a = snp.asarray(a)
    if snp.ndim(a) == 0:        # (refused as the sampler refuses it)
        return _random.choice(key, a, shape, replace, p, axis, mode)
    axis = _random._axis("choice", axis, snp.ndim(a))
    ind = _random.choice(key, snp.shape(a)[axis], shape, replace, p, 0, mode)
    return snp.take(a, ind, axis=axis)


# vmap over a batch of keys alone writes random_batched(sampler, keys, ...) (batching/helpers.py);
# grad of it, the array whose entries are drawn differentiated, reads these in its place, with
# its arguments (transformer/normalize.py): the indices drawn for each key (integers, constants),
# then the entries there, the batch axis in front
def permutation_batched(sampler, key, x, axis=0, independent=False):
    x = snp.asarray(x)
    if snp.ndim(x) == 0:        # (refused as the sampler refuses it)
        return _random.permutation(key, x, axis, independent)
    axis = _random._axis("permutation", axis, snp.ndim(x))
    if independent and snp.ndim(x) > 1:
        positions = lax.broadcasted_iota(dtypes.default_int(), snp.shape(x), axis)
        order = random_batched(_random.permutation, key, positions, axis=axis, independent=True)
        return snp.take_along_axis(snp.broadcast_to(x, snp.shape(order)), order, axis + 1)
    order = random_batched(_random.permutation, key, snp.shape(x)[axis])
    return snp.moveaxis(snp.take(x, order, axis=axis), axis, 0)


def choice_batched(sampler, key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    a = snp.asarray(a)
    if snp.ndim(a) == 0:        # (refused as the sampler refuses it)
        return _random.choice(key, a, shape, replace, p, axis, mode)
    axis = _random._axis("choice", axis, snp.ndim(a))
    ind = random_batched(_random.choice, key, snp.shape(a)[axis], shape, replace, p, 0, mode)
    return snp.moveaxis(snp.take(a, ind, axis=axis), axis, 0)


BATCHED = {"permutation": permutation_batched, "choice": choice_batched}

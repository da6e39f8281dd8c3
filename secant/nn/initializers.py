"""secant.nn.initializers: jax.nn.initializers. Each factory returns `init(key, shape, dtype)`
drawing from secant.random with an explicit key (the same key gives the same array). A by-source
module (secant/numpy/composite.py), so vmap over a batch of keys reads an initializer like user
code (an ensemble's parameters in one call)."""
import math
from typing import Protocol

import numpy as np

import secant.numpy as snp
from secant import random
from secant.backends import dtypes
from secant.backends.errors import SecantValueError

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["zeros", "ones", "constant", "normal", "uniform", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal"]


class Initializer(Protocol):
    """What every initializer is (jax.nn.initializers.Initializer): a function of a key, a
    shape and a dtype returning an array; for type annotations."""
    def __call__(self, key, shape, dtype=None, out_sharding=None): ...


def _float(dtype, default=None):
    """The dtype asked for at the call, else the factory's, else the default float."""
    if dtype is None:
        dtype = default
    return dtypes.default_float() if dtype is None else np.dtype(dtype)


def zeros(key, shape, dtype=None):
    return snp.zeros(tuple(shape), _float(dtype))


def ones(key, shape, dtype=None):
    return snp.ones(tuple(shape), _float(dtype))


def constant(value, dtype=None):
    factory_dtype = dtype

    def init(key, shape, dtype=None):
        return snp.full(tuple(shape), value, _float(dtype, factory_dtype))
    return init


def normal(stddev=1e-2, dtype=None):
    factory_dtype = dtype

    def init(key, shape, dtype=None):
        return random.normal(key, tuple(shape), _float(dtype, factory_dtype)) * stddev
    return init


def uniform(scale=1e-2, dtype=None):
    """Uniform in [0, scale), as JAX's."""
    factory_dtype = dtype

    def init(key, shape, dtype=None):
        return random.uniform(key, tuple(shape), _float(dtype, factory_dtype)) * scale
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    factory_dtype = dtype

    def init(key, shape, dtype=None):
        out = random.truncated_normal(key, lower, upper, tuple(shape),
                                      _float(dtype, factory_dtype))
        return out * stddev
    return init


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    if len(shape) <= 1:
        raise SecantValueError(f"can't compute input and output sizes of a {len(shape)}-"
                               "dimensional weights tensor: it must be at least 2-d")

    def size(axes):
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        return math.prod(shape[a] for a in axes)
    in_size, out_size, batch_size = size(in_axis), size(out_axis), size(batch_axis)
    receptive_field = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field, out_size * receptive_field


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):
    """Samples with variance scale / n, n the fan in, the fan out or their mean (`mode`), from
    a truncated normal, a normal or a uniform distribution (as jax.nn.initializers')."""
    if mode not in ("fan_in", "fan_out", "fan_avg"):
        raise SecantValueError(f"variance_scaling: invalid mode {mode!r} (fan_in, fan_out or "
                               "fan_avg)")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise SecantValueError(f"variance_scaling: invalid distribution {distribution!r} "
                               "(truncated_normal, normal or uniform)")

    factory_dtype = dtype

    def init(key, shape, dtype=None):
        shape = tuple(shape)
        dtype = _float(dtype, factory_dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out,
                       "fan_avg": (fan_in + fan_out) / 2}[mode]
        variance = scale / denominator
        if distribution == "truncated_normal":
            # the standard deviation of a standard normal truncated to (-2, 2)
            stddev = math.sqrt(variance) / .87962566103423978
            out = random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        elif distribution == "normal":
            out = random.normal(key, shape, dtype) * math.sqrt(variance)
        else:
            out = random.uniform(key, shape, dtype, -1.0, 1.0) * math.sqrt(3 * variance)
        return out
    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def _orthonormal_columns(a):
    """Q of a's QR decomposition with R's diagonal positive (Gram-Schmidt, each column
    orthogonalised twice), for a of shape (m, n), m >= n."""
    columns = []
    for j in range(np.shape(a)[1]):
        v = a[:, j]
        for _ in range(2):
            for q in columns:
                v = v - snp.sum(q * v) * q
        columns.append(v / snp.sqrt(snp.sum(v * v)))
    return snp.stack(columns, axis=1)


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """A matrix with orthonormal rows or columns (whichever are fewer), times `scale`; other
    axes are flattened into the rows, as JAX's."""
    factory_dtype = dtype

    def init(key, shape, dtype=None):
        shape = tuple(shape)
        dtype = _float(dtype, factory_dtype)
        if len(shape) < 2:
            raise SecantValueError("orthogonal initializer requires at least a 2-d shape")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
        q = _orthonormal_columns(random.normal(key, matrix_shape, dtype))
        if n_rows < n_cols:
            q = q.T
        rest = tuple(d for i, d in enumerate(shape) if i != column_axis % len(shape))
        q = snp.moveaxis(snp.reshape(q, rest + (n_cols,)), -1, column_axis)
        return q * scale
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """A 3-D, 4-D or 5-D convolution kernel that is zero but at its spatial centre, which
    holds orthogonal(scale, column_axis)'s matrix of shape shape[-2:] (fan_in <= fan_out),
    as JAX's (Xiao et al. 2018)."""
    factory_dtype = dtype

    def init(key, shape, dtype=None):
        shape = tuple(shape)
        dtype = _float(dtype, factory_dtype)
        if len(shape) not in (3, 4, 5):
            raise SecantValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise SecantValueError("`fan_in` must be less or equal than `fan_out`. ")
        matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return snp.zeros(shape, dtype).at[centre].set(matrix)
    return init

"""secant.scipy.interpolate.RegularGridInterpolator, as jax.scipy.interpolate's: linear or
nearest interpolation on a rectilinear grid, points outside it given fill_value (NaN by
default; None extrapolates). The evaluation is `interpolate`, written with secant.numpy's ops,
so grad (in the values and the points), jit and vmap read it like user code."""
import itertools

import numpy as np

import secant.numpy as snp
from secant import tree_util
from secant.backends.errors import SecantValueError, UnsupportedError, where

__secant_by_source__ = True      # the transforms read this module like user code

__all__ = ["RegularGridInterpolator"]


def _points(xi, ndim):
    """xi as an array (..., ndim): a tuple of coordinate arrays stacked on a last axis."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        return snp.stack(snp.broadcast_arrays(*xi), axis=-1).astype(snp.result_type(float))
    xi = snp.asarray(xi)
    if np.ndim(xi) == 1:
        xi = snp.reshape(xi, (-1, ndim))
    return xi


def interpolate(grid, values, fill_value, fills, is_linear, xi):
    """values (on the grid: one increasing 1-D array per leading axis) at the points xi
    (..., ndim), linearly (is_linear) or at the nearest grid point; outside the grid
    fill_value where `fills`, else extrapolated."""
    ndim = len(grid)
    shape = np.shape(xi)
    if shape[-1] != ndim:
        raise SecantValueError(f"the requested sample points xi have dimension {shape[-1]}, "
                               f"but this RegularGridInterpolator has dimension {ndim}"
                               f"{where()}")
    flat = snp.reshape(xi, (-1, ndim))
    n = np.shape(flat)[0]
    indices, distances = [], []
    outside = snp.zeros((n,), dtype=bool)
    for d in range(ndim):
        g, x = grid[d], flat[:, d]
        i = snp.clip(snp.searchsorted(g, x) - 1, 0, np.size(g) - 2)
        indices.append(i)
        distances.append((x - g[i]) / (g[i + 1] - g[i]))
        outside = outside | (x < g[0]) | (x > g[-1])
    trailing = (1,) * (np.ndim(values) - ndim)
    # both methods, and the fill, selected with where: an instance built inside a transformed
    # function carries its fields as values (transformer/objects.py), which no `if` may test
    linear = 0.0
    for corner in itertools.product((0, 1), repeat=ndim):
        weight = 1.0
        index = []
        for d in range(ndim):
            weight = weight * (distances[d] if corner[d] else 1 - distances[d])
            index.append(indices[d] + corner[d])
        linear = linear + values[tuple(index)] * snp.reshape(weight, (n,) + trailing)
    index = []
    for d in range(ndim):
        index.append(snp.where(distances[d] <= 0.5, indices[d], indices[d] + 1))
    result = snp.where(is_linear, linear, values[tuple(index)])
    result = snp.where(snp.reshape(outside, (n,) + trailing) & fills, fill_value, result)
    return snp.reshape(result, shape[:-1] + np.shape(values)[ndim:])


class _Functional:
    """RegularGridInterpolator as functions of a dict of its fields: what the transforms read
    for `RegularGridInterpolator(...)` and its call inside a transformed function
    (transformer/objects.py), as secant.scipy.stats.gaussian_kde's."""

    @staticmethod
    def init(points, values, method="linear", bounds_error=False, fill_value=np.nan):
        if method not in ("linear", "nearest"):
            raise SecantValueError(f"method {method!r} is not defined{where()}")
        if bounds_error:
            raise UnsupportedError(f"`bounds_error` takes no effect under JIT{where()}")
        values = snp.asarray(values)
        if not snp.issubdtype(values.dtype, snp.inexact):
            values = values.astype(snp.result_type(float))
        if len(points) > np.ndim(values):
            raise SecantValueError(f"there are {len(points)} point arrays, but values has "
                                   f"{np.ndim(values)} dimensions{where()}")
        fills = fill_value is not None
        fill_value = snp.asarray(fill_value if fills else np.nan, values.dtype)
        grid = tuple(snp.asarray(p) for p in points)
        return {"grid": grid, "values": values, "fill_value": fill_value, "fills": fills,
                "method": method, "linear": method == "linear", "bounds_error": bounds_error}

    @staticmethod
    def __call__(fields, xi, method=None):
        if method is None:
            is_linear = fields["linear"]
        elif method in ("linear", "nearest"):
            is_linear = method == "linear"
        else:
            raise SecantValueError(f"method {method!r} is not defined{where()}")
        return interpolate(fields["grid"], fields["values"], fields["fill_value"],
                           fields["fills"], is_linear, _points(xi, len(fields["grid"])))


_Functional.init.__secant_functional_init__ = True


class RegularGridInterpolator:
    """interp(xi): values interpolated at xi, as scipy.interpolate.RegularGridInterpolator
    (method 'linear' or 'nearest'; bounds_error must be False). A pytree: its grid, values
    and fill_value are leaves, so it passes through jit, grad and vmap."""
    __secant_functional__ = _Functional

    def __init__(self, points, values, method="linear", bounds_error=False,
                 fill_value=np.nan):
        self.__dict__.update(_Functional.init(points, values, method, bounds_error,
                                              fill_value))

    def __call__(self, xi, method=None):
        return _Functional.__call__(vars(self), xi, method)


def _flatten(obj):
    return (obj.grid, obj.values, obj.fill_value), (obj.fills, obj.method, obj.linear,
                                                    obj.bounds_error)


def _unflatten(aux, children):
    obj = object.__new__(RegularGridInterpolator)
    obj.grid, obj.values, obj.fill_value = children
    obj.fills, obj.method, obj.linear, obj.bounds_error = aux
    return obj


tree_util.register_pytree_node(RegularGridInterpolator, _flatten, _unflatten)

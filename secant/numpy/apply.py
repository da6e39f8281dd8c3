"""jax.numpy's function-applying helpers: apply_along_axis and apply_over_axes, written with
secant.vmap and secant.numpy's ops as JAX's are, and read by the transforms as source
(`__secant_by_source__`), so grad, jvp and vmap of code calling them follow from the function
applied."""
import numpy as np

import secant.numpy as snp
from secant.backends.errors import SecantValueError, where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["apply_along_axis", "apply_over_axes"]


def _axis(axis, ndim, name):
    if not -ndim <= axis < ndim:
        raise SecantValueError(f"{name}: axis {axis} is out of bounds for an array of "
                               f"dimension {ndim}{where()}")
    return axis % ndim


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d(a, *args, **kwargs) on every 1-d slice a of arr along `axis`: the slices' results
    take the place of that axis (a scalar result removes it), as NumPy's; one secant.vmap over
    the slices, all other axes flattened into its batch axis."""
    from secant.batch import vmap
    arr = snp.asarray(arr)
    shape = snp.shape(arr)
    axis = _axis(axis, len(shape), "apply_along_axis")
    others = shape[:axis] + shape[axis + 1:]
    slices = snp.reshape(snp.moveaxis(arr, axis, -1), (-1, shape[axis]))

    def func(a):
        return func1d(a, *args, **kwargs)
    out = vmap(func)(slices)
    core = snp.ndim(out) - 1
    out = snp.reshape(out, others + snp.shape(out)[1:])
    return snp.moveaxis(out, tuple(range(len(others), len(others) + core)),
                        tuple(range(axis, axis + core)))


def apply_over_axes(func, a, axes):
    """func(a, axis) applied for each axis in `axes` in turn, each result given back its
    reduced axis (expand_dims) when func removed it, as NumPy's."""
    a = snp.asarray(a)
    for axis in np.atleast_1d(np.asarray(axes)).tolist():
        b = func(a, axis)
        if snp.ndim(b) == snp.ndim(a) - 1:
            b = snp.expand_dims(b, axis)
        elif snp.ndim(b) != snp.ndim(a):
            raise SecantValueError("apply_over_axes: function is not returning an array of the "
                                   f"correct shape{where()}")
        a = b
    return a

"""secant.image: jax.image's resize and scale_and_translate, written with secant.numpy's ops and
read by the transforms as source (`__secant_by_source__`), so grad (in the image, and in
scale_and_translate's scale and translation), jvp and vmap follow from the ops' rules.

As JAX's: every method but nearest resamples each spatial axis by a weight matrix (the kernel
at the inverse-warped half-pixel sample positions, normalised, zero outside the input;
antialiasing widens the kernel by 1/scale when downsampling), applied axis by axis; nearest
gathers floor((i + 0.5) * in / out). resize's weights depend on the shapes only, so they are
constants of the program."""
import enum

import numpy as np

import secant.numpy as snp
from secant.backends.errors import SecantValueError, where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["resize", "scale_and_translate", "ResizeMethod"]


class ResizeMethod(enum.Enum):
    """Image resize method (jax.image.ResizeMethod)."""
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s):
        for names, method in _SPELLINGS:
            if s in names:
                return method
        raise SecantValueError(f'Unknown resize method "{s}"{where()}')


_SPELLINGS = ((("nearest",), ResizeMethod.NEAREST),
              (("linear", "bilinear", "trilinear", "triangle"), ResizeMethod.LINEAR),
              (("lanczos3",), ResizeMethod.LANCZOS3), (("lanczos5",), ResizeMethod.LANCZOS5),
              (("cubic", "bicubic", "tricubic"), ResizeMethod.CUBIC),
              (("cubic-pytorch", "bicubic-pytorch"), ResizeMethod.CUBIC_PYTORCH),
              (("area",), ResizeMethod.AREA))
# the kernels' radii
_RADIUS = {ResizeMethod.LINEAR: 1, ResizeMethod.LANCZOS3: 3, ResizeMethod.LANCZOS5: 5,
           ResizeMethod.CUBIC: 2, ResizeMethod.CUBIC_PYTORCH: 2, ResizeMethod.AREA: 1}


def _method(method):
    return ResizeMethod.from_string(method) if isinstance(method, str) else method


def _kernel(method, x):
    """The resampling kernel of `method` at distances x >= 0."""
    if method == ResizeMethod.LINEAR:
        return snp.maximum(0.0, 1.0 - snp.abs(x))
    if method == ResizeMethod.CUBIC:           # Keys' cubic
        out = ((1.5 * x - 2.5) * x) * x + 1.0
        out = snp.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
        return snp.where(x >= 2.0, 0.0, out)
    if method == ResizeMethod.CUBIC_PYTORCH:   # OpenCV's (a = -0.75)
        a = -0.75
        out = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        out = snp.where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, out)
        return snp.where(x >= 2.0, 0.0, out)
    radius = float(_RADIUS[method])            # Lanczos
    y = radius * snp.sin(np.pi * x) * snp.sin(np.pi * x / radius)
    out = snp.where(x > 1e-3, y / snp.where(x != 0, np.pi ** 2 * x ** 2, 1.0), 1.0)
    return snp.where(x > radius, 0.0, out)


def _normalised(weights):
    total = snp.sum(weights, axis=0, keepdims=True)
    return snp.where(snp.abs(total) > 1000.0 * float(np.finfo(np.float32).eps),
                     weights / snp.where(total != 0, total, 1.0), 0.0)


def _weight_matrix(input_size, output_size, scale, translation, method, antialias,
                   edge_padding, dtype):
    """(input_size, output_size) weights: column j resamples output pixel j."""
    inv_scale = 1.0 / scale
    kernel_scale = snp.maximum(inv_scale, 1.0) if antialias else 1.0
    sample_f = (snp.arange(output_size, dtype=dtype) + 0.5) * inv_scale - \
        translation * inv_scale - 0.5
    # (edge padding is cubic-pytorch's without antialiasing only: the kernel's radius)
    k = _RADIUS[method] if edge_padding else 0
    expanded = snp.arange(-k, input_size + k, dtype=dtype)
    if method == ResizeMethod.AREA:
        left = snp.arange(output_size, dtype=dtype) * inv_scale - translation * inv_scale
        right = left + inv_scale
        first = snp.arange(input_size, dtype=dtype)
        weights = snp.maximum(0.0, snp.minimum(right[None, :], first[:, None] + 1.0)
                              - snp.maximum(left[None, :], first[:, None]))
    else:
        weights = _kernel(method, snp.abs(sample_f[None, :] - expanded[:, None]) / kernel_scale)
    if edge_padding:
        rows = snp.clip(expanded.astype(np.int32), 0, input_size - 1)
        cols = snp.broadcast_to(snp.arange(output_size)[None, :], snp.shape(weights))
        weights = snp.zeros((input_size, output_size), dtype).at[rows[:, None], cols].add(
            weights)
        return _normalised(weights)
    inside = (sample_f >= -0.5) & (sample_f <= input_size - 0.5)
    return snp.where(inside[None, :], _normalised(weights), 0.0)


def _resample(image, shape, spatial_dims, scale, translation, method, antialias,
              edge_padding):
    """The image resampled along each spatial axis by its weight matrix (one einsum)."""
    ndim = snp.ndim(image)
    if not spatial_dims:
        return image
    for i, d in enumerate(spatial_dims):     # one contraction per axis (as JAX's one einsum)
        d = d % ndim
        w = _weight_matrix(snp.shape(image)[d], shape[d], scale[i], translation[i], method,
                           antialias, edge_padding, image.dtype)
        image = snp.moveaxis(snp.tensordot(image, w.astype(image.dtype), axes=([d], [0])), -1, d)
    return image


def _inexact(x):
    x = snp.asarray(x)
    return x if snp.issubdtype(x.dtype, snp.inexact) else x.astype(snp.result_type(float))


def _output_shape(shape, image_shape):
    """shape as a tuple of ints, checked to have the image's rank."""
    shape = tuple(int(n) for n in shape)
    if len(shape) != len(image_shape):
        raise SecantValueError(f"shape must have length equal to the number of dimensions of "
                               f"x; {shape} vs {image_shape}{where()}")
    return shape


def _resize_nearest(image, shape):
    for d in range(snp.ndim(image)):
        m, n = snp.shape(image)[d], shape[d]
        if m != n:
            offsets = np.floor((np.arange(n, dtype=np.float32) + 0.5) * np.float32(m / n))
            image = snp.take(image, offsets.astype(np.int32), axis=d)
    return image


def resize(image, shape, method, antialias=True, precision=None):
    """The image resampled to `shape` (every axis: leave a batch or channel axis its size) by
    `method` ("nearest", "linear", "cubic", "cubic-pytorch", "lanczos3", "lanczos5", "area" or
    a ResizeMethod); antialias filters when downsampling. Floating results (nearest keeps the
    dtype)."""
    image = snp.asarray(image)
    shape = _output_shape(shape, snp.shape(image))
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    image = _inexact(image)
    spatial_dims = tuple(i for i in range(len(shape)) if snp.shape(image)[i] != shape[i])
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    scale = [1.0 if shape[d] == 0 else shape[d] / snp.shape(image)[d] for d in spatial_dims]
    return _resample(image, shape, spatial_dims, scale, [0.0] * len(spatial_dims), method,
                     antialias, method == ResizeMethod.CUBIC_PYTORCH and not antialias)


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias=True, precision=None):
    """The image warped to `shape`: output location x comes from input location
    (x - translation) / scale along each of spatial_dims (half-centred pixels; zero outside
    the input), resampled by `method` (not nearest). Differentiable in image, scale and
    translation."""
    image = snp.asarray(image)
    shape = _output_shape(shape, snp.shape(image))
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        raise SecantValueError(f"Nearest neighbor resampling is not currently supported for "
                               f"scale_and_translate.{where()}")
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    image = _inexact(image)
    scale = _inexact(scale)
    translation = _inexact(translation)
    return _resample(image, shape, tuple(spatial_dims), scale, translation, method, antialias,
                     method == ResizeMethod.CUBIC_PYTORCH and not antialias)

"""jax.scipy.fft: the type-2 discrete cosine transform and its inverse (dct, dctn, idct,
idctn), written with secant.numpy's ops and read by the transforms through its source
(`__secant_by_source__`), so grad, jvp and vmap follow from the FFT's rules.

dct along one axis is Makhoul's: the even-indexed elements, then the odd ones reversed, one
complex FFT, each output k turned by exp(-i pi k / 2N) (2 Re of it); idct undoes each step.
dctn and idctn apply them along each axis in turn (the transform is separable). As JAX's, only
type 2 is implemented, and norm is None ("backward") or "ortho"."""
import math

import secant.numpy as snp
from secant.backends.errors import SecantValueError, where

__secant_by_source__ = True      # transforms read this module like user code


def _check(name, type, norm):
    if type != 2:
        raise NotImplementedError(f"jax.scipy.fft.{name}: only DCT type 2 is implemented"
                                  + where())
    if norm is not None and norm not in ("backward", "ortho"):
        raise SecantValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented"
                               + where())


def _resize(x, n, axis):
    """x padded with zeros or cut to length n along axis."""
    size = x.shape[axis]
    if n is None or n == size:
        return x
    if n < size:
        return snp.take(x, snp.arange(n), axis=axis)
    widths = [(0, n - size if a == axis else 0) for a in range(x.ndim)]
    return snp.pad(x, widths)


def _along(v, axis, ndim):
    """A 1-d array v shaped to broadcast along `axis` of an ndim-array."""
    return snp.reshape(v, [-1 if a == axis else 1 for a in range(ndim)])


def _ortho_scale(n, axis, ndim, dtype):
    """sqrt(1 / 4N) for k = 0, sqrt(1 / 2N) above: dct's orthonormal scaling."""
    scale = snp.full((n,), math.sqrt(1 / (2 * n)), dtype=dtype)
    scale = scale.at[0].set(math.sqrt(1 / (4 * n)))
    return _along(scale, axis, ndim)


def _dct_axis(x, axis, norm):
    n = x.shape[axis]
    even = snp.take(x, snp.arange(0, n, 2), axis=axis)
    odd = snp.flip(snp.take(x, snp.arange(1, n, 2), axis=axis), axis)
    spectrum = snp.fft.fft(snp.concatenate([even, odd], axis=axis), axis=axis)
    k = _along(snp.arange(n), axis, x.ndim)
    out = 2 * snp.real(spectrum * snp.exp(-0.5j * math.pi * k / n))
    if norm == "ortho":
        out = out * _ortho_scale(n, axis, x.ndim, out.dtype)
    return out.astype(x.dtype)


def _idct_axis(y, axis, norm):
    n = y.shape[axis]
    if norm == "ortho":
        y = y / _ortho_scale(n, axis, y.ndim, y.dtype)
    # V_k = (Y_k - i Y_(N-k)) exp(i pi k / 2N) / 2 (Y_N = 0), v = ifft(V), then de-interleave
    shifted = snp.concatenate([snp.zeros_like(snp.take(y, snp.arange(1), axis=axis)),
                               snp.flip(snp.take(y, snp.arange(1, n), axis=axis), axis)],
                              axis=axis)
    k = _along(snp.arange(n), axis, y.ndim)
    spectrum = (y - 1j * shifted) * snp.exp(0.5j * math.pi * k / n) / 2
    v = snp.real(snp.fft.ifft(spectrum, axis=axis))
    order = snp.asarray([i // 2 if i % 2 == 0 else n - 1 - i // 2 for i in range(n)])
    return snp.take(v, order, axis=axis).astype(y.dtype)


def _dct_axes(x, axes, sizes, norm):
    """dct along each axis in turn, each first padded or cut to its size (None: kept)."""
    for axis, size in zip(axes, sizes):
        x = _dct_axis(_resize(x, size, axis), axis, norm)
    return x


def _idct_axes(x, axes, sizes, norm):
    for axis, size in zip(axes, sizes):
        x = _idct_axis(_resize(x, size, axis), axis, norm)
    return x


def _complex_parts(fn, x, axes, sizes, norm):
    """fn along axes of a real x; of a complex x, of its real and imaginary parts."""
    if x.dtype.kind == "c":
        return fn(snp.real(x), axes, sizes, norm) + 1j * fn(snp.imag(x), axes, sizes, norm)
    return fn(x, axes, sizes, norm)


def _float(x):
    x = snp.asarray(x)
    return x * 1.0 if x.dtype.kind in "iub" else x


def dct(x, type=2, n=None, axis=-1, norm=None):
    """The type-2 DCT along `axis`: y_k = 2 sum_n x_n cos(pi k (2n + 1) / 2N) (norm="ortho":
    the orthonormal scaling); n pads or cuts the axis first."""
    _check("dct", type, norm)
    x = _float(x)
    axis = axis % x.ndim
    return _complex_parts(_dct_axes, x, (axis,), (n,), norm)


def idct(x, type=2, n=None, axis=-1, norm=None):
    """The inverse of dct (a type-3 DCT, scaled by 1/2N for norm None)."""
    _check("idct", type, norm)
    x = _float(x)
    axis = axis % x.ndim
    return _complex_parts(_idct_axes, x, (axis,), (n,), norm)


def _static(fn):
    """Mark a helper that computes only static values (axes, lengths) from static arguments:
    transforms call it as it is (as secant/numpy/fft.py's)."""
    fn.__secant_static_query__ = True
    return fn


@_static
def _axes_and_sizes(ndim, s, axes):
    """(axes, sizes) of dctn: all axes by default, the last len(s) when only s is given; a
    size None keeps its axis."""
    if axes is None:
        axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
    elif isinstance(axes, int):
        axes = (axes,)
    axes = tuple(a % ndim for a in axes)
    if s is None:
        s = (None,) * len(axes)          # (each axis kept: nothing read off x's shape)
    elif isinstance(s, int):
        s = (s,)
    if len(s) != len(axes):
        raise SecantValueError(f"dctn: s {tuple(s)} and axes {axes} differ in length" + where())
    return axes, tuple(s)


def dctn(x, type=2, s=None, axes=None, norm=None):
    """The type-2 DCT along each of `axes` (all by default; the last len(s) when only s is
    given), each axis first padded or cut to its size in s."""
    _check("dctn", type, norm)
    x = _float(x)
    axes, s = _axes_and_sizes(x.ndim, s, axes)
    return _complex_parts(_dct_axes, x, axes, s, norm)


def idctn(x, type=2, s=None, axes=None, norm=None):
    """The inverse of dctn."""
    _check("idctn", type, norm)
    x = _float(x)
    axes, s = _axes_and_sizes(x.ndim, s, axes)
    return _complex_parts(_idct_axes, x, axes, s, norm)

"""secant.numpy.fft: NumPy's discrete Fourier transforms, as jax.numpy.fft.

Every transform is one `secant.lax.fft` (the `fft` primitive, stablehlo.fft under jit, numpy.fft
eagerly) over trailing axes, with the transformed axes moved last, the input cut or padded with
zeros to the lengths asked for, and the `norm` scale. This module is read as source by the
transforms (`__secant_by_source__`), so grad, jvp and vmap of these functions follow from
lax.fft's rules (ad/vjp_rules.py, ad/fft_rules.py) and those of the ops around it.

Results are complex64 for float32 (and narrower) inputs, complex128 for float64 (x64); irfft and
hfft give the matching real dtype.
"""
import numpy as np

import secant.numpy as snp
from secant import lax
from secant.backends import dtypes
from secant.backends.errors import SecantTypeError, SecantValueError, where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _static(fn):
    """Mark a helper that computes only static values (axes, lengths, scales) from static
    arguments: transforms call it as it is."""
    fn.__secant_static_query__ = True
    return fn


@_static
def _plan(shape, s, axes, name, real_last=False):
    """The axes transformed (non-negative, in order) and the length along each, as NumPy."""
    ndim = len(shape)
    if s is not None:
        s = tuple(int(n) for n in s)
    if axes is None:
        axes = tuple(range(ndim - len(s), ndim)) if s is not None else tuple(range(ndim))
    else:
        axes = tuple(int(a) for a in axes)
    for a in axes:
        if not -ndim <= a < ndim:
            raise SecantValueError(f"{name}: axis {a} is out of bounds for an array of rank "
                                   f"{ndim}{where()}")
    axes = tuple(a % ndim for a in axes)
    if len(set(axes)) != len(axes):
        raise SecantValueError(f"{name}: repeated axes {axes}{where()}")
    if s is None:
        s = tuple(shape[a] for a in axes)
        if real_last and axes:
            s = s[:-1] + (2 * (shape[axes[-1]] - 1),)
    if len(s) != len(axes):
        raise SecantValueError(f"{name}: s and axes must have the same length, got {s} and "
                               f"{axes}{where()}")
    if any(n < 1 for n in s):
        raise SecantValueError(f"{name}: invalid number of data points {s}{where()}")
    return axes, s


@_static
def _one_axis(n, axis):
    return None if n is None else (n,), (axis,)


@_static
def _scale(norm, lengths, inverse, name):
    """The factor that gives `norm` on top of lax.fft (whose IFFT/IRFFT divide by the size),
    or None for none."""
    size = float(np.prod(lengths))
    if norm is None or norm == "backward":
        return None
    if norm == "ortho":
        return float(np.sqrt(size)) if inverse else float(1 / np.sqrt(size))
    if norm == "forward":
        return size if inverse else 1 / size
    raise SecantValueError(f'{name}: invalid norm {norm!r}; should be "backward", "ortho" or '
                           f'"forward"{where()}')


@_static
def _swap_norm(norm):
    return {None: "forward", "backward": "forward", "forward": "backward"}.get(norm, norm)


@_static
def _layout(shape, axes, s, kind):
    """How `_transform` lays the input out for lax.fft, all static: the index that cuts the
    transformed axes down to the lengths lax.fft needs (None: no cut), the pad widths that
    pad them up with zeros (None: none), and the trailing positions they move to (None: they
    are trailing already). IRFFT's last axis needs n // 2 + 1 (the half spectrum)."""
    need = dict(zip(axes, s))
    if kind == "IRFFT":
        need[axes[-1]] = s[-1] // 2 + 1
    cut = tuple(slice(0, need[d]) if d in need and need[d] < n else slice(None)
                for d, n in enumerate(shape))
    pad = tuple((0, need[d] - n) if d in need and need[d] > n else (0, 0)
                for d, n in enumerate(shape))
    k = len(axes)
    trailing = tuple(range(len(shape) - k, len(shape)))
    return (cut if any(c != slice(None) for c in cut) else None,
            pad if any(p != (0, 0) for p in pad) else None,
            trailing if tuple(axes) != trailing else None)


@_static
def _groups(count, kind):
    """lax.fft transforms at most three trailing axes: for more, the positions (among the last
    `count`) of each call, in the order they run, and each call's kind. A real transform's last
    axis is in its own kind's call: RFFT's runs first (the others transform its complex
    result), IRFFT's last."""
    out = []
    stop = count
    while stop > 0:
        out.insert(0, (max(stop - 3, 0), stop))
        stop = max(stop - 3, 0)
    other = "IFFT" if kind in ("IFFT", "IRFFT") else "FFT"
    plan = [(lo, hi, kind if hi == count else other) for lo, hi in out]
    return plan[::-1] if kind == "RFFT" else plan


def _transform(a, kind, s, axes, norm, name):
    """lax.fft of kind over `axes` (lengths s): the axes cut or padded to their lengths and
    moved last, the transform, the norm's scale, the axes moved back."""
    cut, pad_width, trailing = _layout(a.shape, axes, s, kind)
    x = a
    if cut is not None:
        x = x[cut]
    if pad_width is not None:
        x = snp.pad(x, pad_width)
    if trailing is not None:
        x = snp.moveaxis(x, axes, trailing)
    if len(axes) <= 3:
        out = lax.fft(x, kind, s)
    else:
        out = _in_groups(x, kind, s)
    factor = _scale(norm, s, kind in ("IFFT", "IRFFT"), name)
    if factor is not None:
        out = out * factor
    if trailing is not None:
        out = snp.moveaxis(out, trailing, axes)
    return out


def _in_groups(x, kind, s):
    """lax.fft over more than three trailing axes: one call per group of three."""
    k = len(s)
    out = x
    for lo, hi, part in _groups(k, kind):
        out = _group(out, part, s[lo:hi], tuple(range(lo - k, hi - k)))
    return out


def _group(a, kind, lengths, group):
    """lax.fft over the axes `group` (negative, among the trailing ones) of a."""
    if group[-1] == -1:
        out = lax.fft(a, kind, lengths)
    else:
        trailing = tuple(range(-len(group), 0))
        out = snp.moveaxis(lax.fft(snp.moveaxis(a, group, trailing), kind, lengths), trailing,
                           group)
    return out


@_static
def _complex_kind(dtype, name):
    """The complex dtype a transform computes in: integers and booleans as the default float
    (complex128 under x64), float32 and narrower floats as complex64."""
    if dtypes.is_complex(dtype):
        return dtype
    if not dtypes.is_inexact(dtype):
        return dtypes.default_complex()
    return dtypes.complex128 if np.dtype(dtype) == dtypes.float64 else dtypes.complex64


@_static
def _real_kind(dtype, name):
    if dtypes.is_complex(dtype):
        raise SecantTypeError(f"{name} requires a real input, got {np.dtype(dtype).name} "
                              f"(as jax.numpy.fft){where()}")
    if not dtypes.is_inexact(dtype):
        return dtypes.default_float()
    if np.dtype(dtype) not in (dtypes.float32, dtypes.float64):     # (XLA's RFFT: as JAX's)
        raise SecantValueError(f"{name}: RFFT input must be float32 or float64, got "
                               f"{np.dtype(dtype).name} (as jax.numpy.fft){where()}")
    return np.dtype(dtype)


def _as_complex(a, name):
    a = snp.asarray(a)
    return a.astype(_complex_kind(a.dtype, name))


def _as_real(a, name):
    a = snp.asarray(a)
    return a.astype(_real_kind(a.dtype, name))


# --- complex transforms ----------------------------------------------------------------------
def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional DFT over `axes` (default: all, or the last len(s)), each cut or
    padded with zeros to the length in `s`."""
    x = _as_complex(a, "fftn")
    axes, s = _plan(x.shape, s, axes, "fftn")
    return _transform(x, "FFT", s, axes, norm, "fftn")


def ifftn(a, s=None, axes=None, norm=None):
    """The n-dimensional inverse DFT (divided by the size with norm="backward")."""
    x = _as_complex(a, "ifftn")
    axes, s = _plan(x.shape, s, axes, "ifftn")
    return _transform(x, "IFFT", s, axes, norm, "ifftn")


def fft(a, n=None, axis=-1, norm=None):
    """The one-dimensional DFT along `axis`, the input cut or padded with zeros to n."""
    s, axes = _one_axis(n, axis)
    return fftn(a, s, axes, norm)


def ifft(a, n=None, axis=-1, norm=None):
    s, axes = _one_axis(n, axis)
    return ifftn(a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    return fftn(a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    return ifftn(a, s, axes, norm)


# --- real transforms -------------------------------------------------------------------------
def rfftn(a, s=None, axes=None, norm=None):
    """The DFT of a real array over `axes`: the last axis keeps the n // 2 + 1 non-negative
    frequencies."""
    x = _as_real(a, "rfftn")
    axes, s = _plan(x.shape, s, axes, "rfftn")
    return _transform(x, "RFFT", s, axes, norm, "rfftn")


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of rfftn: a real array of lengths s (default: 2 (m - 1) along the last axis)."""
    x = _as_complex(a, "irfftn")
    axes, s = _plan(x.shape, s, axes, "irfftn", real_last=True)
    return _transform(x, "IRFFT", s, axes, norm, "irfftn")


def rfft(a, n=None, axis=-1, norm=None):
    s, axes = _one_axis(n, axis)
    return rfftn(a, s, axes, norm)


def irfft(a, n=None, axis=-1, norm=None):
    s, axes = _one_axis(n, axis)
    return irfftn(a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    return irfftn(a, s, axes, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """The DFT of a Hermitian-symmetric signal given by its first half: a real result
    (irfft of the conjugate, the norm's direction swapped, as NumPy)."""
    return irfft(snp.conj(_as_complex(a, "hfft")), n, axis, _swap_norm(norm))


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of hfft: the conjugate of rfft with the norm's direction swapped."""
    return snp.conj(rfft(a, n, axis, _swap_norm(norm)))


# --- frequencies and shifts -------------------------------------------------------------------
def fftfreq(n, d=1.0, *, dtype=None):
    """The sample frequencies of an n-point DFT, [0, 1, ..., -1] / (d n) (a constant)."""
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.default_float()
    return snp.asarray(np.fft.fftfreq(int(n), d).astype(dt))


def rfftfreq(n, d=1.0, *, dtype=None):
    """The non-negative sample frequencies of an n-point real DFT (a constant)."""
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.default_float()
    return snp.asarray(np.fft.rfftfreq(int(n), d).astype(dt))


@_static
def _shifts(shape, axes, sign):
    if axes is None:
        axes = tuple(range(len(shape)))
    elif isinstance(axes, int):
        axes = (axes,)
    axes = tuple(axes)
    return tuple(sign * (shape[a] // 2) for a in axes), axes


def fftshift(x, axes=None):
    """The zero frequency moved to the middle (a roll by n // 2 along `axes`, default all)."""
    x = snp.asarray(x)
    shifts, axes = _shifts(x.shape, axes, 1)
    return snp.roll(x, shifts, axes)


def ifftshift(x, axes=None):
    """The inverse of fftshift (a roll by -(n // 2))."""
    x = snp.asarray(x)
    shifts, axes = _shifts(x.shape, axes, -1)
    return snp.roll(x, shifts, axes)

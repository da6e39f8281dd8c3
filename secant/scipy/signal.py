"""jax.scipy.signal's convolutions: convolve, correlate (n-d), convolve2d, correlate2d and
fftconvolve, through lax.conv_general_dilated (its rules give grad, jvp and vmap; this module is
read as source). As JAX's: boundary='fill' with fillvalue 0 only; fftconvolve computes the same
values directly (over `axes`: one kernel per position of the other axes, broadcast)."""
import math

import numpy as np

import secant.numpy as snp
from secant import lax
from secant.backends.errors import SecantValueError, where

__secant_by_source__ = True      # transforms read this module like user code

_MODES = ("full", "same", "valid")


def _check(name, s1, s2, mode):
    """mode and the shapes s1, s2 of the inputs, as SciPy checks them."""
    if mode not in _MODES:
        raise SecantValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}"
                               + where())
    if len(s1) != len(s2):
        raise SecantValueError(f"{name}: in1 and in2 should have the same dimensionality, got "
                               f"{len(s1)} and {len(s2)}{where()}")
    if mode == "valid":
        s1, s2 = np.array(s1), np.array(s2)
        if not ((s1 >= s2).all() or (s2 >= s1).all()):
            raise SecantValueError(f"{name}: for 'valid' mode, one input must be at least as "
                                   f"large as the other in every dimension{where()}")


def _full(in1, in2):
    """The full N-d convolution: in2 flipped, slid over in1 padded by its size - 1."""
    dtype = snp.result_type(in1, in2, 1.0)
    lhs = snp.asarray(in1, dtype=dtype)[None, None]
    rhs = snp.flip(snp.asarray(in2, dtype=dtype))[None, None]
    pads = [(k - 1, k - 1) for k in snp.shape(in2)]
    return lax.conv_general_dilated(lhs, rhs, (1,) * len(pads), pads)[0, 0]


def _crop(full, shape):
    """The centered part of `full` of the given shape (SciPy's _centered)."""
    starts = [(f - s) // 2 for f, s in zip(snp.shape(full), shape)]
    index = tuple(slice(a, a + s) for a, s in zip(starts, shape))
    return full[index]


def convolve(in1, in2, mode="full", method="auto", precision=None):
    s1, s2 = snp.shape(in1), snp.shape(in2)
    _check("convolve", s1, s2, mode)
    if len(s1) == 0:
        return snp.asarray(in1) * in2
    full = _full(in1, in2)
    if mode == "full":
        return full
    if mode == "same":
        return _crop(full, s1)
    return _crop(full, tuple(max(a, b) - min(a, b) + 1 for a, b in zip(s1, s2)))


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """sum in1[n + k] conj(in2[k]): the convolution with in2 flipped and conjugated."""
    s1, s2 = snp.shape(in1), snp.shape(in2)
    _check("correlate", s1, s2, mode)
    return convolve(in1, snp.conj(snp.flip(in2)), mode)


def _check_2d(name, ndims, boundary, fillvalue):
    if ndims != (2, 2):
        raise SecantValueError(f"{name}: only 2-d inputs are supported{where()}")
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}: only boundary='fill' with fillvalue=0 is "
                                  f"supported, as in JAX{where()}")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    ndims = (snp.ndim(in1), snp.ndim(in2))
    _check_2d("convolve2d", ndims, boundary, fillvalue)
    return convolve(in1, in2, mode)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """SciPy's correlate2d; its 'same' is centered as the convolution of in1 flipped (unlike
    correlate's, for even kernel sizes)."""
    ndims = (snp.ndim(in1), snp.ndim(in2))
    _check_2d("correlate2d", ndims, boundary, fillvalue)
    if mode == "same":
        return snp.flip(convolve(snp.flip(in1), snp.conj(in2), "same"))
    return correlate(in1, in2, mode)


def fftconvolve(in1, in2, mode="full", axes=None):
    """The convolution (computed directly, the same values); with `axes`, over those axes
    only, the others broadcast against each other (SciPy's)."""
    if axes is None:
        return convolve(in1, in2, mode)
    s1, s2 = snp.shape(in1), snp.shape(in2)
    _check("fftconvolve", s1, s2, "full")
    nd = len(s1)
    axes = sorted(set(a % nd for a in ([axes] if isinstance(axes, int) else axes)))
    rest = [a for a in range(nd) if a not in axes]
    batch = np.broadcast_shapes(tuple(s1[a] for a in rest), tuple(s2[a] for a in rest))
    k1, k2 = tuple(s1[a] for a in axes), tuple(s2[a] for a in axes)
    _check("fftconvolve", k1, k2, mode)
    dtype = snp.result_type(in1, in2, 1.0)
    x = snp.broadcast_to(snp.transpose(snp.asarray(in1, dtype=dtype), rest + axes), batch + k1)
    w = snp.broadcast_to(snp.transpose(snp.asarray(in2, dtype=dtype), rest + axes), batch + k2)
    groups = math.prod(batch)       # one group per broadcast position, each its own kernel
    spatial = tuple(range(len(batch), nd))
    lhs = snp.reshape(x, (1, groups) + k1)
    rhs = snp.reshape(snp.flip(w, axis=spatial), (groups, 1) + k2)
    full = lax.conv_general_dilated(lhs, rhs, (1,) * len(axes), [(k - 1, k - 1) for k in k2],
                                    feature_group_count=groups)
    full = snp.reshape(full, batch + snp.shape(full)[2:])
    if mode == "same":
        full = _crop(full, tuple(s1[a] for a in rest) + k1)    # (in1's shape: SciPy's)
    elif mode == "valid":
        full = _crop(full, batch + tuple(max(a, b) - min(a, b) + 1 for a, b in zip(k1, k2)))
    return snp.transpose(full, tuple(np.argsort(rest + axes)))

from secant.scipy.signal_spectral import detrend, stft, istft, csd, welch  # noqa: E402,F401

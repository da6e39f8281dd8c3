"""Complex numbers: the parts of a complex array, conjugation, building one from two real arrays,
and the discrete Fourier transform (`fft`, lowered to stablehlo.fft)."""
import numpy as np

from secant.backends import dtypes
from secant.backends.core import Primitive, ShapedArray, register
from secant.backends.primitives.common import _same_dtypes, broadcast_shapes, type_error

_REAL_OF = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}
_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}


def real_dtype(dt):
    """float32 for complex64, float64 for complex128 (a real dtype is its own)."""
    return _REAL_OF.get(np.dtype(dt), np.dtype(dt))


def complex_dtype(dt):
    """complex64 for float32 (and narrower floats), complex128 for float64."""
    dt = np.dtype(dt)
    if dtypes.is_complex(dt):
        return dt
    return dtypes.complex128 if dt == dtypes.float64 else dtypes.complex64


def _part_rule(name):
    def rule(x):
        if not dtypes.is_complex(x.dtype):
            type_error(f"{name} requires a complex argument, got {x.dtype.name}")
        return ShapedArray(x.shape, real_dtype(x.dtype), x.weak_type)
    return rule


def _conj_rule(x):
    if not dtypes.is_complex(x.dtype):
        type_error(f"conj requires a complex argument, got {x.dtype.name}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


real_p = register(Primitive("real", _part_rule("real"), lambda x: np.real(x).copy()))
imag_p = register(Primitive("imag", _part_rule("imag"), lambda x: np.imag(x).copy()))
conj_p = register(Primitive("conj", _conj_rule, np.conjugate))


def _complex_rule(x, y):
    dt = _same_dtypes("complex", (x, y))
    if dt not in _COMPLEX_OF:
        type_error(f"complex requires float32 or float64 arguments, got {dt.name}")
    return ShapedArray(broadcast_shapes("complex", x.shape, y.shape), _COMPLEX_OF[dt],
                       x.weak_type and y.weak_type)


def _complex(x, y):
    """x + iy with the parts set, not computed: 1j * inf is nan + inf j, 1j * nan is nan + nan j
    (XLA's complex, and JAX's, keep the real part: complex(0, inf) is inf j)."""
    out = np.empty(np.broadcast_shapes(np.shape(x), np.shape(y)), _COMPLEX_OF[x.dtype])
    out.real, out.imag = x, y
    return out


complex_p = register(Primitive("complex", _complex_rule, _complex))


# --- the discrete Fourier transform ---------------------------------------------------------------
FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


def _fft_rule(x, fft_type, fft_lengths):
    if fft_type not in FFT_TYPES:
        type_error(f"fft_type must be one of {FFT_TYPES}, got {fft_type!r}")
    n = len(fft_lengths)
    if not 1 <= n <= 3:
        type_error(f"fft transforms 1 to 3 trailing axes, got fft_lengths={fft_lengths}")
    if x.ndim < n:
        type_error(f"fft over {n} axes of an array of rank {x.ndim}")
    lead, last = x.shape[:x.ndim - n], tuple(x.shape[x.ndim - n:])
    lengths = tuple(fft_lengths)
    if fft_type == "RFFT":
        if not dtypes.is_float(x.dtype) or x.dtype not in _COMPLEX_OF:
            type_error(f"RFFT requires a float32 or float64 operand, got {x.dtype.name}")
        if last != lengths:
            type_error(f"RFFT of trailing shape {last} with fft_lengths {lengths}")
        return ShapedArray(lead + lengths[:-1] + (lengths[-1] // 2 + 1,),
                           _COMPLEX_OF[x.dtype], False)
    if not dtypes.is_complex(x.dtype):
        type_error(f"{fft_type} requires a complex operand, got {x.dtype.name}")
    if fft_type == "IRFFT":
        want = lengths[:-1] + (lengths[-1] // 2 + 1,)
        if last != want:
            type_error(f"IRFFT with fft_lengths {lengths} needs trailing shape {want}, got {last}")
        return ShapedArray(lead + lengths, real_dtype(x.dtype), False)
    if last != lengths:
        type_error(f"{fft_type} of trailing shape {last} with fft_lengths {lengths}")
    return ShapedArray(x.shape, x.dtype, False)


def _fft(x, fft_type, fft_lengths):
    _fft_rule(ShapedArray(x.shape, x.dtype, False), fft_type, fft_lengths)   # (numpy.fft would
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))                  # cut or pad)
    if fft_type == "FFT":
        r = np.fft.fftn(x, axes=axes)
        dt = x.dtype
    elif fft_type == "IFFT":
        r = np.fft.ifftn(x, axes=axes)
        dt = x.dtype
    elif fft_type == "RFFT":
        r = np.fft.rfftn(x, axes=axes)
        dt = _COMPLEX_OF[x.dtype]
    else:
        r = np.fft.irfftn(x, s=tuple(fft_lengths), axes=axes)
        dt = real_dtype(x.dtype)
    return np.asarray(r).astype(dt)


fft_p = register(Primitive("fft", _fft_rule, _fft, weak="never"))

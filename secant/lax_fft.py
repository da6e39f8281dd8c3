"""secant.lax's complex-number and Fourier-transform functions (re-exported by secant.lax):
`complex`, `real`, `imag`, `conj` and `fft` with `FftType`, as jax.lax's."""
import enum

from secant.backends import dtypes
from secant.backends.errors import SecantTypeError, where
from secant.backends.primitives import complex as cx
from secant.numpy.conversion import ensure_array


class FftType(enum.IntEnum):
    """jax.lax.FftType: the kind of transform `fft` computes."""
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


def _fft_type(fft_type):
    if isinstance(fft_type, FftType):
        return fft_type.name
    if isinstance(fft_type, str) and fft_type.upper() in cx.FFT_TYPES:
        return fft_type.upper()
    if isinstance(fft_type, int) and 0 <= fft_type < 4:
        return cx.FFT_TYPES[fft_type]
    raise SecantTypeError(f"fft_type must be a lax.FftType or one of {cx.FFT_TYPES}, got "
                          f"{fft_type!r}{where()}")


def fft(x, fft_type, fft_lengths):
    """The discrete Fourier transform over the last len(fft_lengths) axes (1 to 3) of x
    (stablehlo.fft): FFT and IFFT of a complex x (IFFT divides by the size), RFFT of a real x
    (the non-negative frequencies: last axis n // 2 + 1), IRFFT back to real lengths."""
    return cx.fft_p.bind(ensure_array(x), fft_type=_fft_type(fft_type),
                         fft_lengths=tuple(int(n) for n in fft_lengths))


def complex(x, y):
    """x + 1j * y of two real arrays of one dtype (float32 -> complex64, float64 -> complex128)."""
    return cx.complex_p.bind(ensure_array(x), ensure_array(y))


def real(x):
    return cx.real_p.bind(ensure_array(x))


def imag(x):
    return cx.imag_p.bind(ensure_array(x))


def conj(x):
    x = ensure_array(x)
    return cx.conj_p.bind(x) if dtypes.is_complex(x.dtype) else x

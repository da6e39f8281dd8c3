"""The transpose of lax.fft, which generated reverse-mode code calls by name (ad/vjp_rules.py).

Written with secant.numpy / secant.lax in the subset of Python the transforms read (this module
is read as source), so a derivative that calls it can be differentiated and batched again.
As JAX's (jax/_src/lax/fft.py, fft_transpose_rule): the DFT matrix is symmetric, so FFT and IFFT
are their own transposes; RFFT is "FFT of the real input, keep the first n // 2 + 1 frequencies",
whose transpose is "pad the cotangent with zeros to n, FFT, real part"; IRFFT's is the conjugate
of the cotangent's RFFT with the frequencies that stand for two (their conjugate twins dropped
from the half spectrum) doubled, divided by the size. (IRFFT maps complex to real: with the
cotangent convention of real() and imag() (ad/helpers.py), d/dRe X - 1j d/dIm X of
sum(t * irfft(X)) is w_j / n * sum_k t_k exp(+2 pi i j k / n), the conjugate of rfft(t);
tests/test_fft.py checks it against finite differences and the dot-product identity.)
"""
import numpy as np

import secant.numpy as snp
from secant import lax
from secant.ad.helpers import constant
from secant.lax_fft import _fft_type

__secant_by_source__ = True      # transforms read this module like user code


def fft_transpose(t, fft_type, fft_lengths):
    """The cotangent of x in lax.fft(x, fft_type, fft_lengths), given the result's t."""
    kind = _fft_type(fft_type)
    if kind == "RFFT":
        out = _rfft_transpose(t, fft_lengths)
    elif kind == "IRFFT":
        out = _irfft_transpose(t, fft_lengths)
    else:
        out = lax.fft(t, kind, fft_lengths)
    return out


def _rfft_transpose(t, fft_lengths):
    missing = fft_lengths[-1] - t.shape[-1]
    full = t
    if missing:
        full = snp.concatenate([t, snp.zeros(t.shape[:-1] + (missing,), t.dtype)], axis=-1)
    return snp.real(lax.fft(full, "FFT", fft_lengths))


def _irfft_transpose(t, fft_lengths):
    half = lax.fft(t, "RFFT", fft_lengths)
    return snp.conj(half) * _irfft_weights(fft_lengths, t.dtype)


@constant
def _irfft_weights(fft_lengths, dtype):
    """1 for the zero frequency (and n / 2 for even n), 2 for the others, over the size."""
    n = fft_lengths[-1]
    w = np.full(n // 2 + 1, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return (w / np.prod(fft_lengths)).astype(dtype)


NAMES = ("fft_transpose",)

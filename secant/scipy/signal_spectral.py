"""jax.scipy.signal's spectral analysis: detrend, stft, istft, csd and welch, as JAX's (SciPy's
conventions: segments of nperseg samples stepping by nperseg - noverlap, each detrended and
windowed, then FFT'd; psd scaling 'density' or 'spectrum'; onesided spectra doubled but for DC
and Nyquist). Read by the transforms as source: grad, jvp and vmap follow from the FFT's and
the gathers' rules. The default 'hann' window is computed here; other named windows come from
scipy.signal.get_window (as in JAX, which needs SciPy for them), arrays are used as given."""
import numpy as np

import secant.numpy as snp
from secant.backends.errors import SecantValueError, UnsupportedError, where

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["detrend", "stft", "istft", "csd", "welch"]


def _inexact(x):
    x = snp.asarray(x)
    return x if snp.issubdtype(x.dtype, snp.inexact) else x.astype(snp.result_type(float))


def _real_dtype(dtype):
    return np.finfo(dtype).dtype


def _linear_fit_removed(d):
    """d (..., n) less its least-squares line over the last axis."""
    n = snp.shape(d)[-1]
    t = np.arange(1, n + 1, dtype=np.float64) / n
    t = (t - t.mean()).astype(_real_dtype(d.dtype))
    centred = d - snp.mean(d, axis=-1, keepdims=True)
    if n < 2:
        return centred
    slope = snp.sum(centred * t, axis=-1, keepdims=True) / float(np.sum(t * t))
    return centred - slope * t


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
    """data less its mean ('constant') or its least-squares line ('linear', one line per
    piece between the breakpoints bp) along axis."""
    if overwrite_data is not None:
        raise UnsupportedError(f"detrend: overwrite_data argument not implemented{where()}")
    if type not in ("constant", "linear"):
        raise SecantValueError(f"Trend type must be 'linear' or 'constant'.{where()}")
    data = _inexact(data)
    if type == "constant":
        return data - snp.mean(data, axis=axis, keepdims=True)
    n = snp.shape(data)[axis]
    cuts = np.sort(np.unique(np.r_[0, bp, n]))
    if cuts[0] < 0 or cuts[-1] > n:
        raise SecantValueError(f"Breakpoints must be non-negative and less than length of data "
                               f"along given axis.{where()}")
    moved = snp.moveaxis(data, axis, -1)
    pieces = [_linear_fit_removed(moved[..., int(cuts[m]):int(cuts[m + 1])])
              for m in range(len(cuts) - 1)]
    return snp.moveaxis(snp.concatenate(pieces, axis=-1), -1, axis)


def _window(window, nperseg, input_length, dtype):
    """(window array, nperseg) as SciPy's _triage_segments chooses them."""
    if isinstance(window, (str, tuple)):
        if nperseg is None:
            nperseg = 256
        if nperseg > input_length:
            nperseg = input_length
        if window == "hann":        # (periodic: SciPy's get_window's fftbins=True)
            win = np.sin(np.pi * np.arange(nperseg) / nperseg) ** 2
        else:
            try:
                from scipy.signal import get_window
            except ImportError:
                raise UnsupportedError(f"window={window!r} needs SciPy (scipy.signal."
                                       f"get_window), as in JAX; pass the window as an array"
                                       f"{where()}") from None
            win = get_window(window, nperseg)
        return snp.asarray(win.astype(dtype)), nperseg
    win = snp.asarray(window)
    if snp.ndim(win) != 1:
        raise SecantValueError(f"window must be 1-D{where()}")
    if input_length < snp.shape(win)[0]:
        raise SecantValueError(f"window is longer than input signal{where()}")
    if nperseg is None:
        nperseg = snp.shape(win)[0]
    elif nperseg != snp.shape(win)[0]:
        raise SecantValueError(f"value specified for nperseg is different from length of "
                               f"window{where()}")
    return win.astype(dtype), nperseg


def _odd_ext(x, n):
    """x extended by n points at each end of its last axis, odd about the end points."""
    if n < 1:
        return x
    if n > snp.shape(x)[-1] - 1:
        raise SecantValueError(f"The extension length n ({n}) is too big. It must not exceed "
                               f"x.shape[axis]-1, which is {snp.shape(x)[-1] - 1}.{where()}")
    left = 2 * x[..., :1] - snp.flip(x[..., 1:n + 1], axis=-1)
    right = 2 * x[..., -1:] - snp.flip(x[..., -(n + 1):-1], axis=-1)
    return snp.concatenate([left, x, right], axis=-1)


def _extended(x, boundary, n):
    widths = [(0, 0)] * (snp.ndim(x) - 1) + [(n, n)]
    if boundary == "even":
        return snp.pad(x, widths, mode="reflect")
    if boundary == "odd":
        return _odd_ext(x, n)
    if boundary == "constant":
        return snp.pad(x, widths, mode="edge")
    return snp.pad(x, widths)       # zeros


def _detrended(segments, detrend_type):
    if detrend_type is False or detrend_type is None:
        return segments
    if callable(detrend_type):
        return detrend_type(segments)
    if detrend_type == "constant":
        return segments - snp.mean(segments, axis=-1, keepdims=True)
    if detrend_type == "linear":
        return _linear_fit_removed(segments)
    raise SecantValueError(f"Unsupported detrend type: {detrend_type}{where()}")


def _spectra(x, win, detrend_type, nperseg, noverlap, nfft, twosided):
    """The windowed FFTs (..., segments, frequencies) of x's segments."""
    starts = np.arange(0, snp.shape(x)[-1] - nperseg + 1, nperseg - noverlap)
    segments = x[..., starts[:, None] + np.arange(nperseg)[None, :]]
    segments = _detrended(segments, detrend_type)
    if snp.iscomplexobj(win):
        segments = segments.astype(snp.result_type(segments.dtype, 1j))
    segments = win * segments
    if twosided:
        return snp.fft.fft(segments, n=nfft)
    return snp.fft.rfft(snp.real(segments), n=nfft)


def _pad_end(x, n):
    return snp.pad(x, [(0, 0)] * (snp.ndim(x) - 1) + [(0, n)]) if n else x


def _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
              scaling, axis, mode, boundary=None, padded=False):
    """(frequencies, segment times, spectra): SciPy's _spectral_helper, as JAX's."""
    if boundary not in ("even", "odd", "constant", "zeros", None):
        raise SecantValueError(f"Unknown boundary option '{boundary}', must be one of: "
                               f"['even', 'odd', 'constant', 'zeros', None]{where()}")
    x = _inexact(x)
    axis = axis % snp.ndim(x)
    if y is not None:
        y = _inexact(y)
        if snp.ndim(x) != snp.ndim(y):
            raise SecantValueError(f"two-arguments must have the same rank ({snp.ndim(x)} vs "
                                   f"{snp.ndim(y)}).{where()}")
        dtype = snp.result_type(x.dtype, y.dtype)
        x, y = x.astype(dtype), y.astype(dtype)
    result_dtype = snp.result_type(x.dtype, 1j)
    freq_dtype = _real_dtype(result_dtype)
    if nperseg is not None and nperseg < 1:
        raise SecantValueError(f"nperseg must be a positive integer{where()}")
    win, nperseg = _window(window, nperseg, snp.shape(x)[axis], freq_dtype)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    if nfft < nperseg:
        raise SecantValueError(f"nfft must be greater than or equal to nperseg.{where()}")
    if noverlap >= nperseg:
        raise SecantValueError(f"noverlap must be less than nperseg.{where()}")
    x = snp.moveaxis(x, axis, -1)
    if y is not None:
        y = snp.moveaxis(y, axis, -1)
        longer = max(snp.shape(x)[-1], snp.shape(y)[-1])
        x = _pad_end(x, longer - snp.shape(x)[-1])
        y = _pad_end(y, longer - snp.shape(y)[-1])
    if boundary is not None:
        x = _extended(x, boundary, nperseg // 2)
        if y is not None:
            y = _extended(y, boundary, nperseg // 2)
    if padded:
        nadd = (-(snp.shape(x)[-1] - nperseg) % (nperseg - noverlap)) % nperseg
        x = _pad_end(x, nadd)
        if y is not None:
            y = _pad_end(y, nadd)
    if scaling == "density":
        scale = 1.0 / (fs * snp.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / snp.sum(win) ** 2
    else:
        raise SecantValueError(f"Unknown scaling: {scaling}{where()}")
    if mode == "stft":
        scale = snp.sqrt(scale)
    complex_input = snp.iscomplexobj(x)
    if y is not None:
        if snp.iscomplexobj(y):
            complex_input = True
    twosided = True if complex_input else not return_onesided
    if twosided:
        freqs = snp.fft.fftfreq(nfft, 1 / fs).astype(freq_dtype)
    else:
        freqs = snp.fft.rfftfreq(nfft, 1 / fs).astype(freq_dtype)
    result = _spectra(x, win, detrend_type, nperseg, noverlap, nfft, twosided)
    if y is not None:
        result = snp.conj(result) * _spectra(y, win, detrend_type, nperseg, noverlap, nfft,
                                             twosided)
    elif mode == "psd":
        result = snp.conj(result) * result
    result = result * scale
    if not twosided and mode == "psd":
        bins = np.arange(snp.shape(result)[-1])      # (DC, and Nyquist for an even nfft: once)
        doubled = 2.0 - (bins == 0) - (bins == bins[-1]) * (nfft % 2 == 0)
        result = result * doubled.astype(freq_dtype)
    time = np.arange(nperseg / 2, snp.shape(x)[-1] - nperseg / 2 + 1, nperseg - noverlap)
    if boundary is not None:
        time = time - nperseg / 2
    time = snp.asarray(time.astype(freq_dtype)) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = snp.real(result)
    return freqs, time, snp.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
    """(frequencies, segment times, Zxx): the short-time Fourier transform of x along axis."""
    return _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     "spectrum", axis, "stft", boundary, padded)


def _median_bias(n):
    ii_2 = 2 * np.arange(1.0, (n - 1) // 2 + 1)
    return 1 + np.sum(1.0 / (ii_2 + 1) - 1.0 / ii_2)


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1, average="mean"):
    """(frequencies, Pxy): the cross power spectral density of x and y (Welch's method: the
    mean, or median, of the segments' cross spectra)."""
    freqs, _, pxy = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                              return_onesided, scaling, axis, "psd")
    if y is not None:
        pxy = pxy.astype(snp.result_type(pxy.dtype, 1j))
    segments = snp.shape(pxy)[-1] if snp.ndim(pxy) >= 2 else 0
    if segments > 0 and snp.size(pxy) > 0:
        if segments > 1:
            if average == "median":
                bias = _median_bias(snp.shape(pxy)[-1])
                if snp.iscomplexobj(pxy):
                    pxy = snp.median(snp.real(pxy), axis=-1) + \
                        1j * snp.median(snp.imag(pxy), axis=-1)
                else:
                    pxy = snp.median(pxy, axis=-1)
                pxy = pxy / bias
            elif average == "mean":
                pxy = snp.mean(pxy, axis=-1)
            else:
                raise SecantValueError(f'average must be "median" or "mean", got {average}'
                                       f"{where()}")
        else:
            pxy = snp.reshape(pxy, snp.shape(pxy)[:-1])
    return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
    """(frequencies, Pxx): the power spectral density of x by Welch's method."""
    freqs, pxx = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     scaling, axis, average)
    return freqs, snp.real(pxx)


def _overlap_add(frames, step):
    """(..., nframes, length) frames summed into one signal, frame i starting at i * step."""
    nframes, length = snp.shape(frames)[-2:]
    size = step * (nframes - 1) + length
    at = (np.arange(nframes)[:, None] * step + np.arange(length)[None, :]).reshape(-1)
    flat = snp.reshape(frames, snp.shape(frames)[:-2] + (nframes * length,))
    total = snp.zeros(snp.shape(frames)[:-2] + (size,), flat.dtype)
    return total.at[..., at].add(flat)


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
    """(times, x): the inverse short-time Fourier transform (weighted overlap-add)."""
    Zxx = snp.asarray(Zxx)
    if snp.ndim(Zxx) < 2:
        raise SecantValueError(f"Input stft must be at least 2d!{where()}")
    freq_axis = freq_axis % snp.ndim(Zxx)
    time_axis = time_axis % snp.ndim(Zxx)
    if freq_axis == time_axis:
        raise SecantValueError(f"Must specify differing time and frequency axes!{where()}")
    Zxx = Zxx.astype(snp.result_type(Zxx.dtype, 1j))
    n_default = 2 * (snp.shape(Zxx)[freq_axis] - 1) if input_onesided else \
        snp.shape(Zxx)[freq_axis]
    nperseg = int(nperseg or n_default)
    if nperseg < 1:
        raise SecantValueError(f"nperseg must be a positive integer{where()}")
    if nfft is None:
        nfft = n_default
        if input_onesided and nperseg == n_default + 1:
            nfft += 1       # (odd nperseg, no FFT padding)
    nfft = int(nfft)
    if nfft < nperseg:
        raise SecantValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg})."
                               f"{where()}")
    noverlap = int(noverlap or nperseg // 2)
    if noverlap >= nperseg:
        raise SecantValueError(f"noverlap must be less than nperseg.{where()}")
    outer = [i for i in range(snp.ndim(Zxx)) if i not in (time_axis, freq_axis)]
    Zxx = snp.transpose(Zxx, outer + [freq_axis, time_axis])
    if input_onesided:
        frames = snp.fft.irfft(Zxx, n=nfft, axis=-2)[..., :nperseg, :]
    else:
        frames = snp.fft.ifft(Zxx, n=nfft, axis=-2)[..., :nperseg, :]
    win, _ = _window(window, nperseg, nperseg, frames.dtype)
    frames = frames * snp.sum(win)             # (undoes the 'spectrum' scaling)
    x = _overlap_add(snp.swapaxes(frames * win[:, None], -2, -1), nperseg - noverlap)
    nframes = snp.shape(frames)[-1]
    norm = _overlap_add(snp.broadcast_to(win * win, (nframes, nperseg)), nperseg - noverlap)
    if boundary:
        x = x[..., nperseg // 2:-(nperseg // 2)]
        norm = norm[..., nperseg // 2:-(nperseg // 2)]
    x = x / snp.where(norm > 1e-10, norm, 1.0)
    if snp.ndim(x) > 1 and time_axis != snp.ndim(Zxx) - 1:
        if freq_axis < time_axis:
            time_axis -= 1
        x = snp.moveaxis(x, -1, time_axis)
    time = snp.arange(snp.shape(x)[0], dtype=_real_dtype(x.dtype)) / fs
    return time, x

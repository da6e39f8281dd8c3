"""issue 15 (lib15e): jax.scipy.signal's detrend, stft, istft, csd and welch
(secant/scipy/signal_spectral.py): values against SciPy's for each boundary, detrend, average,
scaling and window, eagerly and under jit; istft inverts stft; gradients against float64
central differences; vmap against a loop."""
import numpy as np
import pytest
import scipy.signal as sps

import secant
import secant.numpy as snp
from secant.scipy import signal
from tests.central_differences import weighted_fd

rng = np.random.default_rng(15)
X = rng.normal(size=(2, 300))
Y = rng.normal(size=(2, 280))


def close(got, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


def test_detrend(x64):
    close(signal.detrend(X, bp=[100, 170]), sps.detrend(X, bp=[100, 170]))
    close(signal.detrend(X, axis=0, type="constant"), sps.detrend(X, axis=0, type="constant"))
    close(secant.jit(signal.detrend)(X), sps.detrend(X))
    with pytest.raises(secant.SecantValueError, match="'linear' or 'constant'"):
        signal.detrend(X, type="quadratic")


@pytest.mark.parametrize("boundary", ["zeros", "even", "odd", "constant", None])
def test_stft_against_scipy(boundary, x64):
    kw = dict(fs=10.0, nperseg=64, noverlap=20, boundary=boundary, padded=boundary is not None)
    f, t, z = signal.stft(X, **kw)
    f0, t0, z0 = sps.stft(X, **kw)
    close(f, f0)
    close(t, t0)
    close(z, z0)


def test_stft_options_and_istft_round_trip(x64):
    kw = dict(nperseg=64, detrend="linear", return_onesided=False)
    close(signal.stft(X, **kw)[2], sps.stft(X, **kw)[2])
    _, _, z = signal.stft(X, fs=10.0, nperseg=64, noverlap=20)
    t, x = signal.istft(z, fs=10.0, nperseg=64, noverlap=20)
    t0, x0 = sps.istft(np.asarray(z), fs=10.0, nperseg=64, noverlap=20)
    close(t, t0)
    close(x, x0)
    close(np.asarray(x)[..., :300], X, rtol=1e-9, atol=1e-9)       # (the signal back)
    jitted = secant.jit(lambda s: signal.istft(signal.stft(s, nperseg=32)[2], nperseg=32)[1])
    close(np.asarray(jitted(X))[..., :300], X, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("average", ["mean", "median"])
def test_welch_and_csd_against_scipy(average, x64):
    f, p = signal.welch(X, fs=5.0, nperseg=50, average=average)
    f0, p0 = sps.welch(X, fs=5.0, nperseg=50, average=average)
    close(f, f0)
    close(p, p0)
    kw = dict(nperseg=50, average=average, scaling="spectrum", detrend="linear")
    close(signal.csd(X, Y, **kw)[1], sps.csd(X, Y, **kw)[1])
    kw = dict(nperseg=33, nfft=40, window=("tukey", 0.3), axis=0)
    close(signal.welch(X.T, **kw)[1], sps.welch(X.T, **kw)[1])
    close(secant.jit(lambda s: signal.welch(s, nperseg=50, average=average)[1])(X),
          sps.welch(X, nperseg=50, average=average)[1])


def test_gradients_against_central_differences(x64):
    x = X[0, :96]
    g0, w = weighted_fd(lambda s: sps.welch(s, nperseg=32)[1], x)
    g = secant.grad(lambda s: snp.sum(signal.welch(s, nperseg=32)[1] * w))(x)
    close(g, g0, rtol=1e-6, atol=1e-8)

    def magnitude(s):
        return np.abs(sps.stft(s, nperseg=16, detrend="linear")[2])
    g0, w = weighted_fd(magnitude, x[:40])
    g = secant.grad(lambda s: snp.sum(snp.abs(signal.stft(s, nperseg=16,
                                                          detrend="linear")[2]) * w))(x[:40])
    close(g, g0, rtol=1e-5, atol=1e-7)


def test_vmap_against_a_loop(x64):
    got = secant.vmap(lambda s: signal.welch(s, nperseg=40)[1])(X)
    close(got, np.stack([sps.welch(s, nperseg=40)[1] for s in X]))
    got = secant.vmap(lambda a, b: signal.csd(a, b, nperseg=40)[1])(X[:, :280], Y)
    close(got, np.stack([sps.csd(a, b, nperseg=40)[1] for a, b in zip(X[:, :280], Y)]))


def test_stft_and_istft_under_vmap(x64):
    got = secant.vmap(lambda s: signal.stft(s, nperseg=32)[2])(X)
    close(got, np.stack([sps.stft(s, nperseg=32)[2] for s in X]))
    z = np.stack([sps.stft(s, nperseg=32)[2] for s in X])
    got = secant.vmap(lambda zz: signal.istft(zz, nperseg=32)[1])(z)
    close(got, np.stack([sps.istft(zz, nperseg=32)[1] for zz in z]))

"""jax.scipy.fft (secant/scipy/fft.py): dct, idct, dctn, idctn (type 2, norm None or "ortho")
against SciPy over axes, lengths n and shapes s (padding and cutting), complex input, float32;
jit against eager, vmap against a loop, gradients (linear maps: against central differences)."""
import numpy as np
import pytest
import scipy.fft as sf

import secant
from secant.scipy import fft

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 5, 4))


@pytest.mark.parametrize("norm", [None, "ortho"])
@pytest.mark.parametrize("name", ["dct", "idct"])
def test_one_axis_against_scipy(x64, name, norm):
    ours, theirs = getattr(fft, name), getattr(sf, name)
    for axis in (-1, 0, 1):
        for n in (None, 3, 7):
            np.testing.assert_allclose(np.asarray(ours(X, n=n, axis=axis, norm=norm)),
                                       theirs(X, n=n, axis=axis, norm=norm), atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(ours)(X)), theirs(X), atol=1e-12)


@pytest.mark.parametrize("norm", [None, "ortho"])
@pytest.mark.parametrize("name", ["dctn", "idctn"])
def test_several_axes_against_scipy(x64, name, norm):
    ours, theirs = getattr(fft, name), getattr(sf, name)
    for s, axes in ((None, None), ([2], None), ([2], [0]), ([2, 6], None), (None, (0, 2))):
        np.testing.assert_allclose(np.asarray(ours(X, s=s, axes=axes, norm=norm)),
                                   theirs(X, s=s, axes=axes, norm=norm), atol=1e-12)


def test_complex_float32_and_round_trip(x64_or_not):
    z = X + 1j * RNG.normal(size=X.shape)
    np.testing.assert_allclose(np.asarray(fft.dct(z)), sf.dct(z), rtol=1e-5, atol=1e-5)
    x32 = X.astype(np.float32)
    assert fft.dct(x32).dtype == np.float32 and fft.idctn(x32).dtype == np.float32
    np.testing.assert_allclose(np.asarray(fft.idct(fft.dct(x32, norm="ortho"), norm="ortho")),
                               x32, atol=1e-5)
    np.testing.assert_allclose(np.asarray(fft.dct(np.arange(4))), sf.dct(np.arange(4.0)),
                               atol=1e-5)
    with pytest.raises(NotImplementedError):
        fft.dct(X, type=3)
    with pytest.raises(ValueError):
        fft.dctn(X, norm="forward")


@pytest.mark.parametrize("name", ["dct", "idct", "dctn", "idctn"])
def test_grad_and_vmap(x64, name):
    fn = getattr(fft, name)
    w = RNG.normal(size=(5, 4))
    x = RNG.normal(size=(5, 4))

    def loss(v):
        return (w * fn(v, norm="ortho") ** 2).sum()
    g = np.asarray(secant.grad(loss)(x))
    fd = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = 1e-6
        fd[idx] = (float(loss(x + e)) - float(loss(x - e))) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    batched = secant.vmap(fn)(X)
    np.testing.assert_allclose(np.asarray(batched), np.stack([np.asarray(fn(v)) for v in X]),
                               atol=1e-12)

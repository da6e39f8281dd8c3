"""issue 15 (lib15e): jax.image.resize and scale_and_translate (secant/image.py): values against
closed forms (linear = np.interp at half-pixel centres, nearest = floor indexing, area = block
means, cubic reproduces a linear ramp inside the image, identity warps), eagerly and under jit;
gradients in the image and in scale / translation against float64 central differences; vmap
against a loop."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import image
from tests.central_differences import weighted_fd

rng = np.random.default_rng(15)
IMG = rng.normal(size=(6, 5))


def interp_rows(x, n):
    """Linear resampling of axis 0 of x to n rows at half-pixel centres (clamped at the edges)."""
    m = x.shape[0]
    centres = (np.arange(n) + 0.5) * m / n - 0.5
    return np.stack([np.interp(centres, np.arange(m), col) for col in x.T], axis=1)


def test_linear_upsampling_is_interpolation_at_half_pixel_centres(x64):
    want = interp_rows(interp_rows(IMG, 11).T, 8).T
    got = image.resize(IMG, (11, 8), "bilinear")
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(lambda x: image.resize(x, (11, 8),
                                                                            "linear"))(IMG)),
                               want, rtol=1e-12, atol=1e-12)


def test_nearest_area_and_identity(x64):
    rows = np.floor((np.arange(9) + 0.5) * 6 / 9).astype(int)
    np.testing.assert_array_equal(np.asarray(image.resize(IMG, (9, 5), "nearest")), IMG[rows])
    ints = np.arange(24).reshape(4, 6)
    nearest = image.resize(ints, (2, 3), image.ResizeMethod.NEAREST)
    assert nearest.dtype == ints.dtype          # (nearest keeps the dtype)
    blocks = IMG.reshape(3, 2, 5).mean(axis=1)
    np.testing.assert_allclose(np.asarray(image.resize(IMG, (3, 5), "area")), blocks,
                               rtol=1e-12)
    for method in ("linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch"):
        np.testing.assert_allclose(np.asarray(image.resize(IMG, IMG.shape, method)), IMG)
    assert image.resize(ints, (8, 12), "linear").dtype == np.float64


def test_keys_cubic_keeps_a_ramp_and_lanczos_weights_are_the_formula(x64):
    ramp = np.tile(np.arange(8.0)[:, None], (1, 3))
    got = np.asarray(image.resize(ramp, (16, 3), "cubic", antialias=False))[:, 0]
    centres = (np.arange(16) + 0.5) / 2 - 0.5
    inside = (centres > 2) & (centres < 5)
    np.testing.assert_allclose(got[inside], centres[inside], rtol=1e-12)
    lanczos = np.asarray(image.resize(ramp, (16, 3), "lanczos3"))[:, 0]
    d = 3.25 - np.arange(8.0)                   # output row 7 samples row 3.25
    k = np.where(np.abs(d) < 3, 3 * np.sin(np.pi * d) * np.sin(np.pi * d / 3) /
                 (np.pi ** 2 * d ** 2), 0.0)
    np.testing.assert_allclose(lanczos[7], np.dot(k, np.arange(8.0)) / k.sum(), rtol=1e-12)


def test_cubic_pytorch_pads_the_edges_and_keeps_constants(x64):
    # (OpenCV's kernel, a = -0.75: it keeps constants, edges included (edge padding), not ramps)
    flat = np.full((5, 4), 2.5)
    np.testing.assert_allclose(np.asarray(image.resize(flat, (13, 7), "cubic-pytorch",
                                                       antialias=False)), 2.5, rtol=1e-12)
    ramp = np.tile(np.arange(8.0)[:, None], (1, 3))
    got = np.asarray(image.resize(ramp, (16, 3), "cubic-pytorch", antialias=False))[:, 0]
    x = 3.25 - 3                                # output row 7 samples row 3.25: 0.25 past 3
    weights = [-0.75 * (1 + x) ** 3 + 3.75 * (1 + x) ** 2 - 6 * (1 + x) + 3,   # |d| in [1, 2)
               1.25 * x ** 3 - 2.25 * x ** 2 + 1, 1.25 * (1 - x) ** 3 - 2.25 * (1 - x) ** 2 + 1,
               -0.75 * (2 - x) ** 3 + 3.75 * (2 - x) ** 2 - 6 * (2 - x) + 3]
    np.testing.assert_allclose(got[7], np.dot(weights, [2, 3, 4, 5]) / np.sum(weights),
                               rtol=1e-12)


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3"])
def test_gradients_in_the_image_and_in_the_warp(method, x64):
    def resized(x):
        return image.resize(x, (4, 7), method)
    g0, w = weighted_fd(lambda x: np.asarray(resized(x)), IMG)
    g = secant.grad(lambda x: snp.sum(resized(x) * w))(IMG)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-6, atol=1e-8)

    def warped(st):
        return image.scale_and_translate(IMG, (8, 6), (0, 1), st[:2], st[2:], method)
    st = np.array([1.3, 0.8, 0.4, -0.6])
    g0, w = weighted_fd(lambda v: np.asarray(warped(v)), st)
    g = secant.grad(lambda v: snp.sum(warped(v) * w))(st)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(secant.jit(warped)(st)), np.asarray(warped(st)),
                               rtol=1e-12, atol=1e-12)


def test_vmap_over_images_and_over_warps(x64):
    batch = rng.normal(size=(3, 6, 5))
    got = secant.vmap(lambda x: image.resize(x, (4, 9), "lanczos5"))(batch)
    np.testing.assert_allclose(np.asarray(got),
                               np.stack([np.asarray(image.resize(x, (4, 9), "lanczos5"))
                                         for x in batch]), rtol=1e-12, atol=1e-12)
    scales = np.array([[1.2, 0.9], [0.7, 1.5]])
    got = secant.vmap(lambda s: image.scale_and_translate(IMG, (7, 5), (0, 1), s,
                                                          np.zeros(2), "linear"))(scales)
    loop = [np.asarray(image.scale_and_translate(IMG, (7, 5), (0, 1), s, np.zeros(2),
                                                 "linear")) for s in scales]
    np.testing.assert_allclose(np.asarray(got), np.stack(loop), rtol=1e-12, atol=1e-12)


def test_errors_are_jax_s():
    with pytest.raises(secant.SecantValueError, match="Unknown resize method"):
        image.resize(IMG, (3, 3), "bogus")
    with pytest.raises(secant.SecantValueError, match="length equal to the number"):
        image.resize(IMG, (3,), "linear")
    with pytest.raises(secant.SecantValueError, match="Nearest neighbor"):
        image.scale_and_translate(IMG, (3, 3), (0, 1), np.ones(2), np.zeros(2), "nearest")

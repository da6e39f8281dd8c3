"""lib15d: secant.scipy.ndimage.map_coordinates as jax.scipy.ndimage's: values against
scipy.ndimage.map_coordinates (JAX's 'wrap' and 'constant' are SciPy's 'grid-wrap' and
'grid-constant'), gradients in the image and the coordinates against float64 central
differences, jit against eager, vmap against a Python loop."""
import numpy as np
import pytest
import scipy.ndimage as nd

import secant
import secant.numpy as snp
from secant.scipy.ndimage import map_coordinates

RNG = np.random.default_rng(152)
IMG = RNG.normal(size=(5, 6))
# (no coordinate at a half-integer, where order 0's rounding conventions differ)
C0 = np.round(RNG.uniform(-2, 7, size=9), 2) + 0.003
C1 = np.round(RNG.uniform(-2, 8, size=9), 2) + 0.003
SCIPY_MODE = {"constant": "grid-constant", "nearest": "nearest", "wrap": "grid-wrap",
              "mirror": "mirror", "reflect": "reflect"}


def close(a, b, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("mode", sorted(SCIPY_MODE))
def test_values_against_scipy(mode, order, x64):
    want = nd.map_coordinates(IMG, [C0, C1], order=order, mode=SCIPY_MODE[mode], cval=0.5)
    close(map_coordinates(IMG, [C0, C1], order=order, mode=mode, cval=0.5), want)
    close(secant.jit(lambda im, a, b: map_coordinates(im, [a, b], order=order, mode=mode,
                                                      cval=0.5))(IMG, C0, C1), want)


def test_one_and_three_axes_and_integer_input(x64):
    line = RNG.normal(size=7)
    c = np.array([-0.7, 0.2, 3.4, 6.9, 7.6])
    close(map_coordinates(line, [c], order=1, mode="nearest"),
          nd.map_coordinates(line, [c], order=1, mode="nearest"))
    cube = RNG.normal(size=(3, 4, 5))
    cs = [RNG.uniform(0, 2, 6), RNG.uniform(0, 3, 6), RNG.uniform(0, 4, 6)]
    close(map_coordinates(cube, cs, order=1, mode="reflect"),
          nd.map_coordinates(cube, cs, order=1, mode="reflect"))
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)      # 4 r + c: bilinear is exact
    got = map_coordinates(ints, [np.array([0.4, 1.6]), np.array([2.5, 0.2])], order=1)
    assert np.asarray(got).dtype == np.int32
    np.testing.assert_array_equal(got, [4, 7])        # 4.1 and 6.6 rounded


def _loss(img, c0, c1):
    return snp.sum(snp.sin(map_coordinates(img, [c0, c1], order=1, mode="reflect")) +
                   map_coordinates(img, [c0, c1], order=1, mode="constant", cval=0.3) ** 2)


def _fd(f, args, i, eps=1e-6):
    out = np.zeros_like(args[i])
    for idx in np.ndindex(out.shape):
        e = np.zeros_like(out)
        e[idx] = eps
        hi, lo = list(args), list(args)
        hi[i], lo[i] = args[i] + e, args[i] - e
        out[idx] = (f(*hi) - f(*lo)) / (2 * eps)
    return out


def test_gradients_against_central_differences(x64):
    args = [IMG, C0, C1]
    g = secant.grad(_loss, argnums=(0, 1, 2))(*args)
    for i in range(3):
        close(g[i], _fd(lambda *a: float(_loss(*a)), args, i), rtol=1e-6, atol=1e-8)
    gj = secant.jit(secant.grad(_loss, argnums=(0, 1, 2)))(*args)
    for i in range(3):
        close(gj[i], g[i], rtol=1e-10)
    # order 0: piecewise constant in the coordinates (zero gradient), linear in the image
    g0 = secant.grad(lambda im, c: snp.sum(map_coordinates(im, [c, C1], order=0,
                                                           mode="wrap")), argnums=(0, 1))
    gi, gc = g0(IMG, C0)
    close(gc, np.zeros_like(C0))
    close(gi, _fd(lambda im: np.sum(nd.map_coordinates(im, [C0, C1], order=0,
                                                       mode="grid-wrap")), [IMG], 0))


def test_vmap_against_a_loop(x64):
    cs = np.stack([C0, C0 + 0.31, C0 - 1.2])
    got = secant.vmap(lambda c: map_coordinates(IMG, [c, C1], order=1, mode="mirror"))(cs)
    for k in range(3):
        close(got[k], map_coordinates(IMG, [cs[k], C1], order=1, mode="mirror"))
    imgs = np.stack([IMG, 2 * IMG])
    g = secant.vmap(secant.grad(_loss))(imgs, np.stack([C0] * 2), np.stack([C1] * 2))
    for k in range(2):
        close(g[k], secant.grad(_loss)(imgs[k], C0, C1), rtol=1e-10)


def test_refusals():
    with pytest.raises(secant.SecantError, match="order<=1"):
        map_coordinates(IMG, [C0, C1], order=3)
    with pytest.raises(ValueError, match="input.ndim"):
        map_coordinates(IMG, [C0], order=1)
    with pytest.raises(secant.SecantError, match="mode"):
        map_coordinates(IMG, [C0, C1], order=1, mode="grid-wrap")

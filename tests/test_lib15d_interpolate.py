"""lib15d: secant.scipy.interpolate.RegularGridInterpolator as jax.scipy.interpolate's: values
against scipy.interpolate (linear, nearest; fill_value NaN, a number, None), gradients in the
values and the points against float64 central differences (built inside the differentiated
function, bound to a name or called at once), jit with the interpolator as a pytree argument,
vmap against a loop."""
import numpy as np
import pytest
import scipy.interpolate as si

import secant
import secant.numpy as snp
from secant.scipy.interpolate import RegularGridInterpolator
from test_lib15d_ndimage import _fd      # (central differences in one argument)

RNG = np.random.default_rng(155)
GX, GY = np.array([0.0, 0.5, 1.5, 3.0]), np.linspace(-1, 1, 5)
V = RNG.normal(size=(4, 5))
PTS = np.stack([RNG.uniform(-0.3, 3.3, 9), RNG.uniform(-1.2, 1.2, 9)], axis=1)
INSIDE = np.stack([RNG.uniform(0.05, 2.95, 6), RNG.uniform(-0.95, 0.95, 6)], axis=1)


def close(a, b, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("fill_value", [np.nan, 0.25, None])
def test_values_against_scipy(method, fill_value, x64):
    want = si.RegularGridInterpolator((GX, GY), V, method=method, bounds_error=False,
                                      fill_value=fill_value)(PTS)
    interp = RegularGridInterpolator((GX, GY), V, method=method, fill_value=fill_value)
    close(interp(PTS), want)
    close(secant.jit(lambda i, p: i(p))(interp, PTS), want)
    close(interp((PTS[:, 0], PTS[:, 1])), want)          # a tuple of coordinate arrays


def test_trailing_value_axes_and_one_dimension(x64):
    values = RNG.normal(size=(4, 5, 3))
    want = si.RegularGridInterpolator((GX, GY), values)(INSIDE)
    close(RegularGridInterpolator((GX, GY), values)(INSIDE), want)
    line = RNG.normal(size=4)
    x = np.array([0.1, 0.7, 2.9])
    close(RegularGridInterpolator((GX,), line)(x), np.interp(x, GX, line))


def _loss(values, points):
    interp = RegularGridInterpolator((GX, GY), values, fill_value=0.0)
    return snp.sum(snp.sin(interp(points)))


def _loss_at_once(values, points):
    return snp.sum(snp.sin(RegularGridInterpolator((GX, GY), values, fill_value=0.0)(points)))


@pytest.mark.parametrize("loss", [_loss, _loss_at_once])
def test_gradients_against_central_differences(loss, x64):
    args = [V, INSIDE]
    g = secant.grad(loss, argnums=(0, 1))(*args)
    for i in range(2):
        close(g[i], _fd(lambda *a: float(_loss(*a)), args, i), rtol=1e-6, atol=1e-8)
    gj = secant.jit(secant.grad(loss, argnums=(0, 1)))(*args)
    for i in range(2):
        close(gj[i], g[i], rtol=1e-10)


def test_vmap_against_a_loop(x64):
    points = np.stack([INSIDE, INSIDE[::-1], INSIDE * 0.5])
    got = secant.vmap(lambda p: RegularGridInterpolator((GX, GY), V)(p))(points)
    for k in range(3):
        close(got[k], RegularGridInterpolator((GX, GY), V)(points[k]))
    values = np.stack([V, 2 * V])
    g = secant.vmap(secant.grad(_loss), in_axes=(0, None))(values, INSIDE)
    for k in range(2):
        close(g[k], secant.grad(_loss)(values[k], INSIDE), rtol=1e-10)


def test_refusals():
    with pytest.raises(ValueError, match="not defined"):
        RegularGridInterpolator((GX, GY), V, method="cubic")
    with pytest.raises(secant.SecantError, match="bounds_error"):
        RegularGridInterpolator((GX, GY), V, bounds_error=True)
    with pytest.raises(ValueError, match="dimension"):
        RegularGridInterpolator((GX, GY), V)(np.ones((2, 3)))

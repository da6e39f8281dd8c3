"""secant.scipy.signal (convolve, correlate, convolve2d, correlate2d, fftconvolve) and
secant.scipy.integrate.trapezoid against SciPy: values in float64, grad against central
differences, vmap against a loop, jit against SciPy."""
import numpy as np
import pytest
import scipy.integrate as si
import scipy.signal as ss

import secant
import secant.numpy as snp
from secant.scipy import integrate, signal
from tests.central_differences import weighted_fd

rng = np.random.default_rng(11)
SHAPES = [((7,), (3,)), ((3,), (7,)), ((5, 6), (2, 3)), ((3, 6), (2, 2))]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("name", ["convolve", "correlate", "fftconvolve"])
def test_values(x64, name, mode, shapes):
    a, b = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    if name == "correlate" and mode == "valid" and shapes[0][0] < shapes[1][0]:
        pytest.skip("SciPy swaps the inputs there")
    np.testing.assert_allclose(np.asarray(getattr(signal, name)(a, b, mode)),
                               getattr(ss, name)(a, b, mode), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["convolve2d", "correlate2d"])
def test_2d_grad_vmap_jit(x64, name):
    a, b = rng.normal(size=(5, 6)), rng.normal(size=(2, 3))
    fn, ref = getattr(signal, name), getattr(ss, name)
    np.testing.assert_allclose(np.asarray(secant.jit(lambda x: fn(x, b, "same"))(a)),
                               ref(a, b, "same"), rtol=1e-10, atol=1e-12)
    for k, x in enumerate((a, b)):
        def f(v, k=k):
            return fn(v, b, "same") if k == 0 else fn(a, v, "same")

        def f_ref(v, k=k):
            return ref(v, b, "same") if k == 0 else ref(a, v, "same")
        g0, w = weighted_fd(f_ref, x)
        g = secant.grad(lambda v: snp.sum(f(v) * w))(x)
        np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-5, atol=1e-7)
    stack = rng.normal(size=(3, 5, 6))
    np.testing.assert_allclose(np.asarray(secant.vmap(lambda x: fn(x, b, "valid"))(stack)),
                               np.stack([ref(x, b, "valid") for x in stack]), rtol=1e-10,
                               atol=1e-12)



@pytest.mark.parametrize("name", ["convolve", "correlate", "fftconvolve"])
def test_3d_values_grad_vmap_jit(x64, name):
    """n-d inputs (3-d refused before: eager 3-d conv_general_dilated failed)."""
    a, b = rng.normal(size=(4, 3, 5)), rng.normal(size=(2, 3, 2))
    fn, ref = getattr(signal, name), getattr(ss, name)
    for mode in ("full", "same", "valid"):
        np.testing.assert_allclose(np.asarray(fn(a, b, mode)), ref(a, b, mode), rtol=1e-10,
                                   atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(lambda x: fn(x, b, "same"))(a)),
                               ref(a, b, "same"), rtol=1e-10, atol=1e-12)
    g0, w = weighted_fd(lambda v: ref(a, v, "same"), b)
    g = secant.grad(lambda v: snp.sum(fn(a, v, "same") * w))(b)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-5, atol=1e-7)
    stack = rng.normal(size=(2, 4, 3, 5))
    np.testing.assert_allclose(np.asarray(secant.vmap(lambda x: fn(x, b, "valid"))(stack)),
                               np.stack([ref(x, b, "valid") for x in stack]), rtol=1e-10,
                               atol=1e-12)



@pytest.mark.parametrize("shapes, axes", [(((3, 7), (3, 4)), 1), (((1, 7), (3, 4)), (-1,)),
                                          (((5, 2, 6), (2, 1, 3)), (0, 2))], ids=str)
def test_fftconvolve_over_axes(x64, shapes, axes):
    """Over `axes`, the other axes broadcast (one kernel each): values, jit, grad, vmap."""
    a, b = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    for mode in ("full", "same", "valid"):
        np.testing.assert_allclose(np.asarray(signal.fftconvolve(a, b, mode, axes=axes)),
                                   ss.fftconvolve(a, b, mode, axes=axes), rtol=1e-9,
                                   atol=1e-10)
    np.testing.assert_allclose(
        np.asarray(secant.jit(lambda x, y: signal.fftconvolve(x, y, "same", axes=axes))(a, b)),
        ss.fftconvolve(a, b, "same", axes=axes), rtol=1e-9, atol=1e-10)
    g0, w = weighted_fd(lambda v: ss.fftconvolve(a, v, "full", axes=axes), b)
    g = secant.grad(lambda v: snp.sum(signal.fftconvolve(a, v, "full", axes=axes) * w))(b)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-5, atol=1e-7)
    stack = rng.normal(size=(2,) + shapes[0])
    np.testing.assert_allclose(
        np.asarray(secant.vmap(lambda x: signal.fftconvolve(x, b, "full", axes=axes))(stack)),
        np.stack([ss.fftconvolve(x, b, "full", axes=axes) for x in stack]), rtol=1e-9,
        atol=1e-10)


def test_errors_and_trapezoid(x64):
    with pytest.raises(secant.SecantError, match="mode"):
        signal.convolve(np.ones(3), np.ones(2), "circular")
    with pytest.raises(NotImplementedError, match="boundary"):
        signal.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap")
    y, x = rng.normal(size=(2, 5)), np.sort(rng.normal(size=5))
    np.testing.assert_allclose(np.asarray(integrate.trapezoid(y, x, axis=-1)),
                               si.trapezoid(y, x, axis=-1), rtol=1e-12)

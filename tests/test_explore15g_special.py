"""secant.scipy.special at the edges of its domain (explore15g): +-inf and nan inputs, empty
reductions. Each of these gave a silently wrong value before (nan for erfc(inf), a finite number
for ndtri(nan), ...); values against SciPy, eager and under jit, float64 and float32."""
import numpy as np
import pytest
import scipy.special as ss

import secant
from secant.scipy import special

EDGES = np.array([-np.inf, -40.0, -5.0, -1.0, 0.0, 0.5, 3.0, 9.0, 30.0, 1e10, np.inf, np.nan])


@pytest.mark.parametrize("name", ["erfc", "ndtr", "log_ndtr", "erfcx"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_erfc_family_at_infinity(x64, name, jit):
    # was nan at +-inf: Cephes' rational R(z)/S(z) of erfc's tail evaluated as inf / inf
    f = getattr(special, name)
    f = secant.jit(f) if jit else f
    np.testing.assert_allclose(np.asarray(f(EDGES)), getattr(ss, name)(EDGES), rtol=1e-12,
                               atol=1e-300)


@pytest.mark.parametrize("name", ["erfc", "ndtr", "log_ndtr"])
def test_erfc_family_at_infinity_float32(name):
    x = EDGES.astype(np.float32)
    got = np.asarray(secant.jit(getattr(special, name))(x))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, getattr(ss, name)(x), rtol=2e-5, atol=1e-37)


def test_erfc_family_derivatives_at_infinity(x64):
    # closed forms: erfc' = -2 exp(-x^2) / sqrt(pi), ndtr' = phi(x), log_ndtr' = phi / Phi
    x = np.array([-np.inf, -3.0, 0.5, 30.0, np.inf])
    phi = np.exp(-x * x / 2) / np.sqrt(2 * np.pi)
    want = {"erfc": -2 / np.sqrt(np.pi) * np.exp(-x * x), "ndtr": phi}
    for name, w in want.items():
        d = np.asarray(secant.vmap(secant.grad(getattr(special, name)))(x))
        np.testing.assert_allclose(d, w, rtol=1e-12, atol=1e-300)
    d = np.asarray(secant.vmap(secant.grad(special.log_ndtr))(x[1:]))
    np.testing.assert_allclose(d, phi[1:] / ss.ndtr(x[1:]), rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_nan_propagates(x64, jit):
    # ndtri(nan) was -1.1015 (the tail branch at a clamped y), entr(nan) was -inf,
    # xlogy(0, nan) and xlog1py(0, nan) were 0: SciPy and JAX give nan for all four
    wrap = secant.jit if jit else (lambda f: f)
    p = np.array([np.nan, 0.0, 0.3, 1.0, -0.1, 1.1])
    np.testing.assert_allclose(np.asarray(wrap(special.ndtri)(p)), ss.ndtri(p), rtol=1e-12)
    x = np.array([np.nan, -1.0, 0.0, 0.5])
    np.testing.assert_allclose(np.asarray(wrap(special.entr)(x)), ss.entr(x), rtol=1e-12)
    z = np.array([0.0, 0.0, 0.0, 2.0])
    y = np.array([np.nan, 0.0, 2.0, np.nan])
    np.testing.assert_allclose(np.asarray(wrap(special.xlogy)(z, y)), ss.xlogy(z, y))
    np.testing.assert_allclose(np.asarray(wrap(special.xlog1py)(z, y - 1)), ss.xlog1py(z, y - 1))


def test_xlogy_derivative_at_zero_unchanged(x64):
    # JAX's convention: d/dx xlogy(0, y) = log(y), d/dy = x / y = 0
    dx, dy = secant.grad(special.xlogy, (0, 1))(0.0, 2.0)
    assert float(dx) == pytest.approx(np.log(2.0)) and float(dy) == 0.0


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_logsumexp_of_an_empty_axis(x64, jit):
    # was "zero-size array to reduction operation max": an empty sum is 0, its log -inf (JAX)
    f = lambda a: special.logsumexp(a, axis=0)                      # noqa: E731
    f = secant.jit(f) if jit else f
    np.testing.assert_array_equal(np.asarray(f(np.zeros((0, 3)))), [-np.inf] * 3)
    assert float(special.logsumexp(np.zeros(0))) == -np.inf
    val, sign = special.logsumexp(np.zeros((2, 0)), axis=1, return_sign=True)
    np.testing.assert_array_equal(np.asarray(val), [-np.inf, -np.inf])
    np.testing.assert_array_equal(np.asarray(sign), [0.0, 0.0])

"""secant.numpy edge inputs found by explore15g: NaN in searchsorted/digitize (NumPy's sort
order puts NaN last; secant put a NaN query first, silently), nan_to_num of complex input (each
part, as NumPy; secant zeroed the infinite imaginary part). Against NumPy, eager, jit and vmap."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

SORTED = np.array([0.0, 1, 1, 1, 2, 5])
QUERIES = np.array([-1.0, 0, 1, 1.5, 5, 6, np.nan])


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("method", ["scan", "sort", "compare_all"])
def test_searchsorted_puts_nan_last(x64, side, method):
    want = np.searchsorted(SORTED, QUERIES, side=side)
    f = lambda a, v: snp.searchsorted(a, v, side=side, method=method)      # noqa: E731
    np.testing.assert_array_equal(np.asarray(f(SORTED, QUERIES)), want)
    np.testing.assert_array_equal(np.asarray(secant.jit(f)(SORTED, QUERIES)), want)
    np.testing.assert_array_equal(np.asarray(secant.vmap(f, (None, 0))(SORTED, QUERIES)), want)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_with_nans_in_the_sorted_array(x64, side):
    a = np.array([0.0, 1, np.nan, np.nan])
    v = np.array([0.5, np.nan, 2.0, -np.inf])
    np.testing.assert_array_equal(np.asarray(snp.searchsorted(a, v, side=side)),
                                  np.searchsorted(a, v, side=side))


def test_searchsorted_integers_unchanged():
    a, v = np.array([0, 1, 1, 3]), np.array([1, 4, -1])
    for side in ("left", "right"):
        np.testing.assert_array_equal(np.asarray(snp.searchsorted(a, v, side=side)),
                                      np.searchsorted(a, v, side=side))


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("bins", [SORTED, SORTED[::-1]], ids=["rising", "falling"])
def test_digitize_nan(x64, right, bins):
    np.testing.assert_array_equal(np.asarray(snp.digitize(QUERIES, bins, right=right)),
                                  np.digitize(QUERIES, bins, right=right))


@pytest.mark.parametrize("wrap", ["eager", "jit", "vmap"])
def test_nan_to_num_complex_parts(x64, wrap):
    z = np.array([complex(np.nan, np.inf), complex(-np.inf, 2.0), complex(1.0, -np.inf),
                  complex(np.inf, np.nan), 1 + 1j])
    f = {"eager": snp.nan_to_num, "jit": secant.jit(snp.nan_to_num),
         "vmap": secant.vmap(snp.nan_to_num)}[wrap]
    np.testing.assert_array_equal(np.asarray(f(z)), np.nan_to_num(z))
    g = lambda x: snp.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0)     # noqa: E731
    np.testing.assert_array_equal(np.asarray(secant.jit(g)(z)),
                                  np.nan_to_num(z, nan=1.0, posinf=2.0, neginf=-2.0))


def test_nan_to_num_gradient(x64):
    # d/dx is 1 where x is finite, 0 where it was replaced
    g = secant.grad(lambda x: snp.sum(snp.nan_to_num(x) * 3.0))(np.array([np.nan, 1.0, np.inf]))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 3.0, 0.0])


LAE_A = np.array([np.inf, -np.inf, -np.inf, np.nan, 1.0, np.inf, 0.5])
LAE_B = np.array([np.inf, -np.inf, 1.0, 1.0, np.nan, -np.inf, 2.0])


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
@pytest.mark.parametrize("wrap", ["eager", "jit", "vmap"])
def test_logaddexp_of_equal_infinities(x64, name, wrap):
    # logaddexp(-inf, -inf) was nan (inf - inf in the shift): log-space accumulators start at
    # -inf, so the nan spread silently; NumPy and JAX give -inf (and inf for two infs)
    f = getattr(snp, name)
    f = {"eager": f, "jit": secant.jit(f), "vmap": secant.vmap(f)}[wrap]
    with np.errstate(invalid="ignore"):
        want = getattr(np, name)(LAE_A, LAE_B)
    np.testing.assert_allclose(np.asarray(f(LAE_A, LAE_B)), want, rtol=1e-12)


def test_logaddexp_gradient_unchanged(x64):
    a, b = 0.5, 2.0
    da, db = secant.grad(snp.logaddexp, (0, 1))(a, b)
    s = np.exp(a) + np.exp(b)
    assert float(da) == pytest.approx(np.exp(a) / s) and float(db) == pytest.approx(np.exp(b) / s)


def test_cumlogsumexp_from_minus_infinity(x64):
    x = np.array([-np.inf, -np.inf, 0.0, 1.0])
    with np.errstate(invalid="ignore"):
        want = np.logaddexp.accumulate(x)
    np.testing.assert_allclose(np.asarray(secant.lax.cumlogsumexp(x)), want, rtol=1e-12)


@pytest.mark.parametrize("name", ["relu", "relu6", "hard_sigmoid"])
def test_relu_family_keeps_nan(x64, name):
    # relu(nan) was 0 (where(x > 0, x, 0)): a NaN in the activations vanished silently
    f = getattr(secant.nn, name)
    x = np.array([np.nan, -1.0, 0.0, 3.0, 7.0, -np.inf, np.inf])
    for g in (f, secant.jit(f)):
        out = np.asarray(g(x))
        assert np.isnan(out[0]) and not np.isnan(out[1:]).any()


def test_relu_derivatives_at_the_kinks(x64):
    # JAX's convention kept: relu' = 0 at 0, relu6' = 0 at 0 and at 6
    x = np.array([-1.0, 0.0, 3.0, 6.0, 7.0])
    np.testing.assert_array_equal(np.asarray(secant.vmap(secant.grad(secant.nn.relu))(x)),
                                  [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(np.asarray(secant.vmap(secant.grad(secant.nn.relu6))(x)),
                                  [0, 0, 1, 0, 0])


HYP_A = np.array([3.0, 1e200, 1e-200, np.inf, np.nan, 0.0, -3.0, np.inf, 0.0])
HYP_B = np.array([4.0, 1e200, 1e-200, np.nan, 1.0, 0.0, 4.0, -np.inf, -2.0])


@pytest.mark.parametrize("wrap", ["eager", "jit", "vmap"])
def test_hypot_neither_overflows_nor_underflows(x64, wrap):
    # hypot was sqrt(x^2 + y^2): inf at 1e200 (and at 1e20 in float32), 0 at 1e-200, nan
    # for (inf, nan); NumPy and JAX scale by the larger magnitude
    f = {"eager": snp.hypot, "jit": secant.jit(snp.hypot), "vmap": secant.vmap(snp.hypot)}[wrap]
    np.testing.assert_allclose(np.asarray(f(HYP_A, HYP_B)), np.hypot(HYP_A, HYP_B), rtol=1e-14)


def test_hypot_float32_and_gradient():
    big = np.float32(1e20)
    for f in (snp.hypot, secant.jit(snp.hypot)):
        out = np.asarray(f(big, big))
        assert out.dtype == np.float32 and out == pytest.approx(1.41421356e20, rel=1e-6)
    dx, dy = secant.grad(snp.hypot, (0, 1))(3.0, -4.0)
    assert float(dx) == pytest.approx(0.6) and float(dy) == pytest.approx(-0.8)
    assert float(secant.grad(secant.grad(snp.hypot))(3.0, 4.0)) == pytest.approx(16 / 125)

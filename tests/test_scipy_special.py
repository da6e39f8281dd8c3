"""secant.scipy.special beyond the shared harness (tests/library_cases/scipy_special.py): values
against scipy over hypothesis-drawn domains and at the extremes, stable derivatives in the tails,
JAX's conventions at zero, the derivatives that are refused, jit against eager for the functions
with loops, vmap over the non-differentiated arguments, second derivatives."""
import os

import numpy as np
import pytest
import scipy.special as ss
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import secant
import secant.numpy as snp
from secant.scipy import special

SETTINGS = settings(deadline=None,      # (examples: the profile's, tests/conftest.py)
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def floats(lo, hi):
    return st.lists(st.floats(lo, hi, allow_nan=False, allow_infinity=False), min_size=1,
                    max_size=6).map(np.array)


UNARY = [  # (name, domain, rtol): secant's and scipy's function of one array
    ("erf", (-30, 30), 1e-13), ("erfc", (-30, 26), 1e-12), ("ndtr", (-38, 38), 1e-12),
    ("log_ndtr", (-1e5, 38), 1e-12), ("ndtri", (1e-300, 1 - 1e-16), 1e-12),
    ("i0e", (-1e4, 1e4), 1e-12), ("i1e", (-1e4, 1e4), 1e-12), ("expit", (-700, 700), 1e-13),
    ("logit", (1e-300, 1 - 1e-16), 1e-12), ("gammaln", (1e-3, 1e5), 1e-12),
    ("digamma", (1e-3, 1e5), 1e-11), ("entr", (0, 1e10), 1e-13), ("erfinv", (-0.999, 0.999), 1e-12),
]


@pytest.mark.parametrize("name, domain, rtol", UNARY, ids=[u[0] for u in UNARY])
def test_unary_values_against_scipy(x64, name, domain, rtol):
    @SETTINGS
    @given(floats(*domain))
    def check(x):
        want = getattr(ss, name)(x)
        got = np.asarray(getattr(special, name)(x))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300)
    check()


@SETTINGS
@given(floats(0.01, 400), floats(0, 800))
def test_gammainc_and_gammaincc_against_scipy(x64, a, x):
    a, x = a[:1], x
    np.testing.assert_allclose(special.gammainc(a, x), ss.gammainc(a, x), rtol=1e-10,
                               atol=1e-300)
    np.testing.assert_allclose(special.gammaincc(a, x), ss.gammaincc(a, x), rtol=1e-10,
                               atol=1e-300)


@SETTINGS
@given(floats(1.05, 60), floats(0.01, 50))
def test_zeta_and_polygamma_against_scipy(x64, s, q):
    s = s[:1]
    np.testing.assert_allclose(special.zeta(s, q), ss.zeta(s, q), rtol=1e-12)
    for n in range(4):
        np.testing.assert_allclose(special.polygamma(n, q), ss.polygamma(n, q), rtol=1e-11)


def test_edges_match_scipy(x64):
    a = np.array([1.0, 1.0, 2.0, -1.0, 0.0])
    x = np.array([0.0, np.inf, -1.0, 1.0, 1.0])
    np.testing.assert_array_equal(special.gammainc(a, x), ss.gammainc(a, x))
    np.testing.assert_array_equal(special.gammaincc(a, x), ss.gammaincc(a, x))
    p = np.array([0.0, 1.0, -0.5, 1.5])
    np.testing.assert_array_equal(special.ndtri(p), ss.ndtri(p))
    np.testing.assert_array_equal(special.zeta(np.array([1.0, 0.5, 2.0]), np.array([1.0, 1.0, -2.0])),
                                  [np.inf, np.nan, np.inf])
    np.testing.assert_array_equal(special.entr(np.array([0.0, -1.0])), [0.0, -np.inf])


@pytest.mark.parametrize("x", [-40.0, -1e3, -1e5, -5.0, 0.0, 10.0, 37.0])
def test_log_ndtr_and_its_derivative_in_the_tails(x64, x):
    got = special.log_ndtr(x)
    np.testing.assert_allclose(got, ss.log_ndtr(x), rtol=1e-13)
    # d/dx log Phi(x) = phi(x) / Phi(x) = sqrt(2 / pi) / erfcx(-x / sqrt(2))
    want = np.sqrt(2 / np.pi) / ss.erfcx(-x / np.sqrt(2))
    for g in (secant.grad(special.log_ndtr), secant.jit(secant.grad(special.log_ndtr))):
        np.testing.assert_allclose(g(x), want, rtol=1e-12, atol=1e-300)
    _, tangent = secant.jvp(special.log_ndtr, (np.float64(x),), (np.float64(1.0),))
    np.testing.assert_allclose(tangent, want, rtol=1e-12, atol=1e-300)


def test_log_ndtr_float32_stays_finite_and_float32():
    x = np.array([-40.0, -10.0, 0.0, 5.0], np.float32)
    for fn in (special.log_ndtr, secant.jit(special.log_ndtr)):
        out = fn(x)
        assert np.asarray(out).dtype == np.float32
        np.testing.assert_allclose(out, ss.log_ndtr(x.astype(np.float64)), rtol=1e-5)
    g = secant.grad(lambda x: snp.sum(special.log_ndtr(x)))(x)
    assert np.asarray(g).dtype == np.float32 and np.all(np.isfinite(g))
    np.testing.assert_allclose(g[0], 40.0249, rtol=1e-4)


def test_logsumexp_of_large_values_and_its_gradient(x64):
    a = np.array([[1e4, 1e4 + 1.0, -np.inf], [-1e4, -1e4, -1e4]])
    want = ss.logsumexp(a, axis=1)
    np.testing.assert_allclose(special.logsumexp(a, axis=1), want, rtol=1e-15)
    g = secant.grad(lambda a: snp.sum(special.logsumexp(a, axis=1)))(a)
    shifted = np.exp(a - a.max(axis=1, keepdims=True))
    softmax = shifted / shifted.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(g, softmax, rtol=1e-14)
    np.testing.assert_allclose(secant.jit(secant.grad(lambda a: special.logsumexp(a)))(a[0]),
                               softmax[0], rtol=1e-14)
    # float32: 1e30 does not overflow either
    big = np.array([1e30, 1e30], np.float32)
    assert np.asarray(special.logsumexp(big)).dtype == np.float32
    np.testing.assert_allclose(secant.grad(special.logsumexp)(big), [0.5, 0.5])


def test_logsumexp_b_signs_and_zero_weights(x64):
    a = np.array([1000.0, 2.0, 1.0])
    b = np.array([0.0, 1.0, -2.0])     # the b == 0 term (a huge exponent) counts for nothing
    out, sign = special.logsumexp(a, b=b, return_sign=True)
    want, want_sign = ss.logsumexp(a, b=b, return_sign=True)
    np.testing.assert_allclose(out, want, rtol=1e-14)
    assert sign == want_sign
    assert np.isnan(special.logsumexp(np.array([1.0, 2.0]), b=np.array([1.0, -1.0])))
    assert special.logsumexp(np.array([-np.inf, -np.inf])) == -np.inf
    # d/db_i of log sum b e^a = e^(a_i - out), also at b_i == 0
    a = np.array([0.5, 2.0, 1.0])
    b = np.array([0.0, 1.0, 2.0])
    g = secant.grad(lambda b: special.logsumexp(a, b=b))(b)
    np.testing.assert_allclose(g, np.exp(a - ss.logsumexp(a, b=b)), rtol=1e-14)


def test_logsumexp_dot_product_identity(x64):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 4)), rng.uniform(0.5, 2, (3, 4))
    v, u = rng.normal(size=(3, 4)), rng.normal(size=3)
    f = lambda a: special.logsumexp(a, axis=1, b=b)    # noqa: E731
    _, jv = secant.jvp(f, (a,), (v,))
    _, pullback = secant.vjp(f, a)
    jtu, = pullback(u)
    np.testing.assert_allclose(np.dot(u, jv), np.sum(jtu * v), rtol=1e-12)


def test_logsumexp_hessian_is_diag_softmax_minus_outer(x64):
    a = np.array([0.3, -1.0, 2.0])
    s = np.exp(a - ss.logsumexp(a))
    np.testing.assert_allclose(secant.hessian(special.logsumexp)(a),
                               np.diag(s) - np.outer(s, s), rtol=1e-12, atol=1e-15)


def test_xlogy_and_xlog1py_follow_jax_at_zero(x64):
    assert special.xlogy(0.0, 0.0) == 0.0 and special.xlog1py(0.0, -1.0) == 0.0
    gx, gy = secant.grad(special.xlogy, argnums=(0, 1))(0.0, 2.0)
    assert gx == np.log(2.0) and gy == 0.0
    gx, gy = secant.grad(special.xlog1py, argnums=(0, 1))(0.0, 2.0)
    assert gx == np.log1p(2.0) and gy == 0.0
    gx, gy = secant.grad(special.xlogy, argnums=(0, 1))(3.0, 2.0)
    np.testing.assert_allclose([gx, gy], [np.log(2.0), 1.5])


def test_entr_derivative(x64):
    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(secant.grad(lambda x: snp.sum(special.entr(x)))(x),
                               -(1 + np.log(x)))
    assert secant.grad(special.entr)(0.0) == np.inf


# (each example runs gammainc's derivative loops eagerly under vmap and compiles the jitted
# one for its x's size: 16 CPU s for the default profile's 25 examples, so 10 there; the
# thorough profile's 10,000 as every property)
@settings(SETTINGS, max_examples=(settings().max_examples
                                  if os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
                                  else min(10, settings().max_examples)))
@given(st.floats(0.01, 300), floats(1e-3, 3))
def test_gammainc_derivative_in_a_against_scipy_finite_differences(x64, a, x):
    """d/da P(a, x) against Richardson-extrapolated central differences of scipy's P (of Q where
    P is near 1, so the difference resolves)."""
    x = x * max(a, 1.0)

    def fd(f, h):
        return (f(a + h, x) - f(a - h, x)) / (2 * h)

    def richardson(f):
        return (4 * fd(f, 1e-4 * a) - fd(f, 2e-4 * a)) / 3

    want = np.where(ss.gammainc(a, x) < 0.5, richardson(ss.gammainc), -richardson(ss.gammaincc))
    got = secant.vmap(secant.grad(special.gammainc), in_axes=(None, 0))(a, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-250)
    got = secant.jit(secant.vmap(secant.grad(special.gammaincc), in_axes=(None, 0)))(a, x)
    np.testing.assert_allclose(got, -want, rtol=1e-5, atol=1e-250)


@pytest.mark.parametrize("fn, argnums, name", [
    (lambda s, q: special.zeta(s, q), 0, "x"),
    (lambda n, x: special.polygamma(n, x), 0, "n"),
])
def test_missing_derivatives_are_errors_naming_the_argument(x64, fn, argnums, name):
    with pytest.raises(secant.SecantError, match=f"with respect to {name}"):
        secant.grad(fn, argnums=argnums)(2.0, 1.5)
    with pytest.raises(secant.SecantError, match=f"with respect to {name}"):
        secant.jvp(fn, (2.0, 1.5), (1.0, 0.0))


@pytest.mark.parametrize("fn", [special.gammainc, special.gammaincc, special.zeta,
                                lambda a, x: special.polygamma(snp.floor(a), x)],
                         ids=["gammainc", "gammaincc", "zeta", "polygamma"])
def test_jit_and_vmap_over_the_nondifferentiated_argument(x64, fn):
    a = np.array([[1.5, 3.0, 20.0], [2.2, 1.3, 7.0]])
    x = np.array([[0.3, 4.0, 25.0], [1.0, 2.0, 3.0]])
    eager = fn(a, x)
    np.testing.assert_allclose(secant.jit(fn)(a, x), eager, rtol=1e-13)
    loop = np.stack([np.asarray(fn(a[i], x[i])) for i in range(2)])
    np.testing.assert_allclose(secant.vmap(fn)(a, x), loop, rtol=1e-13)
    np.testing.assert_allclose(secant.vmap(fn, in_axes=(0, None))(a, x[0]),
                               np.stack([np.asarray(fn(a[i], x[0])) for i in range(2)]),
                               rtol=1e-13)
    # per-example gradients in x, batched a
    g = secant.vmap(secant.grad(lambda a, x: snp.sum(fn(a, x)), argnums=1))(a, x)
    eps = 1e-6
    fd = (np.asarray(fn(a, x + eps)) - np.asarray(fn(a, x - eps))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["log_ndtr", "i0e", "i1e", "erfc", "ndtri"])
def test_second_derivatives_against_finite_differences(x64, name):
    fn = getattr(special, name)
    x = np.array([0.3, 0.7]) if name == "ndtri" else np.array([-3.0, -0.4, 0.8, 9.0])
    d1 = secant.grad(lambda x: snp.sum(fn(x)))
    d2 = secant.grad(lambda x: snp.sum(d1(x)))(x)
    eps = 1e-5
    fd = (np.asarray(d1(x + eps)) - np.asarray(d1(x - eps))) / (2 * eps)
    np.testing.assert_allclose(d2, fd, rtol=1e-6, atol=1e-10)


def test_generated_source_calls_the_rules_by_name():
    def loss(x, y):
        return snp.sum(special.xlogy(x, y) + special.log_ndtr(x))

    text = secant.source(secant.grad(loss))
    assert "log_ndtr_vjp(" in text and "xlogy_vjp(" in text
    assert "dynamic_call" not in text

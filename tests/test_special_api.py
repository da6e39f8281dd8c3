"""jax.scipy.special's gamma, gammasgn, loggamma, beta, factorial, comb, poch, rel_entr,
kl_div, softmax and log_softmax: values against SciPy in float64, eagerly and under jit,
gradients against central differences, vmap against a loop."""
import numpy as np
import pytest
import scipy.special as sp

import secant
import secant.numpy as snp
from secant.scipy import special as S

x = np.array([0.3, 1.7, 4.2, -0.5, -2.5, 7.0])
y = np.array([0.6, 2.2, 1.5, 0.8, 3.3, 0.4])
W = np.arange(1, 7)
CASES = {
    "gamma": (lambda a: S.gamma(a), x, lambda a: sp.gamma(a)),
    "gammasgn": (lambda a: S.gammasgn(a), x, lambda a: sp.gammasgn(a)),
    "loggamma": (lambda a: S.loggamma(a), y, lambda a: sp.loggamma(a)),
    "beta": (lambda a: S.beta(a, y), x, lambda a: sp.beta(a, y)),
    "factorial": (lambda a: S.factorial(a), y * 3, lambda a: sp.gamma(a + 1)),
    "comb": (lambda a: S.comb(a, y), y * 4, lambda a: sp.comb(a, y)),
    "comb_rep": (lambda a: S.comb(a, y, repetition=True), y * 4,
                 lambda a: sp.comb(a, y, repetition=True)),
    "poch": (lambda a: S.poch(a, y), y + 0.1, lambda a: sp.poch(a, y)),
    "rel_entr": (lambda a: S.rel_entr(a, y), y * 0.7, lambda a: sp.rel_entr(a, y)),
    "kl_div": (lambda a: S.kl_div(a, y), y * 0.7, lambda a: sp.kl_div(a, y)),
    "softmax": (lambda a: S.softmax(a), x, lambda a: sp.softmax(a)),
    "log_softmax": (lambda a: S.log_softmax(a), x, lambda a: sp.log_softmax(a)),
}


def _fd(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = np.sum((f(x + e) - f(x - e)) * W) / (2 * h)
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_gradients_and_vmap(name, x64):
    f, a, ref = CASES[name]
    np.testing.assert_allclose(np.asarray(f(a)), ref(a), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(secant.jit(f)(a)), ref(a), rtol=1e-10)
    if name != "gammasgn":
        g = secant.grad(lambda a: snp.sum(f(a) * W))(a)
        np.testing.assert_allclose(np.asarray(g), _fd(ref, a), rtol=1e-6, atol=1e-8)
    batched = secant.vmap(f)(np.stack([a, a + 0.25]))
    np.testing.assert_allclose(np.asarray(batched), np.stack([ref(a), ref(a + 0.25)]),
                               rtol=1e-10)


def test_edges_are_scipys(x64):
    poles = np.array([0.0, -0.0, -1.0, -2.0, np.nan, np.inf])
    np.testing.assert_array_equal(np.asarray(S.gammasgn(poles)), sp.gammasgn(poles))
    np.testing.assert_array_equal(np.asarray(S.loggamma(np.array([-1.5, 0.0]))),
                                  [np.nan, np.nan])
    p, q = np.array([0.0, 0.0, 1.0, -1.0]), np.array([1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(np.asarray(S.rel_entr(p, q)), sp.rel_entr(p, q))
    np.testing.assert_array_equal(np.asarray(S.comb(3.0, np.array([-1.0, 4.0]))), [0.0, 0.0])
    assert float(S.factorial(-2.0)) == 0.0
    with pytest.raises(NotImplementedError):
        S.factorial(3, exact=True)


def test_signbit_and_copysign_read_the_sign_bit():
    # regression: both compared x < 0, so -0.0 (and a negative nan) read as positive
    a = np.array([0.0, -0.0, -2.0, np.nan, -np.nan, np.inf], np.float32)
    for fn in (snp.signbit, secant.jit(snp.signbit)):
        np.testing.assert_array_equal(np.asarray(fn(a)), np.signbit(a))
    for fn in (snp.copysign, secant.jit(snp.copysign)):
        np.testing.assert_array_equal(np.asarray(fn(1.0, a)), np.copysign(1.0, a))
    np.testing.assert_array_equal(np.asarray(snp.signbit(a.astype(np.float16))), np.signbit(a))
    assert float(secant.grad(lambda x: snp.copysign(x, -0.0))(2.0)) == -1.0

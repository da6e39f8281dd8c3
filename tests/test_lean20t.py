"""Issue 20: jit(grad(f)) at float32's extremes agrees with eager where the derivative divides a
quotient again (ad/reverse.py _quotients_not_divided_again): XLA rewrites (a / b) / c into
a / (b * c), and b * c overflows where neither quotient does."""
import numpy as np

import secant
import secant.numpy as snp
from test_lean20c import fd_grad


def gaussian_loglik(mu, log_sigma, x):
    z = (x - mu) / snp.exp(log_sigma)
    return snp.sum(-0.5 * z * z - log_sigma - 0.5 * snp.log(2 * snp.pi))


def scaled_square(x, s):
    z = x / s
    return snp.sum(z * z)


def _extremes():
    mu = np.zeros(3, np.float32)
    log_sigma = np.array([50.0, 40.0, 1.0], np.float32)
    x = np.full((4, 3), 1e30, np.float32)
    x[:, 2] = 2.0
    return mu, log_sigma, x


def test_gaussian_jit_matches_eager_at_float32_extremes():
    mu, log_sigma, x = _extremes()
    g = secant.grad(gaussian_loglik)
    eager = np.asarray(g(mu, log_sigma, x))
    jitted = np.asarray(secant.jit(g)(mu, log_sigma, x))
    # the closed form: sum over the samples of (x - mu) / sigma^2, in float64
    want = ((x.astype(np.float64) - mu) / np.exp(2.0 * log_sigma.astype(np.float64))).sum(0)
    np.testing.assert_allclose(eager, want, rtol=1e-5)
    assert want[0] > 1e-13 and np.all(jitted != 0)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)


def test_gaussian_gradient_is_still_right(x64):
    rng = np.random.default_rng(20)
    mu, log_sigma, x = rng.normal(size=3), rng.normal(size=3) * 0.3, rng.normal(size=(4, 3))
    g = secant.grad(gaussian_loglik)(mu, log_sigma, x)
    want = fd_grad(lambda m: gaussian_loglik(m, log_sigma, x), mu)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(gaussian_loglik))(
        mu, log_sigma, x)), want, rtol=1e-6, atol=1e-8)


def test_scaled_square_jit_matches_eager_at_float32_extremes():
    x = np.array([1e30, 3e29, 2.0], np.float32)
    s = np.array([1e21, 2e21, 3.0], np.float32)
    g = secant.grad(scaled_square)
    eager = np.asarray(g(x, s))
    want = 2 * x.astype(np.float64) / s.astype(np.float64) ** 2
    np.testing.assert_allclose(eager, want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(x, s)), eager, rtol=1e-5)

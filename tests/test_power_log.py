"""d(x ** y)/dy at x = 0: JAX's convention, 0 (x ** y is 0 there for y > 0), where the plain
rule x ** y * log(x) gave 0 * -inf = nan (found by explore15g). Fails before: nan at x = 0."""
import numpy as np

import secant
import secant.numpy as snp


def _fd(f, y, h=1e-6):
    return (f(y + h) - f(y - h)) / (2 * h)


def test_exponent_derivative_at_a_zero_base_is_zero_as_jax(x64):
    x = np.array([0.0, 2.0, 0.5])
    y = np.array([2.0, 1.5, 3.0])
    f = lambda x, y: snp.sum(x ** y)  # noqa: E731
    expected = np.array([0.0] + [_fd(lambda t: x[i] ** t, y[i]) for i in (1, 2)])
    for g in (secant.grad(f, 1), secant.jit(secant.grad(f, 1))):
        np.testing.assert_allclose(np.asarray(g(x, y)), expected, rtol=1e-7)
    _, tangent = secant.jvp(lambda y: f(x, y), (y,), (np.ones(3),))
    np.testing.assert_allclose(float(tangent), expected.sum(), rtol=1e-7)
    batched = secant.vmap(secant.grad(lambda x, y: x ** y, 1))(x, y)
    np.testing.assert_allclose(np.asarray(batched), expected, rtol=1e-7)


def test_second_order_in_the_exponent(x64):
    for base in (0.0, 3.0):
        g2 = secant.grad(secant.grad(lambda y: base ** y))(2.0)
        expected = 0.0 if base == 0 else np.log(base) ** 2 * base ** 2
        np.testing.assert_allclose(float(g2), expected, rtol=1e-12)

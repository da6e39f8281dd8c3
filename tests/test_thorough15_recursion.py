"""Regression tests from the thorough composition sweep (issue 15): a recursive function with
a default argument under forward mode twice. Its jvp's tangents are keyword-only
(power_jvp(x, n=3, *, x_dot)); the jvp of that jvp, differentiating x_dot too, asks for the
placeholder of its own recursive call with a keyword-only parameter among the ones it
differentiates (it raised IndexError)."""
import numpy as np

import secant
import secant.numpy as snp


def power(x, n=3):
    if n == 0:
        return snp.ones_like(x)
    return snp.sin(x) * power(x, n - 1)


def _fd(fn, x, h=1e-5):
    return (fn(x + h) - fn(x - h)) / (2 * h)


def test_jvp_of_jvp_of_recursive_function_with_default(x64):
    x = np.array([0.3, -0.7, 1.1])

    def first(y):
        return secant.jvp(power, (y,), (snp.ones_like(y),))[1]

    def second(y):
        return secant.jvp(first, (y,), (snp.ones_like(y),))[1]

    first_fd = lambda y: _fd(lambda z: np.sin(z) ** 3, y)       # noqa: E731
    np.testing.assert_allclose(np.asarray(first(snp.asarray(x))), first_fd(x), rtol=1e-7)
    np.testing.assert_allclose(np.asarray(second(snp.asarray(x))), _fd(first_fd, x, 1e-4),
                               rtol=1e-5, atol=1e-6)



def nested_stack(items, depth=1):
    """As batching's stack_examples: a recursive helper with a default."""
    return snp.stack([nested_stack(a, depth) if isinstance(a, list) else a for a in items])


def test_jvp_of_jvp_of_recursive_helper_with_default(x64):
    """The sweep's vmap/jvp/jvp of list_append: the outer jvp differentiates the recursion's
    own jvp (nested_stack_jvp(items, depth=1, *, items_dot)) in items and items_dot: the
    placeholder of its recursive call read the keyword-only items_dot's position."""
    x = np.array([0.3, -0.7, 1.1])

    def f(y):
        return snp.sum(nested_stack([[y, y * y], [snp.sin(y), y]]) ** 2, axis=(0, 1))

    def f_np(y):
        return np.sum(np.array([[y, y * y], [np.sin(y), y]]) ** 2, axis=(0, 1))

    def first(y):
        return secant.jvp(f, (y,), (snp.ones_like(y),))[1]

    def second(y):
        return secant.jvp(first, (y,), (snp.ones_like(y),))[1]

    first_fd = lambda y: _fd(f_np, y)       # noqa: E731
    np.testing.assert_allclose(np.asarray(second(snp.asarray(x))), _fd(first_fd, x, 1e-4),
                               rtol=1e-5, atol=1e-6)

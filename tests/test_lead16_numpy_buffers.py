"""Issue 15: a NumPy buffer built from constants and shapes, then filled in place (`f =
np.full(n, 2.0); f[0] = 1.0`), as JAX code writes it (NumPy runs on constants there). Was
silently wrong in a helper (the derivative replayed f's constructor but not the store: gradient
[6, 6, 6] for [3, 6, 6]) and refused at the top level (np.full was read as secant.numpy's,
whose arrays take no item stores). Values against closed forms, float64 central differences,
a Python loop (vmap) and eager (jit)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def _weights(x):
    f = np.full(x.shape[0], 2.0)
    f[0] = 1.0
    return x * f * 3.0


def top(x):
    f = np.full(x.shape[0], 2.0)
    f[0] = 1.0
    return snp.sum(snp.sin(x) * f)


def in_helper(x):
    return snp.sum(_weights(x) * x)


def helper_of_helper(x):
    return snp.sum(snp.tanh(_weights(x)))


def loop_filled(x):
    n = snp.shape(x)[0]
    w = np.zeros(n)
    for i in range(n):
        w[i] = i + 1.0
    w[1:] += 0.5
    return snp.sum(w * x ** 2)


def two_d(x):
    m = np.eye(len(x))
    m[0, :] = 2.0
    m[:, -1] -= 1.0
    return snp.sum((m @ x) ** 2)


PROGRAMS = [top, in_helper, helper_of_helper, loop_filled, two_d]


def _python(f, x):
    """The program run by NumPy alone (snp calls as NumPy's)."""
    return float(f(np.asarray(x, dtype=np.float64)))


def _fd_grad(f, x, eps=1e-6):
    return np.array([(_python(f, x + eps * e) - _python(f, x - eps * e)) / (2 * eps)
                     for e in np.eye(len(x))])


X = np.array([0.3, -0.7, 1.1, 0.5])


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_grad_jvp_hessian(x64, f):
    g = _fd_grad(f, X)
    np.testing.assert_allclose(secant.grad(f)(X), g, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(X), g, rtol=1e-6, atol=1e-8)
    v = np.array([1.0, 0.5, -0.25, 2.0])
    np.testing.assert_allclose(secant.jvp(f, (X,), (v,))[1], g @ v, rtol=1e-6, atol=1e-8)
    h = np.array([(_fd_grad(f, X + 1e-4 * e) - _fd_grad(f, X - 1e-4 * e)) / 2e-4
                  for e in np.eye(4)])
    np.testing.assert_allclose(secant.hessian(f)(X), h, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_and_jit(x64, f):
    xs = np.stack([X, -X, 2 * X])
    want = [_python(f, x) for x in xs]
    np.testing.assert_allclose(secant.vmap(f)(xs), want, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(f)(X), want[0], rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.grad(f))(xs),
                               [_fd_grad(f, x) for x in xs], rtol=1e-6, atol=1e-8)


def test_the_closed_form_of_the_helper_case(x64):
    g = secant.grad(lambda s: snp.sum(_weights(s)))(np.arange(3.0))
    np.testing.assert_allclose(g, [3.0, 6.0, 6.0])


def test_the_store_is_shown_in_the_derivative(x64):
    src = secant.source(secant.grad(top))
    assert "f = np.full(x.shape[0], 2.0)\n    f[0] = 1.0" in src


def test_a_buffer_made_from_a_differentiated_value_is_refused(x64):
    """np.full(n, x) of a differentiated x would be NumPy's copy of x's value, its derivative
    lost: secant.numpy's full is kept there, and the store into it is refused."""
    def f(x):
        b = np.full(3, x)
        b[0] = 1.0
        return snp.sum(b * x)
    with pytest.raises(secant.SecantError, match="immutable|in place"):
        secant.grad(f)(0.5)

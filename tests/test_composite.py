"""Library functions differentiated through their source (secant/numpy/composite.py): the
transforms read a function written with secant.numpy's ops, so the derivatives and batched
forms of a composite follow from its ops. Checked here on snp.roll against float64 finite
differences, a Python loop, eager runs and the closed-form Jacobian (a permutation)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

SHAPE = (3, 4)
CASES = [(1, None), (-2, None), (1, 0), (5, 1), ((1, 2), (0, 1)), (2, (0, 1))]


def _fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


@pytest.mark.parametrize("shift,axis", CASES)
def test_roll_grad_against_finite_differences(x64, shift, axis):
    w = np.arange(12.0).reshape(SHAPE)
    x = np.linspace(-1.0, 1.0, 12).reshape(SHAPE)

    def f(x):
        return snp.sum(snp.roll(snp.sin(x), shift, axis) * w)

    want = _fd_grad(lambda v: float(np.sum(np.roll(np.sin(v), shift, axis) * w)), x)
    np.testing.assert_allclose(secant.grad(f)(x), want, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(x), want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("shift,axis", CASES)
def test_roll_jacobians_are_its_permutation(shift, axis):
    x = np.arange(12.0, dtype=np.float32).reshape(SHAPE)
    perm = np.roll(np.arange(12).reshape(SHAPE), shift, axis).ravel()
    want = np.eye(12, dtype=np.float32)[perm].reshape(SHAPE + SHAPE)
    fn = lambda x: snp.roll(x, shift, axis)       # noqa: E731
    np.testing.assert_array_equal(secant.jacrev(fn)(x), want)
    np.testing.assert_array_equal(secant.jacfwd(fn)(x), want)
    out, tangent = secant.jvp(fn, (x,), (2 * x,))
    np.testing.assert_array_equal(out, np.roll(x, shift, axis))
    np.testing.assert_array_equal(tangent, np.roll(2 * x, shift, axis))


@pytest.mark.parametrize("shift,axis", CASES)
def test_roll_vmap_against_a_loop(shift, axis):
    xs = np.arange(24.0, dtype=np.float32).reshape((2,) + SHAPE)
    want = np.stack([np.roll(x, shift, axis) for x in xs])
    np.testing.assert_array_equal(secant.vmap(lambda x: snp.roll(x, shift, axis))(xs), want)
    np.testing.assert_array_equal(secant.vmap(snp.roll, (0, None, None))(xs, shift, axis), want)


def test_roll_second_order_closed_form():
    # f = 2 x0^3 + x2^3 (roll by -1 puts x1, x2, x0 against weights 0, 1, 2)
    f = lambda x: snp.sum(snp.roll(x ** 3, -1) * snp.arange(3.0))     # noqa: E731
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(secant.hessian(f)(x), np.diag([12 * 1.0, 0.0, 6 * 3.0]))
    np.testing.assert_allclose(secant.grad(f)(x), [6.0, 0.0, 27.0])


def test_generated_code_calls_the_composite_by_its_name():
    f = lambda x: snp.sum(snp.roll(x, 1) * snp.arange(3.0))     # noqa: E731
    src = secant.source(secant.grad(f))
    assert "roll_out = snp.roll(x, 1)" in src
    assert "return roll_vjp(" in src

"""secant.custom_gradient as jax.custom_gradient: fun returns (value, vjp); the vjp's
cotangents are what grad gives (not the derivative of the value), under jit too; jvp is JAX's
error; vmap and second derivatives follow the rule (issue 15)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


@secant.custom_gradient
def scaled_sin(x):
    def vjp(g):
        return 2.0 * g * snp.cos(x)         # twice the true derivative: a rule of its own
    return snp.sin(x), vjp


@secant.custom_gradient
def product(x, y):
    return x * y, lambda g: (g * y, 3.0 * g * x)


@secant.custom_gradient
def clip_gradient(x):
    def vjp(g):
        return snp.clip(g, -0.5, 0.5)
    return x, vjp


def _loss(x):
    return snp.sum(scaled_sin(x) ** 2)


def test_value_and_rule(x64):
    x = 0.7
    np.testing.assert_allclose(scaled_sin(x), np.sin(x), rtol=1e-12)
    np.testing.assert_allclose(secant.grad(scaled_sin)(x), 2 * np.cos(x), rtol=1e-12)
    gx, gy = secant.grad(product, argnums=(0, 1))(2.0, 5.0)
    assert (float(gx), float(gy)) == (5.0, 6.0)
    value, g = secant.value_and_grad(product)(2.0, 5.0)
    assert (float(value), float(g)) == (10.0, 5.0)
    out, vjp_fn = secant.vjp(product, 2.0, 5.0)
    assert tuple(float(c) for c in vjp_fn(1.0)) == (5.0, 6.0)
    np.testing.assert_allclose(secant.grad(lambda x: 10.0 * clip_gradient(x))(1.0), 0.5)


def test_grad_of_a_caller_jit_and_chain_rule(x64):
    x = np.array([0.1, 0.5, -0.9])
    want = 2 * np.sin(x) * 2 * np.cos(x)            # (the rule's factor 2 included)
    np.testing.assert_allclose(secant.grad(_loss)(x), want, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.grad(_loss))(x), want, rtol=1e-12)
    np.testing.assert_allclose(secant.grad(secant.jit(_loss))(x), want, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(scaled_sin)(x), np.sin(x), rtol=1e-12)


def test_jvp_is_an_error_as_in_jax():
    with pytest.raises(secant.SecantError, match="forward-mode"):
        secant.jvp(scaled_sin, (0.7,), (1.0,))


def test_vmap_and_second_derivative_follow_the_rule(x64):
    # (issue 15: the vjp function is closure-converted, as JAX does; tests/test_sci15_*)
    xs = np.array([0.1, 0.2])
    np.testing.assert_allclose(secant.vmap(secant.grad(scaled_sin))(xs), 2 * np.cos(xs),
                               rtol=1e-12)
    np.testing.assert_allclose(secant.grad(secant.grad(scaled_sin))(0.7), -2 * np.sin(0.7),
                               rtol=1e-12)


def test_bad_functions():
    with pytest.raises(secant.SecantError, match="expects a function"):
        secant.custom_gradient(3)
    with pytest.raises(secant.SecantError, match="positional"):
        secant.custom_gradient(lambda *xs: (xs[0], lambda g: g))

"""items15n: `named_call(f, name=...)(x)` is read as `f(x)` only where named_call is secant's
own (an identity test of the resolved callee), never a user function that merely carries its
name and module (a wrapper made with functools.wraps(secant.named_call)). Gradients against
float64 central differences, batched values against a Python loop.
"""
import functools

import numpy as np
import pytest

import secant
import secant.numpy as jnp


@functools.wraps(secant.named_call)     # its __name__ and __module__ are secant's
def named_call(fun, *, name=None):
    def doubled(x):
        return 2.0 * fun(x)
    return doubled


def _block(x):
    return jnp.sin(x) * x


def secants(x):
    return jnp.sum(secant.named_call(_block, name="block")(x))


def users(x):
    return jnp.sum(named_call(_block, name="block")(x))


def _fd(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])


X = np.array([0.3, -0.8, 1.1])


@pytest.mark.parametrize("program, scale", [(secants, 1.0), (users, 2.0)])
def test_grad(x64, program, scale):
    want = scale * (np.sin(X) + X * np.cos(X))
    np.testing.assert_allclose(_fd(program, X), want, rtol=1e-6)
    np.testing.assert_allclose(secant.grad(program)(X), want, rtol=1e-10)


@pytest.mark.parametrize("program, scale", [(secants, 1.0), (users, 2.0)])
def test_vmap(x64, program, scale):
    xs = np.stack([X, 1.5 * X])
    np.testing.assert_allclose(secant.vmap(program)(xs), [program(a) for a in xs], rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(program)(xs), scale * np.sum(np.sin(xs) * xs, 1),
                               rtol=1e-12)


def test_only_secants_named_call_is_read_as_its_function():
    from secant.transformer.normalize import _is_named_call
    assert _is_named_call(secant.named_call)
    assert not _is_named_call(named_call)

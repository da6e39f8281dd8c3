"""Issue 15, section 1: the source secant transforms is the live function's own, and the
generated code reads what the user's code reads when it runs. Each case is a regression test
for a silently wrong value: decorators (`__wrapped__` never followed), closure cells and globals
read at run time (never frozen into a cached derivative), a file edited after import, names
the generated code uses for itself that a user's name shadowed, and functions with no source."""
import functools

import numpy as np
import pytest

import secant
import secant.numpy as snp


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# --- 1. decorators: the function passed is transformed, not the one it wraps ------------------
def _double(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return fn(x) * 2.0
    return wrapper


@_double
def _square_doubled(x):
    return x * x


def _scaled(s):             # a decorator with arguments
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(x):
            return fn(x) * s
        return wrapper
    return deco


@_scaled(3.0)
def _sin_tripled(x):
    return snp.sin(x)


def _plus_cx(fn):           # the wrapper takes more parameters than the function it wraps
    @functools.wraps(fn)
    def wrapper(x, c):
        return fn(x) + c * x
    return wrapper


@_plus_cx
def _cube(x):
    return x ** 3


def test_grad_of_wraps_decorated_function_is_the_wrappers():
    assert _square_doubled(3.0) == 18.0
    close(secant.grad(_square_doubled)(3.0), 12.0)          # d/dx 2x^2, not 2x
    close(secant.jit(secant.grad(_square_doubled))(3.0), 12.0)
    xs = np.array([1.0, 2.0, -0.5], np.float32)
    close(secant.vmap(_square_doubled)(xs), 2 * xs ** 2)
    close(secant.vmap(secant.grad(_square_doubled))(xs), 4 * xs)
    jvp_out = secant.jvp(_square_doubled, (3.0,), (1.0,))
    close(jvp_out[0], 18.0)
    close(jvp_out[1], 12.0)


def test_grad_of_decorator_with_arguments():
    x = 0.7
    close(secant.grad(_sin_tripled)(x), 3.0 * np.cos(x))
    close(secant.jit(secant.grad(_sin_tripled))(x), 3.0 * np.cos(x))
    xs = np.array([0.1, 0.5, 1.5], np.float32)
    close(secant.vmap(secant.grad(_sin_tripled))(xs), 3.0 * np.cos(xs))


def test_wrapper_with_its_own_signature():
    x, c = 1.5, 2.0
    close(secant.grad(_plus_cx(_cube.__wrapped__))(x, c), 3 * x ** 2 + c)
    close(secant.grad(_cube, argnums=(0, 1))(x, c), (3 * x ** 2 + c, x))
    close(secant.jit(secant.grad(_cube, argnums=1))(x, c), x)


def test_decorated_callee_inside_a_function():
    def loss(x):
        return _square_doubled(x) + x
    close(secant.grad(loss)(3.0), 13.0)
    close(secant.jit(secant.grad(loss))(3.0), 13.0)

"""Issue 15: a def or a lambda assigned inside a loop's or a branch's body (an RK4 step's
`f = lambda y: -k * y + jnp.sin(y)` per iteration), and lambdas assigned by an annotated or
a tuple assignment: hoisted and lifted as a top-level nested function is (transformer/
desugar.py), the closure reading its free names when called, as Python does. Each under grad
and jvp against float64 finite differences, and vmap(grad) against a Python loop."""
import contextlib

import numpy as np
import pytest

import secant
import secant.numpy as jnp


def def_in_if(k):
    y = 1.0
    if k > 0:
        def f(y):
            return k * jnp.sin(y)
        y = f(y) + f(2 * y)
    return y


def lambda_in_while(k):
    y, i = 1.0, 0
    while i < 3:
        f = lambda y: y * k + jnp.cos(y)
        y = f(y)
        i += 1
    return y


def lambda_in_nested_loops(k):
    y = 1.0
    for i in range(2):
        for j in range(2):
            f = lambda y: y * k + i - j
            y = jnp.sin(f(y))
    return y


def lambda_reading_the_loop_variable(k):
    y = k
    for i in range(3):
        f = lambda y: y * (i + 1)       # i when f is called: this iteration's
        y = jnp.sin(f(y))
    return y


def lambda_reading_a_later_value(k):
    y = k
    for _ in range(2):
        f = lambda y: y * scale          # scale assigned after f, read when f is called
        scale = jnp.cos(y)
        y = f(y) + 1.0
    return y


def lambda_in_with(k):
    with contextlib.nullcontext():
        f = lambda y: y * k
        y = f(k)
    return y


def annotated_lambda(k):
    f: object = lambda y: y * k
    return f(jnp.sin(k))


def lambdas_by_tuple(k):
    f, g = lambda y: y * k, lambda y: y + jnp.exp(k)
    return f(g(k))


PROGRAMS = [def_in_if, lambda_in_while, lambda_in_nested_loops, lambda_reading_the_loop_variable,
            lambda_reading_a_later_value, lambda_in_with, annotated_lambda, lambdas_by_tuple]


def fd(f, x, h=1e-6):
    return (float(f(x + h)) - float(f(x - h))) / (2 * h)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_function_defined_in_a_block(x64, f):
    x = 0.7
    want = fd(f, x)
    np.testing.assert_allclose(secant.grad(f)(x), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jvp(f, (x,), (1.0,))[1], want, rtol=1e-6)
    xs = np.array([0.7, 0.3, 1.2])
    np.testing.assert_allclose(secant.vmap(secant.grad(f))(jnp.asarray(xs)),
                               [float(secant.grad(f)(v)) for v in xs], rtol=1e-10)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(x), want, rtol=1e-6)

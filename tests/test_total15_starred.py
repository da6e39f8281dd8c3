"""Starred calls and defaults under every transform (issue 15): `f(*args)` with tracked values
held in a tuple/list display, `f(**kw)` of a dict display, into `def f(x, *rest, scale=2.0)`;
checked against closed forms, float64 finite differences, a Python loop and eager."""
import numpy as np
import pytest

import secant.numpy as snp
from secant import grad, jit, jvp, vmap


def fs(x, *rest, scale=2.0):
    return scale * x * sum(rest)


def literal(x):
    return fs(*(x, x * x, 3.0))                 # 2 x (x^2 + 3)


def named_tuple_display(x):
    args = (x, x * x, 3.0)
    return fs(*args)                            # 2 x (x^2 + 3)


def list_then_more(x):
    args = [x, x * x]
    return fs(*args, 3.0, scale=x)              # x^2 (x^2 + 3)


def keywords_display(x):
    kw = {"scale": snp.sin(x)}
    return fs(x, x, **kw)                       # x^2 sin x


CASES = {literal: lambda x: 2 * x * (x * x + 3),
         named_tuple_display: lambda x: 2 * x * (x * x + 3),
         list_then_more: lambda x: x * x * (x * x + 3),
         keywords_display: lambda x: x * x * np.sin(x)}


def _d(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("fn", list(CASES), ids=lambda f: f.__name__)
def test_starred_under_transforms(x64, fn):
    ref = CASES[fn]
    xs = np.array([0.5, -1.2, 0.9])
    for x in xs:
        np.testing.assert_allclose(fn(x), ref(x), rtol=1e-12)
        np.testing.assert_allclose(grad(fn)(x), _d(ref, x), rtol=1e-8)
        np.testing.assert_allclose(grad(grad(fn))(x), _d(lambda y: _d(ref, y, 1e-4), x, 1e-4),
                                   rtol=1e-5)
        np.testing.assert_allclose(jvp(fn, (x,), (1.0,))[1], _d(ref, x), rtol=1e-8)
        np.testing.assert_allclose(jit(fn)(x), ref(x), rtol=1e-12)
    np.testing.assert_allclose(vmap(fn)(xs), [ref(x) for x in xs], rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(fn))(xs), [_d(ref, x) for x in xs], rtol=1e-8)
    np.testing.assert_allclose(jit(vmap(grad(fn)))(xs), [_d(ref, x) for x in xs], rtol=1e-8)


def test_variadic_function_itself_under_transforms(x64):
    np.testing.assert_allclose(grad(fs)(0.5, 1.0, 2.0), 6.0)
    np.testing.assert_allclose(grad(fs, argnums=2)(0.5, 1.0, 2.0), 1.0)
    xs = np.array([0.5, 1.5])
    np.testing.assert_allclose(vmap(fs)(xs, xs, xs), 2 * xs * 2 * xs)
    np.testing.assert_allclose(jit(fs)(0.5, 1.0, 2.0), 3.0)
    np.testing.assert_allclose(jvp(fs, (0.5, 1.0, 2.0), (1.0, 0.0, 0.0))[1], 6.0)

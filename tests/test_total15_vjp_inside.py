"""vjp called inside a function that grad, vmap or jit transforms (issue 15): `y, pb =
vjp(f, x)` then `pb(ct)` (or `vjp(f, x)[1](ct)`, `vjp(f, x)[0]`, in a lambda too), with f a library function, a function of the user's, or a lambda
closing over the differentiated value; checked against float64 finite differences and a loop."""
import numpy as np
import pytest

import secant.numpy as snp
from secant import grad, jit, vjp, vmap

X = np.array([0.3, 0.7, -0.2])


def sin_pullback(x):
    y, pb = vjp(snp.sin, x)
    return snp.sum(pb(x)[0] * y)            # sum(x cos x sin x)


def _user(a, b):
    return a * snp.exp(b)


def two_primals(x):
    y, pb = vjp(_user, x, x * x)
    ga, gb = pb(snp.ones_like(y))           # exp(x^2), x exp(x^2)
    return snp.sum(ga * gb)                 # sum(x exp(2 x^2))


def closing_over(x):
    y, pb = vjp(lambda a: snp.sin(a * x[0]), x)
    (g,) = pb(y)                            # sin(x x0) cos(x x0) x0
    return snp.sum(g)


def indexed_pullback(x):
    return snp.sum(vjp(snp.sin, x)[1](x)[0] * vjp(snp.sin, x)[0])     # sum(x cos x sin x)


indexed_lambda = lambda x: snp.sum(vjp(lambda a: _user(a, x * x), x)[1](snp.ones_like(x))[0])  # noqa: E731


REFS = {sin_pullback: lambda x: np.sum(x * np.cos(x) * np.sin(x)),
        indexed_pullback: lambda x: np.sum(x * np.cos(x) * np.sin(x)),
        indexed_lambda: lambda x: np.sum(np.exp(x * x)),
        two_primals: lambda x: np.sum(x * np.exp(2 * x * x)),
        closing_over: lambda x: np.sum(np.sin(x * x[0]) * np.cos(x * x[0]) * x[0])}


def _fd(f, x, h=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


@pytest.mark.parametrize("fn", list(REFS), ids=lambda f: f.__name__)
def test_vjp_inside_transforms(x64, fn):
    ref = REFS[fn]
    np.testing.assert_allclose(fn(X), ref(X), rtol=1e-12)
    np.testing.assert_allclose(grad(fn)(X), _fd(ref, X), rtol=1e-6)
    np.testing.assert_allclose(jit(grad(fn))(X), _fd(ref, X), rtol=1e-6)
    xs = np.stack([X, 0.5 * X])
    np.testing.assert_allclose(vmap(fn)(xs), [ref(x) for x in xs], rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(fn))(xs), [_fd(ref, x) for x in xs], rtol=1e-6)

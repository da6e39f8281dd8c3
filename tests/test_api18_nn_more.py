"""jax.nn's identity, tanh, sparse_sigmoid, log1mexp and logmeanexp: values against NumPy
closed forms (float64), grad against finite differences, vmap against a loop."""
import numpy as np
import pytest

import secant
from secant import nn


@pytest.fixture(autouse=True)
def x64():
    secant.config.update("enable_x64", True)
    yield
    secant.config.update("enable_x64", False)


X = np.array([-2.0, -0.5, 0.1, 0.6, 0.7, 3.0, 30.0])
P = np.abs(X) + 1e-3


def close(a, b, rtol=1e-12, atol=1e-14):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def test_values():
    close(nn.identity(X), X)
    close(nn.tanh(X), np.tanh(X))
    close(nn.sparse_sigmoid(X), np.clip((X + 1) / 2, 0, 1))
    close(nn.log1mexp(P), np.log(-np.expm1(-P)))
    m = np.random.RandomState(0).randn(3, 4)
    close(nn.logmeanexp(m), np.log(np.mean(np.exp(m))))
    close(nn.logmeanexp(m, axis=1, keepdims=True), np.log(np.mean(np.exp(m), 1, keepdims=True)))
    mask = m > 0
    close(nn.logmeanexp(m, axis=1, where=mask),
          [np.log(np.mean(np.exp(r[k]))) for r, k in zip(m, mask)])


def test_grad_and_vmap():
    for f, df in ((nn.log1mexp, lambda p: 1 / np.expm1(p)),
                  (nn.sparse_sigmoid, lambda x: np.where(np.abs(x) < 1, 0.5, 0.0)),
                  (nn.tanh, lambda x: 1 - np.tanh(x) ** 2)):
        pts = P if f is nn.log1mexp else X
        close(secant.vmap(secant.grad(f))(pts), df(pts), rtol=1e-9)
        close(secant.vmap(f)(pts), [f(p) for p in pts])
    m = np.random.RandomState(1).randn(3, 4)
    g = secant.grad(lambda v: nn.logmeanexp(v))(m)
    close(g, np.exp(m) / np.exp(m).sum(), rtol=1e-9)

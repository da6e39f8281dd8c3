"""Transforms called inside a function being transformed (issue 15): hessian/jacfwd/jacrev/
grad/vmap/jvp written in the function, through a helper, and with lambdas closing over the
differentiated value; checked against closed forms and float64 finite differences."""
import numpy as np

import secant.numpy as snp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, vmap

X = np.array([0.3, 0.7, -0.2])


def f(x):
    return snp.sum(snp.sin(x) * x ** 2)


def _grad_of_trace(x):      # d/dx of trace(hessian(f)) = d/dx (2 sin x + 4x cos x - x^2 sin x)
    return 6 * np.cos(x) - 6 * x * np.sin(x) - x ** 2 * np.cos(x)


def _fd(fn, x, h=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (float(fn(x + e)) - float(fn(x - e))) / (2 * h)
    return out


def _helper(x):
    return jacfwd(f)(x)


def test_grad_of_sum_of_hessian(x64):
    np.testing.assert_allclose(grad(lambda x: snp.sum(hessian(f)(x)))(X), _grad_of_trace(X),
                               rtol=1e-9)
    xs = np.stack([X, X + 1])
    np.testing.assert_allclose(vmap(grad(lambda x: snp.sum(hessian(f)(x))))(xs),
                               [_grad_of_trace(X), _grad_of_trace(X + 1)], rtol=1e-9)


def test_jacobians_through_a_helper(x64):
    def loss(x):
        return snp.sum(_helper(x) ** 2)

    def ref(x):
        return np.sum((np.cos(x) * x ** 2 + 2 * x * np.sin(x)) ** 2)
    np.testing.assert_allclose(grad(loss)(X), _fd(ref, X), rtol=1e-6)
    np.testing.assert_allclose(jit(grad(loss))(X), grad(loss)(X), rtol=1e-12)
    np.testing.assert_allclose(grad(lambda x: snp.sum(jacrev(f)(x) * x))(X),
                               _fd(lambda x: np.sum((np.cos(x) * x ** 2 + 2 * x * np.sin(x))
                                                    * x), X), rtol=1e-6)


def test_closures_over_the_differentiated_value(x64):
    def with_vmap(x):
        return snp.sum(vmap(lambda r: r * x[0])(x))

    def with_grad(x):
        return grad(lambda y: snp.sin(y * x[1]))(x[0]) * x[2]

    def with_jvp(x):
        _, t = jvp(lambda z: snp.sin(z) * x, (x,), (x,))
        return snp.sum(t)

    def with_def(x):
        def inner(y):
            return snp.sum(y * y * x)
        return snp.sum(jacrev(inner)(x))
    for fn, ref in [(with_vmap, lambda x: np.sum(x * x[0])),
                    (with_grad, lambda x: np.cos(x[0] * x[1]) * x[1] * x[2]),
                    (with_jvp, lambda x: np.sum(np.cos(x) * x * x)),
                    (with_def, lambda x: np.sum(2 * x * x))]:
        np.testing.assert_allclose(grad(fn)(X), _fd(ref, X), rtol=1e-6, err_msg=fn.__name__)
        xs = np.stack([X, 2 * X])
        np.testing.assert_allclose(vmap(fn)(xs), [ref(X), ref(2 * X)], rtol=1e-9,
                                   err_msg=fn.__name__)
        np.testing.assert_allclose(jit(fn)(X), ref(X), rtol=1e-9, err_msg=fn.__name__)


def test_jvp_by_name_under_jit_of_vmap(x64):
    xs = np.stack([X, X + 0.5])
    got = jit(vmap(lambda x: jvp(f, (x,), (snp.ones_like(x),))[1]))(xs)
    want = [np.sum(np.cos(x) * x ** 2 + 2 * x * np.sin(x)) for x in xs]
    np.testing.assert_allclose(got, want, rtol=1e-9)

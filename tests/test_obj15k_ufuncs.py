"""Ufunc methods (snp.add.reduce/outer/accumulate/at, maximum.accumulate, multiply.outer, ...)
under grad, jvp, vmap, vmap(grad), jit(grad) and hessian (issue 15): each checked against
NumPy's own method with float64 central differences and a Python loop over examples."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from tests.central_differences import grad_fd

W = np.arange(6.0).reshape(2, 3)
Y = np.array([1.5, -0.4, 0.9])
IDX = np.array([0, 1, 1, 2, 0, 2])


def _at(ufunc, start, idx, v):
    z = np.array(start, dtype=np.float64)
    ufunc.at(z, idx, v)
    return z


CASES = {
    "add.reduce": (lambda a: snp.sum(snp.add.reduce(a * a, axis=1, keepdims=True) ** 2),
                   lambda a: np.sum(np.add.reduce(a * a, axis=1, keepdims=True) ** 2)),
    "add.outer": (lambda a: snp.sum(snp.sin(snp.add.outer(a[0], Y))),
                  lambda a: np.sum(np.sin(np.add.outer(a[0], Y)))),
    "multiply.outer": (lambda a: snp.sum(snp.multiply.outer(a[0], a[1]) ** 2),
                       lambda a: np.sum(np.multiply.outer(a[0], a[1]) ** 2)),
    "add.accumulate": (lambda a: snp.sum(snp.add.accumulate(a, axis=1) ** 2),
                       lambda a: np.sum(np.add.accumulate(a, axis=1) ** 2)),
    "maximum.accumulate": (lambda a: snp.sum(snp.maximum.accumulate(a.ravel()) * W.ravel()),
                           lambda a: np.sum(np.maximum.accumulate(a.ravel()) * W.ravel())),
    "multiply.accumulate": (lambda a: snp.sum(snp.multiply.accumulate(a, axis=0)),
                            lambda a: np.sum(np.multiply.accumulate(a, axis=0))),
    "add.at": (lambda a: snp.sum(snp.add.at(snp.zeros(3), IDX, a.ravel(), inplace=False) ** 2),
               lambda a: np.sum(_at(np.add, np.zeros(3), IDX, a.ravel()) ** 2)),
    "multiply.at": (lambda a: snp.sum(snp.multiply.at(snp.ones(3), IDX, a.ravel(),
                                                      inplace=False)),
                    lambda a: np.sum(_at(np.multiply, np.ones(3), IDX, a.ravel()))),
    "add.reduceat": (lambda a: snp.sum(snp.add.reduceat(a.ravel() ** 2, np.array([0, 2, 5]))
                                       ** 2),
                     lambda a: np.sum(np.add.reduceat(a.ravel() ** 2, np.array([0, 2, 5])) ** 2)),
    "logaddexp.reduce": (lambda a: snp.logaddexp.reduce(a.ravel()),
                         lambda a: np.logaddexp.reduce(a.ravel())),
}
A = np.array([[0.3, -1.2, 2.0], [0.7, 0.1, -0.5]])


@pytest.mark.parametrize("name", sorted(CASES))
def test_ufunc_method_under_transforms(x64, name):
    f, ref = CASES[name]
    g = grad_fd(ref, A)
    np.testing.assert_allclose(np.asarray(secant.grad(f)(A)), g, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(A)), g, rtol=1e-5,
                               atol=1e-7)
    t = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(secant.jvp(f, (A,), (t,))[1]), np.sum(g * t),
                               rtol=1e-5, atol=1e-7)
    batch = np.stack([A, 0.5 * A + 0.1])
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(batch)), [ref(a) for a in batch],
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(f))(batch)),
                               [grad_fd(ref, a) for a in batch], rtol=1e-5, atol=1e-7)
    hess = np.asarray(secant.hessian(f)(A)).reshape(6, 6)
    fd = np.stack([grad_fd(lambda a: grad_fd(ref, a, h=1e-4).ravel()[i], A, h=1e-4).ravel()
                   for i in range(6)])
    np.testing.assert_allclose(hess, fd, rtol=1e-3, atol=1e-4)

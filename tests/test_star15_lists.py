"""Comprehensions over a list of lists (issue 15, star15): `[e.shape[1] for row in [[a, b], [c]]
for e in row]`, `[sum(r) for r in [[x, 2 * x], [x * x]]]`, a comprehension inside one over
rows, written in an expression, a starred call, a lambda, a helper and a loop body; under vmap,
vmap(vmap), vmap(grad), grad, jvp, jit, jacfwd(grad) and hessian. Each row's items are batched
where the rows are written (the unbatched ones broadcast), so a shape query of an item is each
example's; an item drawn from a batched value secant cannot place is refused, never read whole
(fft15r's invariant). Square (3, 3) examples beside a batch of 4 (and 2 outer) and a (3,) row,
so a query read from the wrong axis gives another number."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from central_differences import check_first_order, grad_fd, hessian_fd

RNG = np.random.default_rng(1515)
N, B, OUTER = 3, 4, 2


def starred_rows(x, w):
    return max(*[sum([e.shape[0] * e.ndim for e in c]) for c in [[x, w], [x]]], 0) \
        * snp.sum(x * x)


def flat_over_rows(x, w):
    return snp.sum(x) * sum([e.shape[-1] + e.shape[0] for row in [[x, w[0]], [x.T @ x]]
                             for e in row])


def sums_of_rows(x, w):
    return snp.sum(sum([sum(r) for r in [[x, 2 * x], [x * x]]]) * w)


def in_a_lambda(x, w):
    fn = lambda a: sum([len(r) * r[0].shape[0] for r in [[a, w], [a]]]) * snp.sum(a ** 2)
    return fn(x)


def in_a_loop(x, w):
    t = 0.0
    for k in range(2):
        t = t + sum([sum([snp.sum(e) * e.shape[1] for e in r]) for r in [[x * k, w], [x]]])
    return t


def rows_helper(a, b):
    return sum([sum([e.shape[0] for e in r]) * snp.sum(r[0]) for r in [[a, b], [b, a, a]]])


def in_a_helper(x, w):
    return rows_helper(x, w) + rows_helper(w @ x, x)


def named_rows(x, w):
    rows = [[x, w], [x]]
    ns = [sum([e.shape[1] for e in r]) for r in rows]
    return ns[0] * snp.sum(snp.sin(x)) + ns[1] * snp.sum(x @ w)


PROGRAMS = [starred_rows, flat_over_rows, sums_of_rows, in_a_lambda, in_a_loop, in_a_helper,
            named_rows]

W = RNG.normal(size=(N, N)) * 0.5
X = RNG.normal(size=(OUTER, B, N, N)) * 0.5
WB = RNG.normal(size=(B, N, N)) * 0.5
ids = dict(ids=lambda f: f.__name__)


@pytest.mark.parametrize("f", PROGRAMS, **ids)
def test_vmap(x64, f):
    np.testing.assert_allclose(secant.vmap(f, in_axes=(0, None))(X[0], W),
                               [f(x, W) for x in X[0]], rtol=1e-9)
    np.testing.assert_allclose(secant.vmap(f)(X[0], WB),
                               [f(X[0, i], WB[i]) for i in range(B)], rtol=1e-9)
    vv = secant.vmap(secant.vmap(f, in_axes=(0, None)), in_axes=(0, None))
    np.testing.assert_allclose(vv(X, W), [[f(x, W) for x in xs] for xs in X], rtol=1e-9)


@pytest.mark.parametrize("f", PROGRAMS, **ids)
def test_grad_jvp_vjp_and_vmap_of_grad(x64, f):
    check_first_order(f, X[1, 0], W, RNG.normal(size=(N, N)))
    np.testing.assert_allclose(secant.vmap(secant.grad(f), in_axes=(0, None))(X[0], W),
                               np.stack([grad_fd(f, x, W) for x in X[0]]),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", PROGRAMS, **ids)
def test_jit(x64, f):
    x = X[1, 1]
    np.testing.assert_allclose(secant.jit(f)(x, W), f(x, W), rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(f, in_axes=(0, None)))(X[0], W),
                               [f(x, W) for x in X[0]], rtol=1e-12)


@pytest.mark.parametrize("f", PROGRAMS, **ids)
@pytest.mark.parametrize("second", ["jacfwd_grad", "hessian"])
def test_second_order(x64, f, second):
    x = X[1, 2]
    h = (secant.jacfwd(secant.grad(f)) if second == "jacfwd_grad" else secant.hessian(f))(x, W)
    np.testing.assert_allclose(h, hessian_fd(f, x, W), rtol=1e-4, atol=1e-4)

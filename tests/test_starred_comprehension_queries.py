"""A comprehension unpacked into a call (`np.broadcast_shapes(*[snp.shape(c) for c in xs])`)
over batched values: under vmap each item's shape is its example's. The call used to read the
comprehension as written, so snp.shape(c) of a batched item included the batch axis and
broadcast_to gave one more axis per example (a silent wrong shape, found by api16)."""
import math

import numpy as np
import pytest

import secant
import secant.numpy as snp

A = np.arange(24.0).reshape(2, 3, 4)


def _loop(f, xs):
    return np.stack([np.asarray(f([x[b] for x in xs])) for b in range(A.shape[0])])


def broadcast_all(xs):
    shape = np.broadcast_shapes(*[snp.shape(c) for c in xs])
    return snp.stack([snp.broadcast_to(c, shape) for c in xs])


def first_to_common(xs):
    return snp.broadcast_to(xs[0], np.broadcast_shapes(*(c.shape for c in xs)))


def scaled_by_size(xs):
    return xs[0] * math.prod(np.broadcast_shapes(*[snp.shape(c) for c in xs]))


@pytest.mark.parametrize("f", [broadcast_all, first_to_common, scaled_by_size])
def test_a_list_passed_in(f):
    xs = [A[:, 0], A[:, 1:2].reshape(2, 1, 4)[:, 0]]
    got = secant.vmap(f)(xs)
    want = _loop(f, xs)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want)


def test_a_list_built_in_the_function_and_jit():
    def f(v):
        xs = [v[0], v[1]]
        return snp.broadcast_to(xs[0], np.broadcast_shapes(*[snp.shape(c) for c in xs]))
    want = np.stack([np.asarray(f(a)) for a in A])
    for run in (secant.vmap(f), secant.jit(secant.vmap(f))):
        got = run(A)
        assert got.shape == want.shape == (2, 4)
        np.testing.assert_allclose(np.asarray(got), want)


def test_grad_of_it_per_example():
    def loss(v):
        xs = [v[0], v[1]]
        return snp.sum(snp.broadcast_to(xs[0], np.broadcast_shapes(*[snp.shape(c) for c in xs])) ** 2)
    got = secant.vmap(secant.grad(loss))(A)
    want = np.stack([np.asarray(secant.grad(loss)(a)) for a in A])
    np.testing.assert_allclose(np.asarray(got), want)

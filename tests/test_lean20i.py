"""Lean derivatives (issue 20), lean20i's steps.

- A matmul's result read twice keeps the unbroadcast of each contribution: the two could have
  two shapes that x @ w broadcasts to, whose sum broadcasts to a third (transformer/dataflow.py
  read_once_at_top: matmul_grad summed that sum down once, counting each contribution as often
  as the other's extra rows: a silently wrong gradient).

Each derivative is checked against float64 central differences."""
import numpy as np

import secant
import secant.numpy as snp
from test_lean20c import fd_grad

RNG = np.random.default_rng(2020)


def _fd(f, args, k):
    return fd_grad(lambda v: f(*[v if i == k else a for i, a in enumerate(args)]), args[k])


def _check(f, args, argnums, rtol=1e-6, atol=1e-8):
    got = secant.grad(f, argnums=argnums)(*args)
    for k, g in zip(argnums, got):
        np.testing.assert_allclose(np.asarray(g), _fd(f, args, k), rtol=rtol, atol=atol)


def matmul_read_twice(w, x, b1, b2):
    v = x @ w
    return snp.sum(v + b1) + snp.sum(v * b2)


def test_a_matmul_read_twice_sums_each_contribution_to_its_shape(x64):
    # x @ w is (1, 4); b1 broadcasts it to (5, 4), b2 to (3, 1, 4): the two cotangents add to
    # (3, 5, 4), which summed down to (1, 4) counted the first 3 times and the second 5 times
    args = [RNG.normal(size=s) for s in ((3, 4), (1, 3), (5, 4), (3, 1, 4))]
    _check(matmul_read_twice, args, (0, 1))

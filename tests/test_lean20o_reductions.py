"""Issue 20: a full mean (or sum) of a sum over some axes, its operand read for its shape only
(`snp.mean(snp.sum(w * x, axis=-1))`, softmax cross-entropy's), differentiated by the one rule
of the composed reduction (ad/algebra.py _reductions_composed: `mean_grad_to(t,
shape_of(w, x), summed=-1)`, ad/helpers.py), not the outer rule's array then the sum's.
Checked against float64 central differences for broadcasting operands, axes given as a tuple
or negative, kept dims, empty axes, and under jit, vmap (against a loop) and hessian."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from test_lean20c import fd_grad

RNG = np.random.default_rng(20)


def mean_of_row_sums(x, w):
    return snp.mean(snp.sum(w * snp.sin(x), axis=-1))


def sum_of_row_sums(x, w):
    return snp.sum(snp.sum(w * snp.sin(x), axis=-1))


def mean_of_sums_kept(x, w):
    return snp.mean(snp.sum(snp.sin(x) * w, axis=(0, -1), keepdims=True))


def mean_of_first_axis_sums(x, w):
    return -snp.mean(snp.sum(w * snp.sin(x), axis=0))


FUNCTIONS = [mean_of_row_sums, sum_of_row_sums, mean_of_sums_kept, mean_of_first_axis_sums]


def test_one_rule_written():
    src = secant.source(secant.grad(mean_of_row_sums))
    assert "summed=-1)" in src and "unreduce_to" not in src, src
    src = secant.source(secant.grad(sum_of_row_sums))
    code = "\n".join(r for r in src.splitlines() if not r.strip().startswith("#"))
    assert "unreduce_to(" in code and "axis=" not in code, src
    src = secant.source(secant.grad(mean_of_sums_kept))
    assert "summed=(0, -1))" in src, src


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shapes", [((5, 4), (5, 4)), ((5, 4), (4,)), ((5, 4), (5, 1)),
                                    ((5, 4), (2, 5, 4)), ((3, 1), (3, 6))],
                         ids=str)
def test_gradient_by_shapes(x64, fn, shapes):
    x, w = RNG.normal(size=shapes[0]), RNG.normal(size=shapes[1])
    g = secant.grad(fn)
    want = fd_grad(lambda v: fn(v, w), x)
    np.testing.assert_allclose(np.asarray(g(x, w)), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(x, w)), want, rtol=1e-6, atol=1e-9)
    want_w = fd_grad(lambda v: fn(x, v), w)
    np.testing.assert_allclose(np.asarray(secant.grad(fn, argnums=1)(x, w)), want_w,
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_empty_summed_axis(x64, fn):
    """A sum over an axis of length 0 (zeros), then its mean: the count is of the other axes
    (3), never a division by the empty axis's length."""
    x, w = RNG.normal(size=(3, 0)), RNG.normal(size=(3, 0))
    got = np.asarray(secant.grad(fn)(x, w))
    assert got.shape == (3, 0)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_vmap_and_hessian(x64, fn):
    xs, w = RNG.normal(size=(3, 5, 4)), RNG.normal(size=(4,))
    g = secant.grad(fn)
    want = np.stack([np.asarray(g(x, w)) for x in xs])
    np.testing.assert_allclose(np.asarray(secant.vmap(g, in_axes=(0, None))(xs, w)), want,
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(g, in_axes=(0, None)))(xs, w)),
                               want, rtol=1e-10)
    x = xs[0]
    h = np.asarray(secant.hessian(fn)(x, w))
    want_h = np.stack([fd_grad(lambda v: np.asarray(g(v, w))[idx], x)
                       for idx in np.ndindex(x.shape)]).reshape(x.shape + x.shape)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-7)

"""lax.top_k as jax.lax.top_k: values and int32 indices along an axis (ties: lower index
first), its errors, and grad (through the values), vmap and jit."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax


def _reference(x, k, axis=-1):
    x = np.moveaxis(np.asarray(x), axis, -1)
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    values = np.take_along_axis(x, order, -1)
    return np.moveaxis(values, -1, axis), np.moveaxis(order, -1, axis)


def test_values_indices_and_ties():
    values, indices = lax.top_k(snp.array([9.0, 3.0, 6.0, 4.0, 10.0, 6.0]), 3)
    np.testing.assert_array_equal(values, [10.0, 9.0, 6.0])
    np.testing.assert_array_equal(indices, [4, 0, 2])          # (the 6 at 2 before the 6 at 5)
    assert values.dtype == snp.float32 and indices.dtype == snp.int32
    v, i = lax.top_k(snp.array([1, 1, 0, 1, 0, 1]), 3)
    assert v.dtype == snp.int32
    np.testing.assert_array_equal(i, [0, 1, 3])


@pytest.mark.parametrize("shape, k, axis", [((4, 5), 2, -1), ((4, 5), 3, 0), ((2, 3, 4), 3, 1),
                                            ((6,), 0, -1), ((6,), 6, 0)])
def test_matches_a_stable_sort(shape, k, axis):
    x = np.random.RandomState(0).randint(0, 4, size=shape).astype(np.float32)   # many ties
    values, indices = lax.top_k(x, k, axis=axis)
    want_v, want_i = _reference(x, k, axis)
    assert values.shape == indices.shape == want_v.shape
    np.testing.assert_array_equal(values, want_v)
    np.testing.assert_array_equal(indices, want_i)


@pytest.mark.parametrize("args, match", [((snp.array(1.0), 1), "at least one axis"),
                                         ((snp.ones(3), 4), "k must be"),
                                         ((snp.ones(3), -1), "k must be"),
                                         ((snp.ones(3), 1.5), "k must be")])
def test_errors(args, match):
    with pytest.raises(secant.SecantError, match=match):
        lax.top_k(*args)


def _weighted_top(x):
    values, indices = lax.top_k(x, 3)
    return snp.sum(values * snp.array([1.0, 2.0, 3.0])) + snp.sum(indices) * 0.0


def test_grad_vmap_jit(x64):
    x = np.random.RandomState(1).randn(7)
    g = secant.grad(_weighted_top)(x)
    eps, fd = 1e-6, np.zeros_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = eps
        fd[j] = (_weighted_top(x + e) - _weighted_top(x - e)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    assert sorted(g[g != 0]) == [1.0, 2.0, 3.0]
    m = np.random.RandomState(2).randn(4, 6)
    bv, bi = secant.vmap(lambda r: lax.top_k(r, 2))(m)
    for r, v, i in zip(m, bv, bi):
        np.testing.assert_array_equal(v, _reference(r, 2)[0])
        np.testing.assert_array_equal(i, _reference(r, 2)[1])
    jv, ji = secant.jit(lambda a: lax.top_k(a, 3, axis=0))(m)
    ev, ei = lax.top_k(m, 3, axis=0)
    np.testing.assert_array_equal(jv, ev)
    np.testing.assert_array_equal(ji, ei)
    assert ji.dtype == snp.int32

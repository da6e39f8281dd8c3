"""Issue 20: a value's cotangent summed from unbroadcasts of values that provably have one shape
(transformer/shapes.py symbols, a cotangent read as its value's: ad/algebra.py value_alts) is
one unbroadcast of their sum, `unbroadcast(q_new_bar - times_k * p_half_bar, q)`, and
`grads_as` of an unbroadcast to the same value is that unbroadcast (it gave the value's float
dtype already). Values against float64 central differences where operands broadcast (a wider
p, a per-element k), where the summands' shapes differ (not merged), mixed float dtypes, jit,
vmap against a loop and jacfwd of grad."""
import os
import sys

import numpy as np
import pytest

import secant
import secant.numpy as snp
from test_lean20c import fd_grad

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import lean_functions as funcs  # noqa: E402

RNG = np.random.default_rng(2029)
leapfrog = funcs.leapfrog_energy


def two_widths(q, a, b):
    """q's cotangent from a term of a's shape (wider) and one of q's: not one unbroadcast."""
    return snp.sum(q * a) + snp.sum(snp.sin(q + b))


def test_forms():
    src = secant.source(secant.grad(leapfrog))
    assert "return unbroadcast(q_new_bar - times_k * (p_new_bar + dt * q_new_bar), q)" in src, src
    assert "grads_as" not in src, src
    src = secant.source(secant.grad(two_widths))
    assert src.count("unbroadcast(") == 2, src


@pytest.mark.parametrize("shapes", [((4,), (4,), (), ()), ((4,), (2, 4), (), ()),
                                    ((4,), (4,), (), (1,)), ((1,), (3,), (), (3,))], ids=str)
def test_leapfrog_by_shapes(x64, shapes):
    q, p, k, dt = (RNG.normal(size=s) + (1.5 if i >= 2 else 0) for i, s in enumerate(shapes))
    g = secant.grad(leapfrog)
    want = fd_grad(lambda v: leapfrog(v, p, k, dt), q)
    np.testing.assert_allclose(np.asarray(g(q, p, k, dt)), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(q, p, k, dt)), want, rtol=1e-6,
                               atol=1e-8)


def test_leapfrog_mixed_dtypes(x64):
    q = RNG.normal(size=4).astype(np.float32)
    p = RNG.normal(size=4)
    got = secant.grad(leapfrog)(q, p, 1.7, 0.1)
    assert np.asarray(got).dtype == np.float32
    want = fd_grad(lambda v: leapfrog(v, p, 1.7, 0.1), q.astype(np.float64))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_leapfrog_vmap_and_second_order(x64):
    qs, p = RNG.normal(size=(3, 4)), RNG.normal(size=4)
    g = secant.grad(leapfrog)
    want = np.stack([np.asarray(g(q, p, 1.7, 0.1)) for q in qs])
    np.testing.assert_allclose(np.asarray(secant.vmap(g, in_axes=(0, None, None, None))(
        qs, p, 1.7, 0.1)), want, rtol=1e-12)
    h = np.asarray(secant.jacfwd(g)(qs[0], p, 1.7, 0.1))
    want_h = np.stack([fd_grad(lambda v: np.asarray(g(v, p, 1.7, 0.1))[i], qs[0])
                       for i in range(4)])
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shapes", [((4,), (3, 4), (4,)), ((4,), (4,), (2, 4)),
                                    ((1,), (3,), (2, 3))], ids=str)
def test_summands_of_two_shapes(x64, shapes):
    q, a, b = (RNG.normal(size=s) for s in shapes)
    g = secant.grad(two_widths)
    want = fd_grad(lambda v: two_widths(v, a, b), q)
    np.testing.assert_allclose(np.asarray(g(q, a, b)), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(q, a, b)), want, rtol=1e-6, atol=1e-8)

"""Issue 20 (lean20z): grad's seed for an output scaled by a value not differentiated
(`0.5 * snp.sum(p * p) + 0.5 * k * snp.sum(q * q)`): the output is a scalar exactly where k is
one, of the dtype the reduced values and k promote to, so the seed checks k's shape and reads
both dtypes (ad/helpers.py grad_seed_scaled, transformer/dataflow.py scalar_like's `scaled`):
the statements computing the output are not run for it. Values against float64 central
differences, a Python loop over examples, and eager."""
import os
import sys

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.codegen.program import program
from test_lean20c import fd_grad

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import lean  # noqa: E402
import lean_functions as funcs  # noqa: E402

RNG = np.random.default_rng(2027)
leapfrog = funcs.leapfrog_energy


def test_leapfrog_statements_and_seed(x64):
    src = secant.source(secant.grad(leapfrog))
    assert "grad_seed_scaled(p_half, k)" in src, src
    code = "\n".join(ln for ln in src.splitlines() if not ln.strip().startswith("#"))
    assert "snp.sum(" not in code, src          # (the energy is not computed for the seed)
    assert "times_k * p_new_bar" in src, src    # (0.5 * dt * k read once computed: ad/cse.py)
    assert sum(lean.count_statements(t) for _, t in program(secant.grad(leapfrog))) == 8


@pytest.mark.parametrize("k", [1.7, np.float64(0.3), 2])
def test_leapfrog_values(k, x64):
    q, p = RNG.normal(size=5), RNG.normal(size=5)
    g = secant.grad(leapfrog)
    want = fd_grad(lambda v: leapfrog(v, p, k, 0.1), q)
    np.testing.assert_allclose(np.asarray(g(q, p, k, 0.1)), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(q, p, k, 0.1)), want, rtol=1e-6,
                               atol=1e-8)
    hess = np.asarray(secant.hessian(leapfrog)(q, p, k, 0.1))
    np.testing.assert_allclose(hess[2], fd_grad(lambda v: np.asarray(g(v, p, k, 0.1))[2], q),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("jit", [False, True])
def test_an_array_k_is_refused_as_the_output_is(jit, x64):
    q, p = RNG.normal(size=4), RNG.normal(size=4)
    g = secant.grad(leapfrog)
    with pytest.raises(secant.SecantError, match=r"scalar output.*shape \(4,\)") as info:
        (secant.jit(g) if jit else g)(q, p, np.full(4, 1.7), 0.1)
    assert "lean_functions.py" in str(info.value)


def test_vmap_over_k_against_a_loop(x64):
    q, p, ks = RNG.normal(size=4), RNG.normal(size=4), np.array([0.5, 1.7, 3.0])
    g = secant.grad(leapfrog)
    want = np.stack([np.asarray(g(q, p, k, 0.1)) for k in ks])
    for batched in (secant.vmap(g, in_axes=(None, None, 0, None)),
                    secant.jit(secant.vmap(g, in_axes=(None, None, 0, None)))):
        np.testing.assert_allclose(np.asarray(batched(q, p, ks, 0.1)), want, rtol=1e-12,
                                   atol=1e-14)
    qs = RNG.normal(size=(3, 4))
    got = secant.vmap(g, in_axes=(0, None, 0, None))(qs, p, ks, 0.1)
    for b in range(3):
        np.testing.assert_allclose(np.asarray(got[b]), fd_grad(
            lambda v: leapfrog(v, p, ks[b], 0.1), qs[b]), rtol=1e-6, atol=1e-8)
    with pytest.raises(secant.SecantError, match="scalar output"):
        secant.vmap(g, in_axes=(None, None, 0, None))(q, p, np.ones((3, 4)), 0.1)


def test_dtypes_follow_the_output(x64):
    q32, p32 = RNG.normal(size=3).astype(np.float32), RNG.normal(size=3).astype(np.float32)
    g = secant.grad(leapfrog)
    assert np.asarray(g(q32, p32, 2, 0.1)).dtype == np.float32
    assert np.asarray(g(q32, p32, np.float64(1.7), 0.1)).dtype == np.float32   # (q's own)
    with pytest.raises(secant.SecantError, match="real-valued outputs"):
        g(q32, p32, 1.7j, 0.1)


def scaled_difference(x, c):        # (c read by a difference, a negation and a product)
    return c * 2.0 - snp.sum(x * x) * (-c + 1.0)


def two_names(x, a, b):             # (two names scale it: the output computed for the seed)
    return a * snp.sum(x * x) + b * snp.sum(x)


def test_other_scalings(x64):
    x = RNG.normal(size=4)
    src = secant.source(secant.grad(scaled_difference))
    assert "grad_seed_scaled(x, c)" in src, src
    np.testing.assert_allclose(np.asarray(secant.grad(scaled_difference)(x, 0.7)),
                               fd_grad(lambda v: scaled_difference(v, 0.7), x), rtol=1e-6,
                               atol=1e-8)
    with pytest.raises(secant.SecantError, match=r"shape \(2,\)"):
        secant.grad(scaled_difference)(x, np.ones(2))
    src = secant.source(secant.grad(two_names))
    assert "grad_seed_scaled" not in src and "grad_seed(" in src, src
    np.testing.assert_allclose(np.asarray(secant.grad(two_names)(x, 0.7, -1.3)),
                               fd_grad(lambda v: two_names(v, 0.7, -1.3), x), rtol=1e-6,
                               atol=1e-8)

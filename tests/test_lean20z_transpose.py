"""Issue 20 (lean20z): x @ k.T, where the transpose is read by that matmul alone, takes rules
reading k (ad/vjp_rules.py TRANSPOSED_VJP, transformer/dataflow.py transposed_operands): the
transpose is not kept for the reverse pass and folds into the forward line (attention's
`s = q @ snp.transpose(k) / ...`, as a person writes q @ k.T). Values against float64 central
differences, a Python loop over examples, and eager."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from test_lean20c import fd_grad

RNG = np.random.default_rng(2029)


def scores(q, k):
    return snp.sum(snp.tanh(q @ k.T))


def scores_3d(q, k):                # (k.T reverses every axis: (4, 2, 3) -> (3, 2, 4))
    return snp.sum(snp.sin(q @ k.T))


def vector(q, k):                   # (a vector's transpose is itself)
    return snp.sum((q @ k.T) ** 2)


def kept_twice(q, k):               # (k.T read again: the transpose is kept, matmul's rules)
    kt = k.T
    return snp.sum(q @ kt) + snp.sum(kt * kt)


def left_transposed(q, k):          # (k.T on the left: matmul's own rules)
    return snp.sum(snp.tanh(k.T @ q))


CASES = {scores: ((4, 3), (5, 3)), scores_3d: ((5, 2), (4, 2, 3)), vector: ((3,), (3,)),
         kept_twice: ((3, 3), (3, 3)), left_transposed: ((4, 2), (4, 3))}


@pytest.mark.parametrize("f", list(CASES))
def test_values_against_float64_differences(f, x64):
    qs, ks = CASES[f]
    q, k = RNG.normal(size=qs), RNG.normal(size=ks)
    for argnum, v in ((0, q), (1, k)):
        g = secant.grad(f, argnums=argnum)

        def h(w, argnum=argnum):
            return f(w, k) if argnum == 0 else f(q, w)
        want = fd_grad(h, v)
        np.testing.assert_allclose(np.asarray(g(q, k)), want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(np.asarray(secant.jit(g)(q, k)), want, rtol=1e-6, atol=1e-8)


def test_sources():
    src = secant.source(secant.grad(scores, argnums=(0, 1)))
    assert "matmul_grad_x_of_t(" in src and "matmul_grad_t_y(" in src, src
    assert "k_T" not in src.split("# Grad of")[0].replace("q_matmul_k_T", ""), src
    for f in (kept_twice, left_transposed):
        src = secant.source(secant.grad(f, argnums=(0, 1)))
        assert "_of_t(" not in src and "_t_y(" not in src, src


@pytest.mark.parametrize("f", [scores, scores_3d])
def test_second_order_and_vmap(f, x64):
    qs, ks = CASES[f]
    q, k = RNG.normal(size=qs), RNG.normal(size=ks)
    g = secant.grad(f, argnums=1)
    hess = np.asarray(secant.hessian(f, argnums=1)(q, k))
    idx = (0,) * k.ndim
    np.testing.assert_allclose(hess[idx], fd_grad(lambda w: np.asarray(g(q, w))[idx], k),
                               rtol=1e-5, atol=1e-6)
    kb = RNG.normal(size=(3,) + ks)
    got = np.asarray(secant.vmap(g, in_axes=(None, 0))(q, kb))
    for b in range(3):
        np.testing.assert_allclose(got[b], np.asarray(g(q, kb[b])), rtol=1e-12, atol=1e-14)
    jitted = np.asarray(secant.jit(secant.vmap(g, in_axes=(None, 0)))(q, kb))
    np.testing.assert_allclose(jitted, got, rtol=1e-10, atol=1e-12)

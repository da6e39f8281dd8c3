"""lib15d: LU of non-square matrices (lax.linalg.lu, scipy.linalg.lu with p, l, u and
permute_l) as JAX's: values against SciPy's (eagerly, under jit, and LAPACK's kernel past the
loop size), derivatives (JAX's rule, the factors padded square) against float64 central
differences, jvp against grad, jit against eager, vmap against a Python loop."""
import numpy as np
import pytest
import scipy.linalg as sla

import secant
import secant.numpy as snp
import secant.scipy.linalg as xl
from secant import lax

RNG = np.random.default_rng(151)
SHAPES = [(3, 5), (5, 3), (2, 6), (6, 2), (4, 4)]


def close(a, b, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


@pytest.mark.parametrize("shape", SHAPES + [(20, 27), (27, 20)])
def test_values_against_scipy(shape, x64):
    a = RNG.normal(size=shape)
    P, L, U = sla.lu(a)
    for run in (xl.lu, secant.jit(xl.lu)):
        p, l, u = run(a)
        assert np.shape(l) == L.shape and np.shape(u) == U.shape
        close(p, P)
        close(l, L)
        close(u, U)
    pl, u = xl.lu(a, permute_l=True)
    close(pl, sla.lu(a, permute_l=True)[0])
    lu, piv = sla.lu_factor(a)
    got, pivots, perm = lax.linalg.lu(a)
    close(got, lu)
    np.testing.assert_array_equal(pivots, piv)
    assert np.shape(perm) == (shape[0],)
    close(np.asarray(a)[np.asarray(perm)], np.asarray(L) @ np.asarray(U))


def test_batched_values_against_a_loop(x64):
    a = RNG.normal(size=(3, 2, 5))
    p, l, u = xl.lu(a)
    for k in range(3):
        P, L, U = sla.lu(a[k])
        close(p[k], P)
        close(l[k], L)
        close(u[k], U)


def _weights(shape):
    m, n = shape
    k = min(m, n)
    rng = np.random.default_rng(m * 10 + n)
    return rng.normal(size=(m, k)), rng.normal(size=(k, n)), rng.normal(size=(m, k))


def _loss(a):
    wl, wu, wpl = _weights(np.shape(a))
    _, l, u = xl.lu(a)
    pl, _ = xl.lu(a, permute_l=True)
    return snp.sum(snp.sin(l) * wl) + snp.sum(u ** 2 * wu) + snp.sum(pl * wpl)


def _fd_grad(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = eps
        g[idx] = (f(a + e) - f(a - e)) / (2 * eps)
    return g


@pytest.mark.parametrize("shape", SHAPES)
def test_gradients_against_central_differences(shape, x64):
    a = RNG.normal(size=shape)
    g = secant.grad(_loss)(a)
    close(g, _fd_grad(lambda t: float(_loss(t)), a), rtol=1e-5, atol=1e-7)
    close(secant.jit(secant.grad(_loss))(a), g, rtol=1e-10)
    d = RNG.normal(size=shape)
    _, t = secant.jvp(_loss, (a,), (d,))
    close(t, np.sum(np.asarray(g) * d), rtol=1e-8)
    _, tj = secant.jit(lambda x, v: secant.jvp(_loss, (x,), (v,)))(a, d)
    close(tj, t, rtol=1e-10)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3)])
def test_vmap_of_grad_against_a_loop(shape, x64):
    a = RNG.normal(size=(3,) + shape)
    got = secant.vmap(secant.grad(_loss))(a)
    for k in range(3):
        close(got[k], secant.grad(_loss)(a[k]), rtol=1e-10)


def test_packed_factors_jvp_and_transpose_agree(x64):
    """<u, J v> == <J^T u, v> for lax.linalg.lu's packed factors of non-square matrices."""
    for shape in [(3, 5), (5, 3)]:
        a = RNG.normal(size=shape)
        v, u = RNG.normal(size=shape), RNG.normal(size=shape)
        _, jv = secant.jvp(lambda x: lax.linalg.lu(x)[0], (a,), (v,))
        _, pullback = secant.vjp(lambda x: lax.linalg.lu(x)[0], a)
        (jtu,) = pullback(u)
        close(np.sum(np.asarray(jv) * u), np.sum(np.asarray(jtu) * v), rtol=1e-10)


def test_float32_by_default():
    a = RNG.normal(size=(3, 5)).astype(np.float32)
    p, l, u = xl.lu(a)
    assert np.asarray(l).dtype == np.float32
    close(np.asarray(p) @ np.asarray(l) @ np.asarray(u), a, rtol=1e-5, atol=1e-5)

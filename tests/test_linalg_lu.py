"""The LU / Cholesky / triangular family beyond the shared harness: closed forms of the
derivatives, the dot-product identity <u, J v> = <J^T u, v>, second order, batched leading axes,
float32 under jit, sizes drawn by hypothesis, and what happens off the domain."""
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings, strategies as st

import secant
import secant.numpy as snp
import secant.scipy.linalg as sla
from secant import lax


def _well(rng, shape):
    return rng.uniform(-1, 1, shape) + shape[-1] * np.eye(shape[-1])


def _spd(rng, shape):
    a = rng.uniform(-1, 1, shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def logdet(a):
    return snp.linalg.slogdet(a)[1]


def det(a):
    return snp.linalg.det(a)


def test_det_and_logdet_gradients_are_their_closed_forms(x64):
    a = _well(np.random.default_rng(0), (4, 4))
    inv_t = np.linalg.inv(a).T
    np.testing.assert_allclose(secant.grad(det)(a), np.linalg.det(a) * inv_t, rtol=1e-10)
    np.testing.assert_allclose(secant.grad(logdet)(a), inv_t, rtol=1e-10)
    np.testing.assert_allclose(secant.jit(secant.grad(logdet))(a), inv_t, rtol=1e-10)


def test_logdet_hessian_and_grad_of_grad(x64):
    """d/dA of A^-T is -A^-T dA^T A^-T: the Hessian H[i,j,k,l] = -inv[l,i] inv[j,k]."""
    a = _well(np.random.default_rng(1), (3, 3))
    inv = np.linalg.inv(a)
    want = -np.einsum("li,jk->ijkl", inv, inv)
    np.testing.assert_allclose(secant.hessian(logdet)(a), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.hessian(logdet))(a), want, rtol=1e-9,
                               atol=1e-12)

    def grad_norm(x):
        return snp.sum(secant.grad(logdet)(x) ** 2)
    # sum(inv^T ** 2)'s gradient: -2 A^-T (A^-T)^T ... checked against finite differences
    eps, g = 1e-6, np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = eps
        g[idx] = (float(grad_norm(a + e)) - float(grad_norm(a - e))) / (2 * eps)
    np.testing.assert_allclose(secant.grad(grad_norm)(a), g, rtol=1e-6, atol=1e-8)


def test_inv_and_solve_closed_forms(x64):
    rng = np.random.default_rng(2)
    a, b, w = _well(rng, (3, 3)), rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    inv = np.linalg.inv(a)
    x = inv @ b

    def loss(a, b):
        return snp.sum(snp.linalg.solve(a, b) * w)
    ga, gb = secant.grad(loss, argnums=(0, 1))(a, b)
    # d(w . A^-1 b): b_bar = A^-T w, A_bar = -A^-T w x^T
    np.testing.assert_allclose(gb, inv.T @ w, rtol=1e-10)
    np.testing.assert_allclose(ga, -inv.T @ w @ x.T, rtol=1e-10)
    # d inv = -inv dA inv
    t = rng.normal(size=(3, 3))
    _, tangent = secant.jvp(snp.linalg.inv, (a,), (t,))
    np.testing.assert_allclose(tangent, -inv @ t @ inv, rtol=1e-10)


def test_cholesky_jvp_closed_form(x64):
    """dL = L Phi(L^-1 dA L^-T) for symmetric dA."""
    rng = np.random.default_rng(3)
    a = _spd(rng, (4, 4))
    t = rng.normal(size=(4, 4))
    t = t + t.T
    L = np.linalg.cholesky(a)
    inner = np.linalg.solve(L, np.linalg.solve(L, t).T).T
    want = L @ (np.tril(inner, -1) + np.diag(np.diag(inner)) / 2)
    _, got = secant.jvp(snp.linalg.cholesky, (a,), (t,))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_expm_derivative_along_its_own_direction(x64):
    """d/dt expm(t A) at t = 1 is A expm(A), and expm of a diagonal is elementwise exp."""
    a = np.random.default_rng(4).normal(size=(3, 3))
    _, tangent = secant.jvp(sla.expm, (a,), (a,))
    np.testing.assert_allclose(tangent, a @ sl.expm(a), rtol=1e-9)
    d = np.diag([0.5, -1.0, 3.0])
    np.testing.assert_allclose(sla.expm(d), np.diag(np.exp([0.5, -1.0, 3.0])), rtol=1e-12)


@pytest.mark.parametrize("name", ["det", "inv", "solve", "cholesky", "lu", "expm",
                                  "triangular_solve", "cho_solve"])
def test_dot_product_identity(x64, name):
    """<u, J v> from jvp equals <J^T u, v> from vjp."""
    rng = np.random.default_rng(5)
    b = rng.normal(size=(3, 2))
    fns = {"det": snp.linalg.det, "inv": snp.linalg.inv,
           "solve": lambda a: snp.linalg.solve(a, b),
           "cholesky": lambda a: lax.linalg.cholesky(a, symmetrize_input=False),
           "lu": lax.linalg.lu_factors, "expm": sla.expm,
           "triangular_solve": lambda a: sla.solve_triangular(a, b, lower=True, trans=1),
           "cho_solve": lambda a: sla.cho_solve(sla.cho_factor(a), b)}
    f = fns[name]
    a = _spd(rng, (3, 3)) if name in ("cholesky", "cho_solve") else _well(rng, (3, 3))
    v = rng.normal(size=a.shape)
    out, jv = secant.jvp(f, (a,), (v,))
    u = rng.normal(size=np.shape(out))
    _, pullback = secant.vjp(f, a)
    (jtu,) = pullback(u)
    np.testing.assert_allclose(np.sum(u * np.asarray(jv)), np.sum(np.asarray(jtu) * v),
                               rtol=1e-10)


def test_batched_leading_axes_match_a_loop(x64):
    rng = np.random.default_rng(6)
    a, b = _well(rng, (2, 3, 4, 4)), rng.normal(size=(2, 3, 4, 2))
    for fn, args in ((snp.linalg.det, (a,)), (snp.linalg.inv, (a,)),
                     (snp.linalg.solve, (a, b)), (lambda x: snp.linalg.slogdet(x)[1], (a,)),
                     (sla.expm, (a / 4,))):
        got = np.asarray(fn(*args))
        want = np.stack([np.stack([np.asarray(fn(*(x[i, j] for x in args))) for j in range(3)])
                         for i in range(2)])
        np.testing.assert_allclose(got, want, rtol=1e-10)
        np.testing.assert_allclose(secant.jit(fn)(*args), got, rtol=1e-10)
    # grad of a batched logdet: one A^-T per matrix
    g = secant.grad(lambda x: snp.sum(snp.linalg.slogdet(x)[1]))(a)
    np.testing.assert_allclose(g, np.swapaxes(np.linalg.inv(a), -1, -2), rtol=1e-10)
    # vmap of grad, per example
    per = secant.vmap(secant.grad(logdet))(a[0])
    np.testing.assert_allclose(per, np.swapaxes(np.linalg.inv(a[0]), -1, -2), rtol=1e-10)


def test_float32_under_jit():
    rng = np.random.default_rng(7)
    a = _well(rng, (5, 5)).astype(np.float32)
    b = rng.normal(size=(5,)).astype(np.float32)
    for fn in (snp.linalg.det, snp.linalg.inv, lambda x: snp.linalg.solve(x, b),
               lambda x: snp.linalg.cholesky(x @ x.T), sla.expm):
        eager, fast = fn(a), secant.jit(fn)(a)
        assert np.asarray(fast).dtype == np.float32 == np.asarray(eager).dtype
        np.testing.assert_allclose(fast, eager, rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(snp.linalg.det(a), np.linalg.det(a.astype(np.float64)),
                               rtol=1e-4)
    g = secant.jit(secant.grad(lambda x: snp.linalg.slogdet(x)[1]))(a)
    np.testing.assert_allclose(g, np.linalg.inv(a.astype(np.float64)).T, rtol=1e-3, atol=1e-5)


def test_integer_input_is_promoted():
    a = np.array([[2, 1], [1, 3]], np.int32)
    assert np.asarray(snp.linalg.det(a)).dtype == np.float32
    np.testing.assert_allclose(snp.linalg.det(a), 5.0, rtol=1e-6)


def test_off_the_domain():
    """Not positive definite: NaNs (eagerly and under jit, as JAX); a singular LU: infinities,
    never a crash; a norm order without a rule here: a clear error."""
    bad = np.array([[1.0, 2.0], [2.0, 1.0]], np.float32)
    assert np.isnan(np.asarray(snp.linalg.cholesky(bad))).all()
    assert np.isnan(np.asarray(secant.jit(snp.linalg.cholesky)(bad))).all()
    batch = np.stack([bad, np.eye(2, dtype=np.float32)])     # only the bad matrix is NaN
    fast = np.asarray(secant.jit(snp.linalg.cholesky)(batch))
    assert np.isnan(fast[0]).all() and np.array_equal(fast[1], np.eye(2))
    singular = np.zeros((2, 2), np.float32)
    assert np.asarray(snp.linalg.det(singular)) == 0
    assert np.asarray(secant.jit(snp.linalg.det)(singular)) == 0
    with pytest.raises(ValueError, match="'bogus' is not supported"):
        snp.linalg.norm(np.ones((2, 2)), "bogus")
    with pytest.raises(Exception, match="square"):
        snp.linalg.det(np.ones((2, 3), np.float32))


def test_lapack_custom_call_in_a_fresh_process():
    """The LU custom call registers jaxlib's LAPACK kernels itself (a call to an unregistered
    target would crash the interpreter): a fresh process whose first jit is an LU."""
    code = ("import numpy as np, secant, secant.numpy as snp\n"
            "a = np.array([[0., 2.], [3., 1.]], np.float32)\n"
            "print(float(secant.jit(snp.linalg.det)(a)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert float(out.stdout.split()[-1]) == pytest.approx(-6.0)


def test_generated_source_reads_as_maths():
    def loss(a):
        return snp.linalg.slogdet(a)[1]
    src = secant.source(secant.grad(lax.linalg.cholesky))
    assert "cholesky_grad(" in src
    src = secant.source(secant.grad(loss))
    assert "return slogdet_vjp(" in src


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 6), batch=st.sampled_from([(), (2,), (1, 3)]), seed=st.integers(0, 99))
def test_solve_and_logdet_over_sizes(n, batch, seed):
    secant.config.update("enable_x64", True)
    try:
        rng = np.random.default_rng(seed)
        a = _well(rng, batch + (n, n))
        b = rng.normal(size=batch + (n, 2))
        np.testing.assert_allclose(snp.linalg.solve(a, b), np.linalg.solve(a, b), rtol=1e-9,
                                   atol=1e-12)
        np.testing.assert_allclose(secant.jit(snp.linalg.solve)(a, b), np.linalg.solve(a, b),
                                   rtol=1e-9, atol=1e-12)
        g = secant.grad(lambda x: snp.sum(snp.linalg.slogdet(x)[1]))(a)
        np.testing.assert_allclose(g, np.swapaxes(np.linalg.inv(a), -1, -2), rtol=1e-8,
                                   atol=1e-12)
        s = a @ np.swapaxes(a, -1, -2)
        np.testing.assert_allclose(snp.linalg.cholesky(s), np.linalg.cholesky(s), rtol=1e-9,
                                   atol=1e-12)
    finally:
        secant.config.update("enable_x64", False)


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
def test_norm_spectral_orders_through_norm(x64, ord):
    a = np.random.default_rng(0).normal(size=(2, 3, 4))
    want = np.linalg.norm(a, ord, axis=(1, 2))
    np.testing.assert_allclose(snp.linalg.norm(a, ord, axis=(1, 2)), want, rtol=1e-10)
    np.testing.assert_allclose(secant.jit(lambda a: snp.linalg.norm(a, ord, axis=(1, 2)))(a),
                               want, rtol=1e-10)
    g = secant.grad(lambda a: snp.sum(snp.linalg.norm(a, ord, axis=(1, 2))))(a)
    eps, e = 1e-6, np.zeros_like(a)
    e[1, 2, 3] = eps
    fd = (np.linalg.norm(a + e, ord, axis=(1, 2)).sum()
          - np.linalg.norm(a - e, ord, axis=(1, 2)).sum()) / (2 * eps)
    np.testing.assert_allclose(g[1, 2, 3], fd, rtol=1e-6)

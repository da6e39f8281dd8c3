"""jax.scipy.linalg's Schur family: schur, hessenberg (LAPACK gees/gehrd: eagerly and under jit
the same kernel), rsf2csf, funm, solve_sylvester. Values against SciPy in float64 and float32,
eagerly and under jit; vmap against a loop; rsf2csf's gradient against central differences;
grad and jvp of schur, hessenberg, funm and solve_sylvester raise JAX's NotImplementedError."""
import numpy as np
import pytest
import scipy.linalg as sl

import secant
import secant.numpy as snp
from secant.scipy import linalg as L
from tests.central_differences import weighted_fd

pytestmark = pytest.mark.usefixtures("fast_compiles")

rng = np.random.default_rng(15)
A = rng.normal(size=(4, 4))          # real, with a complex eigenvalue pair
B = rng.normal(size=(3, 3))
C = rng.normal(size=(4, 3))
STACK = rng.normal(size=(3, 4, 4))


def _close(x, y, dtype):
    tol = 1e-10 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(np.asarray(x), y, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_schur_against_scipy_eager_and_jit(dtype, x64):
    a = A.astype(dtype)
    assert np.iscomplex(np.linalg.eigvals(A)).any()
    for output in ("real", "complex"):
        t0, z0 = sl.schur(a, output=output)
        for fn in (L.schur, secant.jit(L.schur, static_argnums=1)):
            t, z = fn(a, output)
            assert t.dtype == t0.dtype and z.dtype == z0.dtype
            # the same LAPACK routine (gees, unsorted): the same factors, not only a valid pair
            _close(t, t0, dtype)
            _close(z, z0, dtype)
            _close(np.asarray(z) @ np.asarray(t) @ np.asarray(z).conj().T, a, dtype)


def test_schur_default_float32_and_edge_cases():
    t, z = L.schur(np.arange(9.0).reshape(3, 3))
    assert t.dtype == np.float32                    # x64 off: float32, as JAX
    t, z = L.schur(np.eye(3, dtype=np.int32))       # integers: the default float type
    np.testing.assert_array_equal(np.asarray(t), np.eye(3))
    t, z = L.schur(np.array([[2.0]]))
    assert np.asarray(t).tolist() == [[2.0]] and np.asarray(z).tolist() == [[1.0]]
    t, z = L.schur(np.full((2, 2), np.nan))
    assert np.isnan(np.asarray(t)).any()
    with pytest.raises(secant.SecantError, match="square"):
        L.schur(np.ones((2, 3)))
    with pytest.raises(ValueError, match="output"):
        L.schur(A, output="triangular")


def test_schur_and_hessenberg_vmap_against_loop(x64):
    t, z = secant.vmap(L.schur)(STACK)
    for i, a in enumerate(STACK):
        t0, z0 = sl.schur(a)
        _close(t[i], t0, np.float64)
        _close(z[i], z0, np.float64)
    h, q = secant.jit(secant.vmap(lambda a: L.hessenberg(a, calc_q=True)))(STACK)
    for i, a in enumerate(STACK):
        h0, q0 = sl.hessenberg(a, calc_q=True)
        _close(h[i], h0, np.float64)
        _close(q[i], q0, np.float64)
    # the primitive takes stacks: a stack directly, as jax.scipy.linalg
    t, _ = L.schur(STACK)
    _close(t[2], sl.schur(STACK[2])[0], np.float64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_hessenberg_against_scipy(dtype, x64):
    a = (A + 1j * A.T if dtype == np.complex128 else A).astype(dtype)
    h0, q0 = sl.hessenberg(a, calc_q=True)
    for fn in (L.hessenberg, secant.jit(L.hessenberg, static_argnames="calc_q")):
        h, q = fn(a, calc_q=True)
        _close(h, h0, np.float32 if dtype == np.float32 else np.float64)
        _close(q, q0, np.float32 if dtype == np.float32 else np.float64)
        _close(fn(a, calc_q=False), h0, np.float32 if dtype == np.float32 else np.float64)
    assert np.asarray(L.hessenberg(np.array([[3.0]]), calc_q=True)[1]).tolist() == [[1.0]]
    assert np.shape(L.hessenberg(np.zeros((0, 0)))) == (0, 0)


@pytest.mark.parametrize("fn", [
    lambda a: snp.sum(L.schur(a)[0]),
    lambda a: snp.sum(L.hessenberg(a)),
    lambda a: snp.sum(snp.real(L.funm(a, snp.sin))),
    lambda a: snp.sum(L.solve_sylvester(a, a.T + 5.0, a)),
], ids=["schur", "hessenberg", "funm", "solve_sylvester"])
def test_no_derivative_raises_jax_error(fn):
    with pytest.raises(NotImplementedError, match="Differentiation rule for '(schur|hessenberg)'"):
        secant.grad(fn)(A.astype(np.float32))
    with pytest.raises(NotImplementedError, match="not implemented"):
        secant.jvp(fn, (A.astype(np.float32),), (A.astype(np.float32),))
    # the value alone is no error
    assert np.isfinite(float(fn(A.astype(np.float32))))


def test_rsf2csf_values_and_gradient(x64):
    t, z = sl.schur(A)
    t0, z0 = sl.rsf2csf(t, z)
    for fn in (L.rsf2csf, secant.jit(L.rsf2csf)):
        tc, zc = fn(t, z)
        _close(tc, t0, np.float64)
        _close(zc, z0, np.float64)
    tc, zc = L.rsf2csf(t.astype(np.float32), z.astype(np.float32))
    assert tc.dtype == np.complex64
    _close(tc, t0, np.float32)
    # a differentiable function of T (JAX's is jnp code): against central differences, where
    # T is smooth (a zero subdiagonal entry, once perturbed, starts a rotation: a kink; there
    # the gradient is JAX's, 0)
    ref = lambda t: np.abs(sl.rsf2csf(t, z)[0])     # noqa: E731
    g0, w = weighted_fd(ref, t)
    g = np.asarray(secant.grad(lambda t: snp.sum(snp.abs(L.rsf2csf(t, z)[0]) * w))(t))
    smooth = (t != 0) | np.triu(np.ones((4, 4), bool))
    assert smooth[2, 1] and not smooth[1, 0]        # the 2 x 2 block is rotated
    np.testing.assert_allclose(g[smooth], g0[smooth], rtol=1e-5, atol=1e-7)
    assert g[1, 0] == 0 and g[3, 2] == 0
    ts = np.stack([t, t * 1.5])
    tcs, _ = secant.vmap(lambda t: L.rsf2csf(t, z))(ts)
    for i in range(2):
        _close(tcs[i], sl.rsf2csf(ts[i], z)[0], np.float64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_funm_against_scipy(dtype, x64):
    a = A.astype(dtype)
    for func, np_func in ((snp.sin, np.sin), (snp.exp, np.exp),
                          (lambda x: x * x + 1.0, lambda x: x * x + 1.0)):
        want = sl.funm(a, np_func)
        _close(L.funm(a, func), want, dtype)
        _close(secant.jit(lambda a: L.funm(a, func))(a), want, dtype)
    _close(L.funm(a, snp.exp), sl.expm(A), dtype)
    f, err = L.funm(A, snp.exp, disp=False)
    _, err0 = sl.funm(A, np.exp, disp=False)
    np.testing.assert_allclose(float(err), err0, rtol=1e-6)
    f = secant.vmap(lambda a: L.funm(a, snp.cos))(STACK)
    for i, a in enumerate(STACK):
        _close(f[i], sl.funm(a, np.cos), np.float64)
    with pytest.raises(ValueError, match="square"):
        L.funm(STACK, snp.sin)


@pytest.mark.parametrize("method", ["schur", "eigen"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_solve_sylvester_against_scipy(method, dtype, x64):
    a, b, c = (x.astype(dtype) for x in (A, B + 2 * np.eye(3), C))
    want = sl.solve_sylvester(a, b, c)
    for fn in (L.solve_sylvester, secant.jit(L.solve_sylvester, static_argnames="method")):
        x = fn(a, b, c, method=method)
        assert x.dtype == dtype
        tol = 1e-9 if dtype == np.float64 else 2e-3
        np.testing.assert_allclose(np.asarray(x), want, rtol=tol, atol=tol)
    xs = secant.vmap(lambda c: L.solve_sylvester(a, b, c, method=method))(np.stack([c, 2 * c]))
    np.testing.assert_allclose(np.asarray(xs[1]), 2 * want, rtol=tol, atol=tol)


def test_solve_sylvester_complex_singular_and_errors(x64):
    ac = A + 1j * A.T
    # (SciPy 1.17's answer for a complex A with a real B is off by 1e-4: the residual checks)
    for method in ("schur", "eigen"):
        x = np.asarray(L.solve_sylvester(ac, B, C, method=method))
        assert x.dtype == np.complex128
        np.testing.assert_allclose(ac @ x + x @ B, C, atol=1e-12)
    # an eigenvalue of A plus one of B at 0: no unique solution, NaN (JAX's)
    assert np.isnan(np.asarray(L.solve_sylvester(np.eye(2), -np.eye(2), np.eye(2)))).all()
    with pytest.raises(ValueError, match="Incompatible shapes"):
        L.solve_sylvester(A, B, C.T)
    with pytest.raises(ValueError, match="Unrecognized method"):
        L.solve_sylvester(A, B, C, method="bartels")


def test_compositions_nested_vmap_and_derivatives_of_vmap():
    stack = STACK.reshape(3, 1, 4, 4).repeat(2, axis=1).astype(np.float32)
    t, _ = secant.vmap(secant.vmap(L.schur))(stack)
    h = secant.jit(secant.vmap(secant.vmap(L.hessenberg)))(stack)
    for i, j in np.ndindex(3, 2):
        _close(t[i, j], sl.schur(stack[i, j])[0], np.float32)
        _close(h[i, j], sl.hessenberg(stack[i, j]), np.float32)
    for fn in (secant.vmap(secant.grad(lambda x: snp.sum(L.schur(x)[0]))),
               secant.jit(secant.grad(lambda x: snp.sum(secant.vmap(L.schur)(x)[0]))),
               secant.jacfwd(lambda x: L.hessenberg(x[0])),
               secant.grad(lambda x: snp.sum(secant.vmap(
                   lambda y: L.solve_sylvester(y, y.T + 5.0, y))(x)))):
        with pytest.raises(NotImplementedError, match="Differentiation rule for"):
            fn(stack[:, 0])
    # schur of a constant inside a differentiated function: no derivative asked, no error
    t0 = sl.schur(STACK[0].astype(np.float32))[0]
    g = secant.grad(lambda x: snp.sum(x * L.schur(STACK[0].astype(np.float32))[0]))(STACK[1])
    _close(g, t0, np.float32)

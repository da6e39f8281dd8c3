"""Derivatives of complex-matrix functions off the beaten path (issue 15): jvp, vjp and grad
checked against float64 central differences of the function's own value.

pinv(hermitian=True) reads its matrix as (a + a^H) / 2 (eigh symmetrizes), so its derivative
must too, as JAX's rule does: until 2026-12-07 its jvp and vjp used the general pseudo-inverse
rule on the unsymmetrized tangent, a silently wrong derivative along any non-Hermitian
direction (grad of a real loss was not Hermitian, unlike JAX's). 0 x 0 matrices: inv and
solve (and their derivatives) raised an internal out-of-bounds error; JAX returns empties."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def _cm(rng, *shape):
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def _hermitian(rng, n):
    m = _cm(rng, n, n)
    return m @ m.conj().T + 3 * np.eye(n)


def _central(f, x, t, e=1e-6):
    return (np.asarray(f(snp.asarray(x + e * t))) - np.asarray(f(snp.asarray(x - e * t)))) / (2 * e)


def _central_grad(f, x, e=1e-6):
    """JAX's gradient of a real function of a complex matrix: d/dRe - i d/dIm, per entry."""
    g = np.zeros(x.shape, complex)
    for idx in np.ndindex(x.shape):
        d = np.zeros(x.shape, complex)
        d[idx] = e
        g[idx] = ((f(x + d) - f(x - d)) - 1j * (f(x + 1j * d) - f(x - 1j * d))) / (2 * e)
    return g


def _pinv_h(x):
    return snp.linalg.pinv(x, hermitian=True)


@pytest.mark.parametrize("wrap", ["eager", "jit"])
def test_hermitian_pinv_jvp_along_a_non_hermitian_tangent(x64, wrap):
    rng = np.random.default_rng(0)
    h, t = _hermitian(rng, 3), _cm(rng, 3, 3)

    def tangent(x, t):
        return secant.jvp(_pinv_h, (x,), (t,))[1]
    tangent = secant.jit(tangent) if wrap == "jit" else tangent
    got = np.asarray(tangent(snp.asarray(h), snp.asarray(t)))
    np.testing.assert_allclose(got, _central(_pinv_h, h, t), rtol=1e-6, atol=1e-8)


def test_hermitian_pinv_jvp_positional_hermitian_and_real(x64):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 3))
    s, t = a @ a.T + 2 * np.eye(3), rng.normal(size=(3, 3))

    def f(x):
        return snp.linalg.pinv(x, None, True)
    got = np.asarray(secant.jvp(f, (snp.asarray(s),), (snp.asarray(t),))[1])
    np.testing.assert_allclose(got, _central(f, s, t), rtol=1e-6, atol=1e-8)


def test_hermitian_pinv_grad_of_a_real_loss(x64):
    rng = np.random.default_rng(2)
    h, w = _hermitian(rng, 3), _cm(rng, 3, 3)

    def loss(x):
        return snp.sum(snp.abs(_pinv_h(x) - w) ** 2)
    got = np.asarray(secant.grad(loss)(snp.asarray(h)))
    want = _central_grad(lambda x: float(loss(snp.asarray(x))), h)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, got.conj().T, atol=1e-12)   # JAX's is Hermitian too


def test_hermitian_pinv_vjp_transposes_its_jvp(x64):
    """Re sum(ct * J t) == Re sum(vjp(ct) * t), JAX's pairing of complex tangents."""
    rng = np.random.default_rng(3)
    h, t, ct = _hermitian(rng, 3), _cm(rng, 3, 3), _cm(rng, 3, 3)
    jt = np.asarray(secant.jvp(_pinv_h, (snp.asarray(h),), (snp.asarray(t),))[1])
    (back,) = secant.vjp(_pinv_h, snp.asarray(h))[1](snp.asarray(ct))
    np.testing.assert_allclose(np.real(np.sum(ct * jt)), np.real(np.sum(np.asarray(back) * t)),
                               rtol=1e-9)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_inverse_and_solve_of_empty_matrices(x64, dtype):
    z = snp.zeros((0, 0), dtype)
    assert snp.linalg.inv(z).shape == (0, 0)
    assert secant.jit(snp.linalg.inv)(z).shape == (0, 0)
    assert snp.linalg.solve(snp.zeros((2, 0, 0), dtype), snp.zeros((2, 0, 3), dtype)).shape \
        == (2, 0, 3)
    assert secant.vmap(snp.linalg.inv)(snp.zeros((3, 0, 0), dtype)).shape == (3, 0, 0)
    assert secant.jvp(snp.linalg.inv, (z,), (z,))[1].shape == (0, 0)
    g = secant.grad(lambda x: snp.sum(snp.abs(snp.linalg.inv(x))))(z)
    assert g.shape == (0, 0) and g.dtype == dtype


@pytest.mark.parametrize("ord_", [2, -2, "nuc"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_reverse_over_reverse_through_spectral_matrix_norms(x64, ord_, dtype):
    """grad of a function of grad(norm(x, 2)): norm's source is an elif chain assigning `sums`
    in two of its branches; the second derivative wrote `zeros_like(sums)` in the third, where
    sums is unbound (an internal UnboundLocalError until 2026-12-07)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 3)) + (1j * rng.normal(size=(3, 3)) if dtype == np.complex128 else 0)
    c = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))
    g = secant.grad(lambda z: snp.linalg.norm(z, ord_))

    def h(z):
        return snp.real(snp.sum(snp.asarray(c) * g(z)))
    got = np.asarray(secant.grad(h)(snp.asarray(x)))
    if dtype == np.float64:
        e = 1e-6
        want = np.zeros(x.shape)
        for idx in np.ndindex(x.shape):
            d = np.zeros(x.shape)
            d[idx] = e
            want[idx] = (float(h(snp.asarray(x + d))) - float(h(snp.asarray(x - d)))) / (2 * e)
    else:
        want = _central_grad(lambda z: float(h(snp.asarray(z))), x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def _elif_chain(x, k):
    if k == 1:
        s = snp.sum(snp.abs(x), axis=0, keepdims=True)
        out = snp.max(s)
    elif k == 2:
        s = snp.sum(snp.abs(x), axis=1, keepdims=True)
        out = snp.min(s)
    else:
        out = snp.sum(snp.sin(x) ** 2)
    return out


@pytest.mark.parametrize("k", [1, 2, 3])
def test_grad_of_grad_of_a_user_elif_chain(x64, k):
    x = np.arange(1., 7.).reshape(2, 3) / 7
    g = secant.grad(lambda z: _elif_chain(z, k))
    got = np.asarray(secant.grad(lambda z: snp.sum(g(z) ** 2))(snp.asarray(x)))
    e, want = 1e-6, np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        d = np.zeros(x.shape)
        d[idx] = e
        want[idx] = (float(snp.sum(g(snp.asarray(x + d)) ** 2))
                     - float(snp.sum(g(snp.asarray(x - d)) ** 2))) / (2 * e)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_holomorphic_jacobians_through_a_real_cast_as_jax(x64):
    """jacrev(holomorphic=True) of slogdet's log|det| cast back to complex: the cast's
    transpose takes the complex cotangent's real part, as JAX 0.10.2 (its values match these
    closed forms to 1e-16), with no ComplexWarning."""
    import warnings
    rng = np.random.default_rng(7)
    a = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3)) + 3 * np.eye(3)

    def f(x):
        return snp.linalg.slogdet(x)[1].astype(x.dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rev = np.asarray(secant.jacrev(f, holomorphic=True)(snp.asarray(a)))
        fwd = np.asarray(secant.jacfwd(f, holomorphic=True)(snp.asarray(a)))
    inv_t = np.linalg.inv(a).T
    np.testing.assert_allclose(fwd, np.real(inv_t), atol=1e-12)    # along real directions
    np.testing.assert_allclose(rev, inv_t, atol=1e-12)   # Re tr(a^-1 da) = Re sum(a^-T * da)


@pytest.mark.parametrize("name", ["cholesky", "pinv", "pinv_hermitian", "expm"])
@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0)])
def test_empty_matrices_as_jax(x64, name, shape):
    """JAX 0.10.2 returns empties here; secant refused (cholesky's NumPy reshape, the max of
    no singular values in pinv's cutoff and of no column sums in expm's 1-norm)."""
    import secant.scipy.linalg as sla
    f = {"cholesky": snp.linalg.cholesky, "pinv": snp.linalg.pinv, "expm": sla.expm,
         "pinv_hermitian": _pinv_h}[name]
    z = snp.zeros(shape, np.complex128)
    assert f(z).shape == shape and f(z).dtype == np.complex128
    assert secant.jit(f)(z).shape == shape
    assert secant.vmap(f)(snp.zeros((3,) + shape)).shape == (3,) + shape
    assert secant.jvp(f, (z,), (z,))[1].shape == shape
    assert secant.grad(lambda x: snp.sum(snp.abs(f(x))))(z).shape == shape


def test_pinv_of_an_empty_rectangular_matrix(x64):
    z = snp.zeros((0, 3))
    assert snp.linalg.pinv(z).shape == (3, 0)
    assert secant.grad(lambda x: snp.sum(snp.linalg.pinv(x)))(z).shape == (0, 3)


def _with_function_default(x, fn=snp.fft.fft):
    return snp.real(fn(x, norm="ortho"))


@pytest.mark.xfail(strict=True, reason="vmap of jacfwd/jacrev of a function whose parameter "
                   "defaults to a function (fn=snp.fft.fft): SourceError 'cannot transform "
                   "<secant.jacfwd of ...>' (jacfwd alone, vmap alone and vmap of grad work)")
def test_vmap_of_jacfwd_with_a_function_default(x64):
    xs = np.arange(24.).reshape(2, 3, 4) / 5
    got = np.asarray(secant.vmap(secant.jacfwd(_with_function_default))(snp.asarray(xs)))
    want = np.stack([np.asarray(secant.jacfwd(_with_function_default)(snp.asarray(x)))
                     for x in xs])
    np.testing.assert_allclose(got, want, atol=1e-12)

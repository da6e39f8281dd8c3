"""numpy.linalg's spectral family beyond the shared harness (tests/library_cases/linalg_spectral.py):
reconstruction identities over batched leading axes, closed-form gradients, the dot-product
identity <u, J v> == <J^T u, v> of every op, second derivatives, jit(vmap(grad)) against a loop,
the LAPACK custom calls under jit, and the derivatives that are not defined."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.errors import SecantError

la = snp.linalg


def _rng(seed=0):
    return np.random.default_rng(seed)


def _spd(rng, shape):
    a = rng.normal(size=shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("compile", [False, True])
def test_reconstructions_over_batched_leading_axes(x64, compile):
    rng = _rng()
    a = rng.normal(size=(2, 3, 5, 4))
    s_pd = _spd(rng, (2, 3, 4, 4))
    run = secant.jit if compile else (lambda f: f)
    q, r = run(lambda a: tuple(la.qr(a)))(a)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ np.asarray(q), np.broadcast_to(
        np.eye(4), (2, 3, 4, 4)), atol=1e-12)
    np.testing.assert_allclose(np.tril(np.asarray(r), -1), 0, atol=0)
    u, s, vh = run(lambda a: tuple(la.svd(a, full_matrices=False)))(a)
    np.testing.assert_allclose((np.asarray(u) * np.asarray(s)[..., None, :]) @ vh, a,
                               atol=1e-12)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-12)
    w, v = run(lambda a: tuple(la.eigh(a)))(s_pd)
    np.testing.assert_allclose((np.asarray(v) * np.asarray(w)[..., None, :])
                               @ np.swapaxes(v, -1, -2), s_pd, atol=1e-11)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(s_pd), atol=1e-12)


def test_lapack_custom_calls_under_jit():
    x = np.eye(3, dtype=np.float32)
    for fn, target in ((la.eigvalsh, "lapack_ssyevd_ffi"), (la.svdvals, "lapack_sgesdd_ffi"),
                       (lambda a: la.qr(a)[0], "lapack_sorgqr_ffi")):
        text = secant.jit(fn).lower(x).as_text()
        assert f"stablehlo.custom_call @{target}(" in text and "api_version = 4" in text


def test_closed_form_gradients(x64):
    rng = _rng(1)
    a = rng.normal(size=(4, 3))
    spd = _spd(rng, (3, 3))
    # d tr(A) = I (eigvalsh reads (A + A^T) / 2)
    np.testing.assert_allclose(secant.grad(lambda a: snp.sum(la.eigvalsh(a)))(spd), np.eye(3),
                               atol=1e-12)
    # d log det(S) = S^-1 for symmetric S
    np.testing.assert_allclose(secant.grad(lambda s: snp.sum(snp.log(la.eigvalsh(s))))(spd),
                               np.linalg.inv(spd), atol=1e-12)
    # the nuclear norm's gradient is the polar factor U Vh; the spectral norm's u1 v1^T
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(secant.grad(lambda a: snp.sum(la.svdvals(a)))(a), u @ vh,
                               atol=1e-12)
    np.testing.assert_allclose(secant.grad(lambda a: la.matrix_norm_spectral(a, 2))(a),
                               np.outer(u[:, 0], vh[0]), atol=1e-12)
    # the pseudo-inverse of an invertible matrix: d(A^-1) = -A^-1 dA A^-1
    sq = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    t = rng.normal(size=(3, 3))
    inv = np.linalg.inv(sq)
    np.testing.assert_allclose(secant.jvp(la.pinv, (sq,), (t,))[1], -inv @ t @ inv, atol=1e-12)


OPS = {
    "eigh_values": (lambda a: la.eigh(a)[0], "spd"),
    "eigh_vectors": (lambda a: la.eigh(a)[1], "spd"),
    "svd_values": (la.svdvals, (4, 3)),
    "svd_u": (lambda a: la.svd(a, full_matrices=False)[0], (4, 3)),
    "svd_vh": (lambda a: la.svd(a, full_matrices=False)[2], (3, 5)),
    "svd_u_square_full": (lambda a: la.svd(a)[0], (3, 3)),
    "qr_q": (lambda a: la.qr(a)[0], (4, 3)),
    "qr_r": (lambda a: la.qr(a)[1], (4, 3)),
    "qr_wide_r": (lambda a: la.qr(a)[1], (2, 4)),
    "pinv": (la.pinv, (3, 5)),
    "lstsq_x": (lambda a: la.lstsq(a, snp.arange(5.0))[0], (5, 3)),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_dot_product_identity(x64, name):
    """<u, J v> == <J^T u, v>: the jvp and vjp rules of each op are each other's transposes."""
    fn, shape = OPS[name]
    rng = _rng(2)
    a = _spd(rng, (3, 3)) if shape == "spd" else rng.normal(size=shape)
    v = rng.normal(size=a.shape)
    if shape == "spd":
        v = v + v.T       # eigh reads the Hermitian part
    out, jv = secant.jvp(fn, (a,), (v,))
    u = rng.normal(size=np.shape(out))
    _, pullback = secant.vjp(fn, a)
    jtu, = pullback(u)
    np.testing.assert_allclose(np.sum(u * np.asarray(jv)), np.sum(np.asarray(jtu) * v),
                               rtol=1e-10)


def test_second_derivative_of_eigvalsh(x64):
    """f(A) = sum(eigvalsh(A)^3) = tr(S^3), S = (A + A^T)/2: grad f = 3 S^2, and the gradient
    of <grad f, C> is 3 sym(C_s S + S C_s), C_s = sym(C)."""
    rng = _rng(3)
    a, c = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    f = lambda a: snp.sum(la.eigvalsh(a) ** 3)   # noqa: E731
    s = (a + a.T) / 2
    np.testing.assert_allclose(secant.grad(f)(a), 3 * s @ s, atol=1e-10)
    cs = (c + c.T) / 2
    want = 3 * (cs @ s + s @ cs)
    got = secant.grad(lambda a: snp.sum(secant.grad(f)(a) * c))(a)
    np.testing.assert_allclose(got, (want + want.T) / 2, atol=1e-10)


def _gauge_invariant_loss(a):
    u, s, vh = la.svd(a, full_matrices=False)
    q, r = la.qr(a)
    return snp.sum((u @ vh) ** 2 * a) + snp.sum(s ** 3) + snp.sum(q * a) + snp.sum(r ** 2)


def test_jit_vmap_grad_against_a_loop(x64):
    batch = _rng(4).normal(size=(3, 4, 3))
    want = np.stack([np.asarray(secant.grad(_gauge_invariant_loss)(x)) for x in batch])
    got = secant.jit(secant.vmap(secant.grad(_gauge_invariant_loss)))(batch)
    np.testing.assert_allclose(got, want, atol=1e-10)
    eps = 1e-6
    e = np.zeros_like(batch[0])
    e[1, 2] = eps
    fd = (_gauge_invariant_loss(batch[0] + e) - _gauge_invariant_loss(batch[0] - e)) / (2 * eps)
    np.testing.assert_allclose(want[0][1, 2], fd, rtol=1e-6)


def test_lstsq_rank_deficient_against_numpy(x64):
    rng = _rng(5)
    a = rng.normal(size=(6, 2)) @ rng.normal(size=(2, 4))      # rank 2
    b = rng.normal(size=(6, 2))
    x, res, rank, s = la.lstsq(a, b)
    wx, _, wrank, ws = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x, wx, atol=1e-10)
    assert int(rank) == wrank == 2
    np.testing.assert_allclose(s, ws, atol=1e-12)
    assert int(la.matrix_rank(a)) == 2


def test_undefined_derivatives_are_nan_only_where_used(x64):
    """full_matrices adds an arbitrary basis of a complement (JAX refuses the derivative of
    full_matrices outright): a loss that uses it gets NaN, one that does not a finite gradient."""
    a = _rng(6).normal(size=(4, 2))
    used = secant.grad(lambda a: snp.sum(la.svd(a)[0][:, 3] * snp.arange(4.0)))(a)
    assert np.isnan(np.asarray(used)).all()
    unused = secant.grad(lambda a: snp.sum(la.svd(a)[1]))(a)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(unused, u @ vh, atol=1e-12)
    q_used = secant.grad(lambda a: snp.sum(la.qr(a, "complete")[0][:, 3] * snp.arange(4.0)))(a)
    assert np.isnan(np.asarray(q_used)).all()


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(SecantError, match="square"):
        la.eigh(np.ones((2, 3)))
    with pytest.raises(SecantError, match="mode='raw'"):
        la.qr(np.eye(2), "raw")
    with pytest.raises(SecantError, match="UPLO"):
        la.eigh(np.eye(2), UPLO="X", symmetrize_input=False)
    with pytest.raises(SecantError, match="at least 2 dimensions"):
        la.svd(np.ones(3))


def test_uplo_reads_one_triangle_like_numpy(x64):
    a = _rng(7).normal(size=(3, 3))
    for uplo in ("L", "U"):
        np.testing.assert_allclose(la.eigh(a, UPLO=uplo, symmetrize_input=False)[0],
                                   np.linalg.eigh(a, UPLO=uplo)[0], atol=1e-12)
        g = secant.grad(lambda a: snp.sum(la.eigh(a, uplo, False)[0] ** 2))(a)
        mask = np.tril(np.ones((3, 3))) if uplo == "L" else np.triu(np.ones((3, 3)))
        assert np.all(np.asarray(g)[mask == 0] == 0)      # the other triangle is not read


def test_generated_code_calls_the_decomposition_rule():
    def loss(a):
        w, v = snp.linalg.eigh(a)
        return snp.sum(w ** 3) + snp.sum(v[:, 0] ** 2)
    text = secant.source(secant.grad(loss))
    assert "return eigh_vjp((w_bar, v_bar), a)" in text




def _central(f, a, h=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = h
        g[i] = (f(a + e) - f(a - e)) / (2 * h)
    return g


_REPEATED = np.diag([1.0, 2.0, 2.0])       # a repeated eigenvalue (2) beside an isolated one (1)


@pytest.mark.parametrize("name, loss", [
    ("isolated eigenvalue", lambda m: la.eigh(m)[0][0] * 3.0),
    ("eigenvalue sum of squares", lambda m: snp.sum(la.eigh(m)[0] ** 2)),
    ("isolated eigenvector", lambda m: snp.sum(la.eigh(m)[1][:, 0]) ** 2),
    ("isolated singular vector", lambda m: snp.sum(la.svd(m, full_matrices=False)[0][:, 2] ** 3)),
    ("singular values", lambda m: snp.sum(la.svd(m, compute_uv=False) ** 2)),
])
@pytest.mark.parametrize("compile", [False, True])
def test_repeated_values_leave_unread_vectors_out(x64, name, loss, compile):
    """A repeated eigenvalue makes F[i, j] = 1 / (w[j] - w[i]) infinite; where the loss reads
    no vector of that eigenspace, the cotangent there is exactly 0 and the term is left out
    (JAX's symbolic zeros do the same for unread outputs; JAX gives NaN for the isolated vector
    here, as 0 * inf). Before, eager grad gave NaN on LAPACK's exactly equal eigenvalues."""
    run = secant.jit if compile else (lambda f: f)
    a = _REPEATED
    got = np.asarray(run(secant.grad(loss))(a))
    sym = lambda m: float(loss((m + m.T) / 2))
    np.testing.assert_allclose(got + got.T, 2 * _central(sym, a), atol=1e-6)


def test_repeated_values_read_by_the_loss_stay_undefined(x64):
    """A loss that reads one vector of a repeated eigenspace has no derivative: not finite."""
    got = np.asarray(secant.grad(lambda m: snp.sum(la.eigh(m)[1][:, 1]) ** 2)(_REPEATED))
    assert not np.all(np.isfinite(got))

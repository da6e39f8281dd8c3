"""numpy.linalg / lax.linalg / scipy.linalg, the last gaps: LAPACK's `info` (a failed
factorisation gives NaN, eagerly and under jit, as JAX), qr's and eig's derivatives through
solves (against finite differences, to second order), lstsq's residuals and rcond, hermitian=
for svd / pinv / matrix_rank, eager LU through the same LAPACK kernel jit runs, and batched
leading axes of every function against a loop (with hypothesis over sizes and batch shapes)."""
import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, strategies as st

import secant
import secant.numpy as snp
import secant.scipy.linalg as ssl
from secant import lax
from secant.backends.errors import SecantError

from user_programs.checks import rotated

la = snp.linalg


def _rng(seed=0):
    return np.random.default_rng(seed)


def _spd(rng, shape):
    a = rng.normal(size=shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _nan_rows(x):
    """Per batch element (first axis): all NaN, some NaN, or none."""
    x = np.asarray(x).reshape(np.shape(x)[0], -1)
    return [("all" if np.isnan(r).all() else "some" if np.isnan(r).any() else "none") for r in x]


# --- 1. LAPACK's info: NaN where the factorisation fails -------------------------------------------
@pytest.mark.parametrize("n", [3, 20])      # NumPy's path, and jit's kernel run eagerly
@pytest.mark.parametrize("name", ["eigh", "svd", "svdvals", "eig", "eigvalsh"])
def test_failed_decomposition_is_nan_for_that_matrix_only(x64, name, n):
    fns = {"eigh": lambda a: tuple(la.eigh(a)), "svd": lambda a: tuple(la.svd(a)),
           "svdvals": lambda a: (la.svd(a, compute_uv=False),), "eig": lambda a: tuple(la.eig(a)),
           "eigvalsh": lambda a: (la.eigvalsh(a),)}
    a = _rng().normal(size=(2, n, n))
    a[1, 0, 1] = np.nan         # LAPACK reports info != 0 (or returns NaNs) for matrix 1
    a[1, 1, 0] = np.nan
    eager, jitted = fns[name](a), secant.jit(fns[name])(a)
    for e, j in zip(eager, jitted):
        assert _nan_rows(e) == _nan_rows(j) == ["none", "all"]


def test_lowerings_read_info():
    x = np.eye(3, dtype=np.float32)
    for fn in (la.eigvalsh, la.svdvals, la.eigvals, lambda a: la.svd(a)[0]):
        text = secant.jit(fn).lower(x).as_text()
        call = text.index("stablehlo.custom_call @lapack_")
        after = text[call:]
        assert "stablehlo.compare EQ" in after and "stablehlo.select" in after
    text = secant.jit(lax.linalg.lu_factors).lower(x).as_text()
    assert "stablehlo.compare GE" in text[text.index("lapack_sgetrf_ffi"):]


@pytest.mark.parametrize("n", [2, 20])
def test_cholesky_of_a_non_positive_definite_matrix_is_nan(x64, n):
    a = np.stack([_spd(_rng(), (n, n)), -np.eye(n)])
    for fn in (la.cholesky, ssl.cholesky, lax.linalg.cholesky):
        for run in (fn, secant.jit(fn)):
            assert _nan_rows(run(a)) == ["none", "all"]


@pytest.mark.parametrize("n", [2, 20])
def test_singular_solve_is_not_finite_rather_than_an_error(x64, n):
    a = _rng().normal(size=(n, n))
    a[:, -1] = 0                # exactly singular: U's last pivot is exactly 0
    b = np.ones(n)
    for fn in (la.solve, la.inv, lambda a, b=b: la.solve(a, b)):
        args = (a, b) if fn is la.solve else (a,)
        for run in (fn, secant.jit(fn)):
            assert not np.isfinite(np.asarray(run(*args))).all()
    assert abs(float(la.det(a))) < 1e-10 and abs(float(secant.jit(la.det)(a))) < 1e-10


# --- 2. qr's and eig's rules through solves --------------------------------------------------------
def _fd_check(f, x, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """grad against a central difference along a random direction, and jvp against grad."""
    rng = _rng(seed)
    d = rng.normal(size=np.shape(x))
    fd = (f(x + eps * d) - f(x - eps * d)) / (2 * eps)
    g = np.asarray(secant.grad(f)(x))
    np.testing.assert_allclose(np.sum(g * d), fd, rtol=rtol, atol=atol)
    _, t = secant.jvp(f, (x,), (d,))
    np.testing.assert_allclose(float(t), fd, rtol=rtol, atol=atol)


def _qr_loss(a):
    q, r = la.qr(a)
    return snp.sum(snp.sin(q * 1.3)) + snp.sum(r ** 2 * 0.1) + snp.sum(snp.diagonal(r))


def _eig_loss(a):
    w, v = la.eig(a)
    return snp.sum(snp.real(w) ** 2) + snp.sum(snp.abs(v) ** 2 * snp.arange(3.0)) \
        + snp.real(snp.sum((v * w[None, :]) @ la.inv(v)))


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5)])
def test_qr_derivatives_against_finite_differences(x64, shape):
    _fd_check(lambda a: _qr_loss(a), _rng(1).normal(size=shape))


def test_eig_derivatives_against_finite_differences(x64):
    a = np.array([[2.0, 1.0, 0.3], [0.2, -1.0, 0.5], [0.4, 0.1, 0.5]])
    _fd_check(lambda a: _eig_loss(a), a)


@pytest.mark.parametrize("loss, x", [
    (_qr_loss, _rng(2).normal(size=(4, 3))),
    (_eig_loss, np.array([[2.0, 1.0, 0.3], [0.2, -1.0, 0.5], [0.4, 0.1, 0.5]]))])
def test_second_order_of_qr_and_eig(x64, loss, x):
    """The Hessian-vector product (jvp of grad) against a difference of gradients."""
    d = _rng(3).normal(size=x.shape)
    grad = secant.grad(loss)
    eps = 1e-5
    fd = (np.asarray(grad(x + eps * d)) - np.asarray(grad(x - eps * d))) / (2 * eps)
    _, hvp = secant.jvp(grad, (x,), (d,))
    np.testing.assert_allclose(np.asarray(hvp), fd, rtol=1e-4, atol=1e-6)


def test_rules_call_solves_not_pinv():
    import inspect
    from secant.numpy import linalg_spectral_rules as rules
    for name in ("qr_q_jvp", "qr_r_jvp", "qr_q_vjp", "qr_r_vjp", "eig_values_jvp",
                 "eig_values_vjp", "eig_vectors_jvp", "eig_vectors_vjp", "_qr_tangents"):
        src = inspect.getsource(getattr(rules, name))
        assert "pinv" not in src, name


def test_eig_values_vjp_dot_product_identity(x64):
    a = _rng(4).normal(size=(3, 3))
    u = _rng(5).normal(size=(3,))
    v = _rng(6).normal(size=(3, 3))
    f = lambda a: snp.real(la.eigvals(a))        # noqa: E731
    _, jv = secant.jvp(f, (a,), (v,))
    _, pull = secant.vjp(f, a)
    (ju,) = pull(u)
    np.testing.assert_allclose(np.sum(u * np.asarray(jv)), np.sum(np.asarray(ju) * v),
                               rtol=1e-10)


# --- 3. lstsq, hermitian= -------------------------------------------------------------------------
def test_lstsq_residuals_as_numpy(x64):
    rng = _rng(7)
    b = rng.normal(size=(5, 2))
    full = rng.normal(size=(5, 3))
    deficient = full.copy()
    deficient[:, 2] = deficient[:, 0]
    wide = rng.normal(size=(3, 5))
    for a, bb in ((full, b), (deficient, b), (wide, b[:3]), (full, b[:, 0])):
        x, res, rank, s = la.lstsq(a, bb)
        ex, eres, erank, es = np.linalg.lstsq(a, bb)
        np.testing.assert_allclose(x, ex, atol=1e-12)
        assert np.shape(res) == eres.shape
        np.testing.assert_allclose(res, eres, atol=1e-12)
        assert int(rank) == erank
        np.testing.assert_allclose(s, es, atol=1e-12)
    # traced: the residuals' shape cannot depend on the rank: NaN where NumPy gives none
    res = secant.jit(lambda a, b: la.lstsq(a, b)[1])(deficient, b)
    assert np.shape(res) == (2,) and np.isnan(np.asarray(res)).all()
    res = secant.jit(lambda a, b: la.lstsq(a, b)[1])(full, b)
    np.testing.assert_allclose(res, np.linalg.lstsq(full, b)[1], rtol=1e-12)


@pytest.mark.parametrize("rcond", [None, 1e-3, 0.3, 0.6])
def test_lstsq_rcond_as_numpy(x64, rcond):
    a = np.diag([4.0, 2.0, 1.0, 0.1])[:, :3] @ np.diag([1.0, 1.0, 1.0])
    a = np.vstack([a, np.ones((1, 3))])
    b = np.arange(5.0)
    x, res, rank, s = la.lstsq(a, b, rcond=rcond)
    ex, eres, erank, es = np.linalg.lstsq(a, b, rcond=rcond)
    np.testing.assert_allclose(x, ex, atol=1e-12)
    assert int(rank) == erank and np.shape(res) == eres.shape


def test_hermitian_svd_pinv_rank_as_numpy(x64):
    rng = _rng(8)
    h = rng.normal(size=(2, 4, 4)) + 1j * rng.normal(size=(2, 4, 4))
    h = h + np.conj(np.swapaxes(h, -1, -2))
    low = rng.normal(size=(4, 2))
    h_low = low @ low.T - 3 * np.outer(np.ones(4), np.ones(4))     # rank 3, indefinite
    for x in (h, h_low):
        for run in (lambda f: f, secant.jit):
            np.testing.assert_allclose(run(lambda a: la.pinv(a, hermitian=True))(x),
                                       np.linalg.pinv(x, hermitian=True), atol=1e-10)
            assert np.array_equal(run(lambda a: la.matrix_rank(a, hermitian=True))(x),
                                  np.linalg.matrix_rank(x, hermitian=True))
            np.testing.assert_allclose(
                run(lambda a: la.svd(a, hermitian=True, compute_uv=False))(x),
                np.linalg.svd(x, hermitian=True, compute_uv=False), atol=1e-10)
            u, s, vh = run(lambda a: tuple(la.svd(a, hermitian=True)))(x)
            eu, es, evh = np.linalg.svd(x, hermitian=True)
            np.testing.assert_allclose(s, es, atol=1e-10)
            np.testing.assert_allclose((np.asarray(u) * np.asarray(s)[..., None, :]) @ vh, x,
                                       atol=1e-10)
            np.testing.assert_allclose(np.abs(u), np.abs(eu), atol=1e-8)


def test_hermitian_derivatives_match_the_general_ones(x64):
    a = _rng(9).normal(size=(4, 4))
    h = a + a.T
    for fn in (lambda x, herm: snp.sum(la.pinv(x, hermitian=herm) * snp.arange(16.0).reshape(4, 4)),
               lambda x, herm: snp.sum(la.svd(x, hermitian=herm, compute_uv=False) ** 3)):
        for transform in (secant.grad, lambda f: secant.vmap(secant.grad(f))):
            x = h if transform is secant.grad else np.stack([h, 2 * h])
            got = transform(lambda x: fn((x + x.T) / 2 if x.ndim == 2 else x, True))(x)
            want = transform(lambda x: fn((x + x.T) / 2 if x.ndim == 2 else x, False))(x)
            np.testing.assert_allclose(got, want, atol=1e-9)


def test_hermitian_needs_square_matrices():
    with pytest.raises(SecantError, match="square"):
        la.pinv(np.ones((3, 2)), hermitian=True)
    with pytest.raises(SecantError, match="square"):
        la.svd(np.ones((3, 2)), hermitian=True)


# --- 4. eager runs jit's kernel --------------------------------------------------------------------
@pytest.mark.parametrize("n", [5, 40])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eager_lu_is_jits_getrf(x64, n, dtype):
    rng = _rng(10)
    a = (rng.normal(size=(2, n, n)) + (1j * rng.normal(size=(2, n, n)) if dtype == np.complex128
                                      else 0)).astype(dtype)
    eager = lax.linalg.lu(a)
    jitted = secant.jit(lax.linalg.lu)(a)
    np.testing.assert_array_equal(eager[1], jitted[1])     # same pivots (|re| + |im| rule)
    np.testing.assert_array_equal(eager[2], jitted[2])
    np.testing.assert_allclose(eager[0], jitted[0], rtol=1e-12, atol=1e-12)
    if n > 16:      # the very kernel: equal bits
        np.testing.assert_array_equal(eager[0], jitted[0])
    p, lower, upper = sl.lu(a[0])
    np.testing.assert_allclose(ssl.lu(a[0])[1], lower, atol=1e-10)


def test_lu_pivots_to_permutation_op():
    piv = np.array([[2, 2, 3, 3], [1, 3, 2, 3], [0, 1, 2, 3]], np.int32)
    want = [[2, 0, 3, 1, 4], [1, 3, 2, 0, 4], [0, 1, 2, 3, 4]]
    fn = lambda p: lax.linalg.lu_pivots_to_permutation(p, 5)   # noqa: E731
    for run in (fn, secant.jit(fn), secant.vmap(fn)):
        np.testing.assert_array_equal(run(piv), want)
    text = secant.jit(fn).lower(piv).as_text()
    assert "stablehlo.while" in text and text.count("stablehlo.dynamic_slice") == 2


def test_eager_solve_is_not_a_python_loop(x64):
    """Eager solve at n = 256 ran a Python loop over the pivots (~1 s); now one LAPACK call:
    measured against jit with a wide margin (the machine is shared)."""
    import time
    rng = _rng(11)
    a, b = rng.normal(size=(256, 256)), rng.normal(size=(256,))
    jitted = secant.jit(la.solve)
    la.solve(a, b), jitted(a, b)

    def best(f):
        times = []
        for _ in range(3):
            t = time.perf_counter()
            np.asarray(f(a, b))
            times.append(time.perf_counter() - t)
        return min(times)
    assert best(la.solve) < 30 * best(jitted) + 0.02
    np.testing.assert_allclose(la.solve(a, b), np.linalg.solve(a, b), rtol=1e-8, atol=1e-8)


# --- 5. batched leading axes: every function against a loop --------------------------------------
_N = 4
_A = _rng(12).normal(size=(2, 3, _N, _N)) + _N * np.eye(_N)
_S = _A @ np.swapaxes(_A, -1, -2) + np.eye(_N)
_B = _rng(13).normal(size=(2, 3, _N, 2))
_L = np.tril(_A)

def _rebuild(usv):
    u, s, vh = usv
    return (u * s[..., None, :]) @ vh


def _eig_rebuild(a):
    w, v = la.eig(a)
    return (v * w[..., None, :]) @ la.inv(v)


BATCHED = {
    "det": (la.det, np.linalg.det, [_A], None),
    "slogdet": (la.slogdet, np.linalg.slogdet, [_A], 2),
    "inv": (la.inv, np.linalg.inv, [_A], None),
    "solve": (la.solve, np.linalg.solve, [_A, _B], None),
    "cholesky": (la.cholesky, np.linalg.cholesky, [_S], None),
    "cholesky_upper": (lambda a: la.cholesky(a, upper=True),
                       lambda a: np.linalg.cholesky(a).T.conj(), [_S], None),
    "qr": (la.qr, np.linalg.qr, [_A], "abs2"),
    "qr_r": (lambda a: la.qr(a, mode="r"), lambda a: np.linalg.qr(a, mode="r"), [_A], "abs"),
    "eigh": (lambda a: la.eigh(a)[0], lambda a: np.linalg.eigh(a)[0], [_S], None),
    "eigvalsh": (la.eigvalsh, np.linalg.eigvalsh, [_S], None),
    "svdvals": (lambda a: la.svd(a, compute_uv=False),
                lambda a: np.linalg.svd(a, compute_uv=False), [_A], None),
    "svd": (lambda a: _rebuild(la.svd(a)), lambda a: a, [_A], None),
    "svd_hermitian": (lambda a: la.svd(a, hermitian=True, compute_uv=False),
                      lambda a: np.linalg.svd(a, hermitian=True, compute_uv=False), [_S], None),
    "pinv": (la.pinv, np.linalg.pinv, [_A], None),
    "pinv_hermitian": (lambda a: la.pinv(a, hermitian=True),
                       lambda a: np.linalg.pinv(a, hermitian=True), [_S], None),
    "matrix_rank": (la.matrix_rank, np.linalg.matrix_rank, [_A], None),
    "matrix_rank_hermitian": (lambda a: la.matrix_rank(a, hermitian=True),
                              lambda a: np.linalg.matrix_rank(a, hermitian=True), [_S], None),
    "matrix_power": (lambda a: la.matrix_power(a, 3), lambda a: np.linalg.matrix_power(a, 3),
                     [_A], None),
    "matrix_power_negative": (lambda a: la.matrix_power(a, -2),
                              lambda a: np.linalg.matrix_power(a, -2), [_A], None),
    "norm_fro": (lambda a: la.norm(a, axis=(-2, -1)), np.linalg.norm, [_A], None),
    "norm_2": (lambda a: la.norm(a, 2, axis=(-2, -1)), lambda a: np.linalg.norm(a, 2), [_A], None),
    "norm_nuc": (lambda a: la.norm(a, "nuc", axis=(-2, -1)),
                 lambda a: np.linalg.norm(a, "nuc"), [_A], None),
    "eigvals": (lambda a: snp.prod(la.eigvals(a), axis=-1),
                lambda a: np.prod(np.linalg.eigvals(a)), [_A], None),
    "eig": (lambda a: _eig_rebuild(a), lambda a: a, [_A], None),
    "scipy_cholesky": (ssl.cholesky, sl.cholesky, [_S], None),
    "scipy_cho_solve": (lambda a, b: ssl.cho_solve(ssl.cho_factor(a), b),
                        lambda a, b: sl.cho_solve(sl.cho_factor(a), b), [_S, _B], None),
    "scipy_solve_triangular": (lambda a, b: ssl.solve_triangular(a, b, lower=True),
                               lambda a, b: sl.solve_triangular(a, b, lower=True), [_L, _B], None),
    "scipy_lu": (ssl.lu, sl.lu, [_A], 3),
    "scipy_lu_factor": (ssl.lu_factor, sl.lu_factor, [_A], 2),
    "scipy_lu_solve": (lambda a, b: ssl.lu_solve(ssl.lu_factor(a), b),
                       lambda a, b: sl.lu_solve(sl.lu_factor(a), b), [_A, _B], None),
    "scipy_lu_solve_trans": (lambda a, b: ssl.lu_solve(ssl.lu_factor(a), b, trans=1),
                             lambda a, b: sl.lu_solve(sl.lu_factor(a), b, trans=1), [_A, _B],
                             None),
    "scipy_expm": (ssl.expm, sl.expm, [_A / 4], None),
    "scipy_det": (ssl.det, sl.det, [_A], None),
    "scipy_inv": (ssl.inv, sl.inv, [_A], None),
    "scipy_solve": (ssl.solve, sl.solve, [_A, _B], None),
    "scipy_solve_pos": (lambda a, b: ssl.solve(a, b, assume_a="pos"),
                        lambda a, b: sl.solve(a, b, assume_a="pos"), [_S, _B], None),
}


def _loop(g, xs):
    return [[g(*[x[i, j] for x in xs]) for j in range(xs[0].shape[1])]
            for i in range(xs[0].shape[0])]


def _stacked(rows, k=None):
    return np.array([[np.asarray(c if k is None else c[k]) for c in r] for r in rows])


def _assert_matches(got, ref, kind):
    def close(x, y):
        assert np.shape(x) == np.shape(y)       # (allclose alone would broadcast)
        np.testing.assert_allclose(np.asarray(x, complex), np.asarray(y, complex), rtol=1e-8,
                                   atol=1e-9)
    if kind == "abs2":
        for k in range(2):
            close(np.abs(np.asarray(got[k])), np.abs(_stacked(ref, k)))
    elif kind == "abs":
        close(np.abs(np.asarray(got)), np.abs(_stacked(ref)))
    elif isinstance(kind, int):
        for k in range(kind):
            close(got[k], _stacked(ref, k))
    else:
        close(got, _stacked(ref))


# (each function in two of the three modes in turn, all three under HYPOTHESIS_PROFILE=thorough)
@pytest.mark.parametrize("name, mode", [
    pytest.param(name, mode, id=f"{name}-{mode}")
    for name, mode in rotated(sorted(BATCHED), ["eager", "jit", "vmap"], 2)])
def test_batched_leading_axes_against_a_loop(x64, name, mode):
    f, g, xs, kind = BATCHED[name]
    one = (lambda a: f(a)) if len(xs) == 1 else (lambda a, b: f(a, b))
    run = {"eager": one, "jit": secant.jit(one), "vmap": secant.vmap(secant.vmap(one))}[mode]
    _assert_matches(run(*xs), _loop(g, xs), kind)


@given(batch=st.lists(st.integers(0, 3), max_size=2), n=st.integers(1, 6),
       seed=st.integers(0, 2 ** 16))
def test_hypothesis_solve_det_over_shapes(batch, n, seed):
    rng = _rng(seed)
    a = (rng.normal(size=tuple(batch) + (n, n)) + 2 * n * np.eye(n)).astype(np.float32)
    b = rng.normal(size=tuple(batch) + (n, 2)).astype(np.float32)
    np.testing.assert_allclose(la.solve(a, b), np.linalg.solve(a, b), rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(la.det(a), np.linalg.det(a), rtol=2e-3)
    perm = np.asarray(lax.linalg.lu(a)[2])
    lu = np.asarray(lax.linalg.lu(a)[0])
    lower = np.tril(lu, -1) + np.eye(n)
    np.testing.assert_allclose(lower @ np.triu(lu), np.take_along_axis(
        a, np.broadcast_to(perm[..., :, None], a.shape), axis=-2), rtol=1e-4, atol=1e-4)


@given(batch=st.lists(st.integers(1, 3), max_size=2), m=st.integers(1, 5), n=st.integers(1, 5),
       seed=st.integers(0, 2 ** 16))
def test_hypothesis_spectral_over_shapes(batch, m, n, seed):
    rng = _rng(seed)
    a = rng.normal(size=tuple(batch) + (m, n)).astype(np.float32)
    s = la.svd(a, compute_uv=False)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-3, atol=1e-4)
    q, r = la.qr(a)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, rtol=1e-3, atol=1e-4)
    h = np.swapaxes(a, -1, -2) @ a
    np.testing.assert_allclose(la.eigvalsh(h), np.linalg.eigvalsh(h), rtol=1e-3, atol=1e-3)

"""Issue 15, code written by others (fifth round): linear algebra under the transforms as users
write it with JAX: a matrix square root and a matrix logarithm by eigh, eigenvector losses that
are sign-invariant, the top eigenvalue's hessian, orthogonal Procrustes and a nuclear-norm
penalty by svd, the polar factor, qr-based least squares against lstsq, slogdet's second
derivative against its closed form, det's gradient against the cofactor formula under vmap,
expm of a generator along a jvp, pinv, and matrix_power; each under grad, jvp, vmap, jit and
second order as its author would use them, checked against float64 finite differences, closed
forms, a Python loop and eager."""
import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jit, jvp, vmap
from secant.scipy.linalg import expm

from others15_check import check_grad, check_vmap, fd_jvp, to_snp

RNG = np.random.default_rng(5656)


def spd(n, rng, shift=1.0):
    a = rng.normal(size=(n, n))
    return a @ a.T / n + shift * np.eye(n)


def sqrtm_eigh(a):
    w, v = jnp.linalg.eigh(a)
    return (v * jnp.sqrt(w)) @ v.T


def logm_eigh(a):
    w, v = jnp.linalg.eigh(a)
    return (v * jnp.log(w)) @ v.T


def test_matrix_square_root_and_log_by_eigh(x64):
    a = spd(4, RNG)
    s = sqrtm_eigh(to_snp(a))
    np.testing.assert_allclose(s @ s, a, rtol=1e-10, atol=1e-12)
    # a symmetric perturbation: d sqrtm(A)[E] solves S X + X S = E (the Sylvester equation)
    e = RNG.normal(size=(4, 4))
    e = e + e.T
    _, ds = jvp(sqrtm_eigh, (to_snp(a),), (to_snp(e),))
    np.testing.assert_allclose(np.asarray(s) @ ds + ds @ np.asarray(s), e, rtol=1e-8, atol=1e-10)
    # the log-Euclidean distance between SPD matrices, differentiated in one of them
    b = spd(4, RNG)
    dist = lambda a: jnp.sum((logm_eigh(a) - logm_eigh(to_snp(b))) ** 2)
    g = grad(dist)(to_snp(a))
    sym = lambda m: (m + m.T) / 2
    np.testing.assert_allclose(np.sum(np.asarray(sym(g)) * e),
                               fd_jvp(dist, (to_snp(a),), (e,)), rtol=1e-6)
    check_vmap(sqrtm_eigh, (np.stack([spd(4, RNG) for _ in range(3)]),))


def test_eigenvector_loss_sign_invariant_and_top_eigenvalue_hessian(x64):
    a = spd(4, RNG)
    sym = lambda m: (m + m.T) / 2

    def overlap(m):       # |<v_top, u>|^2 does not depend on the eigenvector's sign
        _, v = jnp.linalg.eigh(sym(m))
        return jnp.dot(v[:, -1], jnp.arange(1.0, 5.0)) ** 2

    check_grad(overlap, a, rtol=1e-5, atol=1e-7)
    top = lambda m: jnp.linalg.eigvalsh(sym(m))[-1]
    w, v = np.linalg.eigh(a)
    np.testing.assert_allclose(grad(top)(to_snp(a)), np.outer(v[:, -1], v[:, -1]), rtol=1e-8,
                               atol=1e-10)
    # the second derivative along a symmetric direction: sum over j of 2 (v_j' E v)^2 / (l - l_j)
    e = RNG.normal(size=(4, 4))
    e = e + e.T
    want = sum(2 * (v[:, j] @ e @ v[:, -1]) ** 2 / (w[-1] - w[j]) for j in range(3))
    hvp = jvp(grad(top), (to_snp(a),), (to_snp(e),))[1]
    np.testing.assert_allclose(np.sum(np.asarray(hvp) * e), want, rtol=1e-7)
    h = hessian(top)(to_snp(a))
    np.testing.assert_allclose(np.einsum("ij,ijkl,kl", e, np.asarray(h), e), want, rtol=1e-7)


def procrustes(a, b):
    u, _, vt = jnp.linalg.svd(a.T @ b)
    return u @ vt


def test_orthogonal_procrustes_and_nuclear_norm(x64):
    x = RNG.normal(size=(6, 3))
    q, _ = np.linalg.qr(RNG.normal(size=(3, 3)))
    y = x @ q + 0.01 * RNG.normal(size=(6, 3))
    r = procrustes(to_snp(x), to_snp(y))
    np.testing.assert_allclose(r, q, atol=0.05)
    np.testing.assert_allclose(r.T @ r, np.eye(3), atol=1e-12)
    loss = lambda y: jnp.sum((to_snp(x) @ procrustes(to_snp(x), y) - y) ** 2)
    check_grad(loss, y, rtol=1e-5, atol=1e-7)
    nuclear = lambda m: jnp.sum(jnp.linalg.svd(m, compute_uv=False))
    m = RNG.normal(size=(4, 3))
    u, _, vt = np.linalg.svd(m, full_matrices=False)
    np.testing.assert_allclose(grad(nuclear)(to_snp(m)), u @ vt, rtol=1e-9, atol=1e-12)
    check_grad(lambda m: nuclear(m) + 0.5 * jnp.sum(m ** 2), m)
    check_vmap(nuclear, (RNG.normal(size=(3, 4, 3)),))


def polar_factor(a):
    u, s, vt = jnp.linalg.svd(a, full_matrices=False)
    return u @ vt, (vt.T * s) @ vt


def test_polar_decomposition(x64):
    a = RNG.normal(size=(3, 3)) + 2 * np.eye(3)
    u, p = polar_factor(to_snp(a))
    np.testing.assert_allclose(u @ p, a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(p, sqrtm_eigh(to_snp(a.T @ a)), rtol=1e-8, atol=1e-10)
    check_grad(lambda a: jnp.sum(polar_factor(a)[0] * jnp.arange(9.0).reshape(3, 3)), a,
               rtol=1e-5, atol=1e-7)


def qr_least_squares(x, y):
    q, r = jnp.linalg.qr(x)
    return jnp.linalg.solve(r, q.T @ y)


def test_qr_least_squares_against_lstsq(x64):
    x, y = RNG.normal(size=(8, 3)), RNG.normal(size=8)
    w = qr_least_squares(to_snp(x), to_snp(y))
    w2 = jnp.linalg.lstsq(to_snp(x), to_snp(y))[0]
    np.testing.assert_allclose(w, np.linalg.lstsq(x, y, rcond=None)[0], rtol=1e-10)
    np.testing.assert_allclose(w2, w, rtol=1e-10)
    res = lambda x: jnp.sum((x @ qr_least_squares(x, to_snp(y)) - to_snp(y)) ** 2)
    res2 = lambda x: jnp.sum((x @ jnp.linalg.lstsq(x, to_snp(y))[0] - to_snp(y)) ** 2)
    g = check_grad(res, x)
    np.testing.assert_allclose(grad(res2)(to_snp(x)), g, rtol=1e-8, atol=1e-10)
    t = RNG.normal(size=(8, 3))
    _, got = jvp(lambda x: jnp.linalg.qr(x)[1], (to_snp(x),), (to_snp(t),))
    np.testing.assert_allclose(got, fd_jvp(lambda x: jnp.linalg.qr(x)[1], (to_snp(x),), (t,)),
                               rtol=1e-6, atol=1e-8)
    check_vmap(qr_least_squares, (RNG.normal(size=(3, 8, 3)), y), in_axes=(0, None))


def test_slogdet_second_order_and_det_cofactors(x64):
    a = spd(3, RNG)
    logdet = lambda a: jnp.linalg.slogdet(a)[1]
    e1, e2 = RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    inv = np.linalg.inv(a)
    # d^2 logdet [E1, E2] = -tr(A^-1 E1 A^-1 E2)
    h = hessian(logdet)(to_snp(a))
    np.testing.assert_allclose(np.einsum("ij,ijkl,kl", e1, np.asarray(h), e2),
                               -np.trace(inv @ e1 @ inv @ e2), rtol=1e-9)
    d2 = jvp(grad(logdet), (to_snp(a),), (to_snp(e2),))[1]
    np.testing.assert_allclose(np.sum(np.asarray(d2) * e1), -np.trace(inv @ e1 @ inv @ e2),
                               rtol=1e-9)
    # det's gradient is the cofactor matrix, det(A) A^-T, per matrix under vmap
    ms = RNG.normal(size=(4, 3, 3))
    got = vmap(grad(jnp.linalg.det))(to_snp(ms))
    want = [np.linalg.det(m) * np.linalg.inv(m).T for m in ms]
    np.testing.assert_allclose(got, want, rtol=1e-9)
    np.testing.assert_allclose(jit(vmap(grad(jnp.linalg.det)))(to_snp(ms)), got, rtol=1e-10)


def rotation_flow(omega, t):
    gen = jnp.array([[0.0, -omega[2], omega[1]], [omega[2], 0.0, -omega[0]],
                     [-omega[1], omega[0], 0.0]])
    return expm(t * gen)


def test_expm_of_a_generator(x64):
    omega = np.array([0.3, -0.5, 0.8])
    r = rotation_flow(to_snp(omega), 1.0)
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
    # d/dt expm(tG) = G expm(tG)
    _, dr = jvp(lambda t: rotation_flow(to_snp(omega), t), (1.0,), (1.0,))
    g = np.array([[0, -0.8, -0.5], [0.8, 0, -0.3], [0.5, 0.3, 0]])
    np.testing.assert_allclose(dr, g @ np.asarray(r), rtol=1e-9, atol=1e-12)
    x = np.array([1.0, 0.0, 0.0])
    check_grad(lambda w: jnp.sum((rotation_flow(w, 1.0) @ to_snp(x) - 0.5) ** 2), omega)
    check_vmap(lambda w: rotation_flow(w, 0.5), (RNG.normal(size=(3, 3)) * 0.5,))


def test_pinv_and_matrix_power(x64):
    m = RNG.normal(size=(5, 3))
    np.testing.assert_allclose(jnp.linalg.pinv(to_snp(m)), np.linalg.pinv(m), rtol=1e-10)
    check_grad(lambda m: jnp.sum(jnp.linalg.pinv(m) ** 2), m, rtol=1e-5, atol=1e-7)
    a = RNG.normal(size=(3, 3)) * 0.5
    p5 = lambda a: jnp.sum(jnp.linalg.matrix_power(a, 5))
    # d tr-sum(A^5)[E] = sum over k of 1' A^k E A^(4-k) 1
    e = RNG.normal(size=(3, 3))
    ones = np.ones(3)
    want = sum(ones @ np.linalg.matrix_power(a, k) @ e @ np.linalg.matrix_power(a, 4 - k) @ ones
               for k in range(5))
    np.testing.assert_allclose(np.sum(np.asarray(grad(p5)(to_snp(a))) * e), want, rtol=1e-10)
    check_vmap(lambda a: jnp.linalg.matrix_power(a, 3), (RNG.normal(size=(3, 3, 3)),))

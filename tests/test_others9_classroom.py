"""Issue 15, code written by others (ninth round): classroom AD exercises and calculus as a
student writes it with JAX. The softmax Jacobian's closed form, Jacobi's formula for log det
through a Cholesky factor, the curvature of a parametric curve from nested derivatives, the
Jacobian determinants of polar and spherical coordinates, divergence and Laplacian by trace of
jacfwd (a harmonic function's Laplacian is zero), the envelope theorem for an inner argmin solved
by Newton, Fisher information of logistic regression as the Hessian of its loss, the arc length
of a curve by a quadrature of |r'(t)|, a Taylor polynomial from repeated grad, and Newton's
square root differentiated through its fori_loop. Checked against closed forms, float64 central
differences, NumPy and a Python loop."""
import math

import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, lax, vmap

from others15_check import check_vmap

RNG = np.random.default_rng(909)


# --- the softmax Jacobian ------------------------------------------------------------------------
def softmax(z):
    e = jnp.exp(z - jnp.max(z))
    return e / e.sum()


def test_softmax_jacobian_closed_form(x64):
    z = RNG.normal(size=5)
    s = np.exp(z) / np.exp(z).sum()
    want = np.diag(s) - np.outer(s, s)
    for jac in (jacfwd, jacrev):
        np.testing.assert_allclose(jac(softmax)(jnp.asarray(z)), want, atol=1e-12)
        np.testing.assert_allclose(jit(jac(softmax))(jnp.asarray(z)), want, atol=1e-12)
    # one Jacobian per row of a batch, against a loop
    zs = RNG.normal(size=(3, 5))
    check_vmap(jacrev(softmax), (zs,))
    # the Jacobian's rows sum to zero: softmax is shift invariant
    np.testing.assert_allclose(np.sum(jacfwd(softmax)(jnp.asarray(z)), axis=1), 0, atol=1e-12)


# --- Jacobi's formula through a Cholesky factor -------------------------------------------------
def logdet_chol(a):
    l = jnp.linalg.cholesky(a)
    return 2.0 * jnp.sum(jnp.log(jnp.diag(l)))


def test_logdet_by_cholesky_gradient_is_the_inverse(x64):
    m = RNG.normal(size=(4, 4))
    a = m @ m.T + 4 * np.eye(4)
    np.testing.assert_allclose(logdet_chol(jnp.asarray(a)), np.linalg.slogdet(a)[1], rtol=1e-12)
    g = grad(logdet_chol)(jnp.asarray(a))
    # cholesky reads the lower triangle: the gradient wrt a symmetric a, symmetrised, is inv(a)
    np.testing.assert_allclose((np.asarray(g) + np.asarray(g).T) / 2, np.linalg.inv(a),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(jit(grad(logdet_chol))(jnp.asarray(a)), g, rtol=1e-10)
    # the directional second derivative along a symmetric v: -tr(A^-1 V A^-1 V)
    v = RNG.normal(size=(4, 4))
    v = v + v.T
    ainv = np.linalg.inv(a)
    d2 = jvp(lambda t: jvp(logdet_chol, (jnp.asarray(a) + t * v,), (jnp.asarray(v),))[1],
             (0.0,), (1.0,))[1]
    np.testing.assert_allclose(d2, -np.trace(ainv @ v @ ainv @ v), rtol=1e-8)


# --- curvature of a parametric curve ------------------------------------------------------------
def ellipse(t, a=2.0, b=1.0):
    return jnp.stack([a * jnp.cos(t), b * jnp.sin(t)])


def curvature(t):
    d1 = jacfwd(ellipse)(t)
    d2 = jacfwd(jacfwd(ellipse))(t)
    cross = d1[0] * d2[1] - d1[1] * d2[0]
    return jnp.abs(cross) / jnp.linalg.norm(d1) ** 3


def test_curvature_of_an_ellipse(x64):
    ts = np.linspace(0.1, 3.0, 7)
    a, b = 2.0, 1.0
    want = a * b / (a ** 2 * np.sin(ts) ** 2 + b ** 2 * np.cos(ts) ** 2) ** 1.5
    np.testing.assert_allclose(vmap(curvature)(jnp.asarray(ts)), want, rtol=1e-10)
    np.testing.assert_allclose(jit(vmap(curvature))(jnp.asarray(ts)), want, rtol=1e-10)
    np.testing.assert_allclose([float(curvature(t)) for t in ts], want, rtol=1e-10)
    # the curvature's own derivative in t (a third derivative of the curve)
    for t in (0.4, 1.2):
        e = 1e-5
        fd = (float(curvature(t + e)) - float(curvature(t - e))) / (2 * e)
        np.testing.assert_allclose(grad(curvature)(t), fd, rtol=1e-6)
        np.testing.assert_allclose(jit(grad(curvature))(t), fd, rtol=1e-6)


# --- coordinate changes: the Jacobian determinant ------------------------------------------------
def polar(p):
    r, th = p
    return jnp.array([r * jnp.cos(th), r * jnp.sin(th)])


def spherical(p):
    r, th, ph = p[0], p[1], p[2]
    return jnp.stack([r * jnp.sin(th) * jnp.cos(ph), r * jnp.sin(th) * jnp.sin(ph),
                      r * jnp.cos(th)])


def test_jacobian_determinants_of_coordinate_changes(x64):
    pts = np.array([[1.5, 0.3], [0.7, 2.0], [2.0, -1.0]])
    dets = vmap(lambda p: jnp.linalg.det(jacfwd(polar)(p)))(jnp.asarray(pts))
    np.testing.assert_allclose(dets, pts[:, 0], rtol=1e-12)
    sph = np.array([[1.2, 0.5, 0.3], [2.0, 1.1, -2.0]])
    dets = jit(vmap(lambda p: jnp.linalg.det(jacrev(spherical)(p))))(jnp.asarray(sph))
    np.testing.assert_allclose(dets, sph[:, 0] ** 2 * np.sin(sph[:, 1]), rtol=1e-12)
    # d det / d r of the spherical Jacobian: 2 r sin(theta)
    g = grad(lambda p: jnp.linalg.det(jacfwd(spherical)(p)))(jnp.asarray(sph[0]))
    r, th, _ = sph[0]
    np.testing.assert_allclose(g, [2 * r * np.sin(th), r ** 2 * np.cos(th), 0.0], atol=1e-10)


# --- divergence and Laplacian -------------------------------------------------------------------
def field(x):
    return jnp.array([x[0] * x[1], jnp.sin(x[1]) * x[2], x[0] ** 2 * x[2]])


def divergence(f):
    return lambda x: jnp.trace(jacfwd(f)(x))


def harmonic(x):
    return x[0] ** 2 - x[1] ** 2 + x[0] * x[2] + jnp.exp(x[0]) * jnp.cos(x[1])


def laplacian(f):
    return lambda x: jnp.trace(hessian(f)(x))


def test_divergence_and_laplacian(x64):
    xs = RNG.normal(size=(4, 3))
    want = xs[:, 1] + np.cos(xs[:, 1]) * xs[:, 2] + xs[:, 0] ** 2
    np.testing.assert_allclose(vmap(divergence(field))(jnp.asarray(xs)), want, rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(divergence(field)))(jnp.asarray(xs)), want, rtol=1e-12)
    np.testing.assert_allclose(vmap(laplacian(harmonic))(jnp.asarray(xs)), 0, atol=1e-12)
    # the gradient of the divergence: (2 x0, 1 - sin(x1) x2, cos(x1))
    g = vmap(grad(divergence(field)))(jnp.asarray(xs))
    want = np.stack([2 * xs[:, 0], 1 - np.sin(xs[:, 1]) * xs[:, 2], np.cos(xs[:, 1])], axis=1)
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


# --- the envelope theorem -----------------------------------------------------------------------
def inner_objective(y, theta):
    return jnp.cosh(y) - theta * y + 0.1 * y ** 4


def argmin_newton(theta, steps=30):
    y = theta * 0.0
    for _ in range(steps):
        g = grad(inner_objective)(y, theta)
        h = grad(grad(inner_objective))(y, theta)
        y = y - g / h
    return y


def value(theta):
    return inner_objective(lax.stop_gradient(argmin_newton(theta)), theta)


def test_envelope_theorem(x64):
    for theta in (0.3, 1.5, -0.8):
        y = float(argmin_newton(theta))
        # value'(theta) = d/dtheta f(y*, theta) at fixed y* = -y*
        np.testing.assert_allclose(grad(value)(theta), -y, rtol=1e-12)
        np.testing.assert_allclose(jit(grad(value))(theta), -y, rtol=1e-10)
        # the argmin's own sensitivity, by the implicit function theorem: 1 / f_yy
        f_yy = np.cosh(y) + 1.2 * y ** 2
        np.testing.assert_allclose(grad(argmin_newton)(theta), 1 / f_yy, rtol=1e-8)
    thetas = jnp.asarray([0.3, 1.5, -0.8])
    np.testing.assert_allclose(vmap(grad(value))(thetas),
                               [-float(argmin_newton(t)) for t in (0.3, 1.5, -0.8)], rtol=1e-10)


# --- Fisher information of logistic regression ----------------------------------------------------
def logistic_nll(w, x, y):
    z = x @ w
    return jnp.sum(jnp.logaddexp(0.0, z) - y * z)


def test_logistic_fisher_is_the_hessian(x64):
    x = RNG.normal(size=(20, 3))
    y = (RNG.uniform(size=20) < 0.5).astype(np.float64)
    w = RNG.normal(size=3) * 0.5
    p = 1 / (1 + np.exp(-x @ w))
    np.testing.assert_allclose(grad(logistic_nll)(jnp.asarray(w), x, y), x.T @ (p - y),
                               rtol=1e-10)
    fisher = x.T @ np.diag(p * (1 - p)) @ x
    for h in (hessian(logistic_nll), jit(hessian(logistic_nll)), jacfwd(jacrev(logistic_nll))):
        np.testing.assert_allclose(h(jnp.asarray(w), x, y), fisher, rtol=1e-10)
    # per-example gradients sum to the full gradient
    per = vmap(grad(logistic_nll), in_axes=(None, 0, 0))(jnp.asarray(w), x[:, None, :],
                                                          y[:, None])
    np.testing.assert_allclose(np.sum(per, 0), x.T @ (p - y), rtol=1e-10)
    np.testing.assert_allclose(per, (p - y)[:, None] * x, rtol=1e-10)


# --- arc length by quadrature ----------------------------------------------------------------------
def helix(t, radius, pitch):
    return jnp.stack([radius * jnp.cos(t), radius * jnp.sin(t), pitch * t])


def arc_length(radius, pitch, n=200):
    ts = jnp.linspace(0.0, 2 * math.pi, n)
    speeds = vmap(lambda t: jnp.linalg.norm(jacfwd(helix)(t, radius, pitch)))(ts)
    return jnp.trapezoid(speeds, ts) if hasattr(jnp, "trapezoid") else jnp.trapz(speeds, ts)


def test_helix_arc_length(x64):
    r, c = 1.3, 0.4
    want = 2 * math.pi * math.hypot(r, c)
    np.testing.assert_allclose(arc_length(r, c), want, rtol=1e-12)
    np.testing.assert_allclose(jit(arc_length, static_argnums=2)(r, c, 200), want, rtol=1e-12)
    g = grad(arc_length, argnums=(0, 1))(r, c)
    h = math.hypot(r, c)
    np.testing.assert_allclose(g, (2 * math.pi * r / h, 2 * math.pi * c / h), rtol=1e-10)
    np.testing.assert_allclose(jit(grad(arc_length))(r, c), 2 * math.pi * r / h, rtol=1e-10)
    np.testing.assert_allclose(grad(grad(arc_length))(r, c), 2 * math.pi * c ** 2 / h ** 3,
                               rtol=1e-8)


# --- a Taylor polynomial from repeated grad ------------------------------------------------------
def f_taylor(x):
    return jnp.exp(jnp.sin(x))


def taylor_coefficients(f, x0, order):
    coeffs, d = [], f
    for k in range(order + 1):
        coeffs.append(d(x0) / math.factorial(k))
        d = grad(d)
    return coeffs


def test_taylor_polynomial_of_exp_sin():
    # exp(sin x) = 1 + x + x^2/2 - x^4/8 - x^5/15 + ...
    coeffs = [float(c) for c in taylor_coefficients(f_taylor, 0.0, 5)]
    np.testing.assert_allclose(coeffs, [1, 1, 0.5, 0, -1 / 8, -1 / 15], atol=1e-5)
    coeffs_jit = [float(c) for c in taylor_coefficients(lambda x: jit(f_taylor)(x), 0.0, 3)]
    np.testing.assert_allclose(coeffs_jit, [1, 1, 0.5, 0], atol=1e-5)
    # the fourth derivative, batched over points, against the closed form's differences
    xs = jnp.asarray([0.0, 0.5, 1.0], dtype=jnp.float32)
    d4 = vmap(grad(grad(grad(grad(f_taylor)))))(xs)
    loop = [float(grad(grad(grad(grad(f_taylor))))(float(x))) for x in (0.0, 0.5, 1.0)]
    np.testing.assert_allclose(d4, loop, rtol=1e-5)
    assert d4.dtype == np.float32


# --- Newton's square root in a fori_loop ----------------------------------------------------------
def newton_sqrt(a, iters=25):
    def body(i, x):
        return 0.5 * (x + a / x)
    return lax.fori_loop(0, iters, body, jnp.maximum(a, 1.0))


def test_newton_sqrt_differentiated_through_the_loop(x64):
    a = jnp.asarray([0.25, 2.0, 9.0, 30.0])
    np.testing.assert_allclose(vmap(newton_sqrt)(a), np.sqrt(a), rtol=1e-14)
    np.testing.assert_allclose(jit(vmap(newton_sqrt))(a), np.sqrt(a), rtol=1e-14)
    np.testing.assert_allclose(vmap(grad(newton_sqrt))(a), 0.5 / np.sqrt(a), rtol=1e-10)
    np.testing.assert_allclose(jit(vmap(grad(newton_sqrt)))(a), 0.5 / np.sqrt(a), rtol=1e-10)
    np.testing.assert_allclose(vmap(grad(grad(newton_sqrt)))(a), -0.25 * np.asarray(a) ** -1.5,
                               rtol=1e-8)
    # forward mode through the same loop
    _, t = jvp(newton_sqrt, (9.0,), (1.0,))
    np.testing.assert_allclose(t, 1 / 6, rtol=1e-12)

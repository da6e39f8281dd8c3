"""odeint (secant.experimental.ode) in every composition (issue 15): vmap of second derivatives
(vmap(hessian), vmap(jacrev(grad)), vmap(vmap(grad(grad)))), second derivatives and forward mode
of a pytree state (raveled into one array, as JAX's odeint does), and derivatives with respect
to the time grid and to extra arguments given as a tuple or dict. Against closed forms: for
dy/dt = -k y cos(t) + c, y(t) = y0 exp(-k sin t) + c int_0^t exp(-k (sin t - sin s)) ds; vmap
also against a Python loop of the same composition."""
import os

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.experimental.ode import odeint

from user_programs.checks import rotated

TS = np.array([0.0, 0.4, 1.1])
S1, S2 = np.sin(TS[1]), np.sin(TS[2])
XB = np.array([[0.3, -0.7, 1.1], [0.32, -0.58, 1.04]])


def rhs(y, t, k):
    return -k * y * snp.cos(t)


def f(x):
    """y(T2) + x2 y(T1), y0 = x0, k = x1."""
    ys = odeint(rhs, x[0], TS, x[1])
    return ys[-1] + x[2] * ys[1]


def f_hessian(x):
    y0, k, w = x
    e1, e2 = np.exp(-k * S1), np.exp(-k * S2)
    return np.array([[0.0, -(S2 * e2 + w * S1 * e1), e1],
                     [-(S2 * e2 + w * S1 * e1), y0 * (S2 ** 2 * e2 + w * S1 ** 2 * e1),
                      -y0 * S1 * e1],
                     [e1, -y0 * S1 * e1, 0.0]])


# (hessian, forward over reverse, by default; reverse over reverse (jacrev_grad: 14 CPU s, as
# test_odeint_second_order's jacrev(grad) without the vmap) and jacfwd_grad under
# HYPOTHESIS_PROFILE=thorough)
@pytest.mark.parametrize("how", [how for _, how in rotated(
    [f], ["hessian", "jacrev_grad", "jacfwd_grad"])])
def test_vmap_of_a_second_derivative(x64, how):
    """Each example solved with its own steps inside the derivative's own vmap (jacrev's rows,
    jacfwd's columns): the batching rule's derivative is that of its body."""
    inner = {"hessian": secant.hessian(f), "jacrev_grad": secant.jacrev(secant.grad(f)),
             "jacfwd_grad": secant.jacfwd(secant.grad(f))}[how]
    got = np.asarray(secant.vmap(inner)(XB))
    for x, h in zip(XB, got):
        np.testing.assert_allclose(h, f_hessian(x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, [inner(x) for x in XB], rtol=1e-9, atol=1e-12)


def test_jit_of_vmap_of_hessian(x64):
    got = secant.jit(secant.vmap(secant.hessian(f)))(XB)
    for x, h in zip(XB, np.asarray(got)):
        np.testing.assert_allclose(h, f_hessian(x), rtol=1e-6, atol=1e-8)


def test_vmap_of_vmap_of_grad_of_grad(x64):
    def final(k):
        return odeint(rhs, 0.8, TS, k)[-1]
    ks = np.array([[0.3, 0.5], [0.7, 0.9]])
    got = secant.vmap(secant.vmap(secant.grad(secant.grad(final))))(ks)
    np.testing.assert_allclose(got, 0.8 * S2 ** 2 * np.exp(-ks * S2), rtol=1e-6)


# --- a pytree state ---------------------------------------------------------------------------
def tree_rhs(s, t, k):
    """a' = -k a, b' = a w: a = a0 exp(-k t), b = b0 + w a0 (1 - exp(-k t)) / k."""
    return {"a": -k * s["a"], "b": s["a"] * snp.array([2.0, 1.0])}


def tree_final(a0, k):
    ys = odeint(tree_rhs, {"a": a0, "b": snp.array([0.0, 1.0])}, TS, k)
    return ys["a"][-1] ** 2 + snp.sum(ys["b"][-1])


def tree_final_exact(a0, k):
    e = np.exp(-k * TS[-1])
    return (a0 * e) ** 2 + 1.0 + 3.0 * a0 * (1 - e) / k


def _hessian_fd(fn, x, h=1e-4):
    """Central second differences of the closed form (float64, exact function)."""
    n = len(x)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ei, ej = np.eye(n)[i] * h, np.eye(n)[j] * h
            out[i, j] = (fn(*(x + ei + ej)) - fn(*(x + ei - ej)) - fn(*(x - ei + ej))
                         + fn(*(x - ei - ej))) / (4 * h * h)
    return out


def test_second_derivatives_of_a_pytree_state(x64):
    x = np.array([0.9, 0.6])
    want = _hessian_fd(tree_final_exact, x)
    got = secant.hessian(lambda v: tree_final(v[0], v[1]))(snp.asarray(x))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    d2k = secant.grad(secant.grad(tree_final, argnums=1), argnums=1)(0.9, 0.6)
    np.testing.assert_allclose(d2k, want[1, 1], rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(secant.grad(tree_final)))(0.9, 0.6),
                               want[0, 0], rtol=1e-6)


def test_forward_mode_and_vmap_of_a_pytree_state(x64):
    """jvp of the whole trajectory, and vmap(hessian) against a loop."""
    out, out_dot = secant.jvp(lambda k: odeint(tree_rhs, {"a": 0.9, "b": snp.zeros(2)}, TS, k),
                              (0.6,), (1.0,))
    e = np.exp(-0.6 * TS)
    np.testing.assert_allclose(out["a"], 0.9 * e, rtol=1e-7)
    np.testing.assert_allclose(out_dot["a"], -TS * 0.9 * e, rtol=1e-6, atol=1e-12)
    db = 0.9 * (TS * e * 0.6 - (1 - e)) / 0.6 ** 2         # d/dk of a0 (1 - e^{-kt}) / k
    np.testing.assert_allclose(out_dot["b"], np.outer(db, [2.0, 1.0]), rtol=1e-6, atol=1e-10)
    xs = np.array([[0.9, 0.6], [0.5, 1.2]])
    hess = secant.hessian(lambda v: tree_final(v[0], v[1]))
    got = secant.vmap(hess)(xs)
    np.testing.assert_allclose(got, [hess(x) for x in xs], rtol=1e-9)
    for x, h in zip(xs, np.asarray(got)):
        np.testing.assert_allclose(h, _hessian_fd(tree_final_exact, x), rtol=1e-6, atol=1e-7)


def test_a_state_with_leaves_of_two_dtypes_comes_back_in_them(x64):
    out = odeint(lambda s, t: (-s[0], -s[1]), (np.float32(1.0), np.array([2.0])), TS)
    assert out[0].dtype == np.float32 and out[1].dtype == np.float64
    np.testing.assert_allclose(out[1][:, 0], 2 * np.exp(-TS), rtol=1e-7)


# --- the time grid and extra arguments --------------------------------------------------------
def test_derivatives_with_respect_to_the_time_grid(x64):
    """y(T2) = y0 exp(-k (sin T2 - sin t0)): moving t0 or T2; the middle time does not count."""
    y0, k = 0.8, 0.7
    ts = snp.asarray(TS)
    y = y0 * np.exp(-k * (S2 - np.sin(TS[0])))
    d = np.array([k * np.cos(TS[0]) * y, 0.0, -k * np.cos(TS[2]) * y])

    def last(ts):
        return odeint(rhs, y0, ts, k)[-1]
    for how in (secant.grad, secant.jacfwd, secant.jacrev):
        np.testing.assert_allclose(how(last)(ts), d, rtol=1e-6, atol=1e-8)
    c0, c2 = k * np.cos(TS[0]), -k * np.cos(TS[2])
    want = np.array([[c0 ** 2 - k * np.sin(TS[0]), 0.0, c0 * c2], [0.0, 0.0, 0.0],
                     [c0 * c2, 0.0, c2 ** 2 + k * np.sin(TS[2])]]) * y
    np.testing.assert_allclose(secant.hessian(last)(ts), want, rtol=1e-6, atol=1e-7)


def _dict_rhs(y, t, p):
    return -p["k"] * y + p["c"][0]


def _tuple_rhs(y, t, p):
    return -p[0] * y + p[1]


def _affine_final(y0, k, c, t=TS[-1]):
    """y' = -k y + c: y(t) = c/k + (y0 - c/k) exp(-k t)."""
    return c / k + (y0 - c / k) * np.exp(-k * t)


def _affine_grad(k, c, y0=0.8, h=1e-5):
    return np.array([(_affine_final(y0, k + h, c) - _affine_final(y0, k - h, c)) / (2 * h),
                     (_affine_final(y0, k, c + h) - _affine_final(y0, k, c - h)) / (2 * h)])


@pytest.mark.parametrize("how", ["grad", "jacfwd", "jacrev"])
def test_derivatives_with_respect_to_a_tuple_or_dict_of_args(x64, how):
    d = getattr(secant, how)
    want = _affine_grad(0.7, 0.1)
    got = d(lambda p: odeint(_dict_rhs, 0.8, TS, p)[-1])({"k": 0.7, "c": snp.asarray([0.1])})
    np.testing.assert_allclose([got["k"], got["c"][0]], want, rtol=1e-6)
    got = d(lambda p: odeint(_tuple_rhs, 0.8, TS, p)[-1])((0.7, 0.1))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_hessian_with_respect_to_a_dict_of_args(x64):
    h = 1e-4

    def fd(i, j):
        e = [np.eye(2)[i] * h, np.eye(2)[j] * h]
        x = np.array([0.7, 0.1])
        return sum(s * _affine_final(0.8, *(x + a * e[0] + b * e[1]))
                   for a, b, s in [(1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)]) / (4 * h * h)
    got = secant.hessian(lambda p: odeint(_dict_rhs, 0.8, TS, p)[-1])(
        {"k": 0.7, "c": snp.asarray([0.1])})
    np.testing.assert_allclose(got["k"]["k"], fd(0, 0), rtol=1e-5)
    np.testing.assert_allclose(got["k"]["c"][0], fd(0, 1), rtol=1e-5)
    np.testing.assert_allclose(got["c"]["k"][0], fd(1, 0), rtol=1e-5)
    np.testing.assert_allclose(got["c"]["c"][0, 0], 0.0, atol=1e-8)    # (linear in c)


def test_no_extra_arguments_and_a_dict_state(x64):
    """a' = -a b, b' = 0: a(T) = a0 exp(-b0 T); odeint(func, y0, t) with no *args."""
    def rhs2(s, t):
        return {"a": -s["a"] * s["b"], "b": 0.0 * s["b"]}

    def last(y):
        return odeint(rhs2, y, TS)["a"][-1]
    y = {"a": 0.8, "b": 0.7}
    e = np.exp(-0.7 * TS[-1])
    g = secant.grad(last)(y)
    np.testing.assert_allclose([g["a"], g["b"]], [e, -0.8 * TS[-1] * e], rtol=1e-6)
    h = secant.hessian(last)(y)
    np.testing.assert_allclose([[h["a"]["a"], h["a"]["b"]], [h["b"]["a"], h["b"]["b"]]],
                               [[0.0, -TS[-1] * e], [-TS[-1] * e, 0.8 * TS[-1] ** 2 * e]],
                               rtol=1e-6, atol=1e-9)


def test_forward_over_forward_and_jvp_of_vmap(x64):
    """jacfwd(jacfwd): the sensitivity equations' own tangent; jvp(vmap(f)): the batched
    custom_vjp keeps odeint's forward rule (jvp_twin)."""
    def final(k):
        return odeint(rhs, 0.8, TS, k)[-1]       # 0.8 exp(-k S2)
    np.testing.assert_allclose(secant.jacfwd(secant.jacfwd(final))(0.7),
                               0.8 * S2 ** 2 * np.exp(-0.7 * S2), rtol=1e-6)
    ks = np.array([0.3, 0.9])
    _, dot = secant.jvp(secant.vmap(final), (ks,), (np.ones(2),))
    np.testing.assert_allclose(dot, -0.8 * S2 * np.exp(-ks * S2), rtol=1e-6)


def test_third_derivative(x64):
    """grad(grad(grad)) and its vmap: the adjoint's derivatives differentiated again (the
    augmented state raveled from a tuple, whose cotangent a third derivative gives back as
    one)."""
    def final(k):
        return odeint(rhs, 0.8, TS, k)[-1]       # 0.8 exp(-k S2)
    g3 = secant.grad(secant.grad(secant.grad(final)))
    # (eagerly at one point, 15-17 CPU s, under HYPOTHESIS_PROFILE=thorough; the default profile
    # checks the same derivative, batched, at two points below)
    if os.environ.get("HYPOTHESIS_PROFILE") == "thorough":
        np.testing.assert_allclose(g3(0.7), -0.8 * S2 ** 3 * np.exp(-0.7 * S2), rtol=1e-6)
    # vmap of it: the third derivative of _unravel's `flat[..., a:b]` adds its cotangent at an
    # index counted from the end, past the batch axis (batching/helpers.add_at_batched)
    ks = np.array([0.3, 0.9])
    np.testing.assert_allclose(secant.vmap(g3)(ks), -0.8 * S2 ** 3 * np.exp(-ks * S2),
                               rtol=1e-6)

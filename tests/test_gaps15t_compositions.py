"""gaps15t (issue 15, section 4): the deep compositions battery's strict xfails fixed, each
with the smallest program showing its cause, checked against closed forms, float64 central
differences or a Python loop (tests/test_deep15r_compositions.py checks the battery's pairs
against JAX's recorded outcomes)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

pytestmark = pytest.mark.usefixtures("fast_compiles")

X = np.random.default_rng(0).normal(size=(4, 3))
PS = [np.random.default_rng(1).normal(size=3), np.random.default_rng(2).normal(size=3)]
VS = [np.random.default_rng(3).normal(size=3), np.random.default_rng(4).normal(size=3)]


def _generator_loss(params):
    return sum(snp.sum(snp.sin(X @ p)) for p in params)


def _along(t):
    return _generator_loss([p + t * v for p, v in zip(PS, VS)])


def test_fourth_derivative_of_a_generator_over_a_list(x64):
    """grad^4 of a sum over a list of parameters (a loop over the list: its cotangent's rows
    added by add_rows, a list's here and an array's elsewhere): the derivatives of add_rows
    added a list's cotangent to an array's zeros with `+` (an AttributeError), or with the
    cotangents of the list's derivatives concatenated (a list + a list)"""
    t = 0.3
    d4 = secant.grad(secant.grad(secant.grad(secant.grad(_along))))(t)
    want = sum(np.sum((X @ v) ** 4 * np.sin(X @ (p + t * v))) for p, v in zip(PS, VS))
    np.testing.assert_allclose(float(d4), want, rtol=1e-10)


A = np.eye(3) * 2.0 + np.random.default_rng(5).normal(size=(4, 3, 3)) * 0.3


def _det_grad(a):               # d det(a) / da = det(a) inv(a)^T
    return np.linalg.det(a) * np.linalg.inv(a).T


def test_vmap_of_the_hessian_of_det(x64):
    """vmap(hessian) of det (a custom_jvp whose rule calls a helper of its own, _adjugate):
    the jvp of the batched rule was called with the caller's batch_size=, which it did not
    take; under vmap of vmap the batched function's inner batch size was refused as a
    parameter of the custom_jvp function"""
    got = np.asarray(secant.vmap(secant.hessian(snp.linalg.det))(A))
    e = 1e-6
    for b in range(len(A)):
        for i in np.ndindex(3, 3):
            d = np.zeros((3, 3))
            d[i] = e
            fd = (_det_grad(A[b] + d) - _det_grad(A[b] - d)) / (2 * e)
            np.testing.assert_allclose(got[b][:, :, i[0], i[1]], fd, rtol=1e-6, atol=1e-8)


@secant.custom_jvp
def _softplus(x):
    return snp.log1p(snp.exp(x))


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    x, = primals
    return _softplus(x), tangents[0] / (1 + snp.exp(-x))


W = np.array([0.5, -1.2, 2.0])


def _softplus_loss(x):
    return snp.sum(_softplus(x * W) * snp.linalg.det(snp.outer(x, x) + np.eye(3)))


def test_user_custom_jvp_under_vmap_of_vmap_of_grad(x64):
    """vmap(vmap(grad)) of a user's custom_jvp function (and of det's, a library one) against
    a Python loop of grad"""
    xs = np.random.default_rng(6).normal(size=(3, 2, 3))
    got = np.asarray(secant.vmap(secant.vmap(secant.grad(_softplus_loss)))(xs))
    g = secant.grad(_softplus_loss)
    want = np.array([[np.asarray(g(xs[i, j])) for j in range(2)] for i in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # and grad itself against the closed form: d/dx [s(xW) . 1] det(I + x x^T), det = 1 + |x|^2
    x = xs[0, 0]
    s = np.log1p(np.exp(x * W))
    closed = W / (1 + np.exp(-x * W)) * (1 + x @ x) + np.sum(s) * 2 * x
    np.testing.assert_allclose(np.asarray(g(x)), closed, rtol=1e-10)


def test_user_custom_jvp_under_vmap_of_vmap_of_hessian(x64):
    """vmap(vmap(hessian)) of a custom_jvp function against a Python loop of hessian"""
    xs = np.random.default_rng(7).normal(size=(2, 2, 3))
    got = np.asarray(secant.vmap(secant.vmap(secant.hessian(_softplus_loss)))(xs))
    h = secant.hessian(_softplus_loss)
    want = np.array([[np.asarray(h(xs[i, j])) for j in range(2)] for i in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-10)


@secant.custom_vjp
def _energy(p):
    return snp.sum(p["a"] ** 2) * snp.sum(snp.cos(p["b"]))


def _energy_fwd(p):
    return _energy(p), p            # (fwd calls the function itself, for its value)


def _energy_bwd(p, g):
    sa, cb = snp.sum(p["a"] ** 2), snp.sum(snp.cos(p["b"]))
    return ({"a": g * 2 * p["a"] * cb, "b": -g * sa * snp.sin(p["b"])},)


_energy.defvjp(_energy_fwd, _energy_bwd)
PA, PB = np.array([0.3, -0.8, 1.1]), np.array([0.4, 0.9])


def _energy_grad(a, b):         # the closed form of _energy's gradient
    sa, cb = np.sum(a ** 2), np.sum(np.cos(b))
    return 2 * a * cb, -sa * np.sin(b)


def test_jvp_of_grad_of_a_custom_vjp_whose_fwd_calls_it(x64):
    """jvp(grad) of a custom_vjp function whose fwd rule calls the function itself: forward
    mode over the reverse pass asked for that call's tangent (a custom_vjp function's jvp,
    refused) though nothing reads it; JAX's jit drops it. Against float64 central differences
    of the closed-form gradient"""
    p, v = {"a": PA, "b": PB}, {"a": np.array([1.0, 0.5, -0.2]), "b": np.array([-0.3, 0.7])}
    g, g_dot = secant.jvp(secant.grad(_energy), (p,), (v,))
    e = 1e-6
    plus = _energy_grad(PA + e * v["a"], PB + e * v["b"])
    minus = _energy_grad(PA - e * v["a"], PB - e * v["b"])
    for k, key in enumerate(("a", "b")):
        np.testing.assert_allclose(np.asarray(g[key]), _energy_grad(PA, PB)[k], rtol=1e-12)
        np.testing.assert_allclose(np.asarray(g_dot[key]), (plus[k] - minus[k]) / (2 * e),
                                   rtol=1e-7)


def test_the_tangent_of_a_custom_vjp_function_still_refused(x64):
    """where the tangent of a custom_vjp function's output is read or returned, it is refused
    as JAX refuses it: jvp, jit(jvp), vmap(jvp), linearize, jacfwd, a tangent computed from it"""
    p, v = {"a": PA, "b": PB}, {"a": PA, "b": PB}
    ps = {"a": np.stack([PA, PA]), "b": np.stack([PB, PB])}
    runs = [lambda: secant.jvp(_energy, (p,), (v,)),
            lambda: secant.jit(lambda p: secant.jvp(_energy, (p,), (v,)))(p),
            lambda: secant.vmap(lambda p: secant.jvp(_energy, (p,), (p,)))(ps),
            lambda: secant.linearize(_energy, p)[1](v),
            lambda: secant.jacfwd(_energy)(p),
            lambda: secant.jvp(lambda p: 2.0 * _energy(p) + 1.0, (p,), (v,))]
    for run in runs:
        with pytest.raises(secant.SecantError, match="forward-mode autodiff"):
            run()


XS = np.random.default_rng(8).normal(size=(3, 2, 4, 5))


def _loop2(fn):
    return np.array([[np.asarray(fn(XS[i, j])) for j in range(2)] for i in range(3)])


def _argmax_rows(x):
    return snp.argmax(x, axis=1) + snp.argmin(x[:, ::-1], axis=0)[:4] * 10


def _pick_along(x):
    return snp.take_along_axis(x, snp.argmin(x, axis=0)[None], axis=0)


def test_argmin_argmax_under_vmap_of_vmap(x64):
    """argmin/argmax and an index computed by one under vmap(vmap), against a Python loop"""
    for fn in (_argmax_rows, _pick_along):
        got = np.asarray(secant.vmap(secant.vmap(fn))(XS))
        np.testing.assert_array_equal(got, _loop2(fn))


def _item_at_argmin(x):
    return x[0, snp.argmin(x[0])]


def test_item_at_argmin_under_vmap_of_vmap(x64):
    """parts_index under a second vmap: its rule (batching/rules.py HELPERS), against a loop"""
    got = np.asarray(secant.vmap(secant.vmap(_item_at_argmin))(XS))
    np.testing.assert_allclose(got, _loop2(_item_at_argmin), rtol=1e-15)


@secant.custom_jvp
def _dict_softplus(p):
    return snp.sum(snp.log1p(snp.exp(p["u"]))) + snp.log1p(snp.exp(p["v"]))


@_dict_softplus.defjvp
def _dict_softplus_jvp(primals, tangents):
    p, = primals
    t, = tangents
    return _dict_softplus(p), (snp.sum(t["u"] / (1 + snp.exp(-p["u"])))
                               + t["v"] / (1 + snp.exp(-p["v"])))


def test_grad_of_grad_of_a_custom_jvp_of_a_dict(x64):
    """reverse mode of a custom_jvp function of a dict transposes its rule at zero tangents:
    those were `snp.zeros_like(p)` of the dict ('cannot convert dict'), now a pytree's zeros.
    The hessian's diagonal against the closed form sigmoid'(u)"""
    u, v = np.array([0.3, -1.2, 0.8]), np.array(0.4)
    g = secant.grad(lambda u: _dict_softplus({"u": u, "v": v}))
    s = 1 / (1 + np.exp(-u))
    np.testing.assert_allclose(np.asarray(g(u)), s, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.hessian(
        lambda u: _dict_softplus({"u": u, "v": v}))(u)), np.diag(s * (1 - s)), rtol=1e-12)

"""Issue 15, code written by others: programs in the style of JAX's autodiff cookbook (logistic
predictions, hessian-vector products, jacfwd/jacrev, per-example gradients, vjp/jvp, has_aux,
custom_jvp/custom_vjp), run under grad, vmap, jit and their compositions; checked against
float64 finite differences, a Python loop and eager."""
import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, vjp, vmap

from others15_check import (assert_trees_close, check_grad, check_vmap, fd_grad, fd_jvp,
                            to_snp)

RNG = np.random.default_rng(15)
INPUTS = RNG.normal(size=(4, 3))
TARGETS = np.array([True, True, False, True])
W0 = RNG.normal(size=3)


def sigmoid(x):
    return 0.5 * (jnp.tanh(x / 2) + 1)


def predict(W, b, inputs):
    return sigmoid(jnp.dot(inputs, W) + b)


def loss(W, b):
    preds = predict(W, b, INPUTS)
    label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)
    return -jnp.sum(jnp.log(label_probs))


def test_logistic_grad_argnums(x64):
    W, b = to_snp((W0, 0.3))
    check_grad(loss, W, b, argnum=0)
    check_grad(loss, W, b, argnum=1)
    W_grad, b_grad = grad(loss, (0, 1))(W, b)
    assert_trees_close((W_grad, b_grad), (fd_grad(loss, (W, b), 0), fd_grad(loss, (W, b), 1)),
                       rtol=1e-5)
    # the cookbook's check: a small step along the gradient changes the loss as predicted
    eps = 1e-4
    half = eps / 2.
    unitvec = np.ones(3) / np.sqrt(3)
    b_grad_numerical = (loss(W, b + half) - loss(W, b - half)) / eps
    np.testing.assert_allclose(b_grad_numerical, grad(loss, 1)(W, b), rtol=1e-6)
    W_dirderiv = (loss(W + half * unitvec, b) - loss(W - half * unitvec, b)) / eps
    np.testing.assert_allclose(W_dirderiv, jnp.vdot(grad(loss)(W, b), unitvec), rtol=1e-6)


def test_value_and_grad_dict_params(x64):
    def loss2(params):
        preds = predict(params["W"], params["b"], INPUTS)
        label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)
        return -jnp.sum(jnp.log(label_probs))

    params = to_snp({"W": W0, "b": 0.3})
    value, g = secant.value_and_grad(loss2)(params)
    np.testing.assert_allclose(value, loss(params["W"], params["b"]), rtol=1e-12)
    assert_trees_close(g, fd_grad(loss2, (params,)), rtol=1e-5)
    assert_trees_close(jit(secant.value_and_grad(loss2))(params), (value, g))


def f_scalar(x):
    return jnp.sum(jnp.sin(x) * x ** 2) + jnp.prod(jnp.cos(x))


def hvp_rev_rev(f, x, v):
    return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)


def hvp_fwd_rev(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


def hvp_rev_fwd(f, x, v):
    g = lambda x: jvp(f, (x,), (v,))[1]
    return grad(g)(x)


HVPS = {"rev_rev": lambda x, v: hvp_rev_rev(f_scalar, x, v),
        "fwd_rev": lambda x, v: hvp_fwd_rev(f_scalar, (x,), (v,)),
        "rev_fwd": lambda x, v: hvp_rev_fwd(f_scalar, x, v),
        "hessian": lambda x, v: jnp.dot(hessian(f_scalar)(x), v)}


@pytest.mark.parametrize("how", sorted(HVPS))
def test_hessian_vector_products(x64, how):
    x, v = to_snp((RNG.normal(size=4), RNG.normal(size=4)))
    want = fd_jvp(grad(f_scalar), (x,), (v,))
    got = HVPS[how](x, v)
    assert_trees_close(got, want, rtol=1e-5, atol=1e-6)
    assert_trees_close(jit(HVPS[how])(x, v), got)


# the same, with the function differentiated a global, as a script writes it
def hvp_global_rev_rev(x, v):
    return grad(lambda x: jnp.vdot(grad(f_scalar)(x), v))(x)


def hvp_global_fwd_rev(x, v):
    return jvp(grad(f_scalar), (x,), (v,))[1]        # (was refused under vmap; fixed)


def hvp_global_rev_fwd(x, v):
    g = lambda x: jvp(f_scalar, (x,), (v,))[1]
    return grad(g)(x)


@pytest.mark.parametrize("hvp", [
    hvp_global_rev_rev, hvp_global_fwd_rev, lambda x, v: jnp.dot(hessian(f_scalar)(x), v),
    hvp_global_rev_fwd,     # (a lambda assigned to a name: was refused under vmap; fixed)
    HVPS["rev_rev"],        # (grad(f) with f a parameter: was refused; a dynamic call now)
    HVPS["fwd_rev"],        # (f a parameter, primals a name: jvp_closed, a run-time call)
], ids=["rev_rev", "fwd_rev", "hessian", "rev_fwd", "rev_rev_f_argument", "fwd_rev_f_argument"])
def test_batched_hessian_vector_products(x64, hvp):
    """vmap over the vectors, as the cookbook batches hvps; against a loop and the hessian."""
    x, vs = to_snp((RNG.normal(size=4), RNG.normal(size=(3, 4))))
    got = check_vmap(hvp, (x, vs), in_axes=(None, 0))
    np.testing.assert_allclose(got, np.asarray(vs) @ np.asarray(hessian(f_scalar)(x)), rtol=1e-10)


def vec_fun(x):
    return jnp.stack([jnp.sin(x[0]) * x[1], x[1] ** 3 - x[2], jnp.exp(x[0] * x[2])])


@pytest.mark.parametrize("jac", [jacfwd, jacrev], ids=["jacfwd", "jacrev"])
def test_jacobians(x64, jac):
    x = to_snp(RNG.normal(size=3))
    J = jac(vec_fun)(x)
    fd = np.stack([fd_jvp(vec_fun, (x,), (e,)) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(jit(jac(vec_fun))(x), J)


@pytest.mark.parametrize("jac", [jacfwd, jacrev], ids=["jacfwd", "jacrev"])
def test_batched_jacobians(x64, jac):
    xs = to_snp(RNG.normal(size=(2, 3)))
    check_vmap(jac(vec_fun), (xs,))


def test_hessian_is_jacfwd_of_jacrev(x64):
    x = to_snp(RNG.normal(size=4))
    H = jacfwd(jacrev(f_scalar))(x)
    fd = np.stack([fd_jvp(grad(f_scalar), (x,), (e,)) for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hessian(f_scalar)(x), H, rtol=1e-10)
    np.testing.assert_allclose(jacrev(jacfwd(f_scalar))(x), H, rtol=1e-10)
    np.testing.assert_allclose(jacrev(jacrev(f_scalar))(x), H, rtol=1e-10)


def test_per_example_gradients(x64):
    def example_loss(W, b, x, y):
        p = predict(W, b, x)
        return -(y * jnp.log(p) + (1 - y) * jnp.log(1 - p))

    W, b = to_snp((W0, 0.3))
    per_ex = vmap(grad(example_loss), in_axes=(None, None, 0, 0))
    got = per_ex(W, b, to_snp(INPUTS), to_snp(TARGETS * 1.0))
    for i in range(4):
        fd = fd_grad(example_loss, (W, b, to_snp(INPUTS[i]), TARGETS[i] * 1.0))
        np.testing.assert_allclose(got[i], fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(jit(per_ex)(W, b, to_snp(INPUTS), to_snp(TARGETS * 1.0)), got)
    # the mean of per-example gradients is the gradient of the mean loss
    mean_loss = lambda W: jnp.mean(vmap(example_loss, in_axes=(None, None, 0, 0))(
        W, b, to_snp(INPUTS), to_snp(TARGETS * 1.0)))
    np.testing.assert_allclose(grad(mean_loss)(W), np.mean(np.asarray(got), axis=0), rtol=1e-10)


def test_vjp_rows_by_vmap(x64):
    x = to_snp(RNG.normal(size=3))
    y, vjp_fun = vjp(vec_fun, x)
    np.testing.assert_allclose(y, vec_fun(x))
    J = jacfwd(vec_fun)(x)
    u = to_snp(RNG.normal(size=3))
    (ct,) = vjp_fun(u)
    np.testing.assert_allclose(ct, np.asarray(J).T @ np.asarray(u), rtol=1e-10)
    rows = vmap(vjp_fun)(jnp.eye(3))[0]
    np.testing.assert_allclose(rows, J, rtol=1e-10)


def test_jvp_pytree_tangents(x64):
    def f(params, x):
        return {"out": jnp.tanh(params["w"] * x + params["b"]), "norm": jnp.sum(params["w"] ** 2)}

    params = to_snp({"w": RNG.normal(size=3), "b": RNG.normal(size=3)})
    tangent = to_snp({"w": RNG.normal(size=3), "b": RNG.normal(size=3)})
    x = to_snp(RNG.normal(size=3))
    primal, tan = jvp(lambda p: f(p, x), (params,), (tangent,))
    assert_trees_close(primal, f(params, x))
    assert_trees_close(tan, fd_jvp(lambda p: f(p, x), (params,), (tangent,)), rtol=1e-6)
    assert_trees_close(jit(lambda p, t: jvp(lambda p: f(p, x), (p,), (t,)))(params, tangent),
                       (primal, tan))


def test_has_aux(x64):
    def loss_with_aux(w, x):
        pred = jnp.tanh(jnp.dot(x, w))
        l = jnp.mean(pred ** 2)
        return l, {"pred": pred, "l": l}

    w, x = to_snp((W0, INPUTS))
    g, aux = grad(loss_with_aux, has_aux=True)(w, x)
    np.testing.assert_allclose(g, fd_grad(lambda w, x: loss_with_aux(w, x)[0], (w, x)), rtol=1e-6)
    np.testing.assert_allclose(aux["pred"], np.tanh(INPUTS @ W0))
    (value, aux2), g2 = jit(secant.value_and_grad(loss_with_aux, has_aux=True))(w, x)
    np.testing.assert_allclose(g2, g)
    np.testing.assert_allclose(value, aux["l"])


@secant.custom_jvp
def log1pexp(x):
    return jnp.log(1. + jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = log1pexp(x)
    ans_dot = (1 - 1 / (1 + jnp.exp(x))) * x_dot
    return ans, ans_dot


def test_custom_jvp_log1pexp(x64):
    xs = to_snp(np.array([-3.0, 0.0, 2.0, 10.0]))
    got = vmap(grad(log1pexp))(xs)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-np.asarray(xs))), rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(grad(log1pexp)))(xs), got)
    # stable where the naive one overflows: d/dx at 100 is 1
    np.testing.assert_allclose(grad(log1pexp)(100.), 1.0)
    # second derivative through the custom rule (sigmoid' = s (1 - s))
    s = 1 / (1 + np.exp(-0.5))
    np.testing.assert_allclose(grad(grad(log1pexp))(0.5), s * (1 - s), rtol=1e-10)


@secant.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def test_custom_vjp_clip_gradient(x64):
    t = to_snp(np.linspace(0, 10, 5))
    got = vmap(grad(lambda x: clip_gradient(-0.75, 0.75, jnp.sin(x) * 3)))(t)
    want = 0.75 * 3 * np.cos(np.asarray(t))   # the cotangent 1.0 is clipped to 0.75
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(grad(lambda x: clip_gradient(-0.75, 0.75, jnp.sin(x) * 3))))(t),
                               want, rtol=1e-12)


def sum_of_grad(f, x):
    return jnp.sum(grad(f)(x) * jnp.arange(1.0, 5.0))


def test_grad_of_a_function_passed_as_argument(x64):
    """grad(f)(x) with f a parameter: a dynamic call, transformed again on first use."""
    x = RNG.normal(size=4)
    g = check_grad(lambda x: sum_of_grad(f_scalar, x), x, rtol=1e-5)
    np.testing.assert_allclose(g, np.asarray(hessian(f_scalar)(to_snp(x))) @ np.arange(1.0, 5.0),
                               rtol=1e-10)
    check_vmap(lambda x: sum_of_grad(f_scalar, x), (RNG.normal(size=(3, 4)),))
    check_vmap(grad(lambda x: sum_of_grad(f_scalar, x)), (RNG.normal(size=(3, 4)),))
    _, t = jvp(lambda x: sum_of_grad(f_scalar, x), (to_snp(x),), (jnp.ones(4),))
    np.testing.assert_allclose(t, np.sum(g), rtol=1e-10)


def test_jvp_of_a_parameter_function_under_grad_and_jit(x64):
    """jvp(grad(f), primals, tangents) with f a parameter, differentiated again and jitted:
    against the reverse-over-reverse product (checked above against finite differences)."""
    x, v = to_snp((RNG.normal(size=4), RNG.normal(size=4)))
    fwd = lambda x: jnp.sum(jnp.sin(HVPS["fwd_rev"](x, v)))     # noqa: E731
    rev = lambda x: jnp.sum(jnp.sin(HVPS["rev_rev"](x, v)))     # noqa: E731
    np.testing.assert_allclose(grad(fwd)(x), grad(rev)(x), rtol=1e-10)
    np.testing.assert_allclose(jit(grad(fwd))(x), grad(rev)(x), rtol=1e-10)
    np.testing.assert_allclose(jit(HVPS["fwd_rev"])(x, v), HVPS["rev_rev"](x, v), rtol=1e-10)

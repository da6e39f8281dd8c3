"""Issue 15, code written by others (third round): programs in the style of the JAX repository's
examples and the "Advanced autodiff" / "Sharp bits" docs: Gaussian process regression with a
kernel matrix and a Cholesky solve, kernel least squares, ADVI, DP-SGD with per-example clipping
and noise, MAML, a planar flow, TD(0) with stop_gradient, a straight-through estimator, a
custom_jvp gradient clip, implicit differentiation of a fixed point, a gradient penalty,
index-update and out-of-bounds rules, random keys; each under the transforms its author would
use, checked against float64 finite differences, closed forms, a Python loop and eager."""
import functools

import numpy as np

import secant
import secant.numpy as jnp
from secant import (custom_jvp, custom_vjp, grad, hessian, jacfwd, jacrev, jit, jvp, lax,
                    random, vjp, vmap)
from secant.scipy.linalg import cho_factor, cho_solve

from others15_check import assert_trees_close, check_grad, check_vmap, to_snp

RNG = np.random.default_rng(33033)


# --- Gaussian process regression: hyperparameters by the marginal likelihood ----------------------
XS = np.linspace(-2, 2, 8)
YS = np.sin(2 * XS) + 0.1 * RNG.normal(size=8)


def rbf(x1, x2, params):
    amp, length = jnp.exp(params["log_amp"]), jnp.exp(params["log_length"])
    return amp * jnp.exp(-0.5 * (x1[:, None] - x2[None, :]) ** 2 / length ** 2)


def gp_neg_log_marginal(params, x, y):
    K = rbf(x, x, params) + (jnp.exp(params["log_noise"]) + 1e-6) * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(K)
    alpha = cho_solve((L, True), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi)


def gp_predict(params, x, y, xtest):
    K = rbf(x, x, params) + jnp.exp(params["log_noise"]) * jnp.eye(x.shape[0])
    c = cho_factor(K, lower=True)
    return rbf(xtest, x, params) @ cho_solve(c, y)


def test_gp_regression_marginal_likelihood(x64):
    params = {"log_amp": 0.1, "log_length": -0.3, "log_noise": -2.0}
    K = np.asarray(rbf(to_snp(XS), to_snp(XS), to_snp(params))) + (np.exp(-2.0) + 1e-6) * np.eye(8)
    want = 0.5 * YS @ np.linalg.solve(K, YS) + 0.5 * np.linalg.slogdet(K)[1] + 4 * np.log(2 * np.pi)
    np.testing.assert_allclose(gp_neg_log_marginal(to_snp(params), to_snp(XS), to_snp(YS)), want,
                               rtol=1e-10)
    check_grad(gp_neg_log_marginal, params, XS, YS)
    check_grad(lambda y: gp_neg_log_marginal(to_snp(params), to_snp(XS), y), YS)
    # a few steps of gradient descent under jit decrease the loss
    step = jit(lambda p: secant.tree_util.tree_map(
        lambda a, g: a - 0.05 * g, p, grad(gp_neg_log_marginal)(p, to_snp(XS), to_snp(YS))))
    p = to_snp(params)
    for _ in range(5):
        p = step(p)
    assert gp_neg_log_marginal(p, to_snp(XS), to_snp(YS)) < want
    xt = np.array([-1.0, 0.3])
    check_vmap(lambda t: gp_predict(to_snp(params), to_snp(XS), to_snp(YS), t[None])[0], (xt,))
    check_grad(lambda x: jnp.sum(gp_predict(to_snp(params), to_snp(XS), to_snp(YS), x)), xt)


# --- kernel least squares: a Gram matrix by a double vmap ---------------------------------------
def gram(kernel, xs, ys):
    return vmap(lambda x: vmap(lambda y: kernel(x, y))(ys))(xs)


def rbf_vec(x, y):
    return jnp.exp(-jnp.sum((x - y) ** 2))


def kernel_lsq_loss(v, xs, ys, lam=0.1):
    K = gram(rbf_vec, xs, xs)
    return jnp.sum((K @ v - ys) ** 2) + lam * v @ K @ v


def test_kernel_least_squares(x64):
    xs = RNG.normal(size=(6, 2))
    ys = np.sin(xs[:, 0])
    K = np.exp(-((xs[:, None] - xs[None]) ** 2).sum(-1))
    np.testing.assert_allclose(gram(rbf_vec, to_snp(xs), to_snp(xs)), K, rtol=1e-12)
    v0 = RNG.normal(size=6) * 0.1
    g = check_grad(kernel_lsq_loss, v0, xs, ys)
    np.testing.assert_allclose(g, 2 * K @ (K @ v0 - ys) + 0.2 * K @ v0, rtol=1e-8)
    check_grad(lambda x: kernel_lsq_loss(to_snp(v0), x, to_snp(ys)), xs)
    # the exact minimiser solves (K K + lam K) v = K y; gradient descent under jit approaches it
    v = to_snp(np.zeros(6))
    update = jit(lambda v: v - 0.02 * grad(kernel_lsq_loss)(v, to_snp(xs), to_snp(ys)))
    for _ in range(300):
        v = update(v)
    best = np.linalg.solve(K @ K + 0.1 * K, K @ ys)
    assert float(kernel_lsq_loss(v, to_snp(xs), to_snp(ys))) < \
        float(kernel_lsq_loss(to_snp(best), to_snp(xs), to_snp(ys))) + 1e-2


# --- ADVI: a Gaussian variational family and the reparameterised ELBO --------------------------
def log_density(z):
    """An unnormalised banana-shaped density."""
    return -0.5 * (z[0] ** 2 / 4 + (z[1] - 0.5 * z[0] ** 2) ** 2)


def elbo(params, eps):
    mean, log_std = params
    def one(e):
        z = mean + jnp.exp(log_std) * e
        return log_density(z)
    return jnp.mean(vmap(one)(eps)) + jnp.sum(log_std)


def test_advi_elbo(x64):
    eps = random.normal(random.PRNGKey(0), (16, 2))
    params = (np.array([0.3, -0.2]), np.array([-0.5, 0.1]))
    check_grad(elbo, params, eps)
    loop = np.mean([float(log_density(to_snp(params[0]) + np.exp(params[1]) * np.asarray(e)))
                    for e in eps]) + params[1].sum()
    np.testing.assert_allclose(elbo(to_snp(params), eps), loop, rtol=1e-12)
    # maximise with Adam-free SGD under jit: the ELBO goes up
    p = to_snp(params)
    step = jit(lambda p, eps: secant.tree_util.tree_map(lambda a, g: a + 0.05 * g, p,
                                                          grad(elbo)(p, eps)))
    for i in range(20):
        p = step(p, random.normal(random.PRNGKey(i + 1), (16, 2)))
    assert elbo(p, eps) > elbo(to_snp(params), eps)


# --- DP-SGD: per-example gradients clipped and noised -------------------------------------------
DX = RNG.normal(size=(6, 3))
DY = (DX @ np.array([1.0, -1.0, 0.5]) > 0).astype(float)


def logistic(params, x, y):
    w, b = params
    logit = x @ w + b
    return jnp.logaddexp(0.0, logit) - y * logit


def private_grad(params, batch, key, l2_clip=0.5, noise=0.3):
    x, y = batch
    per_ex = vmap(grad(logistic), in_axes=(None, 0, 0))(params, x, y)
    leaves, treedef = secant.tree_util.tree_flatten(per_ex)
    norms = jnp.sqrt(sum(jnp.sum(l.reshape(l.shape[0], -1) ** 2, axis=1) for l in leaves))
    factor = jnp.minimum(1.0, l2_clip / (norms + 1e-12))
    clipped = [l * factor.reshape((-1,) + (1,) * (l.ndim - 1)) for l in leaves]
    keys = random.split(key, len(clipped))
    noised = [jnp.sum(c, axis=0) + noise * l2_clip * random.normal(k, c.shape[1:])
              for c, k in zip(clipped, keys)]
    return secant.tree_util.tree_unflatten(treedef, [n / x.shape[0] for n in noised])


def test_dp_sgd_private_grad(x64):
    params = to_snp((RNG.normal(size=3), 0.1))
    key = random.PRNGKey(3)
    got = private_grad(params, to_snp((DX, DY)), key)
    # a Python loop over the examples, the same noise
    grads = [grad(logistic)(params, to_snp(DX[i]), DY[i]) for i in range(6)]
    clipped = []
    for gw, gb in grads:
        n = np.sqrt(np.sum(np.asarray(gw) ** 2) + float(gb) ** 2)
        f = min(1.0, 0.5 / (n + 1e-12))
        clipped.append((np.asarray(gw) * f, float(gb) * f))
    k1, k2 = random.split(key, 2)
    want = ((sum(c[0] for c in clipped) + 0.15 * np.asarray(random.normal(k1, (3,)))) / 6,
            (sum(c[1] for c in clipped) + 0.15 * float(random.normal(k2, ()))) / 6)
    assert_trees_close(got, want, rtol=1e-10)
    assert_trees_close(jit(private_grad)(params, to_snp((DX, DY)), key), got, rtol=1e-10)


# --- MAML: an inner gradient step differentiated in the outer loop ----------------------------
def net(p, x):
    return p["w2"] @ jnp.tanh(p["w1"] * x + p["b1"])


def task_loss(p, xs, ys):
    return jnp.mean((vmap(functools.partial(net, p))(xs) - ys) ** 2)


def maml_loss(p, xs_in, ys_in, xs_out, ys_out, alpha=0.1):
    g = grad(task_loss)(p, xs_in, ys_in)
    adapted = secant.tree_util.tree_map(lambda a, b: a - alpha * b, p, g)
    return task_loss(adapted, xs_out, ys_out)


def test_maml_second_order(x64):
    p = {"w1": RNG.normal(size=5), "b1": RNG.normal(size=5) * 0.1, "w2": RNG.normal(size=5) * 0.5}
    xs = np.linspace(-1, 1, 4)
    args = (xs, np.sin(xs), xs + 0.1, np.sin(xs + 0.1))
    check_grad(maml_loss, p, *args)
    # a batch of tasks by vmap, against a loop
    amps = np.array([0.5, 1.0, 1.5])
    batched = lambda a: maml_loss(to_snp(p), to_snp(xs), a * np.sin(xs), to_snp(xs + 0.1),
                                  a * np.sin(xs + 0.1))
    check_vmap(batched, (amps,))
    check_vmap(grad(batched), (amps,))


# --- a planar normalising flow's log-density ------------------------------------------------
def planar_logdet(params, z):
    u, w, b = params["u"], params["w"], params["b"]
    a = jnp.tanh(w @ z + b)
    f = z + u * a
    psi = (1 - a ** 2) * w
    return f, jnp.log(jnp.abs(1 + u @ psi))


def flow_log_prob(params, z):
    f, logdet = planar_logdet(params, z)
    return -0.5 * jnp.sum(f ** 2) + logdet


def test_planar_flow(x64):
    params = {"u": np.array([0.3, -0.2]), "w": np.array([0.5, 0.8]), "b": 0.1}
    z = np.array([0.4, -0.7])
    # the log-determinant against jacfwd's determinant
    J = jacfwd(lambda z: planar_logdet(to_snp(params), z)[0])(to_snp(z))
    np.testing.assert_allclose(planar_logdet(to_snp(params), to_snp(z))[1],
                               np.log(abs(np.linalg.det(np.asarray(J)))), rtol=1e-10)
    check_grad(flow_log_prob, params, z)
    check_grad(lambda z: flow_log_prob(to_snp(params), z), z)
    check_vmap(flow_log_prob, (params, RNG.normal(size=(5, 2))), in_axes=(None, 0))


# --- TD(0) with stop_gradient (Advanced autodiff) ---------------------------------------------
def value_fn(theta, state):
    return theta @ state


def td_loss(theta, s_tm1, r_t, s_t, gamma=0.9):
    v_tm1 = value_fn(theta, s_tm1)
    target = r_t + gamma * lax.stop_gradient(value_fn(theta, s_t))
    return -0.5 * (target - v_tm1) ** 2


def test_td0_stop_gradient(x64):
    theta = np.array([0.1, -0.5, 0.1])
    s_tm1, r_t, s_t = np.array([1.0, 2.0, -1.0]), 1.0, np.array([2.0, 1.0, 0.0])
    delta = r_t + 0.9 * theta @ s_t - theta @ s_tm1
    g = grad(td_loss)(*to_snp((theta, s_tm1, r_t, s_t)))
    np.testing.assert_allclose(g, delta * s_tm1, rtol=1e-12)      # the TD update, not the MSE's
    np.testing.assert_allclose(jit(grad(td_loss))(*to_snp((theta, s_tm1, r_t, s_t))), g,
                               rtol=1e-12)
    batch = (RNG.normal(size=(4, 3)), RNG.normal(size=4), RNG.normal(size=(4, 3)))
    per = vmap(grad(td_loss), in_axes=(None, 0, 0, 0))(to_snp(theta), *to_snp(batch))
    for i in range(4):
        d = batch[1][i] + 0.9 * theta @ batch[2][i] - theta @ batch[0][i]
        np.testing.assert_allclose(per[i], d * batch[0][i], rtol=1e-10)


# --- a straight-through estimator ----------------------------------------------------------------
def straight_through_round(x):
    zero = x - lax.stop_gradient(x)
    return zero + lax.stop_gradient(jnp.round(x))


def quantised_loss(w, x):
    return jnp.sum((straight_through_round(w * 4) / 4 * x) ** 2)


def test_straight_through_estimator(x64):
    x = to_snp(np.array([0.3, 1.2, 2.7]))
    np.testing.assert_allclose(straight_through_round(x), [0.0, 1.0, 3.0])
    np.testing.assert_allclose(grad(lambda x: jnp.sum(straight_through_round(x)))(x), np.ones(3))
    w = to_snp(np.array([0.26, -0.4, 0.9]))
    q = np.round(np.asarray(w) * 4) / 4
    np.testing.assert_allclose(grad(quantised_loss)(w, x), 2 * q * np.asarray(x) ** 2, rtol=1e-12)
    np.testing.assert_allclose(jvp(straight_through_round, (x,), (jnp.ones(3),))[1], np.ones(3))
    check_vmap(grad(quantised_loss), (RNG.normal(size=(3, 3)), np.asarray(x)), in_axes=(0, None))


# --- clip_gradient with custom_jvp (the docs' custom_vjp example, in forward mode) ---------------
@functools.partial(custom_jvp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x


@clip_gradient.defjvp
def clip_gradient_jvp(lo, hi, primals, tangents):
    x, = primals
    t, = tangents
    return x, jnp.clip(t, lo, hi)


def test_custom_jvp_clip_gradient(x64):
    f = lambda x: clip_gradient(-0.75, 0.75, jnp.sin(x) * 3)
    # the cotangent flowing back is clipped: d/dx = clip(3 cos x) ... in forward mode
    for x in (0.1, 1.0, 2.5):
        np.testing.assert_allclose(jvp(f, (x,), (1.0,))[1], np.clip(3 * np.cos(x), -0.75, 0.75))
    np.testing.assert_allclose(vmap(lambda x: jvp(f, (x,), (1.0,))[1])(jnp.array([0.1, 2.5])),
                               np.clip(3 * np.cos([0.1, 2.5]), -0.75, 0.75))
    np.testing.assert_allclose(jacfwd(f)(1.0), np.clip(3 * np.cos(1.0), -0.75, 0.75))
    # grad transposes the (linear) clipped jvp: here the tangent enters clip as 3 cos(x) t
    np.testing.assert_allclose(grad(lambda x: clip_gradient(-10.0, 10.0, x ** 2))(1.5), 3.0)


# --- implicit differentiation of a fixed point (custom_vjp, the docs' fixed_point) -------------
def fwd_solver(f, z_init):
    def cond_fun(carry):
        z_prev, z = carry
        return jnp.max(jnp.abs(z_prev - z)) > 1e-12
    def body_fun(carry):
        _, z = carry
        return z, f(z)
    _, z_star = lax.while_loop(cond_fun, body_fun, (z_init, f(z_init)))
    return z_star


@functools.partial(custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, a, x_guess):
    return fwd_solver(lambda x: f(a, x), x_guess)


def fixed_point_fwd(f, a, x_init):
    x_star = fixed_point(f, a, x_init)
    return x_star, (a, x_star)


def fixed_point_rev(f, res, x_star_bar):
    a, x_star = res
    _, vjp_a = vjp(lambda a: f(a, x_star), a)
    a_bar, = vjp_a(fwd_solver(lambda u: vjp(lambda x: f(a, x), x_star)[1](u)[0] + x_star_bar,
                              x_star_bar))
    return a_bar, jnp.zeros_like(x_star)


fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)


def newton_sqrt(a):
    update = lambda a, x: 0.5 * (x + a / x)
    return fixed_point(update, a, a)


def test_implicit_fixed_point(x64):
    np.testing.assert_allclose(newton_sqrt(2.0), np.sqrt(2.0), rtol=1e-12)
    np.testing.assert_allclose(grad(newton_sqrt)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-8)
    np.testing.assert_allclose(jit(grad(newton_sqrt))(2.0), 0.5 / np.sqrt(2.0), rtol=1e-8)
    np.testing.assert_allclose(grad(lambda a: newton_sqrt(a) ** 3)(4.0), 3 * 4.0 * 0.25,
                               rtol=1e-8)
    a = np.array([1.0, 4.0, 9.0])
    check_vmap(newton_sqrt, (a,))


def test_implicit_fixed_point_vmap_of_grad(x64):
    a = np.array([1.0, 4.0, 9.0])
    np.testing.assert_allclose(vmap(grad(newton_sqrt))(jnp.asarray(a)), 0.5 / np.sqrt(a),
                               rtol=1e-8)


# --- a gradient penalty (WGAN-GP): grad of the norm of an input gradient --------------------
def critic(p, x):
    return p["v"] @ jnp.tanh(p["W"] @ x + p["c"])


def gradient_penalty(p, xs):
    def one(x):
        g = grad(critic, argnums=1)(p, x)
        return (jnp.sqrt(jnp.sum(g ** 2) + 1e-12) - 1.0) ** 2
    return jnp.mean(vmap(one)(xs))


def test_gradient_penalty_mixed_second_order(x64):
    p = {"W": RNG.normal(size=(4, 2)), "c": RNG.normal(size=4) * 0.1, "v": RNG.normal(size=4)}
    xs = RNG.normal(size=(5, 2))
    check_grad(gradient_penalty, p, xs)
    check_grad(lambda x: gradient_penalty(to_snp(p), x), xs)
    h = hessian(lambda x: critic(to_snp(p), x))(to_snp(xs[0]))
    np.testing.assert_allclose(h, jacrev(jacfwd(lambda x: critic(to_snp(p), x)))(to_snp(xs[0])),
                               rtol=1e-10)


# --- the sharp bits: index updates, out-of-bounds indexing, random keys, static arguments -----
def scatter_ops(x, v):
    y = x.at[jnp.array([0, 2, 2])].add(v)            # repeated indices accumulate
    y = y.at[1].multiply(v[0])
    y = y.at[3].set(v[1] ** 2)
    y = y.at[jnp.array([0, 4])].max(v[:2])
    return jnp.sum(y * jnp.arange(1.0, 6.0))


def test_index_updates_under_transforms(x64):
    x, v = RNG.normal(size=5), RNG.normal(size=3)
    want = x.copy()
    np.add.at(want, [0, 2, 2], v)
    want[1] *= v[0]
    want[3] = v[1] ** 2
    want[0], want[4] = max(want[0], v[0]), max(want[4], v[1])
    np.testing.assert_allclose(scatter_ops(*to_snp((x, v))), want @ np.arange(1.0, 6.0),
                               rtol=1e-12)
    check_grad(scatter_ops, x, v)
    check_grad(lambda v: scatter_ops(to_snp(x), v), v)
    check_vmap(scatter_ops, (RNG.normal(size=(3, 5)), v), in_axes=(0, None))


def test_out_of_bounds_indexing(x64):
    """Retrieval clamps (a traced index), updates out of bounds are dropped, as JAX does."""
    x = to_snp(np.arange(5.0))
    take = jit(lambda x, i: x[i])
    np.testing.assert_allclose(take(x, 10), 4.0)
    np.testing.assert_allclose(grad(lambda x: take(x, 10) * 2)(x), [0, 0, 0, 0, 2.0])
    np.testing.assert_allclose(jit(lambda x, i: x.at[i].set(-1.0))(x, 7), np.arange(5.0))
    np.testing.assert_allclose(x.at[7].get(mode="fill", fill_value=-3.0), -3.0)
    g = grad(lambda x: jnp.sum(x.at[jnp.array([1, 9])].get(mode="fill", fill_value=0.0)))(x)
    np.testing.assert_allclose(g, [0, 1.0, 0, 0, 0])


def test_random_keys_sharp_bits(x64):
    key = random.PRNGKey(0)
    a = random.normal(key, (3,))
    np.testing.assert_array_equal(random.normal(key, (3,)), a)       # same key, same numbers
    k1, k2 = random.split(key)
    assert not np.allclose(random.normal(k1, (3,)), random.normal(k2, (3,)))
    keys = random.split(key, 4)
    draws = vmap(lambda k: random.normal(k, (2,)))(keys)
    for i in range(4):
        np.testing.assert_array_equal(draws[i], random.normal(keys[i], (2,)))
    np.testing.assert_array_equal(jit(lambda k: random.uniform(k, (3,)))(key),
                                  random.uniform(key, (3,)))
    # a reparameterised sample differentiated in its parameters
    sample = lambda mu, log_sigma: jnp.sum(mu + jnp.exp(log_sigma) * random.normal(key, (3,)))
    np.testing.assert_allclose(grad(sample, argnums=1)(0.2, -0.3),
                               np.exp(-0.3) * np.sum(np.asarray(a)), rtol=1e-12)
    folded = [random.normal(random.fold_in(key, i), ()) for i in range(3)]
    assert len({float(f) for f in folded}) == 3


@functools.partial(jit, static_argnums=(1,))
def poly_static(x, degree):
    out = 0.0
    for k in range(degree + 1):
        if k % 2 == 0:
            out = out + x ** k / (k + 1)
    return out


def test_control_flow_with_static_argnums(x64):
    for degree in (2, 4):
        want = sum(0.7 ** k / (k + 1) for k in range(degree + 1) if k % 2 == 0)
        np.testing.assert_allclose(poly_static(0.7, degree), want, rtol=1e-12)
        dwant = sum(k * 0.7 ** (k - 1) / (k + 1) for k in range(1, degree + 1) if k % 2 == 0)
        np.testing.assert_allclose(grad(poly_static)(0.7, degree), dwant, rtol=1e-12)
    np.testing.assert_allclose(vmap(poly_static, in_axes=(0, None))(jnp.array([0.1, 0.7]), 4),
                               [poly_static(0.1, 4), poly_static(0.7, 4)], rtol=1e-12)

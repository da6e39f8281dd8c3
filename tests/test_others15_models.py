"""Issue 15, code written by others: small models as JAX users write them (a CNN with
lax.conv_general_dilated, an RNN with lax.scan, layer norm, masked attention, a Gaussian process
with cholesky/solve_triangular, logistic regression with Adam written by hand, an RK4 ODE step, a
leapfrog simulation), under grad, vmap, jit and their compositions; checked against float64
finite differences, a Python loop and eager."""
import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jit, lax, nn, vmap
from secant.scipy.linalg import cho_solve, solve_triangular

from others15_check import (assert_trees_close, check_grad, check_jit, check_vmap, fd_jvp, to_snp)

RNG = np.random.default_rng(15000)


# --- a small CNN --------------------------------------------------------------------------------
def cnn(params, images):
    """images: (N, H, W, C) as in the tutorials; NHWC / HWIO."""
    x = lax.conv_general_dilated(images, params["k1"], window_strides=(1, 1), padding="SAME",
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))
    x = nn.relu(x + params["b1"])
    x = lax.conv_general_dilated(x, params["k2"], (2, 2), "VALID",
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))
    x = jnp.tanh(x)
    x = x.reshape((x.shape[0], -1))
    return x @ params["dense"]


def cnn_loss(params, images, labels):
    logits = cnn(params, images)
    return -jnp.mean(jnp.sum(nn.log_softmax(logits) * labels, axis=-1))


CNN_PARAMS = {"k1": RNG.normal(size=(3, 3, 1, 2)) * 0.5, "b1": RNG.normal(size=2) * 0.1,
              "k2": RNG.normal(size=(2, 2, 2, 2)) * 0.5, "dense": RNG.normal(size=(8, 3)) * 0.5}
IMAGES = RNG.normal(size=(2, 5, 5, 1))
LABELS = np.eye(3)[[0, 2]]


def test_cnn(x64):
    check_grad(cnn_loss, CNN_PARAMS, IMAGES, LABELS, rtol=1e-5)
    check_grad(cnn_loss, CNN_PARAMS, IMAGES, LABELS, argnum=1, rtol=1e-5)
    check_jit(cnn_loss, CNN_PARAMS, IMAGES, LABELS)
    # per-example: each image as its own batch of one
    one = lambda p, img, lab: cnn_loss(p, img[None], lab[None])
    check_vmap(one, (CNN_PARAMS, IMAGES, LABELS), in_axes=(None, 0, 0))
    check_vmap(grad(one), (CNN_PARAMS, IMAGES, LABELS), in_axes=(None, 0, 0))


# --- an RNN with scan ---------------------------------------------------------------------------
def rnn(params, xs, h0):
    def cell(h, x):
        h = jnp.tanh(params["Wh"] @ h + params["Wx"] @ x + params["b"])
        return h, params["Wo"] @ h

    h, ys = lax.scan(cell, h0, xs)
    return ys, h


def rnn_loss(params, xs, targets):
    ys, h = rnn(params, xs, jnp.zeros(4))
    return jnp.mean((ys[:, 0] - targets) ** 2) + 0.01 * jnp.sum(h ** 2)


RNN_PARAMS = {"Wh": RNG.normal(size=(4, 4)) * 0.4, "Wx": RNG.normal(size=(4, 2)) * 0.4,
              "b": RNG.normal(size=4) * 0.1, "Wo": RNG.normal(size=(1, 4))}
SEQ = RNG.normal(size=(6, 2))
TARGETS = RNG.normal(size=6)


def test_rnn_scan(x64):
    check_grad(rnn_loss, RNN_PARAMS, SEQ, TARGETS)
    check_grad(rnn_loss, RNN_PARAMS, SEQ, TARGETS, argnum=1)
    seqs, targets = RNG.normal(size=(3, 6, 2)), RNG.normal(size=(3, 6))
    check_vmap(rnn_loss, (RNN_PARAMS, seqs, targets), in_axes=(None, 0, 0))
    check_vmap(grad(rnn_loss), (RNN_PARAMS, seqs, targets), in_axes=(None, 0, 0))
    # grad of the mean over a vmapped batch is the mean of per-sequence grads
    batch_loss = lambda p: jnp.mean(vmap(rnn_loss, in_axes=(None, 0, 0))(p, seqs, targets))
    check_grad(batch_loss, RNN_PARAMS)


# --- layer norm and masked attention ------------------------------------------------------------
def layer_norm(x, gamma, beta, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return gamma * (x - mean) / jnp.sqrt(var + eps) + beta


def test_layer_norm(x64):
    x, gamma, beta = RNG.normal(size=(3, 5)), RNG.normal(size=5), RNG.normal(size=5)
    loss = lambda x, g, b: jnp.sum(layer_norm(x, g, b) ** 3)
    for k in range(3):
        check_grad(loss, x, gamma, beta, argnum=k, rtol=1e-5)
    check_vmap(layer_norm, (x, gamma, beta), in_axes=(0, None, None))
    check_vmap(grad(lambda x, g, b: jnp.sum(layer_norm(x, g, b) ** 3)), (x, gamma, beta),
               in_axes=(0, None, None))


def attention(q, k, v, mask):
    d = q.shape[-1]
    scores = q @ k.T / jnp.sqrt(d)
    scores = jnp.where(mask, scores, -1e9)
    weights = nn.softmax(scores, axis=-1)
    return weights @ v


def causal_attention_loss(params, x):
    q, k, v = x @ params["q"], x @ params["k"], x @ params["v"]
    n = x.shape[0]
    mask = jnp.tril(jnp.ones((n, n), dtype=bool))
    out = attention(q, k, v, mask)
    return jnp.sum(layer_norm(out + x, 1.0, 0.0) ** 2 * jnp.arange(1.0, 5.0))


ATT_PARAMS = {"q": RNG.normal(size=(4, 4)) * 0.5, "k": RNG.normal(size=(4, 4)) * 0.5,
              "v": RNG.normal(size=(4, 4)) * 0.5}


def test_masked_attention(x64):
    x = RNG.normal(size=(3, 4))
    check_grad(causal_attention_loss, ATT_PARAMS, x, rtol=1e-5)
    check_grad(causal_attention_loss, ATT_PARAMS, x, argnum=1, rtol=1e-5)
    # the first output attends only to the first position
    q, k, v = (to_snp(x @ ATT_PARAMS[n]) for n in "qkv")
    out = attention(q, k, v, jnp.tril(jnp.ones((3, 3), dtype=bool)))
    np.testing.assert_allclose(out[0], v[0], rtol=1e-12)
    xs = RNG.normal(size=(2, 3, 4))
    check_vmap(causal_attention_loss, (ATT_PARAMS, xs), in_axes=(None, 0))
    check_vmap(grad(causal_attention_loss), (ATT_PARAMS, xs), in_axes=(None, 0))
    # multi-head by vmap over heads
    heads = vmap(attention, in_axes=(0, 0, 0, None))
    qs, ks, vs = (to_snp(RNG.normal(size=(2, 3, 4))) for _ in range(3))
    mask = jnp.tril(jnp.ones((3, 3), dtype=bool))
    check_vmap(attention, (qs, ks, vs, mask), in_axes=(0, 0, 0, None))
    mh_loss = lambda qs: jnp.sum(heads(qs, ks, vs, mask) ** 2)
    check_grad(mh_loss, qs, rtol=1e-5)


# --- a Gaussian process ---------------------------------------------------------------------------
def rbf(x1, x2, lengthscale, variance):
    d2 = jnp.sum((x1[:, None, :] - x2[None, :, :]) ** 2, axis=-1)
    return variance * jnp.exp(-0.5 * d2 / lengthscale ** 2)


def gp_neg_log_marginal(params, x, y):
    ls, var, noise = jnp.exp(params["log_ls"]), jnp.exp(params["log_var"]), jnp.exp(params["log_noise"])
    K = rbf(x, x, ls, var) + noise * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(K)
    alpha = solve_triangular(L.T, solve_triangular(L, y, lower=True), lower=False)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi)


def gp_predict(params, x, y, xstar):
    ls, var, noise = jnp.exp(params["log_ls"]), jnp.exp(params["log_var"]), jnp.exp(params["log_noise"])
    K = rbf(x, x, ls, var) + noise * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(K)
    return rbf(xstar, x, ls, var) @ cho_solve((L, True), y)


GP_PARAMS = {"log_ls": 0.1, "log_var": -0.2, "log_noise": -1.5}
GX = RNG.uniform(-2, 2, size=(6, 1))
GY = np.sin(2 * GX[:, 0]) + 0.1 * RNG.normal(size=6)


def test_gaussian_process(x64):
    ls, var, noise = np.exp(0.1), np.exp(-0.2), np.exp(-1.5)
    K = var * np.exp(-0.5 * (GX - GX.T) ** 2 / ls ** 2) + noise * np.eye(6)
    want = 0.5 * GY @ np.linalg.solve(K, GY) + 0.5 * np.linalg.slogdet(K)[1] + 3 * np.log(2 * np.pi)
    np.testing.assert_allclose(gp_neg_log_marginal(to_snp(GP_PARAMS), to_snp(GX), to_snp(GY)),
                               want, rtol=1e-10)
    check_grad(gp_neg_log_marginal, GP_PARAMS, GX, GY, rtol=1e-5)
    check_grad(gp_neg_log_marginal, GP_PARAMS, GX, GY, argnum=2, rtol=1e-5)
    ys = RNG.normal(size=(3, 6))
    check_vmap(gp_neg_log_marginal, (GP_PARAMS, GX, ys), in_axes=(None, None, 0))
    check_vmap(grad(gp_neg_log_marginal), (GP_PARAMS, GX, ys), in_axes=(None, None, 0))
    xstar = RNG.uniform(-2, 2, size=(4, 1))
    check_jit(gp_predict, GP_PARAMS, GX, GY, xstar)
    check_grad(lambda p: jnp.sum(gp_predict(p, GX, GY, xstar)), GP_PARAMS, rtol=1e-5)


# --- logistic regression with Adam written by hand ---------------------------------------------
def logreg_loss(w, x, y):
    logits = x @ w[:-1] + w[-1]
    return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)


def adam_step(state, x, y, lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
    w, m, v, t = state
    g = grad(logreg_loss)(w, x, y)
    t = t + 1
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g ** 2
    mhat = m / (1 - b1 ** t)
    vhat = v / (1 - b2 ** t)
    w = w - lr * mhat / (jnp.sqrt(vhat) + eps)
    return w, m, v, t


def train(w0, x, y, steps=5):
    state = (w0, jnp.zeros_like(w0), jnp.zeros_like(w0), 0)
    for _ in range(steps):
        state = adam_step(state, x, y)
    return logreg_loss(state[0], x, y)


LX = RNG.normal(size=(10, 2))
LY = (LX[:, 0] - LX[:, 1] > 0) * 1.0


def test_logistic_regression_adam(x64):
    w0 = RNG.normal(size=3) * 0.1
    check_grad(logreg_loss, w0, LX, LY)
    state = (to_snp(w0), jnp.zeros(3), jnp.zeros(3), 0)
    assert_trees_close(jit(adam_step)(state, to_snp(LX), to_snp(LY)),
                       adam_step(state, to_snp(LX), to_snp(LY)))
    assert float(train(to_snp(w0), to_snp(LX), to_snp(LY), 30)) < float(
        logreg_loss(to_snp(w0), to_snp(LX), to_snp(LY)))
    # meta-gradient: the loss after training, differentiated in the initial weights
    check_grad(train, w0, LX, LY, rtol=1e-4, atol=1e-6)
    check_vmap(train, (RNG.normal(size=(3, 3)) * 0.1, LX, LY), in_axes=(0, None, None))


# --- an ODE step and a simulation -----------------------------------------------------------------
def lotka_volterra(y, t, theta):
    prey, pred = y[0], y[1]
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    return jnp.array([a * prey - b * prey * pred, c * prey * pred - d * pred])


def rk4(y, t, dt, theta):
    k1 = lotka_volterra(y, t, theta)
    k2 = lotka_volterra(y + dt / 2 * k1, t + dt / 2, theta)
    k3 = lotka_volterra(y + dt / 2 * k2, t + dt / 2, theta)
    k4 = lotka_volterra(y + dt * k3, t + dt, theta)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def integrate(theta, y0, n=10, dt=0.1):
    def step(y, t):
        y = rk4(y, t, dt, theta)
        return y, y

    _, ys = lax.scan(step, y0, jnp.arange(n) * dt)
    return jnp.sum(ys[:, 0]) - jnp.sum(ys[:, 1] ** 2)


THETA = np.array([1.0, 0.4, 0.3, 0.8])
Y0 = np.array([1.5, 0.7])


def test_rk4_scan(x64):
    check_grad(integrate, THETA, Y0, rtol=1e-5)
    check_grad(integrate, THETA, Y0, argnum=1, rtol=1e-5)
    thetas = THETA * (1 + 0.1 * RNG.normal(size=(3, 4)))
    check_vmap(integrate, (thetas, Y0), in_axes=(0, None))
    check_vmap(grad(integrate), (thetas, Y0), in_axes=(0, None))
    H = secant.hessian(integrate)(to_snp(THETA), to_snp(Y0))
    for i, e in enumerate(np.eye(4)):
        np.testing.assert_allclose(H[:, i], fd_jvp(lambda t: grad(integrate)(t, to_snp(Y0)),
                                                   (to_snp(THETA),), (e,)), rtol=1e-5, atol=1e-6)


def leapfrog(q, p, dt, n, k):
    """A harmonic chain: the force is minus the gradient of the potential (grad inside)."""
    def potential(q):
        return 0.5 * k * jnp.sum((q[1:] - q[:-1]) ** 2) + 0.25 * jnp.sum(q ** 4)

    for _ in range(n):
        p = p - 0.5 * dt * grad(potential)(q)
        q = q + dt * p
        p = p - 0.5 * dt * grad(potential)(q)
    return q, p


def energy_after(k, q0, p0):
    q, p = leapfrog(q0, p0, 0.05, 6, k)
    return jnp.sum(q ** 2) + jnp.sum(p * q)


def test_leapfrog_grad_inside(x64):
    q0, p0 = RNG.normal(size=4), RNG.normal(size=4)
    check_grad(energy_after, 1.3, q0, p0)
    check_grad(energy_after, 1.3, q0, p0, argnum=1)
    check_vmap(energy_after, (np.array([0.5, 1.3, 2.0]), q0, p0), in_axes=(0, None, None))
    check_vmap(grad(energy_after), (np.array([0.5, 1.3, 2.0]), q0, p0), in_axes=(0, None, None))


def test_nn_functions(x64):
    def f(x):
        return (jnp.sum(nn.softmax(x) * jnp.arange(4.0)) + nn.logsumexp(x) + jnp.sum(nn.gelu(x))
                + jnp.sum(nn.sigmoid(x) * nn.softplus(x)) + jnp.sum(nn.one_hot(2, 4) * nn.log_softmax(x)))

    x = RNG.normal(size=4)
    check_grad(f, x)
    check_vmap(f, (RNG.normal(size=(3, 4)),))
    check_vmap(grad(f), (RNG.normal(size=(3, 4)),))
    np.testing.assert_allclose(grad(grad(lambda x: nn.logsumexp(x * jnp.ones(3))))(0.3), 0.0,
                               atol=1e-12)

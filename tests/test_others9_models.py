"""Issue 15, code written by others (ninth round): models as flax / equinox / optax users write
them in plain Python on secant.numpy. An LSTM over a sequence by lax.scan, a GRU by a Python
loop, a tied-weight autoencoder, label smoothing and focal losses, knowledge distillation with a
temperature, a hypernetwork writing another network's weights, a neural additive model vmapped
over features, a Deep Sets model (permutation invariant), gradient accumulation over
micro-batches equal to the full batch, weight decay masked by tree paths, and a 1-D convolution
by lax.conv_general_dilated against NumPy's correlate. Checked against float64 central
differences, NumPy written out, a Python loop and eager."""
import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import grad, jit, lax, tree_util, value_and_grad, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, to_snp

RNG = np.random.default_rng(1909)


def dense_init(m, n, scale=0.5):
    return {"w": RNG.normal(size=(m, n)) * scale, "b": RNG.normal(size=n) * 0.1}


# --- an LSTM by scan ----------------------------------------------------------------------------
def lstm_cell(params, carry, x):
    h, c = carry
    z = x @ params["wx"] + h @ params["wh"] + params["b"]
    i, f, g, o = jnp.split(z, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return (h, c), h


def lstm_loss(params, xs):
    hdim = params["wh"].shape[0]
    init = (jnp.zeros(hdim), jnp.zeros(hdim))
    (h, c), hs = lax.scan(lambda carry, x: lstm_cell(params, carry, x), init, xs)
    return jnp.sum(hs ** 2) + jnp.sum(c)


def lstm_loss_loop(params, xs):
    p = tree_util.tree_map(np.asarray, params)
    sig = lambda v: 1 / (1 + np.exp(-v))
    h = c = np.zeros(p["wh"].shape[0])
    total = 0.0
    for x in np.asarray(xs):
        z = x @ p["wx"] + h @ p["wh"] + p["b"]
        i, f, g, o = np.split(z, 4)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        total += np.sum(h ** 2)
    return total + np.sum(c)


def test_lstm_by_scan(x64):
    params = {"wx": RNG.normal(size=(2, 12)) * 0.5, "wh": RNG.normal(size=(3, 12)) * 0.5,
              "b": RNG.normal(size=12) * 0.1}
    xs = RNG.normal(size=(5, 2))
    want = lstm_loss_loop(params, xs)
    np.testing.assert_allclose(lstm_loss(to_snp(params), jnp.asarray(xs)), want, rtol=1e-12)
    np.testing.assert_allclose(jit(lstm_loss)(to_snp(params), jnp.asarray(xs)), want, rtol=1e-12)
    check_grad(lstm_loss, params, xs)
    check_grad(lstm_loss, params, xs, argnum=1)
    check_vmap(lambda xs: lstm_loss(to_snp(params), xs), (RNG.normal(size=(3, 5, 2)),))
    # per-sequence gradients
    batch = RNG.normal(size=(3, 5, 2))
    per = vmap(grad(lstm_loss), in_axes=(None, 0))(to_snp(params), jnp.asarray(batch))
    for k in range(3):
        assert_trees_close(tree_util.tree_map(lambda v: v[k], per),
                           grad(lstm_loss)(to_snp(params), jnp.asarray(batch[k])), rtol=1e-10)


# --- a GRU by a Python loop ---------------------------------------------------------------------
class GRU:
    def __init__(self, params):
        self.params = params

    def step(self, h, x):
        p = self.params
        r = jax.nn.sigmoid(x @ p["xr"] + h @ p["hr"])
        z = jax.nn.sigmoid(x @ p["xz"] + h @ p["hz"])
        n = jnp.tanh(x @ p["xn"] + r * (h @ p["hn"]))
        return (1 - z) * n + z * h

    def __call__(self, xs):
        h = jnp.zeros(self.params["hr"].shape[0])
        for t in range(xs.shape[0]):
            h = self.step(h, xs[t])
        return h


def gru_loss(params, xs, target):
    return jnp.mean((GRU(params)(xs) - target) ** 2)


def test_gru_python_loop_over_time(x64):
    names = ["xr", "xz", "xn", "hr", "hz", "hn"]
    params = {k: RNG.normal(size=(2 if k[0] == "x" else 3, 3)) * 0.6 for k in names}
    xs, target = RNG.normal(size=(4, 2)), RNG.normal(size=3)
    v = check_grad(gru_loss, params, xs, target)
    assert set(v) == set(names)
    check_grad(gru_loss, params, xs, target, argnum=1)
    check_vmap(lambda xs: GRU(to_snp(params))(xs), (RNG.normal(size=(3, 4, 2)),))
    np.testing.assert_allclose(jit(gru_loss)(to_snp(params), jnp.asarray(xs), target),
                               gru_loss(to_snp(params), jnp.asarray(xs), target), rtol=1e-12)


# --- a tied-weight autoencoder --------------------------------------------------------------------
def autoencoder(params, x):
    h = jax.nn.softplus(x @ params["w"] + params["b_enc"])
    return h @ params["w"].T + params["b_dec"]


def recon_loss(params, batch):
    return jnp.mean(jnp.sum((vmap(autoencoder, in_axes=(None, 0))(params, batch) - batch) ** 2,
                            axis=-1))


def test_tied_weight_autoencoder(x64):
    params = {"w": RNG.normal(size=(4, 2)) * 0.5, "b_enc": RNG.normal(size=2) * 0.1,
              "b_dec": RNG.normal(size=4) * 0.1}
    batch = RNG.normal(size=(6, 4))
    g = check_grad(recon_loss, params, batch)
    # the tied weight's gradient is the sum of its two uses: encoder and decoder
    w = params["w"]
    pre = batch @ w + params["b_enc"]
    h = np.log1p(np.exp(pre))
    r = 2 * (h @ w.T + params["b_dec"] - batch) / 6
    want = r.T @ h + batch.T @ ((r @ w) * (1 / (1 + np.exp(-pre))))
    np.testing.assert_allclose(g["w"], want, rtol=1e-10)
    # second order: the Hessian-vector product along the decoder bias is 2/6*6 = 2 v
    v = RNG.normal(size=4)
    hvp = jax.jvp(lambda b: grad(recon_loss)({**to_snp(params), "b_dec": b}, batch)["b_dec"],
                  (jnp.asarray(params["b_dec"]),), (jnp.asarray(v),))[1]
    np.testing.assert_allclose(hvp, 2 * v, rtol=1e-12)


# --- label smoothing and focal losses --------------------------------------------------------------
def smoothed_xent(logits, labels, alpha=0.1):
    n = logits.shape[-1]
    target = jax.nn.one_hot(labels, n) * (1 - alpha) + alpha / n
    return -jnp.mean(jnp.sum(target * jax.nn.log_softmax(logits), axis=-1))


def focal_loss(logits, labels, gamma=2.0):
    logp = jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=-1)[:, 0]
    p = jnp.exp(logp)
    return -jnp.mean((1 - p) ** gamma * logp)


def test_label_smoothing_and_focal_losses(x64):
    logits = RNG.normal(size=(5, 4))
    labels = np.array([0, 3, 1, 1, 2])
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    t = np.eye(4)[labels] * 0.9 + 0.1 / 4
    np.testing.assert_allclose(smoothed_xent(jnp.asarray(logits), labels),
                               -np.mean(np.sum(t * logp, -1)), rtol=1e-12)
    # d/dlogits = (softmax - target) / batch
    g = check_grad(smoothed_xent, logits, labels)
    np.testing.assert_allclose(g, (np.exp(logp) - t) / 5, rtol=1e-10)
    lp = logp[np.arange(5), labels]
    np.testing.assert_allclose(focal_loss(jnp.asarray(logits), labels),
                               -np.mean((1 - np.exp(lp)) ** 2 * lp), rtol=1e-12)
    check_grad(focal_loss, logits, labels)
    # gamma = 0 is cross entropy; the gradient in gamma at 0 by finite differences
    np.testing.assert_allclose(focal_loss(jnp.asarray(logits), labels, 0.0), -np.mean(lp),
                               rtol=1e-12)
    check_grad(lambda gm: focal_loss(jnp.asarray(logits), labels, gm), 0.5)
    check_vmap(lambda lg: smoothed_xent(lg, labels), (RNG.normal(size=(3, 5, 4)),))


# --- knowledge distillation ------------------------------------------------------------------------
def distill_loss(student_logits, teacher_logits, temperature):
    t = temperature
    p_teacher = jax.nn.softmax(lax.stop_gradient(teacher_logits) / t, axis=-1)
    log_p_student = jax.nn.log_softmax(student_logits / t, axis=-1)
    kl = jnp.sum(p_teacher * (jnp.log(p_teacher) - log_p_student), axis=-1)
    return t ** 2 * jnp.mean(kl)


def test_distillation_kl_with_temperature(x64):
    s, tch = RNG.normal(size=(4, 5)), RNG.normal(size=(4, 5))
    temp = 2.5
    ps = np.exp(s / temp) / np.exp(s / temp).sum(-1, keepdims=True)
    pt = np.exp(tch / temp) / np.exp(tch / temp).sum(-1, keepdims=True)
    g = check_grad(distill_loss, s, tch, temp)
    np.testing.assert_allclose(g, temp * (ps - pt) / 4, rtol=1e-10)
    # the teacher is held fixed
    np.testing.assert_allclose(grad(distill_loss, argnums=1)(jnp.asarray(s), jnp.asarray(tch),
                                                             temp), 0)
    # the temperature: not under stop_gradient, so finite differences agree
    check_grad(distill_loss, s, tch, temp, argnum=2)
    assert float(distill_loss(jnp.asarray(s), jnp.asarray(s), temp)) < 1e-12


# --- a hypernetwork -----------------------------------------------------------------------------------
def hypernet(hparams, z):
    flat = jnp.tanh(z @ hparams["w1"]) @ hparams["w2"]
    w = flat[:6].reshape(3, 2)
    b = flat[6:]
    return w, b


def target_net(hparams, z, x):
    w, b = hypernet(hparams, z)
    return jnp.sum(jnp.sin(x @ w + b))


def test_hypernetwork(x64):
    hparams = {"w1": RNG.normal(size=(2, 5)) * 0.5, "w2": RNG.normal(size=(5, 8)) * 0.5}
    z, x = RNG.normal(size=2), RNG.normal(size=(4, 3))
    check_grad(target_net, hparams, z, x)
    check_grad(target_net, hparams, z, x, argnum=1)
    # one embedding per task: vmap over z, against a loop
    zs = RNG.normal(size=(3, 2))
    check_vmap(lambda z: target_net(to_snp(hparams), z, jnp.asarray(x)), (zs,))
    check_vmap(lambda z: grad(target_net)(to_snp(hparams), z, jnp.asarray(x)), (zs,))
    h = jax.hessian(target_net, argnums=1)(to_snp(hparams), jnp.asarray(z), jnp.asarray(x))
    fd = np.stack([(np.asarray(grad(target_net, argnums=1)(to_snp(hparams),
                                                           jnp.asarray(z + e), jnp.asarray(x)))
                    - np.asarray(grad(target_net, argnums=1)(to_snp(hparams),
                                                             jnp.asarray(z - e), jnp.asarray(x))))
                   / 2e-6 for e in np.eye(2) * 1e-6])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-7)


# --- a neural additive model -------------------------------------------------------------------------
def feature_net(p, xi):
    h = jax.nn.relu(xi * p["w1"] + p["b1"])
    return jnp.dot(h, p["w2"])


def nam(params, x):
    contributions = vmap(feature_net, in_axes=(0, 0))(params, x)
    return jnp.sum(contributions) + 0.5, contributions


def test_neural_additive_model(x64):
    f = 3
    params = {"w1": RNG.normal(size=(f, 6)), "b1": RNG.normal(size=(f, 6)) * 0.3,
              "w2": RNG.normal(size=(f, 6)) * 0.3}
    x = RNG.normal(size=f)
    out, contrib = nam(to_snp(params), jnp.asarray(x))
    loop = [float(feature_net(tree_util.tree_map(lambda v: jnp.asarray(v[i]), params), x[i]))
            for i in range(f)]
    np.testing.assert_allclose(contrib, loop, rtol=1e-12)
    np.testing.assert_allclose(out, sum(loop) + 0.5, rtol=1e-12)
    loss = lambda p, x: nam(p, x)[0] ** 2
    check_grad(loss, params, x)
    check_grad(loss, params, x, argnum=1)
    (v, aux), g = value_and_grad(nam, has_aux=True)(to_snp(params), jnp.asarray(x))
    np.testing.assert_allclose(aux, loop, rtol=1e-12)
    # the output is additive: its Hessian in x is diagonal
    h = jax.hessian(lambda x: nam(to_snp(params), x)[0])(jnp.asarray(x))
    np.testing.assert_allclose(h - np.diag(np.diag(h)), 0, atol=1e-12)
    check_vmap(lambda x: nam(to_snp(params), x)[0], (RNG.normal(size=(4, f)),))


# --- Deep Sets --------------------------------------------------------------------------------------
def deep_sets(params, points):
    phi = jnp.tanh(points @ params["phi"]["w"] + params["phi"]["b"])
    pooled = jnp.sum(phi, axis=0)
    return jnp.tanh(pooled @ params["rho"]["w"] + params["rho"]["b"])[0]


def test_deep_sets_permutation_invariance(x64):
    params = {"phi": dense_init(2, 4), "rho": dense_init(4, 1)}
    pts = RNG.normal(size=(5, 2))
    perm = RNG.permutation(5)
    out = deep_sets(to_snp(params), jnp.asarray(pts))
    np.testing.assert_allclose(deep_sets(to_snp(params), jnp.asarray(pts[perm])), out,
                               rtol=1e-12)
    g = check_grad(deep_sets, params, pts, argnum=1)
    g_perm = grad(deep_sets, argnums=1)(to_snp(params), jnp.asarray(pts[perm]))
    np.testing.assert_allclose(g_perm, np.asarray(g)[perm], rtol=1e-12)
    check_grad(deep_sets, params, pts)
    check_vmap(lambda s: deep_sets(to_snp(params), s), (RNG.normal(size=(3, 5, 2)),))


# --- gradient accumulation ---------------------------------------------------------------------------
def mse(params, x, y):
    pred = jnp.tanh(x @ params["w"] + params["b"])
    return jnp.mean((pred - y) ** 2)


def accumulated_grads(params, x, y, n_micro):
    size = x.shape[0] // n_micro
    total = tree_util.tree_map(jnp.zeros_like, params)
    for k in range(n_micro):
        sl = slice(k * size, (k + 1) * size)
        g = grad(mse)(params, x[sl], y[sl])
        total = tree_util.tree_map(lambda a, b: a + b / n_micro, total, g)
    return total


def test_gradient_accumulation_equals_the_full_batch(x64):
    params = to_snp(dense_init(3, 2))
    x, y = jnp.asarray(RNG.normal(size=(8, 3))), jnp.asarray(RNG.normal(size=(8, 2)))
    full = grad(mse)(params, x, y)
    for n in (1, 2, 4):
        assert_trees_close(accumulated_grads(params, x, y, n), full, rtol=1e-12)
        assert_trees_close(jit(accumulated_grads, static_argnums=3)(params, x, y, n), full,
                           rtol=1e-12)
    # the same by vmap over micro-batches
    xs, ys = x.reshape(4, 2, 3), y.reshape(4, 2, 2)
    per = vmap(grad(mse), in_axes=(None, 0, 0))(params, xs, ys)
    assert_trees_close(tree_util.tree_map(lambda v: jnp.mean(v, 0), per), full, rtol=1e-12)


# --- weight decay masked by tree paths ----------------------------------------------------------------
def decayed_loss(params, x, y, wd=0.1):
    def penalty(path, leaf):
        name = jax.tree_util.keystr(path)
        return 0.0 if "b" in name.split("'")[-2] else jnp.sum(leaf ** 2)
    reg = sum(tree_util.tree_leaves(tree_util.tree_map_with_path(penalty, params)))
    return mse(params["dense"], x, y) + wd * reg


def test_weight_decay_masked_by_paths(x64):
    params = {"dense": dense_init(3, 2)}
    x, y = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 2))
    g = check_grad(decayed_loss, params, x, y)
    plain = grad(mse)(to_snp(params["dense"]), jnp.asarray(x), jnp.asarray(y))
    np.testing.assert_allclose(g["dense"]["b"], plain["b"], rtol=1e-12)
    np.testing.assert_allclose(g["dense"]["w"], np.asarray(plain["w"]) + 0.2 * params["dense"]["w"],
                               rtol=1e-12)


# --- a 1-D convolution ---------------------------------------------------------------------------------
def conv1d(x, kernel):
    # x: (length,), kernel: (width,) -> NCH / OIH layouts with one channel
    out = lax.conv_general_dilated(x[None, None, :], kernel[None, None, :], window_strides=(1,),
                                   padding="VALID")
    return out[0, 0]


def test_conv1d_against_numpy_correlate(x64):
    x, k = RNG.normal(size=10), RNG.normal(size=3)
    want = np.correlate(x, k, mode="valid")
    np.testing.assert_allclose(conv1d(jnp.asarray(x), jnp.asarray(k)), want, rtol=1e-12)
    np.testing.assert_allclose(jit(conv1d)(jnp.asarray(x), jnp.asarray(k)), want, rtol=1e-12)
    w = RNG.normal(size=8)
    loss = lambda x, k: jnp.sum(w * conv1d(x, k) ** 2)
    check_grad(loss, x, k)
    check_grad(loss, x, k, argnum=1)
    check_vmap(conv1d, (RNG.normal(size=(3, 10)), RNG.normal(size=(3, 3))))
    check_vmap(conv1d, (RNG.normal(size=(3, 10)), k), in_axes=(0, None))

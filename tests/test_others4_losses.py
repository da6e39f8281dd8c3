"""Issue 15, code written by others (fourth round): training losses from papers as users write
them with JAX: InfoNCE / SimCLR with normalised embeddings and a masked diagonal, a triplet loss
with a margin, focal loss, label-smoothed cross-entropy with one_hot, knowledge distillation
with a temperature, spectral normalisation by power iteration under stop_gradient, mixup with a
per-example mixing weight, and an EMA of parameters with tree_map; each under grad, jit and
vmap, checked against float64 finite differences, NumPy written out, a Python loop and eager."""
import numpy as np

import secant.numpy as jnp
from secant import grad, jit, jvp, lax, nn, tree_util, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(515151)


def normalise(z, axis=-1, eps=1e-8):
    return z / jnp.sqrt(jnp.sum(z ** 2, axis=axis, keepdims=True) + eps)


def info_nce(za, zb, temperature=0.5):
    """SimCLR's NT-Xent: each view's positive is the other view of the same example."""
    z = normalise(jnp.concatenate([za, zb], axis=0))
    n = za.shape[0]
    sim = z @ z.T / temperature
    sim = jnp.where(jnp.eye(2 * n, dtype=bool), -jnp.inf, sim)
    positives = jnp.concatenate([jnp.arange(n, 2 * n), jnp.arange(n)])
    logp = sim - nn.logsumexp(sim, axis=1, keepdims=True)
    return -jnp.mean(logp[jnp.arange(2 * n), positives])


def np_info_nce(za, zb, temperature=0.5):
    z = np.concatenate([za, zb])
    z = z / np.sqrt((z ** 2).sum(1, keepdims=True) + 1e-8)
    n = za.shape[0]
    total = 0.0
    for i in range(2 * n):
        j = (i + n) % (2 * n)
        sims = [z[i] @ z[k] / temperature for k in range(2 * n) if k != i]
        total += -(z[i] @ z[j] / temperature - np.log(np.sum(np.exp(sims))))
    return total / (2 * n)


def test_info_nce(x64):
    za, zb = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
    np.testing.assert_allclose(info_nce(to_snp(za), to_snp(zb)), np_info_nce(za, zb), rtol=1e-12)
    check_grad(info_nce, za, zb)
    check_grad(info_nce, za, zb, argnum=1)
    check_vmap(info_nce, (RNG.normal(size=(2, 4, 3)), RNG.normal(size=(2, 4, 3))))


def triplet_loss(anchor, positive, negative, margin=0.5):
    d_pos = jnp.sum((anchor - positive) ** 2, axis=-1)
    d_neg = jnp.sum((anchor - negative) ** 2, axis=-1)
    return jnp.mean(jnp.maximum(d_pos - d_neg + margin, 0.0))


def test_triplet_loss(x64):
    a, p, n = (RNG.normal(size=(6, 3)) for _ in range(3))
    check_grad(triplet_loss, a, p, n)
    check_grad(triplet_loss, a, p, n, argnum=2)
    check_vmap(triplet_loss, (a, p, n))


def focal_loss(logits, labels, gamma=2.0, alpha=0.25):
    p = nn.sigmoid(logits)
    pt = jnp.where(labels == 1, p, 1 - p)
    at = jnp.where(labels == 1, alpha, 1 - alpha)
    return -jnp.mean(at * (1 - pt) ** gamma * jnp.log(pt))


def label_smoothed_xent(logits, labels, smoothing=0.1):
    n_classes = logits.shape[-1]
    targets = nn.one_hot(labels, n_classes) * (1 - smoothing) + smoothing / n_classes
    return -jnp.mean(jnp.sum(targets * nn.log_softmax(logits), axis=-1))


def distillation(student_logits, teacher_logits, temperature=3.0):
    p_teacher = nn.softmax(teacher_logits / temperature)
    log_student = nn.log_softmax(student_logits / temperature)
    return temperature ** 2 * jnp.mean(jnp.sum(
        p_teacher * (jnp.log(p_teacher) - log_student), axis=-1))


def test_classification_losses(x64):
    logits = RNG.normal(size=8)
    labels = (RNG.uniform(size=8) < 0.4).astype(np.int32)
    g = check_grad(focal_loss, logits, labels)
    p = 1 / (1 + np.exp(-logits))
    pt = np.where(labels == 1, p, 1 - p)
    at = np.where(labels == 1, 0.25, 0.75)
    dpt = np.where(labels == 1, 1.0, -1.0) * p * (1 - p)
    want = -at * (-2 * (1 - pt) * np.log(pt) + (1 - pt) ** 2 / pt) * dpt / 8
    np.testing.assert_allclose(g, want, rtol=1e-10)
    check_vmap(focal_loss, (RNG.normal(size=(3, 8)), labels), in_axes=(0, None))
    logits3 = RNG.normal(size=(5, 4))
    labels3 = RNG.integers(0, 4, size=5)
    g = check_grad(label_smoothed_xent, logits3, labels3)
    sm = np.exp(logits3) / np.exp(logits3).sum(1, keepdims=True)
    targets = np.eye(4)[labels3] * 0.9 + 0.025
    np.testing.assert_allclose(g, (sm - targets) / 5, rtol=1e-10)
    check_grad(distillation, logits3, RNG.normal(size=(5, 4)))
    check_grad(distillation, logits3, RNG.normal(size=(5, 4)), argnum=1)
    check_vmap(distillation, (RNG.normal(size=(3, 5, 4)), RNG.normal(size=(3, 5, 4))))


def spectral_norm(w, u, n_iter=3):
    for _ in range(n_iter):
        v = normalise(w.T @ u)
        u = normalise(w @ v)
    u, v = lax.stop_gradient(u), lax.stop_gradient(v)
    sigma = u @ w @ v
    return w / sigma, u


def sn_loss(w, u, x):
    w_sn, _ = spectral_norm(w, u)
    return jnp.sum(jnp.tanh(x @ w_sn.T))


def test_spectral_normalisation(x64):
    w = RNG.normal(size=(4, 3))
    u = RNG.normal(size=4)
    x = RNG.normal(size=(5, 3))
    w_sn, _ = spectral_norm(to_snp(w), to_snp(u), n_iter=50)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(w_sn), 2), 1.0, rtol=1e-8)
    # u, v are constants: the gradient is that of w / (u^T w v) with u, v frozen
    uu, vv = np.asarray(u), None
    for _ in range(3):
        v = w.T @ uu
        v = v / np.sqrt(np.sum(v ** 2) + 1e-8)
        uu = w @ v
        uu = uu / np.sqrt(np.sum(uu ** 2) + 1e-8)
        vv = v
    frozen = lambda w: jnp.sum(jnp.tanh(to_snp(x) @ (w / (to_snp(uu) @ w @ to_snp(vv))).T))
    g = grad(sn_loss)(to_snp(w), to_snp(u), to_snp(x))
    np.testing.assert_allclose(g, fd_grad(frozen, (to_snp(w),)), rtol=1e-6)
    np.testing.assert_allclose(jit(grad(sn_loss))(to_snp(w), to_snp(u), to_snp(x)), g,
                               rtol=1e-12)
    check_vmap(sn_loss, (RNG.normal(size=(3, 4, 3)), u, x), in_axes=(0, None, None))


def mixup_loss(w, x1, y1, x2, y2, lam):
    x = lam * x1 + (1 - lam) * x2
    y = lam * y1 + (1 - lam) * y2
    return (jnp.tanh(x @ w) - y) ** 2


def test_mixup_per_example(x64):
    w = RNG.normal(size=3)
    x1, x2 = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 3))
    y1, y2 = RNG.normal(size=6), RNG.normal(size=6)
    lam = RNG.beta(0.4, 0.4, size=6)
    a1, b1, a2, b2, l = to_snp((x1, y1, x2, y2, lam))
    per_example = vmap(mixup_loss, in_axes=(None, 0, 0, 0, 0, 0))
    check_grad(lambda w: jnp.mean(per_example(w, a1, b1, a2, b2, l)), w)
    check_vmap(mixup_loss, (w, x1, y1, x2, y2, lam), in_axes=(None, 0, 0, 0, 0, 0))
    # the gradient in the mixing weight (as in learned augmentation)
    check_grad(lambda lam: jnp.sum(per_example(to_snp(w), a1, b1, a2, b2, lam)), lam)


def test_mixup_with_a_starred_batch(x64):
    w = RNG.normal(size=3)
    batch = to_snp((RNG.normal(size=(6, 3)), RNG.normal(size=6), RNG.normal(size=(6, 3)),
                    RNG.normal(size=6), RNG.beta(0.4, 0.4, size=6)))
    check_grad(lambda w: jnp.mean(vmap(mixup_loss, in_axes=(None, 0, 0, 0, 0, 0))(w, *batch)),
               w)


def _pair_error(w, x, y):
    return (jnp.tanh(x @ w) - y) ** 2


def test_jitted_vmapped_loss_with_a_starred_pair(x64):
    """The same kind, another shape: jit(vmap(f)) called with its data pair starred after the
    differentiated weights, and vmap(f) with a tuple computed in place starred, under grad and jvp,
    against finite differences."""
    w = RNG.normal(size=3)
    pair = to_snp((RNG.normal(size=(5, 3)), RNG.normal(size=5)))
    per_example = jit(vmap(_pair_error, in_axes=(None, 0, 0)))
    for f in (lambda w: jnp.sum(per_example(w, *pair)),
              lambda w: jnp.mean(vmap(_pair_error, in_axes=(None, 0, 0))(w, *pair[::-1][::-1]))):
        g = check_grad(f, w)
        t = RNG.normal(size=3)
        _, tan = jvp(f, (to_snp(w),), (to_snp(t),))
        np.testing.assert_allclose(tan, np.dot(g, t), rtol=1e-8)


def ema_update(ema, params, decay=0.9):
    return tree_util.tree_map(lambda e, p: decay * e + (1 - decay) * p, ema, params)


def loss_at_ema(params, ema, x):
    ema = ema_update(ema, params)
    return jnp.sum(jnp.sin(x @ ema["w"] + ema["b"]) ** 2)


def test_ema_of_parameters(x64):
    params = {"w": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2)}
    ema = {"w": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2)}
    x = RNG.normal(size=(4, 3))
    g = check_grad(loss_at_ema, params, ema, x)
    g_ema = check_grad(loss_at_ema, params, ema, x, argnum=1)
    assert_trees_close(g, tree_util.tree_map(lambda v: v / 9.0, g_ema))   # 0.1 vs 0.9
    check_vmap(loss_at_ema, (params, ema, RNG.normal(size=(3, 4, 3))), in_axes=(None, None, 0))

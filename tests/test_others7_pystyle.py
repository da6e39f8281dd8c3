"""Issue 15, code written by others (seventh round): Python written the way Python programmers
write it, inside transformed functions. functools.reduce / itertools.accumulate /
operator.itemgetter over parameters, math.* on static values, plain NumPy constants and shapes
inside traced code, f-string logging, enumerate(zip(...)) over layer lists, *args forwarding
wrappers, decorators stacking jit over grad over a method, functools.partial of a loss with
keyword hyperparameters, and a class whose methods call each other. Checked against finite
differences, a Python loop for vmap, and eager for jit."""
import functools
import itertools
import math
import operator

import numpy as np

import secant.numpy as jnp
from secant import grad, jit, value_and_grad, vmap

from others15_check import check_grad, check_vmap, to_snp

RNG = np.random.default_rng(1717)
LAYERS = [(RNG.normal(size=(3, 4)) / 2, RNG.normal(size=4) / 4),
          (RNG.normal(size=(4, 4)) / 2, RNG.normal(size=4) / 4),
          (RNG.normal(size=(4, 1)) / 2, RNG.normal(size=1) / 4)]
XB = RNG.normal(size=(5, 3))


def np_mlp(layers, x):
    for i, (w, b) in enumerate(layers):
        x = x @ w + b
        if i < len(layers) - 1:
            x = np.tanh(x)
    return x


# --- functools / itertools / operator ----------------------------------------------------------
def mlp_reduce(layers, x):
    """The forward pass as a reduce over the layers (the last one linear)."""
    *hidden, (w_out, b_out) = layers
    h = functools.reduce(lambda h, wb: jnp.tanh(h @ wb[0] + wb[1]), hidden, x)
    return h @ w_out + b_out


def test_functools_reduce_over_layers(x64):
    np.testing.assert_allclose(mlp_reduce(to_snp(LAYERS), XB), np_mlp(LAYERS, XB), rtol=1e-12)
    loss = lambda layers, x: jnp.sum(mlp_reduce(layers, x) ** 2)
    g = check_grad(loss, LAYERS, XB)
    assert isinstance(g, list) and isinstance(g[0], tuple)
    check_vmap(lambda x: mlp_reduce(to_snp(LAYERS), x), (XB,))


def l2_by_reduce(params):
    return functools.reduce(operator.add, [jnp.sum(w ** 2) for w, _ in params])


def test_reduce_with_operator_add_and_itemgetter(x64):
    weights = operator.itemgetter(0)
    f = lambda params: l2_by_reduce(params) + sum(jnp.sum(weights(p)) for p in params)
    g = check_grad(f, LAYERS)
    for (gw, gb), (w, _) in zip(g, LAYERS):
        np.testing.assert_allclose(gw, 2 * w + 1, rtol=1e-12)
        np.testing.assert_allclose(gb, 0.0)


def cumulative_discount(rewards, gamma):
    """Discounted returns by itertools.accumulate over the reversed rewards."""
    rets = list(itertools.accumulate(reversed(rewards), lambda acc, r: r + gamma * acc))
    return jnp.stack(rets[::-1])


def test_itertools_accumulate_discounted_returns(x64):
    rewards = [jnp.asarray(r) for r in [1.0, 0.0, 2.0, -1.0]]
    gamma = jnp.asarray(0.9)
    out = cumulative_discount(rewards, gamma)
    want = [1 + 0.9 * (0 + 0.9 * (2 + 0.9 * -1)), 0 + 0.9 * (2 + 0.9 * -1), 2 + 0.9 * -1, -1]
    np.testing.assert_allclose(out, want, rtol=1e-12)
    f = lambda gamma: jnp.sum(cumulative_discount(rewards, gamma))
    # d/dgamma of sum_t sum_k gamma^k r_{t+k}
    r = [1.0, 0.0, 2.0, -1.0]
    want_g = sum(k * 0.9 ** (k - 1) * r[t + k] for t in range(4) for k in range(1, 4 - t))
    np.testing.assert_allclose(grad(f)(gamma), want_g, rtol=1e-12)
    np.testing.assert_allclose(jit(grad(f))(gamma), want_g, rtol=1e-12)
    g_r = grad(lambda rs: jnp.sum(cumulative_discount(rs, gamma)))(rewards)
    np.testing.assert_allclose(g_r, [sum(0.9 ** k for k in range(t + 1)) for t in range(4)],
                               rtol=1e-12)


# --- math on static values, NumPy constants and shapes -----------------------------------------
def gaussian_log_pdf(x, mu, log_sigma):
    d = x.shape[-1]
    z = (x - mu) / jnp.exp(log_sigma)
    return -0.5 * jnp.sum(z ** 2, -1) - jnp.sum(log_sigma) - 0.5 * d * math.log(2 * math.pi)


def positional_encoding(t, dim=6):
    freqs = np.exp(-math.log(10000.0) * np.arange(0, dim, 2) / dim)     # NumPy constants
    angles = t[..., None] * freqs
    return jnp.concatenate([jnp.sin(angles), jnp.cos(angles)], -1)


def test_math_and_numpy_constants_in_traced_code(x64):
    x = RNG.normal(size=(4, 3))
    mu, ls = np.array([0.1, -0.2, 0.3]), np.array([0.0, 0.5, -0.5])
    want = scipy_norm_logpdf(x, mu, np.exp(ls))
    np.testing.assert_allclose(gaussian_log_pdf(jnp.asarray(x), mu, ls), want, rtol=1e-12)
    check_grad(lambda mu, ls: jnp.sum(gaussian_log_pdf(jnp.asarray(x), mu, ls)), mu, ls)
    check_grad(lambda mu, ls: jnp.sum(gaussian_log_pdf(jnp.asarray(x), mu, ls)), mu, ls, argnum=1)
    check_vmap(lambda x: gaussian_log_pdf(x, jnp.asarray(mu), jnp.asarray(ls)), (x,))
    t = np.array([0.0, 1.0, 2.5])
    pe = positional_encoding(jnp.asarray(t))
    freqs = np.exp(-np.log(10000.0) * np.arange(0, 6, 2) / 6)
    np.testing.assert_allclose(pe[:, :3], np.sin(t[:, None] * freqs), rtol=1e-12)
    d = vmap(grad(lambda t: jnp.sum(positional_encoding(t))))(jnp.asarray(t))
    np.testing.assert_allclose(d, np.sum(freqs * (np.cos(t[:, None] * freqs) - np.sin(t[:, None] * freqs)), -1),
                               rtol=1e-12)


def scipy_norm_logpdf(x, mu, sigma):
    import scipy.stats
    return np.sum(scipy.stats.norm.logpdf(x, mu, sigma), -1)


def test_shapes_read_as_python_ints_with_numpy(x64):
    def attention_scores(q, k):
        d = q.shape[-1]
        scale = 1.0 / np.sqrt(d)
        n = int(np.prod(q.shape[:-1]))
        scores = (q @ k.T) * scale
        return scores.reshape(n, -1)

    q, k = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(5, 4))
    out = attention_scores(jnp.asarray(q), jnp.asarray(k))
    np.testing.assert_allclose(out, (q @ k.T).reshape(6, 5) / 2.0, rtol=1e-12)
    check_grad(lambda q: jnp.sum(jnp.tanh(attention_scores(q, jnp.asarray(k)))), q)
    check_vmap(lambda q: attention_scores(q, jnp.asarray(k)), (q,))


# --- f-string logging, enumerate(zip(...)) ------------------------------------------------------
def forward_logged(layers, x, log):
    for i, ((w, b), name) in enumerate(zip(layers, ["in", "hidden", "out"])):
        x = x @ w + b
        log.append(f"layer {i} ({name}): {x.shape}")
        if i < len(layers) - 1:
            x = jnp.tanh(x)
    return x


def test_f_string_logging_and_enumerate_zip(x64):
    log = []
    out = forward_logged(to_snp(LAYERS), jnp.asarray(XB), log)
    np.testing.assert_allclose(out, np_mlp(LAYERS, XB), rtol=1e-12)
    assert log == ["layer 0 (in): (5, 4)", "layer 1 (hidden): (5, 4)", "layer 2 (out): (5, 1)"]
    log.clear()
    g = grad(lambda layers: jnp.sum(forward_logged(layers, jnp.asarray(XB), log)))(to_snp(LAYERS))
    assert log == ["layer 0 (in): (5, 4)", "layer 1 (hidden): (5, 4)", "layer 2 (out): (5, 1)"]
    ref = check_grad(lambda layers: jnp.sum(mlp_reduce(layers, jnp.asarray(XB))), LAYERS)
    for a, b in zip(g, ref):
        np.testing.assert_allclose(a[0], b[0], rtol=1e-10)
    log.clear()
    jit(lambda x: forward_logged(to_snp(LAYERS), x, log))(jnp.asarray(XB))
    assert len(log) == 3            # once, at trace time
    log.clear()
    per = vmap(lambda x: forward_logged(to_snp(LAYERS), x, log))(jnp.asarray(XB))
    np.testing.assert_allclose(per, np_mlp(LAYERS, XB), rtol=1e-12)
    assert log[-1] == "layer 2 (out): (1,)", log       # the per-example shape, as JAX traces it


# --- *args forwarding, decorators ---------------------------------------------------------------
def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        return fn(*args, **kwargs)
    wrapper.calls = 0
    return wrapper


@logged
def huber(residual, delta=1.0):
    a = jnp.abs(residual)
    return jnp.where(a <= delta, 0.5 * residual ** 2, delta * (a - 0.5 * delta))


def total_loss(*residuals, delta=1.0):
    return sum(jnp.sum(huber(r, delta=delta)) for r in residuals)


def test_args_forwarding_wrapper_and_keyword_through_it(x64):
    r1, r2 = np.array([0.3, -2.0, 1.5]), np.array([0.9, -0.1])
    f = lambda r1, r2: total_loss(r1, r2, delta=1.2)
    g1 = check_grad(f, r1, r2)
    np.testing.assert_allclose(g1, np.clip(r1, -1.2, 1.2), rtol=1e-12)
    g2 = check_grad(f, r1, r2, argnum=1)
    np.testing.assert_allclose(g2, np.clip(r2, -1.2, 1.2), rtol=1e-12)
    before = huber.calls
    vmap(grad(lambda r: total_loss(r, delta=0.5)))(jnp.asarray(r1))
    assert huber.calls > before
    np.testing.assert_allclose(vmap(grad(lambda r: total_loss(r, delta=0.5)))(jnp.asarray(r1)),
                               np.clip(r1, -0.5, 0.5), rtol=1e-12)


class Regressor:
    def __init__(self, l2):
        self.l2 = l2

    def predict(self, w, x):
        return x @ w

    def loss(self, w, x, y):
        return jnp.mean((self.predict(w, x) - y) ** 2) + self.l2 * jnp.sum(w ** 2)

    @functools.partial(jit, static_argnums=0)
    @functools.partial(grad, argnums=1)
    def grad_loss(self, w, x, y):
        return self.loss(w, x, y)

    @functools.partial(jit, static_argnums=0)
    def step(self, w, x, y, lr=0.1):
        return w - lr * self.grad_loss(w, x, y)


def test_jit_over_grad_over_a_method(x64):
    reg = Regressor(0.01)
    x, y = RNG.normal(size=(10, 3)), RNG.normal(size=10)
    w = jnp.asarray([0.1, 0.2, -0.3])
    g = reg.grad_loss(w, jnp.asarray(x), jnp.asarray(y))
    wn = np.asarray(w)
    want = 2 * x.T @ (x @ wn - y) / 10 + 0.02 * wn
    np.testing.assert_allclose(g, want, rtol=1e-12)
    w1 = reg.step(w, jnp.asarray(x), jnp.asarray(y))
    np.testing.assert_allclose(w1, wn - 0.1 * want, rtol=1e-12)
    # per-example gradients of the method by vmap
    per = vmap(lambda xi, yi: grad(reg.loss)(w, xi[None], yi[None]))(jnp.asarray(x), jnp.asarray(y))
    np.testing.assert_allclose(per.mean(0), want, rtol=1e-10)


def test_partial_loss_with_keyword_hyperparameters_under_value_and_grad(x64):
    def elastic_net(w, x, y, *, alpha=0.1, l1_ratio=0.5):
        r = x @ w - y
        return 0.5 * jnp.mean(r ** 2) + alpha * (l1_ratio * jnp.sum(jnp.abs(w))
                                                 + 0.5 * (1 - l1_ratio) * jnp.sum(w ** 2))

    loss = functools.partial(elastic_net, alpha=0.2, l1_ratio=0.3)
    x, y = RNG.normal(size=(8, 3)), RNG.normal(size=8)
    w = np.array([0.4, -0.3, 0.2])
    v, g = jit(value_and_grad(loss))(jnp.asarray(w), jnp.asarray(x), jnp.asarray(y))
    want = x.T @ (x @ w - y) / 8 + 0.2 * (0.3 * np.sign(w) + 0.7 * w)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    check_grad(loss, w, x, y)
    ws = RNG.normal(size=(4, 3))
    check_vmap(lambda w: grad(loss)(w, jnp.asarray(x), jnp.asarray(y)), (ws,))


def test_sorted_dict_items_and_map_over_named_params(x64):
    """A regulariser over named parameters: sorted(params.items()), map and a dict of scales."""
    scales = {"w1": 1.0, "w2": 0.5, "b": 0.0}

    def reg(params):
        terms = map(lambda kv: scales[kv[0]] * jnp.sum(kv[1] ** 2), sorted(params.items()))
        return sum(terms)

    params = {"w2": RNG.normal(size=3), "b": RNG.normal(size=2), "w1": RNG.normal(size=(2, 2))}
    g = check_grad(reg, params)
    for k in params:
        np.testing.assert_allclose(g[k], 2 * scales[k] * params[k], rtol=1e-12)
    check_vmap(lambda w1: reg({"w1": w1, "w2": jnp.ones(3), "b": jnp.ones(2)}), (RNG.normal(size=(3, 2, 2)),))

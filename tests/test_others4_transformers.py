"""Issue 15, code written by others (fourth round): transformer models as users write them with
JAX: multi-head attention with reshapes, transposes and einsum, causal masks with where, layer
norm, sinusoidal positions and an embedding table read with integer tokens, a pre-LN block
with a GELU MLP, next-token cross-entropy with take_along_axis, a jitted model with
functools.partial(jit, static_argnames=...), and custom_jvp / custom_vjp activations in it;
each under grad, jit, vmap, jvp and hessian-vector products, checked against float64 finite
differences, NumPy written out, a Python loop and eager."""
import functools
import math

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import custom_jvp, custom_vjp, grad, jit, jvp, nn, vmap

from others15_check import (assert_trees_close, check_grad, check_vmap, fd_grad, fd_jvp,
                            to_np, to_snp)

RNG = np.random.default_rng(77077)
D, H, T, V = 8, 2, 5, 11


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return gamma * (x - mean) / jnp.sqrt(var + eps) + beta


def np_layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def multi_head_attention(p, x, causal=True, n_heads=H):
    t, d = x.shape
    hd = d // n_heads
    q = (x @ p["wq"]).reshape(t, n_heads, hd).transpose(1, 0, 2)
    k = (x @ p["wk"]).reshape(t, n_heads, hd).transpose(1, 0, 2)
    v = (x @ p["wv"]).reshape(t, n_heads, hd).transpose(1, 0, 2)
    scores = jnp.einsum("hqd,hkd->hqk", q, k) / math.sqrt(hd)
    if causal:
        mask = jnp.tril(jnp.ones((t, t), dtype=bool))
        scores = jnp.where(mask[None], scores, -1e9)
    weights = nn.softmax(scores, axis=-1)
    out = jnp.einsum("hqk,hkd->hqd", weights, v)
    return out.transpose(1, 0, 2).reshape(t, d) @ p["wo"]


def np_attention(p, x, causal=True, n_heads=H):
    t, d = x.shape
    hd = d // n_heads
    outs = []
    for h in range(n_heads):
        sl = slice(h * hd, (h + 1) * hd)
        q, k, v = (x @ p["wq"])[:, sl], (x @ p["wk"])[:, sl], (x @ p["wv"])[:, sl]
        s = q @ k.T / np.sqrt(hd)
        if causal:
            s = np.where(np.tril(np.ones((t, t))) > 0, s, -1e9)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        outs.append(w @ v)
    return np.concatenate(outs, axis=1) @ p["wo"]


def init_block(rng):
    s = 1 / np.sqrt(D)
    return {"attn": {k: rng.normal(size=(D, D)) * s for k in ("wq", "wk", "wv", "wo")},
            "ln1": {"gamma": 1 + 0.1 * rng.normal(size=D), "beta": 0.1 * rng.normal(size=D)},
            "ln2": {"gamma": 1 + 0.1 * rng.normal(size=D), "beta": 0.1 * rng.normal(size=D)},
            "mlp": {"w1": rng.normal(size=(D, 2 * D)) * s, "b1": np.zeros(2 * D),
                    "w2": rng.normal(size=(2 * D, D)) * s / 2, "b2": np.zeros(D)}}


def block(p, x):
    x = x + multi_head_attention(p["attn"], layer_norm(x, **p["ln1"]))
    h = nn.gelu(layer_norm(x, **p["ln2"]) @ p["mlp"]["w1"] + p["mlp"]["b1"])
    return x + h @ p["mlp"]["w2"] + p["mlp"]["b2"]


def positions(t, d):
    pos = jnp.arange(t)[:, None]
    i = jnp.arange(d // 2)[None, :]
    angles = pos / (10000 ** (2 * i / d))
    return jnp.concatenate([jnp.sin(angles), jnp.cos(angles)], axis=-1)


def init_model(rng, n_layers=2):
    return {"embed": rng.normal(size=(V, D)) * 0.5,
            "blocks": [init_block(rng) for _ in range(n_layers)],
            "ln_f": {"gamma": np.ones(D), "beta": np.zeros(D)}}


def model_logits(params, tokens):
    x = params["embed"][tokens] + positions(tokens.shape[0], D)
    for p in params["blocks"]:
        x = block(p, x)
    return layer_norm(x, **params["ln_f"]) @ params["embed"].T      # tied embeddings


def next_token_loss(params, tokens):
    logits = model_logits(params, tokens[:-1])
    logp = nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, tokens[1:, None], axis=-1))


TOKENS = RNG.integers(0, V, size=T + 1)


def test_attention_against_numpy_and_its_gradients(x64):
    p = {k: RNG.normal(size=(D, D)) / np.sqrt(D) for k in ("wq", "wk", "wv", "wo")}
    x = RNG.normal(size=(T, D))
    for causal in (True, False):
        np.testing.assert_allclose(multi_head_attention(to_snp(p), to_snp(x), causal),
                                   np_attention(p, x, causal), rtol=1e-10, atol=1e-12)
    loss = lambda p, x: jnp.sum(jnp.tanh(multi_head_attention(p, x)))
    check_grad(loss, p, x)
    check_grad(loss, p, x, argnum=1)
    # causality: output t does not depend on inputs after t
    J = secant.jacrev(lambda x: multi_head_attention(to_snp(p), x)[1])(to_snp(x))
    assert np.all(np.asarray(J)[:, 2:, :] == 0)
    check_vmap(multi_head_attention, (p, RNG.normal(size=(3, T, D))), in_axes=(None, 0))


def test_layer_norm(x64):
    x, gamma, beta = RNG.normal(size=(4, D)), RNG.normal(size=D), RNG.normal(size=D)
    np.testing.assert_allclose(layer_norm(*to_snp((x, gamma, beta))),
                               np_layer_norm(x, gamma, beta), rtol=1e-10)
    loss = lambda x, g, b: jnp.sum(jnp.sin(layer_norm(x, g, b)))
    check_grad(loss, x, gamma, beta)
    check_grad(loss, x, gamma, beta, argnum=1)
    # layer norm is invariant to a shift of each row: its jvp along ones is zero
    _, tan = jvp(lambda x: layer_norm(x, to_snp(gamma), to_snp(beta)), (to_snp(x),),
                 (jnp.ones_like(to_snp(x)),))
    np.testing.assert_allclose(tan, 0.0, atol=1e-8)


def test_transformer_next_token_loss(x64):
    params = init_model(RNG)
    loss = next_token_loss(to_snp(params), jnp.asarray(TOKENS))
    assert np.isfinite(float(loss))
    g = grad(next_token_loss)(to_snp(params), jnp.asarray(TOKENS))
    # finite differences on a few coordinates of a few leaves (the full check is slow)
    for path, idx in ((("embed",), (TOKENS[2], 3)), (("blocks", 0, "attn", "wq"), (1, 2)),
                      (("blocks", 1, "mlp", "w1"), (4, 7)), (("ln_f", "gamma"), (5,))):
        def moved(eps):
            p = to_np(params)
            leaf = p
            for k in path[:-1]:
                leaf = leaf[k]
            arr = np.array(leaf[path[-1]])
            arr[idx] += eps
            leaf[path[-1]] = arr
            return float(next_token_loss(to_snp(p), jnp.asarray(TOKENS)))
        fd = (moved(1e-6) - moved(-1e-6)) / 2e-6
        leaf = g
        for k in path:
            leaf = leaf[k]
        np.testing.assert_allclose(np.asarray(leaf)[idx], fd, rtol=1e-5, atol=1e-8)
    assert_trees_close(jit(grad(next_token_loss))(to_snp(params), jnp.asarray(TOKENS)), g)


def test_transformer_batch_by_vmap(x64):
    params = init_model(RNG, n_layers=1)
    batch = RNG.integers(0, V, size=(3, T + 1))
    check_vmap(next_token_loss, (params, batch), in_axes=(None, 0))
    # the batch mean's gradient is the mean of per-sequence gradients
    per = vmap(grad(next_token_loss), in_axes=(None, 0))(to_snp(params), jnp.asarray(batch))
    mean_grad = grad(lambda p: jnp.mean(vmap(next_token_loss, in_axes=(None, 0))(
        p, jnp.asarray(batch))))(to_snp(params))
    assert_trees_close(secant.tree_util.tree_map(lambda v: jnp.mean(v, axis=0), per), mean_grad)


@functools.partial(jit, static_argnames=("n_heads", "causal"))
def jitted_attention_loss(p, x, n_heads=2, causal=True):
    return jnp.sum(multi_head_attention(p, x, causal=causal, n_heads=n_heads) ** 2)


def test_partial_jit_static_argnames(x64):
    p = {k: RNG.normal(size=(D, D)) / np.sqrt(D) for k in ("wq", "wk", "wv", "wo")}
    x = RNG.normal(size=(T, D))
    for n_heads in (1, 2, 4):
        for causal in (True, False):
            want = np.sum(np_attention(p, x, causal, n_heads) ** 2)
            np.testing.assert_allclose(jitted_attention_loss(*to_snp((p, x)), n_heads=n_heads,
                                                             causal=causal), want, rtol=1e-10)
    g = grad(jitted_attention_loss)(*to_snp((p, x)), n_heads=4, causal=False)
    fd = fd_grad(lambda p: jitted_attention_loss(p, to_snp(x), n_heads=4, causal=False),
                 (to_snp(p),))
    assert_trees_close(g, fd, rtol=1e-5, atol=1e-7)


# --- custom_jvp / custom_vjp activations inside the model ------------------------------------
@custom_jvp
def safe_softplus(x):
    return jnp.logaddexp(x, 0.0)


@safe_softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return safe_softplus(x), nn.sigmoid(x) * t


@custom_vjp
def clip_gradient(x, lo, hi):
    return x


def _clip_fwd(x, lo, hi):
    return x, (lo, hi)


def _clip_bwd(res, g):
    lo, hi = res
    return jnp.clip(g, lo, hi), None, None


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def custom_mlp(p, x):
    h = safe_softplus(x @ p["w1"])
    h = clip_gradient(h, -0.05, 0.05)
    return jnp.sum(jnp.tanh(h @ p["w2"]))


def test_custom_rules_inside_a_model(x64):
    p = {"w1": RNG.normal(size=(3, 4)), "w2": RNG.normal(size=(4, 2))}
    x = RNG.normal(size=(5, 3))
    # the gradient in w2 does not pass the clip: it matches finite differences
    g = grad(custom_mlp)(to_snp(p), to_snp(x))
    fd = fd_grad(lambda w2: custom_mlp({"w1": to_snp(p["w1"]), "w2": w2}, to_snp(x)),
                 (to_snp(p["w2"]),))
    np.testing.assert_allclose(g["w2"], fd, rtol=1e-6)
    # the gradient in w1 passes the clipped cotangent: compare with it written out
    h = np.logaddexp(x @ p["w1"], 0.0)
    gh = np.clip((1 - np.tanh(h @ p["w2"]) ** 2) @ p["w2"].T, -0.05, 0.05)
    want_w1 = x.T @ (gh / (1 + np.exp(-(x @ p["w1"]))))
    np.testing.assert_allclose(g["w1"], want_w1, rtol=1e-10)
    assert_trees_close(jit(grad(custom_mlp))(to_snp(p), to_snp(x)), g)
    per = vmap(grad(custom_mlp), in_axes=(None, 0))(to_snp(p), to_snp(x[:, None, :]))
    for i in range(5):
        assert_trees_close({k: v[i] for k, v in per.items()},
                           grad(custom_mlp)(to_snp(p), to_snp(x[i:i + 1])))
    # forward mode through the custom_jvp rule; through custom_vjp it is refused, as in JAX
    soft = lambda w1: jnp.sum(jnp.tanh(safe_softplus(to_snp(x) @ w1) @ to_snp(p["w2"])))
    _, tan = jvp(soft, (to_snp(p["w1"]),), (jnp.ones((3, 4)),))
    np.testing.assert_allclose(tan, fd_jvp(soft, (to_snp(p["w1"]),), (np.ones((3, 4)),)),
                               rtol=1e-6)
    with pytest.raises(TypeError, match="custom_vjp"):
        jvp(lambda w1: custom_mlp({"w1": w1, "w2": to_snp(p["w2"])}, to_snp(x)),
            (to_snp(p["w1"]),), (jnp.ones((3, 4)),))


def test_hessian_vector_product_of_attention(x64):
    p = {k: RNG.normal(size=(D, D)) / np.sqrt(D) for k in ("wq", "wk", "wv", "wo")}
    x = RNG.normal(size=(T, D))
    loss = lambda x: jnp.sum(jnp.tanh(multi_head_attention(to_snp(p), x)))
    v = RNG.normal(size=(T, D))
    _, hvp = jvp(grad(loss), (to_snp(x),), (to_snp(v),))
    np.testing.assert_allclose(hvp, fd_jvp(grad(loss), (to_snp(x),), (v,)), rtol=1e-5,
                               atol=1e-7)

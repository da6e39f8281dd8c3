"""Issue 15, code written by others (eighth round): reinforcement learning and attention models as
their authors write them with JAX. Discounted returns and GAE as lax.scan(..., reverse=True) with
done masks, REINFORCE with returns under stop_gradient, PPO's clipped surrogate with a clipped
value loss and an entropy bonus through value_and_grad(has_aux=True), TD(lambda) eligibility
traces, SAC's temperature loss; rotary position embeddings (the relative-position property),
greedy decoding with a KV cache carried through lax.scan and written by dynamic_update_slice
(equal to full causal attention), RMSNorm with a SwiGLU MLP, grouped-query attention by
jnp.repeat of the key/value heads, a top-1 mixture of experts with a load-balancing loss, a
relative-position bias table read with integer distances, and causal linear attention by cumsum
against its quadratic form. Checked against float64 finite differences, NumPy loops, closed
forms, a Python loop for vmap and eager for jit."""
import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import grad, jit, lax, vmap

from others15_check import check_grad, check_vmap, to_snp

RNG = np.random.default_rng(88)


# --- discounted returns and GAE by reversed scans -----------------------------------------------
def discounted_returns(rewards, dones, gamma=0.99):
    def step(next_return, inputs):
        r, d = inputs
        ret = r + gamma * next_return * (1.0 - d)
        return ret, ret
    _, returns = lax.scan(step, 0.0, (rewards, dones), reverse=True)
    return returns


def gae(rewards, values, dones, last_value, gamma=0.99, lam=0.95):
    next_values = jnp.append(values[1:], last_value)
    deltas = rewards + gamma * next_values * (1.0 - dones) - values

    def step(adv, inputs):
        delta, d = inputs
        adv = delta + gamma * lam * (1.0 - d) * adv
        return adv, adv
    _, advantages = lax.scan(step, 0.0, (deltas, dones), reverse=True)
    return advantages, advantages + values


def np_gae(r, v, d, last, gamma=0.99, lam=0.95):
    adv, out = 0.0, np.zeros_like(r)
    nxt = np.append(v[1:], last)
    for t in reversed(range(len(r))):
        delta = r[t] + gamma * nxt[t] * (1 - d[t]) - v[t]
        adv = delta + gamma * lam * (1 - d[t]) * adv
        out[t] = adv
    return out


DONES = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0])


def test_returns_and_gae_by_reverse_scan(x64):
    r, v = RNG.normal(size=8), RNG.normal(size=8)
    want = np.zeros(8)
    acc = 0.0
    for t in reversed(range(8)):
        acc = r[t] + 0.99 * acc * (1 - DONES[t])
        want[t] = acc
    np.testing.assert_allclose(discounted_returns(jnp.asarray(r), jnp.asarray(DONES)), want, rtol=1e-12)
    adv, targets = gae(jnp.asarray(r), jnp.asarray(v), jnp.asarray(DONES), 0.3)
    np.testing.assert_allclose(adv, np_gae(r, v, DONES, 0.3), rtol=1e-12)
    np.testing.assert_allclose(jit(gae)(jnp.asarray(r), jnp.asarray(v), jnp.asarray(DONES), 0.3)[0],
                               adv, rtol=1e-12)
    # the advantage is linear in the rewards: d sum(adv) / d r_t = sum of (gamma lam)^k until done
    g = check_grad(lambda r: jnp.sum(gae(r, jnp.asarray(v), jnp.asarray(DONES), 0.3)[0]), r)
    assert abs(g[-1] - 1.0) < 1e-12 and abs(g[2] - (1 + 0.99 * 0.95 * (1 + 0.99 * 0.95))) < 1e-12
    check_grad(lambda v: jnp.sum(gae(jnp.asarray(r), v, jnp.asarray(DONES), 0.3)[0] ** 2), v)
    # a batch of environments
    check_vmap(lambda r, v: gae(r, v, jnp.asarray(DONES), 0.3), (RNG.normal(size=(3, 8)), RNG.normal(size=(3, 8))))


# --- REINFORCE and PPO ---------------------------------------------------------------------------
def policy_logits(params, obs):
    w1, b1, w2 = params
    return jnp.tanh(obs @ w1 + b1) @ w2


def reinforce_loss(params, obs, actions, rewards, dones):
    returns = lax.stop_gradient(discounted_returns(rewards, dones))
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    logp = jax.nn.log_softmax(policy_logits(params, obs))
    chosen = jnp.take_along_axis(logp, actions[:, None], axis=1)[:, 0]
    return -jnp.mean(chosen * returns)


def ppo_loss(params, value_w, batch, clip=0.2, vf_coef=0.5, ent_coef=0.01):
    obs, actions, old_logp, advantages, returns, old_values = batch
    logp_all = jax.nn.log_softmax(policy_logits(params, obs))
    logp = logp_all[jnp.arange(actions.shape[0]), actions]
    ratio = jnp.exp(logp - old_logp)
    adv = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    surrogate = jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip, 1 + clip) * adv)
    values = obs @ value_w
    v_clipped = old_values + jnp.clip(values - old_values, -clip, clip)
    v_loss = 0.5 * jnp.mean(jnp.maximum((values - returns) ** 2, (v_clipped - returns) ** 2))
    entropy = -jnp.mean(jnp.sum(jnp.exp(logp_all) * logp_all, axis=-1))
    loss = -jnp.mean(surrogate) + vf_coef * v_loss - ent_coef * entropy
    return loss, {"clip_frac": jnp.mean(jnp.abs(ratio - 1) > clip), "entropy": entropy}


POLICY = (RNG.normal(size=(3, 5)) * 0.5, RNG.normal(size=5) * 0.1, RNG.normal(size=(5, 2)) * 0.5)


def test_reinforce_with_stop_gradient_returns(x64):
    obs, actions = RNG.normal(size=(8, 3)), RNG.integers(0, 2, size=8)
    rewards = RNG.normal(size=8)
    g = check_grad(lambda p: reinforce_loss(p, jnp.asarray(obs), actions, jnp.asarray(rewards),
                                            jnp.asarray(DONES)), POLICY)
    # the rewards reach the loss only as weights: their gradient is zero
    g_r = grad(reinforce_loss, argnums=3)(to_snp(POLICY), jnp.asarray(obs), actions,
                                          jnp.asarray(rewards), jnp.asarray(DONES))
    np.testing.assert_allclose(g_r, 0.0)
    assert len(g) == 3
    check_vmap(lambda o: reinforce_loss(to_snp(POLICY), o, actions, jnp.asarray(rewards), jnp.asarray(DONES)),
               (RNG.normal(size=(2, 8, 3)),))


def test_ppo_clipped_loss_with_aux(x64):
    n = 8
    obs, actions = RNG.normal(size=(n, 3)), RNG.integers(0, 2, size=n)
    old_logp = np.log(RNG.uniform(0.3, 0.7, size=n))
    adv, returns, old_values = RNG.normal(size=n), RNG.normal(size=n), RNG.normal(size=n)
    batch = (jnp.asarray(obs), actions, jnp.asarray(old_logp), jnp.asarray(adv), jnp.asarray(returns),
             jnp.asarray(old_values))
    value_w = RNG.normal(size=3)
    (loss, aux), grads = jax.value_and_grad(ppo_loss, argnums=(0, 1), has_aux=True)(
        to_snp(POLICY), jnp.asarray(value_w), batch)
    # NumPy written out
    h = np.tanh(obs @ POLICY[0] + POLICY[1]) @ POLICY[2]
    logp_all = h - np.log(np.exp(h).sum(1, keepdims=True))
    ratio = np.exp(logp_all[np.arange(n), actions] - old_logp)
    a = (adv - adv.mean()) / (adv.std() + 1e-8)
    values = obs @ value_w
    vc = old_values + np.clip(values - old_values, -0.2, 0.2)
    ent = -np.mean(np.sum(np.exp(logp_all) * logp_all, -1))
    want = (-np.mean(np.minimum(ratio * a, np.clip(ratio, 0.8, 1.2) * a))
            + 0.25 * np.mean(np.maximum((values - returns) ** 2, (vc - returns) ** 2)) - 0.01 * ent)
    np.testing.assert_allclose(loss, want, rtol=1e-12)
    np.testing.assert_allclose(aux["clip_frac"], np.mean(np.abs(ratio - 1) > 0.2))
    np.testing.assert_allclose(aux["entropy"], ent, rtol=1e-12)
    check_grad(lambda p: ppo_loss(p, jnp.asarray(value_w), batch)[0], POLICY)
    check_grad(lambda w: ppo_loss(to_snp(POLICY), w, batch)[0], value_w)
    (jl, jaux), jg = jit(jax.value_and_grad(ppo_loss, argnums=(0, 1), has_aux=True))(
        to_snp(POLICY), jnp.asarray(value_w), batch)
    np.testing.assert_allclose(jl, loss, rtol=1e-12)
    np.testing.assert_allclose(jg[1], grads[1], rtol=1e-12)


# --- TD(lambda) with eligibility traces ------------------------------------------------------------
def td_lambda(w, features, rewards, alpha=0.1, gamma=0.9, lam=0.8):
    def step(carry, inputs):
        w, trace = carry
        x, x_next, r = inputs
        delta = r + gamma * jnp.dot(w, x_next) - jnp.dot(w, x)
        trace = gamma * lam * trace + x
        w = w + alpha * delta * trace
        return (w, trace), delta
    (w, _), deltas = lax.scan(step, (w, jnp.zeros_like(w)), (features[:-1], features[1:], rewards))
    return w, deltas


def test_td_lambda_eligibility_traces(x64):
    feats, rewards, w0 = RNG.normal(size=(7, 3)), RNG.normal(size=6), RNG.normal(size=3)
    w, trace = w0.copy(), np.zeros(3)
    for t in range(6):
        delta = rewards[t] + 0.9 * w @ feats[t + 1] - w @ feats[t]
        trace = 0.72 * trace + feats[t]
        w = w + 0.1 * delta * trace
    got = td_lambda(jnp.asarray(w0), jnp.asarray(feats), jnp.asarray(rewards))[0]
    np.testing.assert_allclose(got, w, rtol=1e-12)
    # a meta-gradient: the final weights' loss differentiated in the step size
    meta = lambda alpha: jnp.sum(td_lambda(jnp.asarray(w0), jnp.asarray(feats), jnp.asarray(rewards),
                                           alpha)[1] ** 2)
    check_grad(meta, 0.1)
    check_grad(lambda w0: jnp.sum(td_lambda(w0, jnp.asarray(feats), jnp.asarray(rewards))[0] ** 2), w0)
    check_vmap(lambda r: td_lambda(jnp.asarray(w0), jnp.asarray(feats), r)[0], (RNG.normal(size=(3, 6)),))


# --- SAC's temperature and soft value --------------------------------------------------------------
def sac_losses(log_alpha, q_values, logits, target_entropy):
    alpha = jnp.exp(log_alpha)
    probs = jax.nn.softmax(logits)
    logp = jax.nn.log_softmax(logits)
    entropy = -jnp.sum(probs * logp, -1)
    alpha_loss = jnp.mean(log_alpha * lax.stop_gradient(entropy - target_entropy))
    soft_v = jnp.sum(probs * (q_values - lax.stop_gradient(alpha) * logp), -1)
    return alpha_loss, jnp.mean(soft_v)


def test_sac_temperature_loss(x64):
    q, logits = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 3))
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    ent = -(p * np.log(p)).sum(1)
    g = grad(lambda la: sac_losses(la, jnp.asarray(q), jnp.asarray(logits), 0.5)[0])(0.2)
    np.testing.assert_allclose(g, np.mean(ent - 0.5), rtol=1e-12)
    # the soft value: its gradient in the logits, alpha held fixed
    check_grad(lambda l: sac_losses(0.2, jnp.asarray(q), l, 0.5)[1], logits)
    np.testing.assert_allclose(grad(lambda la: sac_losses(la, jnp.asarray(q), jnp.asarray(logits), 0.5)[1])(0.2), 0.0)
    check_vmap(lambda l: sac_losses(0.2, jnp.asarray(q), l, 0.5)[1], (RNG.normal(size=(2, 5, 3)),))


# --- rotary position embeddings ----------------------------------------------------------------------
def rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / base ** (jnp.arange(0, d, 2) / d)
    angles = positions[:, None] * inv_freq[None, :]
    sin, cos = jnp.sin(angles), jnp.cos(angles)
    x1, x2 = x[..., ::2], x[..., 1::2]
    rotated = jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    return rotated.reshape(x.shape)


def rope_attention(params, x):
    wq, wk, wv = params
    t = x.shape[0]
    pos = jnp.arange(t, dtype=x.dtype)
    q, k, v = rope(x @ wq, pos), rope(x @ wk, pos), x @ wv
    scores = q @ k.T / jnp.sqrt(q.shape[-1])
    mask = jnp.tril(jnp.ones((t, t), dtype=bool))
    scores = jnp.where(mask, scores, -1e9)
    return jax.nn.softmax(scores, axis=-1) @ v


def test_rotary_embeddings_relative_positions(x64):
    q, k = RNG.normal(size=4), RNG.normal(size=4)
    dots = [float(jnp.dot(rope(jnp.asarray(q)[None], jnp.asarray([m + 0.0]))[0],
                          rope(jnp.asarray(k)[None], jnp.asarray([m - 2.0]))[0])) for m in range(2, 6)]
    np.testing.assert_allclose(dots, dots[0], rtol=1e-12)      # only m - n matters
    np.testing.assert_allclose(jnp.linalg.norm(rope(jnp.asarray(q)[None], jnp.asarray([3.0]))), np.linalg.norm(q),
                               rtol=1e-12)                   # a rotation
    params = tuple(RNG.normal(size=(4, 4)) * 0.5 for _ in range(3))
    x = RNG.normal(size=(5, 4))
    check_grad(lambda p: jnp.sum(rope_attention(p, jnp.asarray(x)) ** 2), params)
    check_grad(lambda x: jnp.sum(jnp.sin(rope_attention(to_snp(params), x))), x)
    check_vmap(lambda x: rope_attention(to_snp(params), x), (RNG.normal(size=(2, 5, 4)),))


# --- greedy decoding with a KV cache in a scan -----------------------------------------------------
D_MODEL, VOCAB, STEPS = 4, 6, 5


def decoder_init():
    return {"embed": RNG.normal(size=(VOCAB, D_MODEL)) * 0.5,
            "wq": RNG.normal(size=(D_MODEL, D_MODEL)) * 0.5,
            "wk": RNG.normal(size=(D_MODEL, D_MODEL)) * 0.5,
            "wv": RNG.normal(size=(D_MODEL, D_MODEL)) * 0.5,
            "out": RNG.normal(size=(D_MODEL, VOCAB)) * 0.5}


def full_causal_logits(params, tokens):
    x = params["embed"][tokens] + 0.1 * jnp.arange(tokens.shape[0])[:, None]
    q, k, v = x @ params["wq"], x @ params["wk"], x @ params["wv"]
    scores = q @ k.T / jnp.sqrt(D_MODEL)
    t = tokens.shape[0]
    scores = jnp.where(jnp.tril(jnp.ones((t, t))) > 0, scores, -jnp.inf)
    return (jax.nn.softmax(scores, -1) @ v + x) @ params["out"]


def decode_step(params, cache, token, t):
    k_cache, v_cache = cache
    x = params["embed"][token] + 0.1 * t
    q = x @ params["wq"]
    k_cache = lax.dynamic_update_slice(k_cache, (x @ params["wk"])[None], (t, 0))
    v_cache = lax.dynamic_update_slice(v_cache, (x @ params["wv"])[None], (t, 0))
    scores = k_cache @ q / jnp.sqrt(D_MODEL)
    scores = jnp.where(jnp.arange(STEPS) <= t, scores, -jnp.inf)
    logits = (jax.nn.softmax(scores) @ v_cache + x) @ params["out"]
    return (k_cache, v_cache), logits


def teacher_forced_logits(params, tokens):
    cache = (jnp.zeros((STEPS, D_MODEL)), jnp.zeros((STEPS, D_MODEL)))

    def step(cache, inputs):
        token, t = inputs
        return decode_step(params, cache, token, t)
    _, logits = lax.scan(step, cache, (tokens, jnp.arange(STEPS)))
    return logits


def greedy_decode(params, first_token):
    cache = (jnp.zeros((STEPS, D_MODEL)), jnp.zeros((STEPS, D_MODEL)))

    def step(carry, t):
        cache, token = carry
        cache, logits = decode_step(params, cache, token, t)
        nxt = jnp.argmax(logits)
        return (cache, nxt), nxt
    _, tokens = lax.scan(step, (cache, first_token), jnp.arange(STEPS))
    return tokens


def test_kv_cache_decoding_equals_full_attention(x64):
    params_np = decoder_init()
    params = to_snp(params_np)
    tokens = jnp.asarray(RNG.integers(0, VOCAB, size=STEPS))
    full = full_causal_logits(params, tokens)
    np.testing.assert_allclose(teacher_forced_logits(params, tokens), full, rtol=1e-10)
    np.testing.assert_allclose(jit(teacher_forced_logits)(params, tokens), full, rtol=1e-10)
    targets = np.roll(np.asarray(tokens), -1)

    def nll(params, f):
        logp = jax.nn.log_softmax(f(params, tokens))
        return -jnp.mean(logp[jnp.arange(STEPS), targets])
    g_cache = check_grad(lambda p: nll(p, teacher_forced_logits), params_np)
    g_full = grad(lambda p: nll(p, full_causal_logits))(params)
    for key in g_full:
        np.testing.assert_allclose(g_cache[key], g_full[key], rtol=1e-8, atol=1e-12)
    out = greedy_decode(params, jnp.asarray(2))
    np.testing.assert_array_equal(jit(greedy_decode)(params, jnp.asarray(2)), out)
    # greedy decoding again, by the full model one token at a time
    seq = [2]
    for _ in range(STEPS):
        seq.append(int(jnp.argmax(full_causal_logits(params, jnp.asarray(seq + [0] * (STEPS - len(seq))))[len(seq) - 1])))
    np.testing.assert_array_equal(out, seq[1:])
    starts = jnp.asarray([0, 3, 5])
    np.testing.assert_array_equal(vmap(greedy_decode, (None, 0))(params, starts),
                                  [greedy_decode(params, s) for s in starts])


# --- RMSNorm and a SwiGLU MLP -----------------------------------------------------------------------
def rms_norm(x, scale, eps=1e-6):
    return x * lax.rsqrt(jnp.mean(x ** 2, axis=-1, keepdims=True) + eps) * scale


def swiglu_block(params, x):
    h = rms_norm(x, params["scale"])
    gate = jax.nn.silu(h @ params["w_gate"])
    return x + (gate * (h @ params["w_up"])) @ params["w_down"]


def test_rmsnorm_swiglu_block(x64):
    params = {"scale": 1 + 0.1 * RNG.normal(size=4), "w_gate": RNG.normal(size=(4, 6)) * 0.4,
              "w_up": RNG.normal(size=(4, 6)) * 0.4, "w_down": RNG.normal(size=(6, 4)) * 0.4}
    x = RNG.normal(size=(3, 4))
    h = x / np.sqrt(np.mean(x ** 2, -1, keepdims=True) + 1e-6) * params["scale"]
    g = h @ params["w_gate"]
    want = x + (g / (1 + np.exp(-g)) * (h @ params["w_up"])) @ params["w_down"]
    np.testing.assert_allclose(swiglu_block(to_snp(params), jnp.asarray(x)), want, rtol=1e-12)
    check_grad(lambda p: jnp.sum(swiglu_block(p, jnp.asarray(x)) ** 2), params)
    check_grad(lambda x: jnp.sum(jnp.tanh(swiglu_block(to_snp(params), x))), x)
    check_vmap(lambda x: swiglu_block(to_snp(params), x), (RNG.normal(size=(2, 3, 4)),))
    # RMSNorm is invariant to scaling its input: its gradient is orthogonal to x
    gx = grad(lambda x: jnp.sum(rms_norm(x, jnp.ones(4)) * jnp.arange(4.0)))(jnp.asarray(x[0]))
    np.testing.assert_allclose(jnp.dot(gx, x[0]), 0.0, atol=1e-5)     # (up to eps)


# --- grouped-query attention ----------------------------------------------------------------------
def gqa(x, wq, wk, wv, n_heads=4, n_kv=2):
    t, d = x.shape
    hd = d // n_heads
    q = (x @ wq).reshape(t, n_heads, hd).transpose(1, 0, 2)
    k = (x @ wk).reshape(t, n_kv, hd).transpose(1, 0, 2)
    v = (x @ wv).reshape(t, n_kv, hd).transpose(1, 0, 2)
    k = jnp.repeat(k, n_heads // n_kv, axis=0)
    v = jnp.repeat(v, n_heads // n_kv, axis=0)
    att = jax.nn.softmax(jnp.einsum("hqd,hkd->hqk", q, k) / jnp.sqrt(hd), axis=-1)
    return jnp.einsum("hqk,hkd->hqd", att, v).transpose(1, 0, 2).reshape(t, d)


def mha(x, wq, wk, wv, n_heads=4):
    t, d = x.shape
    hd = d // n_heads
    split = lambda y: y.reshape(t, n_heads, hd).transpose(1, 0, 2)
    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    att = jax.nn.softmax(q @ k.transpose(0, 2, 1) / jnp.sqrt(hd), axis=-1)
    return (att @ v).transpose(1, 0, 2).reshape(t, d)


def test_grouped_query_attention_is_mha_with_shared_heads(x64):
    x = RNG.normal(size=(3, 8))
    wq, wk, wv = RNG.normal(size=(8, 8)), RNG.normal(size=(8, 4)), RNG.normal(size=(8, 4))
    # the same as multi-head attention whose k/v projections repeat each kv head's columns
    expand = lambda w: np.concatenate([w[:, 0:2], w[:, 0:2], w[:, 2:4], w[:, 2:4]], axis=1)
    np.testing.assert_allclose(gqa(*map(jnp.asarray, (x, wq, wk, wv))),
                               mha(*map(jnp.asarray, (x, wq, expand(wk), expand(wv)))), rtol=1e-12)
    check_grad(lambda wk: jnp.sum(gqa(jnp.asarray(x), jnp.asarray(wq), wk, jnp.asarray(wv)) ** 2), wk)
    g_wv = grad(lambda wv: jnp.sum(gqa(jnp.asarray(x), jnp.asarray(wq), jnp.asarray(wk), wv)))(jnp.asarray(wv))
    g_exp = grad(lambda we: jnp.sum(mha(jnp.asarray(x), jnp.asarray(wq), jnp.asarray(expand(wk)), we)))(
        jnp.asarray(expand(wv)))
    g_exp = np.asarray(g_exp)
    np.testing.assert_allclose(g_wv, np.concatenate([g_exp[:, 0:2] + g_exp[:, 2:4], g_exp[:, 4:6] + g_exp[:, 6:8]], 1),
                               rtol=1e-10)
    check_vmap(lambda x: gqa(x, jnp.asarray(wq), jnp.asarray(wk), jnp.asarray(wv)), (RNG.normal(size=(2, 3, 8)),))


# --- a top-1 mixture of experts -----------------------------------------------------------------------
def moe(params, x, n_experts=3):
    router_logits = x @ params["router"]
    probs = jax.nn.softmax(router_logits, axis=-1)
    expert = jnp.argmax(probs, axis=-1)
    dispatch = jax.nn.one_hot(expert, n_experts)
    gate = jnp.sum(probs * dispatch, axis=-1)
    outs = jnp.einsum("td,edh->teh", x, params["experts"])
    y = jnp.einsum("te,teh->th", dispatch, outs) * gate[:, None]
    frac_tokens = jnp.mean(dispatch, axis=0)
    frac_probs = jnp.mean(probs, axis=0)
    aux = n_experts * jnp.sum(frac_tokens * frac_probs)
    return y, aux


def test_top1_mixture_of_experts(x64):
    params = {"router": RNG.normal(size=(4, 3)), "experts": RNG.normal(size=(3, 4, 2)) * 0.5}
    x = RNG.normal(size=(6, 4))
    y, aux = moe(to_snp(params), jnp.asarray(x))
    for t in range(6):
        logits = x[t] @ params["router"]
        p = np.exp(logits) / np.exp(logits).sum()
        e = int(np.argmax(p))
        np.testing.assert_allclose(y[t], p[e] * (x[t] @ params["experts"][e]), rtol=1e-12)

    def loss(params, x):
        y, aux = moe(params, x)
        return jnp.sum(y ** 2) + 0.01 * aux, aux
    (l, a), g = jax.value_and_grad(loss, has_aux=True)(to_snp(params), jnp.asarray(x))
    np.testing.assert_allclose(a, aux, rtol=1e-12)
    check_grad(lambda p: loss(p, jnp.asarray(x))[0], params)
    check_vmap(lambda x: moe(to_snp(params), x)[0], (RNG.normal(size=(2, 6, 4)),))


# --- a relative-position bias table ---------------------------------------------------------------
def relative_bias_attention(table, q, k, max_distance=3):
    t = q.shape[0]
    rel = jnp.arange(t)[None, :] - jnp.arange(t)[:, None]
    idx = jnp.clip(rel, -max_distance, max_distance) + max_distance
    scores = q @ k.T + table[idx]
    return jax.nn.softmax(scores, axis=-1)


def test_relative_position_bias_table(x64):
    table, q, k = RNG.normal(size=7), RNG.normal(size=(5, 2)), RNG.normal(size=(5, 2))
    att = relative_bias_attention(jnp.asarray(table), jnp.asarray(q), jnp.asarray(k))
    idx = np.clip(np.arange(5)[None] - np.arange(5)[:, None], -3, 3) + 3
    s = q @ k.T + table[idx]
    np.testing.assert_allclose(att, np.exp(s) / np.exp(s).sum(1, keepdims=True), rtol=1e-12)
    c = RNG.normal(size=(5, 5))
    g = check_grad(lambda tb: jnp.sum(c * relative_bias_attention(tb, jnp.asarray(q), jnp.asarray(k))), table)
    # the gradient of each table entry collects the score gradients of its distance (scatter-add)
    s_bar = att * (c - np.sum(c * np.asarray(att), 1, keepdims=True))
    np.testing.assert_allclose(g, np.bincount(idx.ravel(), weights=np.asarray(s_bar).ravel(), minlength=7),
                               rtol=1e-10, atol=1e-13)
    check_vmap(lambda q: relative_bias_attention(jnp.asarray(table), q, jnp.asarray(k)), (RNG.normal(size=(2, 5, 2)),))


# --- causal linear attention: a cumsum against the quadratic form -------------------------------------
def feature_map(x):
    return jax.nn.elu(x) + 1.0


def linear_attention_cumsum(q, k, v):
    q, k = feature_map(q), feature_map(k)
    kv = jnp.cumsum(k[:, :, None] * v[:, None, :], axis=0)       # prefix sums of k^T v
    z = jnp.cumsum(k, axis=0)
    return jnp.einsum("td,tde->te", q, kv) / jnp.sum(q * z, -1, keepdims=True)


def linear_attention_quadratic(q, k, v):
    q, k = feature_map(q), feature_map(k)
    a = jnp.tril(q @ k.T)
    return (a @ v) / jnp.sum(a, -1, keepdims=True)


def test_causal_linear_attention_two_ways(x64):
    q, k, v = (RNG.normal(size=(6, 3)) for _ in range(3))
    args = tuple(map(jnp.asarray, (q, k, v)))
    np.testing.assert_allclose(linear_attention_cumsum(*args), linear_attention_quadratic(*args), rtol=1e-11)
    c = RNG.normal(size=(6, 3))
    for argnum, val in enumerate((q, k, v)):
        g1 = check_grad(lambda *a: jnp.sum(c * linear_attention_cumsum(*a)), q, k, v, argnum=argnum)
        g2 = grad(lambda *a: jnp.sum(c * linear_attention_quadratic(*a)), argnums=argnum)(*args)
        np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-12)
    check_vmap(linear_attention_cumsum, tuple(RNG.normal(size=(2, 6, 3)) for _ in range(3)))

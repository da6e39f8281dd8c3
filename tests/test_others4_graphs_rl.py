"""Issue 15, code written by others (fourth round): graph neural networks and reinforcement
learning as users write them with JAX: a GCN with a hand-written segment_sum and symmetric
degree normalisation, graph attention with a segment softmax, batched-graph readout by segment
means, REINFORCE with log-softmax and a baseline, Q-learning and double-DQN targets under
stop_gradient, generalised advantage estimation by a reverse Python loop, and PPO's clipped
objective; each under the transforms its author would use, checked against float64 finite
differences, closed forms, a Python loop and eager."""
import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, lax, nn, value_and_grad, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(4242)


# --- graph neural networks --------------------------------------------------------------------
def segment_sum(data, segment_ids, num_segments):
    return jnp.zeros((num_segments,) + data.shape[1:], data.dtype).at[segment_ids].add(data)


def segment_max(data, segment_ids, num_segments):
    return jnp.full((num_segments,) + data.shape[1:], -jnp.inf).at[segment_ids].max(data)


SENDERS = np.array([0, 1, 1, 2, 3, 3, 4, 5, 0, 2])
RECEIVERS = np.array([1, 0, 2, 1, 4, 5, 3, 3, 2, 0])
N_NODES = 6


def gcn_layer(params, h, senders=SENDERS, receivers=RECEIVERS, n=N_NODES):
    # add self loops, then D^-1/2 A D^-1/2 message passing
    s = jnp.concatenate([jnp.asarray(senders), jnp.arange(n)])
    r = jnp.concatenate([jnp.asarray(receivers), jnp.arange(n)])
    deg = segment_sum(jnp.ones(s.shape[0]), r, n)
    norm = jax_rsqrt(deg[s]) * jax_rsqrt(deg[r])
    messages = (h @ params["w"])[s] * norm[:, None]
    return nn.relu(segment_sum(messages, r, n) + params["b"])


def jax_rsqrt(x):
    return lax.rsqrt(x)


def gcn(params, h):
    for layer in params:
        h = gcn_layer(layer, h)
    return jnp.mean(h, axis=0)


def np_gcn(params, h):
    s = np.concatenate([SENDERS, np.arange(N_NODES)])
    r = np.concatenate([RECEIVERS, np.arange(N_NODES)])
    deg = np.bincount(r, minlength=N_NODES).astype(float)
    for layer in params:
        hw = h @ layer["w"]
        out = np.zeros((N_NODES, hw.shape[1]))
        for si, ri in zip(s, r):
            out[ri] += hw[si] / np.sqrt(deg[si] * deg[ri])
        h = np.maximum(out + layer["b"], 0.0)
    return h.mean(axis=0)


def test_gcn_with_segment_sum(x64):
    params = [{"w": RNG.normal(size=(3, 4)), "b": RNG.normal(size=4) * 0.1 + 0.3},
              {"w": RNG.normal(size=(4, 2)), "b": RNG.normal(size=2) * 0.1 + 0.3}]
    h = RNG.normal(size=(N_NODES, 3))
    np.testing.assert_allclose(gcn(to_snp(params), to_snp(h)), np_gcn(params, h), rtol=1e-12)
    loss = lambda p, h: jnp.sum(gcn(p, h) ** 2)
    check_grad(loss, params, h)
    check_grad(loss, params, h, argnum=1)
    check_vmap(gcn, (params, RNG.normal(size=(3, N_NODES, 3))), in_axes=(None, 0))


def segment_softmax(logits, segment_ids, n):
    m = segment_max(logits, segment_ids, n)
    e = jnp.exp(logits - lax.stop_gradient(m)[segment_ids])
    return e / segment_sum(e, segment_ids, n)[segment_ids]


def gat_layer(params, h):
    z = h @ params["w"]
    scores = nn.leaky_relu(z[SENDERS] @ params["a_src"] + z[RECEIVERS] @ params["a_dst"], 0.2)
    alpha = segment_softmax(scores, RECEIVERS, N_NODES)
    return jnp.tanh(segment_sum(alpha[:, None] * z[SENDERS], RECEIVERS, N_NODES))


def np_gat_layer(params, h):
    z = h @ params["w"]
    scores = z[SENDERS] @ params["a_src"] + z[RECEIVERS] @ params["a_dst"]
    scores = np.where(scores > 0, scores, 0.2 * scores)
    out = np.zeros((N_NODES, z.shape[1]))
    for node in range(N_NODES):
        idx = np.nonzero(RECEIVERS == node)[0]
        if len(idx) == 0:
            continue
        w = np.exp(scores[idx] - scores[idx].max())
        w /= w.sum()
        out[node] = (w[:, None] * z[SENDERS[idx]]).sum(axis=0)
    return np.tanh(out)


def test_graph_attention_segment_softmax(x64):
    params = {"w": RNG.normal(size=(3, 4)), "a_src": RNG.normal(size=4),
              "a_dst": RNG.normal(size=4)}
    h = RNG.normal(size=(N_NODES, 3))
    np.testing.assert_allclose(gat_layer(to_snp(params), to_snp(h)), np_gat_layer(params, h),
                               rtol=1e-12)
    loss = lambda p, h: jnp.sum(gat_layer(p, h) ** 2)
    check_grad(loss, params, h)
    check_grad(loss, params, h, argnum=1)
    check_vmap(gat_layer, (params, RNG.normal(size=(3, N_NODES, 3))), in_axes=(None, 0))


GRAPH_OF_NODE = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])


def graph_readout(w, h, graph_ids=GRAPH_OF_NODE, n_graphs=3):
    counts = segment_sum(jnp.ones(h.shape[0]), graph_ids, n_graphs)
    pooled = segment_sum(jnp.tanh(h @ w), graph_ids, n_graphs) / counts[:, None]
    return pooled


def test_batched_graph_readout(x64):
    w, h = RNG.normal(size=(3, 2)), RNG.normal(size=(9, 3))
    want = np.stack([np.tanh(h @ w)[GRAPH_OF_NODE == g].mean(axis=0) for g in range(3)])
    np.testing.assert_allclose(graph_readout(to_snp(w), to_snp(h)), want, rtol=1e-12)
    labels = np.array([0.5, -0.2, 1.0])
    loss = lambda w, h: jnp.mean((graph_readout(w, h)[:, 0] - labels) ** 2)
    check_grad(loss, w, h)
    check_grad(loss, w, h, argnum=1)
    check_vmap(graph_readout, (RNG.normal(size=(4, 3, 2)), h), in_axes=(0, None))


# --- reinforcement learning -------------------------------------------------------------------
def policy_logits(theta, states):
    return jnp.tanh(states @ theta["w1"]) @ theta["w2"]


def reinforce_loss(theta, states, actions, returns):
    logp = nn.log_softmax(policy_logits(theta, states))
    chosen = jnp.take_along_axis(logp, actions[:, None], axis=1)[:, 0]
    advantages = returns - jnp.mean(returns)
    return -jnp.mean(chosen * advantages)


def test_reinforce_policy_gradient(x64):
    theta = {"w1": RNG.normal(size=(4, 5)) * 0.5, "w2": RNG.normal(size=(5, 3)) * 0.5}
    states = RNG.normal(size=(8, 4))
    actions = RNG.integers(0, 3, size=8)
    returns = RNG.normal(size=8)
    g = check_grad(reinforce_loss, theta, states, actions, returns)
    # closed form in the last layer: d/dw2 of -mean(adv * logp[a])
    h = np.tanh(states @ theta["w1"])
    logits = h @ theta["w2"]
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    adv = returns - returns.mean()
    onehot = np.eye(3)[actions]
    np.testing.assert_allclose(g["w2"], -h.T @ ((onehot - p) * adv[:, None]) / 8, rtol=1e-10)
    # per-trajectory gradients (as in a variance analysis) against a loop
    per = vmap(grad(reinforce_loss), in_axes=(None, 0, 0, 0))(
        to_snp(theta), to_snp(states.reshape(2, 4, 4)), to_snp(actions.reshape(2, 4)),
        to_snp(returns.reshape(2, 4)))
    for i in range(2):
        gi = grad(reinforce_loss)(to_snp(theta), to_snp(states[4 * i:4 * i + 4]),
                                  to_snp(actions[4 * i:4 * i + 4]),
                                  to_snp(returns[4 * i:4 * i + 4]))
        assert_trees_close({k: v[i] for k, v in per.items()}, gi)


def q_values(params, s):
    return jnp.tanh(s @ params["w1"] + params["b1"]) @ params["w2"]


def td_loss(params, target_params, s, a, r, s_next, done, gamma=0.99):
    q = jnp.take_along_axis(q_values(params, s), a[:, None], axis=1)[:, 0]
    next_q = jnp.max(q_values(target_params, s_next), axis=1)
    target = lax.stop_gradient(r + gamma * (1.0 - done) * next_q)
    return jnp.mean((q - target) ** 2)


def double_dqn_loss(params, target_params, s, a, r, s_next, done, gamma=0.99):
    q = jnp.take_along_axis(q_values(params, s), a[:, None], axis=1)[:, 0]
    best = jnp.argmax(q_values(params, s_next), axis=1)
    next_q = jnp.take_along_axis(q_values(target_params, s_next), best[:, None], axis=1)[:, 0]
    target = r + gamma * (1.0 - done) * next_q
    return jnp.mean((q - lax.stop_gradient(target)) ** 2)


def _dqn_batch(n=7):
    return (RNG.normal(size=(n, 3)), RNG.integers(0, 2, size=n), RNG.normal(size=n),
            RNG.normal(size=(n, 3)), (RNG.uniform(size=n) < 0.3).astype(np.float64))


def test_q_learning_targets_under_stop_gradient(x64):
    params = {"w1": RNG.normal(size=(3, 4)), "b1": RNG.normal(size=4) * 0.1,
              "w2": RNG.normal(size=(4, 2))}
    batch = _dqn_batch()
    s, a, r, s_next, done = to_snp(batch)
    for loss in (td_loss, double_dqn_loss):
        # the target is a constant: the gradient equals that of the loss with the target frozen
        frozen_target = lambda p, loss=loss: loss(p, to_snp(params), s, a, r, s_next, done)
        g = grad(frozen_target)(to_snp(params))
        fd = fd_grad(lambda p: _frozen(loss, p, params, batch), (to_snp(params),))
        assert_trees_close(g, fd, rtol=1e-5, atol=1e-7)
        assert_trees_close(jit(grad(frozen_target))(to_snp(params)), g)
    # online params also feed the target's argmax (double DQN), never its value
    g_same = grad(lambda p: double_dqn_loss(p, p, s, a, r, s_next, done))(to_snp(params))
    fd_same = fd_grad(lambda p: _frozen(double_dqn_loss, p, params, batch), (to_snp(params),))
    assert_trees_close(g_same, fd_same, rtol=1e-5, atol=1e-7)
    # the batch starred after the parameters (gamma left at its default)
    g_star = grad(lambda p: double_dqn_loss(p, p, *to_snp(batch)))(to_snp(params))
    assert_trees_close(g_star, g_same, rtol=1e-12, atol=1e-14)
    g_gamma = grad(lambda p: td_loss(p, to_snp(params), *to_snp(batch + (0.5,))))(
        to_snp(params))
    fd_gamma = fd_grad(lambda p: td_loss(p, to_snp(params), *to_snp(batch), gamma=0.5),
                       (to_snp(params),))
    assert_trees_close(g_gamma, fd_gamma, rtol=1e-5, atol=1e-7)


def _frozen(loss, p, target_params, batch):
    """The loss with the bootstrap target computed from fixed values (no derivative)."""
    s, a, r, s_next, done = batch
    q_next_target = np.asarray(q_values(to_snp(target_params), to_snp(s_next)))
    if loss is td_loss:
        next_q = q_next_target.max(axis=1)
    else:
        best = np.argmax(np.asarray(q_values(to_snp(target_params), to_snp(s_next))), axis=1)
        next_q = q_next_target[np.arange(len(best)), best]
    target = r + 0.99 * (1.0 - done) * next_q
    q = jnp.take_along_axis(q_values(p, to_snp(s)), to_snp(a)[:, None], axis=1)[:, 0]
    return jnp.mean((q - to_snp(target)) ** 2)


def gae(rewards, values, dones, gamma=0.99, lam=0.95):
    """Generalised advantage estimation, as written in many PPO scripts: a reverse loop."""
    advantages = []
    last = 0.0
    for t in reversed(range(len(rewards))):
        next_value = values[t + 1]
        delta = rewards[t] + gamma * next_value * (1 - dones[t]) - values[t]
        last = delta + gamma * lam * (1 - dones[t]) * last
        advantages.append(last)
    return jnp.stack(advantages[::-1])


def np_gae(rewards, values, dones, gamma=0.99, lam=0.95):
    adv = np.zeros(len(rewards))
    last = 0.0
    for t in reversed(range(len(rewards))):
        delta = rewards[t] + gamma * values[t + 1] * (1 - dones[t]) - values[t]
        last = delta + gamma * lam * (1 - dones[t]) * last
        adv[t] = last
    return adv


def test_generalised_advantage_estimation(x64):
    rewards, values = RNG.normal(size=6), RNG.normal(size=7)
    dones = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(gae(to_snp(rewards), to_snp(values), to_snp(dones)),
                               np_gae(rewards, values, dones), rtol=1e-12)
    # a critic's loss through the advantages (differentiated in the values)
    critic = lambda v, r: jnp.sum(gae(r, v, to_snp(dones)) ** 2)
    check_grad(critic, values, rewards)
    check_grad(critic, values, rewards, argnum=1)
    check_vmap(lambda r, v: gae(r, v, to_snp(dones)),
               (RNG.normal(size=(3, 6)), RNG.normal(size=(3, 7))))


def ppo_loss(theta, states, actions, old_logp, advantages, clip=0.2):
    logp = jnp.take_along_axis(nn.log_softmax(policy_logits(theta, states)), actions[:, None],
                               axis=1)[:, 0]
    ratio = jnp.exp(logp - old_logp)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1 - clip, 1 + clip) * advantages
    entropy = -jnp.sum(nn.softmax(policy_logits(theta, states)) *
                       nn.log_softmax(policy_logits(theta, states)), axis=1)
    return -jnp.mean(jnp.minimum(unclipped, clipped)) - 0.01 * jnp.mean(entropy)


def test_ppo_clipped_objective(x64):
    theta = {"w1": RNG.normal(size=(4, 5)) * 0.5, "w2": RNG.normal(size=(5, 3)) * 0.5}
    states = RNG.normal(size=(8, 4))
    actions = RNG.integers(0, 3, size=8)
    logits = np.tanh(states @ theta["w1"]) @ theta["w2"]
    logp_all = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    # old log-probabilities a little off, so that some ratios are clipped and some are not
    old_logp = logp_all[np.arange(8), actions] + RNG.normal(size=8) * 0.3
    advantages = RNG.normal(size=8)
    check_grad(ppo_loss, theta, states, actions, old_logp, advantages)
    loss, g = value_and_grad(ppo_loss)(*to_snp((theta, states, actions, old_logp, advantages)))
    jl, jg = jit(value_and_grad(ppo_loss))(*to_snp((theta, states, actions, old_logp,
                                                    advantages)))
    np.testing.assert_allclose(jl, loss, rtol=1e-12)
    assert_trees_close(jg, g)


def test_runtime_callee_with_starred_batch(x64):
    params = {"w1": RNG.normal(size=(3, 4)), "b1": RNG.normal(size=4) * 0.1,
              "w2": RNG.normal(size=(4, 2))}
    batch = _dqn_batch()
    for loss in (td_loss, double_dqn_loss):
        f = lambda p, loss=loss: loss(p, to_snp(params), *to_snp(batch))
        assert_trees_close(grad(f)(to_snp(params)),
                           fd_grad(lambda p: _frozen(loss, p, params, batch), (to_snp(params),)),
                           rtol=1e-5, atol=1e-7)


def _apply_loss(loss_fn, p, batch, **options):
    return loss_fn(p, *batch, **options)


def _pair_loss(p, x, y, scale=1.0):
    return scale * jnp.mean((jnp.tanh(x @ p["w"]) - y) ** 2)


def test_callee_passed_in_with_starred_batch_and_kwargs(x64):
    """The same kind, another shape: the loss function an argument of a helper that unpacks
    the batch and forwards **options (a callee and a call shape known only when it runs);
    grad, jit(grad) and jvp, against finite differences and eager."""
    p = {"w": RNG.normal(size=3)}
    batch = to_snp((RNG.normal(size=(5, 3)), RNG.normal(size=5)))
    for options in ({}, {"scale": 2.5}):
        f = lambda p, options=options: _apply_loss(_pair_loss, p, batch, **options)
        g = grad(f)(to_snp(p))
        assert_trees_close(g, fd_grad(f, (to_snp(p),)), rtol=1e-6, atol=1e-8)
        assert_trees_close(jit(grad(f))(to_snp(p)), g, rtol=1e-12)
        t = {"w": RNG.normal(size=3)}
        _, tan = jvp(f, (to_snp(p),), (to_snp(t),))
        np.testing.assert_allclose(tan, np.dot(g["w"], t["w"]), rtol=1e-8)
    with pytest.raises(TypeError, match="bias"):        # a keyword it does not take: Python's
        grad(lambda p: _apply_loss(_pair_loss, p, batch, bias=1.0))(to_snp(p))
    # second order (the dispatcher's own derivatives): against the Hessian of the call written
    # out, and vmap over directions against a loop
    w = to_snp(RNG.normal(size=3))
    f = lambda w: _apply_loss(_pair_loss, {"w": w}, batch, scale=2.0)
    h = hessian(lambda w: _pair_loss({"w": w}, *batch, scale=2.0))(w)
    for second in (hessian(f), jacfwd(grad(f)), jacrev(grad(f))):
        np.testing.assert_allclose(second(w), h, rtol=1e-10, atol=1e-12)
    ts = RNG.normal(size=(3, 3))
    np.testing.assert_allclose(vmap(lambda t: jvp(f, (w,), (t,))[1])(to_snp(ts)),
                               [jvp(f, (w,), (to_snp(t),))[1] for t in ts], rtol=1e-12)

"""Issue 15, code written by others (seventh round): optax written by hand. Gradient
transformations as (init, update) pairs of closures over their hyperparameters, states as
namedtuples of pytrees, chain(clip_by_global_norm, scale_by_adam, scale(-lr)), a schedule
closed over by the update, masked weight decay, gradient accumulation (MultiSteps), an EMA of
the parameters, and training loops under jit as lax.fori_loop and lax.scan over steps. Each run
is compared with the same optimizer written in plain NumPy float64, step by step; gradients
through the whole loop against finite differences."""
from typing import Any, Callable, NamedTuple

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jit, lax, tree_util, value_and_grad, vmap

from others15_check import assert_trees_close, fd_grad, to_snp

RNG = np.random.default_rng(7007)


# --- the library -------------------------------------------------------------------------------
class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


class EmptyState(NamedTuple):
    pass


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class ScaleByScheduleState(NamedTuple):
    count: Any


class MultiStepsState(NamedTuple):
    mini_step: Any
    acc_grads: Any
    inner_state: Any


def chain(*transforms):
    inits = tuple(t.init for t in transforms)
    updates = tuple(t.update for t in transforms)

    def init_fn(params):
        return tuple(fn(params) for fn in inits)

    def update_fn(grads, state, params=None):
        new_state = []
        for s, fn in zip(state, updates):
            grads, s = fn(grads, s, params)
            new_state.append(s)
        return grads, tuple(new_state)

    return GradientTransformation(init_fn, update_fn)


def global_norm(tree):
    return jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in tree_util.tree_leaves(tree)))


def clip_by_global_norm(max_norm):
    def init_fn(params):
        del params
        return EmptyState()

    def update_fn(updates, state, params=None):
        del params
        g_norm = global_norm(updates)
        trigger = jnp.squeeze(g_norm < max_norm)
        updates = tree_util.tree_map(
            lambda t: jnp.where(trigger, t, (t / g_norm.astype(t.dtype)) * max_norm), updates)
        return updates, state

    return GradientTransformation(init_fn, update_fn)


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8):
    def init_fn(params):
        mu = tree_util.tree_map(jnp.zeros_like, params)
        nu = tree_util.tree_map(jnp.zeros_like, params)
        return ScaleByAdamState(count=jnp.zeros([], jnp.int32), mu=mu, nu=nu)

    def update_fn(updates, state, params=None):
        del params
        mu = tree_util.tree_map(lambda g, t: (1 - b1) * g + b1 * t, updates, state.mu)
        nu = tree_util.tree_map(lambda g, t: (1 - b2) * g ** 2 + b2 * t, updates, state.nu)
        count = state.count + 1
        mu_hat = tree_util.tree_map(lambda t: t / (1 - b1 ** count), mu)
        nu_hat = tree_util.tree_map(lambda t: t / (1 - b2 ** count), nu)
        updates = tree_util.tree_map(lambda m, v: m / (jnp.sqrt(v) + eps), mu_hat, nu_hat)
        return updates, ScaleByAdamState(count=count, mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


def scale(step_size):
    def init_fn(params):
        del params
        return EmptyState()

    def update_fn(updates, state, params=None):
        del params
        return tree_util.tree_map(lambda g: step_size * g, updates), state

    return GradientTransformation(init_fn, update_fn)


def scale_by_schedule(schedule):
    def init_fn(params):
        del params
        return ScaleByScheduleState(count=jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None):
        del params
        step_size = schedule(state.count)
        updates = tree_util.tree_map(lambda g: jnp.array(step_size, dtype=g.dtype) * g, updates)
        return updates, ScaleByScheduleState(count=state.count + 1)

    return GradientTransformation(init_fn, update_fn)


def add_decayed_weights(weight_decay, mask=None):
    def init_fn(params):
        del params
        return EmptyState()

    def update_fn(updates, state, params):
        if mask is None:
            return tree_util.tree_map(lambda g, p: g + weight_decay * p, updates, params), state
        m = mask(params) if callable(mask) else mask
        updates = tree_util.tree_map(lambda g, p, use: g + weight_decay * p if use else g,
                                     updates, params, m)
        return updates, state

    return GradientTransformation(init_fn, update_fn)


def multi_steps(inner, every_k):
    def init_fn(params):
        return MultiStepsState(mini_step=jnp.zeros([], jnp.int32),
                               acc_grads=tree_util.tree_map(jnp.zeros_like, params),
                               inner_state=inner.init(params))

    def update_fn(updates, state, params=None):
        acc = tree_util.tree_map(lambda a, g: a + g / every_k, state.acc_grads, updates)
        emit = state.mini_step == every_k - 1

        def do_emit(_):
            out, inner_state = inner.update(acc, state.inner_state, params)
            zeros = tree_util.tree_map(jnp.zeros_like, acc)
            return out, MultiStepsState(jnp.zeros([], jnp.int32), zeros, inner_state)

        def do_accumulate(_):
            out = tree_util.tree_map(jnp.zeros_like, updates)
            return out, MultiStepsState(state.mini_step + 1, acc, state.inner_state)

        return lax.cond(emit, do_emit, do_accumulate, None)

    return GradientTransformation(init_fn, update_fn)


def apply_updates(params, updates):
    return tree_util.tree_map(lambda p, u: jnp.asarray(p + u).astype(jnp.asarray(p).dtype), params, updates)


def adamw(learning_rate, weight_decay=1e-2, mask=None, max_norm=1.0):
    return chain(clip_by_global_norm(max_norm), scale_by_adam(),
                 add_decayed_weights(weight_decay, mask), scale(-learning_rate))


# --- the model ---------------------------------------------------------------------------------
def init_mlp(sizes):
    return [{"w": RNG.normal(size=(m, n)) / np.sqrt(m), "b": np.zeros(n)}
            for m, n in zip(sizes[:-1], sizes[1:])]


def mlp(params, x):
    *hidden, last = params
    for layer in hidden:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return x @ last["w"] + last["b"]


def loss_fn(params, x, y):
    return jnp.mean((mlp(params, x)[:, 0] - y) ** 2)


init_mlp_copy = init_mlp([3, 8, 1])
X = RNG.normal(size=(16, 3))
Y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]


# --- the same in NumPy -------------------------------------------------------------------------
def np_mlp_grad(params, x, y):
    """Backprop by hand for the tanh MLP and mean squared error."""
    acts = [x]
    for layer in params[:-1]:
        acts.append(np.tanh(acts[-1] @ layer["w"] + layer["b"]))
    out = acts[-1] @ params[-1]["w"] + params[-1]["b"]
    delta = (2.0 / len(y)) * (out[:, 0] - y)[:, None]
    grads = [None] * len(params)
    for i in reversed(range(len(params))):
        grads[i] = {"w": acts[i].T @ delta, "b": delta.sum(0)}
        if i:
            delta = (delta @ params[i]["w"].T) * (1 - acts[i] ** 2)
    return grads


def np_adamw_run(params, steps, lr, wd, max_norm, decay_mask=None, b1=0.9, b2=0.999, eps=1e-8):
    params = [{k: np.array(v) for k, v in layer.items()} for layer in params]
    mu = [{k: np.zeros_like(v) for k, v in layer.items()} for layer in params]
    nu = [{k: np.zeros_like(v) for k, v in layer.items()} for layer in params]
    for t in range(1, steps + 1):
        g = np_mlp_grad(params, X, Y)
        norm = np.sqrt(sum(np.sum(l[k] ** 2) for l in g for k in l))
        if norm >= max_norm:
            g = [{k: v / norm * max_norm for k, v in l.items()} for l in g]
        for i, layer in enumerate(params):
            for k in layer:
                mu[i][k] = (1 - b1) * g[i][k] + b1 * mu[i][k]
                nu[i][k] = (1 - b2) * g[i][k] ** 2 + b2 * nu[i][k]
                u = (mu[i][k] / (1 - b1 ** t)) / (np.sqrt(nu[i][k] / (1 - b2 ** t)) + eps)
                if decay_mask is None or decay_mask(k):
                    u = u + wd * layer[k]
                layer[k] = layer[k] - lr * u
    return params


# --- tests -------------------------------------------------------------------------------------
def test_chained_adamw_step_by_step_against_numpy(x64):
    params = to_snp(init_mlp_copy)
    opt = adamw(1e-2, weight_decay=1e-2, max_norm=0.5)
    state = opt.init(params)

    @jit
    def step(params, state):
        loss, grads = value_and_grad(loss_fn)(params, X, Y)
        updates, state = opt.update(grads, state, params)
        return apply_updates(params, updates), state, loss

    for _ in range(5):
        params, state, loss = step(params, state)
    assert int(state[1].count) == 5
    want = np_adamw_run(init_mlp_copy, 5, 1e-2, 1e-2, 0.5)
    assert_trees_close(params, want, rtol=1e-9, atol=1e-12)


def test_training_loop_as_fori_loop_under_jit(x64):
    params0 = to_snp(init_mlp_copy)
    opt = adamw(1e-2, weight_decay=1e-3, mask=lambda p: [{"w": True, "b": False} for _ in p], max_norm=10.0)

    @jit
    def train(params):
        def body(i, carry):
            params, state = carry
            grads = grad(loss_fn)(params, X, Y)
            updates, state = opt.update(grads, state, params)
            return apply_updates(params, updates), state
        params, state = lax.fori_loop(0, 7, body, (params, opt.init(params)))
        return params

    want = np_adamw_run(init_mlp_copy, 7, 1e-2, 1e-3, 10.0, decay_mask=lambda k: k == "w")
    assert_trees_close(train(params0), want, rtol=1e-9, atol=1e-12)


def test_training_loop_as_scan_returns_the_losses(x64):
    params0 = to_snp(init_mlp_copy)
    opt = chain(scale_by_adam(), scale(-0.05))

    def train(params, xs, ys):
        def step(carry, batch):
            params, state = carry
            x, y = batch
            loss, grads = value_and_grad(loss_fn)(params, x, y)
            updates, state = opt.update(grads, state)
            return (apply_updates(params, updates), state), loss
        (params, _), losses = lax.scan(step, (params, opt.init(params)), (xs, ys))
        return params, losses

    xs, ys = np.stack([X[:8], X[8:]] * 2), np.stack([Y[:8], Y[8:]] * 2)
    params, losses = jit(train)(params0, xs, ys)
    eager_params, eager_losses = train(params0, xs, ys)
    assert_trees_close(params, eager_params, rtol=1e-10)
    # the losses by hand: run the steps one by one in Python
    p, s = params0, opt.init(params0)
    want = []
    for x, y in zip(xs, ys):
        l, g = value_and_grad(loss_fn)(p, x, y)
        u, s = opt.update(g, s)
        p = apply_updates(p, u)
        want.append(float(l))
    np.testing.assert_allclose(losses, want, rtol=1e-10)
    assert_trees_close(params, p, rtol=1e-10)


def warmup_cosine(peak, warmup, total):
    def schedule(count):
        count = jnp.asarray(count, jnp.float64)
        warm = peak * count / warmup
        frac = jnp.clip((count - warmup) / (total - warmup), 0.0, 1.0)
        cosine = 0.5 * peak * (1 + jnp.cos(jnp.pi * frac))
        return jnp.where(count < warmup, warm, cosine)
    return schedule


def test_schedule_closed_over_by_the_update(x64):
    sched = warmup_cosine(0.1, 3, 10)
    opt = chain(scale_by_schedule(sched), scale(-1.0))
    w = jnp.asarray([1.0, -2.0])
    f = lambda w: jnp.sum(w ** 2)

    @jit
    def run(w):
        def body(carry, _):
            w, state = carry
            updates, state = opt.update(grad(f)(w), state)
            return (apply_updates(w, updates), state), state[0].count
        (w, _), counts = lax.scan(body, (w, opt.init(w)), None, length=10)
        return w, counts

    got, counts = run(w)
    want = np.array([1.0, -2.0])
    for t in range(10):
        lr = 0.1 * t / 3 if t < 3 else 0.05 * (1 + np.cos(np.pi * min(max((t - 3) / 7, 0), 1)))
        want = want - lr * 2 * want
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_array_equal(counts, np.arange(1, 11))


def test_schedule_peak_hypergradient_through_a_closure_built_optimizer(x64):
    f = lambda w: jnp.sum(w ** 2)
    w = jnp.asarray([1.0, -2.0])

    def final_loss(peak):
        o = chain(scale_by_schedule(warmup_cosine(peak, 3, 10)), scale(-1.0))
        def body(carry, _):
            w, state = carry
            u, state = o.update(grad(f)(w), state)
            return (apply_updates(w, u), state), None
        (w_end, _), _ = lax.scan(body, (w, o.init(w)), None, length=10)
        return f(w_end)
    g = grad(final_loss)(jnp.asarray(0.1))
    fd = fd_grad(final_loss, (jnp.asarray(0.1),))
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_multi_steps_accumulates_then_applies(x64):
    inner = chain(scale_by_adam(), scale(-0.1))
    opt = multi_steps(inner, every_k=3)
    params = {"a": jnp.asarray([0.5, -1.0]), "b": jnp.asarray(2.0)}
    f = lambda p, c: jnp.sum((p["a"] - c) ** 2) + (p["b"] * c[0]) ** 2
    cs = RNG.normal(size=(6, 2))

    @jit
    def step(params, state, c):
        updates, state = opt.update(grad(f)(params, c), state, params)
        return apply_updates(params, updates), state

    state = opt.init(params)
    history = []
    for c in cs:
        params, state = step(params, state, c)
        history.append(tree_util.tree_map(np.asarray, params))
    # nothing moves on the 1st, 2nd, 4th, 5th calls
    assert_trees_close(history[0], history[1], rtol=0, atol=0)
    assert_trees_close(history[3], history[4], rtol=0, atol=0)
    # the third call applies one Adam step on the mean of three gradients (Adam's first step is
    # lr * sign(g) up to eps)
    p0 = {"a": np.array([0.5, -1.0]), "b": 2.0}
    gs = [grad(f)(to_snp(p0), c) for c in cs[:3]]
    g_mean = tree_util.tree_map(lambda *g: sum(np.asarray(x) for x in g) / 3, *gs)
    want = tree_util.tree_map(lambda p, g: p - 0.1 * g / (np.abs(g) + 1e-8), p0, g_mean)
    assert_trees_close(history[2], want, rtol=1e-7)
    assert int(state.mini_step) == 0 and int(state.inner_state[0].count) == 2


class EmaState(NamedTuple):
    ema: Any
    count: Any


def test_ema_of_parameters_with_debiasing_in_a_scan(x64):
    decay = 0.8

    def ema_update(state, params):
        ema = tree_util.tree_map(lambda e, p: decay * e + (1 - decay) * p, state.ema, params)
        return EmaState(ema, state.count + 1)

    def debiased(state):
        return tree_util.tree_map(lambda e: e / (1 - decay ** state.count), state.ema)

    traj = {"w": RNG.normal(size=(5, 3)), "b": RNG.normal(size=(5,))}

    def run(traj):
        state0 = EmaState(tree_util.tree_map(lambda v: jnp.zeros_like(v[0]), traj), jnp.asarray(0.0))
        state, _ = lax.scan(lambda s, p: (ema_update(s, p), None), state0, traj)
        return debiased(state)

    got = jit(run)(to_snp(traj))
    weights = np.array([(1 - decay) * decay ** (4 - t) for t in range(5)]) / (1 - decay ** 5)
    want = {"w": weights @ traj["w"], "b": weights @ traj["b"]}
    assert_trees_close(got, want, rtol=1e-12)
    # d(ema of b)/d(traj b) is the weights; under grad of a sum of the debiased EMA
    g = grad(lambda t: jnp.sum(run(t)["b"]))(to_snp(traj))
    np.testing.assert_allclose(g["b"], weights, rtol=1e-12)
    np.testing.assert_allclose(g["w"], 0.0)


def test_per_example_clipped_gradients_then_noise_free_adam(x64):
    """DP-SGD's clip per example by vmap(grad), then the chained optimizer on the mean."""
    params = to_snp(init_mlp_copy)
    per_example = vmap(grad(lambda p, x, y: loss_fn(p, x[None], y[None])), in_axes=(None, 0, 0))
    clip = clip_by_global_norm(0.3)

    def private_grad(params):
        grads = per_example(params, X, Y)
        def clip_one(i):
            g = tree_util.tree_map(lambda t: t[i], grads)
            return clip.update(g, EmptyState())[0]
        clipped = [clip_one(i) for i in range(len(Y))]
        return tree_util.tree_map(lambda *g: sum(g) / len(g), *clipped)

    got = jit(private_grad)(params)
    # by hand: each example's gradient from NumPy backprop, clipped
    rows = []
    for x, y in zip(X, Y):
        g = np_mlp_grad(init_mlp_copy, x[None], np.array([y]))
        n = np.sqrt(sum(np.sum(l[k] ** 2) for l in g for k in l))
        rows.append([{k: v * (1 if n < 0.3 else 0.3 / n) for k, v in l.items()} for l in g])
    want = tree_util.tree_map(lambda *g: sum(g) / len(g), *rows)
    assert_trees_close(got, want, rtol=1e-9, atol=1e-12)


def test_lookahead_outer_loop_over_inner_fori(x64):
    """Lookahead: k fast SGD steps in a fori_loop, then slow weights move alpha of the way."""
    A = np.array([[3.0, 0.5], [0.5, 1.0]])
    f = lambda w: 0.5 * w @ (A @ w) - w[0]

    def lookahead(slow, k=4, alpha=0.5, lr=0.1):
        fast = lax.fori_loop(0, k, lambda i, w: w - lr * grad(f)(w), slow)
        return slow + alpha * (fast - slow)

    w = jnp.asarray([1.0, 1.0])
    for _ in range(3):
        w = jit(lookahead)(w)
    ww = np.array([1.0, 1.0])
    b = np.array([1.0, 0.0])
    for _ in range(3):
        fast = ww.copy()
        for _ in range(4):
            fast = fast - 0.1 * (A @ fast - b)
        ww = ww + 0.5 * (fast - ww)
    np.testing.assert_allclose(w, ww, rtol=1e-12)
    # the Jacobian of one lookahead step is (1 - a) I + a (I - lr A)^k
    J = secant.jacfwd(lookahead)(jnp.asarray([0.3, -0.2]))
    M = np.linalg.matrix_power(np.eye(2) - 0.1 * A, 4)
    np.testing.assert_allclose(J, 0.5 * np.eye(2) + 0.5 * M, rtol=1e-12)
    np.testing.assert_allclose(secant.jacrev(jit(lookahead))(jnp.asarray([0.3, -0.2])), J, rtol=1e-12)


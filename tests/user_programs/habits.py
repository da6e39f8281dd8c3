"""The fifth battery (issue 15, explore15l): programs sorted by HOW their authors write code
rather than by domain. Code ported from PyTorch habits (`x.sum(-1)`, `x.mean(axis=0,
keepdims=True)`, `x.T`, `x.reshape(-1, d)`, `.astype`, method chains, `.at[...]` chains,
`.squeeze()`, `.swapaxes`, `.flatten()`, `@` everywhere); optax-like optimisers (init/update
closures returning NamedTuples, tree_map of several trees, tree_flatten/unflatten, jax.tree.map,
chains of transformations); flax-like modules (dicts of dicts of params, a FrozenDict-like
Mapping, `__call__` modules holding configs, `setup`-style lazy init, stop_gradient of a target
network); scientific code (jax.scipy.special, stats.norm, linalg solve/cholesky/slogdet/eigh,
RK4 loops, Newton iterations in while_loop, implicit functions through user-written custom_jvp
and custom_vjp, checkpoint/remat decorators, named_call); and Python idioms (*args/**kwargs
forwarding, stacked decorators, functools.reduce, itertools.accumulate, map, zip(strict=True),
f-strings in asserts, isinstance dispatch, early returns in loops, for/else, nested
comprehensions, sorted(d.items()), enum configs, typing Protocols, __slots__, properties).

(tests/user_programs/styles.py is the first battery's; this one is habits.py.)"""
import dataclasses
import enum
import functools
import itertools
import operator
from collections.abc import Mapping
from typing import Any, Callable, NamedTuple, Protocol

import numpy as onp

import secant as jax
import secant.numpy as jnp
from secant import lax
from secant.scipy import linalg as jsl
from secant.scipy.special import erf, expit, gammaln, logsumexp, xlogy
from secant.scipy.stats import norm

from corpus import Case, pos, vec

X = vec(1700, 6, 3)
Y = vec(1701, 6)
W3 = vec(1702, 3)
W33 = vec(1703, 3, 3, scale=0.6)
LABELS = onp.array([0, 2, 1, 1, 0, 2])


# --- ported from PyTorch habits ----------------------------------------------------------------------
def pt_log_softmax_by_hand(w, x, labels):
    """cross entropy as a PyTorch user writes it: logits.max(-1, keepdims), .exp().sum(-1)"""
    logits = x @ w
    logits = logits - logits.max(axis=-1, keepdims=True)
    logp = logits - jnp.log(jnp.exp(logits).sum(-1, keepdims=True))
    return -logp[jnp.arange(labels.shape[0]), labels].mean()


def pt_layer_norm(w, x):
    """LayerNorm by hand: mean/var over the last axis with keepdims"""
    h = x @ w
    mu = h.mean(axis=-1, keepdims=True)
    var = ((h - mu) ** 2).mean(-1, keepdims=True)
    out = (h - mu) / jnp.sqrt(var + 1e-5)
    return (out * jnp.arange(1.0, 4.0)).sum() + (h ** 2).mean(axis=0, keepdims=True).sum()


def pt_transpose_gram(w, x):
    h = jnp.tanh(x @ w)
    gram = h.T @ h
    return jnp.trace(gram) / h.shape[0] + (w.T @ w).sum() * 0.1


def pt_reshape_minus_one(w, x):
    """x.reshape(-1, d) and h.reshape(n, -1): a conv-ish patch flattening"""
    h = jnp.tanh(x.reshape(-1, 3) @ w)             # (6, 3)
    pairs = h.reshape(3, -1)                        # (3, 6)
    return (pairs.sum(1) ** 2).sum() + h.reshape(-1).dot(h.reshape(-1)) * 0.1


def pt_astype_mask(w, x):
    h = x @ w
    mask = (x > 0).astype(h.dtype)
    return (h * mask).sum() + (h ** 2).astype(jnp.float64).mean()


def pt_method_chain(w, x):
    """x.clip(0).sqrt().sum() chains (a jax Array has no .sqrt(): jnp.sqrt of the chain)"""
    h = (x @ w) ** 2 + 0.5
    return jnp.sqrt(h.clip(0.0)).sum() + jnp.tanh(h).clip(max=10.0).mean() \
        + h.clip(min=0.56, max=0.7).sum()


def pt_at_chain(w, x):
    v = jnp.asarray(w).at[0].set(x.sum()).at[1:].multiply(2.0).at[-1].add(w[0] * w[1])
    return (v ** 2).sum() + jnp.sin(x @ v).sum()


def pt_max_min_axis(w, x):
    h = x @ w
    return h.max(axis=0).sum() + h.min(axis=1).mean() + jnp.abs(h).max()


def pt_squeeze_unsqueeze(w, x):
    q = x[:, None, :]                                 # (6, 1, 3)
    k = jnp.expand_dims(w, 0)                         # (1, 3, 3)
    s = (q @ k).squeeze(1)                            # (6, 3)
    t = jnp.tanh(s)[None].squeeze()
    return (t ** 2).sum() + s[:, :1].squeeze(-1).mean()


def pt_swapaxes_attention(w, x):
    """batched attention with k.swapaxes(-1, -2) and .transpose(0, 2, 1)"""
    xb = x.reshape(2, 3, 3)
    q, k, v = xb @ w, xb @ w.T, xb
    att = jax.nn.softmax(q @ k.swapaxes(-1, -2) / jnp.sqrt(3.0), axis=-1)
    out = att @ v
    return (out.transpose(0, 2, 1) * jnp.arange(3.0)).sum()


def pt_flatten_ravel(params, x):
    """torch.cat([p.view(-1) for p in params]) as flatten()/ravel()"""
    flat = jnp.concatenate([params["w"].flatten(), params["b"].ravel()])
    h = jnp.tanh(x @ params["w"] + params["b"])
    return h.ravel().dot(h.flatten()) + 0.01 * (flat ** 2).sum()


def pt_matmul_everywhere(w, x):
    m = w @ w.T + jnp.eye(3)
    v = x.mean(0)
    return v @ m @ v + (x @ w @ w.T @ x.T).trace() * 0.1 + (x @ m).sum(0) @ w[:, 0]


def pt_stats_methods(w, x):
    h = jnp.tanh(x @ w)
    return h.std(0).sum() + h.var(axis=1).mean() + (1.0 + 0.1 * h).prod() \
        + jnp.linalg.norm(w, axis=0).sum()


def pt_inplace_style(w, x):
    """PyTorch in-place habits become augmented assignments"""
    h = x @ w
    h += 0.5
    h *= jnp.tanh(h)
    h /= h.shape[-1]
    h -= h.mean()
    h **= 2
    return h.sum()


def pt_view_permute(w, x):
    h = (x @ w).reshape(x.shape[0], 3, -1)         # (6, 3, 1)
    p = h.transpose(1, 0, 2).reshape(3, -1)         # permute + view
    return (jnp.tanh(p) * jnp.arange(6.0)).sum() + p.mean(axis=(0, 1))


def pt_argmax_onehot(w, x):
    """one_hot(argmax(logits)) used as a constant mask (no gradient through the argmax)"""
    logits = x @ w
    mask = jax.nn.one_hot(logits.argmax(-1), 3)
    return (mask * logits).sum() + (jax.nn.one_hot(logits.argmin(axis=-1), 3) * logits ** 2).sum()


def pt_cumsum_diff(w, x):
    h = jnp.sin(x @ w)
    return h.cumsum(0).sum() + jnp.diff(h, axis=0).sum() ** 2 + h.cumprod(axis=1).mean()


class TorchNet:
    """an nn.Module port: weights as attributes, forward() and __call__"""

    def __init__(self, w1, w2):
        self.w1 = w1
        self.w2 = w2

    def forward(self, x):
        h = jax.nn.relu(x @ self.w1 + 0.3)
        return h @ self.w2

    def __call__(self, x):
        return self.forward(x)


def pt_module_forward(w, x):
    net = TorchNet(w, w.T[:, :1])
    return ((net(x).squeeze() - x.sum(-1)) ** 2).mean()


# --- optax-like optimisers -----------------------------------------------------------------------------
def _loss(params, x, y):
    pred = jnp.tanh(x @ params["w"]) @ params["v"] + params["b"]
    return ((pred - y) ** 2).mean()


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8):
    def init_fn(params):
        mu = jax.tree_util.tree_map(jnp.zeros_like, params)
        nu = jax.tree_util.tree_map(lambda p: jnp.zeros_like(p), params)
        return ScaleByAdamState(count=jnp.zeros([], jnp.int32), mu=mu, nu=nu)

    def update_fn(updates, state, params=None):
        del params
        mu = jax.tree_util.tree_map(lambda g, m: b1 * m + (1 - b1) * g, updates, state.mu)
        nu = jax.tree_util.tree_map(lambda g, v: b2 * v + (1 - b2) * g ** 2, updates, state.nu)
        count = state.count + 1
        mu_hat = jax.tree_util.tree_map(lambda m: m / (1 - b1 ** count), mu)
        nu_hat = jax.tree_util.tree_map(lambda v: v / (1 - b2 ** count), nu)
        updates = jax.tree_util.tree_map(lambda m, v: m / (jnp.sqrt(v) + eps), mu_hat, nu_hat)
        return updates, ScaleByAdamState(count=count, mu=mu, nu=nu)
    return GradientTransformation(init_fn, update_fn)


def scale(step_size):
    def init_fn(params):
        del params
        return ()

    def update_fn(updates, state, params=None):
        return jax.tree_util.tree_map(lambda g: step_size * g, updates), state
    return GradientTransformation(init_fn, update_fn)


def clip_by_global_norm(max_norm):
    def init_fn(params):
        return ()

    def update_fn(updates, state, params=None):
        g_norm = jnp.sqrt(sum(jnp.sum(g ** 2) for g in jax.tree_util.tree_leaves(updates)))
        trigger = jnp.squeeze(g_norm < max_norm)
        updates = jax.tree_util.tree_map(
            lambda t: jnp.where(trigger, t, (t / g_norm) * max_norm), updates)
        return updates, state
    return GradientTransformation(init_fn, update_fn)


def chain(*args):
    init_fns, update_fns = zip(*args)

    def init_fn(params):
        return tuple(fn(params) for fn in init_fns)

    def update_fn(updates, state, params=None):
        new_state = []
        for s, fn in zip(state, update_fns):
            updates, new_s = fn(updates, s, params)
            new_state.append(new_s)
        return updates, tuple(new_state)
    return GradientTransformation(init_fn, update_fn)


def apply_updates(params, updates):
    return jax.tree_util.tree_map(
        lambda p, u: jnp.asarray(p + u).astype(jnp.asarray(p).dtype), params, updates)


def _train(params, x, y, tx, steps=3):
    opt_state = tx.init(params)
    for _ in range(steps):
        grads = jax.grad(_loss)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = apply_updates(params, updates)
    return _loss(params, x, y)


def ox_adam_namedtuple(params, x, y):
    """a meta-gradient through three Adam steps written as optax writes Adam (eps raised: with
    1e-8 the first step is sign(g), whose curvature no finite difference resolves)"""
    return _train(params, x, y, chain(scale_by_adam(eps=1e-2), scale(-0.05)))


def ox_clip_chain(params, x, y):
    """clip_by_global_norm (the clip active: |g| > 0.05) then SGD"""
    return _train(params, x, y, chain(clip_by_global_norm(0.05), scale(-0.5)))


def ox_tree_flatten_unflatten(params, x, y):
    """an SGD step on the flat list of leaves, unflattened back"""
    grads = jax.grad(_loss)(params, x, y)
    leaves, treedef = jax.tree_util.tree_flatten(params)
    g_leaves = jax.tree_util.tree_leaves(grads)
    new = [p - 0.3 * g for p, g in zip(leaves, g_leaves)]
    params = jax.tree_util.tree_unflatten(treedef, new)
    return _loss(params, x, y)


def ox_jax_tree_map(params, x, y):
    """the newer jax.tree.map / jax.tree.leaves spelling"""
    grads = jax.grad(_loss)(params, x, y)
    params = jax.tree.map(lambda p, g: p - 0.2 * g, params, grads)
    l2 = sum(jax.tree.leaves(jax.tree.map(lambda p: (p ** 2).sum(), params)))
    return _loss(params, x, y) + 0.01 * l2


def ox_ema_params(params, x, y):
    """an EMA of the parameters carried beside them (tree_map over three trees)"""
    ema = jax.tree_util.tree_map(lambda p: p, params)
    mom = jax.tree_util.tree_map(jnp.zeros_like, params)
    for _ in range(2):
        g = jax.grad(_loss)(params, x, y)
        mom = jax.tree_util.tree_map(lambda m, gi: 0.9 * m + gi, mom, g)
        params = jax.tree_util.tree_map(lambda p, m, gi: p - 0.1 * (m + gi), params, mom, g)
        ema = jax.tree_util.tree_map(lambda e, p: 0.8 * e + 0.2 * p, ema, params)
    return _loss(ema, x, y)


def _exponential_decay(init_value, rate, steps):
    def schedule(count):
        return init_value * rate ** (count / steps)
    return schedule


def ox_schedule(params, x, y):
    """a learning-rate schedule function of the step count"""
    lr = _exponential_decay(0.3, 0.5, 2)
    for count in range(3):
        g = jax.grad(_loss)(params, x, y)
        params = jax.tree_util.tree_map(lambda p, gi: p - lr(count) * gi, params, g)
    return _loss(params, x, y)


def ox_masked_decay(params, x, y):
    """weight decay on the kernels only, masked by tree_map_with_path over key paths"""
    def decay(path, p):
        name = jax.tree_util.keystr(path)
        return 0.05 * p if "b" not in name else jnp.zeros_like(p)
    g = jax.grad(_loss)(params, x, y)
    wd = jax.tree_util.tree_map_with_path(decay, params)
    params = jax.tree_util.tree_map(lambda p, gi, d: p - 0.2 * (gi + d), params, g, wd)
    return _loss(params, x, y)


class TrainState(NamedTuple):
    params: Any
    opt_state: Any
    step: Any


def ox_scan_train_state(params, x, y):
    """a TrainState NamedTuple carried by lax.scan over minibatches"""
    tx = chain(scale_by_adam(), scale(-0.05))
    state = TrainState(params, tx.init(params), 0)

    def train_step(state, batch):
        xb, yb = batch
        loss, grads = jax.value_and_grad(_loss)(state.params, xb, yb)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        return TrainState(apply_updates(state.params, updates), opt_state,
                          state.step + 1), loss

    state, losses = lax.scan(train_step, state, (x.reshape(2, 3, 3), y.reshape(2, 3)))
    return losses.sum() + _loss(state.params, x, y)


def ox_global_norm_reduce(params, x, y):
    """optax.global_norm by tree_reduce, and a grad norm penalty"""
    g = jax.grad(_loss)(params, x, y)
    sq = jax.tree_util.tree_reduce(lambda a, b: a + b, jax.tree_util.tree_map(
        lambda t: jnp.vdot(t, t), g))
    return _loss(params, x, y) + jnp.sqrt(sq + 1e-3)


# --- flax-like modules -------------------------------------------------------------------------------
class FrozenDict(Mapping):
    """flax's FrozenDict: an immutable Mapping registered as a pytree"""

    def __init__(self, *args, **kwargs):
        self._dict = dict(*args, **kwargs)

    def __getitem__(self, key):
        v = self._dict[key]
        return FrozenDict(v) if isinstance(v, dict) else v

    def __iter__(self):
        return iter(self._dict)

    def __len__(self):
        return len(self._dict)

    def unfreeze(self):
        return {k: (v.unfreeze() if isinstance(v, FrozenDict) else v)
                for k, v in self._dict.items()}


jax.tree_util.register_pytree_node(
    FrozenDict,
    lambda d: (tuple(d._dict[k] for k in sorted(d._dict)), tuple(sorted(d._dict))),
    lambda keys, vals: FrozenDict(zip(keys, vals)))


def _dense(p, x):
    return x @ p["kernel"] + p["bias"]


def fx_dict_of_dicts(params, x):
    h = jnp.tanh(_dense(params["dense1"], x))
    out = _dense(params["dense2"], h)
    return (out ** 2).mean()


def fx_frozen_dict(params, x):
    variables = FrozenDict({"params": params})
    p = variables["params"]
    h = jnp.tanh(x @ p["dense1"]["kernel"] + p["dense1"]["bias"])
    return (h ** 2).sum() + sum(jnp.sum(v ** 2) for v in jax.tree_util.tree_leaves(variables))


@dataclasses.dataclass
class Dense:
    features: int
    use_bias: bool = True

    def __call__(self, params, x):
        y = x @ params["kernel"]
        if self.use_bias:
            y = y + params["bias"]
        return y


@dataclasses.dataclass
class MLPModule:
    features: tuple = (3, 1)
    activation: Callable = jnp.tanh

    def __call__(self, params, x):
        for i, feat in enumerate(self.features):
            x = Dense(feat, use_bias=i == 0)(params[f"layers_{i}"], x)
            if i < len(self.features) - 1:
                x = self.activation(x)
        return x


def fx_module_config(params, x, y):
    model = MLPModule(features=(3, 1), activation=jax.nn.gelu)
    pred = model(params, x).squeeze(-1)
    return ((pred - y) ** 2).mean()


class LazyModule:
    """flax's setup(): the submodules made on the first call"""

    def __init__(self, hidden):
        self.hidden = hidden
        self._ready = False

    def setup(self):
        self.encoder = Dense(self.hidden)
        self.decoder = Dense(3, use_bias=False)
        self._ready = True

    def __call__(self, params, x):
        if not self._ready:
            self.setup()
        z = jnp.tanh(self.encoder(params["encoder"], x))
        return self.decoder(params["decoder"], z)


def fx_setup_lazy(params, x):
    model = LazyModule(hidden=2)
    recon = model(params, x)
    return ((recon - x) ** 2).mean()


def _q_values(params, obs):
    return jnp.tanh(obs @ params["w1"]) @ params["w2"]


NEXT_OBS = vec(1710, 6, 3)
REWARDS = vec(1711, 6)


def fx_target_net(params, target_params, obs, actions):
    """a DQN loss: the target network's values held by lax.stop_gradient"""
    q = _q_values(params, obs)
    q_a = jnp.take_along_axis(q, actions[:, None], axis=-1).squeeze(-1)
    q_next = _q_values(jax.lax.stop_gradient(target_params), NEXT_OBS).max(-1)
    target = REWARDS + 0.9 * q_next
    return ((q_a - target) ** 2).mean()


def fx_apply_variables(params, x):
    """model.apply({'params': ..., 'batch_stats': ...}, x, train=False)"""
    variables = {"params": params, "batch_stats": {"mean": x.mean(0), "var": x.var(0) + 0.1}}

    def apply(variables, x, train=False):
        p, stats = variables["params"], variables["batch_stats"]
        mean, var = (x.mean(0), x.var(0)) if train else (stats["mean"], stats["var"])
        h = (x - mean) / jnp.sqrt(var + 1e-5) * p["scale"] + p["bias"]
        return jnp.tanh(h @ p["kernel"])
    return (apply(variables, x) ** 2).sum() + (apply(variables, x, train=True) ** 2).mean()


class Sequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, params, x):
        for layer, p in zip(self.layers, params):
            x = layer(p, x)
        return x


def _act(p, x):
    return jax.nn.silu(x)


def fx_sequential(params, x):
    model = Sequential([Dense(3), _act, Dense(3), _act])
    out = model([params[0], None, params[1], None], x)
    return (out ** 2).mean()


@dataclasses.dataclass(frozen=True)
class StructParams:
    """flax.struct.dataclass: replace() to step it"""
    w: Any
    b: Any

    def replace(self, **kwargs):
        return dataclasses.replace(self, **kwargs)


jax.tree_util.register_dataclass(StructParams, data_fields=["w", "b"], meta_fields=[])


def fx_struct_replace(w, x, y):
    p = StructParams(w=w, b=jnp.zeros(()))
    for _ in range(2):
        g = jax.grad(lambda q: (((x @ q.w + q.b) - y) ** 2).mean())(p)
        p = p.replace(w=p.w - 0.2 * g.w, b=p.b - 0.2 * g.b)
    return (((x @ p.w + p.b) - y) ** 2).mean()


# --- scientific --------------------------------------------------------------------------------------
def sci_special_mix(w, x):
    z = x @ w
    p = expit(z)
    return (logsumexp(z) + gammaln(2.0 + z ** 2).sum() + xlogy(p, p).sum()
            + erf(0.5 * z).sum())


def sci_norm_logpdf(theta, x):
    mu, log_sigma = theta[0], theta[1]
    return -norm.logpdf(x.ravel(), loc=mu, scale=jnp.exp(log_sigma)).sum() \
        + norm.cdf(theta[2]) + norm.logcdf(x[:, 0] - mu).mean()


def _kernel(a, b, ell):
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return jnp.exp(-0.5 * d2 / ell ** 2)


def sci_cholesky_solve(log_ell, x, y):
    """a GP marginal likelihood with cholesky, cho_solve and slogdet"""
    K = _kernel(x, x, jnp.exp(log_ell)) + 0.1 * jnp.eye(x.shape[0])
    L = jnp.linalg.cholesky(K)
    alpha = jsl.cho_solve((L, True), y)
    _, logdet = jnp.linalg.slogdet(K)
    return 0.5 * y @ alpha + 0.5 * logdet


def sci_linalg_solve(w, x):
    A = w @ w.T + 2.0 * jnp.eye(3)
    b = x.sum(0)
    sol = jnp.linalg.solve(A, b)
    sol2 = jsl.solve_triangular(jnp.tril(A), b, lower=True)
    return sol @ sol + sol2.sum()


def sci_eigh_sym(w):
    """a matrix function of a symmetric matrix: V f(lambda) V^T (sign-free in V)"""
    A = 0.5 * (w + w.T) + jnp.diag(jnp.array([0.0, 1.5, 3.0]))
    evals, evecs = jnp.linalg.eigh(A)
    expA = evecs @ jnp.diag(jnp.exp(0.3 * evals)) @ evecs.T
    return jnp.trace(expA) + expA[0, 1] + evals[0]


def _rk4_step(f, y, t, dt, *args):
    k1 = f(y, t, *args)
    k2 = f(y + dt / 2 * k1, t + dt / 2, *args)
    k3 = f(y + dt / 2 * k2, t + dt / 2, *args)
    k4 = f(y + dt * k3, t + dt, *args)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def _damped(y, t, k, c):
    pos, vel = y
    return jnp.stack([vel, -k * pos - c * vel + 0.1 * jnp.sin(t)])


def sci_rk4_loop(theta):
    """an odeint-like RK4 loop over a generic step taking the vector field"""
    y, t, dt = jnp.array([1.0, 0.0]), 0.0, 0.1
    ys = []
    for _ in range(10):
        y = _rk4_step(_damped, y, t, dt, theta[0], theta[1])
        t += dt
        ys.append(y[0])
    return jnp.stack(ys).sum() + y[1] ** 2


def sci_newton_while(a):
    """Newton's method for x^3 + a x = b in lax.while_loop, the tolerance in the test"""
    b = 2.0

    def cond(state):
        x, it = state
        return (jnp.abs(x ** 3 + a[0] * x - b) > 1e-13) & (it < 50)

    def body(state):
        x, it = state
        return x - (x ** 3 + a[0] * x - b) / (3 * x ** 2 + a[0]), it + 1

    x, _ = lax.while_loop(cond, body, (jnp.asarray(1.0), 0))
    return x * a[1]


@jax.custom_jvp
def cube_root_solve(a, b):
    """the root of x^3 + a x - b by Newton in a while_loop; its derivative by the implicit
    function theorem"""
    def cond(x):
        return jnp.abs(x ** 3 + a * x - b) > 1e-12

    def body(x):
        return x - (x ** 3 + a * x - b) / (3 * x ** 2 + a)
    return lax.while_loop(cond, body, jnp.ones_like(a))


@cube_root_solve.defjvp
def _cube_root_jvp(primals, tangents):
    a, b = primals
    da, db = tangents
    x = cube_root_solve(a, b)
    dx = (db - x * da) / (3 * x ** 2 + a)
    return x, dx


def sci_implicit_custom_jvp(theta):
    x = cube_root_solve(1.0 + theta[0] ** 2, 2.0 + theta[1])
    return x ** 2 + jnp.sin(x)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, a, x_guess):
    def cond(carry):
        x_prev, x = carry
        return jnp.max(jnp.abs(x_prev - x)) > 1e-12

    def body(carry):
        _, x = carry
        return x, f(a, x)
    _, x_star = lax.while_loop(cond, body, (x_guess, f(a, x_guess)))
    return x_star


def _fixed_point_fwd(f, a, x_init):
    x_star = fixed_point(f, a, x_init)
    return x_star, (a, x_star)


def _rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = jax.vjp(lambda x: f(a, x), x_star)
    return x_star_bar + vjp_x(u)[0]


def _fixed_point_rev(f, res, x_star_bar):
    a, x_star = res
    _, vjp_a = jax.vjp(lambda a: f(a, x_star), a)
    a_bar, = vjp_a(fixed_point(functools.partial(_rev_iter, f), (a, x_star, x_star_bar),
                               x_star_bar))
    return a_bar, jnp.zeros_like(x_star)


fixed_point.defvjp(_fixed_point_fwd, _fixed_point_rev)


def _newton_sqrt_map(a, x):
    return 0.5 * (x + a / x)


def sci_fixed_point_custom_vjp(a):
    """the JAX docs' fixed_point with a custom_vjp: sqrt by a Newton map, differentiated
    implicitly"""
    return jnp.sum(fixed_point(_newton_sqrt_map, a, jnp.ones_like(a)) ** 3)


@jax.checkpoint
def _remat_block(w, h):
    return jnp.tanh(h @ w) + 0.1 * h


@functools.partial(jax.remat, static_argnums=(2,))
def _remat_repeat(w, h, n):
    for _ in range(n):
        h = jnp.sin(h @ w)
    return h


def sci_checkpoint_decorators(w, x):
    h = x
    for _ in range(3):
        h = _remat_block(w, h)
    return (h ** 2).sum() + _remat_repeat(w, x, 2).sum()


def sci_named_call(w, x):
    def block(h):
        return jnp.tanh(h @ w)
    h = jax.named_call(block, name="block1")(x)
    h = jax.named_call(block, name="block2")(h)
    return (h ** 2).mean()


@jax.custom_jvp
def log1pexp(x):
    return jnp.log1p(jnp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return log1pexp(x), x_dot * expit(x)


def sci_custom_jvp_softplus(w, x, y):
    """a logistic loss through a user's numerically stable log1pexp"""
    z = x @ w
    return jnp.mean(log1pexp(z) - (y > 0) * z)


def sci_expm_logm(w):
    A = 0.3 * (w - w.T) + 0.1 * w
    E = jsl.expm(A)
    return jnp.trace(E) + (E ** 2).sum() + jnp.linalg.det(E + jnp.eye(3))


# --- Python idioms -----------------------------------------------------------------------------------
def logged(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapper


def timed(label="step"):
    def deco(f):
        @functools.wraps(f)
        def inner(*args, **kwargs):
            out = f(*args, **kwargs)
            return out
        return inner
    return deco


@logged
@timed(label="mse")
def _mse(w, x, *, target, weight=1.0):
    return weight * ((x @ w - target) ** 2).mean()


def py_forwarding_wrappers(w, x, y):
    kwargs = {"target": y, "weight": 2.0}
    return _mse(w, x, **kwargs) + _mse(*(w, x), target=y)


@jax.jit
@functools.partial(jax.vmap, in_axes=(None, 0))
def _per_example(w, xi):
    return jnp.tanh(xi @ w).sum()


def py_jit_over_vmap_decorators(w, x):
    return (_per_example(w, x) ** 2).sum()


def py_reduce_accumulate(ws, x):
    """functools.reduce(operator.add, ...) and itertools.accumulate over layers"""
    hs = list(itertools.accumulate(ws, lambda h, w: jnp.tanh(h @ w), initial=x))
    total = functools.reduce(operator.add, [(h ** 2).mean() for h in hs])
    prod = functools.reduce(operator.mul, [jnp.sum(w) for w in ws], 1.0)
    return total + 0.1 * prod


def py_map_list(ws, x):
    hs = list(map(lambda w: jnp.tanh(x @ w), ws))
    scores = list(map(jnp.vdot, hs, hs[::-1]))
    return sum(map(jnp.sum, scores)) + sum(map(lambda h: (h ** 2).sum(), hs))


def py_zip_strict(ws, x):
    bs = [0.1, -0.2]
    h = x
    for w, b in zip(ws, bs, strict=True):
        h = jnp.tanh(h @ w + b)
    return (h ** 2).sum()


def py_fstring_asserts(w, x):
    assert w.ndim == 2, f"expected a matrix, got shape {w.shape}"
    assert x.shape[-1] == w.shape[0], f"{x.shape=} does not fit {w.shape=}"
    n, d = x.shape
    h = jnp.tanh(x @ w)
    assert h.shape == (n, d), f"bad hidden shape {h.shape}"
    return (h ** 2).mean()


def _l2(tree):
    if isinstance(tree, dict):
        return sum(_l2(v) for v in tree.values())
    if isinstance(tree, (list, tuple)):
        return sum(_l2(v) for v in tree)
    if tree is None:
        return 0.0
    return jnp.sum(tree ** 2)


def py_isinstance_dispatch(params, x):
    h = jnp.tanh(x @ params["layers"][0]) @ params["layers"][1]
    return (h ** 2).mean() + 0.1 * _l2(params)


def py_early_return_loop(w, x):
    """a loop over a config that returns early (the config static)"""
    h = x
    for i, act in enumerate(["tanh", "sin", None, "cos"]):
        if act is None:
            return (h ** 2).sum() + i
        h = getattr(jnp, act)(h @ w)
    return h.sum()


def py_for_else(w, x):
    h = x
    for depth in range(5):
        h = jnp.tanh(h @ w)
        if depth == 10:
            break
    else:
        h = h * 2.0
    for k in (1, 2, 3):
        if k == 2:
            h = h + 0.5
            break
    else:
        h = h * 0.0
    return (h ** 2).sum()


def py_nested_comprehension(w):
    n = w.shape[0]
    pairs = [w[i] * w[j] for i in range(n) for j in range(n) if i < j]
    grid = [[jnp.sin(w[i] - w[j]) for j in range(n) if j != i] for i in range(n)]
    return sum(pairs) + sum(sum(row) for row in grid) + sum(x ** 2 for x in w)


def py_sorted_items(params, x):
    h = x
    for name, w in sorted(params.items(), key=lambda kv: kv[0], reverse=True):
        h = jnp.tanh(h @ w) if name.startswith("w") else h + w
    return (h ** 2).sum() + sum(jnp.sum(v) for _, v in sorted(params.items()))


class Activation(enum.Enum):
    TANH = "tanh"
    GELU = "gelu"
    SOFTPLUS = "softplus"


@dataclasses.dataclass(frozen=True)
class Config:
    act: Activation = Activation.GELU
    depth: int = 2


def _activate(h, act):
    if act is Activation.TANH:
        return jnp.tanh(h)
    elif act == Activation.GELU:
        return jax.nn.gelu(h)
    return jax.nn.softplus(h)


def py_enum_config(w, x):
    total = 0.0
    for act in Activation:
        cfg = Config(act=act)
        h = x
        for _ in range(cfg.depth):
            h = _activate(h @ w, cfg.act)
        total = total + (h ** 2).mean()
    return total


class Layer(Protocol):
    def __call__(self, x: jax.Array) -> jax.Array: ...


class Scale:
    def __init__(self, s: float) -> None:
        self.s = s

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.s * x


def _compose(layers: list[Layer], x: jnp.ndarray) -> jnp.ndarray:
    for layer in layers:
        x = layer(x)
    return x


def py_typing_protocol(w: jax.Array, x: jnp.ndarray) -> jax.Array:
    layers: list[Layer] = [Scale(0.5), jnp.tanh, lambda h: h @ w, Scale(2.0)]
    out: jax.Array = _compose(layers, x @ w)
    return (out ** 2).sum()


class SlotLinear:
    __slots__ = ("w", "b")

    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return x @ self.w + self.b


def py_slots_class(w, x):
    lin = SlotLinear(w, jnp.ones(3) * 0.1)
    lin2 = SlotLinear(w.T, -0.1)
    return (jnp.tanh(lin2(jnp.tanh(lin(x)))) ** 2).sum()


class Weighted:
    def __init__(self, raw, temperature=2.0):
        self._raw = raw
        self.temperature = temperature

    @property
    def weight(self):
        return jax.nn.softmax(self._raw / self.temperature)

    @property
    def entropy(self):
        p = self.weight
        return -(p * jnp.log(p)).sum()


def py_properties(raw, x):
    m = Weighted(raw)
    return (x @ m.weight).var() + m.entropy


def py_none_default(w, x, mask=None, *, scale=None):
    if mask is None:
        mask = jnp.ones_like(x)
    scale = 1.0 if scale is None else scale
    return scale * ((x * mask) @ w).sum() + (w ** 2).sum()


def py_lambda_default_capture(w, x):
    fns = [lambda h, k=k: jnp.sin(k * h) for k in range(1, 4)]
    return sum((f(x @ w) ** 2).mean() for f in fns)


def py_dict_get_kwargs(w, x):
    cfg = {"l2": 0.1, "act": "tanh"}
    act = getattr(jnp, cfg.get("act", "sin"))
    l1 = cfg.get("l1", 0.0)
    h = act(x @ w)
    return (h ** 2).mean() + cfg["l2"] * (w ** 2).sum() + l1 * jnp.abs(w).sum()


def _metrics(w, x):
    h = jnp.tanh(x @ w)
    return (h ** 2).mean(), (h.sum(), h.shape[0])


def py_nested_unpack(w, x):
    loss, (total, n) = _metrics(w, x)
    (a, b), c = (loss, total), n
    return a + b / c


def py_star_unpack(w, x):
    first, *rest = jnp.split(x @ w, 3, axis=0)
    *init, last = rest
    head, *_ = w
    return (first ** 2).sum() + sum(jnp.sum(r) for r in init) + (last * head).sum()


PARAMS = {"w": vec(1705, 3, 3), "v": vec(1706, 3), "b": onp.array(0.1)}

CASES = [
    Case("pt_log_softmax_by_hand", pt_log_softmax_by_hand, (W33, X, LABELS)),
    Case("pt_layer_norm", pt_layer_norm, (W33, X)),
    Case("pt_transpose_gram", pt_transpose_gram, (W33, X)),
    Case("pt_reshape_minus_one", pt_reshape_minus_one, (W33, X)),
    Case("pt_astype_mask", pt_astype_mask, (W33, X)),
    Case("pt_method_chain", pt_method_chain, (W33, X)),
    Case("pt_at_chain", pt_at_chain, (W3, X)),
    Case("pt_max_min_axis", pt_max_min_axis, (W33, X)),
    Case("pt_squeeze_unsqueeze", pt_squeeze_unsqueeze, (W33, X)),
    Case("pt_swapaxes_attention", pt_swapaxes_attention, (W33, X)),
    Case("pt_flatten_ravel", pt_flatten_ravel, ({"w": W33, "b": vec(1704, 3)}, X)),
    Case("pt_matmul_everywhere", pt_matmul_everywhere, (W33, X)),
    Case("pt_stats_methods", pt_stats_methods, (W33, X)),
    Case("pt_inplace_style", pt_inplace_style, (W33, X)),
    Case("pt_view_permute", pt_view_permute, (W33, X)),
    Case("pt_argmax_onehot", pt_argmax_onehot, (W33, X)),
    Case("pt_cumsum_diff", pt_cumsum_diff, (W33, X)),
    Case("pt_module_forward", pt_module_forward, (W33, X)),
    Case("ox_adam_namedtuple", ox_adam_namedtuple, (PARAMS, X, Y)),
    Case("ox_clip_chain", ox_clip_chain, (PARAMS, X, Y)),
    Case("ox_tree_flatten_unflatten", ox_tree_flatten_unflatten, (PARAMS, X, Y)),
    Case("ox_jax_tree_map", ox_jax_tree_map, (PARAMS, X, Y)),
    Case("ox_ema_params", ox_ema_params, (PARAMS, X, Y)),
    Case("ox_schedule", ox_schedule, (PARAMS, X, Y)),
    Case("ox_masked_decay", ox_masked_decay, (PARAMS, X, Y)),
    Case("ox_scan_train_state", ox_scan_train_state, (PARAMS, X, Y)),
    Case("ox_global_norm_reduce", ox_global_norm_reduce, (PARAMS, X, Y)),
    Case("fx_dict_of_dicts", fx_dict_of_dicts, ({
        "dense1": {"kernel": vec(1707, 3, 4), "bias": vec(1708, 4)},
        "dense2": {"kernel": vec(1709, 4, 2), "bias": onp.zeros(2)}}, X)),
    Case("fx_frozen_dict", fx_frozen_dict, ({
        "dense1": {"kernel": vec(1712, 3, 4), "bias": vec(1713, 4)}}, X)),
    Case("fx_module_config", fx_module_config, ({
        "layers_0": {"kernel": vec(1714, 3, 3), "bias": vec(1715, 3)},
        "layers_1": {"kernel": vec(1716, 3, 1)}}, X, Y)),
    Case("fx_setup_lazy", fx_setup_lazy, ({
        "encoder": {"kernel": vec(1717, 3, 2), "bias": vec(1718, 2)},
        "decoder": {"kernel": vec(1719, 2, 3)}}, X)),
    Case("fx_target_net", fx_target_net, (
        {"w1": vec(1720, 3, 4), "w2": vec(1721, 4, 3)},
        {"w1": vec(1722, 3, 4), "w2": vec(1723, 4, 3)}, X, LABELS)),
    Case("fx_apply_variables", fx_apply_variables, (
        {"scale": pos(1724, 3), "bias": vec(1725, 3), "kernel": vec(1726, 3, 2)}, X)),
    Case("fx_sequential", fx_sequential, (
        [{"kernel": vec(1727, 3, 3), "bias": vec(1728, 3)},
         {"kernel": vec(1729, 3, 3), "bias": vec(1730, 3)}], X)),
    Case("fx_struct_replace", fx_struct_replace, (W3, X, Y)),
    Case("sci_special_mix", sci_special_mix, (W3, X)),
    Case("sci_norm_logpdf", sci_norm_logpdf, (onp.array([0.1, -0.3, 0.4]), X)),
    Case("sci_cholesky_solve", sci_cholesky_solve, (onp.array(-0.2), X, Y)),
    Case("sci_linalg_solve", sci_linalg_solve, (W33, X)),
    Case("sci_eigh_sym", sci_eigh_sym, (W33,)),
    Case("sci_rk4_loop", sci_rk4_loop, (onp.array([2.0, 0.3]),)),
    Case("sci_newton_while", sci_newton_while, (onp.array([1.5, 0.7]),)),
    Case("sci_implicit_custom_jvp", sci_implicit_custom_jvp, (onp.array([0.4, -0.3]),)),
    Case("sci_fixed_point_custom_vjp", sci_fixed_point_custom_vjp, (pos(1731, 3) + 1.0,)),
    Case("sci_checkpoint_decorators", sci_checkpoint_decorators, (W33, X)),
    Case("sci_named_call", sci_named_call, (W33, X)),
    Case("sci_custom_jvp_softplus", sci_custom_jvp_softplus, (W3, X, Y)),
    Case("sci_expm_logm", sci_expm_logm, (W33,)),
    Case("py_forwarding_wrappers", py_forwarding_wrappers, (W3, X, Y)),
    Case("py_jit_over_vmap_decorators", py_jit_over_vmap_decorators, (W33, X)),
    Case("py_reduce_accumulate", py_reduce_accumulate, ([W33, vec(1732, 3, 3)], X)),
    Case("py_map_list", py_map_list, ([W33, vec(1733, 3, 3)], X)),
    Case("py_zip_strict", py_zip_strict, ([W33, vec(1734, 3, 3)], X)),
    Case("py_fstring_asserts", py_fstring_asserts, (W33, X)),
    Case("py_isinstance_dispatch", py_isinstance_dispatch, (
        {"layers": [W33, vec(1735, 3, 2)], "extra": (W3, None)}, X)),
    Case("py_early_return_loop", py_early_return_loop, (W33, X)),
    Case("py_for_else", py_for_else, (W33, X)),
    Case("py_nested_comprehension", py_nested_comprehension, (vec(1736, 4),)),
    Case("py_sorted_items", py_sorted_items, ({"w1": W33, "w2": vec(1737, 3, 3),
                                               "bias": vec(1738, 3)}, X)),
    Case("py_enum_config", py_enum_config, (W33, X)),
    Case("py_typing_protocol", py_typing_protocol, (W33, X)),
    Case("py_slots_class", py_slots_class, (W33, X)),
    Case("py_properties", py_properties, (vec(1739, 3), X)),
    Case("py_none_default", py_none_default, (W3, X)),
    Case("py_lambda_default_capture", py_lambda_default_capture, (W33, X)),
    Case("py_dict_get_kwargs", py_dict_get_kwargs, (W33, X)),
    Case("py_nested_unpack", py_nested_unpack, (W33, X)),
    Case("py_star_unpack", py_star_unpack, (W33, X)),
]

# (program, transform) pairs JAX itself refuses (secant must refuse them with a SecantError)
JAX_REFUSES = {
    **{("sci_fixed_point_custom_vjp", t): "forward mode of a custom_vjp function"
       for t in ("jvp", "hessian")},
}

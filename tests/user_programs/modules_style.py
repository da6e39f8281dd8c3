"""Module systems, optimizers and training loops written by hand (issue 15, explore15j, the third
battery): equinox-like dataclass modules that are pytrees, filter-style partition/combine of a
model's arrays from its static parts, a haiku-like init/apply pair, a module with properties,
optax-like gradient transformations (SGD with momentum, Adam, global-norm clipping, chained) as
pure functions over pytrees, a learning-rate schedule, and training loops in lax.scan over
batches and lax.fori_loop over epochs."""
import dataclasses
from typing import Any, Callable, NamedTuple

import numpy as np

import secant as jax
import secant.numpy as jnp
from secant import lax, random, tree_util

from corpus import Case, vec

X = vec(950, 6, 3)
Y = vec(951, 6)
XB = vec(952, 3, 4, 3)           # 3 batches of 4 examples
YB = vec(953, 3, 4)


# --- equinox-like modules -----------------------------------------------------------------------
@tree_util.register_pytree_node_class
@dataclasses.dataclass
class Linear:
    weight: Any
    bias: Any

    def __call__(self, x):
        return x @ self.weight + self.bias

    def tree_flatten(self):
        return (self.weight, self.bias), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@tree_util.register_pytree_node_class
@dataclasses.dataclass
class MLP:
    layers: list
    activation: Callable = jnp.tanh

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)

    def tree_flatten(self):
        return (self.layers,), self.activation

    @classmethod
    def tree_unflatten(cls, activation, children):
        return cls(children[0], activation)


def _mlp():
    return MLP([Linear(vec(954, 3, 4), vec(955, 4)), Linear(vec(956, 4, 1), vec(957, 1))])


def mod_eqx_mlp(model, x, y):
    """equinox's loss: the model is the differentiated argument"""
    pred = jax.vmap(model)(x)[:, 0]
    return jnp.mean((pred - y) ** 2)


def is_array(x):
    """equinox's is_array: NumPy's arrays too (JAX's isinstance(x, jax.Array) is False for
    them eagerly, True for the same value traced)"""
    return isinstance(x, (np.ndarray, jnp.ndarray))


def partition(tree, keep):
    arrays = tree_util.tree_map(lambda x: x if keep(x) else None, tree)
    static = tree_util.tree_map(lambda x: None if keep(x) else x, tree)
    return arrays, static


def combine(*trees):
    def pick(*xs):
        for x in xs:
            if x is not None:
                return x
        return None
    return tree_util.tree_map(pick, *trees, is_leaf=lambda x: x is None)


def mod_partition_combine(params, x):
    """eqx.partition / eqx.combine by hand: the model mixes arrays and static settings"""
    model = {"w": params["w"], "b": params["b"], "depth": 2, "scale": 0.5}
    arrays, static = partition(model, is_array)

    def loss(arrays):
        m = combine(arrays, static)
        h = x
        for _ in range(m["depth"]):
            h = jnp.tanh(h @ m["w"] + m["b"]) * m["scale"]
        return jnp.sum(h ** 2)

    grads = jax.grad(loss)(arrays)
    arrays = tree_util.tree_map(lambda p, g: p - 0.1 * g, arrays, grads)
    return loss(arrays)


def haiku_like_transform(forward):
    """init/apply from a function that asks for its parameters by name"""
    def init(key, x):
        params = {}

        def get(name, shape):
            nonlocal key
            key, sub = random.split(key)
            params[name] = 0.3 * random.normal(sub, shape)
            return params[name]
        forward(get, x)
        return params

    def apply(params, x):
        return forward(lambda name, shape: params[name], x)
    return init, apply


def _forward(get, x):
    h = jnp.tanh(x @ get("w1", (3, 4)))
    return h @ get("w2", (4,))


def mod_haiku_like(x, y):
    init, apply = haiku_like_transform(_forward)
    params = init(random.PRNGKey(1), x)
    return jnp.mean((apply(params, x) - y) ** 2)


class Softplus:
    """a module whose weight is a property of its raw parameter"""

    def __init__(self, raw):
        self.raw = raw

    @property
    def weight(self):
        return jnp.log1p(jnp.exp(self.raw))

    def energy(self, x):
        return jnp.sum((x @ self.weight) ** 2)


def mod_property_weight(raw, x):
    return Softplus(raw).energy(x) / x.shape[0]


class BatchNorm(NamedTuple):
    mean: Any
    var: Any


def mod_batchnorm_state(w, x):
    """a layer that returns its new running statistics as state beside its output"""
    def layer(w, state, x, momentum=0.9):
        h = x @ w
        mu, var = jnp.mean(h, axis=0), jnp.var(h, axis=0)
        new = BatchNorm(momentum * state.mean + (1 - momentum) * mu,
                        momentum * state.var + (1 - momentum) * var)
        return (h - mu) / jnp.sqrt(var + 1e-5), new

    state = BatchNorm(jnp.zeros(w.shape[1]), jnp.ones(w.shape[1]))
    out, state = layer(w, state, x)
    out, state = layer(w, state, x + 0.1)
    return jnp.sum(jnp.tanh(out) ** 2) + jnp.sum(state.var)


def mod_tied_autoencoder(w, x):
    code = jnp.tanh(x @ w)
    recon = code @ w.T
    return jnp.mean((recon - x) ** 2)


# --- optax-like gradient transformations ----------------------------------------------------------
class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


def sgd_momentum(lr, beta):
    def init(params):
        return tree_util.tree_map(jnp.zeros_like, params)

    def update(grads, state, params=None):
        state = tree_util.tree_map(lambda m, g: beta * m + g, state, grads)
        return tree_util.tree_map(lambda m: -lr * m, state), state
    return GradientTransformation(init, update)


class AdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8):
    def init(params):
        zeros = tree_util.tree_map(jnp.zeros_like, params)
        return AdamState(jnp.zeros([], jnp.int32), zeros, zeros)

    def update(grads, state, params=None):
        mu = tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
        nu = tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g ** 2, state.nu, grads)
        count = state.count + 1
        mu_hat = tree_util.tree_map(lambda m: m / (1 - b1 ** count), mu)
        nu_hat = tree_util.tree_map(lambda v: v / (1 - b2 ** count), nu)
        updates = tree_util.tree_map(lambda m, v: m / (jnp.sqrt(v) + eps), mu_hat, nu_hat)
        return updates, AdamState(count, mu, nu)
    return GradientTransformation(init, update)


def clip_by_global_norm(max_norm):
    def init(params):
        return ()

    def update(grads, state, params=None):
        norm = jnp.sqrt(sum(jnp.sum(g ** 2) for g in tree_util.tree_leaves(grads)))
        factor = jnp.minimum(1.0, max_norm / norm)
        return tree_util.tree_map(lambda g: g * factor, grads), state
    return GradientTransformation(init, update)


def scale(step):
    return GradientTransformation(lambda params: (),
                                  lambda grads, state, params=None: (
                                      tree_util.tree_map(lambda g: step * g, grads), state))


def chain(*transforms):
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(grads, state, params=None):
        new_state = []
        for t, s in zip(transforms, state):
            grads, s = t.update(grads, s, params)
            new_state.append(s)
        return grads, tuple(new_state)
    return GradientTransformation(init, update)


def apply_updates(params, updates):
    return tree_util.tree_map(lambda p, u: p + u, params, updates)


def _mlp_loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)


def _fit(optimizer, params, x, y, steps=3):
    state = optimizer.init(params)
    for _ in range(steps):
        grads = jax.grad(_mlp_loss)(params, x, y)
        updates, state = optimizer.update(grads, state, params)
        params = apply_updates(params, updates)
    return _mlp_loss(params, x, y)


def opt_sgd_momentum(params, x, y):
    return _fit(sgd_momentum(0.1, 0.9), params, x, y)


def opt_adam_tree(params, x, y):
    return _fit(chain(scale_by_adam(), scale(-0.05)), params, x, y)


def opt_clip_chain(params, x, y):
    """global-norm clipping (active: the norm is above 0.05) before Adam"""
    return _fit(chain(clip_by_global_norm(0.05), scale_by_adam(), scale(-0.05)), params, x, y)


def cosine_decay(init_value, decay_steps):
    def schedule(count):
        frac = jnp.minimum(count, decay_steps) / decay_steps
        return init_value * 0.5 * (1 + jnp.cos(jnp.pi * frac))
    return schedule


def opt_schedule(params, x, y):
    schedule = cosine_decay(0.2, 4)
    for step in range(4):
        grads = jax.grad(_mlp_loss)(params, x, y)
        lr = schedule(step)
        params = tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return _mlp_loss(params, x, y)


# --- training loops in lax.scan / fori_loop -----------------------------------------------------
def _lin_loss(w, xb, yb):
    return jnp.mean((jnp.tanh(xb @ w) - yb) ** 2)


def train_scan_batches(w, xb, yb):
    """one epoch: scan over the batches, an SGD step in each; the last batch's loss after it"""
    def step(w, batch):
        x, y = batch
        loss, g = jax.value_and_grad(_lin_loss)(w, x, y)
        return w - 0.3 * g, loss
    w, losses = lax.scan(step, w, (xb, yb))
    return jnp.mean(losses) + _lin_loss(w, xb[0], yb[0])


def train_fori_epochs(w, xb, yb):
    """epochs in fori_loop, the batches of each in scan"""
    def epoch(i, w):
        def step(w, batch):
            return w - 0.2 * jax.grad(_lin_loss)(w, *batch), None
        w, _ = lax.scan(step, w, (xb, yb))
        return w
    w = lax.fori_loop(0, 2, epoch, w)
    return _lin_loss(w, xb.reshape(-1, 3), yb.reshape(-1))


def train_scan_opt_state(params, x, y):
    """the optimizer's state in the scan's carry beside the parameters"""
    opt = sgd_momentum(0.05, 0.8)

    def step(carry, _):
        params, state = carry
        grads = jax.grad(_mlp_loss)(params, x, y)
        updates, state = opt.update(grads, state)
        return (apply_updates(params, updates), state), _mlp_loss(params, x, y)
    (params, _), history = lax.scan(step, (params, opt.init(params)), None, length=3)
    return history[-1] + _mlp_loss(params, x, y)


def _params():
    return {"w1": vec(958, 3, 4), "b1": vec(959, 4), "w2": vec(960, 4)}


CASES = [
    Case("mod_eqx_mlp", mod_eqx_mlp, (_mlp(), X, Y)),
    Case("mod_partition_combine", mod_partition_combine,
         ({"w": vec(961, 3, 3), "b": vec(962, 3)}, X)),
    Case("mod_haiku_like", mod_haiku_like, (X, Y)),
    Case("mod_property_weight", mod_property_weight, (vec(963, 3, 2), X)),
    Case("mod_batchnorm_state", mod_batchnorm_state, (vec(964, 3, 2), X)),
    Case("mod_tied_autoencoder", mod_tied_autoencoder, (vec(965, 3, 2), X)),
    Case("opt_sgd_momentum", opt_sgd_momentum, (_params(), X, Y)),
    Case("opt_adam_tree", opt_adam_tree, (_params(), X, Y)),
    Case("opt_clip_chain", opt_clip_chain, (_params(), X, Y)),
    Case("opt_schedule", opt_schedule, (_params(), X, Y)),
    Case("train_scan_batches", train_scan_batches, (vec(966, 3), XB, YB)),
    Case("train_fori_epochs", train_fori_epochs, (vec(967, 3), XB, YB)),
    Case("train_scan_opt_state", train_scan_opt_state, (_params(), X, Y)),
]

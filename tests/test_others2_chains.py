"""Issue 15, code written by others (second round): optax-like gradient transformations written
by hand as (init, update) pairs chained together, weight-decay masks from tree_map_with_path,
tree_map with is_leaf, functools.partial of a loss with hyperparameters passed to grad, a loss
written with masks and jnp.where; checked against float64 finite differences, NumPy loops and
eager."""
import functools
from typing import NamedTuple

import numpy as np

import secant.numpy as jnp
from secant import grad, jit, tree_util, value_and_grad

from others15_check import assert_trees_close, check_grad, check_vmap, to_np, to_snp

RNG = np.random.default_rng(2626)
X = RNG.normal(size=(6, 3))
Y = RNG.normal(size=6)
PARAMS = {"dense": {"kernel": RNG.normal(size=(3, 2)), "bias": RNG.normal(size=2)},
          "head": {"kernel": RNG.normal(size=2), "bias": 0.1}}


def model_loss(params, x, y):
    h = jnp.tanh(x @ params["dense"]["kernel"] + params["dense"]["bias"])
    return jnp.mean((h @ params["head"]["kernel"] + params["head"]["bias"] - y) ** 2)


# --- optax-like (init, update) pairs, chained -------------------------------------------------------
class GradientTransformation(NamedTuple):
    init: object
    update: object


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8):
    def init(params):
        zeros = tree_util.tree_map(jnp.zeros_like, params)
        return {"mu": zeros, "nu": zeros, "count": 0}

    def update(updates, state, params=None):
        count = state["count"] + 1
        mu = tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["mu"], updates)
        nu = tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g ** 2, state["nu"], updates)
        updates = tree_util.tree_map(
            lambda m, v: (m / (1 - b1 ** count)) / (jnp.sqrt(v / (1 - b2 ** count)) + eps), mu, nu)
        return updates, {"mu": mu, "nu": nu, "count": count}

    return GradientTransformation(init, update)


def add_decayed_weights(rate, mask):
    def init(params):
        return ()

    def update(updates, state, params):
        updates = tree_util.tree_map(lambda g, p, m: g + rate * p * m, updates, params, mask)
        return updates, state

    return GradientTransformation(init, update)


def scale(step):
    return GradientTransformation(lambda params: (),
                                  lambda updates, state, params=None: (
                                      tree_util.tree_map(lambda g: step * g, updates), state))


def chain(*transforms):
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformation(init, update)


def apply_updates(params, updates):
    return tree_util.tree_map(lambda p, u: p + u, params, updates)


# weight decay on kernels only, the mask built from the parameter paths
MASK = tree_util.tree_map_with_path(
    lambda path, _: 1.0 if "kernel" in tree_util.keystr(path) else 0.0, PARAMS)


def test_chained_gradient_transformations(x64):
    assert MASK["dense"]["bias"] == 0.0 and MASK["head"]["kernel"] == 1.0
    opt = chain(scale_by_adam(), add_decayed_weights(1e-2, MASK), scale(-0.05))

    @jit
    def step(params, state, x, y):
        loss, g = value_and_grad(model_loss)(params, x, y)
        updates, state = opt.update(g, state, params)
        return apply_updates(params, updates), state, loss

    params = to_snp(PARAMS)
    state = opt.init(params)
    # NumPy reference of the same chain
    ref = to_np(PARAMS)
    mu = tree_util.tree_map(np.zeros_like, ref)
    nu = tree_util.tree_map(np.zeros_like, ref)
    for t in range(1, 4):
        params, state, loss = step(params, state, to_snp(X), to_snp(Y))
        g = to_np(grad(model_loss)(to_snp(ref), to_snp(X), to_snp(Y)))
        mu = tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, mu, g)
        nu = tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g ** 2, nu, g)
        upd = tree_util.tree_map(lambda m, v, p, k: -0.05 * ((m / (1 - 0.9 ** t)) / (
            np.sqrt(v / (1 - 0.999 ** t)) + 1e-8) + 1e-2 * p * k), mu, nu, ref, MASK)
        ref = tree_util.tree_map(lambda p, u: p + u, ref, upd)
        assert_trees_close(params, ref, rtol=1e-8, atol=1e-12)
    assert int(state[0]["count"]) == 3


# --- tree_map with is_leaf: (value, trainable) pairs ---------------------------------------------
def split_trainable(tree):
    is_pair = lambda x: isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], bool)
    values = tree_util.tree_map(lambda p: p[0], tree, is_leaf=is_pair)
    trainable = tree_util.tree_map(lambda p: p[1], tree, is_leaf=is_pair)
    return values, trainable


TAGGED = {"w": (RNG.normal(size=3), True), "scale": (np.array(2.0), False),
          "b": (RNG.normal(size=3), True)}


def tagged_loss(values, x):
    return jnp.sum(jnp.sin(values["w"] * x + values["b"]) * values["scale"])


def test_tree_map_is_leaf_trainable_mask(x64):
    values, trainable = split_trainable(TAGGED)
    x = RNG.normal(size=3)
    g = check_grad(tagged_loss, values, x)
    masked = tree_util.tree_map(lambda g, t: g if t else jnp.zeros_like(g), g, trainable)
    assert float(masked["scale"]) == 0.0 and np.any(np.asarray(masked["w"]) != 0)
    check_vmap(grad(tagged_loss), (values, RNG.normal(size=(4, 3))), in_axes=(None, 0))


# --- functools.partial of a loss with hyperparameters, passed to grad -------------------------
def regularised_loss(params, x, y, *, l2, huber_delta):
    r = x @ params["w"] - y
    a = jnp.abs(r)
    data = jnp.where(a < huber_delta, 0.5 * r ** 2, huber_delta * (a - 0.5 * huber_delta))
    return jnp.mean(data) + l2 * jnp.sum(params["w"] ** 2)


def test_partial_loss_keyword_hyperparameters(x64):
    loss = functools.partial(regularised_loss, l2=0.1, huber_delta=0.5)
    p = {"w": RNG.normal(size=3)}
    check_grad(loss, p, X, Y)
    g = grad(loss)(to_snp(p), to_snp(X), to_snp(Y))
    r = X @ p["w"] - Y
    dr = np.where(np.abs(r) < 0.5, r, 0.5 * np.sign(r))
    np.testing.assert_allclose(g["w"], X.T @ dr / 6 + 0.2 * p["w"], rtol=1e-10)
    assert_trees_close(jit(grad(loss))(to_snp(p), to_snp(X), to_snp(Y)), g, rtol=1e-10)
    per = check_vmap(grad(loss), (p, X[:, None, :], Y[:, None]), in_axes=(None, 0, 0))
    np.testing.assert_allclose(np.mean(np.asarray(per["w"]), 0), g["w"], rtol=1e-10)


# --- masked sequence loss: padding by a length mask ----------------------------------------------
def masked_mse(pred, target, lengths):
    t = jnp.arange(pred.shape[1])
    mask = t[None, :] < lengths[:, None]
    se = jnp.where(mask, (pred - target) ** 2, 0.0)
    return jnp.sum(se) / jnp.sum(mask)


def test_masked_sequence_loss(x64):
    pred, target = RNG.normal(size=(3, 5)), RNG.normal(size=(3, 5))
    lengths = to_snp(np.array([5, 2, 3]))
    g = check_grad(masked_mse, pred, target, lengths)
    mask = np.arange(5)[None] < np.array([5, 2, 3])[:, None]
    np.testing.assert_allclose(g, np.where(mask, 2 * (pred - target) / mask.sum(), 0.0),
                               rtol=1e-12)
    check_vmap(lambda p, t, n: masked_mse(p[None], t[None], n[None]), (pred, target, lengths))

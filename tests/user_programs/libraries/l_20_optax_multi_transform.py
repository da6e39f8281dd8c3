"""optax.multi_transform by hand: a labels pytree ("adam" for the body, "sgd" for the head,
"freeze" for an embedding table) chooses each leaf's optimizer; states kept per label in a
dict; updates merged back by tree_map over the labels; set_to_zero for frozen leaves."""
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


def sgd(lr, momentum=0.0):
    def init(params):
        return jax.tree_util.tree_map(jnp.zeros_like, params)

    def update(g, trace, params=None):
        trace = jax.tree_util.tree_map(lambda t, d: momentum * t + d, trace, g)
        return jax.tree_util.tree_map(lambda t: -lr * t, trace), trace
    return GradientTransformation(init, update)


def rmsprop(lr, decay=0.9, eps=1e-6):
    def init(params):
        return jax.tree_util.tree_map(jnp.zeros_like, params)

    def update(g, nu, params=None):
        nu = jax.tree_util.tree_map(lambda v, d: decay * v + (1 - decay) * d ** 2, nu, g)
        return jax.tree_util.tree_map(lambda d, v: -lr * d / (jnp.sqrt(v) + eps), g, nu), nu
    return GradientTransformation(init, update)


def set_to_zero():
    return GradientTransformation(
        lambda params: (),
        lambda g, state, params=None: (jax.tree_util.tree_map(jnp.zeros_like, g), state))


def multi_transform(transforms, labels):
    def masked(tree, label):
        return jax.tree_util.tree_map(lambda x, lab: x if lab == label else None, tree, labels)

    def init(params):
        return {k: t.init(masked(params, k)) for k, t in transforms.items()}

    def update(g, state, params=None):
        out, new_state = {}, {}
        for k, t in transforms.items():
            out[k], new_state[k] = t.update(masked(g, k), state[k], params)
        return _merge(out, labels), new_state
    return GradientTransformation(init, update)


def _merge(per_label, labels):
    flat, treedef = jax.tree_util.tree_flatten(labels)
    leaves = []
    for i, lab in enumerate(flat):
        leaves.append(jax.tree_util.tree_leaves(per_label[lab], is_leaf=lambda x: x is None)[i])
    return jax.tree_util.tree_unflatten(treedef, leaves)


labels = {"embed": "freeze", "body": {"w": "rms", "b": "rms"}, "head": "sgd"}
opt = multi_transform({"rms": rmsprop(0.02), "sgd": sgd(0.1, 0.5), "freeze": set_to_zero()},
                      labels)


def loss(params, ids, y):
    h = params["embed"][ids] @ params["body"]["w"] + params["body"]["b"]
    return jnp.mean((jnp.tanh(h) @ params["head"] - y) ** 2)


@jax.jit
def step(params, state, ids, y):
    value, g = jax.value_and_grad(loss)(params, ids, y)
    u, state = opt.update(g, state, params)
    return jax.tree_util.tree_map(lambda p, d: p + d, params, u), state, value


def main():
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(23), 3)
    params = {"embed": jax.random.normal(k1, (6, 3)), "body": {
        "w": jax.random.normal(k2, (3, 4)) * 0.5, "b": jnp.zeros(4)},
        "head": jax.random.normal(k3, (4,)) * 0.5}
    ids = jnp.array([0, 1, 2, 3, 4, 5, 1, 3])
    y = jnp.array([1.0, -1.0, 0.5, 0.0, 0.3, -0.2, -1.0, 0.0])
    state = opt.init(params)
    losses = []
    for _ in range(10):
        params, state, value = step(params, state, ids, y)
        losses.append(value)
    return {"losses": jnp.stack(losses), "params": params}

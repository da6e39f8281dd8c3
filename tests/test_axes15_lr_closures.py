"""Issue 15 (axes15): vmap and grad over an optimizer's learning rate, the optimizer built by a
factory as JAX users write it: a returned lambda or def closing over lr (a step function with
no fields but lr), an optax-like (init, update) namedtuple whose init closes over nothing, a
schedule, the step passed to a helper, run in a Python loop, lax.fori_loop and lax.scan.
vmap(train)(lrs) against a loop over lrs, grad(train) against float64 central differences,
jit of each against eager."""
from typing import Callable, NamedTuple

import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, jit, lax, tree_util, vmap

P0 = {"w": np.array([1.0, -2.0, 0.5]), "b": np.array(0.3)}
LRS = np.array([0.01, 0.1, 0.3])


def loss(p):
    return jnp.sum(jnp.sin(p["w"]) ** 2 + 0.1 * p["w"] ** 4) + (p["b"] - 1.0) ** 2


def start():
    return tree_util.tree_map(jnp.asarray, P0)


class GradientTransformation(NamedTuple):
    init: Callable
    update: Callable


def sgd_lambda(lr):
    return lambda p, g: tree_util.tree_map(lambda a, b: a - lr * b, p, g)


def sgd_def(lr):
    def step(p, g):
        return {"w": p["w"] - lr * g["w"], "b": p["b"] - lr * g["b"]}
    return step


def momentum_sgd(lr, momentum=0.9):
    def init_fn(params):            # closes over nothing
        return tree_util.tree_map(jnp.zeros_like, params)

    def update_fn(grads, state, params=None):
        m = tree_util.tree_map(lambda s, g: momentum * s + g, state, grads)
        return tree_util.tree_map(lambda v: -lr * v, m), m
    return GradientTransformation(init_fn, update_fn)


def apply_updates(p, u):
    return tree_util.tree_map(lambda a, b: a + b, p, u)


def run(opt, p, n):
    for _ in range(n):
        p = opt(p, grad(loss)(p))
    return p


def train_lambda(lr):
    opt = sgd_lambda(lr)
    p = start()
    for _ in range(3):
        p = opt(p, grad(loss)(p))
    return loss(p)


def train_def_passed(lr):
    return loss(run(sgd_def(lr), start(), 3))


def train_fori(lr):
    opt = sgd_lambda(lr)
    return loss(lax.fori_loop(0, 3, lambda i, p: opt(p, grad(loss)(p)), start()))


def train_optax(lr):
    opt = momentum_sgd(lr)
    p = start()
    state = opt.init(p)
    for _ in range(3):
        u, state = opt.update(grad(loss)(p), state, p)
        p = apply_updates(p, u)
    return loss(p)


def train_optax_scan(lr):
    opt = momentum_sgd(lr)

    def body(carry, _):
        p, s = carry
        u, s = opt.update(grad(loss)(p), s, p)
        return (apply_updates(p, u), s), loss(p)
    p = start()
    (p, _), history = lax.scan(body, (p, opt.init(p)), None, length=3)
    return loss(p) + 0.1 * jnp.sum(history)


# the same programs in NumPy float64 (the reference)
def loss_np(p):
    return np.sum(np.sin(p["w"]) ** 2 + 0.1 * p["w"] ** 4) + (p["b"] - 1.0) ** 2


def grad_np(p):
    return {"w": 2 * np.sin(p["w"]) * np.cos(p["w"]) + 0.4 * p["w"] ** 3,
            "b": 2 * (p["b"] - 1.0)}


def train_sgd_np(lr):
    p = {k: np.array(v, dtype=np.float64) for k, v in P0.items()}
    for _ in range(3):
        g = grad_np(p)
        p = {k: p[k] - lr * g[k] for k in p}
    return loss_np(p)


def train_momentum_np(lr, with_history=False):
    p = {k: np.array(v, dtype=np.float64) for k, v in P0.items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    history = 0.0
    for _ in range(3):
        history += loss_np(p)
        g = grad_np(p)
        m = {k: 0.9 * m[k] + g[k] for k in p}
        p = {k: p[k] - lr * m[k] for k in p}
    return loss_np(p) + (0.1 * history if with_history else 0.0)


CASES = [(train_lambda, train_sgd_np), (train_def_passed, train_sgd_np),
         (train_fori, train_sgd_np), (train_optax, train_momentum_np),
         (train_optax_scan, lambda lr: train_momentum_np(lr, True))]


def central(f, x, e=1e-6):
    return (f(x + e) - f(x - e)) / (2 * e)


@pytest.mark.parametrize("train, reference", CASES, ids=[c[0].__name__ for c in CASES])
def test_vmap_and_grad_over_the_learning_rate(train, reference, x64):
    want = np.array([reference(r) for r in LRS])
    np.testing.assert_allclose(train(0.1), want[1], rtol=1e-12)
    np.testing.assert_allclose(vmap(train)(jnp.asarray(LRS)), want, rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(train))(jnp.asarray(LRS)), want, rtol=1e-12)
    dwant = np.array([central(reference, r) for r in LRS])
    np.testing.assert_allclose(grad(train)(0.1), dwant[1], rtol=1e-6)
    np.testing.assert_allclose(jit(grad(train))(0.1), dwant[1], rtol=1e-6)
    np.testing.assert_allclose(vmap(grad(train))(jnp.asarray(LRS)), dwant, rtol=1e-6)


# --- optax.chain written by hand: closures over closures, an init returning () ---------------------
def scale(step):
    def init_fn(params):
        return ()

    def update_fn(updates, state, params=None):
        return tree_util.tree_map(lambda u: step * u, updates), state
    return GradientTransformation(init_fn, update_fn)


def trace(decay):
    def init_fn(params):
        return tree_util.tree_map(jnp.zeros_like, params)

    def update_fn(updates, state, params=None):
        m = tree_util.tree_map(lambda s, g: decay * s + g, state, updates)
        return m, m
    return GradientTransformation(init_fn, update_fn)


def chain(*transforms):
    def init_fn(params):
        return tuple(t.init(params) for t in transforms)

    def update_fn(updates, state, params=None):
        new = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new.append(s)
        return updates, tuple(new)
    return GradientTransformation(init_fn, update_fn)


def train_chain(lr, decay):
    opt = chain(trace(decay), scale(-lr))
    p = start()
    s = opt.init(p)
    for _ in range(3):
        u, s = opt.update(grad(loss)(p), s, p)
        p = apply_updates(p, u)
    return loss(p)


def train_chain_np(lr, decay):
    p = {k: np.array(v, dtype=np.float64) for k, v in P0.items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    for _ in range(3):
        g = grad_np(p)
        m = {k: decay * m[k] + g[k] for k in p}
        p = {k: p[k] - lr * m[k] for k in p}
    return loss_np(p)


def test_a_chain_of_transformations_over_lr_and_decay(x64):
    want = np.array([train_chain_np(r, 0.9) for r in LRS])
    np.testing.assert_allclose(vmap(train_chain, (0, None))(jnp.asarray(LRS), 0.9), want,
                               rtol=1e-12)
    decays = np.array([0.5, 0.9])
    np.testing.assert_allclose(vmap(train_chain, (None, 0))(0.1, jnp.asarray(decays)),
                               [train_chain_np(0.1, d) for d in decays], rtol=1e-12)
    dlr = np.array([central(lambda r: train_chain_np(r, 0.9), r) for r in LRS])
    np.testing.assert_allclose(vmap(grad(train_chain), (0, None))(jnp.asarray(LRS), 0.9), dlr,
                               rtol=1e-6)
    np.testing.assert_allclose(jit(grad(train_chain, 1))(0.1, 0.9),
                               central(lambda d: train_chain_np(0.1, d), 0.9), rtol=1e-6)
    np.testing.assert_allclose(grad(grad(train_chain))(0.1, 0.9),
                               central(lambda r: central(lambda q: train_chain_np(q, 0.9), r,
                                                         1e-4), 0.1, 1e-4), rtol=1e-4)

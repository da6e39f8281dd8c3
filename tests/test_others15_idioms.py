"""Issue 15, code written by others: idioms of user training scripts (a batch tuple unpacked,
functools.partial(jit, static_argnames=...), value_and_grad under jit, example_libraries'
optimizers, vmap with dict in_axes, .at[i].set with a batched index, keyword arguments, a
learning-rate schedule as a function argument, a closure built by a factory), under grad, vmap,
jit and their compositions; checked against float64 finite differences, a Python loop and
eager."""
import functools

import numpy as np

import secant
import secant.numpy as jnp
from secant import grad, jit, tree_util, vmap
from secant.example_libraries import optimizers

from others15_check import (assert_trees_close, check_grad, check_vmap, fd_grad,
                            to_snp)

RNG = np.random.default_rng(150150)
X = RNG.normal(size=(6, 2))
Y = X @ np.array([0.7, -1.2]) + 0.3


def loss(params, batch):
    inputs, targets = batch
    preds = inputs @ params["w"] + params["b"]
    return jnp.mean((preds - targets) ** 2)


P0 = {"w": np.zeros(2), "b": 0.0}


def test_batch_tuple_and_value_and_grad_under_jit(x64):
    params = to_snp(P0)
    batch = to_snp((X, Y))
    check_grad(loss, P0, (X, Y))
    step = jit(secant.value_and_grad(loss))
    value, g = step(params, batch)
    np.testing.assert_allclose(value, loss(params, batch), rtol=1e-12)
    assert_trees_close(g, fd_grad(loss, (params, batch)), rtol=1e-6)
    # per-example losses: vmap over the batch tuple's leading axis
    per = vmap(lambda p, xy: loss(p, (xy[0][None], xy[1][None])), in_axes=(None, 0))
    got = per(params, batch)
    np.testing.assert_allclose(got, (np.asarray(X) @ np.zeros(2) - Y) ** 2, rtol=1e-12)


@functools.partial(jit, static_argnames=("num_steps",))
def fit(params, x, y, lr, num_steps=50):
    for _ in range(num_steps):
        g = grad(loss)(params, (x, y))
        params = tree_util.tree_map(lambda p, g: p - lr * g, params, g)
    return params


def test_partial_jit_static_argnames_training_loop(x64):
    params = fit(to_snp(P0), to_snp(X), to_snp(Y), 0.1, num_steps=200)
    np.testing.assert_allclose(params["w"], [0.7, -1.2], atol=1e-2)
    np.testing.assert_allclose(params["b"], 0.3, atol=1e-2)
    # the same, eager, with fewer steps: equal
    eager = to_snp(P0)
    for _ in range(5):
        g = grad(loss)(eager, to_snp((X, Y)))
        eager = tree_util.tree_map(lambda p, g: p - 0.1 * g, eager, g)
    assert_trees_close(fit(to_snp(P0), to_snp(X), to_snp(Y), 0.1, num_steps=5), eager,
                       rtol=1e-10)


def test_example_libraries_optimizers(x64):
    opt_init, opt_update, get_params = optimizers.adam(0.05)
    opt_state = opt_init(to_snp(P0))

    @jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, grad(loss)(params, batch), opt_state)

    for i in range(300):
        opt_state = update(i, opt_state, to_snp((X, Y)))
    params = get_params(opt_state)
    assert float(loss(params, to_snp((X, Y)))) < 1e-4


def test_vmap_dict_in_axes(x64):
    def f(p, x):
        return jnp.sum(jnp.tanh(p["w"] * x) + p["b"])

    p = to_snp({"w": RNG.normal(size=(4, 3)), "b": 0.5})
    x = to_snp(RNG.normal(size=3))
    axes = ({"w": 0, "b": None}, None)
    for fn in (f, grad(f)):
        want = [fn({"w": p["w"][i], "b": p["b"]}, x) for i in range(4)]
        want = tree_util.tree_map(lambda *r: np.stack(r), *want)
        assert_trees_close(vmap(fn, in_axes=axes)(p, x), want)
        assert_trees_close(jit(vmap(fn, in_axes=axes))(p, x), want)


def test_at_set_with_batched_index(x64):
    def place(x, i, v):
        return jnp.sum(x.at[i].set(v * x[i] ** 2) * jnp.arange(1.0, 5.0))

    x = RNG.normal(size=4)
    idx = to_snp(np.array([0, 3, 1]))
    vs = RNG.normal(size=3)
    check_vmap(place, (x, idx, vs), in_axes=(None, 0, 0))
    check_vmap(grad(place), (x, idx, vs), in_axes=(None, 0, 0))
    check_vmap(grad(place, argnums=2), (x, idx, vs), in_axes=(None, 0, 0))
    for i in (0, 2):
        check_grad(lambda x: place(x, i, 1.5), x)


def smooth_l1(x, delta=1.0, *, reduce=True):
    a = jnp.abs(x)
    out = jnp.where(a < delta, 0.5 * x ** 2 / delta, a - 0.5 * delta)
    return jnp.sum(out) if reduce else out


def test_keyword_and_keyword_only_arguments(x64):
    x = np.array([-2.0, -0.3, 0.4, 1.7])
    check_grad(lambda x: smooth_l1(x, delta=0.5, reduce=True), x)
    check_grad(lambda x: smooth_l1(x, 2.0), x)
    g = grad(smooth_l1)(to_snp(x), 0.5)
    np.testing.assert_allclose(g, np.where(np.abs(x) < 0.5, x / 0.5, np.sign(x)), rtol=1e-12)
    check_vmap(lambda x: smooth_l1(x, reduce=False), (x,))
    check_vmap(grad(lambda x: smooth_l1(x, delta=0.5)), (RNG.normal(size=(3, 4)),))


def exponential_decay(step, base=0.1, rate=0.5, every=10):
    return base * rate ** (step / every)


def train_with_schedule(w, schedule, steps=4):
    for i in range(steps):
        w = w - schedule(i) * grad(lambda w: jnp.sum((w - 1.0) ** 4))(w)
    return jnp.sum(w ** 2)


def test_schedule_function_argument(x64):
    # (fixed points near the minimum: from a random draw far from it, four steps of
    # (w - 1) ** 4 blow up to gradients of 1e12, beyond what a finite difference resolves)
    w = np.array([0.3, 1.4, -0.2])
    f = lambda w: train_with_schedule(w, exponential_decay)
    check_grad(f, w)
    check_vmap(f, (np.array([[0.5, 1.2, 0.0], [1.1, -0.3, 0.8]]),))
    check_vmap(grad(f), (np.array([[0.5, 1.2, 0.0], [1.1, -0.3, 0.8]]),))


def make_loss(weight_decay):
    def loss_fn(w, x):
        return jnp.sum(jnp.sin(x @ w)) + weight_decay * jnp.sum(w ** 2)
    return loss_fn


def test_closure_from_a_factory(x64):
    loss_fn = make_loss(0.3)
    w, x = RNG.normal(size=2), X
    check_grad(loss_fn, w, x)
    check_vmap(grad(loss_fn), (RNG.normal(size=(3, 2)), x), in_axes=(0, None))
    # a second factory's loss is its own (the closure is read per function)
    other = make_loss(2.0)
    g1 = grad(loss_fn)(to_snp(w), to_snp(x))
    g2 = grad(other)(to_snp(w), to_snp(x))
    np.testing.assert_allclose(np.asarray(g2) - np.asarray(g1), 2 * (2.0 - 0.3) * w, rtol=1e-10)

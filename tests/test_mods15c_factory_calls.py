"""Issue 15 (mods15c): a factory returning nested defs (optax's sgd(learning_rate)) called
through a name only the running program binds, or with two ** unpackings
(`inner_factory(**other_hps, **hparams)`, inject_hyperparams). The call's value runs the
factory's runnable form, so the closures it returns are the objects its derivative's structure
reads; gradients against float64 central differences and closed forms, vmap against a loop."""
from typing import Callable, NamedTuple

import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, jit, vmap

from others15_check import check_grad, check_vmap


class Transform(NamedTuple):
    init: Callable
    update: Callable


def sgd(learning_rate, momentum=0.0):
    def init(params):
        return jnp.zeros_like(params)

    def update(g, trace):
        trace = g + momentum * trace
        return -learning_rate * trace, trace

    return Transform(init, update)


FACTORIES = {"sgd": sgd}
G = np.array([1.5, -2.0, 0.5])


def _steps(opt, g, n=2):
    trace = opt.init(g)
    total = 0.0
    for _ in range(n):
        u, trace = opt.update(g, trace)
        total = total + jnp.sum(u ** 2)
    return total


def _closed_form(lr, momentum, n=2):
    # u_k = -lr * g * (1 + m + ... + m^(k-1)): sum_k |u_k|^2 = lr^2 |g|^2 sum_k c_k^2
    c = [sum(momentum ** j for j in range(k + 1)) for k in range(n)]
    return lr ** 2 * np.sum(G ** 2) * sum(ci ** 2 for ci in c)


def test_factory_found_at_run_time(x64):
    def loss(lr, name):
        return _steps(FACTORIES[name](lr, momentum=0.5), jnp.asarray(G))

    np.testing.assert_allclose(loss(0.3, "sgd"), _closed_form(0.3, 0.5), rtol=1e-12)
    g = grad(loss)(0.3, "sgd")
    fd = (loss(0.3 + 1e-6, "sgd") - loss(0.3 - 1e-6, "sgd")) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    np.testing.assert_allclose(g, 2 * _closed_form(0.3, 0.5) / 0.3, rtol=1e-10)
    lrs = np.array([0.1, 0.3, 0.7])
    np.testing.assert_allclose(vmap(grad(loss), in_axes=(0, None))(lrs, "sgd"),
                               [grad(loss)(lr, "sgd") for lr in lrs], rtol=1e-12)


def _injected(factory):
    def wrapped(**kwargs):
        others = {k: v for k, v in kwargs.items() if k != "learning_rate"}
        numeric = [k for k in kwargs if k == "learning_rate"]

        def loss(lr, g):
            hparams = {k: lr for k in numeric}
            return _steps(factory(**others, **hparams), g)
        return loss
    return wrapped


def test_two_double_star_unpackings_of_a_closure_cell(x64):
    loss = _injected(sgd)(learning_rate=0.0, momentum=0.5)
    f = lambda lr: loss(lr, jnp.asarray(G))
    np.testing.assert_allclose(f(0.3), _closed_form(0.3, 0.5), rtol=1e-12)
    g = check_grad(f, 0.3)
    np.testing.assert_allclose(g, 2 * _closed_form(0.3, 0.5) / 0.3, rtol=1e-10)
    # the second derivative (the dicts merged read again by the derivative's derivative)
    np.testing.assert_allclose(grad(grad(f))(0.3), 2 * _closed_form(0.3, 0.5) / 0.09,
                               rtol=1e-10)
    np.testing.assert_allclose(jit(grad(f))(0.3), g, rtol=1e-12)
    check_vmap(grad(f), (np.array([0.1, 0.3, 0.7]),))


def test_two_double_star_unpackings_keep_keyword_order(x64):
    def scaled(a, b, c):
        return a * 1.0 + b * 10.0 + c * 100.0

    def f(x, kw, names):
        first = {k: x for k in names}
        return scaled(**kw, **first) * x

    f1 = lambda x: f(x, {"a": 2.0, "c": 3.0}, ["b"])
    np.testing.assert_allclose(f1(0.5), (2 + 5 + 300) * 0.5, rtol=1e-12)
    np.testing.assert_allclose(grad(f1)(0.5), 2 + 300 + 20 * 0.5, rtol=1e-12)
    f2 = lambda x: f(x, {"b": 2.0, "c": 3.0}, ["a"])
    np.testing.assert_allclose(grad(f2)(0.5), 20 + 300 + 2 * 0.5, rtol=1e-12)


def test_a_key_given_by_both_unpackings_is_pythons_type_error(x64):
    def scaled(a, b):
        return a + 10.0 * b

    def f(x, kw, names):
        first = {k: x for k in names}
        return scaled(**kw, **first)

    with pytest.raises(TypeError, match="multiple values for keyword argument 'b'"):
        f(0.5, {"a": 1.0, "b": 2.0}, ["b"])
    with pytest.raises(TypeError, match="multiple values for keyword argument 'b'"):
        grad(f)(0.5, {"a": 1.0, "b": 2.0}, ["b"])
    with pytest.raises(TypeError, match="multiple values for keyword argument 'b'"):
        vmap(f, in_axes=(0, None, None))(np.array([0.5, 1.0]), {"a": 1.0, "b": 2.0}, ["b"])

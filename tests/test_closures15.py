"""Issue 15: a nested def closing over a differentiated or batched value, returned from a factory
(or stored in a namedtuple, or returned from a closure), is an object of a pytree class made for
it (transformer/closures.py), so the values it closes over carry their derivative and batch
axis through it. Each shape under grad, grad(grad), jit(grad) and vmap, against float64 central
differences, closed forms and Python loops."""
import functools
from typing import Callable, NamedTuple

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, lax, vmap


@pytest.fixture
def x64():
    secant.config.update("enable_x64", True)
    yield
    secant.config.update("enable_x64", False)


def central(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


# --- a schedule: a factory returning a closure over its (differentiated) argument ---------------
def warmup_cosine(peak, warmup, total):
    def schedule(count):
        count = jnp.asarray(count, jnp.float64)
        warm = peak * count / warmup
        frac = jnp.clip((count - warmup) / (total - warmup), 0.0, 1.0)
        cosine = 0.5 * peak * (1 + jnp.cos(jnp.pi * frac))
        return jnp.where(count < warmup, warm, cosine)
    return schedule


def schedule_sum(peak):
    s = warmup_cosine(peak * peak, 3, 10)
    return s(1.0) + s(5.0)


def schedule_sum_np(peak):
    p = peak * peak
    return p / 3 + 0.5 * p * (1 + np.cos(np.pi * 2 / 7))


def test_schedule_closure(x64):
    c = 1 / 3 + 0.5 * (1 + np.cos(np.pi * 2 / 7))
    p = 0.4
    np.testing.assert_allclose(grad(schedule_sum)(p), 2 * p * c, rtol=1e-12)
    np.testing.assert_allclose(grad(schedule_sum)(p), central(schedule_sum_np, p), rtol=1e-8)
    np.testing.assert_allclose(jit(grad(schedule_sum))(p), 2 * p * c, rtol=1e-12)
    np.testing.assert_allclose(grad(grad(schedule_sum))(p), 2 * c, rtol=1e-12)
    ps = np.array([0.1, 0.4, -0.3])
    np.testing.assert_allclose(vmap(grad(schedule_sum))(ps), [2 * q * c for q in ps],
                               rtol=1e-12)
    np.testing.assert_allclose(vmap(schedule_sum)(ps), [schedule_sum_np(q) for q in ps],
                               rtol=1e-12)


# --- an optimizer: a namedtuple of (init, update) closures over a learning rate ------------------
class Transformation(NamedTuple):
    init: Callable
    update: Callable


def momentum(lr, beta):
    def init_fn(params):
        return jnp.zeros_like(params)

    def update_fn(g, velocity, params=None):
        velocity = beta * velocity + g
        return -lr * velocity, velocity
    return Transformation(init_fn, update_fn)


def loss(w):
    return jnp.sum((w - jnp.asarray([1.0, -2.0])) ** 2)


def trained_loss(lr):
    opt = momentum(lr, 0.5)
    w = jnp.asarray([0.3, 0.4])
    v = opt.init(w)
    for _ in range(4):
        u, v = opt.update(grad(loss)(w), v, w)
        w = w + u
    return loss(w)


def trained_loss_scan(lr):
    opt = momentum(lr, 0.5)

    def body(carry, _):
        w, v = carry
        u, v = opt.update(grad(loss)(w), v)
        return (w + u, v), None
    w = jnp.asarray([0.3, 0.4])
    (w, _), _ = lax.scan(body, (w, opt.init(w)), None, length=4)
    return loss(w)


def trained_loss_np(lr):
    w, v = np.array([0.3, 0.4]), np.zeros(2)
    for _ in range(4):
        v = 0.5 * v + 2 * (w - np.array([1.0, -2.0]))
        w = w - lr * v
    return np.sum((w - np.array([1.0, -2.0])) ** 2)


@pytest.mark.parametrize("f", [trained_loss, trained_loss_scan])
def test_namedtuple_of_closures(f, x64):
    lr = 0.1
    want = central(trained_loss_np, lr)
    np.testing.assert_allclose(f(lr), trained_loss_np(lr), rtol=1e-12)
    np.testing.assert_allclose(grad(f)(lr), want, rtol=1e-7)
    np.testing.assert_allclose(jit(grad(f))(lr), want, rtol=1e-7)
    np.testing.assert_allclose(grad(grad(f))(lr),
                               central(lambda r: central(trained_loss_np, r, 1e-4), lr, 1e-4),
                               rtol=1e-4)
    # vmap over lr: opt.init, a closure with no fields read from the batched namedtuple
    # (its one constant leaf broadcast gives the batch's size)
    lrs = np.array([0.05, 0.1, 0.2])
    np.testing.assert_allclose(vmap(f)(lrs), [trained_loss_np(r) for r in lrs], rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(f))(lrs), [central(trained_loss_np, r) for r in lrs],
                               rtol=1e-7)


# --- a closure returned from a closure -----------------------------------------------------------
def outer(w):
    def middle(v):
        def inner(x):
            return w * v * jnp.sin(x)
        return inner
    return middle


def nested_closures(w):
    m = outer(w)
    i = m(3.0 * w)
    return i(0.5)


def test_closure_returned_from_a_closure(x64):
    w = 0.7     # 3 w^2 sin(0.5)
    np.testing.assert_allclose(grad(nested_closures)(w), 6 * w * np.sin(0.5), rtol=1e-12)
    np.testing.assert_allclose(jit(grad(nested_closures))(w), 6 * w * np.sin(0.5), rtol=1e-12)
    np.testing.assert_allclose(grad(grad(nested_closures))(w), 6 * np.sin(0.5), rtol=1e-12)
    ws = np.array([0.7, -1.2])
    np.testing.assert_allclose(vmap(grad(nested_closures))(ws), 6 * ws * np.sin(0.5),
                               rtol=1e-12)


# --- functools.partial of a closure ----------------------------------------------------------
def make_partial(w):
    def h(a, x):
        return w * a * jnp.sin(x)
    return functools.partial(h, 2.0)


def partial_of_closure(w):
    p = make_partial(w * w)
    return p(w)


def test_partial_of_a_closure(x64):
    w = 0.7     # 2 w^2 sin(w)
    want = 4 * w * np.sin(w) + 2 * w * w * np.cos(w)
    np.testing.assert_allclose(grad(partial_of_closure)(w), want, rtol=1e-12)
    np.testing.assert_allclose(jit(grad(partial_of_closure))(w), want, rtol=1e-12)
    np.testing.assert_allclose(grad(grad(partial_of_closure))(w),
                               central(grad(partial_of_closure), w), rtol=1e-7)
    ws = np.array([0.7, -0.4, 1.3])
    np.testing.assert_allclose(vmap(grad(partial_of_closure))(ws),
                               4 * ws * np.sin(ws) + 2 * ws * ws * np.cos(ws), rtol=1e-12)


def test_a_closure_still_runs_as_the_function_it_is(x64):
    s = warmup_cosine(0.3, 3, 10)       # (called outside any transform: the plain function)
    assert callable(s) and s.__name__ == "schedule"
    np.testing.assert_allclose(s(1.0), 0.1, rtol=1e-12)
    np.testing.assert_allclose(jit(lambda p: warmup_cosine(p, 3, 10)(1.0))(0.3), 0.1,
                               rtol=1e-12)


def test_a_closure_over_a_list_changed_after_it_is_refused_not_copied(x64):
    # f reads acc when called, after the append: a closure object holding a copy of acc's
    # leaves made at the def would not see 2w; not converted, so refused as before
    def make(w):
        acc = [w]

        def f(x):
            return sum(acc) * x
        acc.append(2.0 * w)
        return f

    def loss(w):
        f = make(w)
        return f(1.0)
    assert float(loss(1.0)) == 3.0
    with pytest.raises(secant.SecantError, match="closes over acc"):
        grad(loss)(1.0)

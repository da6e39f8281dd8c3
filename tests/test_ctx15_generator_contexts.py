"""Issue 15: a @contextlib.contextmanager generator that sets up state a callee reads
(`with scaled(2.0): y = helper(x)`, the generator pushing on a global stack, or setting and
restoring a module-level config dict, or numpyro's substitute done as a generator). The
source transforms spelled the `with` out (`__enter__()`, the body, `__exit__()`), so a
derivative's reverse pass ran the callee again after the generator had popped its stack:
grad raised the user's own IndexError (`_STACK[-1]` on an empty stack), or was silently the
derivative without the context (cos(x) + cos(x) for 3 cos(3x) + cos(x) with a config dict),
and a `return` inside the block left the stack pushed. Such a with is now traced on each
call as a user class's with is (transformer/desugar.py _acting_context, trace_source.py
_context_generator runs the generator through). Checked against closed forms, float64
central differences, a Python loop and eager."""
import collections
import contextlib

import numpy as np
import pytest

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, jvp, vmap

from others15_check import check_vmap, fd_grad

_STACK = []


@contextlib.contextmanager
def scaled(s):
    _STACK.append(s)
    yield s
    _STACK.pop()


def helper(x):
    return x * _STACK[-1]


def pushed(x):
    with scaled(2.0):
        y = helper(x)
    return jnp.sum(jnp.sin(y))


CONFIG = {"scale": 1.0}


@contextlib.contextmanager
def config(**changes):
    old = dict(CONFIG)
    CONFIG.update(changes)
    try:
        yield
    finally:
        CONFIG.clear()
        CONFIG.update(old)


def configured(x):
    return x * CONFIG["scale"]


def set_and_restored(x):
    with config(scale=3.0):
        y = configured(x)
    return jnp.sum(jnp.sin(y)) + jnp.sum(configured(x))


def nested(x):
    with scaled(2.0):
        with scaled(3.0):
            y = helper(x)
        z = helper(x)
    return jnp.sum(jnp.sin(y)) + jnp.sum(jnp.sin(z))


def in_a_loop(x):
    out = 0.0
    for s in [1.0, 2.0, 3.0]:
        with scaled(s):
            out = out + jnp.sum(jnp.sin(helper(x)))
    return out


def returns_inside(x):
    with scaled(2.0):
        return helper(x)


def with_in_a_helper(x):
    return jnp.sum(jnp.sin(returns_inside(x)))


_DEQUE = collections.deque()
LOG = []


@contextlib.contextmanager
def on_a_deque(s):
    _DEQUE.append(s)
    try:
        yield
    finally:
        _DEQUE.pop()


def read_the_deque(x):
    return x * _DEQUE[-1]


def pushed_on_a_deque(x):
    with on_a_deque(2.0):
        y = read_the_deque(x)
    return jnp.sum(jnp.sin(y))


_BOUND = []


@contextlib.contextmanager
def pushed_by_a_bound_method(s):
    push = _BOUND.append
    push(s)
    yield
    _BOUND.pop()


def read_the_bound_stack(x):
    return x * _BOUND[-1]


def bound_method_push(x):
    with pushed_by_a_bound_method(2.0):
        y = read_the_bound_stack(x)
    return jnp.sum(jnp.sin(y))


def configured_by_argument(x, config):
    return x * config["scale"]


def config_handed_to_the_callee(x):
    with config(scale=3.0):
        y = configured_by_argument(x, CONFIG)
    return jnp.sum(jnp.sin(y)) + jnp.sum(configured(x))


# (the derivative and the second derivative's diagonal, in closed form)
CASES = {
    pushed: (lambda x: 2 * np.cos(2 * x), lambda x: -4 * np.sin(2 * x)),
    set_and_restored: (lambda x: 3 * np.cos(3 * x) + 1, lambda x: -9 * np.sin(3 * x)),
    nested: (lambda x: 3 * np.cos(3 * x) + 2 * np.cos(2 * x),
             lambda x: -9 * np.sin(3 * x) - 4 * np.sin(2 * x)),
    in_a_loop: (lambda x: np.cos(x) + 2 * np.cos(2 * x) + 3 * np.cos(3 * x),
                lambda x: -np.sin(x) - 4 * np.sin(2 * x) - 9 * np.sin(3 * x)),
    with_in_a_helper: (lambda x: 2 * np.cos(2 * x), lambda x: -4 * np.sin(2 * x)),
    pushed_on_a_deque: (lambda x: 2 * np.cos(2 * x), lambda x: -4 * np.sin(2 * x)),
    bound_method_push: (lambda x: 2 * np.cos(2 * x), lambda x: -4 * np.sin(2 * x)),
    config_handed_to_the_callee: (lambda x: 3 * np.cos(3 * x) + 1, lambda x: -9 * np.sin(3 * x)),
}
X = np.array([0.1, 0.2, 0.3])
XS = np.stack([X, 2 * X, -X])


@pytest.mark.parametrize("f", list(CASES), ids=lambda f: f.__name__)
def test_generator_context_read_by_a_callee(x64, f):
    d1, d2 = CASES[f]
    want = d1(X)
    np.testing.assert_allclose(fd_grad(f, (X,)), want, rtol=1e-6)
    np.testing.assert_allclose(grad(f)(X), want, rtol=1e-10)
    assert not _STACK and CONFIG == {"scale": 1.0}
    np.testing.assert_allclose(jit(grad(f))(X), want, rtol=1e-10)
    np.testing.assert_allclose(jvp(f, (X,), (np.ones(3),))[1], want.sum(), rtol=1e-10)
    np.testing.assert_allclose(vmap(grad(f))(XS), d1(XS), rtol=1e-10)
    assert not _STACK
    check_vmap(f, (XS,))
    np.testing.assert_allclose(grad(lambda x: jnp.sum(grad(f)(x)))(X), d2(X), rtol=1e-10)
    np.testing.assert_allclose(hessian(f)(X), np.diag(d2(X)), rtol=1e-10, atol=1e-12)
    assert not _STACK and CONFIG == {"scale": 1.0}


@contextlib.contextmanager
def substitute(data):
    """numpyro's substitute handler written as a generator."""
    _STACK.append(data)
    try:
        yield
    finally:
        _STACK.pop()


def sample(name, default):
    for data in reversed(_STACK):
        if name in data:
            return data[name]
    return default


def model(x):
    return jnp.sum(jnp.sin(sample("w", 1.0) * x))


def substituted_by_a_traced_value(x):
    with substitute({"w": x[0]}):
        return model(x)


@contextlib.contextmanager
def twice(a, b):
    with substitute({"w": a}):
        with substitute({"w": b}):
            yield b


def generator_in_a_generator(x):
    with twice(2.0, 5.0) as b:
        v = model(x) * b
    return v + model(x)


class Module:
    def __init__(self, s):
        self.s = s

    def __call__(self, x):
        with substitute({"w": self.s}):
            return model(x)


LAYER = Module(4.0)


def in_a_method(x):
    return LAYER(x) + model(x)


@pytest.mark.parametrize("f", [substituted_by_a_traced_value, generator_in_a_generator,
                               in_a_method], ids=lambda f: f.__name__)
def test_numpyro_like_substitute_as_a_generator(x64, f):
    want = fd_grad(f, (X,))
    np.testing.assert_allclose(grad(f)(X), want, rtol=1e-6)
    np.testing.assert_allclose(jit(grad(f))(X), want, rtol=1e-6)
    np.testing.assert_allclose(vmap(grad(f))(XS), np.stack([fd_grad(f, (x,)) for x in XS]),
                               rtol=1e-6, atol=1e-8)
    assert not _STACK
    hess = np.stack([(np.asarray(grad(f)(X + e)) - np.asarray(grad(f)(X - e))) / 2e-4
                     for e in 1e-4 * np.eye(3)])
    for h in (jacfwd(grad(f))(X), jacrev(grad(f))(X), hessian(f)(X)):
        np.testing.assert_allclose(h, hess, rtol=1e-6, atol=1e-7)
    assert not _STACK


@contextlib.contextmanager
def timing(name):
    LOG.append(f"start {name}")
    yield
    LOG.append(f"stop {name}")


def branchy(x):
    if x > 0:
        return jnp.sin(x)
    return x * x


def timed_branch(x):
    with timing("fit"):
        y = branchy(x)
    return 3.0 * y


def test_a_generator_sharing_no_state_with_the_callees_is_spelled_out(x64):
    """A logging context around a helper with a Python branch on its argument: the generator
    names only LOG, the helper reads no state, so the with is spelled out as before (traced, the
    branch on a traced value would be refused)."""
    LOG.clear()
    for x in (0.5, -0.5):
        want = 3 * np.cos(x) if x > 0 else 6 * x
        np.testing.assert_allclose(grad(timed_branch)(x), want, rtol=1e-12)
        np.testing.assert_allclose(fd_grad(timed_branch, (np.float64(x),)), want, rtol=1e-6)
    assert LOG[:2] == ["start fit", "stop fit"]
    LOG.clear()

"""Issue 15: a `with` of the user's context (a @contextmanager generator, a class with
__enter__/__exit__, an ExitStack entering one) that changes Python state the body then reads
without a call (`y = x * CONFIG["scale"]`, a closure's dict, `self.scale`), or reads through an
argument (`f(x, CONFIG)` with the body reading `cfg["scale"]`, or handing cfg to a callee).
The with was spelled out (`__enter__()`, the body, `__exit__()`), so grad's reverse pass read
the state again after __exit__ had restored it: silently cos(x) + 1 for 3 cos(3x) + 1, under
grad, vmap(grad), grad(grad) and jit(grad) (and a class handler's with, traced, recorded the
argument's reads to run after the with: jvp and vmap wrong too). Now a with whose body reads
a global, closure or `self` state directly is traced on each call as one calling a user
function is (transformer/desugar.py _reads_state), a with of an ExitStack entering a user's
context counts as the user's, and one whose body reads a mutable argument (a dict entry by a
string key, an attribute no array has, directly or in a callee it is handed to) is refused
naming the line (_refuse_argument_state): which object the caller passed is not known.
Checked against closed forms and float64 central differences."""
import contextlib

import numpy as np
import pytest

import secant.numpy as jnp
from secant import SecantError, grad, jit, jvp, vmap

from others15_check import fd_grad

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


class Config:
    def __init__(self, **changes):
        self.changes = changes

    def __enter__(self):
        self.old = dict(CONFIG)
        CONFIG.update(self.changes)

    def __exit__(self, *exc):
        CONFIG.clear()
        CONFIG.update(self.old)


def scaled_by(x, cfg):
    return x * cfg["scale"]


class Options:
    scale = 1.0


OPTIONS = Options()


@contextlib.contextmanager
def options(scale):
    old = OPTIONS.scale
    OPTIONS.scale = scale
    try:
        yield
    finally:
        OPTIONS.scale = old


def argument_read_in_the_body(x, cfg):
    with config(scale=3.0):
        y = x * cfg["scale"]
    return jnp.sum(jnp.sin(y)) + jnp.sum(x * cfg["scale"])


def argument_handed_to_a_callee(x, cfg):
    with config(scale=3.0):
        y = scaled_by(x, cfg)
    return jnp.sum(jnp.sin(y)) + jnp.sum(scaled_by(x, cfg))


def argument_under_a_class_handler(x, cfg):
    with Config(scale=3.0):
        y = scaled_by(x, cfg)
    return jnp.sum(jnp.sin(y)) + jnp.sum(scaled_by(x, cfg))


def argument_under_an_exit_stack(x, cfg):
    with contextlib.ExitStack() as stack:
        stack.enter_context(config(scale=3.0))
        y = x * cfg["scale"]
    return jnp.sum(jnp.sin(y)) + jnp.sum(x * cfg["scale"])


def object_argument(x, opts):
    with options(3.0):
        y = x * opts.scale
    return jnp.sum(jnp.sin(y)) + jnp.sum(x * opts.scale)


def list_argument(x, configs):
    with config(scale=3.0):
        y = x * configs[0]["scale"]
    return jnp.sum(jnp.sin(y)) + jnp.sum(x * configs[0]["scale"])


X = np.array([0.1, 0.2, 0.3])
XS = np.stack([X, 2 * X, -X])


def d1(x):          # d/dx of sum(sin(3x)) + sum(x)
    return 3 * np.cos(3 * x) + 1


def d2(x):
    return -9 * np.sin(3 * x)


@pytest.mark.parametrize("f, arg", [
    (argument_read_in_the_body, CONFIG), (argument_handed_to_a_callee, CONFIG),
    (argument_under_a_class_handler, CONFIG), (argument_under_an_exit_stack, CONFIG),
    (object_argument, OPTIONS), (list_argument, [CONFIG])], ids=lambda v: getattr(
        v, "__name__", type(v).__name__))
def test_a_context_around_reads_of_a_mutable_argument_is_refused(x64, f, arg):
    """The caller passes the very object the context changes: the value differs from what
    the body reads outside the with (was: grad silently cos(x) + 1 for 3 cos(3x) + 1)."""
    np.testing.assert_allclose(fd_grad(lambda x: f(x, arg), (X,)), d1(X), rtol=1e-6)
    for run in (lambda: grad(f)(X, arg), lambda: jit(grad(f))(X, arg),
                lambda: vmap(grad(f), in_axes=(0, None))(XS, arg),
                lambda: jvp(lambda x: f(x, arg), (X,), (np.ones(3),))):
        with pytest.raises(SecantError, match=r"(?s)reads the argument .*"
                                              r"test_ctxparam15_argument_contexts.py:"):
            run()
    assert CONFIG == {"scale": 1.0} and OPTIONS.scale == 1.0


def global_read_in_the_body(x):
    with config(scale=3.0):
        y = x * CONFIG["scale"]
    return jnp.sum(jnp.sin(y)) + jnp.sum(x * CONFIG["scale"])


def _closure():
    state = {"scale": 1.0}

    @contextlib.contextmanager
    def scaled(s):
        old = state["scale"]
        state["scale"] = s
        try:
            yield
        finally:
            state["scale"] = old

    def closure_read_in_the_body(x):
        with scaled(3.0):
            y = x * state["scale"]
        return jnp.sum(jnp.sin(y)) + jnp.sum(x * state["scale"])
    return closure_read_in_the_body


closure_read_in_the_body = _closure()


class Layer:
    def __init__(self):
        self.scale = 1.0

    def __enter__(self):
        self.old, self.scale = self.scale, 3.0
        return self

    def __exit__(self, *exc):
        self.scale = self.old

    @contextlib.contextmanager
    def scaled(self, s):
        old, self.scale = self.scale, s
        try:
            yield
        finally:
            self.scale = old

    def apply(self, x):
        return x * self.scale

    def loss(self, x):
        with self:
            y = x * self.scale
        return jnp.sum(jnp.sin(y)) + jnp.sum(x * self.scale)

    def loss_by_a_method_generator(self, x):
        with self.scaled(3.0):
            y = self.apply(x)
        return jnp.sum(jnp.sin(y)) + jnp.sum(self.apply(x))


LAYER = Layer()


def self_attribute_read_in_the_body(x):
    return LAYER.loss(x)


def method_generator_on_self(x):
    return LAYER.loss_by_a_method_generator(x)


@pytest.mark.parametrize("f", [global_read_in_the_body, closure_read_in_the_body,
                               self_attribute_read_in_the_body, method_generator_on_self],
                         ids=lambda f: f.__name__)
def test_state_the_context_sets_read_in_the_body(x64, f):
    """Read without a call (a global's or closure's dict, `self.scale`), or with the context a
    generator method of self: traced on each call (was: spelled out, grad cos(x) + 1)."""
    np.testing.assert_allclose(fd_grad(f, (X,)), d1(X), rtol=1e-6)
    np.testing.assert_allclose(grad(f)(X), d1(X), rtol=1e-10)
    np.testing.assert_allclose(jit(grad(f))(X), d1(X), rtol=1e-10)
    np.testing.assert_allclose(jvp(f, (X,), (np.ones(3),))[1], d1(X).sum(), rtol=1e-10)
    np.testing.assert_allclose(vmap(grad(f))(XS), d1(XS), rtol=1e-10)
    np.testing.assert_allclose(vmap(f)(XS), [f(x) for x in XS], rtol=1e-10)
    np.testing.assert_allclose(grad(lambda x: jnp.sum(grad(f)(x)))(X), d2(X), rtol=1e-10)
    assert CONFIG == {"scale": 1.0} and LAYER.scale == 1.0


def global_under_an_exit_stack(x):
    with contextlib.ExitStack() as stack:
        stack.enter_context(config(scale=3.0))
        y = x * CONFIG["scale"]
    return jnp.sum(jnp.sin(y)) + jnp.sum(x * CONFIG["scale"])


def test_an_exit_stack_entering_a_users_context_is_not_spelled_out(x64):
    """ExitStack is a library's context, but what it enters is the user's: was spelled out
    (grad cos(x) + 1); the trace cannot run an ExitStack either, so it is refused."""
    np.testing.assert_allclose(fd_grad(global_under_an_exit_stack, (X,)), d1(X), rtol=1e-6)
    with pytest.raises(SecantError, match="ExitStack"):
        grad(global_under_an_exit_stack)(X)
    assert CONFIG == {"scale": 1.0}

"""Issue 15: effect handlers as numpyro writes them: `with handler:` pushes the handler on a
global stack (its __enter__), a function called inside reads the stack, __exit__ pops it. The
source transforms spelled the `with` out as `context.__enter__()`, the body, `__exit__()`
(transformer/desugar.py with_block), so a derivative's reverse pass ran the body's calls again
(site_vjp(...)) after __exit__, on an empty stack: grad was silently the derivative without
the handlers (cos(x) for 6 cos(6x)), and a `return` inside the block skipped __exit__ (vmap
of grad left both handlers on the stack). A `with` of a user's context around calls of user
functions is now traced on each call (transformer/trace_source.py follows __enter__/__exit__
of the objects it meets), or refused naming the line. Checked against closed forms, float64
central differences, a Python loop and eager."""
import contextlib

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from secant import grad, jit, vmap

from others15_check import check_vmap, fd_grad

_STACK = []


class Scale:
    def __init__(self, s):
        self.s = s

    def __enter__(self):
        _STACK.append(self)
        return self

    def __exit__(self, *exc):
        assert _STACK.pop() is self


def site(x):
    for h in _STACK:
        x = x * h.s
    return x


def nested(x):
    with Scale(2.0):
        with Scale(3.0):
            y = site(x)
    return jnp.sum(jnp.sin(y)) + jnp.sum(site(x))


def returns_inside(x):
    with Scale(2.0):
        return jnp.sum(jnp.sin(site(x)))


X = np.array([0.1, 0.2, 0.3])
XS = np.stack([X, 2 * X, -X])


def test_handlers_pushed_by_with_read_by_a_callee(x64):
    assert np.isclose(nested(X), np.sum(np.sin(6 * X)) + np.sum(X))
    want = 6 * np.cos(6 * X) + 1
    np.testing.assert_allclose(grad(nested)(X), want, rtol=1e-10)
    assert not _STACK
    np.testing.assert_allclose(fd_grad(nested, (X,)), want, rtol=1e-6)
    np.testing.assert_allclose(jit(grad(nested))(X), want, rtol=1e-10)
    assert not _STACK
    check_vmap(nested, (XS,))
    check_vmap(grad(nested), (XS,))
    np.testing.assert_allclose(vmap(grad(nested))(XS), 6 * np.cos(6 * XS) + 1, rtol=1e-10)
    assert not _STACK


def test_a_return_inside_the_with_block_still_exits(x64):
    np.testing.assert_allclose(grad(returns_inside)(X), 2 * np.cos(2 * X), rtol=1e-10)
    assert not _STACK
    check_vmap(returns_inside, (XS,))
    assert not _STACK
    np.testing.assert_allclose(vmap(grad(returns_inside))(XS), 2 * np.cos(2 * XS), rtol=1e-10)
    assert not _STACK


class Handler:
    """numpyro's Messenger: a callable that runs its function inside `with self:`."""
    def __init__(self, fn, s):
        self.fn, self.s = fn, s

    def __enter__(self):
        _STACK.append(self)
        return self

    def __exit__(self, *exc):
        assert _STACK.pop() is self

    def __call__(self, x):
        with self:
            return self.fn(x)


def model(x):
    return jnp.sum(jnp.sin(site(x)))


def handled(x):
    return Handler(Handler(model, 2.0), 3.0)(x)


@pytest.mark.parametrize("transform", ["grad", "jit(grad)", "vmap(grad)"])
def test_with_self_in_a_handler_call_is_right_or_refused(x64, transform):
    assert np.isclose(handled(X), np.sum(np.sin(6 * X)))
    f = {"grad": grad(handled), "jit(grad)": jit(grad(handled)),
         "vmap(grad)": vmap(grad(handled))}[transform]
    x = XS if transform == "vmap(grad)" else X
    try:
        got = f(x)
    except secant.SecantError as e:     # (never cos(x), the derivative without the handlers)
        assert "test_mods15_with_handlers.py" in str(e) and "with self" in str(e)
    else:
        np.testing.assert_allclose(got, 6 * np.cos(6 * x), rtol=1e-10)
    assert not _STACK


def push(h):
    _STACK.append(h)


def pop():
    _STACK.pop()


def pushed_by_append(x):
    _STACK.append(Scale(2.0))
    y = site(x)
    _STACK.pop()
    return jnp.sum(jnp.sin(y))


def pushed_by_a_helper(x):
    push(Scale(2.0))
    y = site(x)
    pop()
    return jnp.sum(jnp.sin(y))


@pytest.mark.parametrize("f", [pushed_by_append, pushed_by_a_helper])
def test_a_stack_pushed_and_popped_around_a_callee(x64, f):
    """The same without `with`: _STACK.append(h) / push(h), the callee, pop (grad was the
    derivative without the handler: cos(2x) for 2 cos(2x), silently)."""
    want = 2 * np.cos(2 * X)
    np.testing.assert_allclose(grad(f)(X), want, rtol=1e-10)
    np.testing.assert_allclose(fd_grad(f, (X,)), want, rtol=1e-6)
    np.testing.assert_allclose(jit(grad(f))(X), want, rtol=1e-10)
    np.testing.assert_allclose(vmap(grad(f))(XS), 2 * np.cos(2 * XS), rtol=1e-10)
    check_vmap(f, (XS,))
    assert not _STACK


LOG = []


@contextlib.contextmanager
def scaled(name):
    LOG.append(f"enter {name}")
    yield 2.0
    LOG.append(f"exit {name}")


class Timer:
    def __enter__(self):
        LOG.append("start")
        return self

    def __exit__(self, *exc):
        LOG.append("stop")


def helper(x):
    return jnp.sin(x)


def generator_context(x):
    with scaled("a") as c:
        y = helper(x) * c
    return jnp.sum(y)


def timed(x):
    with Timer():
        y = helper(x)
    return jnp.sum(3 * y)


@pytest.mark.parametrize("f, k", [(generator_context, 2.0), (timed, 3.0)])
def test_contexts_that_set_up_nothing_around_a_helper_still_differentiate(x64, f, k):
    LOG.clear()
    np.testing.assert_allclose(grad(f)(X), k * np.cos(X), rtol=1e-12)
    assert LOG[:2] in (["enter a", "exit a"], ["start", "stop"])
    np.testing.assert_allclose(jit(grad(f))(X), k * np.cos(X), rtol=1e-12)
    check_vmap(f, (XS,))
    np.testing.assert_allclose(vmap(grad(f))(XS), k * np.cos(XS), rtol=1e-12)


def logged(x):
    LOG.append("start")         # (a constant logged: not a handler, no trace needed)
    y = helper(x)
    if x > 0:                   # (a branch on a traced value: a trace would refuse it)
        y = y * 2
    LOG.append("stop")
    return y


def test_a_constant_log_around_a_helper_is_read_as_written(x64):
    LOG.clear()
    np.testing.assert_allclose(grad(logged)(0.5), 2 * np.cos(0.5), rtol=1e-12)
    np.testing.assert_allclose(grad(logged)(-0.5), np.cos(-0.5), rtol=1e-12)
    assert LOG[:2] == ["start", "stop"]
    check_vmap(logged, (np.array([0.5, -0.5]),))

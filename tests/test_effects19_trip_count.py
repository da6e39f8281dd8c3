"""A while loop's trip count, learnt while tracing by stepping its counters (perf19e,
secant/lax_control_flow.py trip_count), runs none of the body's Python side effects: a body
that has some (a print, log.append, an attribute counter bumped, in a callee too) keeps the
path that does not learn it, so each transform runs them as often as the loop as written did.
The reference for each count is the same loop with a float counter, which no trip count is
learnt from (the path before perf19e); values against float64 central differences."""
import numpy as np
import pytest

import secant
import secant.lax_control_flow as lcf
import secant.numpy as jnp
from secant import lax

STEPS = 5
log = []


class _State:
    calls = 0


state = _State()


def _loud(y):
    print("step")
    return jnp.sin(y) * 1.1


# each loop made twice: with an integer counter (its trip count can be learnt) and a float one
def appending(start):
    def f(x):
        def body(c):
            i, y = c
            log.append("step")
            return i + 1, jnp.sin(y) * 1.1
        return lax.while_loop(lambda c: c[0] < STEPS, body, (start, x))[1]
    return f


def bumping(start):
    def f(x):
        def body(c):
            i, y = c
            state.calls += 1
            return i + 1, jnp.sin(y) * 1.1
        return lax.while_loop(lambda c: c[0] < STEPS, body, (start, x))[1]
    return f


def printing_callee(start):
    def f(x):
        def body(c):
            i, y = c
            return i + 1, _loud(y)
        return lax.while_loop(lambda c: c[0] < STEPS, body, (start, x))[1]
    return f


def _appending_step(k, y):
    log.append("step")
    return jnp.sin(y) * 1.1


def in_inner_loop(start):
    def f(x):
        def body(c):
            i, y = c
            return i + 1, lax.fori_loop(0, 1, _appending_step, y)
        return lax.while_loop(lambda c: c[0] < STEPS, body, (start, x))[1]
    return f


def python_while(start):
    def f(x):
        i = start
        while i < STEPS:
            log.append("step")
            x = jnp.sin(x) * 1.1
            i += 1
        return x
    return f


TRANSFORMS = {
    "grad": secant.grad,
    "jit(grad)": lambda f: secant.jit(secant.grad(f)),
    "grad(grad)": lambda f: secant.grad(secant.grad(f)),
    "jit(grad(grad))": lambda f: secant.jit(secant.grad(secant.grad(f))),
}


def _count(f, transform, capsys):
    log.clear()
    state.calls = 0
    capsys.readouterr()
    value = float(TRANSFORMS[transform](f)(0.3))
    printed = capsys.readouterr().out.count("step")
    return len(log) + state.calls + printed, value


def _reference(x):
    for _ in range(STEPS):
        x = np.sin(x) * 1.1
    return x


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("make", [appending, bumping, printing_callee, in_inner_loop,
                                  python_while])
def test_effects_run_as_often_as_the_loop_without_a_trip_count(make, transform, capsys):
    counted, value = _count(make(0), transform, capsys)
    uncounted, _ = _count(make(0.0), transform, capsys)
    assert counted == uncounted
    if transform == "grad" and make is not in_inner_loop:  # eagerly: once per step, as written
        assert counted == STEPS
    if transform == "jit(grad)" and make is not python_while:  # traced, not stepped
        assert counted <= 2 * (1 + (make is in_inner_loop))
    x, h = 0.3, 1e-4
    if "grad(grad)" in transform:
        expected = (_reference(x + h) - 2 * _reference(x) + _reference(x - h)) / h ** 2
    else:
        expected = (_reference(x + h) - _reference(x - h)) / (2 * h)
    np.testing.assert_allclose(value, expected, rtol=2e-3 if "grad(grad)" in transform else 1e-5)


def _spy(monkeypatch):
    learnt = []
    count_steps = lcf._count_steps

    def spy(*args):
        learnt.append(count_steps(*args))
        return learnt[-1]
    monkeypatch.setattr(lcf, "_count_steps", spy)
    return learnt


def test_a_body_with_effects_is_not_stepped_to_learn_its_trip_count(monkeypatch):
    learnt = _spy(monkeypatch)
    f = appending(0)
    assert "count=False" in secant.source(secant.grad(f))
    log.clear()
    secant.jit(secant.grad(f))(0.3)
    secant.jit(secant.grad(secant.grad(f)))(0.3)
    assert learnt == []


def test_a_body_without_effects_still_learns_its_trip_count(monkeypatch):
    def f(x):
        return lax.while_loop(lambda c: c[0] < STEPS, lambda c: (c[0] + 1, jnp.sin(c[1]) * 1.1),
                              (0, x))[1]
    learnt = _spy(monkeypatch)
    assert "count=False" not in secant.source(secant.grad(f))
    x, h = 0.3, 1e-4
    expected = (_reference(x + h) - _reference(x - h)) / (2 * h)
    np.testing.assert_allclose(float(secant.jit(secant.grad(f))(x)), expected, rtol=1e-5)
    assert learnt == [STEPS]


def test_vmap_of_grad_keeps_the_body_unstepped(monkeypatch):
    learnt = _spy(monkeypatch)
    f = appending(0)
    xs = np.array([0.3, -0.7], np.float32)
    log.clear()
    got = secant.jit(secant.vmap(secant.grad(f)))(xs)
    assert learnt == [] and len(log) <= 2
    h = 1e-5
    expected = [(_reference(float(x) + h) - _reference(float(x) - h)) / (2 * h) for x in xs]
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4)

"""Closures that keep state (issue 15): a counter a factory's nested def rebinds through
`nonlocal`. Made inside the transformed function (`acc = counter()`), its state lives for one
call: the function is traced on each call instead (transformer/normalize.py
_check_not_stateful_closure), as JAX reads the Python state when it traces; checked in
tests/test_gaps15d_idioms.py under grad, hessian, jit, jit(grad), vmap, vmap(grad), jvp. A
counter that outlives the call (`step = make()` at module level) advances on each call in JAX's
eager transforms; secant cannot follow it and refuses it at its `nonlocal` line, never a stale
value; jit traces it once, as JAX does."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def make():
    n = 0

    def step(x):
        nonlocal n
        n += 1
        return x * n
    return step


def test_a_counter_that_outlives_the_call_is_refused_under_transforms(x64):
    step = make()

    def total(x):
        return snp.sum(step(x))

    x = np.array([1.0, 2.0])
    for t in (lambda: secant.grad(total)(x), lambda: secant.vmap(step)(x[None]),
              lambda: secant.jvp(step, (x,), (x,)), lambda: secant.vmap(total)(x[None])):
        with pytest.raises(secant.SecantError, match="nonlocal"):
            t()


def test_jit_reads_the_counter_once_per_trace(x64):
    step = make()
    f = secant.jit(step)
    x = np.array([1.0, 2.0])
    got = [np.asarray(f(x)) for _ in range(3)]      # traced once: n == 1 for every call
    for g in got:
        np.testing.assert_allclose(g, x)
    np.testing.assert_allclose(np.asarray(f(x[:1])), 2.0 * x[:1])   # traced again: n == 2


def test_each_call_makes_its_own_counter(x64):
    """acc = counter() inside the function: each call (and each example) starts at zero."""
    def counter():
        n = 0

        def inc(v):
            nonlocal n
            n = n + v * v
            return n
        return inc

    def f(x):
        acc = counter()
        acc(x[0])
        return acc(x[1]) * x[2]

    g = secant.grad(f)
    x = np.array([0.5, -1.5, 2.0])
    for _ in range(3):      # (the same answer on every call: no state carried over)
        np.testing.assert_allclose(np.asarray(g(x)), [2 * x[0] * x[2], 2 * x[1] * x[2],
                                                      x[0] ** 2 + x[1] ** 2], rtol=1e-12)
    xs = np.stack([x, x + 1.0])
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(xs)),
                               [(v[0] ** 2 + v[1] ** 2) * v[2] for v in xs], rtol=1e-12)

"""Closures that keep state (issue 15): a counter a factory's nested def rebinds through
`nonlocal`. Made inside the transformed function (`acc = counter()`), its state lives for one
call: the function is traced on each call instead (transformer/normalize.py
_check_not_stateful_closure), as JAX reads the Python state when it traces; checked in
tests/test_gaps15d_idioms.py under grad, hessian, jit, jit(grad), vmap, vmap(grad), jvp. A
counter that outlives the call (`step = make()` at module level) advances on each call in JAX's
eager transforms, once per call, and the derivative uses the new value (transformer/
global_writes.py reads and writes the user's own cell; tests/test_obj15k_state.py checks it
under every transform); jit traces it once, as JAX does."""
import numpy as np

import secant
import secant.numpy as snp


def make():
    n = 0

    def step(x):
        nonlocal n
        n += 1
        return x * n
    return step


def test_a_counter_that_outlives_the_call_advances_once_per_call(x64):
    step = make()

    def total(x):
        return snp.sum(step(x))

    x = np.array([1.0, 2.0])
    n = step.__closure__[0]
    for k, t in enumerate((lambda: secant.grad(total)(x), lambda: secant.vmap(step)(x[None])[0],
                           lambda: secant.jvp(step, (x,), (x,))[1],
                           lambda: secant.vmap(total)(x[None])[0] / x.sum())):
        got = np.asarray(t())
        assert n.cell_contents == k + 1            # once per transformed call, never twice
        want = [np.full(2, 1.0), x, x, 1.0][k] * (k + 1)
        np.testing.assert_allclose(got, want, rtol=1e-12)


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

"""Issue 15 (carry15l): loops whose carries mix batched and unbatched leaves (a counter, a
flag, a dict of constants, a list that grows, a NamedTuple) under vmap, vmap(grad),
jit(vmap), jit(vmap(grad)), vmap(hessian) and vmap(vmap), against Python loops over the
examples and central differences.

vmap batches a lax.while_loop's tuple carry leaf by leaf, as JAX does (a fixpoint per leaf:
batched if it enters batched or the body makes it so), so a counter no batched value reaches
stays one Python value for the batch and the loop's test stays unbatched (no loop while any
example continues, no select per step). jit(vmap(hessian)) of a loop growing a list traced
again with Python loops as written used the Jacobian's staged form a second time
(CarryChanged); it now reads the Jacobian as written there."""
from typing import NamedTuple

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

from user_programs.checks import turns

RNG = np.random.default_rng(1515)


class State(NamedTuple):
    value: object
    steps: int


# --- user programs: (x: a vector) -> a scalar -----------------------------------------------------
def python_while_counter(x):
    i = 0
    acc = x
    while i < 3:
        acc = snp.sin(acc) * 1.1 + 0.1 * i
        i += 1
    return snp.sum(acc ** 2)


def lax_while_tuple(x):
    def cond(c):
        i, v, d = c
        return i < 4

    def body(c):
        i, v, d = c
        return i + 1, snp.tanh(v) * d["s"] + 0.05 * i, {"s": d["s"] * 1.1}
    i, v, d = lax.while_loop(cond, body, (0, x, {"s": 1.5}))
    return snp.sum(v * d["s"]) + i


def lax_while_nested(x):
    """((value, counter), (scale, flag)): a nested tuple carry, the counter and flag
    unbatched."""
    def cond(c):
        (v, i), (s, done) = c
        return (i < 3) & ~done

    def body(c):
        (v, i), (s, done) = c
        return (snp.cos(v) * s + v, i + 1), (s * 0.9, i >= 5)
    (v, i), (s, done) = lax.while_loop(cond, body, ((x, 0), (1.2, False)))
    return snp.sum(v ** 2) * s


def lax_while_batched_test(x):
    """A test that reads the batched value: every leaf batched, each example its own count."""
    def cond(c):
        v, k = c
        return (snp.sum(v ** 2) < 30.0) & (k < 6)

    def body(c):
        v, k = c
        return v * 1.3 + 0.1, k + 1
    v, k = lax.while_loop(cond, body, (x, 0))
    return snp.sum(v) * (k + 1)


def lax_while_leaf_turns_batched(x):
    """(i, v, a, b): a unbatched on entry, batched after one step (the body's sum of v), b after
    two (b = a): the fixpoint batches both before the loop."""
    def cond(c):
        return c[0] < 4

    def body(c):
        i, v, a, b = c
        return i + 1, v * 0.9 + a * 0.1, snp.sum(v), a
    i, v, a, b = lax.while_loop(cond, body, (0, x, 0.0, 1.0))
    return snp.sum(v) * a + b


def lax_while_test_turns_batched(x):
    """The test reads a leaf that is unbatched on entry and batched after one step: the loop
    runs while any example continues, each example stopping at its own count."""
    def cond(c):
        i, v, s = c
        return (s < 2.0) & (i < 6)

    def body(c):
        i, v, s = c
        return i + 1, snp.sin(v) + v, s + snp.sum(v ** 2)
    i, v, s = lax.while_loop(cond, body, (0, x, 0.0))
    return snp.sum(v) * (i + 1) + s


def lax_while_named(x):
    def cond(s):
        return s.steps < 3

    def body(s):
        return State(snp.sin(s.value) + s.value * 0.5, s.steps + 1)
    out = lax.while_loop(cond, body, State(x, 0))
    return snp.sum(out.value ** 2) + out.steps


def fori_mixed(x):
    def body(i, c):
        v, total, count = c
        return snp.tanh(v * 1.2) + 0.1 * i, total + snp.sum(v), count + 1
    v, total, count = lax.fori_loop(0, 4, body, (x, 0.0, 0))
    return snp.sum(v) * total + count


def scan_mixed(x):
    def body(c, w):
        v, n = c
        v = snp.sin(v * w) + v
        return (v, n + 1), snp.sum(v) * n
    (v, n), ys = lax.scan(body, (x, 0), snp.array([0.5, 1.0, 1.5]))
    return snp.sum(v) + snp.sum(ys) + n


def python_while_growing_list(x):
    xs = [x]
    k = 1
    while k < 3:
        x = snp.sin(x) * 1.2
        xs = xs + [x]
        k += 1
    return snp.sum(xs[-1] * xs[0])


PROGRAMS = [python_while_counter, lax_while_tuple, lax_while_nested, lax_while_batched_test,
            lax_while_leaf_turns_batched, lax_while_test_turns_batched, lax_while_named,
            fori_mixed, scan_mixed, python_while_growing_list]
# vmap(grad) or vmap(hessian) of each program in turn (both of each under
# HYPOTHESIS_PROFILE=thorough); vmap, jit(vmap) and vmap(vmap) of every program
SECOND = turns(PROGRAMS, ["grad", "hessian"])


def _fd_grad(f, x, h=1e-6):
    out = np.zeros_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e.flat[j] = h
        out.flat[j] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return out


def _fd_jac(g, x, h=1e-5):
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e.flat[j] = h
        cols.append((np.asarray(g(x + e)) - np.asarray(g(x - e))) / (2 * h))
    return np.stack(cols, -1)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_and_jit_of_vmap_match_a_python_loop(x64, f):
    xs = RNG.normal(size=(4, 3)) * 0.7
    want = np.array([float(f(x)) for x in xs])
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(xs)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(f))(xs)), want, rtol=1e-12)
    grid = RNG.normal(size=(2, 3, 3)) * 0.7
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.vmap(f))(grid)),
                               [[float(f(x)) for x in row] for row in grid], rtol=1e-12)


@pytest.mark.parametrize("f", SECOND["grad"], ids=lambda f: f.__name__)
def test_vmap_of_grad_matches_central_differences(x64, f):
    xs = RNG.normal(size=(3, 3)) * 0.7
    want = np.stack([_fd_grad(f, x) for x in xs])
    g = secant.vmap(secant.grad(f))
    np.testing.assert_allclose(np.asarray(g(xs)), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(xs)), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", SECOND["hessian"], ids=lambda f: f.__name__)
def test_vmap_of_hessian_matches_central_differences(x64, f):
    xs = RNG.normal(size=(2, 3)) * 0.7
    g = secant.grad(f)
    want = np.stack([_fd_jac(g, x) for x in xs])
    h = secant.vmap(secant.hessian(f))
    np.testing.assert_allclose(np.asarray(h(xs)), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(secant.jit(h)(xs)), want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f, unbatched_test", [(lax_while_tuple, True), (lax_while_nested, True),
                                               (lax_while_leaf_turns_batched, True),
                                               (lax_while_test_turns_batched, False),
                                               (lax_while_batched_test, False)],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_a_counter_no_batched_value_reaches_stays_unbatched(x64, f, unbatched_test):
    """The batched loop as JAX writes it: a test that reads only unbatched leaves is one value
    for the batch (no loop while any example continues, no select per step), the counter is
    the Python number it was, and nothing unbatched is broadcast."""
    src = secant.source(secant.vmap(f))
    assert ("any_example(" not in src and "select_batched(" not in src) == unbatched_test, src
    if unbatched_test:
        assert "broadcast_batch(0," not in src, src

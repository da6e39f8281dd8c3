"""Idioms JAX accepts that secant refused (issue 15, gaps found by left15a and ops15b), each
checked under grad (float64 central differences), hessian (central differences of the checked
gradient), jit (eager), jit(grad), vmap (a Python loop), vmap(grad) and jvp (test_left15a_idioms
_check). The functions live at module level: the transforms read their source."""
import collections
import typing

import numpy as np
import pytest

import secant
import secant.numpy as snp
from test_left15a_idioms import TRANSFORMS, X, _check
from user_programs.checks import rotated


# --- an object with __jax_array__ passed to secant.numpy (JAX calls the method) ----------------
class Wrapped:
    def __init__(self, v):
        self.v = v

    def __jax_array__(self):
        return self.v * 2.0


def jax_array_in_place(x):
    return snp.sum(snp.sin(Wrapped(x))) * x[0]


def jax_array_held(x):
    w = Wrapped(x[:2])
    return snp.sum(snp.exp(w)) + snp.dot(w, x[2:])


# --- zip(*rows) as a comprehension's iterable (evaluated where it is written) -----------------
def zip_star_comprehension(x):
    rows = [[x[0], x[1]], [x[2], x[3]], [x[1], x[2]]]
    cols = [sum(c) for c in zip(*rows)]
    return cols[0] * cols[1]


def zip_star_generator(x):
    rows = [(x[0], x[3]), (x[1], x[2])]
    return sum(a * b for a, b in zip(*rows)) + max(len(c) for c in zip(*rows)) * x[0]


# --- sorted by a static int of (int, traced) pairs: under vmap one order for every example ------
def sorted_by_static_key(x):
    pairs = [(2, x[0]), (0, x[1]), (1, x[2])]
    s = sorted(pairs, key=lambda t: t[0])
    return s[0][1] * 3.0 + s[1][1] * s[2][1] + max(pairs, key=lambda t: t[0])[1] * x[3]


# --- a namedtuple's own method on what _replace returned (not the array method of that name) ---
class Span(typing.NamedTuple):
    lo: object
    hi: object

    def sum(self):
        return self.hi * 2.0 - self.lo

    def mean(self, w):
        return (self.lo + self.hi) * w


def replaced_then_own_methods(x):
    s = Span(x[0], x[1])
    t = s._replace(hi=x[2] * x[3])
    return t.sum() * t.mean(x[0]) + s.sum()


# --- a defaultdict's items read in a comprehension (was: "arrays are immutable") ------------------
def defaultdict_counts_in_comprehension(x):
    counts = collections.defaultdict(int)
    for k in [0, 1, 0, 2]:
        counts[k] += 1
    return sum(x[k] * counts[k] for k in range(4)) * x[0]


def defaultdict_missing_key_in_comprehension(x):
    d = collections.defaultdict(float)
    d["a"] = x[0]
    d["b"] += x[1] * 2.0
    return sum([d[k] * x[2] for k in ("a", "b", "c")]) + d["a"] * x[3]


def defaultdict_own_keys_in_comprehension(x):
    d = collections.defaultdict(float)
    for i in range(4):
        d[i % 2] += x[i] * x[i]
    return snp.stack([d[k] for k in sorted(d)]).sum() * x[0] + sum(d[k] ** 2 for k in d) \
        + len(d) * x[1]


FUNCTIONS = [defaultdict_counts_in_comprehension, defaultdict_missing_key_in_comprehension,
             defaultdict_own_keys_in_comprehension, replaced_then_own_methods, sorted_by_static_key, jax_array_in_place, jax_array_held, zip_star_comprehension, zip_star_generator]


# each idiom under three of the transforms in turn (every pair under HYPOTHESIS_PROFILE=thorough)
@pytest.mark.parametrize("f, name", [
    pytest.param(f, name, id=f"{f.__name__}-{name}") for f, name in rotated(FUNCTIONS, TRANSFORMS, 3)])
def test_idiom(f, name, x64):
    _check(f, name)


def test_jax_array_eagerly():
    w = Wrapped(np.array([0.5, -1.0]))
    np.testing.assert_allclose(np.asarray(snp.sin(w)), np.sin([1.0, -2.0]), rtol=1e-6)
    np.testing.assert_allclose(float(snp.sum(w)), -1.0)
    np.testing.assert_allclose(np.asarray(snp.add(w, 1.0)), [2.0, -1.0])
    np.testing.assert_allclose(np.asarray(secant.jit(lambda v: snp.cos(Wrapped(v)))(
        np.array([0.25]))), np.cos([0.5]), rtol=1e-6)


def defaultdict_grown_by_a_comprehension_read(x):
    d = collections.defaultdict(float)
    d[0] = x[0]
    s = sum(d[k] for k in range(3))     # inserts keys 1 and 2: len(d) is 3 after it
    return s * len(d)


def test_comprehension_read_that_grows_the_dict(x64):
    # a read in a comprehension inserts the missing key, which len(d) sees: followed exactly
    # or refused, never read as a get without the insertion (len 1)
    try:
        g = np.asarray(secant.grad(defaultdict_grown_by_a_comprehension_read)(X))
    except secant.SecantError:
        return
    np.testing.assert_allclose(g, [3.0, 0.0, 0.0, 0.0])


# --- a closure factory with a nonlocal counter: its state read as the function runs (traced on
# each call, as JAX reads it when it traces) ------------------------------------------------------
def counter():
    n = 0

    def inc(v):
        nonlocal n
        n += v
        return n
    return inc


def closure_factory_counter(x):
    acc = counter()
    acc(x[0])
    return acc(2 * x[1]) * x[2]


def closure_factory_counter_used(x):
    acc = counter()
    first = acc(x[0])
    return acc(2 * x[1]) * x[2] + first * x[3]


# (each under four of the seven transforms, both under every one under thorough)
@pytest.mark.parametrize("f, name", [
    pytest.param(f, name, id=f"{label}-{name}") for (f, label), name in rotated(
        [(closure_factory_counter, "result_dropped"),
         (closure_factory_counter_used, "result_used")], TRANSFORMS, 4)])
def test_closure_factory_with_a_nonlocal_counter(x64, f, name):
    _check(f, name)

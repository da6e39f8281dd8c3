"""Idioms JAX accepts that secant refused (issue 15, gaps found by left15a and ops15b), each
checked under grad (float64 central differences), hessian (central differences of the checked
gradient), jit (eager), jit(grad), vmap (a Python loop), vmap(grad) and jvp (test_left15a_idioms
_check). The functions live at module level: the transforms read their source."""
import typing

import numpy as np
import pytest

import secant
import secant.numpy as snp
from test_left15a_idioms import TRANSFORMS, _check


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


FUNCTIONS = [replaced_then_own_methods, sorted_by_static_key, jax_array_in_place, jax_array_held, zip_star_comprehension, zip_star_generator]


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_idiom(f, name, x64):
    _check(f, name)


def test_jax_array_eagerly():
    w = Wrapped(np.array([0.5, -1.0]))
    np.testing.assert_allclose(np.asarray(snp.sin(w)), np.sin([1.0, -2.0]), rtol=1e-6)
    np.testing.assert_allclose(float(snp.sum(w)), -1.0)
    np.testing.assert_allclose(np.asarray(snp.add(w, 1.0)), [2.0, -1.0])
    np.testing.assert_allclose(np.asarray(secant.jit(lambda v: snp.cos(Wrapped(v)))(
        np.array([0.25]))), np.cos([0.5]), rtol=1e-6)

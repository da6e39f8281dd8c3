"""`return` of a loop variable from inside a loop over range(...) of constants (jit stages the
loop: the index is an int carry, its cotangent a zero), and an object held in a local that
escapes the function: returned or passed on. A registered pytree class, a register_dataclass
dataclass and a namedtuple are returned as JAX returns them (the same class, its leaves
transformed); a plain class is a clear error that says to register it.

Checked against float64 central finite differences, a Python loop (vmap) and eager (jit). The
functions live at module level: the transforms read their source."""
import collections
import dataclasses

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree_util

XS = np.array([0.7, -0.4, 1.3])


def _fd(f, x, h=1e-6):
    return (float(f(np.float64(x + h))) - float(f(np.float64(x - h)))) / (2 * h)


# --- return of a loop variable over range(...) ----------------------------------------------------
def return_range_index(x):
    for k in range(1, 6):
        if k * k > 8:
            return x * k
    return x


def return_after_steps(x):
    t = x
    for k in range(4):
        t = snp.sin(t) + x
        if k >= 2:
            return t * k + 1.0
    return t


def return_range_step(x):
    t = x * x
    for k in range(10, 0, -3):
        t = t * 0.5 + snp.cos(x) * k
        if k < 5:
            return t / k
    return t


def falls_through_range(x):
    t = x
    for k in range(3):
        t = t + k * x
        if k > 10:
            return k * t
    return t * t


RANGE_RETURNS = [return_range_index, return_after_steps, return_range_step, falls_through_range]


@pytest.mark.parametrize("f", RANGE_RETURNS, ids=lambda f: f.__name__)
def test_return_of_a_range_loop_variable(f, x64):
    g = secant.grad(f)
    for x in XS:
        x = np.float64(x)
        want = _fd(f, x)
        for name, d in [("grad", g), ("jit_grad", secant.jit(g)), ("jacfwd", secant.jacfwd(f))]:
            assert float(d(x)) == pytest.approx(want, rel=1e-6, abs=1e-8), name
        value, tangent = secant.jvp(f, (x,), (np.float64(1.0),))
        assert float(tangent) == pytest.approx(want, rel=1e-6, abs=1e-8)
        assert float(value) == pytest.approx(float(f(x)), rel=1e-12)
        assert float(secant.jit(f)(x)) == pytest.approx(float(f(x)), rel=1e-12)
        h = 1e-4
        second = (float(g(x + h)) - float(g(x - h))) / (2 * h)
        assert float(secant.grad(g)(x)) == pytest.approx(second, rel=1e-5, abs=1e-6)
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(XS)), [float(f(x)) for x in XS],
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.vmap(g)(XS)), [_fd(f, x) for x in XS],
                               rtol=1e-6)


def return_range_index_traced_test(x):
    t = x
    for k in range(5):
        t = t * 1.1 + 0.1
        if t > 2.0:
            return t * k
    return t


def test_return_of_a_range_index_on_a_traced_test(x64):
    """The test reads a differentiated value: grad, jvp and vmap run the loop in Python per
    value (vmap: per example); jit refuses the traced `if`, as jax.jit does."""
    f = return_range_index_traced_test
    for x in (0.5, 1.5):
        assert float(secant.grad(f)(np.float64(x))) == pytest.approx(_fd(f, x), rel=1e-6)
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(np.array([0.5, 1.5]))),
                               [float(f(0.5)), float(f(1.5))], rtol=1e-12)
    with pytest.raises(secant.SecantError):
        secant.jit(f)(np.float64(0.5))


# --- an object held in a local, escaping ---------------------------------------------------------
Point = collections.namedtuple("Point", "a b")


@tree_util.register_pytree_node_class
class Scaled:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.k * snp.exp(x)

    def tree_flatten(self):
        return (self.k,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@tree_util.register_dataclass
@dataclasses.dataclass
class Affine:
    w: float
    b: float


class Plain:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return snp.sin(self.w * x)


def returns_namedtuple(x):
    p = Point(x * 2.0, snp.sin(x))
    return p


def returns_pytree_object(x):
    m = Scaled(snp.sin(x))
    return m


def returns_object_and_value(x):
    m = Scaled(snp.sin(x))
    y = m(x)
    return m, y


def returns_dataclass(x):
    a = Affine(x * x, snp.cos(x))
    return a


def passes_pytree_object_on(x):
    m = Scaled(snp.sin(x))
    return apply(m, x)


def apply(m, x):
    return m(x)


def _leaves_sum(tree):
    return sum(snp.sum(leaf) for leaf in tree_util.tree_leaves(tree))


def _leaves(tree):
    return [np.asarray(leaf) for leaf in tree_util.tree_leaves(tree)]


ESCAPING = [returns_namedtuple, returns_pytree_object, returns_object_and_value,
            returns_dataclass, passes_pytree_object_on]


@pytest.mark.parametrize("f", ESCAPING, ids=lambda f: f.__name__)
def test_escaping_pytree_object(f, x64):
    x = np.float64(0.7)
    want = f(x)
    structure = tree_util.tree_structure(want)
    for name, got in [("jit", secant.jit(f)(x)), ("vjp", secant.vjp(f, x)[0]),
                      ("jvp", secant.jvp(f, (x,), (np.float64(1.0),))[0])]:
        assert tree_util.tree_structure(got) == structure, name
        for a, b in zip(_leaves(got), _leaves(want)):
            np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=name)
    batched = secant.vmap(f)(XS)
    assert tree_util.tree_structure(batched) == structure
    per_example = [_leaves(f(np.float64(v))) for v in XS]
    for i, leaf in enumerate(_leaves(batched)):
        np.testing.assert_allclose(leaf, [p[i] for p in per_example], rtol=1e-12)

    def total(v):
        return _leaves_sum(f(v))
    fd = [_fd(total, v) for v in XS]
    assert float(secant.grad(total)(x)) == pytest.approx(_fd(total, x), rel=1e-6)
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(total))(XS)), fd, rtol=1e-6)
    tangent = secant.jvp(f, (x,), (np.float64(1.0),))[1]
    assert sum(float(np.sum(t)) for t in _leaves(tangent)) == pytest.approx(_fd(total, x),
                                                                           rel=1e-6)


def returns_plain_object(x):
    m = Plain(x * 2.0)
    return m(x), m


def passes_plain_object_on(x):
    m = Plain(x * 2.0)
    return apply(m, x)


@pytest.mark.parametrize("f", [returns_plain_object, passes_plain_object_on],
                         ids=lambda f: f.__name__)
def test_escaping_plain_object(f):
    """An object of a plain class returned or passed on (once a clear error): read as a pytree
    of its fields (tests/test_plain_objects15.py), d/dx sin(2x * x) = 4x cos(2x^2); vmap
    returns the object with its field batched."""
    def first(v):
        out = f(v)
        return out[0] if isinstance(out, tuple) else out
    for x in XS:
        assert float(secant.grad(first)(x)) == pytest.approx(4 * x * np.cos(2 * x * x),
                                                             rel=1e-5)
    out = secant.vmap(f)(XS)
    y = out[0] if isinstance(out, tuple) else out
    np.testing.assert_allclose(np.asarray(y), np.sin(2 * XS * XS), rtol=1e-5)
    if isinstance(out, tuple):
        assert type(out[1]) is Plain
        np.testing.assert_allclose(np.asarray(out[1].w), 2 * XS, rtol=1e-6)

"""Building a namedtuple, a register_dataclass instance or a register_pytree_node class inside a
function under grad, vmap, jit and their compositions (issue 15): built, returned and read field
by field; checked against closed forms, float64 finite differences and a Python loop."""
import collections
import dataclasses

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import grad, jacfwd, jit, vmap

P = collections.namedtuple("P", "a b")


@dataclasses.dataclass
class D:
    w: object
    b: object


secant.tree_util.register_dataclass(D, data_fields=["w", "b"], meta_fields=[])


class Pt:
    def __init__(self, a, b):
        self.a, self.b = a, b


secant.tree_util.register_pytree_node(Pt, lambda p: ((p.a, p.b), None), lambda _, c: Pt(*c))


def with_namedtuple(x):
    p = P(x * 2.0, snp.sin(x))
    return p.a * p.b                                    # 2 x sin x


def with_dataclass(x):
    d = D(b=x * x, w=x * 3.0)                           # (keywords, out of field order)
    return d.w * d.b                                    # 3 x^3


def with_pytree_class(x):
    p = Pt(x, snp.cos(x))
    return p.a * p.b                                    # x cos x


CASES = {with_namedtuple: (lambda x: 2 * x * np.sin(x), lambda x: 2 * np.sin(x) + 2 * x * np.cos(x)),
         with_dataclass: (lambda x: 3 * x ** 3, lambda x: 9 * x ** 2),
         with_pytree_class: (lambda x: x * np.cos(x), lambda x: np.cos(x) - x * np.sin(x))}


@pytest.mark.parametrize("fn", list(CASES), ids=lambda f: f.__name__)
def test_built_inside_under_transforms(x64, fn):
    value, derivative = CASES[fn]
    xs = np.array([0.3, -0.8, 1.1])
    h = 1e-5
    second = (derivative(xs + h) - derivative(xs - h)) / (2 * h)
    for x, d, d2 in zip(xs, derivative(xs), second):
        np.testing.assert_allclose(grad(fn)(x), d, rtol=1e-9)
        np.testing.assert_allclose(grad(grad(fn))(x), d2, rtol=1e-6)
        np.testing.assert_allclose(jit(grad(fn))(x), d, rtol=1e-9)
    np.testing.assert_allclose(vmap(fn)(xs), [value(x) for x in xs], rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(fn))(xs), derivative(xs), rtol=1e-9)
    np.testing.assert_allclose(jit(vmap(fn))(xs), value(xs), rtol=1e-12)


def test_returned_and_read_outside(x64):
    xs = np.array([0.3, -0.8, 1.1])
    out = vmap(lambda x: P(x * 2.0, snp.sin(x)))(xs)
    assert isinstance(out, P)
    np.testing.assert_allclose(out.b, np.sin(xs))
    jac = jacfwd(lambda x: Pt(x, snp.sin(x)))(0.4)
    assert isinstance(jac, Pt)
    np.testing.assert_allclose(jac.b, np.cos(0.4))
    np.testing.assert_allclose(jac.a, 1.0)
    g = grad(lambda x: snp.sum(vmap(lambda y: D(y, y * y))(x).b))(xs)
    np.testing.assert_allclose(g, 2 * xs)


def test_field_reads_of_a_parameter_get_a_cotangent_of_its_class(x64):
    g = grad(lambda p: snp.sum(p.a * p.b))(P(np.array([1.0, 2.0]), np.array([3.0, 4.0])))
    assert isinstance(g, P)
    np.testing.assert_allclose(g.a, [3.0, 4.0])
    d = grad(lambda d: snp.sum(D(d.w * 2.0, d.b).w * d.b))(D(np.array([1.0]), np.array([5.0])))
    assert isinstance(d, D)
    np.testing.assert_allclose(d.w, [10.0])
    np.testing.assert_allclose(d.b, [2.0])

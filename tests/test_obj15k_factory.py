"""Classes a factory makes (issue 15): a class statement inside a function, type(...), a
registered pytree class made by a function, used as a parameter or built inside the
differentiated function. `make()(x)` binds the class once (transformer/normalize.py
dynamic_call): the derivative's call and the forward's read the same class; made twice, the
cotangent was another type's pytree ("Custom node type mismatch"). Values against float64
central differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree_util
from tests.test_attr15_unreached import _factory


def _typed():
    def total(self):
        return snp.sum(self.u ** 2) * self.v

    def init(self, u, v):
        self.u, self.v = u, v
    return type("T", (), {"__init__": init, "total": property(total)})


def _params_class():
    @tree_util.register_pytree_node_class
    class Params:
        def __init__(self, w, b):
            self.w, self.b = w, b

        def tree_flatten(self):
            return (self.w, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)
    return Params


X = np.array([1.0, 2.0])


def loss(p, x):
    return snp.sum(snp.tanh(x * p.w + p.b) ** 2)


def chained(a):
    return _factory()(snp.sin(a), a * a).total


def typed(a):
    return _typed()(snp.sin(a), a * a).total


def made_each_call(a):
    return loss(_params_class()(a, 0.5 * a), X)


REFS = {chained: lambda a: (np.sin(a) ** 2 + a ** 4) * np.sin(a),
        typed: lambda a: np.sin(a) ** 2 * a * a,
        made_each_call: lambda a: np.sum(np.tanh(X * a + 0.5 * a) ** 2)}


def _d(f, a, h=1e-5):
    return (f(a + h) - f(a - h)) / (2 * h)


@pytest.mark.parametrize("f", [chained, typed, made_each_call], ids=lambda f: f.__name__)
def test_a_class_made_by_a_factory_inside_the_function(x64, f):
    ref = REFS[f]
    a = 0.7
    for _ in range(2):
        np.testing.assert_allclose(float(secant.grad(f)(a)), _d(ref, a), rtol=1e-7)
        np.testing.assert_allclose(float(secant.jit(secant.grad(f))(a)), _d(ref, a), rtol=1e-7)
    np.testing.assert_allclose(float(secant.hessian(f)(a)),
                               _d(lambda t: _d(ref, t, 1e-4), a, 1e-4), rtol=1e-5)
    xs = np.array([0.3, -1.1])
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(f))(xs)),
                               [_d(ref, t) for t in xs], rtol=1e-7)
    np.testing.assert_allclose(float(secant.jvp(f, (a,), (2.0,))[1]), 2 * _d(ref, a),
                               rtol=1e-7)


def test_a_factory_made_pytree_class_as_a_parameter(x64):
    P = _params_class()
    p = P(np.array([0.3, -0.2]), 0.1)

    def ref(w, b):
        return np.sum(np.tanh(X * w + b) ** 2)
    h = 1e-6
    want_w = [(ref(p.w + h * e, p.b) - ref(p.w - h * e, p.b)) / (2 * h) for e in np.eye(2)]
    want_b = (ref(p.w, p.b + h) - ref(p.w, p.b - h)) / (2 * h)
    for g in (secant.grad(loss), secant.jit(secant.grad(loss))):
        got = g(p, X)
        assert type(got) is P
        np.testing.assert_allclose(np.asarray(got.w), want_w, rtol=1e-7)
        np.testing.assert_allclose(float(got.b), want_b, rtol=1e-7)
    batched = secant.vmap(secant.grad(loss), in_axes=(None, 0))(p, np.stack([X, X]))
    np.testing.assert_allclose(np.asarray(batched.w), [want_w, want_w], rtol=1e-7)
    Q = _params_class()     # (another class of the same name: its own pytree type)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(loss))(Q(p.w, p.b), X).w),
                               want_w, rtol=1e-7)

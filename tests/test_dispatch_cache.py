"""A function that builds a model object and calls it (`m = Layer(w); m(x)`): the call is known
only at run time (a dispatcher), and the object is a new one at each call. Its derivative and
batched forms are generated once, for the object's class (the object passed as self), not once
per object: a second call loads no generated code. Values against a Python loop and float64
finite differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree_util
from secant.codegen import loader


@tree_util.register_pytree_node_class
class Scale:
    def __init__(self, w):
        self.w = w

    def __call__(self, x, k=2.0):
        return snp.tanh(self.w * x) * k + snp.sin(self.w) * x

    def tree_flatten(self):
        return (self.w,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


class Plain:                    # (not a pytree: never differentiated as an argument)
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return snp.exp(self.w * x)


W = np.array([0.5, -1.5, 2.0])


def constant_object(x):
    m = Scale(W)
    return snp.sum(m(x) * x)


def plain_object(x):
    p = Plain(W)
    return snp.sum(p(x) + p(2.0 * x))


def object_of_x(x):
    m = Scale(0.5 * x)
    return snp.sum(m(x, k=3.0))


CASES = [constant_object, plain_object, object_of_x]
XS = np.array([[0.3, -0.1, 1.2], [-0.8, 0.2, -0.5], [1.0, 0.4, -0.2]])


def _fd(f, x, h=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return out


def _loads(monkeypatch):
    count = [0]
    load = loader.load

    def counting(*args, **kwargs):
        count[0] += 1
        return load(*args, **kwargs)
    monkeypatch.setattr(loader, "load", counting)
    return count


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_values(f, x64):
    want = np.stack([_fd(f, x) for x in XS])
    np.testing.assert_allclose(secant.vmap(secant.grad(f))(XS), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.grad(f)(XS[0]), want[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(f)))(XS), want, rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_generated_once(f, monkeypatch):
    for t, x in [(secant.vmap(secant.grad(f)), XS), (secant.grad(f), XS[0]),
                 (secant.vmap(f), XS)]:
        t(x)                    # (first use: generated)
        count = _loads(monkeypatch)
        t(x)
        t(x * 0.5)
        assert count[0] == 0, f"{f.__name__}: generated code loaded again on a later call"
        monkeypatch.undo()


@pytest.mark.parametrize("f", [constant_object, plain_object], ids=lambda f: f.__name__)
def test_second_order(f, x64):
    """The hessian reads the bound derivative as generated code (transforms._bound_source).
    (object_of_x, an object holding differentiated values, has no second order yet: the
    derivative of its dispatcher is refused with a SourceError, as before.)"""
    g = secant.grad(f)
    for x in XS[:2]:
        want = np.stack([_fd(lambda v, i=i: g(v)[i], x) for i in range(x.size)])
        np.testing.assert_allclose(secant.hessian(f)(x), want, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(secant.jacfwd(g)(x), want, rtol=1e-5, atol=1e-7)

"""Issue 15: a helper with an `if` on a traced value, called other than by a plain name (an
attribute of a module, namespace or class, getattr(mod, name), a functools.partial, a method
through self), is staged by jit as a helper called by name is (transformer/functionalize.py):
jit and jit(grad) equal eager on both branches, grad equals float64 central differences."""
import functools
import sys
import types

import numpy as np
import pytest

import secant
import secant.numpy as snp


def clipped(v):
    if snp.sum(v) > 0:
        return v * v
    return snp.sin(v)


mod = sys.modules[__name__]
ns = types.SimpleNamespace(clipped=clipped)
scaled = functools.partial(clipped)


class Holder:
    plain = clipped
    static = staticmethod(clipped)


class Model:
    def __init__(self, w):
        self.w = w

    def helper(self, v):
        if snp.sum(v) > 0:
            return self.w * v * v
        return snp.cos(v)

    def apply(self, x):
        return snp.sum(self.helper(x))


class Override(Model):
    def helper(self, v):
        if snp.sum(v) < 0:
            return v * v * v
        return snp.tanh(v)


def via_module(x):
    return snp.sum(mod.clipped(x))


def via_namespace(x):
    return snp.sum(ns.clipped(x))


def via_class(x):
    return snp.sum(Holder.plain(x) + Holder.static(x))


def via_getattr(x):
    return snp.sum(getattr(mod, "clipped")(x))


def via_partial(x):
    return snp.sum(scaled(x))


def via_self(x):
    return Model(2.0).apply(x)


CASES = [via_module, via_namespace, via_class, via_getattr, via_partial, via_self,
         Model(3.0).apply, Override(1.0).apply]
POINTS = [np.array([0.3, -0.1, 1.2]), np.array([-0.8, 0.2, -0.5])]     # both branches


def exact(f, x, eps=1e-6):
    """Central differences of scalar f at the float64 array x."""
    g = np.zeros_like(x)
    for i in range(x.size):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (float(f(x + d)) - float(f(x - d))) / (2 * eps)
    return g


def name(f):
    return getattr(f, "__qualname__", "f")


@pytest.mark.parametrize("x", POINTS, ids=["positive", "negative"])
@pytest.mark.parametrize("f", CASES, ids=name)
def test_jit_and_jit_grad_equal_eager(f, x):
    x = x.astype(np.float32)
    np.testing.assert_allclose(float(secant.jit(f)(x)), float(f(x)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(x)),
                               np.asarray(secant.grad(f)(x)), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("x", POINTS, ids=["positive", "negative"])
@pytest.mark.parametrize("f", CASES, ids=name)
def test_grad_matches_finite_differences(f, x, x64):
    want = exact(f, x)
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(x)), want, rtol=1e-6,
                               atol=1e-8)


def test_the_helper_is_staged_not_unrolled():
    """jit's rewrite of via_namespace calls the helper's staged form by a name of its own."""
    from secant.transformer.functionalize import functionalized_source
    src = functionalized_source(via_namespace)
    assert "ns.clipped" not in src and "clipped(x)" in src, src


# --- vmap of a derivative of a dispatched call (a pytree object held in a local, then called) --
from secant import tree_util  # noqa: E402


@tree_util.register_pytree_node_class
class Layer:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return snp.tanh(self.w * x) + snp.sin(self.w) * x

    def tree_flatten(self):
        return (self.w,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


W = np.array([0.5, -1.5, 2.0], np.float32)


def layer_of_x(x):
    m = Layer(x * 0.5)
    return snp.sum(m(x))


def layer_of_constant(x):
    m = Layer(W)
    return snp.sum(m(x) * x)


def two_layers(x):
    a, b = Layer(x), Layer(W)
    return snp.sum(b(a(x)))


OBJECT_CASES = [layer_of_x, layer_of_constant, two_layers]
XS = np.array([[0.3, -0.1, 1.2], [-0.8, 0.2, -0.5], [1.0, 0.4, -0.2], [-0.3, -0.9, 0.1]],
              np.float32)


@pytest.mark.parametrize("f", OBJECT_CASES, ids=name)
def test_vmap_grad_of_a_dispatched_call_matches_a_loop(f):
    want = np.stack([np.asarray(secant.grad(f)(x)) for x in XS])
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(f))(XS)), want, rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(secant.grad(f)))(XS)), want,
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f", OBJECT_CASES, ids=name)
def test_vmap_jvp_of_a_dispatched_call_matches_a_loop(f):
    v = np.array([0.5, -1.0, 2.0], np.float32)

    def tangent(x):
        return secant.jvp(f, (x,), (v,))[1]
    want = np.array([float(tangent(x)) for x in XS])
    np.testing.assert_allclose(np.asarray(secant.vmap(tangent)(XS)), want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f", OBJECT_CASES, ids=name)
def test_grad_of_a_dispatched_call_matches_finite_differences(f, x64):
    for x in XS.astype(np.float64):
        np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), exact(f, x), rtol=1e-6,
                                   atol=1e-8)


def doubled(v):
    if snp.sum(v) > 0:
        return 2.0 * v
    return v


def tripled(v):
    if snp.sum(v) > 0:
        return 3.0 * v
    return v


swappable = types.SimpleNamespace(helper=doubled)


def via_swappable(x):
    return snp.sum(swappable.helper(x))


def test_rebinding_the_attribute_rewrites_again():
    """The rewritten function calls the helper the attribute names when jit reads it: after
    `swappable.helper = tripled`, the staged form is rewritten again (never the old helper)."""
    from secant.transformer.functionalize import functionalize
    x = np.ones(3, np.float32)
    try:
        assert float(functionalize(via_swappable)(x)) == 6.0
        swappable.helper = tripled
        assert float(functionalize(via_swappable)(x)) == 9.0
        assert float(secant.jit(secant.grad(via_swappable))(x)[0]) == 3.0
    finally:
        swappable.helper = doubled


def layer_of_argument(x, w):
    m = Layer(w)
    return snp.sum(m(x) * x)


def test_vmap_grad_of_an_object_holding_batched_values_it_does_not_differentiate():
    """grad in x, vmap over x and the layer's weights too: the dispatched vjp takes the layer
    as an operand (its cotangent dropped)."""
    ws = XS[::-1] * 2.0
    want = np.stack([np.asarray(secant.grad(layer_of_argument)(x, w)) for x, w in zip(XS, ws)])
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(layer_of_argument))(XS, ws)),
                               want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(layer_of_argument),
                                                      in_axes=(0, None))(XS, W)),
                               np.stack([np.asarray(secant.grad(layer_of_argument)(x, W))
                                         for x in XS]), rtol=1e-5, atol=1e-7)


def test_grad_of_an_object_holding_values_against_finite_differences(x64):
    w = np.array([0.5, -1.5, 2.0])
    for x in XS.astype(np.float64):
        np.testing.assert_allclose(np.asarray(secant.grad(layer_of_argument)(x, w)),
                                   exact(lambda y: layer_of_argument(y, w), x), rtol=1e-6,
                                   atol=1e-8)

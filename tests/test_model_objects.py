"""A model object (a registered pytree with __call__) called inside a transformed function, and
a callee built from differentiated values, which must never be read as a constant."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree_util


@tree_util.register_pytree_node_class
class Affine:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def __call__(self, x):
        return snp.tanh(self.w * x + self.b)

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def _closed(w, b, x):
    t = np.tanh(w * x + b)
    return (1 - t * t) * x, (1 - t * t), (1 - t * t) * w


def test_grad_wrt_model_object():
    g = secant.grad(lambda m, x: m(x))(Affine(0.5, 0.1), 2.0)
    dw, db, _ = _closed(0.5, 0.1, 2.0)
    assert isinstance(g, Affine)
    np.testing.assert_allclose([g.w, g.b], [dw, db], rtol=1e-5)


def test_grad_wrt_model_and_input():
    gm, gx = secant.grad(lambda m, x: m(x) * x, argnums=(0, 1))(Affine(0.5, 0.1), 2.0)
    f = lambda x: np.tanh(0.5 * x + 0.1) * x
    np.testing.assert_allclose(gx, _fd(f, 2.0), rtol=1e-4)
    dw, db, _ = _closed(0.5, 0.1, 2.0)
    np.testing.assert_allclose([gm.w, gm.b], [2 * dw, 2 * db], rtol=1e-5)


def test_jit_grad_and_second_order_of_model():
    loss = lambda m, x: m(x) ** 2
    m = Affine(0.5, 0.1)
    eager = secant.grad(loss)(m, 2.0)
    jitted = secant.jit(secant.grad(loss))(m, 2.0)
    np.testing.assert_allclose([jitted.w, jitted.b], [eager.w, eager.b], rtol=1e-6)
    d2 = secant.grad(secant.grad(lambda x, m: m(x)))(2.0, m)
    t = np.tanh(0.5 * 2.0 + 0.1)
    np.testing.assert_allclose(d2, -2 * t * (1 - t * t) * 0.25, rtol=1e-5)


def test_jvp_of_model_object():
    m, t = Affine(0.5, 0.1), Affine(1.0, 0.0)
    out, dot = secant.jvp(lambda m: m(2.0), (m,), (t,))
    dw, _, _ = _closed(0.5, 0.1, 2.0)
    np.testing.assert_allclose(dot, dw, rtol=1e-5)


def test_vmap_over_model_objects():
    ws = np.linspace(0.1, 0.9, 4).astype(np.float32)
    out = secant.vmap(lambda m: m(2.0))(Affine(ws, np.full(4, 0.1, np.float32)))
    np.testing.assert_allclose(out, [np.tanh(w * 2.0 + 0.1) for w in ws], rtol=1e-6)


class Scaled:
    def __init__(self, a):
        self.a = a

    def __call__(self, x):
        return self.a * x


def test_callee_built_from_differentiated_value_is_not_a_constant():
    # was silently 0.0 (the call's own arguments were constants, the callee was not read)
    assert float(secant.grad(lambda a: Scaled(a)(3.0))(2.0)) == pytest.approx(3.0)
    np.testing.assert_allclose(secant.vmap(lambda a: Scaled(a)(3.0))(snp.arange(3.0)),
                               [0.0, 3.0, 6.0])


def test_function_made_from_differentiated_value_and_called_at_once():
    # once refused; since others11a read as `g = make(a); g(3.0)` is (the closure's cotangent
    # through make's vjp)
    def make(a):
        return lambda x: a * x

    assert float(secant.grad(lambda a: make(a)(3.0))(2.0)) == pytest.approx(3.0)
    assert float(secant.grad(lambda a: make(a * a)(3.0))(2.0)) == pytest.approx(12.0)
    np.testing.assert_allclose(secant.vmap(secant.grad(lambda a: make(a * a)(3.0)))(
        snp.arange(3.0)), [0.0, 6.0, 12.0])

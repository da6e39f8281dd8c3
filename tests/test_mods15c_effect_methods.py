"""Issue 15 (mods15c): a method called for what it does to its object (`acc.add(x)`,
`opt.step(g)`: it sets the object's fields, its result dropped), on a local object of the
user's own class. A source transform cannot follow the value through the object's state, so
the function is traced on each call (secant/transforms.py _traced_instead), the method run
through on the recording values. Gradients against float64 central differences and closed
forms, vmap against a Python loop, jit against eager."""
import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jit

from others15_check import check_grad, check_vmap


class Accumulator:
    def __init__(self, scale):
        self.scale = scale
        self.total = 0.0

    def add(self, v):
        self.total = self.total + self.scale * v


def accumulated(x):
    acc = Accumulator(2.0)
    acc.add(jnp.sin(x))
    acc.add(x * x)
    return acc.total


def test_method_setting_fields_of_a_local_object(x64):
    x = 0.7
    np.testing.assert_allclose(accumulated(x), 2 * np.sin(x) + 2 * x * x, rtol=1e-12)
    g = check_grad(accumulated, x)
    np.testing.assert_allclose(g, 2 * np.cos(x) + 4 * x, rtol=1e-10)
    np.testing.assert_allclose(hessian(accumulated)(x), -2 * np.sin(x) + 4, rtol=1e-10)
    np.testing.assert_allclose(jit(grad(accumulated))(x), g, rtol=1e-12)
    check_vmap(accumulated, (np.array([0.1, -0.4, 1.3]),))
    check_vmap(grad(accumulated), (np.array([0.1, -0.4, 1.3]),))


class Momentum:
    def __init__(self, params, lr):
        self.params, self.lr = params, lr
        self.velocity = {k: jnp.zeros_like(v) for k, v in params.items()}

    def step(self, grads):
        for k in self.params:
            self.velocity[k] = 0.9 * self.velocity[k] + grads[k]
            self.params[k] = self.params[k] - self.lr * self.velocity[k]


def _loss(p):
    return jnp.sum(p["w"] ** 2) + jnp.sum(jnp.cos(p["b"]))


def trained(w):
    opt = Momentum({"w": w, "b": jnp.ones(2)}, 0.1)
    for _ in range(3):
        p = opt.params
        opt.step({"w": 2 * p["w"], "b": -jnp.sin(p["b"])})     # (_loss's gradient)
    return _loss(opt.params)


def test_optimizer_object_stepped_in_place(x64):
    w = np.array([0.5, -1.0, 2.0])
    # written out: w_k+1 = w_k - 0.1 v_k+1, v_k+1 = 0.9 v_k + 2 w_k (the b part is constant in w)
    ws, v = w.copy(), np.zeros(3)
    for _ in range(3):
        v = 0.9 * v + 2 * ws
        ws = ws - 0.1 * v
    b, vb = np.ones(2), np.zeros(2)
    for _ in range(3):
        vb = 0.9 * vb - np.sin(b)
        b = b - 0.1 * vb
    np.testing.assert_allclose(trained(w), np.sum(ws ** 2) + np.sum(np.cos(b)), rtol=1e-12)
    check_grad(trained, w)
    check_vmap(trained, (np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.3]]),))

"""Issue 15, user classes and methods: models written as equinox- and flax-style users write
them (a registered pytree class with a `predict` method and a `__call__`, a dataclass of
parameters with methods, an MLP holding a list of layers that it slices with `self.layers[:-1]`),
passed as the differentiated or batched argument; under grad, jit(grad), jvp, vmap, vmap(grad)
and hessian, checked against float64 finite differences, a Python loop and eager."""
import dataclasses
from typing import NamedTuple

import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jit, jvp, tree_util, vmap

from others15_check import (assert_trees_close, check_grad, check_vmap, fd_grad, fd_jvp, to_np,
                            to_snp)

RNG = np.random.default_rng(1515)


@tree_util.register_pytree_node_class
class Linear:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def predict(self, x):
        return jnp.tanh(x @ self.w + self.b)

    def __call__(self, x):
        return self.predict(x)

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@tree_util.register_pytree_node_class
class MLP:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = layer(x)
        return self.layers[-1].predict(x)

    def tree_flatten(self):
        return (self.layers,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@tree_util.register_dataclass
@dataclasses.dataclass
class Affine:
    scale: object
    shift: object

    def apply(self, x):
        return self.scale * x + self.shift

    def energy(self, x):
        return jnp.sum(self.apply(x) ** 2) + 0.5 * jnp.sum(self.scale ** 2)


class Params(NamedTuple):
    w: object
    b: object

    def predict(self, x):
        return jnp.tanh(x @ self.w + self.b)


def linear(n_in, n_out):
    return Linear(RNG.normal(size=(n_in, n_out)) / np.sqrt(n_in), RNG.normal(size=n_out))


def predict_loss(m, x):
    return jnp.sum(m.predict(x) ** 2)


def call_loss(m, x):
    return jnp.sum(m(x) ** 2)


def mlp_loss(m, x):
    return jnp.sum(jnp.sin(m(x)))


def affine_loss(p, x):
    return p.energy(x) + jnp.sum(p.apply(x))


def stacked(tree, n):
    """n copies of `tree`, each scaled differently, stacked on a new leading axis."""
    return tree_util.tree_map(lambda a: np.stack([(1.0 + 0.3 * i) * np.asarray(a)
                                                  for i in range(n)]), tree)


def fd_hessian(f, m, x):
    """Central differences of grad(f)(m, x) in each leaf of m: h[i][j] = d grad_i / d m_j,
    shaped grad_i.shape + m_j.shape, in m's leaf order."""
    leaves, treedef = tree_util.tree_flatten(to_np(m))
    cols = []
    for j, leaf in enumerate(leaves):
        col = []
        for idx in np.ndindex(leaf.shape):
            parts = []
            for sign in (1.0, -1.0):
                moved = [np.array(v) for v in leaves]
                moved[j][idx] += sign * 1e-5
                g = grad(f)(to_snp(tree_util.tree_unflatten(treedef, moved)), to_snp(x))
                parts.append([np.asarray(v) for v in tree_util.tree_leaves(g)])
            col.append([(a - b) / 2e-5 for a, b in zip(*parts)])
        cols.append([np.stack([c[i] for c in col], -1).reshape(col[0][i].shape + leaf.shape)
                     for i in range(len(leaves))])
    return [[cols[j][i] for j in range(len(leaves))] for i in range(len(leaves))]


def fd_hessian_x(f, m, x):
    """Central differences of grad(f, argnums=1)(m, x), row by row."""
    return np.stack([fd_grad(lambda v: grad(f, argnums=1)(to_snp(m), v)[i], (to_snp(x),))
                     for i in range(len(x))])


def test_method_of_differentiated_model(x64):
    """m.predict(x), m a registered pytree argument: the method's cotangent is the object's."""
    m, x = linear(3, 2), RNG.normal(size=3)
    g = check_grad(predict_loss, m, x)
    assert isinstance(g, Linear)
    y = np.tanh(x @ m.w + m.b)
    np.testing.assert_allclose(g.b, 2 * y * (1 - y ** 2), rtol=1e-10)
    check_grad(predict_loss, m, x, argnum=1)
    t = linear(3, 2)
    out, tan = jvp(predict_loss, (to_snp(m), to_snp(x)), (to_snp(t), jnp.zeros(3)))
    np.testing.assert_allclose(tan, fd_jvp(predict_loss, (m, x), (t, np.zeros(3))), rtol=1e-6)
    check_vmap(predict_loss, (m, RNG.normal(size=(4, 3))), in_axes=(None, 0))
    check_vmap(grad(predict_loss), (m, RNG.normal(size=(4, 3))), in_axes=(None, 0))


def test_namedtuple_methods(x64):
    m, x = linear(3, 2), RNG.normal(size=3)
    p = Params(m.w, m.b)
    g = check_grad(predict_loss, p, x)
    assert isinstance(g, Params)
    check_vmap(grad(predict_loss), (p, RNG.normal(size=(4, 3))), in_axes=(None, 0))


def test_dataclass_methods(x64):
    p = Affine(RNG.normal(size=3), RNG.normal(size=3))
    x = RNG.normal(size=3)
    g = check_grad(affine_loss, p, x)
    assert isinstance(g, Affine)
    np.testing.assert_allclose(g.shift, 2 * (p.scale * x + p.shift) + 1, rtol=1e-10)
    check_vmap(affine_loss, (stacked(p, 3), x), in_axes=(0, None))
    check_vmap(grad(affine_loss), (p, RNG.normal(size=(4, 3))), in_axes=(None, 0))


def test_hessian_of_callable_model(x64):
    """hessian with respect to a model called as m(x) (its class's __call__ calling a method)."""
    m, x = linear(3, 2), RNG.normal(size=3)
    h = hessian(call_loss)(to_snp(m), to_snp(x))
    assert isinstance(h, Linear) and isinstance(h.w, Linear)
    got = [[h.w.w, h.w.b], [h.b.w, h.b.b]]
    want = fd_hessian(call_loss, m, x)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(got[i][j], want[i][j], rtol=1e-5, atol=1e-7)
    hx = hessian(call_loss, argnums=1)(to_snp(m), to_snp(x))
    np.testing.assert_allclose(hx, fd_hessian_x(call_loss, m, x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(jit(hessian(call_loss, argnums=1))(to_snp(m), to_snp(x)), hx,
                               rtol=1e-10)


def test_batched_model_slicing_its_layers(x64):
    """vmap over a batch of MLPs whose __call__ slices self.layers[:-1] (a list of layers)."""
    mlp = MLP([linear(3, 4), linear(4, 4), linear(4, 2)])
    x = RNG.normal(size=3)
    check_grad(mlp_loss, mlp, x)
    check_vmap(mlp_loss, (stacked(mlp, 3), x), in_axes=(0, None))
    check_vmap(grad(mlp_loss), (stacked(mlp, 3), x), in_axes=(0, None))
    check_vmap(mlp_loss, (mlp, RNG.normal(size=(5, 3))), in_axes=(None, 0))
    hx = hessian(mlp_loss, argnums=1)(to_snp(mlp), to_snp(x))
    np.testing.assert_allclose(hx, fd_hessian_x(mlp_loss, mlp, x), rtol=1e-5, atol=1e-7)
    assert_trees_close(jit(vmap(grad(mlp_loss), in_axes=(0, None)))(
        to_snp(stacked(mlp, 3)), to_snp(x)),
        vmap(grad(mlp_loss), in_axes=(0, None))(to_snp(stacked(mlp, 3)), to_snp(x)))

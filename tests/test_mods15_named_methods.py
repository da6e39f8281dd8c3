"""Issue 15: a pytree object's own method named as a dict's (get, items, keys, values), called on
the object passed on to another function (a parameter there, its type known only when it runs).
secant read `p.get("w")` of a parameter as dict.get whatever p held: 'Params' object is not
subscriptable (an internal TypeError) for a registered class with a `get(self, name)` method.
The same function called with a dict still reads the dict. Checked against closed forms,
float64 central differences, a Python loop and eager."""
import collections

import numpy as np

import secant.numpy as jnp
from secant import grad, jit, tree_util, vmap

from others15_check import assert_trees_close, check_grad, check_vmap, fd_grad, to_snp

X = np.array([1.0, 2.0, 3.0])


@tree_util.register_pytree_node_class
class Params:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def get(self, name):            # one argument, as dict.get(key) takes
        return getattr(self, name)

    def values(self):               # no argument, as dict.values()
        return self.w * self.b

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def affine(p, x):
    return p.get("w") * x + p.get("b")


def loss(p, x):
    return jnp.sum(affine(p, x) ** 2)


def test_registered_class_get_method_under_grad_vmap_jit(x64):
    w, b = 2.0, 0.5
    p = Params(jnp.asarray(w), jnp.asarray(b))
    r = w * X + b
    g = grad(loss)(p, jnp.asarray(X))
    assert type(g) is Params
    np.testing.assert_allclose(g.w, 2 * np.sum(r * X), rtol=1e-12)       # 62
    np.testing.assert_allclose(g.b, 2 * np.sum(r), rtol=1e-12)           # 27
    assert_trees_close(g, fd_grad(loss, (p, jnp.asarray(X))))
    gj = jit(grad(loss))(p, jnp.asarray(X))
    assert_trees_close(gj, g, rtol=1e-12, atol=0)
    # per-example: vmap over x against a loop, and over a batch of objects
    check_vmap(lambda x: affine(p, x), (X,))
    batch = Params(jnp.asarray([1.0, 2.0]), jnp.asarray([0.0, -1.0]))
    got = vmap(loss, in_axes=(0, None))(batch, jnp.asarray(X))
    want = [np.sum((wi * X + bi) ** 2) for wi, bi in ((1.0, 0.0), (2.0, -1.0))]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_same_function_still_reads_a_dict(x64):
    p = {"w": 2.0, "b": 0.5}
    g = check_grad(loss, p, X)
    r = 2.0 * X + 0.5
    np.testing.assert_allclose(g["w"], 2 * np.sum(r * X), rtol=1e-10)
    np.testing.assert_allclose(g["b"], 2 * np.sum(r), rtol=1e-10)
    check_vmap(lambda x: affine(to_snp(p), x), (X,))


def product(p):
    return p.values()


def test_no_argument_method_named_values(x64):
    f = lambda p, x: jnp.sum(product(p) * x)
    p = Params(jnp.asarray(3.0), jnp.asarray(4.0))
    g = grad(f)(p, jnp.asarray(X))
    np.testing.assert_allclose(g.w, 4.0 * X.sum(), rtol=1e-12)
    np.testing.assert_allclose(g.b, 3.0 * X.sum(), rtol=1e-12)
    assert_trees_close(jit(grad(f))(p, jnp.asarray(X)), g, rtol=1e-12, atol=0)
    # a dict's values() in the same function: a list of its values
    d = {"a": jnp.asarray(3.0), "b": jnp.asarray(4.0)}
    h = grad(lambda d: jnp.sum(jnp.stack(product(d)) ** 2))(d)
    np.testing.assert_allclose([h["a"], h["b"]], [6.0, 8.0], rtol=1e-12)


class Pair(collections.namedtuple("Pair", "a b")):
    def items(self):
        return self.a * self.b


def weighted(q, x):
    return jnp.sum(q.items() * jnp.sin(x))


def test_namedtuple_items_method_under_grad_vmap_jit(x64):
    q = Pair(jnp.asarray(3.0), jnp.asarray(4.0))
    g = grad(weighted)(q, jnp.asarray(X))
    assert type(g) is Pair
    np.testing.assert_allclose(g.a, 4.0 * np.sin(X).sum(), rtol=1e-12)
    np.testing.assert_allclose(g.b, 3.0 * np.sin(X).sum(), rtol=1e-12)
    assert_trees_close(jit(grad(weighted))(q, jnp.asarray(X)), g, rtol=1e-12, atol=0)
    # d/dx of the per-example form: 12 cos(x), vmap against a loop
    gx = vmap(grad(weighted, argnums=1), in_axes=(None, 0))(q, jnp.asarray(X))
    np.testing.assert_allclose(gx, 12.0 * np.cos(X), rtol=1e-12)
    check_vmap(lambda x: weighted(q, x), (X,))

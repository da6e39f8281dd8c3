"""Issue 15, flax-like scopes: a registered pytree holding a variables dict
{"params": ..., "batch_stats": ...} whose own method is called `get` with more arguments than
a dict's get takes (flax's scope.get(col, name)), passed on to the code that reads it; and a
registered pytree built with an argument kept in its aux data (flax's ApplyScope(variables,
mutable=...)), read as a tree of its other arguments, bound to a module object. Checked against float64 central differences, closed forms and a Python loop."""
import copy

import numpy as np

import secant.numpy as jnp
from secant import grad, jit, tree_util, vmap

from others15_check import check_vmap, fd_grad, to_snp

RNG = np.random.default_rng(1515)


@tree_util.register_pytree_node_class
class Scope:
    """Where a module's variables live: the root dict of collections."""
    def __init__(self, root):
        self.root = root

    def get(self, col, name, default):      # (a dict's get takes one or two arguments)
        return self.root.get(col, {}).get(name, default)

    def tree_flatten(self):
        return (self.root,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0])


def dense_bn(scope, x):
    """A dense layer and a normalisation by running statistics, read through scope.get."""
    h = x @ scope.get("params", "kernel", None) + scope.get("params", "bias", 0.0)
    mean = scope.get("batch_stats", "mean", 0.0)
    var = scope.get("batch_stats", "var", 1.0)
    return jnp.sum(jnp.tanh((h - mean) / jnp.sqrt(var + 1e-5)), axis=-1)


def apply(variables, x):
    return dense_bn(Scope(variables), x)


def np_apply(variables, x):
    p, s = variables["params"], variables["batch_stats"]
    h = x @ p["kernel"] + p["bias"]
    return np.tanh((h - s["mean"]) / np.sqrt(s["var"] + 1e-5)).sum(-1)


X = RNG.normal(size=(5, 3))
Y = RNG.normal(size=5)
VARIABLES = {"params": {"kernel": RNG.normal(size=(3, 4)), "bias": RNG.normal(size=4)},
             "batch_stats": {"mean": RNG.normal(size=4), "var": 1 + RNG.random(4)}}


def loss(variables, x, y):
    return jnp.mean((apply(variables, x) - y) ** 2)


def test_scope_get_with_three_arguments_under_grad_and_vmap(x64):
    np.testing.assert_allclose(apply(to_snp(VARIABLES), jnp.asarray(X)),
                               np_apply(VARIABLES, X), rtol=1e-12)
    # (was: "d.get(key, default) of a dict of differentiated values is not supported")
    g = grad(loss)(to_snp(VARIABLES), jnp.asarray(X), jnp.asarray(Y))
    want = fd_grad(lambda v: loss(v, X, Y), (to_snp(VARIABLES),))
    for col in ("params", "batch_stats"):
        for name in want[col]:
            np.testing.assert_allclose(g[col][name], want[col][name], rtol=1e-6, atol=1e-9)
    # the bias's gradient in closed form: mean over rows of 2 (pred - y) * (1 - t^2) / sd
    p, s = VARIABLES["params"], VARIABLES["batch_stats"]
    sd = np.sqrt(s["var"] + 1e-5)
    t = np.tanh((X @ p["kernel"] + p["bias"] - s["mean"]) / sd)
    r = 2 * (t.sum(-1) - Y) / len(Y)
    np.testing.assert_allclose(g["params"]["bias"], (r[:, None] * (1 - t ** 2) / sd).sum(0),
                               rtol=1e-10)
    # jit of grad against eager, per-example predictions by vmap against a loop
    gj = jit(grad(loss))(to_snp(VARIABLES), jnp.asarray(X), jnp.asarray(Y))
    np.testing.assert_allclose(gj["params"]["kernel"], g["params"]["kernel"], rtol=1e-10)
    check_vmap(lambda x: apply(VARIABLES, x), (X,))
    # per-example gradients in the variables: vmap of grad against a loop of grads
    per = vmap(grad(loss), in_axes=(None, 0, 0))(to_snp(VARIABLES), jnp.asarray(X[:, None]),
                                                 jnp.asarray(Y[:, None]))
    for i in range(len(X)):
        gi = grad(loss)(to_snp(VARIABLES), jnp.asarray(X[i:i + 1]), jnp.asarray(Y[i:i + 1]))
        np.testing.assert_allclose(per["params"]["kernel"][i], gi["params"]["kernel"],
                                   rtol=1e-10, atol=1e-12)


@tree_util.register_pytree_node_class
class MutableScope:
    """flax's ApplyScope: the collections it may change kept in its aux data."""
    def __init__(self, root, mutable=()):
        self.root, self.mutable = root, mutable

    def tree_flatten(self):
        return (self.root,), self.mutable

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], aux)


def read_kernel(scope, x):
    return jnp.sum(x @ scope.root["params"]["kernel"])


def apply_mutable(variables, x, mutable=()):
    return read_kernel(MutableScope(variables, mutable=mutable), x)


class Model:
    """flax's Module.apply: the scope bound to a copy of the module, which is then called."""
    def _bind(self, scope):
        bound = Model()
        bound.scope = scope
        return bound

    def __call__(self, x):
        return read_kernel(self.scope, x)

    def apply(self, variables, x, mutable=()):
        return self._bind(MutableScope(variables, mutable=mutable))(x)


class CopiedModel(Model):
    def _bind(self, scope):         # (flax: a copy of the module, its scope set past __setattr__)
        bound = copy.copy(self)
        object.__setattr__(bound, "scope", scope)
        return bound


def test_registered_pytree_with_aux_argument(x64):
    # passed on to a function: MutableScope(variables, mutable=mutable) read as a tree, its
    # children the variables, `mutable` aux data (d/dkernel of sum(x @ K): column sums)
    g = grad(apply_mutable)(to_snp(VARIABLES), jnp.asarray(X))
    np.testing.assert_allclose(g["params"]["kernel"],
                               np.broadcast_to(X.sum(0)[:, None], (3, 4)), rtol=1e-12)
    # bound to a new object a method returns (bound.scope = scope), which is called
    model = Model()
    g2 = grad(lambda v: model.apply(v, jnp.asarray(X)))(to_snp(VARIABLES))
    np.testing.assert_allclose(g2["params"]["kernel"], g["params"]["kernel"], rtol=1e-12)
    # bound to a copy by object.__setattr__ (past a __setattr__ of its own): the copy is an
    # object of the same class with the scope changed (it once was refused)
    model = CopiedModel()
    g3 = grad(lambda v: model.apply(v, jnp.asarray(X)))(to_snp(VARIABLES))
    np.testing.assert_allclose(g3["params"]["kernel"], g["params"]["kernel"], rtol=1e-12)
    assert not hasattr(model, "scope")

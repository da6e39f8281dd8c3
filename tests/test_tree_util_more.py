"""The rest of jax.tree_util's names (secant/tree_util.py): keyed registration, static nodes,
one-level flattening, treedef children / tuples, tree_broadcast, tree_reduce_associative; each
with its JAX semantics, and the registered classes through jit and grad."""
import operator

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree, tree_util as tu


@tu.register_pytree_with_keys_class
class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def tree_flatten_with_keys(self):
        return [(tu.GetAttrKey("a"), self.a), (tu.GetAttrKey("b"), self.b)], None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@tree.static
class Config:
    def __init__(self, scale):
        self.scale = scale

    def __eq__(self, other):
        return isinstance(other, Config) and other.scale == self.scale

    def __hash__(self):
        return hash(self.scale)


def test_keyed_class_paths_values_and_grad():
    paths = [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(Pair(1.0, {"x": 2.0}))[0]]
    assert paths == [".a", ".b['x']"]
    g = secant.grad(lambda p: p.a * snp.sin(p.b))(Pair(2.0, 0.5))
    assert isinstance(g, Pair)
    assert float(g.a) == pytest.approx(np.sin(0.5)) and float(g.b) == pytest.approx(2 * np.cos(0.5))


def test_static_class_has_no_leaves_and_passes_jit():
    assert tu.tree_leaves({"c": Config(3.0), "w": 1.0}) == [1.0]
    f = secant.jit(lambda cfg, x: cfg.scale * x)
    assert float(f(Config(3.0), 2.0)) == 6.0 and float(f(Config(4.0), 2.0)) == 8.0


def test_one_level_and_treedefs():
    children, data = tu.flatten_one_level({"b": [1, 2], "a": 3})
    assert children == [3, [1, 2]]
    pairs, _ = tu.flatten_one_level_with_keys((5, 6))
    assert [tu.keystr((k,)) for k, _ in pairs] == ["[0]", "[1]"]
    with pytest.raises(secant.SecantError, match="can't tree-flatten"):
        tu.flatten_one_level(1.0)
    assert tu.is_tree_node([1]) and tu.is_tree_node(None) and not tu.is_tree_node(1.0)
    assert not tu.is_tree_node([1], is_leaf=lambda x: isinstance(x, list))
    td = tu.tree_structure({"a": (1, 2), "b": 3})
    kids = tu.treedef_children(td)
    assert [k.num_leaves for k in kids] == [2, 1]
    both = tu.treedef_tuple([tu.tree_structure([1, 2]), tu.tree_structure({"k": 1})])
    assert both == tu.tree_structure(([0, 0], {"k": 0}))
    assert tu.default_registry() is tu.registry()


def test_broadcast_and_reduce_associative():
    out = tree.broadcast({"a": 1, "b": 2}, {"a": (0, [0, 0]), "b": 5})
    assert out == {"a": (1, [1, 1]), "b": 2}
    assert tree.reduce_associative(operator.add, [1, (2, 3), {"x": 4, "y": 5}]) == 15
    assert tree.reduce_associative(operator.add, [], identity=0) == 0
    with pytest.raises(secant.SecantError, match="identity"):
        tree.reduce_associative(operator.add, [])

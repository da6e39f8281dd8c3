"""secant.tree_util: JAX's pytree functions on containers, namedtuples and registered classes."""
import collections
import dataclasses

import pytest
from hypothesis import given, strategies as st

import secant
from secant import tree_util as tu

Point = collections.namedtuple("Point", "x y")


class Pair:
    """Registered with explicit flatten/unflatten functions."""

    def __init__(self, left, right, name="pair"):
        self.left, self.right, self.name = left, right, name

    def __eq__(self, other):
        return (type(other) is Pair and (self.left, self.right, self.name)
                == (other.left, other.right, other.name))


tu.register_pytree_node(Pair, lambda p: ((p.left, p.right), p.name),
                        lambda name, children: Pair(*children, name=name))


@tu.register_pytree_node_class
class Scaled:
    """Registered through the tree_flatten / tree_unflatten protocol."""

    def __init__(self, value, scale):
        self.value, self.scale = value, scale

    def tree_flatten(self):
        return (self.value,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
        return cls(children[0], scale)

    def __eq__(self, other):
        return type(other) is Scaled and (self.value, self.scale) == (other.value, other.scale)


@dataclasses.dataclass
class Params:
    weight: object
    bias: object
    activation: str = "relu"


tu.register_dataclass(Params, data_fields=["weight", "bias"], meta_fields=["activation"])

TREES = [
    1,
    None,
    (),
    [1, 2, (3, 4)],
    {"b": 1, "a": [2, 3], "c": None},
    Point(1, (2, 3)),
    Pair(1, [2, {"k": 3}], name="p"),
    Scaled([1, 2], scale=10),
    Params(weight=1, bias=(2, 3), activation="tanh"),
    [None, Point(None, 1), {"z": Scaled(2, 0)}],
]
LEAF_COUNTS = [1, 0, 0, 4, 3, 3, 3, 2, 3, 2]


@pytest.mark.parametrize("tree, n_leaves", list(zip(TREES, LEAF_COUNTS)))
def test_flatten_unflatten_round_trip(tree, n_leaves):
    leaves, treedef = tu.tree_flatten(tree)
    assert len(leaves) == n_leaves == treedef.num_leaves
    assert tu.tree_unflatten(treedef, leaves) == tree
    assert tu.tree_structure(tree) == treedef
    assert tu.tree_leaves(tree) == leaves


def test_dicts_flatten_in_sorted_key_order():
    assert tu.tree_leaves({"b": 2, "a": 1, "c": 3}) == [1, 2, 3]


def test_tree_map_over_several_trees():
    a = {"x": [1, 2], "y": Point(3, 4)}
    b = {"x": [10, 20], "y": Point(30, 40)}
    c = {"x": [100, 200], "y": Point(300, 400)}
    out = tu.tree_map(lambda u, v, w: u + v + w, a, b, c)
    assert out == {"x": [111, 222], "y": Point(333, 444)}
    assert tu.tree_map(lambda v: v * 2, Params(1, (2, 3))) == Params(2, (4, 6))
    assert tu.tree_map(lambda v: v + 1, Scaled(1, 5)) == Scaled(2, 5)
    assert tu.tree_map(lambda v: v, None) is None


def test_is_leaf_stops_the_descent():
    tree = [(1, 2), (3, 4), 5]
    is_pair = lambda t: isinstance(t, tuple)
    assert tu.tree_leaves(tree, is_leaf=is_pair) == [(1, 2), (3, 4), 5]
    assert tu.tree_map(sum, tree[:2], is_leaf=is_pair) == [3, 7]


def test_none_is_an_empty_subtree():
    assert tu.tree_leaves([None, 1, (None,)]) == [1]
    assert tu.tree_map(lambda v: v + 1, [None, 1]) == [None, 2]


def test_mismatched_structures_are_a_clear_error():
    for other in ([1, 2, 3], (1, 2), {"a": 1}):
        with pytest.raises(secant.SecantValueError, match="does not match"):
            tu.tree_map(lambda u, v: u, [1, 2], other)
    with pytest.raises(ValueError, match="Dict key mismatch|does not match"):
        tu.tree_map(lambda u, v: u, {"a": 1}, {"b": 1})


def test_register_dataclass_infers_data_fields():
    @dataclasses.dataclass
    class Layer:
        w: object
        name: str = "dense"
    tu.register_dataclass(Layer, meta_fields=["name"])
    leaves, treedef = tu.tree_flatten(Layer(7, "out"))
    assert leaves == [7]
    assert tu.tree_unflatten(treedef, [8]) == Layer(8, "out")
    with pytest.raises(secant.SecantTypeError):
        tu.register_dataclass(Pair)


def test_tree_transpose():
    outer = tu.tree_structure([0, 0])
    inner = tu.tree_structure((0, 0, 0))
    assert tu.tree_transpose(outer, inner, [(1, 2, 3), (4, 5, 6)]) == ([1, 4], [2, 5], [3, 6])
    inner_dict = tu.tree_structure({"a": 0, "b": 0})
    assert tu.tree_transpose(outer, inner_dict, [{"a": 1, "b": 2}, {"a": 3, "b": 4}]) == \
        {"a": [1, 3], "b": [2, 4]}


def test_tree_flatten_with_path():
    tree = {"a": [1, 2], "b": Point(3, 4)}
    path_leaves, treedef = tu.tree_flatten_with_path(tree)
    assert [leaf for _, leaf in path_leaves] == [1, 2, 3, 4]
    assert treedef == tu.tree_structure(tree)
    assert [tu.keystr(p) for p, _ in path_leaves] == ["['a'][0]", "['a'][1]", "['b'].x", "['b'].y"]
    doubled = tu.tree_map_with_path(lambda p, v: (tu.keystr(p), v * 2), {"k": [5]})
    assert doubled == {"k": [("['k'][0]", 10)]}


def test_tree_reduce_and_all_leaves():
    assert tu.tree_reduce(lambda a, b: a + b, [1, (2, 3), {"x": 4}]) == 10
    assert tu.tree_reduce(lambda a, b: a * b, [2, 3], initializer=10) == 60
    assert tu.all_leaves([1, 2.0, "s"])
    assert not tu.all_leaves([1, (2,)])


def test_treedefs_compare_and_hash():
    a = tu.tree_structure({"x": [1, 2]})
    assert a == tu.tree_structure({"x": [5, 6]})
    assert a != tu.tree_structure({"x": (1, 2)})
    assert hash(a) == hash(tu.tree_structure({"x": [3, 4]}))
    assert tu.treedef_is_leaf(tu.tree_structure(1))
    assert not tu.treedef_is_leaf(tu.tree_structure([1]))


nested = st.recursive(
    st.integers(-5, 5) | st.none(),
    lambda children: (st.lists(children, max_size=3) | st.tuples(children, children)
                      | st.dictionaries(st.sampled_from("abc"), children, max_size=3)
                      | st.builds(Point, children, children)),
    max_leaves=12)


@given(nested)
def test_round_trip_property(tree):
    leaves, treedef = tu.tree_flatten(tree)
    assert tu.tree_unflatten(treedef, leaves) == tree
    assert tu.tree_map(lambda v: v, tree) == tree
    assert len(leaves) == treedef.num_leaves

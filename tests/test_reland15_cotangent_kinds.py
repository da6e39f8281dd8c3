"""reland15: the cotangents of one list may come as a list and as a tuple (`a, b = layers`
differentiated builds a tuple), at any depth: they add item by item as the first's kind, and
flatten against the list's structure (the o15_sequential triples of test_mods15d_triples)."""
import numpy as np
import pytest

import secant.numpy as snp
from secant import grad, tree_util
from secant.ad.helpers import add_grads

A, B = np.array([1.0, 2.0]), np.array([0.5, -1.0])


def test_add_grads_of_a_nested_list_and_tuple_adds_item_by_item():
    got = add_grads({"layers": [A, {"w": B}]}, {"layers": (2 * A, {"w": 3 * B})})
    assert isinstance(got["layers"], list)
    np.testing.assert_array_equal(got["layers"][0], 3 * A)
    np.testing.assert_array_equal(got["layers"][1]["w"], 4 * B)


def test_add_grads_of_different_lengths_is_refused():
    with pytest.raises(ValueError):
        add_grads({"layers": [A, B]}, {"layers": (A,)})


def test_tree_leaves_as_reads_a_tuple_against_a_lists_structure():
    treedef = tree_util.tree_structure({"layers": [A, B]})
    got = tree_util.tree_leaves_as({"layers": (B, A)}, treedef)
    np.testing.assert_array_equal(got[0], B)
    np.testing.assert_array_equal(got[1], A)


def test_grad_of_grad_through_a_list_unpacked_and_read_whole(x64):
    """A list of weights unpacked (`w1, w2 = ws`) and read whole (sum over it): its cotangents
    come as a tuple and a list; grad of the summed gradient against its closed form."""
    def f(ws):
        w1, w2 = ws
        return snp.sum(snp.sin(w1) * w2) + sum(snp.sum(w ** 3) for w in ws)

    def g(ws):
        d = grad(f)(ws)
        return snp.sum(d[0] * d[1])

    got = grad(g)([A, B])
    # d0 = cos(w1) w2 + 3 w1^2, d1 = sin(w1) + 3 w2^2; g = sum(d0 d1)
    d0, d1 = np.cos(A) * B + 3 * A ** 2, np.sin(A) + 3 * B ** 2
    want0 = (-np.sin(A) * B + 6 * A) * d1 + d0 * np.cos(A)
    want1 = np.cos(A) * d1 + d0 * 6 * B
    np.testing.assert_allclose(got[0], want0, rtol=1e-10)
    np.testing.assert_allclose(got[1], want1, rtol=1e-10)

"""The hand-written NumPy gradients bench/lean.py and bench/memory.py compare secant against are
correct: each equals secant.grad's and a float64 central difference along random directions."""
import os
import sys

import numpy as np
import pytest

import secant
from secant import tree_util

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import handwritten_grads as hand   # noqa: E402
import lean_functions as funcs     # noqa: E402


def _tree_vdot(a, b):
    return sum(float(np.vdot(np.asarray(x, np.float64), np.asarray(y, np.float64)))
               for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)))


@pytest.mark.parametrize("name", funcs.NAMES + funcs.LOOPS[1:])
def test_handwritten_gradient_matches_secant_and_finite_differences(name, x64):
    rng = np.random.default_rng(1)
    args = funcs.inputs(name, rng, np.float64, small=True)
    f = getattr(funcs, name)
    want = getattr(hand, name)(*args)
    got = secant.grad(f)(*args)
    assert tree_util.tree_structure(got) == tree_util.tree_structure(want)
    for g, w in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-9, atol=1e-12)
    eps = 1e-6
    for _ in range(3):
        v = tree_util.tree_map(lambda a: rng.normal(size=np.shape(a)), args[0])
        plus = tree_util.tree_map(lambda a, d: a + eps * d, args[0], v)
        minus = tree_util.tree_map(lambda a, d: a - eps * d, args[0], v)
        fd = (float(f(plus, *args[1:])) - float(f(minus, *args[1:]))) / (2 * eps)
        np.testing.assert_allclose(_tree_vdot(want, v), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", funcs.NAMES + funcs.LOOPS[1:])
def test_float32_inputs_give_the_same_gradient(name):
    """The figures run in float32: the hand-written gradient stays float32 and close to secant's."""
    args = funcs.inputs(name, np.random.default_rng(2), np.float32, small=True)
    want = getattr(hand, name)(*args)
    got = secant.grad(getattr(funcs, name))(*args)
    for g, w in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
        assert np.asarray(w).dtype == np.float32
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5)

"""Issue 15: a recursive helper dispatching on what a pytree's node is (`isinstance(tree, dict)`,
`tree is None`) under vmap, called on a batched tuple's None leaf (explore15l's
py_isinstance_dispatch). The batched helper sized its batch by `tree` (an array op reads it on
one branch) and could not size the 0.0 it returns for None: it now takes its caller's batch size,
and its recursive calls pass theirs on. Checked against Python loops of eager and grad, and
float64 central differences."""
import numpy as np
import pytest

import secant

from central_differences import grad_fd
from user_programs import habits

l2 = habits._l2                         # isinstance(tree, dict) / (list, tuple) / tree is None
loss = habits.py_isinstance_dispatch    # a two-layer loss + 0.1 * l2(params)

rng = np.random.default_rng(15)
X = rng.normal(size=(4, 3))
EXAMPLES = [{"layers": [rng.normal(size=(3, 3)), rng.normal(size=(3, 2))],
             "extra": (rng.normal(size=3), None)} for _ in range(3)]


def stacked(trees):
    return secant.tree_util.tree_map(lambda *leaves: np.stack(leaves), *trees)


def leaves(tree):
    return [np.asarray(v) for v in secant.tree_util.tree_leaves(tree)]


@pytest.mark.parametrize("jit", [False, True], ids=["vmap", "jit(vmap)"])
def test_vmap(x64, jit):
    f = secant.vmap(loss, in_axes=(0, None))
    got = (secant.jit(f) if jit else f)(stacked(EXAMPLES), X)
    np.testing.assert_allclose(got, [loss(p, X) for p in EXAMPLES], rtol=1e-12)


@pytest.mark.parametrize("jit", [False, True], ids=["vmap(grad)", "jit(vmap(grad))"])
def test_per_example_gradients(x64, jit):
    g = secant.vmap(secant.grad(loss), in_axes=(0, None))
    got = (secant.jit(g) if jit else g)(stacked(EXAMPLES), X)
    want = stacked([secant.grad(loss)(p, X) for p in EXAMPLES])
    assert secant.tree_util.tree_structure(got) == secant.tree_util.tree_structure(want)
    for a, b in zip(leaves(got), leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    # the loop's gradients themselves, against central differences (the first example's w1)
    p = EXAMPLES[0]
    w1 = p["layers"][0]
    fd = grad_fd(lambda w: float(loss({**p, "layers": [w, p["layers"][1]]}, X)), w1)
    np.testing.assert_allclose(leaves(got)[1][0], fd, rtol=1e-6, atol=1e-8)


def test_the_helper_alone_on_a_none_leaf(x64):
    trees = [(p["extra"][0], None, {"w": p["layers"][1]}) for p in EXAMPLES]
    got = secant.vmap(l2)(stacked(trees))
    np.testing.assert_allclose(got, [l2(t) for t in trees], rtol=1e-12)
    g = secant.vmap(secant.grad(l2))(stacked(trees))
    for a, b in zip(leaves(g), leaves(stacked([secant.grad(l2)(t) for t in trees]))):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(leaves(g)[0], 2 * stacked(trees)[0], rtol=1e-12)

"""A Jacobian of a Jacobian taken by rows (jacrev of jacrev or of jacfwd) runs the vjp of the
inner one's generated derivative once for all of its rows, batched (as JAX's vmap of the
pullback; it was once per row): the values for pytree arguments and outputs, several leaves of
each, against float64 central differences of the inner Jacobian, eagerly and under jit."""
import numpy as np
import pytest

import secant.numpy as snp
from secant import jacfwd, jacrev, jit, tree_util
from secant import transforms

W = np.array([[0.3, 0.7], [1.1, -0.4], [0.2, 0.5]])
V = np.array([0.5, -1.2])


def layer(w, v):
    return {"y": snp.tanh(w @ v) * snp.sum(v), "n": snp.sum(w ** 2) * v[0]}


def _fd(fun, args, k, h=1e-6):
    """d fun(*args) / d args[k], by central differences: leaves shaped out + args[k]."""
    x = np.asarray(args[k], np.float64)
    cols = []
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        up = [np.asarray(a) for a in tree_util.tree_leaves(
            fun(*args[:k], x + e, *args[k + 1:]))]
        down = [np.asarray(a) for a in tree_util.tree_leaves(
            fun(*args[:k], x - e, *args[k + 1:]))]
        cols.append([(u - d) / (2 * h) for u, d in zip(up, down)])
    return [np.moveaxis(np.stack(c), 0, -1).reshape(np.shape(c[0]) + x.shape)
            for c in zip(*cols)]


@pytest.mark.parametrize("inner", [jacrev, jacfwd])
@pytest.mark.parametrize("staged", [False, True])
def test_rows_of_a_jacobian_of_a_jacobian_of_pytrees(x64, inner, staged):
    j = inner(layer, argnums=(0, 1))
    g = jacrev(j, argnums=(0, 1))
    g = jit(g) if staged else g
    got = g(W, V)
    for k in (0, 1):
        want = _fd(j, (W, V), k)
        # got: for each leaf of j's output (a dict of (J_w, J_v) pairs), a pair over (w, v)
        leaves = [pair[k] for pair in tree_util.tree_leaves(
            got, is_leaf=lambda t: isinstance(t, tuple) and len(t) == 2
            and not isinstance(t[0], tuple))]
        assert len(leaves) == len(want)
        for a, b in zip(leaves, want):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-6, atol=1e-7)


def test_rows_one_by_one_give_the_same_matrix(x64, monkeypatch):
    """Where the rows' stacked factors would not fit (_BATCHED_ROWS), they are taken one by
    one: the same values."""
    batched = jacrev(jacrev(layer, argnums=1), argnums=(0, 1))(W, V)
    monkeypatch.setattr(transforms, "_BATCHED_ROWS", 0)
    looped = jacrev(jacrev(layer, argnums=1), argnums=(0, 1))(W, V)
    for a, b in zip(tree_util.tree_leaves(batched), tree_util.tree_leaves(looped)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)

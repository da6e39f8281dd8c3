"""lib15d: secant.tree_util.tree_map is as strict as JAX's about the kinds of its later trees
(a list where the first tree has a tuple is a ValueError), eagerly and under every transform,
while a derivative's own reading of a cotangent of a list that comes as a tuple stays lenient
(tests/test_reland15_cotangent_kinds.py)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import tree_util

A = np.array([1.0, 2.0])


def _mismatched(x):
    r = tree_util.tree_map(lambda u, v: u * v, [x, x], (x, x))
    return snp.sum(r[0])


def _tuple_then_list(x):
    r = tree_util.tree_map(lambda u, v: u * v, (x, x), [x, 2 * x])
    return snp.sum(r[1])


def _keys(x):
    r = tree_util.tree_map(lambda u, v: u * v, {"a": x}, {"b": x})
    return snp.sum(r["a"])


RUNS = {"eager": lambda f: f(A), "jit": lambda f: secant.jit(f)(A),
        "grad": lambda f: secant.grad(f)(A), "vmap": lambda f: secant.vmap(f)(np.stack([A, A])),
        "jvp": lambda f: secant.jvp(f, (A,), (A,)),
        "jacrev": lambda f: secant.jacrev(f)(A)}


@pytest.mark.parametrize("run", sorted(RUNS))
@pytest.mark.parametrize("f", [_mismatched, _tuple_then_list, _keys], ids=lambda f: f.__name__)
def test_a_later_tree_of_another_kind_is_a_value_error_naming_the_line(f, run):
    with pytest.raises(ValueError, match="tree_map") as info:
        RUNS[run](f)
    assert isinstance(info.value, secant.SecantError)
    assert "test_lib15d_tree_strict.py" in str(info.value)


def test_same_kinds_still_map_under_grad_against_closed_form():
    def f(x):
        r = tree_util.tree_map(lambda u, v: u * v, [x, snp.sin(x)], [x, x])
        return snp.sum(r[0] + r[1])
    # d/dx sum(x^2 + x sin x) = 2x + sin x + x cos x
    np.testing.assert_allclose(secant.grad(f)(A), 2 * A + np.sin(A) + A * np.cos(A),
                               rtol=1e-6)


def test_user_tree_map_over_a_gradient_of_a_list_unpacked(x64):
    """The gradient of a list the loss unpacks (`w1, w2 = ws`) is a list as ws is, so the
    user's strict tree_map over (ws, grads) reads it, under grad and vmap, against closed forms."""
    def loss(ws, x):
        w1, w2 = ws
        return snp.sum(snp.sin(w1 * x) * w2)

    def step(ws, x):
        g = secant.grad(loss)(ws, x)
        new = tree_util.tree_map(lambda p, d: p - 0.1 * d, ws, g)
        return snp.sum(new[0] * new[1])

    w1, w2, x = A, 0.5 * A, np.array([0.3, -0.7])

    def closed(w1, w2, x):
        n1 = w1 - 0.1 * np.cos(w1 * x) * x * w2
        n2 = w2 - 0.1 * np.sin(w1 * x)
        return np.sum(n1 * n2)

    np.testing.assert_allclose(step([w1, w2], x), closed(w1, w2, x), rtol=1e-12)
    got = secant.grad(step)([w1, w2], x)
    assert isinstance(got, list)
    eps = 1e-6
    for i in range(2):
        for j in range(2):
            e = np.zeros(2)
            e[j] = eps
            args_p = [w1 + e, w2] if i == 0 else [w1, w2 + e]
            args_m = [w1 - e, w2] if i == 0 else [w1, w2 - e]
            fd = (closed(*args_p, x) - closed(*args_m, x)) / (2 * eps)
            np.testing.assert_allclose(got[i][j], fd, rtol=1e-6, atol=1e-9)
    xs = np.stack([x, 2 * x])
    batched = secant.vmap(secant.grad(step), in_axes=(None, 0))([w1, w2], xs)
    for k in range(2):
        one = secant.grad(step)([w1, w2], xs[k])
        np.testing.assert_allclose(batched[0][k], one[0], rtol=1e-12)
        np.testing.assert_allclose(batched[1][k], one[1], rtol=1e-12)

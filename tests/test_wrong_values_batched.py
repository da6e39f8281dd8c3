"""Regression tests for silently wrong values the corpus found in batched and jitted
compositions (issue 15, section 1): each checks vmap against a Python loop of the same
derivative and against a closed form, in float64.

- vmap of a second derivative read an array cotangent's items (fields_of, the transpose of
  grad_of_fields) at the batch axis: examples mixed (array_of_list, inplace_set).
- reverse mode built the cotangent of a container read after an `if` (that assigns it in
  both branches) in the first branch only: jit's functionalised loop over a dict
  comprehension gave zeros (dict_comprehension).
"""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.batching.helpers import fields_of_batched

V = np.array([0.3, -0.7, 1.1])


def array_of_list(x):
    v = snp.array([x[0], 2.0 * x[1], x[0] * x[2]])
    return snp.sum(v ** 2)


def array_of_list_hessian(x):
    x0, _, x2 = x
    return np.array([[2 + 2 * x2 ** 2, 0, 4 * x0 * x2], [0, 8, 0], [4 * x0 * x2, 0, 2 * x0 ** 2]])


def inplace_set(x):
    y = snp.zeros(3)
    y[0] = snp.sin(x[0])
    y[2] = x[1] * x[2]
    return snp.sum(y * y)


def inplace_set_hessian(x):
    x0, x1, x2 = x
    return np.array([[2 * np.cos(2 * x0), 0, 0], [0, 2 * x2 ** 2, 4 * x1 * x2],
                     [0, 4 * x1 * x2, 2 * x1 ** 2]])


def _hvp(f):
    g = secant.grad(f)

    def hv(x):
        return snp.sum(g(x) * V)
    return secant.grad(hv)


@pytest.mark.parametrize("batch", [2, 3, 5])
@pytest.mark.parametrize("f, hessian", [(array_of_list, array_of_list_hessian),
                                        (inplace_set, inplace_set_hessian)],
                         ids=["array_of_list", "inplace_set"])
def test_vmap_of_second_derivative_keeps_examples_apart(x64, f, hessian, batch):
    xs = np.random.default_rng(batch).normal(size=(batch, 3))
    hvp = _hvp(f)
    got = np.asarray(secant.vmap(hvp)(xs))
    loop = np.stack([np.asarray(hvp(x)) for x in xs])
    closed = np.stack([hessian(x) @ V for x in xs])
    np.testing.assert_allclose(loop, closed, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got, loop, rtol=1e-10, atol=1e-12)


def test_jit_of_vmap_of_second_derivative(x64):
    xs = np.random.default_rng(1).normal(size=(3, 3))
    hvp = _hvp(array_of_list)
    got = np.asarray(secant.jit(secant.vmap(hvp))(xs))
    np.testing.assert_allclose(got, np.stack([array_of_list_hessian(x) @ V for x in xs]),
                               rtol=1e-10, atol=1e-12)


def dict_comprehension(x):
    d = {k: x * v for k, v in zip("abc", [1.0, 2.0, 3.0])}
    return snp.sum(d["a"] * d["c"] + d["b"])


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_grad_of_vmap_sum_over_dict_comprehension(x64, jit):
    vf = secant.vmap(dict_comprehension)

    def total(xs):
        return snp.sum(vf(xs))
    xs = np.random.default_rng(81).normal(size=(2, 3))
    g = secant.grad(total)
    got = np.asarray((secant.jit(g) if jit else g)(xs))
    loop = np.stack([np.asarray(secant.grad(dict_comprehension)(x)) for x in xs])
    np.testing.assert_allclose(loop, 6 * xs + 2, rtol=1e-12)       # d/dx (3x^2 + 2x)
    np.testing.assert_allclose(got, loop, rtol=1e-12)


def container_in_both_branches(x):
    if snp.sum(x) > 0:
        d = {"a": x, "b": 2.0 * x}
    else:
        d = {"a": 3.0 * x, "b": x}
    return snp.sum(d["a"] * d["b"])


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_fields_read_after_an_if_that_assigns_the_container(x64, sign):
    x = sign * np.array([0.5, 1.5, 0.25])
    got = np.asarray(secant.grad(container_in_both_branches)(x))
    np.testing.assert_allclose(got, 4 * x if sign > 0 else 6 * x, rtol=1e-12)
    got_jit = np.asarray(secant.jit(secant.grad(container_in_both_branches))(x))
    np.testing.assert_allclose(got_jit, got, rtol=1e-12)


def test_fields_of_batched_reads_each_examples_item(x64):
    t = np.arange(6.0).reshape(2, 3)
    a, c = fields_of_batched(t, {0: None, 2: None}, 2, True)
    np.testing.assert_array_equal(a, t[:, 0])
    np.testing.assert_array_equal(c, t[:, 2])
    (b,) = fields_of_batched(np.array([4.0, 5.0, 6.0]), {1: None}, 2, False)
    np.testing.assert_array_equal(b, [5.0, 5.0])
    d = fields_of_batched({"w": t, "b": t[:, 0]}, ("b", "w"), 2, True)
    np.testing.assert_array_equal(d[0], t[:, 0])
    np.testing.assert_array_equal(d[1], t)


def _read_at_named_tuple(a, i):
    index = (snp.arange(3), i)          # a tuple index in a variable: tracked when i is batched
    return a.at[index].get(mode="clip")


@pytest.mark.parametrize("in_axes", [(None, 0), (0, 0), (0, None)])
def test_at_get_with_a_named_tuple_index(x64, in_axes):
    """vmap read `a.at[index].get(mode=...)` with a batched tuple index in a variable and an
    unbatched a as unbatched: every example's read was broadcast over the batch (a (2, 2, 3)
    result instead of (2, 3)). Also batching/helpers.take_per_example, vmapped with batched
    indices (vmap of hessian of a loop indexing x by its counter)."""
    from secant.batching.helpers import take_per_example
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 3, 4) if in_axes[0] == 0 else (3, 4))
    i = rng.integers(0, 4, size=(2, 3) if in_axes[1] == 0 else (3,))

    def one(k, fn):
        return np.asarray(fn(snp.asarray(a[k] if in_axes[0] == 0 else a),
                             snp.asarray(i[k] if in_axes[1] == 0 else i)))
    for fn in (_read_at_named_tuple, take_per_example):
        got = secant.vmap(fn, in_axes=in_axes)(snp.asarray(a), snp.asarray(i))
        want = np.stack([one(k, fn) for k in range(2)])
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)

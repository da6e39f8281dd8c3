"""Library defects found by api17 (issue 15): vmap of tuple()/list() of a value whose kind is
known only when the code runs (a source function's tuple, or an array's rows); `not` of a
container under vmap (lexsort); snp.block (its nesting planned from tree_structure, static
under vmap). Each against NumPy and a Python loop, grad against central differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from tests.central_differences import weighted_fd

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("fn", [
    lambda x: tuple(snp.unstack(x))[1],
    lambda x: list(snp.unstack(x, axis=1))[2] * 2.0,
    lambda x: tuple(x)[0] - tuple(x)[2],          # an array's rows
    lambda x: sum(tuple(snp.unstack(x))),
], ids=["unstack", "list-axis1", "rows", "sum"])
def test_tuple_of_a_source_functions_result_under_vmap(x64, fn):
    x = RNG.normal(size=(2, 3, 4))
    want = np.stack([np.asarray(fn(r)) for r in x])
    np.testing.assert_allclose(np.asarray(secant.vmap(fn)(x)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(fn))(x)), want, rtol=1e-12)
    g0, w = weighted_fd(lambda v: np.stack([np.asarray(fn(r)) for r in v]), x)
    g = secant.grad(lambda v: snp.sum(secant.vmap(fn)(v) * w))(x)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-6, atol=1e-8)


def test_lexsort_and_not_of_a_list_under_vmap():
    a = RNG.integers(0, 3, (4, 6)).astype(float)
    b = RNG.integers(0, 3, (4, 6)).astype(float)
    got = secant.vmap(lambda a, b: snp.lexsort((a, -b)))(a, b)
    np.testing.assert_array_equal(np.asarray(got),
                                  np.stack([np.lexsort((x, -y)) for x, y in zip(a, b)]))
    got = secant.vmap(snp.lexsort)(np.stack([a, b], 1))
    np.testing.assert_array_equal(np.asarray(got),
                                  np.stack([np.lexsort((x, y)) for x, y in zip(a, b)]))

    def f(x):
        parts = [x, 2 * x]
        if not parts:
            return x
        return parts[1] if not [] else parts[0]
    x = np.arange(3.0)
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(x)), 2 * x)
    np.testing.assert_allclose(np.asarray(secant.grad(lambda v: snp.sum(f(v)))(x)), 2.0)


def test_block_under_vmap_grad_and_jit(x64):
    a, b = RNG.normal(size=(3, 2, 2)), RNG.normal(size=(3, 2))

    def f(a, b):
        return snp.block([[a, b[:, None]], [b[None], snp.ones((1, 1))]])

    def f_np(a, b):
        return np.block([[a, b[:, None]], [b[None], np.ones((1, 1))]])
    want = np.stack([f_np(x, y) for x, y in zip(a, b)])
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(a, b)), want)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(f))(a, b)), want)
    np.testing.assert_allclose(np.asarray(secant.vmap(f, in_axes=(0, None))(a, b[0])),
                               np.stack([f_np(x, b[0]) for x in a]))
    g0, w = weighted_fd(lambda v: f_np(a[0], v), b[0])
    g = secant.grad(lambda v: snp.sum(f(a[0], v) * w))(b[0])
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-6, atol=1e-8)
    h = secant.vmap(secant.grad(lambda v: snp.sum(snp.block([v, 2 * v]) ** 2)))(b)
    np.testing.assert_allclose(np.asarray(h), 10 * b)


@pytest.mark.parametrize("arrays, error", [
    ((np.ones(2), np.ones(2)), TypeError),
    ([], ValueError),
    ([np.ones(2), [np.ones(2)]], ValueError),
], ids=["tuple", "empty", "mismatched-depths"])
def test_block_refuses_what_numpy_refuses(arrays, error):
    with pytest.raises(error):
        np.block(arrays)
    with pytest.raises(error):
        snp.block(arrays)

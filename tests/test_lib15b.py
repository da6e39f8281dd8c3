"""Issue 15 (lib15b): no silent zero for nextafter's derivative; snp.iterable under grad/vmap;
array_equiv and the set functions under grad (clear refusals at the user's line without size=)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

X = np.array([1.0, 2.0, 2.0, 3.0], np.float32)


def _nextafter_x(x):
    return snp.nextafter(x, 5.0).sum()


def _nextafter_y(x):
    return snp.nextafter(2.0, x).sum()


@pytest.mark.parametrize("fn", [_nextafter_x, _nextafter_y])
@pytest.mark.parametrize("transform", ["grad", "jvp"])
def test_nextafter_derivative_refused_at_the_users_line(fn, transform):
    with pytest.raises(secant.SecantError, match=r"(?s)nextafter.*test_lib15b\.py"):
        if transform == "grad":
            secant.grad(fn)(X)
        else:
            secant.jvp(fn, (X,), (np.ones_like(X),))


def test_nextafter_of_a_stopped_value_and_spacing_still_differentiate():
    def f(x):
        return (x * snp.nextafter(lax.stop_gradient(x), 5.0)).sum()
    np.testing.assert_allclose(secant.grad(f)(X), np.nextafter(X, np.float32(5)), rtol=1e-6)

    def g(x):       # spacing is piecewise constant: derivative 0
        return (snp.spacing(x) + x).sum()
    np.testing.assert_allclose(secant.grad(g)(X), np.ones(4))


def test_iterable_under_grad_and_vmap():
    def f(x):
        return snp.sum(x) * snp.iterable(x)
    np.testing.assert_allclose(secant.grad(f)(X), np.ones(4))

    def g(x):
        return snp.where(snp.iterable(x), x, 2 * x)
    np.testing.assert_allclose(secant.vmap(g)(X), 2 * X)          # examples are 0-d: False
    rows = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(secant.vmap(g)(rows), rows)        # examples are 1-d: True
    assert [snp.iterable(v) for v in (X, 3, [1], "ab", np.float32(1))] == \
        [np.iterable(v) for v in (X, 3, [1], "ab", np.float32(1))]


def test_array_equiv_is_a_constant_for_grad():
    def f(x):
        return snp.sum(x ** 2) * snp.array_equiv(x, x)
    np.testing.assert_allclose(secant.grad(f)(X), 2 * X)

    def g(x):
        return snp.sum(x) * snp.array_equiv(x, 2.0)
    np.testing.assert_allclose(secant.grad(g)(X), np.zeros(4))


SET_CALLS = {
    "unique": lambda x: snp.unique(x).sum(),
    "unique_values": lambda x: snp.unique_values(x).sum(),
    "unique_counts": lambda x: snp.unique_counts(x).values.sum(),
    "union1d": lambda x: snp.union1d(x, x).sum(),
    "setdiff1d": lambda x: snp.setdiff1d(x, x[:1]).sum(),
    "setxor1d": lambda x: snp.setxor1d(x, x[:1]).sum(),
    "intersect1d": lambda x: snp.intersect1d(x, x[:2]).sum(),
}


@pytest.mark.parametrize("name", sorted(SET_CALLS))
def test_set_functions_without_size_refused_under_grad(name):
    with pytest.raises(secant.SecantError, match=r"(?s)static size=.*test_lib15b\.py"):
        secant.grad(SET_CALLS[name])(X)


def test_set_functions_with_size_differentiate_as_jax():
    # JAX: grad of unique(x, size=3).sum() at [1, 2, 2, 3] is [1, 1, 0, 1] (first occurrences)
    def f(x):
        return snp.unique(x, size=3).sum()
    np.testing.assert_allclose(secant.grad(f)(X), [1, 1, 0, 1])

    def g(x):
        return snp.unique_counts(x, size=3).values.sum()
    np.testing.assert_allclose(secant.grad(g)(X), [1, 1, 0, 1])


def test_setxor1d_with_size_under_grad_and_vmap():
    x = np.array([3.0, 1.0, 2.0, 2.0, 5.0], np.float32)

    def f(x):       # xor of {1, 2, 3, 5} and {4, 2}: [1, 3, 4] kept; 4 is x[0] + 1
        return (snp.setxor1d(x, x[:2] + 1, size=3) * np.arange(1, 4)).sum()
    np.testing.assert_allclose(secant.grad(f)(x), [5, 1, 0, 0, 0])     # (JAX's answer)
    # values: NumPy's, padded with the smallest value kept (JAX's default fill)
    for a, b in (([1, 2, 2, 7], [1, 3, 3]), ([1, 2], [1, 3]), ([4, 4], [4])):
        want = np.setxor1d(a, b)
        got = snp.setxor1d(np.array(a), np.array(b), size=4)
        pad = want.min() if want.size else 0
        np.testing.assert_array_equal(got, np.concatenate([want, np.full(4 - want.size, pad)]))
    rows = np.array([[1, 2, 2, 7], [3, 3, 4, 1]])

    def g(r):
        return snp.setxor1d(r, np.array([1, 3]), size=3, fill_value=-1)
    np.testing.assert_array_equal(secant.vmap(g)(rows), np.stack([g(r) for r in rows]))

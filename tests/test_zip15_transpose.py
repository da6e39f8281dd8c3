"""zip15 (issue 15): `zip(*rows)` of a comprehension of k-item tuples (written in place or
bound once to a name), unpacked (`xs, ys = zip(*...)`) or iterated (`for u, v in zip(*...)`),
under grad, hessian and jvp against float64 central differences and under vmap against a
Python loop (transformer/statements.py transpose); and `list(zip(*rows))`, a display of
tuples written in place."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

COEFFS = [(1.0, 2.0), (0.5, -1.0), (3.0, 0.25)]


def unzip_in_place(x):
    xs, ys = zip(*[(a * x, b * x) for a, b in COEFFS])
    return snp.sum(snp.stack(xs) * snp.stack(ys))


def unzip_named(x):
    pairs = [(a * x, snp.sin(b * x)) for a, b in COEFFS]
    xs, ys = zip(*pairs)
    return snp.sum(snp.stack(xs) * snp.stack(ys))


def unzip_filtered_three(x):
    xs, ys, zs = zip(*(((a * x, x ** 2, snp.cos(b * x)) for a, b in COEFFS if a > 0.7)))
    return snp.sum(snp.stack(xs) * snp.stack(ys) + snp.stack(zs))


def loop_over_columns(x):
    s = 0.0
    for u, v, w in zip(*[(a * x, b * x) for a, b in COEFFS]):
        s = s + snp.sum(u * v * snp.cos(w))
    return s


def loop_over_named_columns(x):
    rows = [[c * x, snp.sin(c * x)] for c in (1.0, 2.0, 3.0)]
    s = 0.0
    for col in zip(*rows):
        s = s + snp.sum(snp.stack(col) ** 2)
    return s


def unzip_display_in_place(x):
    xs, ys = zip(*[(x, 2 * x), (3 * x, snp.sin(x))])
    return snp.sum(snp.stack(xs) * snp.stack(ys))


def listed_columns_of_a_display(x):
    """zip stops at the shortest row: two columns"""
    cols = list(zip(*[(x, 2 * x, x), (3 * x, snp.sin(x))]))
    return snp.sum(snp.stack(cols[0]) * snp.stack(cols[1])) + len(cols)


def tupled_columns_of_a_comprehension(x):
    cols = tuple(zip(*[(a * x, snp.exp(b * x)) for a, b in COEFFS]))
    return snp.sum(snp.stack(cols[0]) * snp.stack(cols[-1]))


PROGRAMS = [unzip_in_place, unzip_named, unzip_filtered_three, loop_over_columns,
            loop_over_named_columns, unzip_display_in_place, listed_columns_of_a_display,
            tupled_columns_of_a_comprehension]
X = np.array([0.3, -0.7])


def _fd(f, x, h=1e-6):
    """float64 central differences of f at x: f's shape, then x's"""
    out = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        out.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(out, axis=-1).reshape(np.shape(f(x)) + x.shape)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_grad(x64, fn):
    np.testing.assert_allclose(secant.grad(fn)(X), _fd(lambda u: float(fn(u)), X),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_hessian(x64, fn):
    np.testing.assert_allclose(secant.hessian(fn)(X), _fd(secant.grad(fn), X),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_jvp(x64, fn):
    t = np.array([0.4, -1.3])
    value, tangent = secant.jvp(fn, (X,), (t,))
    np.testing.assert_allclose(value, fn(X), rtol=1e-12)
    np.testing.assert_allclose(tangent, _fd(lambda u: float(fn(u)), X) @ t,
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap(x64, fn):
    xs = np.array([[0.3, -0.7], [1.1, 0.2], [-0.5, 0.9]])
    np.testing.assert_allclose(secant.vmap(fn)(xs), [fn(x) for x in xs], rtol=1e-12)


def test_unzip_into_the_wrong_number_of_names_is_not_transposed(x64):
    """three names for pairs: Python raises; secant does not read it as a transposition"""
    def bad(x):
        xs, ys, zs = zip(*[(a * x, b * x) for a, b in COEFFS])
        return snp.sum(snp.stack(xs))
    with pytest.raises(secant.SecantError, match="starred argument"):
        secant.grad(bad)(X)

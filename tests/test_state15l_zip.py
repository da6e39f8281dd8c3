"""`zip(*pairs)` of a PARAMETER (issue 15, after zip15's `zip(*rows)` of local lists): how many
columns it gives only a call knows (the pytree's structure), so the transforms trace the
function on each call's arguments instead (transformer/normalize.py: the starred argument's
error carries global_flow; secant/transforms.py _traced_instead), as jit reads it when it
traces. Refused before. Checked against closed forms and a Python loop."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

A = [np.array([1.0, 2.0]), np.array([0.5, -1.0]), np.array([-0.3, 0.8])]
B = [np.array([3.0, 4.0]), np.array([2.0, 0.1]), np.array([1.5, -0.2])]


def dot_of_columns(pairs):
    xs, ys = zip(*pairs)
    return snp.sum(snp.stack(xs) * snp.sin(snp.stack(ys)))


def loop_over_columns(pairs):
    total = 0.0
    for col in zip(*pairs):
        total = total + snp.sum(snp.stack(col) ** 2) * len(col)
    return total


def _pairs(k, as_tuple=False):
    rows = [(A[i], B[i]) for i in range(k)]
    return tuple(rows) if as_tuple else rows


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("as_tuple", [False, True], ids=["list", "tuple"])
def test_grad_of_zip_star_of_a_parameter(x64, k, as_tuple):
    pairs = _pairs(k, as_tuple)
    got = secant.grad(dot_of_columns)(pairs)
    assert type(got) is type(pairs) and len(got) == k
    for (gx, gy), (x, y) in zip(got, pairs):
        np.testing.assert_allclose(np.asarray(gx), np.sin(y), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(gy), x * np.cos(y), rtol=1e-12)
    got = secant.grad(loop_over_columns)(pairs)     # each column has k values: 2 k v
    for (gx, gy), (x, y) in zip(got, pairs):
        np.testing.assert_allclose(np.asarray(gx), 2 * k * x, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(gy), 2 * k * y, rtol=1e-12)


def test_jit_grad_and_vmap_of_zip_star_of_a_parameter(x64):
    for k in (2, 3):                # (each structure traced for its own call)
        pairs = _pairs(k)
        got = secant.jit(secant.grad(dot_of_columns))(pairs)
        for (gx, gy), (x, y) in zip(got, pairs):
            np.testing.assert_allclose(np.asarray(gx), np.sin(y), rtol=1e-6)
            np.testing.assert_allclose(np.asarray(gy), x * np.cos(y), rtol=1e-6)
        batched = [(np.stack([x, 2 * x]), np.stack([y, y - 1])) for x, y in pairs]
        got = np.asarray(secant.vmap(dot_of_columns)(batched))
        want = [dot_of_columns([(x[i], y[i]) for x, y in batched]) for i in range(2)]
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12)
        got = secant.vmap(secant.grad(dot_of_columns))(batched)
        for (gx, gy), (x, y) in zip(got, batched):
            np.testing.assert_allclose(np.asarray(gx), np.sin(y), rtol=1e-12)
            np.testing.assert_allclose(np.asarray(gy), x * np.cos(y), rtol=1e-12)


def test_hessian_of_zip_star_of_a_parameter(x64):
    """f = sum_i x_i . sin(y_i): d2f/dx_i dy_i = diag(cos y_i), d2f/dy_i2 = -diag(x_i sin y_i),
    every other block zero."""
    pairs = _pairs(2)
    h = secant.hessian(dot_of_columns)(pairs)
    for i, (x, y) in enumerate(pairs):
        for j in range(2):
            for a in range(2):
                for b in range(2):
                    block = np.asarray(h[i][a][j][b])
                    want = np.zeros((2, 2))
                    if i == j and {a, b} == {0, 1}:
                        want = np.diag(np.cos(y))
                    elif i == j and a == b == 1:
                        want = -np.diag(x * np.sin(y))
                    np.testing.assert_allclose(block, want, atol=1e-12)

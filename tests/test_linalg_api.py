"""jax.numpy.linalg's Array API spellings (vector_norm, matrix_norm, cross, outer, trace,
diagonal, matmul, tensordot, vecdot, matrix_transpose) and cond, tensorinv, tensorsolve: values
against NumPy in float64, eagerly and under jit, gradients against central differences, vmap
against a loop."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

L = snp.linalg
rng = np.random.default_rng(0)
A = rng.normal(size=(3, 4, 4))
B = rng.normal(size=(3, 4, 4))
v = rng.normal(size=(3, 3))
w = rng.normal(size=(3, 3))

CASES = {
    "vector_norm": (lambda a: L.vector_norm(a, axis=(1, 2)), A,
                    lambda a: np.sqrt((a ** 2).sum((1, 2)))),
    "vector_norm3": (lambda a: L.vector_norm(a, ord=3), A,
                     lambda a: (np.abs(a) ** 3).sum() ** (1 / 3)),
    "vector_norm_inf": (lambda a: L.vector_norm(a, ord=np.inf, axis=-1), A,
                        lambda a: np.abs(a).max(-1)),
    "matrix_norm": (lambda a: L.matrix_norm(a), A, lambda a: np.linalg.norm(a, axis=(-2, -1))),
    "matrix_norm_nuc": (lambda a: L.matrix_norm(a, ord="nuc"), A,
                        lambda a: np.linalg.norm(a, "nuc", axis=(-2, -1))),
    "cross": (lambda a: L.cross(a, w), v, lambda a: np.cross(a, w)),
    "outer": (lambda a: L.outer(a[0], w[1]), v, lambda a: np.outer(a[0], w[1])),
    "trace": (lambda a: L.trace(a, offset=1), A, lambda a: np.trace(a, 1, -2, -1)),
    "diagonal": (lambda a: L.diagonal(a), A, lambda a: np.diagonal(a, 0, -2, -1)),
    "matmul": (lambda a: L.matmul(a, B), A, lambda a: a @ B),
    "tensordot": (lambda a: L.tensordot(a, B[0], axes=2), A, lambda a: np.tensordot(a, B[0], 2)),
    "vecdot": (lambda a: L.vecdot(a, w), v, lambda a: (a * w).sum(-1)),
    "matrix_transpose": (lambda a: L.matrix_transpose(a), A, lambda a: np.swapaxes(a, -1, -2)),
    "cond": (lambda a: L.cond(a), A, lambda a: np.linalg.cond(a)),
    "cond1": (lambda a: L.cond(a, 1), A, lambda a: np.linalg.cond(a, 1)),
    "cond_fro": (lambda a: L.cond(a, "fro"), A, lambda a: np.linalg.cond(a, "fro")),
    "tensorinv": (lambda a: L.tensorinv(snp.reshape(a[0], (2, 2, 4)), ind=2), A,
                  lambda a: np.linalg.tensorinv(a[0].reshape(2, 2, 4), 2)),
    "tensorsolve": (lambda a: L.tensorsolve(snp.reshape(a[0], (2, 2, 4)), v[:2, :2]), A,
                    lambda a: np.linalg.tensorsolve(a[0].reshape(2, 2, 4), v[:2, :2])),
}


def _fd(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (np.sum(f(x + e)) - np.sum(f(x - e))) / (2 * h)
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_gradients_and_vmap(name, x64):
    f, x, ref = CASES[name]
    np.testing.assert_allclose(np.asarray(f(x)), ref(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(f)(x)), ref(x), rtol=1e-10, atol=1e-12)
    g = secant.grad(lambda x: snp.sum(f(x)))(x)
    np.testing.assert_allclose(np.asarray(g), _fd(ref, x), rtol=1e-6, atol=1e-8)
    batched = secant.vmap(f)(np.stack([x, x * 2]))
    np.testing.assert_allclose(np.asarray(batched), np.stack([ref(x), ref(x * 2)]), rtol=1e-10,
                               atol=1e-12)


def test_cond_of_a_singular_matrix_is_inf_and_errors_are_clear():
    assert float(L.cond(np.array([[1.0, 2.0], [2.0, 4.0]]), 1)) == np.inf
    with pytest.raises(ValueError, match="3-vectors"):
        L.cross(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="one-dimensional"):
        L.outer(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="product of the first"):
        L.tensorinv(np.ones((2, 3, 4)), 1)

"""Library functions passed directly to transforms (issue 15): vmap(lax.cond) with its
branch functions unmapped (static values), jacfwd(snp.atleast_1d), grad through lax.cond by
a lambda; checked against NumPy and closed forms."""
import numpy as np

import secant.numpy as snp
from secant import grad, jacfwd, jacrev, lax, vmap

X = np.array([0.3, 0.7, -0.2])
P = np.array([True, False, True])


def test_vmap_of_lax_cond_with_unmapped_functions(x64):
    got = vmap(lax.cond, in_axes=(0, None, None, 0))(P, snp.sin, snp.cos, X)
    np.testing.assert_allclose(got, np.where(P, np.sin(X), np.cos(X)), rtol=1e-12)
    got = vmap(lax.cond, in_axes=(None, None, None, 0))(False, snp.sin, snp.cos, X)
    np.testing.assert_allclose(got, np.cos(X), rtol=1e-12)


def test_library_functions_and_lambdas(x64):
    np.testing.assert_allclose(jacfwd(snp.atleast_1d)(2.0), [1.0])
    np.testing.assert_allclose(jacrev(snp.atleast_1d)(X), np.eye(3))
    cond = lambda p, x: lax.cond(p, snp.sin, snp.cos, x)   # noqa: E731
    np.testing.assert_allclose(grad(cond, argnums=1)(True, 0.3), np.cos(0.3))
    np.testing.assert_allclose(grad(cond, argnums=1)(False, 0.3), -np.sin(0.3))
    np.testing.assert_allclose(vmap(cond)(P, X), np.where(P, np.sin(X), np.cos(X)))
    np.testing.assert_allclose(grad(lambda x: snp.sum(vmap(cond)(P, x)))(X),
                               np.where(P, np.cos(X), -np.sin(X)))
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(grad(lambda v: snp.einsum("ij,j->", a, v))(X), a.sum(0))

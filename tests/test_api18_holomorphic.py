"""grad(..., holomorphic=True) read by other transforms: jit, vmap, jit of vmap and grad of it
(holomorphic again) give f'(z) and f''(z) of closed forms; has_aux stays a clear error."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def f(z):
    return z ** 3 + 2j * snp.sin(z)


def df(z):
    return 3 * z ** 2 + 2j * np.cos(z)


def d2f(z):
    return 6 * z - 2j * np.sin(z)


ZS = np.array([1.0 + 2.0j, 0.5 - 1.0j, -2.0 + 0.25j], np.complex64)


def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-5)


def test_holomorphic_grad_under_other_transforms():
    g = secant.grad(f, holomorphic=True)
    close(g(ZS[0]), df(ZS[0]))
    close(secant.jit(g)(ZS[0]), df(ZS[0]))
    close(secant.vmap(g)(ZS), df(ZS))
    close(secant.jit(secant.vmap(g))(ZS), df(ZS))
    close(secant.vmap(secant.grad(g, holomorphic=True))(ZS), d2f(ZS))
    assert "f_vjp(snp.ones_like(out), z)" in secant.source(g)


def test_holomorphic_grad_with_argnums_tuple_and_errors():
    g = secant.grad(lambda z, w: z * w ** 2, argnums=(1,), holomorphic=True)
    got = secant.vmap(g)(ZS, ZS)
    assert isinstance(got, tuple) and len(got) == 1
    close(got[0], 2 * ZS * ZS)
    with pytest.raises(secant.SecantError, match="complex dtype"):
        secant.grad(f, holomorphic=True)(1.0)
    with pytest.raises(secant.SecantError, match="has_aux"):
        secant.vmap(secant.grad(lambda z: (f(z), z), has_aux=True, holomorphic=True))(ZS)

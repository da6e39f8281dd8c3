"""vjp of a function with integer or boolean inputs: their cotangents are float0 zeros, as in
JAX (jax.dtypes.float0, secant.dtypes.float0), under grad, vmap and jit too."""
import numpy as np

import secant
import secant.numpy as snp
from secant import grad, jit, vjp, vmap


def _is_float0(c, shape=()):
    assert c.dtype == secant.dtypes.float0 and np.shape(c) == shape


def test_vjp_of_an_int_input_is_float0(x64):
    out, pb = vjp(lambda a, n: snp.sin(a) * n, 0.7, 3)
    np.testing.assert_allclose(out, 3 * np.sin(0.7))
    a_bar, n_bar = pb(1.0)
    np.testing.assert_allclose(a_bar, 3 * np.cos(0.7))
    _is_float0(n_bar)
    a_bar, n_bar = vjp(lambda n, a: a * snp.sum(n), snp.arange(3), 2.0)[1](1.0)[::-1]
    np.testing.assert_allclose(a_bar, 3.0)
    _is_float0(n_bar, (3,))
    only_int = vjp(lambda n: n * 2, 3)[1](np.zeros((), secant.dtypes.float0))
    _is_float0(only_int[0])
    a_bar, (k0, k1) = vjp(lambda a, ks: a * ks[0] + ks[1], 2.0, [3, 4])[1](1.0)
    np.testing.assert_allclose(a_bar, 3.0)
    _is_float0(k0)
    _is_float0(k1)


def test_vjp_function_with_float0_under_transforms(x64):
    _, pb = vjp(lambda a, n: snp.sin(a) * n, 0.7, 3)
    h = 1e-6
    want = 3 * np.cos(0.7)
    np.testing.assert_allclose(grad(lambda c: pb(c)[0])(1.0), want)
    fd = (float(pb(1.0 + h)[0]) - float(pb(1.0 - h)[0])) / (2 * h)
    np.testing.assert_allclose(fd, want, rtol=1e-6)
    a_bars, n_bars = vmap(pb)(snp.asarray([1.0, 2.0]))
    np.testing.assert_allclose(a_bars, [want, 2 * want])
    _is_float0(n_bars, (2,))
    a_bar, n_bar = jit(pb)(2.0)
    np.testing.assert_allclose(a_bar, 2 * want)
    _is_float0(n_bar)
    np.testing.assert_allclose(jit(lambda a: vjp(lambda a, n: a * n, a, 3)[1](1.0)[0])(2.0), 3.0)

"""secant.clear_caches (as jax.clear_caches): compiled programs and jit trace caches dropped,
jitted functions still right afterwards."""
import numpy as np

import secant
import secant.numpy as snp
from secant import api


def test_clear_caches_compiles_again_and_keeps_values():
    f = secant.jit(lambda x: snp.sum(snp.tanh(x) * 3.0))
    x = np.linspace(0.1, 1.0, 5, dtype=np.float32)
    want = np.sum(np.tanh(x) * 3.0)
    np.testing.assert_allclose(f(x), want, rtol=1e-6)
    before = api.stats["traces"], api.stats["compiles"]
    np.testing.assert_allclose(f(x), want, rtol=1e-6)          # warm: no new trace
    assert (api.stats["traces"], api.stats["compiles"]) == before
    secant.clear_caches()
    assert not api._executables
    np.testing.assert_allclose(f(x), want, rtol=1e-6)          # traced and compiled again
    assert api.stats["traces"] == before[0] + 1
    assert api.stats["compiles"] == before[1] + 1
    np.testing.assert_allclose(f(snp.asarray(x)), want, rtol=1e-6)     # device arrays too


def test_clear_caches_drops_eager_kernels():
    a = np.array([[4.0, 1.0], [2.0, 3.0]])
    lu = secant.scipy.linalg.lu_factor(a)
    secant.clear_caches()
    from secant.backends import compiled_kernels
    assert not compiled_kernels._executables
    again = secant.scipy.linalg.lu_factor(a)
    np.testing.assert_allclose(again[0], lu[0])
    np.testing.assert_array_equal(again[1], lu[1])

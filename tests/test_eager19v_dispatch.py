"""Issue 19 (eager19v): jit's warm call of device arrays runs a one-output program inline in
JitFunction.__call__ (no runner frame): the same results as eager, the LRU order kept, hoisted
parameters passed, a donated argument refused as before. No timings here."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def _f(a, b):
    return a * b + a


def test_warm_device_calls_are_eager_values():
    a = np.linspace(0, 1, 8, dtype=np.float32)
    b = np.linspace(1, 2, 8, dtype=np.float32)
    f = secant.jit(_f)
    da, db = secant.device_put((a, b))
    want = a * b + a
    for _ in range(3):      # (the first traces, then the warm path: `last`)
        out = f(da, db)
        assert out.dtype == np.float32 and not out.weak_type
        np.testing.assert_array_equal(np.asarray(out), want)
    # its output fed back: an array this program made (same aval object)
    np.testing.assert_allclose(np.asarray(f(out, db)), want * b + want, rtol=1e-6)
    # a weak output (a Python number's) keeps its weak type on the warm path
    g = secant.jit(lambda x: x * 2.0)
    w = g(secant.device_put(snp.asarray(1.5)))
    for _ in range(3):
        w2 = g(w)
        assert w2.weak_type == w.weak_type and float(w2) == 2 * float(w)


def test_two_signatures_alternate_in_lru_order():
    f = secant.jit(_f)
    x8 = secant.device_put(np.arange(8, dtype=np.float32))
    x3 = secant.device_put(np.arange(3, dtype=np.float32))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(x8, x8)), np.arange(8) ** 2 + np.arange(8))
        np.testing.assert_array_equal(np.asarray(f(x3, x3)), np.arange(3) ** 2 + np.arange(3))
        assert list(f._cache.values())[-1].in_avals[0].shape == (3,)     # most recent last


def test_hoisted_parameter_and_donation():
    k = np.arange(4, dtype=np.float32) + 1      # a concrete array the trace makes a parameter

    def h(x):
        return x * snp.asarray(k)
    f = secant.jit(h)
    x = secant.device_put(np.ones(4, np.float32))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(x)), k)
    d = secant.jit(lambda x: x + 1.0, donate_argnums=0)
    y = secant.device_put(np.ones(4, np.float32))
    z = d(y)
    np.testing.assert_array_equal(np.asarray(z), 2 * np.ones(4))
    with pytest.raises(secant.SecantError):
        d(y)    # (donated: deleted)

"""donate_argnums: after the call a donated array is deleted; every later use raises a clear
SecantError (never a crash, never the stale value)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def _donated():
    g = secant.jit(lambda a, b: a * 2 + b, donate_argnums=0)
    x = secant.device_put(np.arange(4, dtype=np.float32))
    y = g(x, np.ones(4, np.float32))
    np.testing.assert_array_equal(np.asarray(y), np.arange(4) * 2 + 1)
    return g, x


USES = {
    "same jit": lambda g, x: g(x, np.ones(4, np.float32)),
    "other jit": lambda g, x: secant.jit(lambda a: a - 1)(x),
    "jit of a pytree": lambda g, x: secant.jit(lambda t: t["a"] + 1)({"a": x}),
    "np.asarray": lambda g, x: np.asarray(x),
    "eager op": lambda g, x: x + 1,
    "secant.numpy": lambda g, x: snp.sum(x),
    "repr": lambda g, x: repr(x),
    "block_until_ready": lambda g, x: x.block_until_ready(),
    "device_put": lambda g, x: np.asarray(secant.device_put(x)),
}


@pytest.mark.parametrize("use", sorted(USES))
def test_use_after_donation_raises(use):
    g, x = _donated()
    with pytest.raises(secant.SecantError, match="donate_argnums"):
        USES[use](g, x)


def test_warm_jit_then_donated_argument_raises():
    f = secant.jit(lambda a: a + 1)
    x = secant.device_put(np.zeros(4, np.float32))
    f(x), f(x)                       # the warm (fast) path knows this signature
    g, y = _donated()
    with pytest.raises(secant.SecantError, match="donate_argnums"):
        f(y)


def test_undonated_arguments_stay_usable():
    g = secant.jit(lambda a, b: a + b, donate_argnums=0)
    x = secant.device_put(np.arange(3, dtype=np.float32))
    b = secant.device_put(np.ones(3, np.float32))
    g(x, b)
    np.testing.assert_array_equal(np.asarray(b), np.ones(3))


def test_donated_numpy_argument_is_untouched():
    g = secant.jit(lambda a: a + 1, donate_argnums=0)
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(g(x)), x + 1)
    np.testing.assert_array_equal(np.asarray(g(x)), x + 1)

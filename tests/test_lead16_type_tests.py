"""Issue 15: a type test of a differentiated or batched value (isinstance(x, jnp.ndarray),
type(x), callable(x), hasattr(x, "shape")) is what a trace knows, never a differentiated value:
logging it (`seen.append(isinstance(x, jnp.ndarray))`) runs once per call, as JAX's trace does
(it was refused as storing a differentiated value, then traced whole: twice a call), and the
values are right."""
import numpy as np
import pytest

import secant
import secant.numpy as jnp

SEEN = []


def logged(x):
    SEEN.append((isinstance(x, jnp.ndarray), type(x).__name__ != "ndarray",
                 hasattr(x, "shape"), callable(x)))
    return jnp.sum(jnp.sin(x) * x)


X = np.array([0.3, -0.7, 1.1])


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jvp", "vmap", "jit"])
def test_once_per_call_and_the_value(x64, transform):
    SEEN.clear()
    run = {"grad": lambda: secant.grad(logged)(X),
           "value_and_grad": lambda: secant.value_and_grad(logged)(X)[1],
           "jvp": lambda: secant.jvp(logged, (X,), (np.ones(3),))[1],
           "vmap": lambda: secant.vmap(logged)(np.stack([X, -X])),
           "jit": lambda: secant.jit(logged)(X)}[transform]
    want = {"grad": np.sin(X) + X * np.cos(X), "value_and_grad": np.sin(X) + X * np.cos(X),
            "jvp": np.sum(np.sin(X) + X * np.cos(X)),
            "vmap": [np.sum(np.sin(X) * X)] * 2, "jit": np.sum(np.sin(X) * X)}[transform]
    for calls in (1, 2, 3):
        np.testing.assert_allclose(run(), want, rtol=1e-12)
        if transform != "jit":                  # (jit: once per trace, as JAX)
            assert len(SEEN) == calls
    assert set(SEEN) == {(True, True, True, False)}

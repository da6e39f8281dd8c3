"""A transformed function's defaults are the values made when it was defined: the generated
code must not evaluate their source again (a global rebound since would change the answer)."""
import numpy as np

import secant
import secant.numpy as snp

k = 2.0
scaled = lambda x, c=k: x * c            # noqa: E731


def power(x, *, p=k):
    return snp.sum(x ** p)


k = 3.0                                  # rebound after the definitions: must not be read


def test_defaults_are_the_values_made_at_definition():
    x = np.array([1.0, 2.0], np.float32)
    assert float(secant.grad(scaled)(1.0)) == 2.0
    assert float(secant.jit(secant.grad(scaled))(1.0)) == 2.0
    assert float(secant.jvp(scaled, (1.0,), (1.0,))[1]) == 2.0
    np.testing.assert_allclose(secant.vmap(scaled)(x), 2.0 * x)
    np.testing.assert_allclose(secant.grad(power)(x), 2.0 * x)          # keyword-only too
    np.testing.assert_allclose(secant.hessian(power)(x), 2.0 * np.eye(2))
    np.testing.assert_allclose(secant.grad(power)(x, p=3.0), 3.0 * x ** 2)   # passed: used

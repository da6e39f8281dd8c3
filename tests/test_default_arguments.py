"""Default arguments are values Python computed once, where the function was defined: generated
code reads those values, never the default's text again (`lambda a, o=o: ...` in a loop, a
default naming a global that changed since)."""
import numpy as np

import secant
import secant.numpy as snp

W = np.array([1.0, 2.0])


def weighted(x, w=W, *, k=snp.sin):
    return snp.sum(k(x) * w)


W = np.array([10.0, 20.0])          # rebinding the global leaves weighted's default as it was


def _branchy(x, o):
    if o == 2:
        y = x * 3.0
    else:
        y = x * 5.0
    return snp.sum(y)


LOSSES = [lambda x, o=o: snp.sum(x ** o) for o in (2, 3)]
CALLERS = [lambda x, o=o: _branchy(x, o) for o in (2, -2)]
o = -2                              # a module global named like the loop variable


def test_lambda_defaults_bound_in_a_loop():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(secant.grad(LOSSES[0])(x), [2.0, 4.0])
    np.testing.assert_allclose(secant.grad(LOSSES[1])(x), [3.0, 12.0])
    np.testing.assert_allclose(secant.jit(secant.grad(LOSSES[1]))(x), [3.0, 12.0])
    np.testing.assert_allclose(secant.vmap(LOSSES[1])(np.ones((2, 2))), [2.0, 2.0])
    _, t = secant.jvp(LOSSES[1], (x,), (np.ones(2),))
    np.testing.assert_allclose(t, 15.0)


def test_static_default_passed_to_a_helper():
    x = np.ones(2)
    np.testing.assert_allclose(secant.grad(CALLERS[1])(x), [5.0, 5.0])
    np.testing.assert_allclose(secant.grad(CALLERS[0])(x), [3.0, 3.0])


def test_default_naming_a_rebound_global():
    x = np.zeros(2)
    np.testing.assert_allclose(secant.grad(weighted)(x), [1.0, 2.0])
    np.testing.assert_allclose(secant.jit(secant.grad(weighted))(x), [1.0, 2.0])
    np.testing.assert_allclose(secant.vmap(weighted)(np.full((2, 2), np.pi / 2)), [3.0, 3.0])
    src = secant.source(secant.grad(weighted))
    assert src.startswith("def weighted_grad(x, w=w_default, *, k=k_default):")


def test_literal_defaults_read_as_literals():
    src = secant.source(secant.grad(LOSSES[1]))
    assert "o=3" in src.splitlines()[0]
    np.testing.assert_allclose(secant.grad(secant.grad(lambda x, p=3: x ** p))(2.0), 12.0)


def _factory(scale=2.0):
    def inner(x, scale=scale):
        return x * scale
    return inner


def test_nested_function_default_naming_an_enclosing_local():
    f = _factory(3.0)
    np.testing.assert_allclose(secant.vmap(lambda x: f(x))(np.ones(3)), [3.0, 3.0, 3.0])
    np.testing.assert_allclose(secant.grad(lambda x: f(x))(1.0), 3.0)


K = 2.0
scaled = lambda x, c=K: x * c            # noqa: E731


def power(x, *, p=K):
    return snp.sum(x ** p)


K = 3.0                                  # rebound after the definitions: must not be read


def test_defaults_are_the_values_made_at_definition():
    x = np.array([1.0, 2.0], np.float32)
    assert float(secant.grad(scaled)(1.0)) == 2.0
    assert float(secant.jit(secant.grad(scaled))(1.0)) == 2.0
    assert float(secant.jvp(scaled, (1.0,), (1.0,))[1]) == 2.0
    np.testing.assert_allclose(secant.vmap(scaled)(x), 2.0 * x)
    np.testing.assert_allclose(secant.grad(power)(x), 2.0 * x)          # keyword-only too
    np.testing.assert_allclose(secant.hessian(power)(x), 2.0 * np.eye(2))
    np.testing.assert_allclose(secant.grad(power)(x, p=3.0), 3.0 * x ** 2)   # passed: used

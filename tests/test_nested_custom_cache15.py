"""Issue 15: a nested @custom_vjp / @custom_jvp made anew at each call of its enclosing
function reuses the derivative generated for the first one with the same code (bound to its own
rules each time), and each call still gets its own answer when the closed-over values differ."""
import numpy as np
import pytest

import secant.numpy as jnp
from secant import custom_jvp, custom_vjp, grad, jit, jvp, vmap
from secant import transforms


@pytest.fixture
def built():
    """The functions generate builds while the test runs (GENERATE_HOOKS: once per key)."""
    made = []
    hook = lambda fn, mode, wrt, staged, gen: made.append((fn, mode))    # noqa: E731
    transforms.GENERATE_HOOKS.append(hook)
    yield made
    transforms.GENERATE_HOOKS.remove(hook)


def scaled_sin(x, c, k):
    """sin(x) * c with a deliberately wrong gradient: cos(x) * c * k (k: read by bwd only)."""
    @custom_vjp
    def h(x):
        return jnp.sin(x) * c

    def h_fwd(x):
        return h(x), x

    def h_bwd(x, g):
        return (g * jnp.cos(x) * c * k,)
    h.defvjp(h_fwd, h_bwd)
    return h(x) * 2.0


def test_nested_custom_vjp_generated_once_each_call_its_own_values(built):
    g = grad(scaled_sin)
    for x, c, k in [(0.3, 1.5, 1.0), (0.7, -2.0, 3.0), (1.1, 0.5, -1.0)]:
        np.testing.assert_allclose(g(x, c, k), 2 * np.cos(x) * c * k, rtol=1e-6)
    made = len(built)
    for x, c, k in [(0.2, 4.0, 2.0), (-0.4, 1.0, 0.5)]:
        np.testing.assert_allclose(g(x, c, k), 2 * np.cos(x) * c * k, rtol=1e-6)
    assert len(built) == made, built[made:]     # nothing generated again


def test_nested_custom_vjp_closing_over_arrays_of_other_shapes():
    g = grad(lambda x, c: jnp.sum(scaled_sin(x, c, 1.0)))
    x = np.array([[0.3, -0.2], [0.1, 0.9], [-1.0, 0.4]])
    for c in [np.array([1.0, 2.0]), np.array([[1.0, 2.0], [-3.0, 0.5], [4.0, 1.0]]),
              np.array(0.5)]:     # (each call its own c, and its own shape)
        np.testing.assert_allclose(g(x, c), 2 * np.cos(x) * c, rtol=1e-6)


def test_nested_custom_vjp_under_jit_and_vmap(built):
    g = jit(grad(scaled_sin))
    np.testing.assert_allclose(g(0.3, 1.5, 2.0), 2 * np.cos(0.3) * 1.5 * 2.0, rtol=1e-6)
    np.testing.assert_allclose(g(0.3, 1.5, -1.0), 2 * np.cos(0.3) * 1.5 * -1.0, rtol=1e-6)
    xs = np.array([0.1, 0.5, 0.9])
    gv = vmap(grad(scaled_sin), in_axes=(0, None, None))
    for c, k in [(1.5, 2.0), (-1.0, 0.5)]:
        np.testing.assert_allclose(gv(xs, c, k), 2 * np.cos(xs) * c * k, rtol=1e-6)
    made = len(built)
    np.testing.assert_allclose(grad(scaled_sin)(0.4, 3.0, 1.0), 2 * np.cos(0.4) * 3.0,
                               rtol=1e-6)
    np.testing.assert_allclose(grad(scaled_sin)(0.4, 3.0, 7.0), 2 * np.cos(0.4) * 21.0,
                               rtol=1e-6)
    assert len(built) == made


def test_nested_custom_vjp_second_order():
    def f(x, c):
        @custom_vjp
        def h(x):
            return jnp.sin(x) * c

        def h_fwd(x):
            return h(x), x

        def h_bwd(x, g):
            return (g * jnp.cos(x) * c,)
        h.defvjp(h_fwd, h_bwd)
        return h(x * x)
    for c in (1.5, -2.0):
        x = 0.7
        # d/dx [cos(x^2) * 2x * c] = c * (2 cos(x^2) - 4 x^2 sin(x^2))
        np.testing.assert_allclose(grad(grad(f))(x, c),
                                   c * (2 * np.cos(x * x) - 4 * x * x * np.sin(x * x)),
                                   rtol=1e-5)


def scaled_exp(x, c, k):
    """exp(x) * c with the tangent rule exp(x) * c * k * x_dot (k: read by the rule only)."""
    @custom_jvp
    def h(x):
        return jnp.exp(x) * c

    @h.defjvp
    def h_jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return h(x), jnp.exp(x) * c * k * x_dot
    return h(x) + x


def test_nested_custom_jvp_each_call_its_own_values(built):
    for x, c, k in [(0.3, 1.5, 1.0), (0.1, -2.0, 3.0)]:
        out, out_dot = jvp(lambda x: scaled_exp(x, c, k), (x,), (1.0,))
        np.testing.assert_allclose(out, np.exp(x) * c + x, rtol=1e-6)
        np.testing.assert_allclose(out_dot, np.exp(x) * c * k + 1, rtol=1e-6)
        np.testing.assert_allclose(grad(scaled_exp)(x, c, k), np.exp(x) * c * k + 1, rtol=1e-6)
    f = lambda x, c, k: jvp(lambda x: scaled_exp(x, c, k), (x,), (2.0,))[1]   # noqa: E731
    f(0.3, 1.0, 1.0)
    made = len(built)
    np.testing.assert_allclose(f(0.5, 2.0, -1.0), 2 * (np.exp(0.5) * 2.0 * -1.0 + 1),
                               rtol=1e-6)
    # (the fresh lambda is transformed again; the custom function's jvp is not)
    assert [fn.__name__ for fn, _ in built[made:]] == ["<lambda>"], built[made:]

"""Issue 15: jit of a derivative whose reverse pass binds its forward pass's static test again
(`cond = len(hist) > 2` twice): the test is a Python bool either time, so the staged
(functionalised) derivative keeps a Python `if` (it was a lax.cond over lists of different
lengths: 'Expected list, got Traced'). Against eager and float64 finite differences; a flag
bound to different constants (`done = False` ... `done = True` under a traced test) stays
traced."""
import numpy as np

import secant.numpy as jnp
from secant import grad, jit, vmap
from test_others3_compositions import list_history as trimmed_history  # (.pop(0) trimmer)


def bounded_queue(x):
    q = [x]
    for i in range(5):
        q = q + [jnp.sin(q[-1]) * (i + 1)]
        if len(q) > 3:
            q = q[1:]
    return q[0] * q[-1]


def flag_set_under_a_traced_test(x):
    done = False
    y = x
    if x > 0.5:
        done = True
        y = x * x
    return jnp.where(done, y, -y)


def fd(f, x, h=1e-5):
    return (float(f(x + h)) - float(f(x - h))) / (2 * h)


def test_jit_of_higher_derivatives_of_list_trimming(x64):
    for f, x in ((trimmed_history, 0.4), (bounded_queue, 0.3)):
        g = f
        for _ in range(3):
            want_next = g
            g = grad(g)
            np.testing.assert_allclose(g(x), fd(want_next, x), rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(jit(g)(x), g(x), rtol=1e-10, atol=1e-12)
        xs = jnp.asarray([x * 0.9, x, x * 1.1])
        loop = [float(grad(grad(f))(v)) for v in xs]
        np.testing.assert_allclose(jit(vmap(grad(grad(f))))(xs), loop, rtol=1e-10)


def test_a_flag_bound_to_different_constants_stays_traced(x64):
    f = flag_set_under_a_traced_test
    for x in (0.2, 0.9):
        np.testing.assert_allclose(jit(f)(x), f(x), rtol=1e-12)
        np.testing.assert_allclose(jit(grad(f))(x), fd(f, x), rtol=1e-6)
    xs = jnp.asarray([0.2, 0.9])
    np.testing.assert_allclose(jit(vmap(f))(xs), [float(f(v)) for v in xs], rtol=1e-12)


def int_flag_under_a_traced_test(x):
    k = 0
    if x > 0.5:
        k = 3
    return x * k


def test_a_python_int_chosen_by_a_batched_test_is_batched(x64):
    """Each branch binds k to a constant, but vmap's examples take different branches: k is one
    value per example (a per-output activity that marked it unbatched returned one row each)."""
    xs = jnp.asarray([0.2, 0.9, 1.5])
    want = [int_flag_under_a_traced_test(float(v)) for v in xs]
    np.testing.assert_allclose(jit(vmap(int_flag_under_a_traced_test))(xs), want, rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(grad(int_flag_under_a_traced_test)))(xs), [0.0, 3.0, 3.0])

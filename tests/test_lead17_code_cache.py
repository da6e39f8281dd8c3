"""The code cache (secant/code_cache.py) answers a function with the derivative made for it:
the second function object of a code keeps a template of its derivative for the next one, and
asking for that function's derivative again gives the same generated function, not a rebound
copy (two objects for one derivative: a program printed them under two names, and the golden
vmap(mlp_loss_grad) changed after another test had transformed a helper of the same code)."""
import numpy as np

import secant
import secant.numpy as snp
from secant.codegen.program import program_source
from secant.transforms import generate


def make(scale):
    def f(x):
        return snp.sum(snp.sin(x) * scale)
    return f


def test_one_function_object_per_derivative():
    first, second = make(2.0), make(3.0)
    secant.grad(first)(np.ones(3))          # the first of its code: no template
    for mode in ("vjp", "jvp"):
        a = generate(second, (0,), mode)    # the second keeps a template of this one
        assert generate(second, (0,), mode) is a
    third = make(4.0)
    x = np.linspace(0.1, 1.0, 3)
    np.testing.assert_allclose(secant.grad(third)(x), 4.0 * np.cos(x), rtol=1e-6)


def make_other(scale):           # (a code of its own: the test above made templates of make's)
    def f(x):
        return snp.sum(snp.sin(x) * scale)
    return f


def test_a_callee_called_twice_is_one_function_of_the_program():
    first, second = make_other(2.0), make_other(3.0)
    secant.grad(first)(np.ones(3))

    def twice(x):
        return second(x) + second(2.0 * x)

    g = secant.grad(twice)
    text = program_source(g)
    assert "f_vjp_1" not in text and text.count("def f_vjp(") == 1, text
    x = np.linspace(0.1, 1.0, 3)
    np.testing.assert_allclose(g(x), 3.0 * np.cos(x) + 6.0 * np.cos(2.0 * x), rtol=1e-6)


def carry_turns_float(x, y):
    """A Python loop whose int32 carry becomes float32: jit stages it as a lax loop, whose
    carry cannot change dtype (CarryChanged), and traces again with it unrolled."""
    v = y
    for i in range(2):
        v = v * 0.5 + snp.cos(v) * i
    return v * x


def make_loss(scale):
    return lambda x, y: snp.sum(carry_turns_float(x, y)) * scale


def test_the_unrolled_retry_gets_no_rolled_derivative():
    """jit(grad) of the second closure of a code: its staged derivative (the loop rolled) is
    kept in the code cache; jit's trace again with the loop unrolled must not get it back (it
    did: a CarryChanged refusal of what JAX runs, fuzz seed 105). The key has the decision."""
    x = np.array([[0.25, -1e4, 1.0], [0.0, -0.5, -3.5]], np.float32)
    y = np.array([[-2, -1, 3], [-1, -1, 1]], np.int32)
    for scale in (1.0, 2.0, 3.0):
        loss = make_loss(scale)
        want = secant.grad(loss)(x, y)
        np.testing.assert_allclose(secant.jit(secant.grad(loss))(x, y), want, rtol=1e-6)
        np.testing.assert_allclose(want, scale * (y * 0.25 + np.cos(y * 0.5)), rtol=1e-6)

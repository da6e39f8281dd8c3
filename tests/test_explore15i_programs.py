"""Issue 15, second battery (explore15i): programs after other AD libraries' tests (autograd's
numpy functions and examples, Tangent's control flow, functorch's per-sample gradients and
jacobians), optimisation test functions and numerical recipes (tests/user_programs/
autograd_style.py, tangent_style.py, functorch_style.py, recipes.py), each through grad,
hessian, grad∘grad, jit, jit∘grad, vmap, vmap∘grad, jvp, jacrev and (scalar ones) grad∘grad∘grad,
checked against float64 central differences, a Python loop and the eager value
(tests/user_programs/checks.py); and the bad inputs of tests/user_programs/bad_inputs.py, each
the exception type JAX raises naming the user's line, or the right value.

The default profile runs every program through one transform, rotating over the transforms;
HYPOTHESIS_PROFILE=thorough runs every pair. `.venv/bin/python bench/user_programs.py --second`
prints the whole table.
"""
import contextlib
import io

import numpy as np
import pytest

import secant
import secant.numpy as jnp
from user_programs import SECOND, bad_inputs, checks

PER_PROGRAM = 1

# (program, transform) -> why it fails today; strict: a fix must remove its entry
KNOWN_FAILURES = {}
KNOWN_BAD_INPUTS = {}

# a program that takes per-example gradients itself, under jit by default: its turn
# (grad∘grad, a third derivative, 3.1 CPU s) runs under thorough
TURNS = {"ft_clipped_dp_grad": "jit"}
test_program, test_bad_input = checks.battery(SECOND, checks.SECOND_TRANSFORMS, PER_PROGRAM,
                                              KNOWN_FAILURES, bad_inputs, KNOWN_BAD_INPUTS,
                                              turns=TURNS)


def test_battery_size():
    assert len(SECOND) >= 60 and len(bad_inputs.CASES) >= 15


# --- regression tests of what the battery found ---------------------------------------------------
def _seidel(b):
    n = b.shape[0]
    x = jnp.zeros(n)
    for i in range(n):
        left = x[i - 1] if i > 0 else 0.0
        x = x.at[i].set((b[i] + left) / 2.0)
    return jnp.sum(x ** 2)


def _seidel_kept_if(b):
    """an if the rewrite keeps as Python (it breaks out of the loop) that tests the index"""
    n = b.shape[0]
    x = jnp.zeros(n)
    for i in range(n):
        if i > 2:
            break
        x = x.at[i].set(b[i] + jnp.sum(x))
    return jnp.sum(x ** 2)


@pytest.mark.parametrize("f", [_seidel, _seidel_kept_if])
def test_jit_of_a_python_if_on_the_loop_index(x64, f):
    """gauss_seidel: `left = x[i - 1] if i > 0 else 0.0` in a `for i in range(n)` staged as a
    fori_loop made bool() of the traced index under jit (TracerBoolConversionError); JAX
    unrolls the Python loop. Now the if is staged too (both branches assign `left`); an if
    kept as Python that tests the index (_seidel_kept_if) makes the loop unroll."""
    b = np.array([0.3, -0.5, 0.8, 0.1, 0.6])
    want = f(b)
    np.testing.assert_allclose(secant.jit(f)(b), want, rtol=1e-12)
    g = secant.grad(f)(b)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(b), g, rtol=1e-10)
    h = 1e-6
    fd = [(f(b + h * e) - f(b - h * e)) / (2 * h) for e in np.eye(5)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


def _steps(w, x):
    def loss(v):
        return jnp.sum(jnp.sin(x @ v) ** 2)
    for _ in range(2):
        val, g = secant.value_and_grad(loss)(w)
        w = w - 0.1 * g
    return loss(w) + 0.0 * val


def test_vmap_grad_of_value_and_grad_in_a_loop(x64):
    """ft_value_and_grad_step: in vmap(grad(f)) the reverse loop carries val's cotangent,
    batched on entry (0 * the batched seed) and replaced by an unbatched zero in the body; the
    loop passed it on unbatched to a vjp batched in it: 'axis 0 is out of bounds'."""
    x = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    ws = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
    got = secant.vmap(secant.grad(_steps), in_axes=(0, None))(ws, x)
    want = [secant.grad(_steps)(w, x) for w in ws]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    h = 1e-6
    fd = [(_steps(ws[0] + h * e, x) - _steps(ws[0] - h * e, x)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(got[0], fd, rtol=1e-6)


def test_an_error_in_a_lifted_nested_function_names_its_line(x64):
    """list_where_a_dict_is_expected: grad of a program whose nested def (closing over the
    parameters, so secant lifts it with them as parameters: <secant: f_1>) is differentiated by
    jacrev; a TypeError raised in it named only the jacrev call's line, the lifted function had
    no origin map."""
    import inspect
    from user_programs import functorch_style as fs
    x = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    with pytest.raises(TypeError) as info:
        secant.grad(fs.ft_jacrev_penalty)([np.ones((3, 4)), np.ones(4)], x)
    lines, first = inspect.getsourcelines(fs.ft_jacrev_penalty)
    line = first + next(i for i, t in enumerate(lines) if 'params["w1"]' in t)
    assert f"{inspect.getsourcefile(fs.ft_jacrev_penalty)}, line {line}" in \
        "\n".join(getattr(info.value, "__notes__", []))


@pytest.mark.parametrize("name", ["ft_per_sample_grad_norms", "ft_clipped_dp_grad"])
def test_hessian_of_per_sample_gradients_inside(x64, name):
    """jacfwd(grad) of a program with vmap(grad(...)) inside: the jvp's vmap read the per-sample
    gradients (not batched) as batched, writing g.shape[0] as g.shape[1] (ShapeError); fixed by
    fft15r's write-back of shape queries on values proven unbatched."""
    case = next(c for c in SECOND if c.name == name)
    with contextlib.redirect_stdout(io.StringIO()):
        checks.run(case, "hessian")

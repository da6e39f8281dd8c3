"""Python inside a transformed function (issue 15, section 3): walrus, early return, break and
continue, nested def and lambda, `x if c else y`, in-place updates of a local array,
try/except and with, print, recursion on static values.

transformer/desugar.py rewrites each into the syntax the normaliser reads; every construct is
checked under grad (against float64 central differences), jvp (the same), vmap (against a
Python loop), jit (against eager) and jit of grad. Golden files (tests/golden/syntax/) lock the
readable form: the desugared source and the gradient it gives.
"""
import contextlib
import inspect
import os
import pathlib

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.transformer.desugar import desugar

GOLDEN = pathlib.Path(__file__).parent / "golden" / "syntax"
UPDATE = os.environ.get("SECANT_UPDATE_GOLDEN") == "1"


# --- the constructs ------------------------------------------------------------------------------
def walrus(x):
    return (y := snp.sin(x)) * y


def walrus_in_test(x):
    if (s := snp.sum(x * x)) > 1.0:
        return s * 2.0
    return s


def early_return(x):
    if x > 0:
        return x * x
    return -x


def early_return_nested(x, n):
    if n > 1:
        if n > 2:
            return x * 3.0
        x = x * 2.0
    y = snp.sin(x)
    return y


def early_return_nested_1(x):
    return early_return_nested(x, 1)


def early_return_nested_2(x):
    return early_return_nested(x, 2)


def early_return_nested_3(x):
    return early_return_nested(x, 3)


def loop_break(x):
    for i in range(5):
        if i == 3:
            break
        x = x * 2.0
    return x


def loop_continue(x):
    for i in range(5):
        if i == 3:
            continue
        x = x * 2.0
    return x


def loop_break_nested(x):
    for i in range(6):
        if i > 1:
            if i == 4:
                break
            x = x + 1.0
        x = x * snp.cos(x)
    return x


def while_break(x):
    k = 0
    while k < 10:
        x = snp.sin(x) + 1.0
        if k == 2:
            break
        k = k + 1
    return x


def return_in_for(x):
    for i in range(4):
        x = x * 2.0
        if i == 2:
            return x
    return -x


def return_knot(x, knots=(-1.0, 0.0, 1.5)):
    for i, k in enumerate(knots):       # a loop over a parameter: k held as the return left it
        if x < k:
            return (i + 1) * snp.sin(x - k)
    return x * x


def powers_of(x, n):
    p = x
    for _ in range(n):
        yield p
        p = p * x


def generator_loop(x):
    total = 0.0
    for k, p in enumerate(powers_of(x, 3)):     # read as powers_of_list: a list
        total = total + snp.sin(p) * (k + 1)
    return total


def return_in_while(x):
    k = 0
    while k < 10:
        x = snp.sin(x) + 1.0
        if x > 1.5:
            return x * 2.0
        k = k + 1
    return x


def print_in_loop(x):
    for i in range(2):
        print("step", i)
        x = snp.sin(x)
    return x


def nested_def(x):
    def h(y):
        return y * x
    return h(x) + h(snp.sin(x))


def nested_defs_calling_each_other(x):
    def h(y, scale=2.0):
        return y * x * scale

    def g(y):
        return h(y) + h(y, 3.0)
    return g(snp.sin(x))


def nested_lambda(x):
    sq = lambda y: y * y                                    # noqa: E731
    return sq(x) + sq(2 * x)


def if_expression(x):
    return x * x if x > 0 else -x


def if_expression_assigned(x):
    y = snp.sin(x) if x > 0 else snp.cos(x) if x > -1 else x
    return y * x


def if_expression_inside(x):
    return snp.exp(x * 2.0 if x > 0 else snp.sin(x)) + 1.0


def in_place(x):
    y = snp.zeros(3)
    y[0] = x
    y[1] += x * 2
    y[2] -= snp.sin(x)
    return snp.sum(y * y)


def try_except(x):
    try:
        y = x * 2
    except ValueError:
        y = x
    return y * x


def with_block(x):
    with contextlib.suppress(KeyError):
        y = snp.exp(x)
    return y


def printing(x):
    print("x is", x)
    return x * x


def power(x, n):
    return x if n == 0 else x * power(x, n - 1)


def recursion(x):
    return power(x, 3)


# name -> (function, scalar points)
CASES = {
    "walrus": (walrus, [0.3, -1.2]),
    "walrus_in_test": (walrus_in_test, [0.3, 1.7]),
    "early_return": (early_return, [0.7, -1.3]),
    "early_return_nested_3": (early_return_nested_3, [0.4]),
    "early_return_nested_2": (early_return_nested_2, [0.4]),
    "early_return_nested_1": (early_return_nested_1, [0.4]),
    "loop_break": (loop_break, [0.7]),
    "loop_continue": (loop_continue, [0.7]),
    "loop_break_nested": (loop_break_nested, [0.3]),
    "while_break": (while_break, [0.3]),
    "return_in_for": (return_in_for, [0.6]),
    "return_in_while": (return_in_while, [1.0, 0.2, -0.4]),
    "return_knot": (return_knot, [-1.5, -0.5, 0.7, 2.0]),
    "generator_loop": (generator_loop, [0.6, -1.1]),
    "print_in_loop": (print_in_loop, [0.6]),
    "if_expression_inside": (if_expression_inside, [0.6, -0.3]),
    "nested_def": (nested_def, [0.6]),
    "nested_lambda": (nested_lambda, [0.6]),
    "nested_defs_calling_each_other": (nested_defs_calling_each_other, [0.7]),
    "if_expression": (if_expression, [0.7, -1.3]),
    "if_expression_assigned": (if_expression_assigned, [0.7, -0.5, -1.5]),
    "in_place": (in_place, [0.8]),
    "try_except": (try_except, [0.8]),
    "with_block": (with_block, [0.8]),
    "printing": (printing, [0.8]),
    "recursion": (recursion, [0.8, -1.1]),
}
EAGER_FAILS = {"in_place"}          # secant arrays are immutable: only the transforms rewrite it


def _reference(fn, x):
    """The function run eagerly in float64 (in_place: as a NumPy program)."""
    if fn is in_place:
        y = np.zeros(3)
        y[0] = x
        y[1] += x * 2
        y[2] -= np.sin(x)
        return float(np.sum(y * y))
    return float(np.asarray(fn(np.float64(x))))


def _fd(fn, x, eps=1e-6):
    return (_reference(fn, x + eps) - _reference(fn, x - eps)) / (2 * eps)


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_matches_finite_differences(name, x64):
    fn, points = CASES[name]
    g = secant.grad(fn)
    for x in points:
        np.testing.assert_allclose(float(g(np.float64(x))), _fd(fn, x),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_matches_finite_differences(name, x64):
    fn, points = CASES[name]
    for x in points:
        out, tangent = secant.jvp(fn, (np.float64(x),),
                                  (np.float64(1.0),))
        np.testing.assert_allclose(float(out), _reference(fn, x), rtol=1e-12)
        np.testing.assert_allclose(float(tangent), _fd(fn, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_matches_a_python_loop(name, x64):
    fn, points = CASES[name]
    xs = np.array(points + [0.25], dtype=np.float64)
    batched = secant.vmap(fn)(xs)
    np.testing.assert_allclose(np.asarray(batched),
                               [_reference(fn, x) for x in xs], rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_of_grad_matches_a_python_loop(name, x64):
    fn, points = CASES[name]
    xs = np.array(points, dtype=np.float64)
    batched = secant.vmap(secant.grad(fn))(xs)
    np.testing.assert_allclose(np.asarray(batched), [_fd(fn, x) for x in xs],
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_of_grad_matches_eager(name, x64):
    fn, points = CASES[name]
    g = secant.grad(fn)
    jg = secant.jit(g)
    for x in points:
        np.testing.assert_allclose(float(jg(np.float64(x))), float(g(np.float64(x))),
                                   rtol=1e-12)


# As in JAX, plain jit traces the user's own Python: a return from a loop on a traced
# condition is a ConcretizationError there (jit(grad(f)) reads the desugared form). Better than
# JAX, `a if c else b` on a traced c is staged as an if (lax.cond).
NO_PLAIN_JIT = {"return_in_while", "return_knot"}


@pytest.mark.parametrize("name", sorted(set(CASES) - EAGER_FAILS - NO_PLAIN_JIT))
def test_jit_matches_eager(name, x64):
    fn, points = CASES[name]
    jf = secant.jit(fn)
    for x in points:
        np.testing.assert_allclose(float(jf(np.float64(x))), _reference(fn, x),
                                   rtol=1e-12)


# --- regressions ----------------------------------------------------------------------------------
def test_walrus_gradient_is_not_silently_zero(x64):
    """`(y := snp.sin(x)) * y` differentiated to zeros_like(x): the walrus's value was read as
    a constant. It is sin(2x)."""
    for x in (0.3, 1.0, -2.0):
        assert float(secant.grad(walrus)(np.float64(x))) == pytest.approx(np.sin(2 * x),
                                                                           rel=1e-12)


def test_walrus_where_secant_cannot_hoist_it_raises():
    def f(x):
        return snp.sum(x) > 0 and (y := x * 2) * y

    with pytest.raises(secant.SecantError, match="walrus"):
        secant.grad(f)(1.0)


def test_or_of_differentiated_values_is_not_read_as_a_constant():
    """`a or b` is one of its operands (the first truthy one), never a constant: its
    derivative is that operand's."""
    def f(x):
        return (x * 2 or x) * 3

    assert float(secant.grad(f)(1.0)) == 6.0       # x * 2 is truthy: 6 x
    assert float(secant.grad(f)(0.0)) == 3.0       # x * 2 == 0 is falsy: 3 x


def test_print_prints_primal_values(capsys):
    assert float(secant.grad(printing)(2.0)) == 4.0
    assert capsys.readouterr().out == "x is 2.0\n"
    secant.vmap(printing)(snp.arange(2.0))
    assert capsys.readouterr().out == "x is [0. 1.]\n"


def test_print_in_a_loop_prints_once_per_iteration_under_grad(capsys):
    secant.grad(print_in_loop)(0.5)
    assert capsys.readouterr().out == "step 0\nstep 1\n"      # not again in the reverse loop


def test_return_of_different_values_from_a_loop_raises():
    def f(x):
        for i in range(3):
            if i == 1:
                return x
            if i == 2:
                return -x
        return x * 2

    with pytest.raises(secant.SecantError, match="different values"):
        secant.grad(f)(1.0)


def test_jit_stages_a_conditional_expression_on_a_traced_value():
    text = secant.source(secant.jit(if_expression))
    assert "lax.cond(" in text
    jf = secant.jit(if_expression)
    assert float(jf(2.0)) == 4.0 and float(jf(-2.0)) == 2.0


def test_print_under_jit_runs_once_at_trace_time(capsys):
    jf = secant.jit(printing)
    jf(snp.ones(2))
    jf(snp.ones(2) * 3)
    out = capsys.readouterr().out
    assert out.count("x is") == 1 and "Traced" in out


def test_in_place_update_of_a_list_is_not_an_array_update():
    """A local list is not an array: `xs[0] = v` rebuilds the list (not .at[]), as a person
    would write it (transformer/container_updates.py)."""
    def f(x):
        xs = [1.0, 2.0]
        xs[0] = 5.0
        return x * xs[0]

    text = secant.source(desugar(f))
    assert "xs = [5.0] + xs[1:]" in text and ".at[" not in text
    assert float(secant.grad(f)(1.0)) == 5.0

    def g(x):
        m = np.zeros(2)         # a NumPy array is mutable: Python updates it in place
        m[0] = 1.0
        return x * snp.sum(m)

    assert desugar(g) is g


def test_loop_variable_read_after_a_break_is_the_one_the_break_left():
    """(Refused before: 'read after a loop that breaks'.) The loop binds `i = item` inside the
    flag's guard (desugar.stable_loop_target), so the skipped iterations keep i == 2."""
    def f(x):
        for i in range(5):
            if i == 2:
                break
            x = x * 2.0
        return x * i

    assert float(secant.jit(f)(1.5)) == 12.0
    for g in (secant.grad(f), secant.jit(secant.grad(f))):
        assert float(g(1.5)) == 8.0
    np.testing.assert_allclose(secant.vmap(secant.grad(f))(np.array([1.0, 2.0])), [8.0, 8.0])


def test_rewrites_keep_user_lines_in_errors():
    def f(x):
        for i in range(3):
            if i == 1:
                continue
            x = x.frobnicate()
        return x

    # (a method no array has: read as a callee held by x, as it might be for an object, so
    # Python's AttributeError when it runs, as JAX's, naming the user's line)
    with pytest.raises(AttributeError) as e:
        secant.grad(f)(1.0)
    shown = "\n".join([str(e.value)] + getattr(e.value, "__notes__", []))   # (as a traceback)
    assert "x = x.frobnicate()" in shown
    assert __file__ in shown


def test_nested_def_reads_the_enclosing_value_at_call_time(x64):
    """A free local becomes an argument passed at each call: as Python's closure, the value
    the variable has when h is called."""
    def f(x):
        a = x
        def h(y):
            return y * a
        first = h(x)
        a = snp.sin(x)
        return first + h(x)

    x = 0.7
    expected = 2 * x + np.sin(x) + x * np.cos(x)
    assert float(secant.grad(f)(np.float64(x))) == pytest.approx(expected, rel=1e-12)


def count_down(x, n):
    return 0.0 if n == 0 else count_down(x, n - 1)


def test_vmap_of_recursion_with_a_constant_base_case():
    """A recursive call is batched assuming its outputs are (checked when it is generated):
    a constant base case is broadcast to the batch where the branches join."""
    out = secant.vmap(count_down, in_axes=(0, None))(snp.ones(2), 2)
    assert np.asarray(out).tolist() == [0.0, 0.0]
    text = secant.source(secant.transforms.generate(
        count_down, (0,), "vmap", batch=secant.batch.BatchOptions((), "free", None, None)))
    # it calls itself, passing on its batch size (x, read by no array op, may hold no array)
    assert "count_down_vmap(x, (n - 1), batch_size=batch_size)" in text


def test_jacfwd_of_grad_of_recursion(x64):
    x = np.float64(0.8)
    assert float(secant.jacfwd(secant.grad(recursion))(x)) == pytest.approx(12 * x ** 2)


def test_recursion_generates_a_self_calling_derivative():
    text = secant.source(secant.transforms.generate(power, (0,), "vjp"))
    assert "power_vjp(" in text.split("\n", 1)[1]     # the body calls itself


# --- readable sources (golden) --------------------------------------------------------------------
GOLDEN_CASES = {"early_return": early_return, "loop_break": loop_break, "in_place": in_place,
                "nested_def": nested_def, "walrus": walrus, "if_expression": if_expression,
                "loop_continue": loop_continue, "return_in_for": return_in_for,
                "if_expression_inside": if_expression_inside, "return_knot": return_knot,
                "generator_loop": generator_loop}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_desugared_source_and_gradient_match_golden(name):
    from test_golden import generated_program
    fn = GOLDEN_CASES[name]
    text = ("# desugared\n" + inspect.getsource(desugar(fn)) + "\n# grad\n"
            + generated_program(secant.grad(fn)))
    path = GOLDEN / f"{name}.py.txt"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"{path} is missing: run SECANT_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text()

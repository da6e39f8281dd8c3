"""Python if/elif/else, while and for-range on traced values under jit: functionalised into
secant.lax.cond / while_loop / fori_loop (transformer/functionalize.py)."""
import inspect
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

import secant
import secant.numpy as snp
from secant.transformer.functionalize import functionalize

sys.path.insert(0, str(Path(__file__).parent / "golden"))
import functions as golden  # noqa: E402


def line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


# --- user functions (module level: their source is on disk) -----------------------------------
def piecewise(x):
    if x.sum() > 0:
        y = x * 2
    elif x.sum() < -5:
        y = -x
    else:
        y = x + 1
    return y


def piecewise_ref(x):
    s = float(np.sum(x))
    return x * 2 if s > 0 else (-x if s < -5 else x + 1)


def halve_until_small(x):
    n = 0
    while x.sum() > 1:
        x = x / 2
        n += 1
    return x, n


def recurrence(x, n):
    acc = x
    s = 0.0
    for i in range(n):
        t = acc * 0.5
        acc = t + x[i]
        s = s + acc.sum()
    return acc, s


def recurrence_ref(x, n):
    acc, s = x.astype(np.float64), 0.0
    for i in range(n):
        acc = acc * 0.5 + x[i]
        s += acc.sum()
    return acc, s


def nested(x, n):
    total = snp.zeros_like(x)
    i = 0
    while i < n:
        for k in range(1, 3):
            if (x * k).sum() > i:
                total = total + x * k
            else:
                total = total - 1.0
        i = i + 1
    return total


def nested_ref(x, n):
    total = np.zeros_like(x)
    for i in range(n):
        for k in range(1, 3):
            total = total + x * k if (x * k).sum() > i else total - 1.0
    return total


def fib_like(a, b, n):
    for _ in range(2, n):
        a, b = b, a + b * 0.5
    return a, b


def sliding(x):
    out = x
    for i in range(3):
        out = out + x[i:i + 2].sum()
    return out


def early_return(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def one_branch(x):
    if x.sum() > 0:
        z = x * 2
    return z


def static_one_branch(x, flag):
    if flag:
        z = x * 2
    if flag:
        x = z + 1
    return x


def shape_test(x):
    if x.ndim == 2:
        x = x.sum(axis=0)
    return x * 2


def printing_if(x):
    n = 0
    while x.sum() > 1:
        x = x / 2
        n += 1
    if x.sum() > 0:
        print("positive")
        x = x + 1
    return x


def long_loop(x, r):
    for i in range(1000):
        x = r * x * (1 - x)
    return x


def no_control_flow(x):
    return x * 2


def with_defaults(x, scale=3.0, *, shift=1.0):
    if x.sum() > 0:
        x = x * scale
    return x + shift


X = np.array([0.5, 1.0, 1.5, 2.0], np.float32)


# --- if / elif / else -------------------------------------------------------------------------
@pytest.mark.parametrize("x", [X, -X, -4 * X])
def test_if_elif_else_on_traced_values(x):
    out = secant.jit(piecewise)(x)
    assert_allclose(np.asarray(out), piecewise_ref(x))
    assert_allclose(np.asarray(out), np.asarray(piecewise(x)))


def test_if_elif_else_stages_one_conditional_per_if():
    text = secant.jit(piecewise).lower(X).as_text()
    assert text.count("stablehlo.if") == 2


def test_if_with_returns_in_both_branches():
    for x in (X, -X):
        assert_allclose(np.asarray(secant.jit(early_return)(x)), np.asarray(early_return(x)))
    assert "return lax.cond(" in secant.source(secant.jit(early_return))


def test_defaults_and_keyword_only_arguments_survive():
    j = secant.jit(with_defaults)
    assert_allclose(np.asarray(j(X)), X * 3 + 1)
    assert_allclose(np.asarray(j(-X, shift=2.0)), -X + 2)


# --- while ------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1.0, 7.0, 100.0])
def test_while_with_a_python_counter(scale):
    x = X * scale
    out, n = secant.jit(halve_until_small)(x)
    ref, n_ref = halve_until_small(x)
    assert_allclose(np.asarray(out), np.asarray(ref))
    assert int(n) == n_ref
    assert secant.jit(halve_until_small).lower(x).as_text().count("stablehlo.while") == 1


# --- for over range ---------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 4])
def test_for_range_with_traced_bounds(n):
    j = secant.jit(recurrence)
    acc, s = j(X, n)
    ref_acc, ref_s = recurrence_ref(X, n)
    assert_allclose(np.asarray(acc), ref_acc, rtol=1e-6)
    assert_allclose(float(s), ref_s, rtol=1e-6)
    eager_acc, _ = recurrence(X, n)
    assert_allclose(np.asarray(acc), np.asarray(eager_acc), rtol=1e-6)
    assert j._cache_size() == 1           # n is traced: one compile for every trip count


def test_loop_carrying_several_variables():
    a, b = secant.jit(fib_like, static_argnums=2)(X, 2 * X, 7)
    ra, rb = fib_like(X, 2 * X, 7)
    assert_allclose(np.asarray(a), np.asarray(ra), rtol=1e-6)
    assert_allclose(np.asarray(b), np.asarray(rb), rtol=1e-6)
    assert "lax.fori_loop(2, n, " in secant.source(secant.jit(fib_like))


def test_nested_control_flow():
    for n in (0, 2, 5):
        out = secant.jit(nested)(X, n)
        assert_allclose(np.asarray(out), nested_ref(X, n), rtol=1e-6)
    text = secant.jit(nested).lower(X, 3).as_text()
    assert text.count("stablehlo.while") == 2 and text.count("stablehlo.if") == 1


def test_loop_that_needs_a_python_index_unrolls_and_says_so():
    out = secant.jit(sliding)(X)
    assert_allclose(np.asarray(out), np.asarray(sliding(X)))
    src = secant.source(secant.jit(sliding))
    assert "# secant: a Python for loop; under jit it unrolls because" in src
    assert "slices with i" in src
    assert "for i in range(3):" in src


def test_thousand_step_python_loop_compiles_to_one_while():
    j = secant.jit(long_loop)
    t0 = time.perf_counter()
    text = j.lower(np.float32(0.3), np.float32(3.2)).as_text()
    out = j(np.float32(0.3), np.float32(3.2))
    elapsed = time.perf_counter() - t0
    assert text.count("stablehlo.while") == 1
    assert text.count("stablehlo.multiply") < 10       # the body once, not 1,000 times
    assert elapsed < 1.0
    x = 0.3
    for _ in range(1000):
        x = 3.2 * x * (1 - x)
    assert abs(float(out) - x) < 0.05     # a chaotic map: float32 and float64 drift apart


# --- source -----------------------------------------------------------------------------------
def test_source_of_jit_shows_the_lax_calls():
    assert "lax.cond(" in secant.source(secant.jit(piecewise))
    assert "lax.while_loop(" in secant.source(secant.jit(halve_until_small))
    src = secant.source(secant.jit(recurrence))
    assert "lax.fori_loop(0, n, acc_for_body, (acc, s))" in src
    assert "def acc_for_body(i, carry):" in src


def test_rewritten_function_has_registered_source():
    fn = functionalize(piecewise)
    assert fn is not piecewise and fn.__name__ == "piecewise"
    assert inspect.getsource(fn).startswith("def piecewise(x):")
    assert fn.__secant_source__.fn is fn
    assert functionalize(piecewise) is fn                  # cached
    assert functionalize(no_control_flow) is no_control_flow


def test_static_tests_stay_python_ifs():
    src = secant.source(secant.jit(shape_test))
    assert "if x.ndim == 2:" in src and "lax.cond" not in src
    x2 = np.ones((2, 3), np.float32)
    assert_allclose(np.asarray(secant.jit(shape_test)(x2)), np.full(3, 4.0))


# --- errors -----------------------------------------------------------------------------------
def test_defined_in_only_one_branch_names_the_user_line():
    with pytest.raises(secant.SecantError) as info:
        secant.jit(one_branch)(X)
    msg = str(info.value)
    assert "defined in only one branch" in msg and "'z'" in msg
    assert f"{__file__}:{line_of(one_branch, 'if x.sum() > 0')}" in msg


def test_one_branch_definition_is_fine_when_the_condition_is_static():
    j = secant.jit(static_one_branch, static_argnums=1)
    assert_allclose(np.asarray(j(X, True)), X * 2 + 1)
    assert_allclose(np.asarray(j(X, False)), X)


def test_if_that_cannot_be_functionalised_still_names_the_user_line():
    with pytest.raises(secant.ConcretizationError) as info:
        secant.jit(printing_if)(X)
    assert f"{__file__}:{line_of(printing_if, 'if x.sum() > 0')}" in str(info.value)
    assert "# secant: a Python if (its body calls print())" in secant.source(
        secant.jit(printing_if))


# --- generated derivative code --------------------------------------------------------------
@pytest.mark.parametrize("normalise", [True, False])
def test_jit_of_grad_with_a_static_branch(normalise):
    x = np.linspace(0.1, 1, 6).astype(np.float32).reshape(2, 3)
    w = np.full(3, 0.7, np.float32)
    g = secant.grad(golden.static_branch, argnums=(0, 1))
    jg = secant.jit(g, static_argnums=2)
    for a, b in zip(jg(x, w, normalise), g(x, w, normalise)):
        assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_jit_of_grad_with_a_static_loop_rolls_both_passes():
    """Eager grad replays the Python loop from a stack; under jit grad differentiates the
    functionalised loop, so forward and reverse passes are each one StableHLO while loop."""
    x = np.linspace(0.1, 1, 3).astype(np.float32)
    w = np.full(3, 0.7, np.float32)
    g = secant.grad(golden.static_loop, argnums=(0, 1))
    jg = secant.jit(g)
    for a, b in zip(jg(x, w), g(x, w)):
        assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    assert "for h in reversed(h_stack):" in secant.source(g)   # (the stack read back)
    src = secant.source(jg)
    assert "fori_loop_with_carries(0, 3, h_for_body, x)" in src      # (h = x: no copy)
    assert "fori_loop_vjp(0, 3, h_for_body_vjp, h_1_bar, h_1_carries, closed=(w, x), out=h_1)" \
        in " ".join(src.replace("(\n", "(").split())      # (however the long line is wrapped)
    assert jg.lower(x, w).as_text().count("stablehlo.while") == 2


def test_jit_inside_jit():
    inner = secant.jit(piecewise)
    outer = secant.jit(lambda x: inner(x) + 1)
    for x in (X, -X):
        assert_allclose(np.asarray(outer(x)), piecewise_ref(x) + 1)


def python_number_carries(x):
    shape = (x.size,)
    while len(shape) < 3:
        shape = (1,) + shape
    k = 1
    for _ in range(2):
        k = k * 2
    return x.reshape(shape)[..., :k] * 2


def test_loops_over_python_values_used_statically_stay_python():
    x = np.arange(6.0, dtype=np.float32)
    out = secant.jit(python_number_carries)(x)
    assert_allclose(np.asarray(out), np.asarray(python_number_carries(x)))
    src = secant.source(secant.jit(python_number_carries))
    assert "while len(shape) < 3:" in src
    assert "k must stay a Python number" in src


# --- for row in xs over a traced array ---------------------------------------------------------
def rows_loop(xs, w):
    acc = snp.zeros(xs.shape[1])
    for row in xs:
        acc = snp.tanh(acc * w + row)
    return acc


def test_for_over_the_rows_of_a_traced_array_is_one_while():
    xs = np.random.default_rng(1).normal(size=(1000, 4)).astype(np.float32)
    want = np.zeros(4, np.float32)
    for r in xs:
        want = np.tanh(want * 0.5 + r)
    jf = secant.jit(rows_loop)
    np.testing.assert_allclose(np.asarray(jf(xs, 0.5)), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(rows_loop(xs, 0.5)), want, rtol=1e-5, atol=1e-6)
    assert jf.lower(xs, 0.5).as_text().count("stablehlo.while") == 1
    src = secant.source(jf)
    assert "lax.fori_loop(0, xs.shape[0], acc_for_body, acc)" in src
    assert "row = xs[row_index]" in src
    xs_list = [np.full(4, 0.1, np.float32), np.full(4, 0.2, np.float32)]
    np.testing.assert_allclose(np.asarray(secant.jit(rows_sum)(xs_list, 0.5)),
                               np.asarray(rows_sum(xs_list, 0.5)), rtol=1e-6)   # still Python


def rows_sum(xs, w):
    acc = 0.0
    for row in xs:
        acc = acc * w + snp.sum(row)
    return acc


def _layers(ws, x):
    h = x
    for i in range(3):
        h = snp.tanh(h @ ws[i])
    return snp.sum(h)


def test_a_loop_indexing_a_tuple_stays_a_python_loop_under_jit():
    # ws[i] with a traced i needs ws to be an array; a tuple of weights needs i as a Python int
    rng = np.random.default_rng(0)
    stacked = rng.normal(size=(3, 4, 4)).astype(np.float32) / 2
    as_tuple = tuple(stacked)
    x = np.ones(4, np.float32)
    want = float(_layers(stacked, x))
    f = secant.jit(_layers)
    for ws, loops in ((stacked, 1), (as_tuple, 0)):
        assert float(f(ws, x)) == pytest.approx(want, rel=1e-5)
        assert f.lower(ws, x).as_text().count("stablehlo.while") == loops
    assert "a Python for loop when ws is not an array" in secant.source(f)

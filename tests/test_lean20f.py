"""Lean derivatives (issue 20), this step: a common subexpression of a derivative's top-level
statements is computed once (ad/cse.py): leapfrog's `0.5 * dt * k`, written by the user twice
and read again by two reverse rules, is one line `times_k = 0.5 * dt * k`.

Each rule is checked on lines (ad/reverse.py's Line), where it applies and where it must not
(an input reassigned, changed in place or handed to a user's function between; a branch's or
loop's line; a conditionally evaluated part); each derivative against float64 central
differences, and jit against eager."""
import numpy as np

import secant
import secant.numpy as snp
from secant.ad.cse import computed_once
from secant.codegen.naming import Names
from test_lean20c import fd_grad
from test_lean20d import _code, _lines
from test_lean20e import while_loop

RNG = np.random.default_rng(2020)


def _cse(*specs):
    lines = _lines(*specs)
    return _code(computed_once(lines, Names({n for ln in lines for n in ln.uses | ln.defines})))


def test_an_inactive_expression_read_four_times_is_computed_once():
    assert _cse((1, "times_q = (0.5 * dt * k) * q"), (1, "p_new = p - (0.5 * dt * k) * q_new"),
                (1, "# Grad of: p_new = p - 0.5 * dt * k * q_new"),
                (1, "q_new_bar = (0.5 * dt * k) * -g"),
                (1, "q_bar = unbroadcast((0.5 * dt * k) * t, q)"),
                (1, "return q_bar")) == [
        (1, "times_k = 0.5 * dt * k"), (1, "times_q = times_k * q"),
        (1, "p_new = p - times_k * q_new"), (1, "# Grad of: p_new = p - 0.5 * dt * k * q_new"),
        (1, "q_new_bar = times_k * -g"), (1, "q_bar = unbroadcast(times_k * t, q)"),
        (1, "return q_bar")]


def test_a_value_already_named_is_read_from_its_name():
    assert _cse((1, "e = snp.exp(s)"), (1, "y = snp.exp(s) * g"), (1, "return y")) == [
        (1, "e = snp.exp(s)"), (1, "y = e * g"), (1, "return y")]
    # an array function called twice is worth a line of its own
    assert _cse((1, "z = x / snp.exp(s)"), (1, "g = h / snp.exp(s)"), (1, "return g")) == [
        (1, "exp_s = snp.exp(s)"), (1, "z = x / exp_s"), (1, "g = h / exp_s"),
        (1, "return g")]


def test_no_common_value_where_an_input_changes_between():
    unchanged = [
        # reassigned
        ((1, "a = snp.exp(x) * 2"), (1, "x = x + 1"), (1, "b = snp.exp(x) * 2"),
         (1, "return a, b")),
        # the first occurrence's own line reassigns what it reads
        ((1, "x = snp.exp(x) * 2"), (1, "b = snp.exp(x) * 2"), (1, "return b")),
        # its name reassigned before the second read
        ((1, "e = snp.exp(s)"), (1, "e = e + 1"), (1, "y = snp.exp(s) * g"),
         (1, "return y")),
        # changed in place
        ((1, "a = snp.sum(xs[0] * 2)"), (1, "xs.append(y)"), (1, "b = snp.sum(xs[0] * 2)"),
         (1, "return a, b")),
        # handed to a user's function (which may change it in place)
        ((1, "a = snp.sum(xs[0] * 2)"), (1, "update(xs)"), (1, "b = snp.sum(xs[0] * 2)"),
         (1, "return a, b")),
        # assigned in a loop between the two
        ((1, "a = snp.exp(x) * 2"), (1, "for i in r:"), (2, "x = x * i"),
         (1, "b = snp.exp(x) * 2"), (1, "return a, b")),
    ]
    for specs in unchanged:
        assert _cse(*specs) == list(specs), specs


def test_no_common_value_outside_one_straight_line_run_or_worth_no_line():
    unchanged = [
        # in a loop or a branch: not run once, in order
        ((1, "for i in r:"), (2, "a = snp.exp(x) * i"), (2, "b = snp.exp(x) * i"),
         (1, "return a")),
        ((1, "a = snp.exp(x)"), (1, "if c:"), (2, "b = snp.exp(x) * 2"), (1, "return b")),
        # evaluated only on one side of a conditional
        ((1, "a = snp.log(x) * 2"), (1, "b = snp.log(x) if c else y"), (1, "return a, b")),
        # a user's function may print or draw random numbers: called as often as written
        ((1, "a = f(x) * 2"), (1, "b = f(x) * 2"), (1, "return a, b")),
        # one operation saved: `-g` read again rather than named; a dtype query is no work
        ((1, "a = -g * x"), (1, "b = -g * y"), (1, "return a, b")),
        ((1, "a = snp.asarray(i, snp.result_type(x))"), (1, "b = snp.zeros(3, snp.result_type(x))"),
         (1, "return a, b")),
        # constants: Python folds them itself
        ((1, "a = (-0.5) * x"), (1, "b = (-0.5) * y"), (1, "c = (-0.5) * z"),
         (1, "return a, b, c")),
    ]
    for specs in unchanged:
        assert _cse(*specs) == list(specs), specs


def test_the_larger_expression_first_and_parentheses_only_where_needed():
    assert _cse((1, "a = snp.sin(x * y) + 1"), (1, "b = 2 * snp.sin(x * y)"),
                (1, "c = (x * y) ** 2"), (1, "return a, b, c")) == [
        (1, "sin_x_times_y = snp.sin(x * y)"), (1, "a = sin_x_times_y + 1"),
        (1, "b = 2 * sin_x_times_y"), (1, "c = (x * y) ** 2"), (1, "return a, b, c")]
    # a call's parentheses stay
    assert _cse((1, "a = f(x + y * z)"), (1, "b = g(x + y * z)"), (1, "return a, b")) == [
        (1, "plus_x = x + y * z"), (1, "a = f(plus_x)"), (1, "b = g(plus_x)"),
        (1, "return a, b")]


def leapfrog_energy(q, p, k, dt):
    p_half = p - 0.5 * dt * k * q
    q_new = q + dt * p_half
    p_new = p_half - 0.5 * dt * k * q_new
    return 0.5 * snp.sum(p_new * p_new) + 0.5 * k * snp.sum(q_new * q_new)


def gaussian_loglik(mu, log_sigma, x):
    z = (x - mu) / snp.exp(log_sigma)
    return snp.sum(-0.5 * z * z - log_sigma - 0.5 * snp.log(2 * snp.pi))


def _code_lines(src):
    return "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith("#"))


def test_leapfrog_computes_its_step_factor_once(x64):
    src = secant.source(secant.grad(leapfrog_energy))
    code = _code_lines(src)
    assert code.count("0.5 * dt * k") == 1 and "times_k = 0.5 * dt * k" in code, src
    q, p = RNG.normal(size=4), RNG.normal(size=4)
    k, dt = 1.7, 0.1
    want = fd_grad(lambda q: leapfrog_energy(q, p, k, dt), q)
    np.testing.assert_allclose(secant.grad(leapfrog_energy)(q, p, k, dt), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(leapfrog_energy))(q, p, k, dt), want,
                               rtol=1e-6)
    # a second order reads the first's lines: the named factor differentiated as any value
    hvp = secant.grad(lambda q: snp.sum(secant.grad(leapfrog_energy)(q, p, k, dt)))
    want2 = fd_grad(lambda q: np.sum(secant.grad(leapfrog_energy)(q, p, k, dt)), q)
    np.testing.assert_allclose(hvp(q), want2, rtol=1e-5)


def test_gaussian_exponential_computed_once(x64):
    src = secant.source(secant.grad(gaussian_loglik))
    assert _code_lines(src).count("snp.exp(log_sigma)") == 1, src
    mu, log_sigma, x = RNG.normal(size=3), 0.3 * RNG.normal(size=3), RNG.normal(size=(6, 3))
    want = fd_grad(lambda mu: gaussian_loglik(mu, log_sigma, x), mu)
    np.testing.assert_allclose(secant.grad(gaussian_loglik)(mu, log_sigma, x), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(gaussian_loglik))(mu, log_sigma, x), want,
                               rtol=1e-6)


# --- forward copies (ad/copies.py on the user's values): a loop's `x_2 = f(x_1)`, `x_1 = x_2`
def test_a_loop_variable_is_updated_in_place_as_written(x64):
    src = secant.source(secant.grad(while_loop))
    # (the carry takes x's name, dead after its copy: ad/copies.py _into_dead_source)
    assert "x = 0.9 * x + 0.1 * snp.sin(x)" in src and "i = i + 1" in src, src
    assert "x_2" not in src and "i_2" not in src and "i_1 = i\n" not in src, src
    x = RNG.normal(size=3)
    want = fd_grad(lambda x: while_loop(x, 5), x)
    np.testing.assert_allclose(secant.grad(while_loop)(x, 5), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(while_loop), static_argnums=1)(x, 5),
                               want, rtol=1e-6)


def test_a_value_copy_is_no_zero_accumulator_and_keeps_nested_scopes():
    from secant.ad.copies import without_copies

    def run(specs, values):
        return _code(without_copies(_lines(*specs), set(), set(values)))
    # zeros_like(x) + e broadcasts e to x's shape: a value keeps its zeros
    zeros = ((1, "acc = snp.zeros_like(x)"), (1, "acc = acc + e"), (1, "return acc"))
    assert run(zeros, {"acc", "x", "e"}) == list(zeros)
    # a lambda may bind a name of its own spelled alike: no word-by-word rename into it
    # (h read as x there would read the lambda's x)
    scoped = ((1, "h = x"), (1, "f = lambda x: x * h"), (1, "y = f(2.0) + h"), (1, "return y"))
    assert run(scoped, {"h", "x", "f", "y"}) == list(scoped)
    # joined at a branch, a value would lose the user's name
    joined = ((1, "if c:"), (2, "result = -x_1"), (1, "else:"), (2, "result = x_1"),
              (1, "return result"))
    assert run(joined, {"result", "x_1", "c"}) == list(joined)
    # the loop's copy at its back edge: one name, as written; the copy from x, which nothing
    # reads after it, renamed away (_into_dead_source): the user's x
    assert run(((1, "x_1 = x"), (1, "for i in r:"), (2, "x_2 = x_1 * i"), (2, "x_1 = x_2"),
                (1, "return x_1")), {"x", "x_1", "x_2", "i"}) == [
        (1, "for i in r:"), (2, "x = x * i"), (1, "return x")]

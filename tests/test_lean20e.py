"""Lean derivatives (issue 20), this step: a derivative transformed again (grad of grad, vmap of
grad, jvp of grad) reads the lines before folding (ad/fold.py), so the next order names each
value as the first order did (`om_sq_bar`), never after a call (`unbroadcast_out`), while
`secant.source` of the first order shows the folded text it runs; and an accumulation
`x_bar = a`, `x_bar = x_bar + b` is merged where the first value reaches that line only.

Every source check has a numerical twin: float64 central differences of the first derivative,
vmap(grad) against a Python loop."""
import re

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.ad.fold import folded
from test_lean20c import fd_grad
from test_lean20d import _code, _lines

RNG = np.random.default_rng(2021)
# a name made after a derivative helper's call, not after the user's variable
_HELPER_NAMED = re.compile(r"\b(unbroadcast|unreduce|grad_seed|mean_grad)\w*_out(_\d+)?\b")


def energy(x):
    th = snp.tanh(x)
    om = snp.sin(x)
    return snp.sum(th ** 2 + om ** 2)


def mse(w, x, y):
    err = x @ w - y
    return snp.mean(err * err)


def test_first_order_shows_the_folded_text(x64):
    src = secant.source(secant.grad(energy))
    # the scalar seed times each term's value (no ones of x's shape: ad/algebra.py)
    # (the two terms summed and returned in one line: fold's one-row pass, returned_in_place)
    assert "return (2 * om * snp.cos(x) + 2 * th * (1 - th ** 2)) * sum_th_sq_plus_om_sq_bar" \
        in src, src
    assert "unreduce" not in src, src


def test_second_order_names_come_from_the_first_orders_variables(x64):
    gg = secant.grad(lambda x: snp.sum(secant.grad(energy)(x) ** 2))
    src = secant.source(secant.grad(secant.grad(energy)))
    assert not _HELPER_NAMED.search(src), src
    assert "sum_th_sq_plus_om_sq_bar = grad_seed_like(x)" in src, src   # as the first order
    # (unreduce reads x for its shape alone and the seed is a constant: no unreduce_vjp line,
    # the second order reads the first order's th_sq_plus_om_sq_bar)
    assert "unreduce_vjp" not in src and "th_sq_plus_om_sq_bar) * x_bar_1_bar" in src, src
    x = RNG.normal(size=4)
    np.testing.assert_allclose(gg(x), fd_grad(lambda x: np.sum(np.asarray(
        secant.grad(energy)(x)) ** 2), x), rtol=1e-6, atol=1e-8)
    # the second order of the folded first order: the same numbers eagerly and under jit
    hvp = secant.grad(lambda x: snp.vdot(secant.grad(energy)(x), snp.ones(4)))
    want = fd_grad(lambda x: np.sum(np.asarray(secant.grad(energy)(x))), x)
    np.testing.assert_allclose(hvp(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(hvp)(x), want, rtol=1e-6, atol=1e-8)


def test_vmap_of_grad_names_come_from_the_first_orders_variables(x64):
    g = secant.grad(mse)
    batched = secant.vmap(g, in_axes=(None, 0, 0))
    src = secant.source(batched)
    assert not _HELPER_NAMED.search(src), src
    assert "err_sq_bar = mean_grad_vmap(" in src, src
    w, xs, ys = RNG.normal(size=3), RNG.normal(size=(5, 4, 3)), RNG.normal(size=(5, 4))
    loop = np.stack([np.asarray(g(w, x, y)) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(batched(w, xs, ys), loop, rtol=1e-10)
    for x, y, row in zip(xs, ys, loop):
        np.testing.assert_allclose(row, fd_grad(lambda w: mse(w, x, y), w), rtol=1e-6)


def test_jvp_of_grad_reads_the_unfolded_lines(x64):
    gen = secant.grad(energy).__secant_generated__
    canonical = "\n".join(gen.__secant_source__.lines)
    seed = "th_sq_plus_om_sq_bar = unreduce(sum_th_sq_plus_om_sq_bar, x)"
    assert seed in canonical, canonical      # what a transform reads
    assert seed not in secant.source(secant.grad(energy))     # what runs
    x, v = RNG.normal(size=3), RNG.normal(size=3)
    _, tangent = secant.jvp(secant.grad(energy), (x,), (v,))
    want = (np.asarray(secant.grad(energy)(x + 1e-6 * v)) -
            np.asarray(secant.grad(energy)(x - 1e-6 * v))) / 2e-6
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-8)


# --- accumulations merged (ad/fold.py: a value that reaches one line, which assigns it again) --
def test_an_accumulation_is_merged_and_a_parameters_cotangent_keeps_its_name():
    lines = _lines((1, "# Grad of: y = a * x + snp.sin(x)"), (1, "x_bar = a * y_bar"),
                   (1, "x_bar = x_bar + y_bar * snp.cos(x)"), (1, "return x_bar"))
    assert _code(folded(lines, set(), kept={"x_bar"})) == [
        (1, "# Grad of: y = a * x + snp.sin(x)"),
        (1, "x_bar = a * y_bar + y_bar * snp.cos(x)"), (1, "return x_bar")]
    # a kept name never folds into a line that only reads it: the derivative returns it
    assert _code(folded(lines[:2] + lines[3:], set(), kept={"x_bar"})) == \
        _code(lines[:2] + lines[3:])


def test_a_copy_folds_once_the_accumulation_it_protected_is_merged():
    lines = _lines((1, "for _ in range(n):"), (2, "x_1 = x_1_stack.pop()"),
                   (2, "# Grad of: x = 0.9 * x + 0.1 * snp.sin(x)"),
                   (2, "times_x_1_bar = x_1_bar"), (2, "x_1_bar = 0.1 * x_1_bar * snp.cos(x_1)"),
                   (2, "x_1_bar = x_1_bar + 0.9 * times_x_1_bar"), (1, "return x_1_bar"))
    assert _code(folded(lines, {"times_x_1_bar", "x_1_bar"}))[3:] == [
        (2, "x_1_bar = 0.1 * x_1_bar * snp.cos(x_1) + 0.9 * x_1_bar"), (1, "return x_1_bar")]


@pytest.mark.parametrize("between, why", [
    ("u_bar = x_bar * 2", "the first value is read by another line too"),
    ("y_bar = y_bar * 2", "an input of the value changes before the merge"),
    ("# Grad of: z = x", "another user line's rule"),
])
def test_no_merge_where_the_value_reaches_further_or_changes(between, why):
    lines = _lines((1, "# Grad of: y = x"), (1, "x_bar = a * y_bar"), (1, between),
                   (1, "x_bar = x_bar + y_bar"), (1, "return x_bar, u_bar"))
    got = _code(folded(lines, {"x_bar", "u_bar", "y_bar"}))
    assert (1, "x_bar = a * y_bar") in got, why


@pytest.mark.parametrize("use", [[(1, "x_bar += y_bar")],
                                 [(1, "if c:"), (2, "x_bar = x_bar + y_bar")]])
def test_no_merge_into_an_augmented_or_nested_assignment(use):
    lines = _lines((1, "x_bar = a * y_bar"), *use, (1, "return x_bar"))
    assert _code(folded(lines, {"x_bar"})) == _code(lines)


def while_loop(x, n):
    i = 0
    while i < n:
        x = 0.9 * x + 0.1 * snp.sin(x)
        i = i + 1
    return snp.sum(x * x)


def test_while_loop_reverse_step_is_one_line_and_right(x64):
    g = secant.grad(while_loop)
    src = secant.source(g)
    # (x_1_bar a factor of both terms: written once, as by hand, ad/algebra.py)
    assert "x_1_bar = (0.1 * snp.cos(x) + 0.9) * x_1_bar" in src, src
    assert "times_x_1_bar" not in src, src
    x = RNG.normal(size=4)
    np.testing.assert_allclose(g(x, 6), fd_grad(lambda x: while_loop(x, 6), x), rtol=1e-6)
    hvp = secant.grad(lambda x: snp.sum(g(x, 6)))
    np.testing.assert_allclose(hvp(x), fd_grad(lambda x: np.sum(np.asarray(g(x, 6))), x),
                               rtol=1e-5, atol=1e-8)


# --- grad's output is a real scalar: so are the operands of the elementwise ops making it ---
def leapfrog_energy(q, p, k, dt):
    p_half = p - 0.5 * dt * k * q
    q_new = q + dt * p_half
    p_new = p_half - 0.5 * dt * k * q_new
    return 0.5 * snp.sum(p_new * p_new) + 0.5 * k * snp.sum(q_new * q_new)


def test_no_unbroadcast_between_the_real_scalars_that_make_grads_output(x64):
    g = secant.grad(leapfrog_energy, argnums=(0, 2))
    src = secant.source(g)
    head = src.split("# Grad of: p_new")[0]     # the output's rule: scalars only
    assert "unbroadcast" not in head, src
    q, p = RNG.normal(size=5), RNG.normal(size=5)
    k, dt = 1.7, 0.1
    gq, gk = g(q, p, k, dt)
    np.testing.assert_allclose(gq, fd_grad(lambda q: leapfrog_energy(q, p, k, dt), q),
                               rtol=1e-6)
    np.testing.assert_allclose(gk, fd_grad(lambda k: leapfrog_energy(q, p, k, dt), k),
                               rtol=1e-6)
    np.testing.assert_allclose(secant.jit(g)(q, p, k, dt)[0], gq, rtol=1e-10)


def test_an_output_that_is_not_a_scalar_still_raises(x64):
    q, p = RNG.normal(size=5), RNG.normal(size=5)
    with pytest.raises(secant.SecantError, match="scalar output"):
        secant.grad(leapfrog_energy)(q, p, np.full(5, 1.7), 0.1)     # k an array: so is it

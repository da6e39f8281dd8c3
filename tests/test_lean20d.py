"""Lean reverse passes (issue 20), this step: single-use temporaries folded into their one use
(ad/fold.py), a value read for its shape only read from itself where the derivative computes it
anyway (ad/reverse.py _shape_reads_resolved), fori_loop's eager reverse pass over the indices
without an array of them, and slice's shape rule run without a cache keyed by position.

Every source check has a numerical twin: float64 central differences under grad and jit(grad),
vmap(grad) against a Python loop, and second order."""

import numpy as np
import pytest

import secant
import secant.lax as lax
import secant.numpy as snp
from secant.ad.fold import folded
from secant.transformer.walker import Line
from test_lean20c import fd_grad

RNG = np.random.default_rng(2020)


# --- the fold pass on lines ------------------------------------------------------------------
def _lines(*specs):
    """Line objects from (indent, code) pairs; a code starting with '#' is a comment, one
    ending with ':' a block header."""
    out = []
    for indent, code in specs:
        kind = "comment" if code.startswith("#") else "block" if code.endswith(":") else "stmt"
        out.append(Line(code, indent, kind))
    return out


def _code(lines):
    return [(ln.indent, ln.code) for ln in lines]


def test_fold_into_the_one_use_with_parentheses_only_where_needed():
    lines = _lines((1, "t_bar = g + h"), (1, "x_bar = t_bar * 2"), (1, "u_bar = g * h"),
                   (1, "y_bar = u_bar * 3"), (1, "return x_bar, y_bar"))
    assert _code(folded(lines, {"t_bar", "u_bar"})) == [
        (1, "x_bar = (g + h) * 2"), (1, "y_bar = g * h * 3"), (1, "return x_bar, y_bar")]


@pytest.mark.parametrize("between, why", [
    ("g = g * 2", "an input of the value reassigned before its use"),
    ("g.append(1)", "an input changed in place"),
    ("g[0] = 1", "an input's item assigned"),
    ("del g", "an input unbound"),
])
def test_no_fold_past_a_change_of_an_input(between, why):
    lines = _lines((1, "t_bar = g + 1"), (1, between), (1, "x_bar = t_bar * 2"),
                   (1, "return x_bar"))
    assert _code(folded(lines, {"t_bar"})) == _code(lines), why


@pytest.mark.parametrize("use", ["x_bar = t_bar * t_bar", "x_bar = (lambda: t_bar)()",
                                 "x_bar = g and t_bar", "x_bar = g if c else t_bar",
                                 "x_bar = [t_bar for _ in r]"])
def test_no_fold_where_the_use_is_not_evaluated_exactly_once(use):
    lines = _lines((1, "t_bar = g + 1"), (1, use), (1, "return x_bar"))
    assert _code(folded(lines, {"t_bar"})) == _code(lines)


def test_no_fold_into_a_loop_a_branch_or_another_users_line():
    into_loop = _lines((1, "t_bar = g + 1"), (1, "for i in r:"), (2, "x_bar = t_bar * i"),
                       (1, "return x_bar"))
    assert _code(folded(into_loop, {"t_bar"})) == _code(into_loop)
    other_comment = _lines((1, "# Grad of: a = b"), (1, "t_bar = g + 1"),
                           (1, "# Grad of: b = c"), (1, "x_bar = t_bar * 2"),
                           (1, "return x_bar"))
    assert _code(folded(other_comment, {"t_bar"})) == _code(other_comment)
    read_after_block = _lines((1, "if c:"), (2, "t_bar = g + 1"), (2, "x_bar = t_bar"),
                              (1, "y_bar = t_bar"), (1, "return x_bar, y_bar"))
    assert _code(folded(read_after_block, {"t_bar"})) == _code(read_after_block)


def test_forward_temporaries_fold_only_when_pure():
    lines = _lines((1, "a = snp.sin(x) * 2"), (1, "b = f(x)"), (1, "c = xs.pop()"),
                   (1, "y = a + b + c"), (1, "return y"))
    out = _code(folded(lines, set(), {"a", "b", "c"}))
    assert out == [(1, "b = f(x)"), (1, "c = xs.pop()"), (1, "y = snp.sin(x) * 2 + b + c"),
                   (1, "return y")]


def test_a_loop_or_branch_call_is_not_moved():
    lines = _lines((1, "c = lax.cond(p, f, g, x)"), (1, "print(1)"), (1, "y = c + 1"),
                   (1, "return y"))
    assert _code(folded(lines, set(), {"c"})) == _code(lines)     # f may print too


def test_a_stack_pop_stays_a_statement_of_its_own():
    lines = _lines((1, "p_bar = x_bar_stack.pop()"), (1, "x_bar = x_bar + p_bar"),
                   (1, "return x_bar"))
    assert _code(folded(lines, {"p_bar"})) == _code(lines)


def test_fold_stops_at_the_length_and_operation_limits():
    lines = _lines((1, "t_bar = a * b * c * d"), (1, "x_bar = t_bar * e * f * h"),
                   (1, "return x_bar"))
    assert _code(folded(lines, {"t_bar"})) == _code(lines)      # 6 products: over the limit


# --- generated derivatives --------------------------------------------------------------------
def loop(x, n):
    acc = snp.zeros_like(x)
    for i in range(n):
        acc = acc + snp.sin(x * i)
    return snp.sum(acc)


def leapfrog(q, p, k, dt):
    p_half = p - 0.5 * dt * k * q
    q_new = q + dt * p_half
    p_new = p_half - 0.5 * dt * k * q_new
    return 0.5 * snp.sum(p_new * p_new) + 0.5 * k * snp.sum(q_new * q_new)


def test_loop_gradient_reads_as_written_by_hand(x64):
    g = secant.grad(loop)
    src = secant.source(g)
    # (grad's scalar seed, not ones of acc's shape: ad/algebra.py)
    assert "x_bar = x_bar + sum_acc_1_bar * snp.cos(x * i) * i" in src, src
    assert "x_times_i" not in src
    x = RNG.normal(size=4)
    want = fd_grad(lambda v: loop(v, 5), x)
    np.testing.assert_allclose(g(x, 5), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(g, static_argnums=1)(x, 5), want, rtol=1e-6,
                               atol=1e-8)
    xs = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(secant.vmap(g, in_axes=(0, None))(xs, 5),
                               np.stack([g(v, 5) for v in xs]), rtol=1e-12)
    hess = secant.hessian(lambda v: loop(v, 5))(x)
    np.testing.assert_allclose(hess, np.diag(np.diag(hess)), atol=1e-12)   # elementwise
    np.testing.assert_allclose(np.diag(hess), fd_grad(lambda v: secant.grad(loop)(v, 5).sum(), x),
                               rtol=1e-5, atol=1e-6)


def test_shape_read_from_the_value_itself_when_computed_anyway(x64):
    g = secant.grad(leapfrog)
    src = secant.source(g)
    assert "p_half)" not in src.split("# Grad of")[1]   # not a same-shaped stand-in
    # no shape read at all: the scalar cotangent of each sum times a value of its operand's
    # shape (ad/algebra.py)
    assert "unreduce" not in src and "q_new_bar = q_new * k * " in src, src
    q, p = RNG.normal(size=4), RNG.normal(size=4)
    want = fd_grad(lambda v: leapfrog(v, p, 1.7, 0.1), q)
    np.testing.assert_allclose(g(q, p, 1.7, 0.1), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(g)(q, p, 1.7, 0.1), want, rtol=1e-6, atol=1e-8)
    hess = secant.hessian(lambda v: leapfrog(v, p, 1.7, 0.1))(q)
    h_fd = fd_grad(lambda v: g(v, p, 1.7, 0.1)[1], q)
    np.testing.assert_allclose(hess[1], h_fd, rtol=1e-5, atol=1e-6)


def break_early(x):
    for i in range(10):
        x = x * 0.9 + snp.sin(x)
        if i >= 2:
            break
    return snp.sum(x)


def test_third_order_through_stacks_after_folding(x64):
    g = secant.grad(break_early)
    gg = secant.grad(lambda v: snp.sum(g(v)))
    x = RNG.normal(size=3)
    want = fd_grad(lambda v: np.sum(g(v)), x)
    np.testing.assert_allclose(gg(x), want, rtol=1e-5, atol=1e-6)
    xs = RNG.normal(size=(2, 3))
    np.testing.assert_allclose(secant.vmap(gg)(xs), np.stack([gg(v) for v in xs]), rtol=1e-12)


# --- fori_loop's eager reverse pass -----------------------------------------------------------
def fori_sum(x, lo, hi):
    return snp.sum(lax.fori_loop(lo, hi, lambda i, acc: acc + snp.sin(x * i), snp.zeros_like(x)))


@pytest.mark.parametrize("lo, hi", [(0, 6), (2, 7), (3, 3)])
def test_fori_reverse_over_indices_matches_jit_and_differences(x64, lo, hi):
    g = secant.grad(fori_sum)
    x = RNG.normal(size=4)
    want = fd_grad(lambda v: fori_sum(v, lo, hi), x)
    np.testing.assert_allclose(g(x, lo, hi), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(g, static_argnums=(1, 2))(x, lo, hi), want,
                               rtol=1e-6, atol=1e-8)
    xs = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(secant.vmap(g, in_axes=(0, None, None))(xs, lo, hi),
                               np.stack([g(v, lo, hi) for v in xs]), rtol=1e-12)


def test_eager_slice_still_checks_its_rule():
    from secant.backends.primitives.structural import slice_p
    a = snp.arange(5.0)
    np.testing.assert_array_equal(slice_p.bind(a, start_indices=(1,), limit_indices=(3,)),
                                  [1.0, 2.0])
    with pytest.raises(TypeError, match="invalid slice"):
        slice_p.bind(a, start_indices=(4,), limit_indices=(2,))


# --- grad's seed from a value the output fully reduces, through partial reductions ------------
def xent(logits, labels):
    z = logits - snp.max(logits, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return -snp.mean(snp.sum(labels * logp, axis=-1))


def test_seed_read_through_a_partial_reduction(x64):
    g = secant.grad(xent)
    src = secant.source(g)
    # (the product itself is not computed: the seed reads its operands' dtypes, the rules
    # their shapes: tests/test_lean20t.py)
    code = [ln for ln in src.splitlines() if not ln.strip().startswith("#")]
    # (logp is computed for log-softmax's rule, tests/test_lean20z_softmax.py: the seed reads it)
    assert "grad_seed_like(labels, logp)" in src and not any("labels * logp" in ln
                                                           for ln in code), src
    assert not any("snp.mean(" in ln for ln in code)      # the loss itself is not computed
    logits, labels = RNG.normal(size=(4, 3)), np.eye(3)[RNG.integers(0, 3, 4)]
    want = fd_grad(lambda v: xent(v, labels), logits)
    np.testing.assert_allclose(g(logits, labels), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(g)(logits, labels), want, rtol=1e-6, atol=1e-8)
    # float32 logits, float64 labels: the loss (and the seed) is float64
    np.testing.assert_allclose(g(logits.astype(np.float32), labels), want, rtol=1e-4,
                               atol=1e-5)
    hess = secant.hessian(lambda v: xent(v, labels))(logits)
    np.testing.assert_allclose(hess[1, 2], fd_grad(lambda v: g(v, labels)[1, 2], logits),
                               rtol=1e-5, atol=1e-6)

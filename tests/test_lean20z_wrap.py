"""Issue 20 (lean20z): a line past MAX_LENGTH whose own call cannot be continued on a second
row continues a call nested in its first row instead, aligned after that call's `(` (ad/fold.py
wrapped), so a fold that fits so is made: softmax cross-entropy's logp_bar reads the unreduce
in place (5 statements; 4 since the mean's and the sum's rules are one)."""
import ast

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.ad import fold
from test_lean20c import fd_grad

RNG = np.random.default_rng(2028)

LONG = ("    logp_bar = unbroadcast(labels * unreduce_to(sum_labels_times_logp_bar, "
        "shape_of(labels, logits), axis=-1), logp)")


def test_nested_call_continued_under_its_parenthesis():
    out = fold.wrapped(LONG.strip())
    first, second = out.split("\n")
    assert first == "logp_bar = unbroadcast(labels * unreduce_to(sum_labels_times_logp_bar,"
    assert second == " " * first.index("unreduce_to(") + " " * len("unreduce_to(") + \
        "shape_of(labels, logits), axis=-1), logp)"
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(LONG.strip()))


def test_the_outer_call_first_and_refusals():
    code = "t = f_helper(aaaaaaaaaaaaaaaaaaaaaaaaaaaa, g(bbbbbbbbbbbbbbbbbbbbbbbb, cccccccccccccccccccccc), d)"
    assert fold.wrapped(code).split("\n")[0].endswith("aaaaaaaaaaaaaaaaaaaaaaaaaaaa,")
    too_long = "t = f(g(" + "a" * 95 + ", b), c)"            # (no row fits)
    assert fold.wrapped(too_long) == too_long
    commented = LONG.strip() + "  # note"
    assert fold.wrapped(commented) == commented


def xent(logits, labels):
    z = logits - snp.max(logits, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return -snp.mean(snp.sum(labels * logp, axis=-1))


@pytest.mark.parametrize("label_shape", [(5, 4), (4,), (5, 1)])
def test_folded_xent_values(label_shape, x64):
    src = secant.source(secant.grad(xent))
    # (fold.MAX_LENGTH columns past the body's indent; the mean's and the sum's rules in one,
    # folded: ad/algebra.py _reductions_composed)
    assert "    labels_times_logp_bar =" not in src and "summed=-1)" in src and \
        max(map(len, src.splitlines())) <= 4 + fold.MAX_LENGTH, src
    logits, labels = RNG.normal(size=(5, 4)), RNG.uniform(size=label_shape)
    g = secant.grad(xent)
    want = fd_grad(lambda v: xent(v, labels), logits)
    np.testing.assert_allclose(np.asarray(g(logits, labels)), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(logits, labels)), want, rtol=1e-6,
                               atol=1e-8)
    batch = RNG.normal(size=(3, 5, 4))
    got = secant.vmap(g, in_axes=(0, None))(batch, labels)
    for b in range(3):
        np.testing.assert_allclose(np.asarray(got[b]), np.asarray(g(batch[b], labels)),
                                   rtol=1e-12, atol=1e-14)


def test_a_negative_number_is_no_operation():
    assert fold._operations(ast.parse("t = snp.sum(a, axis=-1)")) == 1
    assert fold._operations(ast.parse("t = -a * b")) == 2
    assert fold._operations(ast.parse("t = a[-1] - 2.5")) == 1


def attention(x, wq, wk, wv):
    q = x @ wq
    k = x @ wk
    v = x @ wv
    s = q @ k.T / snp.sqrt(float(q.shape[-1]))
    e = snp.exp(s - snp.max(s, axis=-1, keepdims=True))
    a = e / snp.sum(e, axis=-1, keepdims=True)
    out = a @ v
    return snp.sum(out * out)


def test_attention_scores_folded_across_five_user_lines(x64):
    src = secant.source(secant.grad(attention))
    assert "s_minus_max_s_bar" not in src, src
    assert "    # Grad of: q = x @ wq; k = x @ wk; v = x @ wv; s = q @ k.T" in src, src
    args = [RNG.normal(size=(4, 3))] + [RNG.normal(size=(3, 3)) / 2 for _ in range(3)]
    for k in range(4):
        g = secant.grad(attention, argnums=k)

        def f(v, k=k):
            return attention(*args[:k], v, *args[k + 1:])
        np.testing.assert_allclose(np.asarray(g(*args)), fd_grad(f, args[k]), rtol=1e-6,
                                   atol=1e-8)
        np.testing.assert_allclose(np.asarray(secant.jit(g)(*args)), np.asarray(g(*args)),
                                   rtol=1e-10, atol=1e-12)

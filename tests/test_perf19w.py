"""Issue 19 (perf19w): functionalize skips its rewrite for a function whose only control flow is
for loops that stay Python loops, read from their heads (transformer/functionalize.py
`_python_loops_only`): a derivative's forward and reverse passes over a list (`for i in
i_range:` ... `for i in reversed(i_range):`), which jit's reuse check of an eager derivative
(transforms._same_staged) asks about. Checked here: wherever the quick test says "as it is",
the full rewrite agrees (it leaves the function, writes no comment), over loop shapes of both
kinds and over derivatives; and jit of such functions still gives eager's values and float64
central differences. No timings."""
import numpy as np
import pytest
from numpy.testing import assert_allclose

import secant
import secant.numpy as snp
from secant.transformer import functionalize as F
from secant.transformer.desugar import desugar
from secant.transformer.hygiene import copy_tree
from secant.transformer.parse import function_source


def layers(params, x):                   # a tuple target: a Python loop
    for w, b in params:
        x = snp.tanh(x @ w + b)
    return snp.sum(x)


def rows(xs):                            # a loop over rows: staged (fori_loop when traced)
    acc = xs[0] * 0.0
    for row in xs:
        acc = acc + snp.sin(row)
    return snp.sum(acc)


def rows_index_read_after(xs):           # its index read after the loop: a Python loop
    acc = xs[0] * 0.0
    for row in xs:
        acc = acc + snp.sin(row)
    return snp.sum(acc * row)


def counted(x, n):                       # range(...): staged
    for i in range(n):
        x = snp.sin(x)
    return snp.sum(x)


def nested(x):                           # a loop in a loop: the full rewrite decides
    for w in [1.0, 2.0]:
        for v in [3.0]:
            x = x * w + v
    return snp.sum(x)


def reversed_list(xs):
    acc = 0.0
    for x in reversed(xs):
        acc = acc * 0.5 + snp.sum(snp.sin(x))
    return acc


def enumerated(xs):
    acc = 0.0
    for k, x in enumerate(xs):
        acc = acc + k * snp.sum(snp.cos(x))
    return acc


def branch_in_loop(xs):                  # an if: the full rewrite decides
    acc = 0.0
    for x in xs:
        if snp.sum(x) > 0:
            acc = acc + snp.sum(x)
    return acc


def inner_function(x):                   # a while inside a nested function is not rewritten
    def helper(y):
        while y < 0:
            y = y + 1
        return y
    for s in (1.0, 2.0):
        x = x * s
    return snp.sum(x) + helper(1)


def loop_with_else(xs):
    acc = 0.0
    for x in xs:
        acc = acc + snp.sum(x)
    else:
        acc = acc * 2.0
    return acc + snp.sum(x)


CASES = [layers, rows, rows_index_read_after, counted, nested, reversed_list, enumerated,
         branch_in_loop, inner_function, loop_with_else]


def _decisions(fn):
    """(the quick test's answer, whether the full rewrite leaves fn as it is), as
    functionalize computes them."""
    fn = desugar(fn, only_choices=True)
    src = function_source(fn)
    return F._python_loops_only(src.node.body), F._rewrite(fn, src, copy_tree(src.node), {}) is fn


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_quick_test_agrees_with_the_full_rewrite(fn):
    quick, full = _decisions(fn)
    assert full or not quick, f"{fn.__name__}: the quick test skips a rewrite that changes it"


def test_quick_test_takes_the_loops_it_should():
    # (its point: these skip the rewrite; the others are left to it)
    quick = {fn.__name__: _decisions(fn)[0] for fn in CASES}
    assert quick == {"layers": True, "rows": False, "rows_index_read_after": True,
                     "counted": False, "nested": False, "reversed_list": True,
                     "enumerated": True, "branch_in_loop": False, "inner_function": True,
                     "loop_with_else": True}


def mlp_loss(params, x, y):
    for w, b in params[:-1]:
        x = snp.tanh(x @ w + b)
    w, b = params[-1]
    return snp.mean((x @ w + b - y) ** 2)


def _params(rng, sizes=(5, 4, 3, 2)):
    return [(rng.normal(size=(m, n)) / np.sqrt(m), rng.normal(size=n) * 0.1)
            for m, n in zip(sizes[:-1], sizes[1:])]


@pytest.mark.parametrize("fn", [mlp_loss, layers, enumerated, rows_index_read_after, rows],
                         ids=lambda f: f.__name__)
def test_derivatives_quick_test_agrees_with_the_full_rewrite(fn):
    rng = np.random.default_rng(0)
    g = secant.grad(fn)
    if fn is mlp_loss:
        g(_params(rng), rng.normal(size=(6, 5)), rng.normal(size=(6, 2)))
    gen = g.__secant_generated__
    quick, full = _decisions(gen)
    assert full or not quick
    if fn is mlp_loss:      # (the derivative the benchmark reuses under jit)
        assert quick and full


def _central(f, params, eps=1e-6):
    out = []
    for k, (w, b) in enumerate(params):
        grads = []
        for a in (w, b):
            d = np.zeros_like(a)
            for idx in np.ndindex(a.shape):
                keep = a[idx]
                a[idx] = keep + eps
                up = f(params)
                a[idx] = keep - eps
                down = f(params)
                a[idx] = keep
                d[idx] = (up - down) / (2 * eps)
            grads.append(d)
        out.append(tuple(grads))
    return out


def test_jit_grad_of_mlp_matches_eager_and_central_differences():
    rng = np.random.default_rng(1)
    params = _params(rng)
    x, y = rng.normal(size=(6, 5)), rng.normal(size=(6, 2))

    def loss64(ps):
        h = x
        for w, b in ps[:-1]:
            h = np.tanh(h @ w + b)
        w, b = ps[-1]
        return np.mean((h @ w + b - y) ** 2)
    want = _central(loss64, params)
    p32 = [(w.astype(np.float32), b.astype(np.float32)) for w, b in params]
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    g = secant.grad(mlp_loss)
    eager = g(p32, x32, y32)
    jitted = secant.jit(g)(p32, x32, y32)
    for (we, be), (wj, bj), (ww, bw) in zip(eager, jitted, want):
        assert_allclose(np.asarray(wj), np.asarray(we), rtol=1e-5, atol=1e-6)
        assert_allclose(np.asarray(bj), np.asarray(be), rtol=1e-5, atol=1e-6)
        assert_allclose(np.asarray(wj), ww, rtol=1e-3, atol=1e-4)
        assert_allclose(np.asarray(bj), bw, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("fn", [rows, rows_index_read_after, loop_with_else],
                         ids=lambda f: f.__name__)
def test_jit_of_row_loops_matches_eager_and_a_python_loop(fn):
    xs = np.random.default_rng(2).normal(size=(4, 3)).astype(np.float32)
    want = fn(xs)
    got = secant.jit(fn)(xs)
    assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
    g = secant.grad(fn)
    assert_allclose(np.asarray(secant.jit(g)(xs)), np.asarray(g(xs)), rtol=1e-5, atol=1e-6)

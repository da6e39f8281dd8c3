"""Issue 20: a loop over an array's rows whose variable is read after the loop (`for w in ws`,
then `v * w`) is carried (loop15n): the reverse loop gives the after-loop cotangent to the last
row and zeros to the others. Those zeros were shaped like the value each iteration started
from, which the forward loop stacked every iteration for nothing else; every row of one array
has the same shape and dtype (transformer/shapes.py rows_alike), so the zero is shaped like the
replayed row and nothing is stacked. A list of differently shaped arrays, or a name bound
before the loop (whose own cotangent is read after the reverse loop), keeps the stack. Each
gradient against float64 central differences."""
import numpy as np

import secant
import secant.numpy as snp

RNG = np.random.default_rng(2020)


def rows(x):
    ws = snp.stack([x, 2.0 * x, snp.sin(x)])
    v = x
    for w in ws:
        v = snp.sin(w * v)
    return snp.sum(v * w + v)


def rows_bound_before(x):
    ws = snp.outer(snp.array([0.5, -1.0, 2.0]), x)
    w = snp.sum(x)          # (a scalar: not a row's shape)
    v = x * w
    for w in ws:
        v = snp.cos(w * v)
    return snp.sum(v * w)


def ragged(x):
    xs = [x[:2], x[:3] * 2.0, x]
    v = snp.sum(x)
    for w in xs:
        v = snp.sin(snp.sum(w) * v)
    return v * snp.sum(w)


def central(f, x, eps=1e-6):
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = eps
        out[k] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


def test_rows_of_one_array_are_not_stacked(x64):
    text = secant.source(secant.grad(rows))
    assert "unbound_before_loop" not in text and text.count("_stack = []") == 1, text
    assert "_bar = snp.zeros_like(w_2)" in text, text     # (v_stack alone)
    x = RNG.normal(size=4)
    want = central(lambda a: float(rows(a)), x)
    np.testing.assert_allclose(secant.grad(rows)(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.grad(rows))(x), want, rtol=1e-6, atol=1e-8)


def test_a_name_bound_before_the_loop_keeps_its_zeros_shape(x64):
    x = RNG.normal(size=3)
    want = central(lambda a: float(rows_bound_before(a)), x)
    np.testing.assert_allclose(secant.grad(rows_bound_before)(x), want, rtol=1e-6, atol=1e-8)


def test_a_list_of_differently_shaped_arrays_keeps_the_stack(x64):
    text = secant.source(secant.grad(ragged))
    assert "_stack" in text, text
    x = RNG.normal(size=4)
    want = central(lambda a: float(ragged(a)), x)
    np.testing.assert_allclose(secant.grad(ragged)(x), want, rtol=1e-6, atol=1e-8)

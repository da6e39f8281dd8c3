"""Lean derivatives (issue 20): a field's cotangent read once, by its structure's cotangent
(grad_of_fields(params, {...})), is written as that entry even where the field's rule stands
under another user line's comment (ad/fold.py _entry), as hand-written mlp_loss returns its
dict of gradients. A fold whose line passes 90 columns is written on two rows where its call's
last arguments fit on the second, aligned after the `(`, or its chain of operators continues
there before an operator (ad/fold.py wrapped). Every source check has a numerical twin: float64
central differences, jit against eager, vmap against a Python loop."""
import ast

import numpy as np

import secant
import secant.numpy as snp
from secant.ad import fold
from test_lean20c import fd_grad

RNG = np.random.default_rng(2023)


def three_layer(params, x, y):
    h = snp.tanh(x @ params["w1"] + params["b1"])
    g = snp.tanh(h @ params["w2"] + params["b2"])
    out = g @ params["w3"] + params["b3"]
    return snp.sum((out - y) ** 2)


def _params():
    sizes = (3, 4, 5, 2)
    out = {}
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:]), 1):
        out[f"w{i}"] = RNG.normal(size=(m, n)) / np.sqrt(m)
        out[f"b{i}"] = RNG.normal(size=n)
    return out


def _fd(params, x, y):
    out = {}
    for k in params:
        def f(v, k=k):
            return three_layer({**params, k: v}, x, y)
        out[k] = fd_grad(f, params[k])
    return out


def test_every_field_written_in_the_dict(x64):
    src = secant.source(secant.grad(three_layer))
    lines = [ln.strip() for ln in src.splitlines()]
    for k in ("w1", "b1", "w2", "b2", "w3", "b3"):     # no line of its own: an entry
        assert not any(ln.startswith(f"{k}_bar =") for ln in lines), src
        assert any(ln.startswith(f"'{k}': ") and not ln.startswith(f"'{k}': {k}_bar")
                   for ln in lines), src
    # a cotangent another comment's line (not the dict) reads once is folded there, on a
    # second row past 90 columns (ad/fold.py wrapped, before the operator); one that two dict
    # entries read keeps its line
    assert not any(ln.startswith(("g_bar = ", "h_bar = ")) for ln in lines), src
    assert "* (1 - h ** 2))" in lines, src
    assert any(ln.startswith("x_matmul_w1_plus_b1_bar = (matmul_grad_x(") for ln in lines), src
    params, x, y = _params(), RNG.normal(size=(6, 3)), RNG.normal(size=(6, 2))
    got = secant.grad(three_layer)(params, x, y)
    want = _fd(params, x, y)
    for k in params:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-8)
    jitted = secant.jit(secant.grad(three_layer))(params, x, y)
    for k in params:
        np.testing.assert_allclose(jitted[k], got[k], rtol=1e-12)
    xs = RNG.normal(size=(3, 6, 3))
    batched = secant.vmap(secant.grad(three_layer), in_axes=(None, 0, None))(params, xs, y)
    for b in range(3):
        one = secant.grad(three_layer)(params, xs[b], y)
        for k in params:
            np.testing.assert_allclose(batched[k][b], one[k], rtol=1e-12)


def read_twice(params, x):
    h = snp.tanh(x @ params["w"])
    return snp.sum(h * params["b"]) + snp.sum(params["w"] ** 2)


def test_a_field_read_twice_keeps_its_name(x64):
    params = {"w": RNG.normal(size=(3, 4)), "b": RNG.normal(size=4)}
    x = RNG.normal(size=(5, 3))
    got = secant.grad(read_twice)(params, x)
    for k in params:
        want = fd_grad(lambda v, k=k: read_twice({**params, k: v}, x), params[k])
        np.testing.assert_allclose(got[k], want, rtol=1e-6, atol=1e-8)


# --- a call a little too long: its last arguments on a second line (ad/fold.py wrapped) -------

def softmax_xent(logits, labels):
    z = logits - snp.max(logits, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return -snp.mean(snp.sum(labels * logp, axis=-1))


def test_a_fold_past_90_columns_written_on_two_lines(x64):
    src = secant.source(secant.grad(softmax_xent))
    rows = src.splitlines()
    assert max(len(r) for r in rows) <= 4 + fold.MAX_LENGTH, src
    # grad's seed (read once) written in the mean's rule, the call continued on a second row
    # (the shape of the sum read from its operands' shapes, shape_of: tests/test_lean20t.py)
    k = next(i for i, r in enumerate(rows) if "mean_grad_to(-grad_seed_like(" in r)
    assert rows[k].endswith(",") and rows[k + 1].strip().startswith("shape_of("), src
    assert rows[k + 1].index("shape_of(") == rows[k].index("mean_grad_to(") + \
        len("mean_grad_to("), src
    assert not any(r.strip().startswith("mean_") for r in rows), src
    for labels_shape in ((5, 4), (4,), (5, 1)):
        logits = RNG.normal(size=(5, 4))
        labels = RNG.random(size=labels_shape)
        got = secant.grad(softmax_xent)(logits, labels)
        want = fd_grad(lambda v: softmax_xent(v, labels), logits)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(secant.jit(secant.grad(softmax_xent))(logits, labels), got,
                                   rtol=1e-12)
    xs = RNG.normal(size=(3, 5, 4))
    labels = RNG.random(size=(5, 4))
    batched = secant.vmap(secant.grad(softmax_xent), in_axes=(0, None))(xs, labels)
    for b in range(3):
        np.testing.assert_allclose(batched[b], secant.grad(softmax_xent)(xs[b], labels),
                                   rtol=1e-12)


def test_wrapped_layout_and_refusals():
    long = "abcdefghij_bar = some_function(" + "first_argument_of_it * g, " * 2 + \
        "snp.sum(labels_times_logp, axis=-1))"
    out = fold.wrapped(long)
    assert len(long) > fold.MAX_LENGTH and out.count("\n") == 1, out
    first, second = out.split("\n")
    assert max(len(first), len(second)) <= fold.MAX_LENGTH
    assert second.startswith(" " * len("abcdefghij_bar = some_function(") + "snp.sum(")
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(long))
    assert fold.wrapped("return " + long.split(" = ", 1)[1]).count("\n") == 1
    short = "t_bar = f(a, b)"
    assert fold.wrapped(short) == short
    # refused: three rows needed, one argument, not a call, a comment after it
    three = "t_bar = f(" + ", ".join(["argument_number_%d * gg" % i for i in range(9)]) + ")"
    assert fold.wrapped(three) == three
    one = "t_bar = f(" + "a_long_name_" * 8 + ")"
    assert fold.wrapped(one) == one
    binop = "t_bar = " + " + ".join(["a_long_name_%d" % i for i in range(16)])
    assert fold.wrapped(binop) == binop     # (four rows needed: fold.MAX_ROWS is 3)
    binop = "t_bar = " + " + ".join(["a_long_name_%d" % i for i in range(12)])
    rows = fold.wrapped(binop).split("\n")  # (three rows: each as full as fits, lean20g)
    assert len(rows) == 3 and max(map(len, rows)) <= fold.MAX_LENGTH, rows
    assert all(r.startswith(" " * len("t_bar = (") + "+ ") for r in rows[1:]), rows
    assert ast.dump(ast.parse("\n".join(rows))) == ast.dump(ast.parse(binop))
    noted = long + "  # a note"
    assert fold.wrapped(noted) == noted
    assert fold._width(long) <= fold.MAX_LENGTH < fold._width(three)

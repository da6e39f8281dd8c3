"""Issue 20 (lean20g): a sum of calls continued on three rows (ad/fold.py MAX_ROWS, each row as
full as fits, before an operator), and a read once folded into its use once a comment joined
across user lines puts both under it (ad/reverse.py: fold's last pass again after
accumulate.summed joins comments; accumulate.MAX_SECTIONS 6). attention's gradient returns the
three weight gradients' sum, v's and k's cotangents written in it, as the hand-written one:
bench/lean.py 13 -> 11 statements. Every source check has a numerical twin: float64 central
differences per argument, jit against eager, vmap against a loop, a Hessian-vector product."""
import ast
import os
import sys

import numpy as np

import secant
import secant.numpy as snp
from secant.ad import fold
from test_lean20c import fd_grad

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import lean_functions as funcs     # noqa: E402

RNG = np.random.default_rng(2007)


def test_three_rows_as_full_as_fit():
    code = "return " + " + ".join(f"matmul_grad_x(some_cotangent_{i}, x, w{i})"
                                  for i in range(5))
    rows = fold.wrapped(code).split("\n")
    assert len(rows) == 3 and max(map(len, rows)) <= fold.MAX_LENGTH, rows
    assert rows[0].startswith("return (matmul_grad_x(some_cotangent_0")
    assert all(r.startswith(" " * len("return (") + "+ matmul_grad_x(") for r in rows[1:])
    assert ast.dump(ast.parse("\n".join(rows))) == ast.dump(ast.parse(code))
    # two rows where they fit (the first as full as fits), never three
    two = "return " + " + ".join(f"matmul_grad_x(t{i}, x, w{i})" for i in range(4))
    assert fold.wrapped(two).count("\n") == 1
    # a chain needing four rows is left as it is (its fold refused)
    four = "return " + " + ".join(f"matmul_grad_x(some_cotangent_{i}, x, w{i})"
                                  for i in range(9))
    assert fold.wrapped(four) == four and fold._width(four) > fold.MAX_LENGTH


def _source(fn):
    return secant.source(secant.grad(fn))


def test_attention_returns_the_three_weight_gradients():
    src = _source(funcs.attention)
    assert "v_bar" not in src and "k_bar" not in src and "q_bar" not in src, src
    assert "    return (matmul_grad_x(matmul_grad_y(out_bar, a, v), x, wv)\n" \
           "            + matmul_grad_x(matmul_grad_t_y(q_matmul_k_T_bar, q, k), x, wk)\n" \
           "            + matmul_grad_x(matmul_grad_x_of_t(q_matmul_k_T_bar, q, k), x, wq))\n" \
           in src, src
    # every rule still under a comment naming its user line: the joined one names six
    assert "#          a = e / snp.sum(e, axis=-1, keepdims=True); out = a @ v\n" in src, src
    assert all(len(r) <= fold.MAX_LENGTH + 4 for r in src.splitlines()), src


def test_attention_values_every_argument(x64):
    args = funcs.inputs("attention", RNG, np.float64, small=True)
    g = secant.grad(funcs.attention, argnums=(0, 1, 2, 3))
    got = g(*args)
    for k in range(4):
        def f(v, k=k):
            return funcs.attention(*(args[:k] + (v,) + args[k + 1:]))
        np.testing.assert_allclose(np.asarray(got[k]), fd_grad(f, args[k]), rtol=1e-6,
                                   atol=1e-8, err_msg=f"argument {k}")
    jitted = secant.jit(g)(*args)
    for a, b in zip(jitted, got):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


def test_attention_second_order_and_vmap(x64):
    args = funcs.inputs("attention", RNG, np.float64, small=True)
    g = secant.grad(funcs.attention)
    t = RNG.normal(size=args[0].shape)
    zeros = tuple(np.zeros_like(a) for a in args[1:])
    hv = secant.jvp(g, args, (t,) + zeros)[1]
    eps = 1e-5
    want = (np.asarray(g(args[0] + eps * t, *args[1:])) -
            np.asarray(g(args[0] - eps * t, *args[1:]))) / (2 * eps)
    np.testing.assert_allclose(hv, want, rtol=1e-5, atol=1e-7)
    xs = RNG.normal(size=(3,) + args[0].shape)
    batched = secant.vmap(g, in_axes=(0, None, None, None))(xs, *args[1:])
    for b in range(3):
        np.testing.assert_allclose(batched[b], g(xs[b], *args[1:]), rtol=1e-12)
    jv = secant.jit(secant.vmap(g, in_axes=(0, None, None, None)))(xs, *args[1:])
    np.testing.assert_allclose(jv, batched, rtol=1e-10, atol=1e-12)


def three_terms(a, b, c):
    """Three matrix products' cotangents read once by the return across user lines."""
    p = snp.tanh(a @ b)
    q = p @ c
    r = snp.sin(q @ snp.transpose(b))
    return snp.sum(r * r) + snp.sum(q * p @ c)


def test_a_user_program_through_the_late_folds(x64):
    args = (RNG.normal(size=(4, 3)), RNG.normal(size=(3, 3)) * 0.5,
            RNG.normal(size=(3, 3)) * 0.5)
    g = secant.grad(three_terms, argnums=(0, 1, 2))
    got = g(*args)
    for k in range(3):
        def f(v, k=k):
            return three_terms(*(args[:k] + (v,) + args[k + 1:]))
        np.testing.assert_allclose(np.asarray(got[k]), fd_grad(f, args[k]), rtol=1e-6,
                                   atol=1e-8, err_msg=f"argument {k}")
    h = secant.hessian(three_terms)(*args)
    g0 = secant.grad(three_terms)
    want = np.stack([fd_grad(lambda v: np.asarray(g0(v, *args[1:]))[idx], args[0])
                     for idx in np.ndindex(args[0].shape)]).reshape(h.shape)
    np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-7)

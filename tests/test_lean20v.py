"""Lean derivatives (issue 20): a value read once whose fold passes 90 columns is written on two
rows also where the line is a chain of binary operators (ad/fold.py wrapped: the chain in
parentheses, continued before one of its operators, aligned after the `(`), in fold's last pass
and across user lines' comments (ad/accumulate.py summed with wrap), as a person continues a
long sum or product. A return in place that fits one row is made before those folds (a
two-row fold never takes its place). Every source check has a numerical twin: float64 central
differences, jit against eager, vmap against a Python loop, a second derivative."""
import ast
import os
import sys

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.ad import fold
from test_lean20c import fd_grad

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import lean_functions as funcs     # noqa: E402

RNG = np.random.default_rng(20)


def _rows(fn):
    return secant.source(secant.grad(fn)).splitlines()


def _statement(rows, start):
    """The statement starting with `start` (its rows joined), stripped."""
    k = next(i for i, r in enumerate(rows) if r.strip().startswith(start))
    text = rows[k].strip()
    while text.count("(") > text.count(")"):
        k += 1
        text += " " + rows[k].strip()
    return text


def _checked(fn):
    """fn's small float64 inputs, its gradient checked against central differences and jit."""
    args = funcs.inputs(fn.__name__, RNG, np.float64, small=True)
    got = secant.grad(fn)(*args)
    np.testing.assert_allclose(got, fd_grad(lambda v: fn(v, *args[1:]), args[0]),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.grad(fn))(*args), got, rtol=1e-10, atol=1e-12)
    return args


# --- wrapped: a chain of operators on two rows ---------------------------------------------

def test_operator_chain_wrapped_before_an_operator():
    code = ("h_matmul_w2_plus_b2_bar = matmul_grad_x(z_bar, h_1, params['w3']) * "
            "max_share(h_matmul_w2_plus_b2, 0.0)")
    out = fold.wrapped(code)
    first, second = out.split("\n")
    assert first == "h_matmul_w2_plus_b2_bar = (matmul_grad_x(z_bar, h_1, params['w3'])"
    assert second == " " * len("h_matmul_w2_plus_b2_bar = (") + \
        "* max_share(h_matmul_w2_plus_b2, 0.0))"
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(code))
    # the first row as full as fits; a return too
    chain = "return " + " + ".join(f"matmul_grad_x(term_{i}_bar, x, w)" for i in range(4))
    out = fold.wrapped(chain)
    assert out.count("\n") == 1 and out.startswith("return (") and out.endswith(")"), out
    assert out.split("\n")[0].count("+") == 1 and out.split("\n")[1].lstrip().startswith("+ ")
    assert max(map(len, out.split("\n"))) <= fold.MAX_LENGTH
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(chain))
    assert fold._operator_split(chain) and not fold._operator_split(code[:40])
    # a call whose arguments, written without their redundant parentheses, fit one row: no
    # split (examples/custom_rules.py's clip_gradient raised an IndexError here)
    call = ("return clip_gradient_bwd_checked(3 * grad_seed_like(y ** 3) * y ** 2, y_res, "
            "(-1.0), 1.0, x)")
    assert "\n" not in fold.wrapped(call) and not fold._operator_split(call)


def test_operator_wrap_keeps_the_tree():
    # the split only at the top chain's operators (a - (b - c) keeps its parentheses; a
    # quotient inside a sum stays whole)
    code = ("t_bar = some_long_cotangent_name_of_it - (another_long_name_here - yet_another_one"
            ") - a_last_term_of_the_chain")
    out = fold.wrapped(code)
    assert out != code and ast.dump(ast.parse(out)) == ast.dump(ast.parse(code)), out
    assert "(another_long_name_here - yet_another_one)" in out
    code = ("t_bar = first_value_of_a_long_name / second_value_of_a_long_name + "
            "third_value_of_a_long_name / fourth_value")
    first, second = fold.wrapped(code).split("\n")
    assert second.strip() == "+ third_value_of_a_long_name / fourth_value)"
    assert ast.dump(ast.parse(first + "\n" + second)) == ast.dump(ast.parse(code))


def test_operator_wrap_refusals():
    three = "t_bar = " + " * ".join(f"a_long_factor_name_{i}" for i in range(12))
    assert fold.wrapped(three) == three             # (three rows needed)
    noted = "t_bar = " + " + ".join(f"a_long_term_{i}" for i in range(7)) + "  # a note"
    assert fold.wrapped(noted) == noted
    power = "t_bar = " + " ** ".join(f"a_long_base_name_{i}" for i in range(6))
    assert fold.wrapped(power) == power             # (** is not a chain it splits)
    short = "t_bar = a * b"
    assert fold.wrapped(short) == short


# --- the figures' functions ----------------------------------------------------------------

def test_mlp_hidden_cotangents_folded_on_two_rows(x64):
    rows = _rows(funcs.mlp_loss)
    src = "\n".join(rows)
    assert max(map(len, rows)) <= 4 + fold.MAX_LENGTH, src
    for gone in ("h_1_bar =", "h_bar ="):
        assert not any(r.strip().startswith(gone) for r in rows), src
    assert _statement(rows, "h_matmul_w2_plus_b2_bar =") == (
        "h_matmul_w2_plus_b2_bar = (matmul_grad_x(z_bar, h_1, params['w3']) "
        "* max_share(h_matmul_w2_plus_b2, 0.0))"), src
    assert _statement(rows, "x_matmul_w1_plus_b1_bar =") == (
        "x_matmul_w1_plus_b1_bar = (matmul_grad_x(h_matmul_w2_plus_b2_bar, h, params['w2']) "
        "* max_share(x_matmul_w1_plus_b1, 0.0))"), src
    params, x, y = funcs.inputs("mlp_loss", RNG, np.float64, small=True)
    got = secant.grad(funcs.mlp_loss)(params, x, y)
    for k in params:
        want = fd_grad(lambda v, k=k: funcs.mlp_loss({**params, k: v}, x, y), params[k])
        np.testing.assert_allclose(got[k], want, rtol=1e-6, atol=1e-8)
    jitted = secant.jit(secant.grad(funcs.mlp_loss))(params, x, y)
    for k in params:
        np.testing.assert_allclose(jitted[k], got[k], rtol=1e-10, atol=1e-12)
    # vmap over a batch of inputs against a loop
    xs = RNG.normal(size=(3,) + x.shape)
    batched = secant.vmap(secant.grad(funcs.mlp_loss), in_axes=(None, 0, None))(params, xs, y)
    for b in range(3):
        one = secant.grad(funcs.mlp_loss)(params, xs[b], y)
        for k in params:
            np.testing.assert_allclose(batched[k][b], one[k], rtol=1e-10, atol=1e-12)


def test_attention_query_cotangent_folded_into_the_return(x64):
    rows = _rows(funcs.attention)
    src = "\n".join(rows)
    assert max(map(len, rows)) <= 4 + fold.MAX_LENGTH, src
    assert not any(r.strip().startswith("q_bar =") for r in rows), src
    assert _statement(rows, "return") == (     # (v_bar, k_bar too: lean20g, three rows)
        "return (matmul_grad_x(matmul_grad_y(out_bar, a, v), x, wv) "
        "+ matmul_grad_x(matmul_grad_t_y(q_matmul_k_T_bar, q, k), x, wk) "
        "+ matmul_grad_x(matmul_grad_x_of_t(q_matmul_k_T_bar, q, k), x, wq))"), src
    # (k.T's rules read k: tests/test_lean20z_transpose.py)
    args = _checked(funcs.attention)
    # the second derivative through the folded lines: hessian-vector product vs differences
    t = RNG.normal(size=args[0].shape)
    hv = secant.jvp(secant.grad(funcs.attention), (args[0],) + tuple(args[1:]),
                    (t,) + tuple(np.zeros_like(a) for a in args[1:]))[1]
    eps = 1e-5
    g = secant.grad(funcs.attention)
    want = (np.asarray(g(args[0] + eps * t, *args[1:])) -
            np.asarray(g(args[0] - eps * t, *args[1:]))) / (2 * eps)
    np.testing.assert_allclose(hv, want, rtol=1e-5, atol=1e-7)


def test_helpers_second_layer_folded(x64):
    rows = _rows(funcs.helpers)
    src = "\n".join(rows)
    assert not any(r.strip().startswith("h_bar =") for r in rows), src
    assert _statement(rows, "return") == (
        "return (matmul_grad_y(_affine_out_bar, h, w) "
        "+ matmul_grad_y(matmul_grad_x(_affine_out_bar, h, w) * (1 - h ** 2), x, w))"), src
    args = _checked(funcs.helpers)
    ws = RNG.normal(size=(3,) + args[0].shape) / 2
    batched = secant.vmap(secant.grad(funcs.helpers), in_axes=(0, None, None, None))(
        ws, *args[1:])
    for b in range(3):
        np.testing.assert_allclose(batched[b], secant.grad(funcs.helpers)(ws[b], *args[1:]),
                                   rtol=1e-10, atol=1e-12)
    hess = secant.hessian(funcs.helpers)(*args)
    w = args[0]
    eps = 1e-5
    i, j = 1, 2
    e = np.zeros_like(w)
    e[i, j] = eps
    col = (np.asarray(secant.grad(funcs.helpers)(w + e, *args[1:])) -
           np.asarray(secant.grad(funcs.helpers)(w - e, *args[1:]))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(hess)[:, :, i, j], col, rtol=1e-5, atol=1e-7)


def test_a_return_in_place_on_one_row_kept(x64):
    # leapfrog's q_bar returned in place (one row) rather than p_half_bar folded into q_bar on
    # two rows and q_bar kept: the return in place is made first
    rows = _rows(funcs.leapfrog_energy)
    src = "\n".join(rows)
    assert rows[-1].strip().startswith("return unbroadcast("), src
    assert not any(r.strip().startswith("q_bar =") for r in rows), src
    q, p, k, dt = funcs.inputs("leapfrog_energy", RNG, np.float64, small=True)
    got = secant.grad(funcs.leapfrog_energy)(q, p, k, dt)
    np.testing.assert_allclose(got, fd_grad(lambda v: funcs.leapfrog_energy(v, p, k, dt), q),
                               rtol=1e-6, atol=1e-8)


def test_a_chain_folded_across_comments_in_a_loop_free_function(x64):
    # a cotangent read once by another user line's rule, too long for one row: folded there
    # on two rows (accumulate.summed wrap), the comments joined
    def f(x, w1, w2):
        first_hidden_layer = snp.tanh(x @ w1)
        second_hidden_layer = snp.sin(first_hidden_layer @ w2)
        # (a cube: a square's cotangent, 2 * h * seed, stays a line of its own)
        return snp.sum(second_hidden_layer ** 3)
    rows = _rows(f)
    src = "\n".join(rows)
    assert max(map(len, rows)) <= 4 + fold.MAX_LENGTH, src
    assert any(r.lstrip().startswith(("* ", "+ ")) for r in rows), src
    x, w1, w2 = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 5)), RNG.normal(size=(5, 2))
    got = secant.grad(f)(x, w1, w2)
    np.testing.assert_allclose(got, fd_grad(lambda v: f(v, w1, w2), x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(x, w1, w2), got, rtol=1e-10)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

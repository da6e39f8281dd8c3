"""Lean derivatives (issue 20), lean20h: what a loop's reverse pass binds and nothing reads is
not named (transformer/walker.py unread_targets_unnamed: `_, f_out_res = f_fwd_checked(y_1)`
for a custom_vjp call in a Python loop, whose value the bwd rule does not read). Each
derivative is checked against float64 central differences and jit against eager; a value read
after the line (by the rule, by a later iteration, a user's own `_`) keeps its name."""
import numpy as np

import secant
import secant.numpy as snp
from secant.transformer.walker import Line, unread_targets_unnamed
from test_lean20c import fd_grad


@secant.custom_vjp
def sin_rule(x):
    return snp.sin(x)


def _sin_fwd(x):
    return snp.sin(x), snp.cos(x)


def _sin_bwd(c, g):
    return (g * c,)


sin_rule.defvjp(_sin_fwd, _sin_bwd)


def looped(x, n):
    y = x
    for i in range(n):
        y = sin_rule(y) * 2.0
    return snp.sum(y)


def looped_value_read(x, n):
    y = x
    for i in range(n):
        y = sin_rule(y) * y        # (the product's rule reads sin_rule's value)
    return snp.sum(y)


def _check(f):
    x = np.array([0.3, -0.7, 1.1])
    g = secant.grad(f)
    got = g(x, 3)
    want = fd_grad(lambda v: f(v, 3), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.jit(g, static_argnums=(1,))(x, 3), got, rtol=1e-5)
    return secant.source(g)


def test_unread_pair_value_unnamed(x64):
    text = _check(looped)
    lines = [ln.strip() for ln in text.splitlines()]
    pair = [ln for ln in lines if "_res = " in ln]
    assert len(pair) == 1 and pair[0].startswith("_, "), text


def test_read_pair_value_keeps_its_name(x64):
    text = _check(looped_value_read)
    pair = [ln.strip() for ln in text.splitlines() if "_res = " in ln]
    assert len(pair) == 1 and not pair[0].startswith("_, "), text


def _lines(*rows):
    out = []
    for indent, code, kind in rows:
        out.append(Line(code, indent, kind))
    return out


def test_liveness_over_a_loop_and_a_users_underscore():
    # read by the next iteration: kept
    loop = _lines((1, "for i in r:", "block"), (2, "c = a * 2", "stmt"),
                  (2, "a, b = f(c)", "stmt"), (1, "return b", "stmt"))
    assert [ln.code for ln in unread_targets_unnamed(loop)][2] == "a, b = f(c)"
    # read by nothing after it: `_`
    once = _lines((1, "a, b = f(x)", "stmt"), (1, "return b", "stmt"))
    assert unread_targets_unnamed(once)[0].code == "_, b = f(x)"
    # a user's `_` read after it: left alone
    users = _lines((1, "_ = g(x)", "stmt"), (1, "a, b = f(x)", "stmt"),
                   (1, "return b + _", "stmt"))
    assert unread_targets_unnamed(users)[1].code == "a, b = f(x)"

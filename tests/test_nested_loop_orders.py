"""Reverse mode over a derivative of nested Python loops (issue 15, 4: reverse over reverse
through Python loops): grad(grad(f)), grad to the 3rd and 4th order, jacrev(jacrev(f)) of
functions whose loops nest (for in for, for in while, breaks, loops over lists, three deep).
A derivative's inner loop saves its values on a stack it makes inside the outer reverse loop;
the next order's replay of that loop makes the stack again (ad/stacks.py). Each order is
checked against float64 finite differences of the order before, and jit against eager."""
import sys
from pathlib import Path

import numpy as np
import pytest

import secant.numpy as snp
from secant import grad, hessian, jacfwd, jacrev, jit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from loop_programs import for_in_while, nested_for  # noqa: E402

# (tolerance-based checks: XLA's LLVM optimisation off in the default profile, conftest)
pytestmark = pytest.mark.usefixtures("fast_compiles")

X = 0.7
EPS = 1e-5


def with_breaks(x):
    s = x
    for i in range(4):
        for j in range(3):
            if j == 2:
                break
            s = snp.cos(s) * x
        if i == 2:
            break
    return s


def over_lists(x):
    acc = []
    for w in [0.5, 1.5, -0.3]:
        h = x
        for k in range(2):
            h = snp.tanh(h * w + x)
        acc.append(h)
    return snp.sum(snp.stack(acc))


def three_deep(x):
    s = x
    for i in range(2):
        for j in range(2):
            for k in range(2):
                s = snp.sin(s + x) * 0.9
    return s


def _diff(f, x):
    return (float(f(x + EPS)) - float(f(x - EPS))) / (2 * EPS)


def _check(f, order):
    d = f
    for _ in range(order - 1):
        d = grad(d)
    top = grad(d)
    want = _diff(d, X)
    got = float(top(X))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(float(jit(top)(X)), got, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f", [nested_for, for_in_while, with_breaks, over_lists, three_deep],
                         ids=lambda f: f.__name__)
def test_second_order(x64, f):
    _check(f, 2)


@pytest.mark.parametrize("f", [nested_for, with_breaks, three_deep], ids=lambda f: f.__name__)
def test_third_order(x64, f):
    _check(f, 3)


def test_fourth_order(x64):
    _check(for_in_while, 4)


def sum_over_list(x):
    s = 0.0
    for w in [0.5, 1.5]:
        h = x
        for k in range(2):
            h = snp.tanh(h * w + x)
        s = s + h
    return s


def test_fourth_order_under_jit_of_a_loop_in_a_loop(x64):
    """jit stages the inner loop (a scan); from the 3rd order a scan's derivative holds nested
    defs in the outer loop that assign their own `x` (`carry, x, ... = step`): read as the outer
    loop's carry, the 4th order under jit was 0.0 (eager -23.07)."""
    _check(sum_over_list, 4)


def rows(w):
    """A vector function of nested loops: jacrev of jacrev is its Hessian."""
    s = 0.0
    for i in range(2):
        h = w
        for j in range(2):
            h = snp.tanh(h * w[::-1] + 0.3 * i)
        s = s + snp.sum(h * h)
    return s


def test_jacrev_of_jacrev_is_the_hessian(x64):
    w = np.array([0.3, -0.4, 0.8])
    h = jacrev(jacrev(rows))(w)
    np.testing.assert_allclose(h, hessian(rows)(w), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h, jacfwd(jacrev(rows))(w), rtol=1e-10, atol=1e-12)
    g = grad(rows)
    fd = np.stack([(np.asarray(g(w + EPS * e)) - np.asarray(g(w - EPS * e))) / (2 * EPS)
                   for e in np.eye(3)])
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jit(jacrev(jacrev(rows)))(w), h, rtol=1e-10, atol=1e-12)

"""Silently wrong values the corpus found (issue 15, section 1), each a named regression test.

Two root causes in the normaliser (transformer/normalize.py), both first-order bugs that showed
up at second order, where the first derivative's own generated code has exactly these shapes:

- a user name given out as its own first version in one branch of an `if` was given out again
  in the other (`if c: y = x / else: y = x * x; y = y + z`): the branch's two versions of `y`
  aliased and the reverse pass doubled y's cotangent (recursion: grad∘grad of x**4 by
  recursion gave 44.1 for 5.88);
- a variable a loop body assigns but does not carry (one iteration's value, perhaps under an
  `if`) stayed visible after the loop: a later `if` copied it into its other branch, and the
  reverse pass accumulated its cotangent across iterations (break: grad∘grad wrong from three
  iterations on).

Each is checked against float64 finite differences of a first derivative that is itself checked,
or against closed forms.
"""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def fd_grad(f, x, h=1e-6):
    """Central differences of a scalar function of a float or a 1-d array."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        return (float(f(x + h)) - float(f(x - h))) / (2 * h)
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        out[k] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return out


# --- SSA: two first versions of one name in the two branches of an if ------------------------
def reassigned_in_branch(x, n):
    if n == 0:
        y = x
    else:
        y = x * x
        z = snp.sin(x)
        y = y + z
    return y


def test_reassignment_in_one_branch_first_order(x64):
    g = secant.grad(reassigned_in_branch)
    for x in (0.7, -1.3):
        assert float(g(x, 1)) == pytest.approx(2 * x + np.cos(x), rel=1e-12)
        assert float(g(x, 0)) == pytest.approx(1.0)
    # the branch's versions keep apart in the readable source
    assert "y_1 = x * x" in secant.source(g)


def _power(x, n):
    if n == 0:
        return 1.0
    return x * _power(x, n - 1)


def power4(x):
    return _power(x, 4)


def test_recursion_static_every_order(x64):
    x = 0.7
    g1 = secant.grad(power4)
    g2 = secant.grad(g1)
    g3 = secant.grad(g2)
    g4 = secant.grad(g3)
    assert float(g1(x)) == pytest.approx(4 * x ** 3, rel=1e-12)
    assert float(g2(x)) == pytest.approx(12 * x ** 2, rel=1e-12)       # was 44.1 for 5.88
    assert float(g3(x)) == pytest.approx(24 * x, rel=1e-12)            # was 498.4 for 16.8
    assert float(g4(x)) == pytest.approx(24.0, rel=1e-12)              # was 1144 for 24
    _, pullback = secant.vjp(g1, x)
    assert float(pullback(1.5)[0]) == pytest.approx(1.5 * 12 * x ** 2, rel=1e-12)
    assert float(secant.jvp(g2, (x,), (1.0,))[1]) == pytest.approx(24 * x, rel=1e-12)


def _tree_sum(x, depth):
    if depth == 0:
        return snp.sin(x)
    return _tree_sum(x, depth - 1) + _tree_sum(0.5 * x, depth - 1)


def tree_sum(x):
    return snp.sum(_tree_sum(x, 3))


def test_recursion_branching_second_order(x64):
    x = np.array([0.3, -1.1, 2.0])
    g1 = secant.grad(tree_sum)
    # closed form: sum over the 2**3 leaves of sin(x * 0.5**k), k = halvings on that path
    scales = np.array([0.5 ** bin(j).count("1") for j in range(8)])
    np.testing.assert_allclose(g1(x), (scales[:, None] * np.cos(scales[:, None] * x)).sum(0),
                               rtol=1e-12)
    v = np.array([0.4, -0.2, 0.9])

    def hv(x):
        return snp.sum(g1(x) * v)
    want = (-(scales[:, None] ** 2) * np.sin(scales[:, None] * x)).sum(0) * v
    np.testing.assert_allclose(secant.grad(hv)(x), want, rtol=1e-10)
    np.testing.assert_allclose(secant.grad(hv)(x), fd_grad(hv, x), rtol=1e-6, atol=1e-8)


# --- a loop's body-local value must not outlive the loop ---------------------------------------
def body_local_then_branch(x):
    for i in range(3):
        if i < 2:
            y = snp.sin(x)
            x = x * y
    for i in range(3):
        if i > 0:
            y = x * 2.0
            x = x + y
    return x


def test_loop_body_local_not_read_after_loop_first_order(x64):
    g = secant.grad(body_local_then_branch)
    for x in (0.9, -0.4):
        assert float(g(x)) == pytest.approx(fd_grad(body_local_then_branch, x), rel=1e-7)


def _break_after(n):
    def f(x):
        for i in range(10):
            x = x * 0.9 + snp.sin(x)
            if i >= n:
                break
        return snp.sum(x)
    return f


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, 9])
def test_break_static_second_order(x64, n):
    f = _break_after(n)
    x = np.array([0.2, 0.4, -0.6])
    g1 = secant.grad(f)
    np.testing.assert_allclose(g1(x), fd_grad(f, x), rtol=1e-7, atol=1e-9)
    v = np.array([0.3, -0.5, 0.7])

    def hv(x):
        return snp.sum(g1(x) * v)
    np.testing.assert_allclose(secant.grad(hv)(x), fd_grad(hv, x), rtol=1e-6, atol=1e-8)
    _, pullback = secant.vjp(g1, x)
    np.testing.assert_allclose(pullback(v)[0], fd_grad(hv, x), rtol=1e-6, atol=1e-8)


def break_traced(x):
    for i in range(6):
        x = 0.5 * x + 0.1
        if snp.sum(x) < 0.5:
            break
    return snp.sum(x ** 2)


@pytest.mark.parametrize("x", [[0.5, 1.0, 1.5], [2.0, 3.0, 4.0], [0.1, 0.1, 0.1]])
def test_break_traced_second_order(x64, x):
    x = np.array(x)
    g1 = secant.grad(break_traced)
    np.testing.assert_allclose(g1(x), fd_grad(break_traced, x), rtol=1e-7, atol=1e-9)
    v = np.array([0.3, -0.5, 0.7])

    def hv(x):
        return snp.sum(g1(x) * v)
    np.testing.assert_allclose(secant.grad(hv)(x), fd_grad(hv, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(secant.grad(secant.jit(hv))(x), fd_grad(hv, x), rtol=1e-6,
                               atol=1e-8)

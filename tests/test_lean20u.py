"""Issue 20 (lean20u): a Python while loop's reverse pass counts its iterations by the stack its
forward loop pushes once an iteration (ad/reverse.py reverse_for: no `n_iterations` counter
where a value is recorded), and a parameter's cotangent read once by the return
(`q_bar = E; return grads_as(q_bar, q)`) is returned in place (ad/fold.py returned_in_place)."""
import os
import re
import sys

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.ad.copies import without_copies
from secant.ad.fold import returned_in_place
from secant.transformer.walker import Line
from test_lean20c import fd_grad, halving

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
from lean_functions import leapfrog_energy as leapfrog     # noqa: E402

RNG = np.random.default_rng(20)


def two_carries(x, w):
    y = x
    while snp.sum(y * y) < 10.0:
        y = y * w + snp.sin(x)
        x = x * 1.1
    return snp.sum(y * x)


def linear_steps(x, n):
    """Nothing the reverse loop reads is recorded: the counter stays."""
    i = 0
    acc = x
    while i < n:
        acc = acc + 2.0 * x
        i = i + 1
    return snp.sum(acc)


def broken(x, n):
    i = 0
    while True:
        if i >= n:
            break
        x = snp.tanh(x) * 1.5
        i = i + 1
    return snp.sum(x * x)


def nested(x, n):
    for j in range(2):
        i = 0
        while i < n + j:
            x = snp.sin(x) * 1.2
            i = i + 1
    return snp.sum(x * x)


def test_while_reverse_counts_by_its_stack():
    src = secant.source(secant.grad(halving))
    assert "n_iterations" not in src, src
    # (the stack of x, the user's name, where the loop's carry takes it: _into_dead_source)
    # (its one stack read backwards: lean20y)
    assert "x_stack.append(x)" in src and "for x in reversed(x_stack):" in src, src
    assert ".pop()" not in src and "range(len(" not in src, src


def test_while_counter_kept_where_nothing_is_recorded(x64):
    src = secant.source(secant.grad(linear_steps))
    assert "n_iterations += 1" in src and "range(n_iterations)" in src, src
    x = RNG.normal(size=3)
    for n in (0, 1, 4):
        np.testing.assert_allclose(secant.grad(linear_steps)(x, n),
                                   fd_grad(lambda v: linear_steps(v, n), x), rtol=1e-6)


@pytest.mark.parametrize("f", [halving, broken, nested], ids=lambda f: f.__name__)
def test_while_gradients_match_differences(x64, f):
    x = RNG.normal(size=3) * 0.5
    g = secant.grad(f)
    for n in (0, 1, 5):
        np.testing.assert_allclose(g(x, n), fd_grad(lambda v: f(v, n), x), rtol=1e-6, atol=1e-9)


def test_while_two_carries_match_differences(x64):
    x, w = np.array([0.4, -0.3]), 1.3
    got = secant.grad(two_carries, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(got[0], fd_grad(lambda v: two_carries(v, w), x), rtol=1e-6)
    np.testing.assert_allclose(got[1], fd_grad(lambda v: two_carries(x, v), np.array(w)),
                               rtol=1e-6)


@pytest.mark.parametrize("f", [halving, nested], ids=lambda f: f.__name__)
def test_while_second_order(x64, f):
    """The derivative's `range(len(stack))` read again by grad of grad, jacfwd of grad and
    hessian: each against float64 differences of the gradient."""
    x = RNG.normal(size=3) * 0.5
    g = secant.grad(f)
    fd = np.stack([fd_grad(lambda v: g(v, 3)[i], x) for i in range(3)])
    np.testing.assert_allclose(secant.hessian(f)(x, 3), fd, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(secant.jacfwd(g)(x, 3), fd, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(secant.grad(lambda v: g(v, 3)[1])(x), fd[1], rtol=1e-5,
                               atol=1e-8)


def test_while_under_vmap_and_jit(x64):
    g = secant.grad(halving)
    xs = RNG.normal(size=(4, 3))
    want = np.stack([g(r, 3) for r in xs])
    np.testing.assert_allclose(secant.vmap(g, in_axes=(0, None))(xs, 3), want, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(g, static_argnums=1)(xs[0], 3), want[0], rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.vmap(g, in_axes=(0, None)),
                                          static_argnums=1)(xs, 3), want, rtol=1e-12)
    t = RNG.normal(size=3)
    _, tangent = secant.jvp(lambda v: g(v, 3), (xs[0],), (t,))
    np.testing.assert_allclose(tangent, secant.hessian(halving)(xs[0], 3) @ t, rtol=1e-9)


def test_leapfrog_returns_q_bar_in_place(x64):
    src = secant.source(secant.grad(leapfrog))
    # (grads_as of an unbroadcast to q: q's dtype already, ad/algebra.py unbroadcasts_merged)
    assert not re.search(r"\bq_bar\b", src) and "return unbroadcast(" in src, src
    assert "grads_as" not in src, src
    q, p = RNG.normal(size=4), RNG.normal(size=4)
    k, dt = 1.7, 0.1
    for argnum, v in enumerate((q, p, k, dt)):
        args = [q, p, k, dt]

        def f(u, argnum=argnum):
            return leapfrog(*(args[:argnum] + [u] + args[argnum + 1:]))
        got = secant.grad(leapfrog, argnums=argnum)(q, p, k, dt)
        np.testing.assert_allclose(got, fd_grad(f, np.asarray(v, float)), rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(leapfrog))(q, p, k, dt),
                               secant.grad(leapfrog)(q, p, k, dt), rtol=1e-12)
    qs = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(
        secant.vmap(secant.grad(leapfrog), in_axes=(0, None, None, None))(qs, p, k, dt),
        np.stack([secant.grad(leapfrog)(r, p, k, dt) for r in qs]), rtol=1e-12)


def test_leapfrog_dtypes_and_broadcasting(x64):
    q, p = RNG.normal(size=4), RNG.normal(size=4)
    # a float32 q beside float64 p: q's cotangent in q's dtype (grads_as still applies)
    got = secant.grad(leapfrog)(q.astype(np.float32), p, 1.7, 0.1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, secant.grad(leapfrog)(q, p, 1.7, 0.1), rtol=1e-5)
    # a q that broadcasts against p: its cotangent summed back to its shape
    q1 = np.array([0.3])
    got = secant.grad(leapfrog)(q1, p, 1.7, 0.1)
    np.testing.assert_allclose(got, fd_grad(lambda v: leapfrog(v, p, 1.7, 0.1), q1), rtol=1e-6)
    with pytest.raises(secant.SecantError, match="scalar output"):
        secant.grad(leapfrog)(q, p, np.ones(4), 0.1)


def test_returned_in_place_through_a_call():
    kept = {"q_bar", "p_bar"}
    call = [Line("q_bar = a_bar * 2 + b_bar", 1), Line("return grads_as(q_bar, q)", 1)]
    assert [ln.code for ln in returned_in_place(call, kept)] == [
        "return grads_as(a_bar * 2 + b_bar, q)"]
    twice = [Line("q_bar = a_bar * 2", 1), Line("return grads_as(q_bar, q_bar)", 1)]
    assert returned_in_place(twice, kept) is twice
    several = [Line("q_bar = a_bar * 2", 1), Line("return p_bar, grads_as(q_bar, q)", 1)]
    assert returned_in_place(several, kept) is several
    long = [Line("q_bar = " + " + ".join(f"unbroadcast(a_bar_{i}, q)" for i in range(4)), 1),
            Line("return grads_as(q_bar, q)", 1)]
    assert returned_in_place(long, kept) is long          # (past one row's width)
    lam = [Line("q_bar = a_bar * 2", 1), Line("return (lambda: q_bar)()", 1)]
    assert returned_in_place(lam, kept) is lam           # (not evaluated exactly once)
    other = [Line("b_bar = a_bar * 2", 1), Line("return grads_as(b_bar, q)", 1)]
    assert returned_in_place(other, kept) is other       # (not a parameter's cotangent)


# --- a loop's carry copied from a value dead after the copy takes its name (ad/copies.py) ------
def param_read_after(x, n):
    y = x
    i = 0
    while i < n:
        y = snp.sin(y) * 1.1
        i = i + 1
    return snp.sum(y * x)


def mixed_dtypes(q, p, n):
    for i in range(n):
        q = q + 0.1 * p * i
    return snp.sum(q * q)


def test_while_carry_keeps_the_users_name(x64):
    src = secant.source(secant.grad(halving))
    assert not re.search(r"\bx_1 = x\b", src), src
    assert "x_stack.append(x)" in src and "for x in reversed(x_stack):" in src, src
    assert "grad_seed_like(x)" in src, src


def test_carry_copy_kept_where_the_source_is_read_after(x64):
    src = secant.source(secant.grad(param_read_after))
    assert re.search(r"\by = x\b", src), src          # (x read by the output; y: lean20g)
    x = RNG.normal(size=3) * 0.5
    for n in (0, 2, 4):
        np.testing.assert_allclose(secant.grad(param_read_after)(x, n),
                                   fd_grad(lambda v: param_read_after(v, n), x), rtol=1e-6)


def test_carry_copy_kept_where_the_dtype_cast_reads_the_parameter(x64):
    """grads_as(q_bar, q) reads the parameter's dtype: q float32 beside a float64 p makes the
    loop's q float64, so the copy stays and q's cotangent is float32."""
    q, p = RNG.normal(size=3).astype(np.float32), RNG.normal(size=3)
    got = secant.grad(mixed_dtypes)(q, p, 3)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, fd_grad(lambda v: mixed_dtypes(v, p, 3), q.astype(float)),
                               rtol=1e-5)
    np.testing.assert_allclose(secant.jit(secant.grad(mixed_dtypes), static_argnums=2)(q, p, 3),
                               got, rtol=1e-6)


def _lines(*rows):
    out = []
    for row in rows:
        indent = len(row) - len(row.lstrip())
        code = row.strip()
        out.append(Line(code, indent // 4 + 1, "block" if code.endswith(":") else "stmt"))
    return out


def _copied(lines, alike=lambda a, b: True):
    names = {"x", "x_1", "i", "n"}
    return [ln.code for ln in without_copies(lines, {"t_bar"}, names, alike)]


def test_into_dead_source_refusals():
    loop = ("x_1 = x", "while i < n:", "    x_1_stack.append(x_1)", "    x_1 = snp.sin(x_1)",
            "t_bar = grad_seed_like(x)")
    got = _copied(_lines(*loop, "return t_bar * x_1"))
    assert got == ["x_stack.append(x)" if c == "x_1_stack.append(x_1)" else c for c in [
        "while i < n:", "x_1_stack.append(x_1)", "x = snp.sin(x)", "t_bar = grad_seed_like(x)",
        "return t_bar * x"]]
    unsure = _copied(_lines(*loop, "return t_bar * x_1"), alike=lambda a, b: False)
    assert unsure[0] == "x_1 = x"                      # (the seed's dtype not proven alike)
    cast = _copied(_lines(*loop, "return grads_as(t_bar * x_1, x)"))
    assert cast[0] == "x_1 = x"                        # (x's dtype read by a cast)
    read = _copied(_lines(*loop, "return t_bar * x_1 * x"))
    assert read[0] == "x_1 = x"                        # (x's value read)
    closure = _copied(_lines("g = lambda: x", *loop, "return t_bar * x_1 * g()"))
    assert "x_1 = x" in closure                        # (a lambda reads x when called)
    before = _copied(_lines("t_bar = x_1", *loop, "return t_bar * x_1"))
    assert "x_1 = x" in before                         # (x_1 mentioned before the copy)
    nested = _copied(_lines("if n:", "    x_1 = x", "    while i < n:",
                            "        x_1 = snp.sin(x_1)", "return x_1"))
    assert "x_1 = x" in nested                         # (not at the top level)


def for_carry(x, n):
    for i in range(n):
        x = snp.sin(x) * 1.1 + 0.1 * i
    return snp.sum(x * x)


@pytest.mark.parametrize("f", [for_carry, halving], ids=lambda f: f.__name__)
def test_renamed_carry_under_compositions(x64, f):
    """The carry named x in the derivative, read again by every transform of it."""
    src = secant.source(secant.grad(f))
    assert not re.search(r"\bx_1 = x\b", src), src
    x = RNG.normal(size=3) * 0.5
    g = secant.grad(f)
    np.testing.assert_allclose(g(x, 3), fd_grad(lambda v: f(v, 3), x), rtol=1e-6)
    fd = np.stack([fd_grad(lambda v: g(v, 3)[i], x) for i in range(3)])
    np.testing.assert_allclose(secant.hessian(f)(x, 3), fd, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(secant.jacrev(g)(x, 3), fd, rtol=1e-5, atol=1e-8)
    xs = RNG.normal(size=(2, 3)) * 0.5
    np.testing.assert_allclose(secant.vmap(g, in_axes=(0, None))(xs, 3),
                               np.stack([g(r, 3) for r in xs]), rtol=1e-12)
    np.testing.assert_allclose(secant.jit(g, static_argnums=1)(x, 3), g(x, 3), rtol=1e-12)
    np.testing.assert_allclose(secant.vmap(secant.hessian(f), in_axes=(0, None))(xs, 3),
                               np.stack([secant.hessian(f)(r, 3) for r in xs]), rtol=1e-10)

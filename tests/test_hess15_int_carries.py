"""Second derivatives through loops that carry integer counters and bool flags (issue 15, hess15).

The tangent of an integer or bool value is a zero of its own dtype (JAX's float0): never carried
as a number, never promoted. A loop (Python while/for under jit, lax.while_loop, fori_loop,
scan) carries such a value's tangent and cotangent beside the floats' at every order, so its
carry keeps its dtypes. Checked: forward-over-reverse (hessian, jacfwd(grad), jvp(grad)) and
reverse-over-forward (jacrev(jacfwd)) of loops with int counters, bool flags, break, continue,
a return inside the loop, a while inside a for, integer carries updated by where, and of
lax.cond / switch branches returning ints beside floats: the hessian against float64 central
differences of the gradient, every other order against it, and each under jit, vmap and
jit(vmap) against the eager value of each example.
"""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

from test_random_programs import fd_grad
from user_programs.checks import rotated


def counted_while(x):
    """A Python while with an int counter in its test and in the result."""
    v, n = x, 0
    while (snp.sum(v * v) < 3.0) & (n < 6):
        v = 1.3 * v + 0.2 * snp.cos(x)
        n = n + 1
    return snp.sum(v * v) * (n + 1)


def flag_break(x):
    """A bool flag set in the loop and a break."""
    v, hit = x, False
    for k in range(5):
        v = 1.2 * v + 0.3 * snp.sin(x)
        if snp.sum(v) > 1.5:
            hit = True
            break
    return snp.sum(v * x) + snp.where(hit, 1.0, 0.0) * snp.sum(x * x)


def skips(x):
    """A continue that skips the update on some iterations."""
    v = x
    for k in range(4):
        if snp.sum(v * v) > 2.0 + k:
            continue
        v = v * 1.25 + 0.1 * snp.cos(v)
    return snp.sum(v ** 3)


def early_return(x):
    """A return inside the loop."""
    v = x
    for k in range(6):
        v = 1.4 * v + 0.1 * snp.sin(x)
        if snp.sum(v * v) > 4.0:
            return snp.sum(v * snp.cos(x)) + k
    return snp.sum(v)


def while_in_for(x):
    """A while with a counter inside a for."""
    v, n = x, 0
    for k in range(2):
        while snp.sum(v * v) < 2.0 + k:
            v = 1.3 * v + 0.2 * snp.cos(x)
            n = n + 1
    return snp.sum(v * x) + 0.1 * n * snp.sum(x)


def where_counter(x):
    """An integer carry updated by where, read back as a float factor."""
    v, n = x, 0
    for k in range(4):
        v = snp.tanh(v) + 0.5 * x
        n = snp.where(snp.sum(v) > 0.8, n + 1, n)
    return snp.sum(v * v) * (1.0 + 0.25 * n)


def continue_return(x):
    """A while on a Python counter with a continue and a return inside."""
    v, n = x, 0
    while n < 6:
        n = n + 1
        v = 1.2 * v + 0.1 * snp.sin(x)
        if snp.sum(v) < 0.0:
            continue
        if snp.sum(v * v) > 3.0:
            return snp.sum(v * x) * n
    return snp.sum(v)


def lax_while(x):
    """lax.while_loop carrying (float, int counter, bool flag)."""
    def cond(c):
        v, n, done = c
        return (n < 8) & ~done

    def body(c):
        v, n, done = c
        v = 1.3 * v + 0.2 * snp.cos(v)
        return v, n + 1, snp.sum(v * v) > 3.0
    v, n, done = lax.while_loop(cond, body, (x, 0, False))
    return snp.sum(v * v) + n * snp.sum(x)


def lax_fori(x):
    """lax.fori_loop carrying an int counted by where and a bool flag."""
    def body(i, c):
        v, n, seen = c
        v = snp.sin(v) * 1.1 + 0.2 * x
        big = snp.sum(v) > 0.5
        return v, snp.where(big, n + i, n), seen | big
    v, n, seen = lax.fori_loop(0, 4, body, (x, 0, False))
    return snp.sum(v * v) * (1.0 + 0.1 * n) + snp.where(seen, 0.5, 0.0) * snp.sum(x)


def lax_scan(x):
    """lax.scan carrying an int and a bool beside a float; int ys."""
    def body(c, xi):
        v, n, flag = c
        v = v * snp.cos(xi) + xi
        up = snp.sum(v) > 0.0
        return (v, n + up.astype(int), flag ^ up), n
    (v, n, flag), ns = lax.scan(body, (x, 0, False), snp.stack([x, 0.5 * x, -x]))
    return snp.sum(v * v) + snp.sum(ns) * 0.01 * snp.sum(x) + flag * snp.sum(x ** 3)


def cond_ints(x):
    """lax.cond whose branches return a float beside an int and a bool."""
    def yes(v):
        return snp.sin(v), 3, True

    def no(v):
        return v * v, 1, False
    a, n, b = lax.cond(snp.sum(x) > 0.2, yes, no, x)
    return snp.sum(a) * n + snp.where(b, 2.0, 1.0) * snp.sum(x * a)


def switch_ints(x):
    """lax.switch whose branches return a float beside an int count."""
    branches = [lambda v: (v * 2.0, snp.int32(0)), lambda v: (snp.sin(v), snp.int32(1)),
                lambda v: (v ** 3, snp.int32(2))]
    i = snp.clip(snp.sum(x > 0), 0, 2)
    a, n = lax.switch(i, branches, x)
    return snp.sum(a * x) * (n + 1)


PROGRAMS = [counted_while, flag_break, skips, early_return, continue_return, while_in_for, where_counter,
            lax_while, lax_fori, lax_scan, cond_ints, switch_ints]


# rows whose loops take different paths: trip counts 0 to several, the break/return taken or not
XS = np.array([[0.3, -0.2, 0.5], [0.9, 0.4, 0.1], [-0.6, 0.2, 0.35], [1.5, 0.9, -0.4]])
KINDS = ["hessian", "jacfwd_grad", "jvp_grad", "jacrev_jacfwd"]
ids = lambda f: f.__name__      # noqa: E731


def second(f, kind):
    """The second derivative `kind` of f, a function of one example."""
    return {"hessian": secant.hessian(f), "jacfwd_grad": secant.jacfwd(secant.grad(f)),
            "jvp_grad": lambda x: secant.jvp(secant.grad(f), (x,), (x,))[1],
            "jacrev_jacfwd": secant.jacrev(secant.jacfwd(f))}[kind]


def from_hessian(kind, h, x):
    return h @ x if kind == "jvp_grad" else h


def test_the_rows_take_different_paths():
    """NumPy's counts of counted_while's trips and of flag_break's break: the rows differ."""
    trips, breaks = [], []
    for x in XS:
        v, n = x, 0
        while np.sum(v * v) < 3.0 and n < 6:
            v, n = 1.3 * v + 0.2 * np.cos(x), n + 1
        trips.append(n)
        v, hit = x, False
        for k in range(5):
            v = 1.2 * v + 0.3 * np.sin(x)
            if np.sum(v) > 1.5:
                hit = True
                break
        breaks.append(k if hit else None)
    assert len(set(trips)) >= 3 and 0 in trips, trips
    assert len(set(breaks)) >= 3, breaks


@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
def test_every_second_derivative_matches_central_differences(x64, f):
    """The hessian against float64 central differences of the gradient; jacfwd(grad),
    jvp(grad) and jacrev(jacfwd) against the hessian, on every row."""
    g = secant.grad(f)
    for r, x in enumerate(XS):
        h = np.asarray(secant.hessian(f)(x))
        if r in (0, 3):
            fd = np.stack([fd_grad(lambda y: float(g(y)[k]), x) for k in range(x.size)])
            np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-6)
        for kind in KINDS[1:]:
            np.testing.assert_allclose(np.asarray(second(f, kind)(x)), from_hessian(kind, h, x),
                                       rtol=1e-10, atol=1e-10)


# each program under one of the three kinds by default, rotating (every pair when thorough)
@pytest.mark.parametrize("f, kind", [pytest.param(f, kind, id=f"{f.__name__}-{kind}") for f, kind
                                     in rotated(PROGRAMS, ["hessian", "jvp_grad", "jacrev_jacfwd"])])
def test_under_jit_and_vmap_each_example_is_its_eager_value(x64, f, kind):
    """jit (Python loops on traced values staged as lax loops), vmap (a batched test: the loop
    runs while any example's holds) and jit(vmap) against each example's eager value."""
    d = second(f, kind)
    want = np.stack([np.asarray(d(x)) for x in XS])
    np.testing.assert_allclose(np.stack([np.asarray(secant.jit(d)(x)) for x in XS]), want,
                               rtol=1e-10, atol=1e-10)
    for batched in (secant.vmap(d), secant.jit(secant.vmap(d))):
        np.testing.assert_allclose(np.asarray(batched(XS)), want, rtol=1e-10, atol=1e-10)


def carries(x):
    """lax_while's loop, its whole carry returned: (float, int counter, bool flag)."""
    return lax.while_loop(lambda c: (c[1] < 8) & ~c[2],
                          lambda c: (1.3 * c[0] + 0.2 * snp.cos(c[0]), c[1] + 1,
                                     snp.sum(c[0] * c[0]) > 3.0), (x, 0, False))


def branches(x):
    return lax.cond(snp.sum(x) > 0.2, lambda v: (snp.sin(v), 3, True),
                    lambda v: (v * v, 1, False), x)


def cast_flag(x):
    return (x * 2.0).astype(bool), snp.sum(x).astype(snp.int32)


FLOAT0 = np.dtype([("float0", "V")])


@pytest.mark.parametrize("f", [carries, branches, cast_flag], ids=ids)
def test_the_tangent_of_an_integer_or_bool_value_is_float0(x64, f):
    """jvp's tangents of integer and bool outputs: float0 zeros as in JAX, eager (from an eager
    lax.cond's branch returning Python numbers too) and under jit; the float output's tangent is
    its derivative."""
    x = XS[1]
    fd = fd_grad(lambda y: float(snp.sum(f(y)[0])), x)
    for jvp in (lambda x: secant.jvp(f, (x,), (snp.ones_like(x),)),
                secant.jit(lambda x: secant.jvp(f, (x,), (snp.ones_like(x),)))):
        out, out_dot = jvp(x)
        for o, t in zip(out[1:], out_dot[1:]):
            assert np.asarray(t).dtype == FLOAT0 and np.shape(t) == np.shape(o)
        if f is not cast_flag:
            np.testing.assert_allclose(float(np.sum(np.asarray(out_dot[0]))), fd.sum(),
                                       rtol=1e-7)


@pytest.mark.parametrize("f", [carries, branches, cast_flag], ids=ids)
def test_the_tangent_of_an_integer_or_bool_value_under_vmap_is_float0(x64, f):
    """Under vmap and jit(vmap), where the call secant.jvp(f, ...) is read as the generated jvp's
    batched form (whose tangent of an int or bool output is a zero of its dtype), float0 zeros
    shaped as the batched output, as JAX's; the float output's tangent each example's."""
    def jvp(x):
        return secant.jvp(f, (x,), (snp.ones_like(x),))
    for batched in (secant.vmap(jvp), secant.jit(secant.vmap(jvp))):
        outs, dots = batched(XS)
        for o, t in zip(outs[1:], dots[1:]):
            assert np.asarray(t).dtype == FLOAT0 and np.shape(t) == np.shape(o)
        if f is not cast_flag:
            np.testing.assert_allclose(dots[0], np.stack([jvp(x)[1][0] for x in XS]),
                                       rtol=1e-12)


@pytest.mark.parametrize("f", [counted_while, flag_break, lax_fori, lax_scan], ids=ids)
def test_hessian_of_a_function_that_vmaps_the_loop(x64, f):
    """hessian of sum(vmap(f)(xs) ** 2): the jvp of the vjp of the batched loop (a batched
    Python while runs while any example's test holds) carries the int and bool values'
    tangents and cotangents in their dtypes; block-diagonal, each block one example's."""
    got = np.asarray(secant.hessian(lambda xs: snp.sum(secant.vmap(f)(xs) ** 2))(XS))
    want = np.zeros(XS.shape + XS.shape)
    for b, x in enumerate(XS):
        want[b, :, b, :] = np.asarray(secant.hessian(lambda y: f(y) ** 2)(x))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)

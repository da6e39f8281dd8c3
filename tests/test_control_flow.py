"""secant.lax control flow (cond, switch, while_loop, fori_loop, scan, map): eagerly against plain
Python, under jit against eager, staged as StableHLO regions (never unrolled), and the errors a
user can cause, each naming this file and the user's line."""
import os
import re

import numpy as np
import pytest
from numpy.testing import assert_allclose

import secant
import secant.numpy as snp
from secant import lax, tree_util

RNG = np.random.default_rng(0)
HERE = os.path.abspath(__file__)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def assert_trees_close(got, want, rtol=1e-5, atol=1e-5):
    g_leaves, g_tree = tree_util.tree_flatten(got)
    w_leaves, w_tree = tree_util.tree_flatten(want)
    assert g_tree == w_tree, (g_tree, w_tree)
    for g, w in zip(g_leaves, w_leaves):
        assert np.shape(g) == np.shape(w), (np.shape(g), np.shape(w))
        g_dt, w_dt = np.asarray(g).dtype, np.asarray(w).dtype
        assert g_dt == w_dt, (g_dt, w_dt)
        assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=rtol, atol=atol)


def check(fn, args, ref, rtol=1e-5, **jit_kw):
    """fn(*args) eagerly equals ref(*args), and jit(fn)(*args) equals the eager result."""
    eager = fn(*args)
    assert_trees_close(eager, ref(*args), rtol, rtol)
    assert_trees_close(secant.jit(fn, **jit_kw)(*args), eager, rtol, rtol)
    return eager


def line_of(marker):
    """The line of this file that carries `# <marker>`."""
    with open(HERE) as fh:
        for n, text in enumerate(fh, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return n
    raise AssertionError(marker)


def raises_at(marker, fn, *args, match=None):
    """fn(*args) raises a SecantError that names this file and the line marked `marker`."""
    with pytest.raises(secant.SecantError) as info:
        fn(*args)
    msg = str(info.value)
    assert f"{HERE}:{line_of(marker)}" in msg, msg
    if match:
        assert re.search(match, msg), msg
    return msg


def hlo(fn, *args, **jit_kw):
    return secant.jit(fn, **jit_kw).lower(*args).as_text()


# --- cond and switch ------------------------------------------------------------------------------
def _cond(p, x, y):
    return lax.cond(p, lambda a, b: (a * b, snp.sin(a)), lambda a, b: (a - b, snp.cos(b)), x, y)


@pytest.mark.parametrize("p", [True, False])
def test_cond_traced_predicate(p):
    x, y = f32(3), f32(3)
    ref = (lambda p, a, b: (a * b, np.sin(a)) if p else (a - b, np.cos(b)))
    check(_cond, (p, x, y), ref)
    assert '"stablehlo.if"' in hlo(_cond, p, x, y)


@pytest.mark.parametrize("p", [True, False])
def test_cond_concrete_predicate_under_jit_runs_one_branch(p):
    x, y = f32(3), f32(3)
    ref = (lambda p, a, b: (a * b, np.sin(a)) if p else (a - b, np.cos(b)))
    check(_cond, (p, x, y), ref, static_argnums=0)
    assert "stablehlo.if" not in hlo(_cond, p, x, y, static_argnums=0)


def test_cond_numeric_predicate_and_pytree_operands():
    def f(p, tree):
        return lax.cond(p, lambda t: {"a": t["a"] + 1, "b": t["b"]},
                        lambda t: {"a": t["a"] * 0, "b": -t["b"]}, tree)
    tree = {"a": f32(2), "b": np.int32(7)}
    for p in (np.float32(2.5), np.float32(0.0), np.int32(-1)):
        want = ({"a": tree["a"] + 1, "b": tree["b"]} if p != 0
                else {"a": tree["a"] * 0, "b": -tree["b"]})
        check(f, (p, tree), lambda *_: want)


def _switch(i, x):
    return lax.switch(i, [lambda a: a + 1, lambda a: a * 2, lambda a: snp.exp(a)], x)


@pytest.mark.parametrize("i", [-5, -1, 0, 1, 2, 3, 99])
def test_switch_clamps_index_traced_and_concrete(i):
    x = f32(4)
    k = min(max(i, 0), 2)
    ref = lambda i, a: [a + 1, a * 2, np.exp(a)][k]
    check(_switch, (np.int32(i), x), ref)                       # traced index
    check(_switch, (i, x), ref, static_argnums=0)               # concrete index under jit


def test_switch_stages_case():
    text = hlo(_switch, np.int32(1), f32(4))
    assert '"stablehlo.case"' in text
    assert "stablehlo.case" not in hlo(_switch, 1, f32(4), static_argnums=0)


# --- while_loop and fori_loop ---------------------------------------------------------------------
def _collatz_steps(n):
    return lax.while_loop(lambda c: c[0] != 1,
                          lambda c: (snp.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1), c[1] + 1),
                          (n, 0))


def _collatz_ref(n):
    steps = 0
    while n != 1:
        n, steps = (n // 2 if n % 2 == 0 else 3 * n + 1), steps + 1
    return np.int32(n), np.int32(steps)


@pytest.mark.parametrize("n", [1, 6, 27, 97])
def test_while_loop_data_dependent_trip_count(n):
    check(_collatz_steps, (np.int32(n),), _collatz_ref)


def test_while_loop_pytree_carry():
    def f(x):
        def body(c):
            return {"k": c["k"] + 1, "v": (c["v"][0] * 1.5, c["v"][1] + c["k"])}
        return lax.while_loop(lambda c: c["k"] < 5, body, {"k": 0, "v": (x, np.float32(0))})
    x = f32(3)
    check(f, (x,), lambda x: {"k": np.int32(5), "v": (x * np.float32(1.5) ** 5, np.float32(10))})


def _fori(lo, hi, x):
    return lax.fori_loop(lo, hi, lambda i, c: c + snp.sin(c) * i, x)


def _fori_ref(lo, hi, x):
    for i in range(lo, hi):
        x = x + np.sin(x) * np.float32(i)
    return x


@pytest.mark.parametrize("lo, hi", [(0, 0), (0, 1), (2, 9), (5, 3)])
def test_fori_loop_concrete_and_traced_bounds(lo, hi):
    x = f32(3)
    tol = 1e-4                            # sin(x) * i over up to 7 steps: float32 rounding grows
    check(_fori, (lo, hi, x), _fori_ref, tol, static_argnums=(0, 1))   # concrete bounds, jit
    check(_fori, (lo, hi, x), _fori_ref, tol)                          # traced bounds
    check(_fori, (lo, np.int32(hi), x), _fori_ref, tol, static_argnums=0)  # traced upper only


def test_fori_loop_weakly_typed_init_takes_the_body_dtype():
    # as in JAX: a Python-scalar carry is promoted to the dtype the body gives it
    x = f32(4)
    f = lambda x: lax.fori_loop(0, 4, lambda i, s: s + x[i], 0)
    check(f, (x,), lambda x: np.float32(sum(x.tolist())))
    g = lambda xs: lax.scan(lambda c, v: (c + v, c), 0, xs)
    check(g, (x,), lambda x: (x.sum(), np.concatenate([[0], np.cumsum(x)[:-1]]).astype(np.float32)))


def test_cond_on_traced_predicate_inside_fori_body():
    def f(n, x):
        return lax.fori_loop(0, n, lambda i, c: lax.cond(i % 3 == 0, lambda v: v * 2.0,
                                                         lambda v: v - 1.0, c), x)

    def ref(n, x):
        for i in range(n):
            x = x * 2 if i % 3 == 0 else x - 1
        return x
    check(f, (7, f32(2)), ref)
    text = hlo(f, 7, f32(2))
    assert '"stablehlo.while"' in text and '"stablehlo.if"' in text


def test_nested_loops():
    def f(n, x):
        def outer(i, c):
            return lax.fori_loop(0, i, lambda j, d: d + snp.cos(d) * j + i, c)
        return lax.fori_loop(0, n, outer, x)

    def ref(n, x):
        for i in range(n):
            for j in range(i):
                x = x + np.cos(x) * np.float32(j) + np.float32(i)
        return x
    check(f, (5, f32(3)), ref)
    assert hlo(f, 5, f32(3)).count('"stablehlo.while"') == 2


def _helper_power(x, k):
    """A loop inside a helper the jitted function calls."""
    return lax.fori_loop(0, k, lambda i, acc: acc * x, snp.ones_like(x))


def test_loop_inside_a_helper_function():
    f = lambda x, k: _helper_power(x, k) + _helper_power(x, 2)
    x = f32(3)
    assert_trees_close(f(x, 4), x ** 4 + x ** 2, rtol=1e-4)
    assert_trees_close(secant.jit(f)(x, 4), f(x, 4), rtol=1e-4)
    assert hlo(f, x, 4).count('"stablehlo.while"') == 2


def test_closures_over_traced_values():
    def f(x, w, n):
        scale = snp.sum(w)                        # a value of the enclosing function body

        def body(i, c):
            step = c * scale + w                  # captured by the loop body
            k = lax.while_loop(lambda kk: kk < 2, lambda kk: kk + 1, 0)
            return lax.cond(c.sum() > scale, lambda: step - k,  # captured by a branch in the body
                            lambda: step * 0.5)
        return lax.fori_loop(0, n, body, x)

    def ref(x, w, n):
        scale = w.sum()
        for _ in range(n):
            step = x * scale + w
            x = step - 2 if x.sum() > scale else step * np.float32(0.5)
        return x
    x, w = f32(3), f32(3) * 0.3
    check(f, (x, w, 6), ref)


# --- scan and map ---------------------------------------------------------------------------------
def _scan_ref(f, init, xs, n, reverse=False):
    carry, ys = init, [None] * n
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        carry, ys[i] = f(carry, None if xs is None else tree_util.tree_map(lambda a: a[i], xs))
    return carry, tree_util.tree_map(lambda *v: np.stack(v), *ys)


def _step(c, x):
    return c * 0.9 + x, (snp.tanh(c), c * x)


def _step_np(c, x):
    return c * np.float32(0.9) + x, (np.tanh(c), c * x)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan(reverse):
    xs, init = f32(6, 2), f32(2)
    f = lambda c, xs: lax.scan(_step, c, xs, reverse=reverse)
    check(f, (init, xs), lambda c, xs: _scan_ref(_step_np, c, xs, 6, reverse))
    assert '"stablehlo.while"' in hlo(f, init, xs)


def test_scan_length_without_xs():
    f = lambda c: lax.scan(lambda c, _: (c * 2.0, c + 1.0), c, None, length=5)
    check(f, (f32(3),), lambda c: _scan_ref(lambda c, _: (c * 2, c + 1), c, None, 5))
    g = lambda c: lax.scan(lambda c, _: (c * 2.0, c + 1.0), c, length=3, reverse=True)
    check(g, (f32(3),), lambda c: _scan_ref(lambda c, _: (c * 2, c + 1), c, None, 3, True))


def test_scan_length_matching_xs_and_zero_length():
    f = lambda c, xs: lax.scan(_step, c, xs, length=4)
    check(f, (f32(2), f32(4, 2)), lambda c, xs: _scan_ref(_step_np, c, xs, 4))
    c, empty = f32(2), np.zeros((0, 2), np.float32)
    g = lambda c, xs: lax.scan(_step, c, xs)
    check(g, (c, empty), lambda c, xs: (c, (np.zeros((0, 2), np.float32),) * 2))


def test_scan_pytree_carry_and_pytree_xs_ys():
    def step(c, x):
        a, v = x["a"], x["v"]
        new = {"s": c["s"] * 2 + a, "v": (c["v"][0] + v, c["v"][1] * a)}
        return new, [a * c["s"], v.sum(), {"n": c["v"][0]}]

    def step_np(c, x):
        a, v = x["a"], x["v"]
        new = {"s": c["s"] * 2 + a, "v": (c["v"][0] + v, c["v"][1] * a)}
        return new, [a * c["s"], v.sum(), {"n": c["v"][0]}]

    f = lambda init, xs: lax.scan(step, init, xs)
    init = {"s": np.float32(1), "v": (f32(2), np.float32(3))}
    xs = {"a": f32(5), "v": f32(5, 2)}
    for reverse in (False, True):
        g = lambda init, xs: lax.scan(step, init, xs, reverse=reverse)
        check(g, (init, xs), lambda i, x: _scan_ref(step_np, i, x, 5, reverse))
    check(f, (init, xs), lambda i, x: _scan_ref(step_np, i, x, 5))


def test_scan_without_ys():
    f = lambda c, xs: lax.scan(lambda c, x: (c + x, None), c, xs)
    check(f, (np.float32(1), f32(4)), lambda c, xs: (c + xs.sum(), None))


def test_map():
    f = lambda xs: lax.map(lambda r: (snp.sum(r ** 2), r[::-1]), xs)
    xs = f32(5, 3)
    check(f, (xs,), lambda xs: ((xs ** 2).sum(axis=1), xs[:, ::-1]))
    g = lambda t: lax.map(lambda d: d["a"] * d["b"], t)
    t = {"a": f32(4, 2), "b": f32(4, 2)}
    check(g, (t,), lambda t: t["a"] * t["b"])


# --- staged, never unrolled -----------------------------------------------------------------------
def _sine_loop(n):
    return lambda x: lax.fori_loop(0, n, lambda i, c: snp.sin(c) * 0.5 + x, x)


def test_loops_are_not_unrolled():
    x = f32(4)
    small, big = hlo(_sine_loop(10), x), hlo(_sine_loop(1000), x)
    assert '"stablehlo.while"' in small
    assert small.count("stablehlo.sine") == big.count("stablehlo.sine") == 1
    assert abs(len(big) - len(small)) < 16          # only the bound's digits differ
    s10 = hlo(lambda c, xs: lax.scan(_step, c, xs), f32(2), f32(10, 2))
    s1000 = hlo(lambda c, xs: lax.scan(_step, c, xs), f32(2), f32(1000, 2))
    assert s10.count("stablehlo.tanh") == s1000.count("stablehlo.tanh") == 1
    assert abs(len(s1000) - len(s10)) < 64
    w10 = hlo(lambda x: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, snp.sin(c[1])),
                                       (0, x)), x)
    assert w10.count("stablehlo.sine") == 1


def test_closed_over_constant_in_many_regions():
    # a secant array closed over by many loop bodies and branches: each region gets its own
    # constant (a cache keyed by a freed region's id once handed out a constant of a closed one)
    w = snp.asarray(np.full(3, 0.5, np.float32))

    def f(x):
        for _ in range(25):
            x = lax.fori_loop(0, 2, lambda i, c: c * w + 1, x)
            x = lax.cond(x[0] > 0, lambda: x * w, lambda: x + w)
        return x
    x = np.ones(3, np.float32)
    assert_trees_close(secant.jit(f)(x), f(x))


# --- errors name the user's line ------------------------------------------------------------------
def test_branches_must_agree():
    x = f32(3)
    shape = lambda p, x: lax.cond(p, lambda a: a, lambda a: a[:2], x)  # cond-shape
    raises_at("cond-shape", secant.jit(shape), True, x, match=r"float32\[3\].*float32\[2\]")
    dtype = lambda p, x: lax.cond(p, lambda a: a, lambda a: a.astype(np.int32), x)  # cond-dtype
    raises_at("cond-dtype", secant.jit(dtype), True, x, match="int32")
    tree = lambda i, x: lax.switch(i, [lambda a: (a, a), lambda a: a], x)  # switch-tree
    raises_at("switch-tree", secant.jit(tree), 1, x, match="structure")


def test_loop_carry_must_keep_shape_and_dtype():
    x = f32(3)
    double = lambda c: snp.concatenate([c, c])
    grows = lambda x: lax.while_loop(lambda c: c.sum() < 10, double, x)  # grow
    for fn in (grows, secant.jit(grows)):
        raises_at("grow", fn, x, match=r"float32\[3\].*float32\[6\]")
    casts = lambda x: lax.fori_loop(0, 3, lambda i, c: c.astype(np.int32), x)  # cast
    for fn in (casts, secant.jit(casts)):
        raises_at("cast", fn, x, match=r"int32\[3\]")
    scan_shape = lambda c, xs: lax.scan(lambda c, x: (c.sum(), x), c, xs)  # scan-carry
    for fn in (scan_shape, secant.jit(scan_shape)):
        raises_at("scan-carry", fn, x, f32(4), match="carry")


def test_predicate_must_be_a_boolean_scalar():
    x = f32(3)
    vec = lambda p, x: lax.cond(p, lambda a: a, lambda a: -a, x)  # cond-pred
    for fn in (vec, secant.jit(vec)):
        raises_at("cond-pred", fn, np.array([True, False]), x, match="scalar")
    wvec = lambda x: lax.while_loop(lambda c: c < 10, lambda c: c + 1, x)  # while-vec
    for fn in (wvec, secant.jit(wvec)):
        raises_at("while-vec", fn, x, match=r"boolean scalar.*bool\[3\]")
    wnum = lambda x: lax.while_loop(lambda c: c.sum(), lambda c: c - 1, x)  # while-num
    for fn in (wnum, secant.jit(wnum)):
        raises_at("while-num", fn, x, match=r"boolean scalar.*float32")
    sw = lambda i, x: lax.switch(i, [lambda a: a, lambda a: -a], x)  # switch-float
    raises_at("switch-float", secant.jit(sw), np.float32(1), x, match="integer")


def test_scan_xs_lengths_must_agree():
    xs = (f32(3), f32(4, 2))
    bad = lambda c, xs: lax.scan(lambda c, x: (c, x), c, xs)  # scan-len
    for fn in (bad, secant.jit(bad)):
        raises_at("scan-len", fn, np.float32(0), xs, match=r"\[3, 4\]")
    bad_len = lambda c, xs: lax.scan(lambda c, x: (c, x), c, xs, length=5)  # scan-length
    raises_at("scan-length", bad_len, np.float32(0), f32(3), match=r"\[3, 5\]")


def test_leaked_tracer_from_a_loop_body():
    leaked = []

    def f(x):
        def body(i, c):
            leaked.append(c * 2)
            return c + 1
        y = lax.fori_loop(0, 3, body, x)
        return y + leaked[0]  # use-leak
    raises_at("use-leak", secant.jit(f), np.float32(1), match="outside")

    leaked.clear()
    g = lambda x: lax.while_loop(lambda c: c < 5, lambda c: leaked.append(c) or c + 1, x)
    secant.jit(g)(np.float32(1))
    with pytest.raises(secant.SecantError):
        secant.jit(lambda x: x + leaked[0])(np.float32(1))

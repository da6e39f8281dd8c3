"""Reverse mode through secant.lax control flow: cond, switch, fori_loop, scan, map and
while_loop, eagerly and under jit, against central finite differences in float64.

The functions live at module level: the transform reads their source."""

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from secant.backends.errors import SecantError


# --- functions under test ----------------------------------------------------------------------
def cubic(v):
    return v * v * v


def body(i, c):
    return snp.sin(c) * 1.5 + 0.1


pair = (lambda v: v * 2.0, lambda v: v - 1.0)      # two lambdas, one line, same parameters


def f_cond(x, p):
    y = lax.cond(p > 0, lambda v: v * 2.0, lambda v: snp.sin(v), x)
    return snp.sum(y * y)


def f_cond_closure(x, w):
    y = lax.cond(snp.sum(x) > 0, lambda v: v * w, cubic, x)
    return snp.sum(y)


def f_cond_static(x):
    y = lax.cond(x.shape[0] > 2, lambda v: snp.tanh(v), lambda v: v, x)
    return snp.sum(y)


def f_cond_by_name(x, p):
    return snp.sum(lax.cond(p > 0, pair[0], pair[1], x) * x)


def f_cond_two_operands(x, y, p):
    a, b = lax.cond(p > 0, lambda u, v: (u * v, snp.sin(v)), lambda u, v: (u, u + v), x, y)
    return snp.sum(a) + snp.sum(b * b)


def f_switch(x, i):
    y = lax.switch(i, [lambda v: v * 2.0, snp.sin, lambda v: v ** 3], x)
    return snp.sum(y)


def f_fori(x):
    y = lax.fori_loop(0, 5, body, x)
    return snp.sum(y)


def f_fori_pytree(x, w):
    a, b = lax.fori_loop(0, 4, lambda i, c: (c[0] * w + c[1], snp.tanh(c[1]) * w), (x, x * 2.0))
    return snp.sum(a) + snp.sum(b)


def f_fori_closure_only(w):
    y = lax.fori_loop(1, 4, lambda i, c: c * w + i, snp.ones(3))
    return snp.sum(y)


def f_scan(x, xs):
    c, ys = lax.scan(lambda c, v: (c * v + 1.0, snp.sin(c * v)), x, xs)
    return snp.sum(c) + snp.sum(ys)


def f_scan_reverse(x, xs, w):
    c, ys = lax.scan(lambda c, v: (snp.tanh(c * v + w), c * w), x, xs, reverse=True)
    return snp.sum(c) + snp.sum(ys * ys)


def f_map(xs, w):
    ys = lax.map(lambda v: snp.sin(v) * w, xs)
    return snp.sum(ys)


def f_while(x):
    y = lax.while_loop(lambda c: snp.sum(c) < 10.0, lambda c: c * 2.0, x)
    return snp.sum(y)


def f_while_closure(x, a):
    return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, snp.sin(c[1]) * a), (0, x))[1]


def f_fori_init_is_closed(x):     # x is both the initial carry and closed over: x ** 4
    return lax.fori_loop(0, 3, lambda i, c: c * x, x)


def f_scan_returns_carry_twice(x, xs, w):     # the carry and the output are one value
    def step(h, v):
        h = snp.tanh(h * w + v)
        return h, h
    c, hs = lax.scan(step, x, xs)
    return snp.sum(c * c) + snp.mean(hs)


def f_long(x, w):
    y = lax.fori_loop(0, 1000, lambda i, c: snp.tanh(c * w + 0.1), x)
    return snp.sum(y)


def f_cond_scalar(x):
    return lax.cond(x > 0, lambda v: v * v * v, lambda v: snp.sin(v), x)


# --- finite differences ----------------------------------------------------------------------------
def _fd(f, args, k, eps=1e-6):
    x = np.array(args[k], dtype=np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = list(args), list(args)
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        up[k], down[k] = xp, xm
        g[idx] = (float(f(*up)) - float(f(*down))) / (2 * eps)
    return g


rng = np.random.default_rng(0)
X = rng.normal(size=3)
XS = rng.normal(size=(4, 3)) * 0.5
CASES = [
    ("cond_true", f_cond, (X, 1.0), (0,)),
    ("cond_false", f_cond, (X, -1.0), (0,)),
    ("cond_closure_true", f_cond_closure, (np.abs(X), 0.7), (0, 1)),
    ("cond_closure_false", f_cond_closure, (-np.abs(X), 0.7), (0, 1)),
    ("cond_static", f_cond_static, (X,), (0,)),
    ("cond_by_name", f_cond_by_name, (X, -1.0), (0,)),
    ("cond_two_operands", f_cond_two_operands, (X, XS[0], 1.0), (0, 1)),
    ("cond_two_operands_false", f_cond_two_operands, (X, XS[0], -1.0), (0, 1)),
    ("switch_0", f_switch, (X, 0), (0,)),
    ("switch_1", f_switch, (X, 1), (0,)),
    ("switch_clamped", f_switch, (X, 7), (0,)),
    ("fori", f_fori, (X,), (0,)),
    ("fori_pytree", f_fori_pytree, (X, 0.7), (0, 1)),
    ("fori_closure_only", f_fori_closure_only, (0.6,), (0,)),
    ("scan", f_scan, (X, XS), (0, 1)),
    ("scan_reverse", f_scan_reverse, (X, XS, 0.3), (0, 1, 2)),
    ("map", f_map, (XS, 0.7), (0, 1)),
    ("while", f_while, (np.abs(X) + 0.1,), (0,)),
    ("while_closure", f_while_closure, (0.3, 1.1), (0, 1)),
    ("fori_init_is_closed", f_fori_init_is_closed, (0.7,), (0,)),
    ("scan_returns_carry_twice", f_scan_returns_carry_twice, (X, XS, 0.6), (0, 1, 2)),
]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name,f,args,argnums", CASES, ids=[c[0] for c in CASES])
def test_grad_matches_finite_differences(x64, name, f, args, argnums, jit):
    g = secant.grad(f, argnums=argnums)
    if jit:
        g = secant.jit(g)
    out = g(*args)
    for k, a in enumerate(argnums):
        np.testing.assert_allclose(np.asarray(out[k]), _fd(f, args, a), rtol=1e-6, atol=1e-7)


def test_value_and_grad_and_vjp(x64):
    value, grads = secant.value_and_grad(f_fori_pytree, argnums=(0, 1))(X, 0.7)
    np.testing.assert_allclose(float(value), float(f_fori_pytree(X, 0.7)))
    np.testing.assert_allclose(np.asarray(grads[0]), _fd(f_fori_pytree, (X, 0.7), 0), rtol=1e-6)
    out, pullback = secant.vjp(f_scan, X, XS)
    gx, gxs = pullback(snp.asarray(1.0))
    np.testing.assert_allclose(np.asarray(gxs), _fd(f_scan, (X, XS), 1), rtol=1e-6, atol=1e-7)


def test_second_order_through_cond(x64):
    gg = secant.grad(secant.grad(f_cond_scalar))
    for x, want in ((2.0, 12.0), (-1.0, np.sin(1.0))):
        np.testing.assert_allclose(float(gg(x)), want, rtol=1e-10)
        np.testing.assert_allclose(float(secant.jit(gg)(x)), want, rtol=1e-10)


def _fori_with_closure(x):
    return lax.fori_loop(0, 3, lambda i, c: snp.sin(c) * x, x)


def test_second_order_through_a_loop(x64):
    """grad of grad through fori_loop (tests/test_lax_loops_second_order.py has the rest): a
    body closing over x too, its derivative's lambda closure-converted."""
    x, eps = 0.7, 1e-5
    g = secant.grad(_fori_with_closure)
    fd = (float(g(x + eps)) - float(g(x - eps))) / (2 * eps)
    np.testing.assert_allclose(float(secant.grad(g)(x)), fd, rtol=1e-6)
    np.testing.assert_allclose(float(secant.jit(secant.grad(g))(x)), fd, rtol=1e-6)


def test_hessian_through_a_loop_with_a_closure(x64):
    x, eps = 0.7, 1e-5
    g = secant.grad(_fori_with_closure)
    fd = (float(g(x + eps)) - float(g(x - eps))) / (2 * eps)
    np.testing.assert_allclose(float(secant.hessian(_fori_with_closure)(x)), fd, rtol=1e-6)


def test_while_loop_reverse_recomputes_under_jit():
    """Eagerly the reverse pass walks the saved carries; under jit (no growable stack) it counts
    the steps and recomputes each carry from the start: same gradient."""
    src = secant.source(secant.grad(f_while))
    assert "y, y_carries = while_loop_with_carries(lambda c:" in src
    # (the seed's cotangent, read once, written in the call: its arguments on a second row)
    assert "return while_loop_vjp(lambda c: c * 2.0, body_fun_vjp, unreduce(grad_seed_like(y), " \
        "y), x,\n                          y_carries)" in src
    x = np.array([0.3, 0.5, 0.1], np.float32)     # 4 doublings: the gradient is 16 everywhere
    np.testing.assert_array_equal(np.asarray(secant.grad(f_while)(x)), 16.0)
    np.testing.assert_array_equal(np.asarray(secant.jit(secant.grad(f_while))(x)), 16.0)


def test_while_loop_without_derivative_still_runs():
    def g(x):       # the loop does not depend on x: nothing to differentiate through it
        n = lax.while_loop(lambda c: c < 10, lambda c: c + 3, 0)
        return snp.sum(x * n)
    assert float(secant.grad(g)(snp.ones(2))[0]) == 12.0


def test_generated_source_reads_as_calls_of_the_vjps():
    src = secant.source(secant.grad(f_cond_closure, argnums=(0, 1)))
    assert "x_bar, w_bar = lax.cond(snp.sum(x) > 0, true_fun_vjp, false_fun_vjp,\n" \
        "                            unreduce(grad_seed_like(y), y), x, w)" in src
    src = secant.source(secant.grad(f_fori_pytree, argnums=(0, 1)))
    assert "(a, b), a_carries = fori_loop_with_carries(\n        0, 4, lambda i, c:" in src
    assert ("(x_bar, x_times_2_bar), w_bar = fori_loop_vjp(0, 4, body_fun_vjp, (a_bar, b_bar), "
            "a_carries, closed=(w,), out=(a, b))") in " ".join(src.split())   # (however wrapped)
    src = secant.source(secant.grad(f_long, argnums=(0, 1)))
    assert src.count("fori_loop_vjp(") == 1 and len(src.splitlines()) < 20    # not unrolled
    src = secant.source(secant.grad(f_scan_reverse, argnums=(0, 1, 2)))
    assert "scan_vjp(scan_fun_vjp, (c_bar, ys_bar), c_carries, xs, closed=(w,), reverse=True, " \
           "wrt_xs=True, out=(c, ys))" in " ".join(src.split())


def test_jit_grad_of_a_long_loop_stays_a_loop():
    g = secant.jit(secant.grad(f_long, argnums=(0, 1)))
    x, w = np.full(3, 0.3, np.float32), np.float32(0.5)
    gx, gw = g(x, w)
    text = g.lower(x, w).as_text()      # (its speed is bench/'s to measure, not a test's)
    assert "stablehlo.while" in text and len(text.splitlines()) < 200
    np.testing.assert_allclose(np.asarray(gx), np.asarray(secant.grad(f_long, (0, 1))(x, w)[0]),
                               rtol=1e-4)


def f_in_python_control_flow(x, flag):
    if flag:
        y = lax.cond(snp.sum(x) > 0, lambda v: v * 3.0, lambda v: snp.cos(v), x)
    else:
        y = x * 2.0
    for _ in range(2):
        y = lax.fori_loop(0, 2, lambda i, c: snp.sin(c) * x, y)
    return snp.sum(y)


@pytest.mark.parametrize("flag", [True, False])
def test_inside_python_if_and_for(x64, flag):
    g = secant.grad(f_in_python_control_flow)(X, flag)
    np.testing.assert_allclose(np.asarray(g), _fd(lambda x: f_in_python_control_flow(x, flag),
                                                  (X,), 0), rtol=1e-6, atol=1e-7)


# --- Python while loops (eager: the test is concrete) ---------------------------------------------
def f_py_while(x, w):
    while snp.sum(x * x) < 10:          # the trip count depends on the data
        x = x * 1.5 + w
    return snp.sum(snp.sin(x))


def f_py_while_carries(x, w):
    k = 0
    y, z = x, x * 0.5
    while k < 3:
        y, z = snp.tanh(y * w) + z, z * w + snp.sin(y)
        k = k + 1
    return snp.sum(y * z)


def f_py_while_nested(x, w):
    t = 0.0
    while snp.sum(x * x) < 30:
        for _ in range(2):
            x = x * w + 0.5
        j = 0
        while j < 2:
            t = t + snp.sum(snp.sin(x) * w)
            j = j + 1
    return t


def f_py_for_while(x, w):
    for i in range(2):
        k = 0
        while k < 2:
            x = snp.sin(x) * w + x
            k = k + 1
    return snp.sum(x)


WHILE_CASES = [
    ("while", f_py_while, (X * 0.3, 0.4)),
    ("while_carries", f_py_while_carries, (X, 0.7)),
    ("while_nested", f_py_while_nested, (np.abs(X) * 0.5, 1.3)),
    ("for_while", f_py_for_while, (X, 0.8)),
]


@pytest.mark.parametrize("name,f,args", WHILE_CASES, ids=[c[0] for c in WHILE_CASES])
def test_python_while_matches_finite_differences(x64, name, f, args):
    out = secant.grad(f, argnums=(0, 1))(*args)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(out[k]), _fd(f, args, k), rtol=1e-6, atol=1e-7)


def test_python_while_source_counts_iterations():
    src = secant.source(secant.grad(f_py_while, argnums=(0, 1)))
    # (the carry copied from x, dead after it, takes x's name: lean20u)
    assert "    while snp.sum(x * x) < 10:\n" in src
    # (the stack pushed once an iteration counts them: lean20u)
    # (its one stack read backwards: lean20y)
    assert "n_iterations" not in src and "for x in reversed(x_stack):" in src
    assert "# Grad of: while snp.sum(x * x) < 10:" in src


@pytest.mark.parametrize("name,f,args", WHILE_CASES, ids=[c[0] for c in WHILE_CASES])
def test_jit_of_grad_of_python_while_stages_the_loops(x64, name, f, args):
    """Under jit, grad differentiates the functionalised function: the while loops on traced
    values become lax.while_loop (the reverse pass recomputes the carries), never unrolled."""
    g = secant.jit(secant.grad(f, argnums=(0, 1)))
    out = g(*args)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(out[k]), _fd(f, args, k), rtol=1e-6, atol=1e-7)
    text = g.lower(*args).as_text()
    assert "stablehlo.while" in text


def test_jit_of_grad_source_is_the_staged_derivative():
    src = secant.source(secant.jit(secant.grad(f_py_while, argnums=(0, 1))))
    assert "= while_loop_with_carries(" in src and "while_loop_vjp(" in src
    assert "# Grad of: while snp.sum(x * x) < 10:" in src


# --- nested defs passed to lax control flow (what functionalisation writes) ----------------
def f_nested_def_body(x, w):
    def step(i, c):
        h = snp.tanh(c * w)
        return h + x
    return snp.sum(lax.fori_loop(0, 3, step, x))


def f_nested_def_moved(x, w):
    def step(i, c):
        return c * w
    w = w * 2.0
    return snp.sum(lax.fori_loop(0, 3, step, x))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_nested_def_passed_to_fori_loop(x64, jit):
    g = secant.grad(f_nested_def_body, argnums=(0, 1))
    out = (secant.jit(g) if jit else g)(X, 0.7)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(out[k]), _fd(f_nested_def_body, (X, 0.7), k),
                                   rtol=1e-6, atol=1e-7)
    src = secant.source(g)
    assert "    def step(i, c):\n        h = snp.tanh(c * w)\n" in src
    assert "fori_loop_vjp(0, 3, step_vjp," in src


def test_nested_def_reading_a_reassigned_variable_is_reported():
    with pytest.raises(SecantError, match="step reads w, which is reassigned") as e:
        secant.grad(f_nested_def_moved, argnums=(0, 1))
    assert "test_grad_control_flow.py" in str(e.value)


def _grow(x, w):
    """A helper with a data-dependent Python loop."""
    while snp.sum(x * x) < 20.0:
        x = x * w + 0.1
    return x


def f_calls_a_looping_helper(x, w):
    return snp.sum(snp.sin(_grow(x, w)))


def test_jit_stages_the_loops_of_called_helpers(x64):
    args = (np.abs(X) * 0.5, 1.3)
    g = secant.jit(secant.grad(f_calls_a_looping_helper, argnums=(0, 1)))
    out = g(*args)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(out[k]), _fd(f_calls_a_looping_helper, args, k),
                                   rtol=1e-6, atol=1e-7)
    assert "stablehlo.while" in g.lower(*args).as_text()
    np.testing.assert_allclose(float(secant.jit(f_calls_a_looping_helper)(*args)),
                               float(f_calls_a_looping_helper(*args)), rtol=1e-12)


def _counted_while(ws, h):
    n = 0
    while n < 3:
        h = snp.sin(h @ ws[n]) + h
        n = n + 1
    return snp.sum(h)


def _counted_for(ws, h):
    j = 1
    for i in range(2):
        h = snp.tanh(h @ ws[j]) * ws[i][0, 0]
        j = j + 1
    return snp.sum(h)


@pytest.mark.parametrize("f", [_counted_while, _counted_for])
def test_a_counter_updated_in_the_body_indexes_the_right_item(f, x64):
    # the reverse pass replays an iteration from the values it started with: the counter's
    # update at the end of the body must not move the index the derivative uses
    rng = np.random.default_rng(0)
    ws, h = rng.normal(size=(4, 3, 3)) / 3, rng.normal(size=3)
    g = np.asarray(secant.grad(f)(ws, h))
    fd, e = np.zeros_like(ws), 1e-6
    for idx in np.ndindex(ws.shape):
        d = np.zeros_like(ws)
        d[idx] = e
        fd[idx] = (float(f(ws + d, h)) - float(f(ws - d, h))) / (2 * e)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)

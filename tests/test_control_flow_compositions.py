"""Early return, break, continue and traced conditions under every composition (issue 15).

A derivative of such a function holds values computed in one branch of an `if` and read only
under the same test (its residuals); transformed again (grad of grad, vmap of grad, jit of
grad of grad) they meet a traced or batched test. Each user-style function here runs through
grad∘grad, jvp∘grad, vmap∘grad, grad∘vmap∘grad, vmap∘grad∘grad and jit of them, checked
against float64 finite differences, a Python loop (vmap) and eager code (jit).
"""
import os
import pathlib

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

GOLDEN = pathlib.Path(__file__).parent / "golden" / "control_flow"
UPDATE = os.environ.get("SECANT_UPDATE_GOLDEN") == "1"


# --- user-style functions ---------------------------------------------------------------------
def early_return_traced(x):
    if snp.sum(x) > 0.0:
        return snp.sum(x ** 3)
    return snp.sum(snp.exp(x))


def return_in_both_branches(x):
    s = snp.sum(x)
    if s > 0.0:
        y = snp.sin(x)
        return snp.sum(y * x)
    else:
        return snp.sum(snp.cos(x) * s)


def residual_in_one_branch(x):
    # a value only one branch computes, read after the if only by the derivative
    if snp.sum(x) < 1.0:
        y = snp.tanh(x) * x
    else:
        y = x * x * 0.5
    return snp.sum(y * x)


def break_static(x):
    for i in range(10):
        x = x * 0.9 + snp.sin(x)
        if i >= 2:
            break
    return snp.sum(x * x)


def break_traced(x):
    for i in range(6):
        x = 0.5 * x + 0.1 * snp.sin(x)
        if snp.sum(x * x) < 0.3:
            break
    return snp.sum(x ** 2)


def continue_static(x):
    acc = 0.0
    for i in range(5):
        if i % 2 == 0:
            continue
        acc = acc + snp.sum(x ** i)
    return acc


def continue_traced(x):
    acc = 0.0
    for i in range(4):
        y = x * (i + 1.0)
        if snp.sum(y) > 2.0:
            continue
        acc = acc + snp.sum(snp.sin(y))
    return acc


def while_break(x):
    k = 0
    while k < 8:
        x = snp.cos(x) * 0.9
        if snp.max(x) < 0.2:
            break
        k = k + 1
    return snp.sum(x * x)


FUNCTIONS = [early_return_traced, return_in_both_branches, residual_in_one_branch, break_static,
             break_traced, continue_static, continue_traced, while_break]
IDS = [f.__name__ for f in FUNCTIONS]

# points away from the kinks (a traced test flips nowhere near them: finite differences hold)
POINTS = [np.array([0.4, -0.3, 0.7]), np.array([-0.9, -0.2, 0.1]), np.array([1.1, 0.6, -0.4])]


def _fd_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return g


def _fd_hvp(f, x, v, h=1e-5):
    gp = np.asarray(secant.grad(f)(x + h * v))
    gm = np.asarray(secant.grad(f)(x - h * v))
    return (gp - gm) / (2 * h)


# compositions that refuse today (JAX refuses them too: a Python loop whose exit test is traced
# or batched, differentiated twice or batched after): they must raise a SecantError naming the
# user's line, or, once supported, give the right value
REFUSED = {("grad_vmap_grad", "break_traced"), ("grad_vmap_grad", "continue_traced"),
           ("grad_vmap_grad", "while_break"), ("vmap_grad_grad", "while_break"),
           ("vmap_jvp_grad", "while_break"), ("jit_grad_grad", "while_break")}


def _check(composition, f, run, want, **tol):
    if (composition, f.__name__) not in REFUSED:
        _close(run(), want, **tol)
        return
    try:
        got = run()
    except secant.SecantError as e:
        assert __file__ in str(e) or "<secant" in str(e), str(e)
        return
    _close(got, want, **tol)


def _close(got, want, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want), rtol=rtol,
                               atol=atol)


V = np.array([0.3, -1.2, 0.5])


# --- first order, as a check of the references --------------------------------------------------
@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
@pytest.mark.parametrize("k", range(len(POINTS)))
def test_grad_matches_finite_differences(x64, f, k):
    x = POINTS[k]
    _close(secant.grad(f)(x), _fd_grad(f, x), rtol=1e-5, atol=1e-7)


# --- second order ------------------------------------------------------------------------------
@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
@pytest.mark.parametrize("k", range(len(POINTS)))
def test_grad_of_grad(x64, f, k):
    x = POINTS[k]
    g = secant.grad(f)

    def gv(y):
        return snp.sum(g(y) * V)
    # grad of (grad f . v) is H v: against finite differences of grad f along v
    _close(secant.grad(gv)(x), _fd_hvp(f, x, V), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_jvp_of_grad(x64, f):
    x = POINTS[0]
    _, hv = secant.jvp(secant.grad(f), (x,), (V,))
    _close(hv, _fd_hvp(f, x, V), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_jit_of_grad_of_grad_matches_eager(x64, f):
    g = secant.grad(f)

    def gv(y):
        return snp.sum(g(y) * V)
    x = POINTS[1]
    eager = secant.grad(gv)(x)
    _close(eager, _fd_hvp(f, x, V), rtol=1e-4, atol=1e-6)
    _check("jit_grad_grad", f, lambda: secant.jit(secant.grad(gv))(x), eager, rtol=1e-10,
           atol=1e-12)


# --- batched -----------------------------------------------------------------------------------
XS = np.stack(POINTS)


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_vmap_of_grad_matches_a_loop(x64, f):
    want = np.stack([np.asarray(secant.grad(f)(x)) for x in XS])
    _close(secant.vmap(secant.grad(f))(XS), want, rtol=1e-10, atol=1e-12)
    for x, w in zip(XS, want):
        _close(w, _fd_grad(f, x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_grad_of_vmap_of_grad(x64, f):
    # the examples take different branches: the batched test selects per example
    g = secant.grad(f)

    def total(xs):
        return snp.sum(secant.vmap(g)(xs) * V)
    want = np.stack([_fd_hvp(f, x, V) for x in XS])
    _check("grad_vmap_grad", f, lambda: secant.grad(total)(XS), want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_vmap_of_grad_of_grad(x64, f):
    g = secant.grad(f)

    def gv(y):
        return snp.sum(g(y) * V)
    want = np.stack([_fd_hvp(f, x, V) for x in XS])
    _check("vmap_grad_grad", f, lambda: secant.vmap(secant.grad(gv))(XS), want, rtol=1e-4,
           atol=1e-6)


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_vmap_of_jvp_of_grad(x64, f):
    g = secant.grad(f)

    def hv(y, t):
        return secant.jvp(g, (y,), (t,))[1]
    vs = np.stack([V, -V, 2 * V])
    want = np.stack([_fd_hvp(f, x, v) for x, v in zip(XS, vs)])
    _check("vmap_jvp_grad", f, lambda: secant.vmap(hv)(XS, vs), want, rtol=1e-4, atol=1e-6)


# --- jit of the function itself: a traced break/continue stages (JAX refuses the Python if) ------
@pytest.mark.parametrize("f", [break_traced, continue_traced, while_break, early_return_traced],
                         ids=lambda f: f.__name__)
def test_jit_stages_a_traced_exit(f):
    for x in POINTS:
        x = x.astype(np.float32)
        _close(secant.jit(f)(x), f(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", [break_traced, continue_traced], ids=lambda f: f.__name__)
def test_jit_of_vjp_through_a_traced_break(x64, f):
    x = POINTS[2]

    @secant.jit
    def pull(y):
        return secant.vjp(f, y)[1](1.0)[0]
    _close(pull(x), _fd_grad(f, x), rtol=1e-5, atol=1e-7)


def test_jit_source_of_a_traced_break_is_the_flag_form():
    """The break becomes a flag the loop carries; the traced test a lax.cond that clears it."""
    got = secant.source(secant.jit(break_traced))
    path = GOLDEN / "break_traced_jit.py.txt"
    if UPDATE or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
    assert got == path.read_text()
    assert "lax.fori_loop" in got and "lax.cond" in got


def test_a_user_variable_defined_in_one_branch_still_errors_under_jit():
    """Only a derivative's residuals are joined with zeros: the user's own variable, assigned in
    one branch of a traced if and read after it, is an error naming the line (JAX refuses the
    if itself)."""
    def f(x):
        if snp.sum(x) > 0.0:
            y = x * 2.0
        return snp.sum(y)
    with pytest.raises(secant.SecantError, match="defined in only one branch"):
        secant.jit(f)(np.ones(3, np.float32))


# --- comparisons under vmap ----------------------------------------------------------------------
def band(x, lo):
    inside = lo < x < 2.0
    return snp.where(inside, x * x, -x)


def test_chained_comparison_under_vmap():
    xs = np.array([0.5, 1.5, 2.5, -1.0], np.float32)
    los = np.array([0.0, 1.6, 0.0, -2.0], np.float32)
    got = secant.vmap(band)(xs, los)
    want = [float(band(float(x), float(lo))) for x, lo in zip(xs, los)]
    _close(got, want)
    got = secant.vmap(band, in_axes=(0, None))(xs, 0.0)
    _close(got, [float(band(float(x), 0.0)) for x in xs])
    # and its gradient, per example (where's condition has no derivative)
    grads = secant.vmap(secant.grad(band))(xs, los)
    _close(grads, [2 * x if lo < x < 2.0 else -1.0 for x, lo in zip(xs, los)])


def test_where_condition_may_depend_on_differentiated_values(x64):
    """As in JAX, snp.where's condition is not differentiated, whatever it depends on."""
    def f(x):
        c = x > snp.mean(x)
        return snp.sum(snp.where(c, x ** 2, snp.sin(x)))
    x = np.array([0.3, -0.7, 1.2, 0.1])
    _close(secant.grad(f)(x), _fd_grad(f, x), rtol=1e-5, atol=1e-7)
    g = secant.grad(f)
    _close(secant.jvp(g, (x,), (V[:1].repeat(4),))[1],
           _fd_hvp(f, x, V[:1].repeat(4)), rtol=1e-4, atol=1e-6)

    def select(x):
        return snp.sum(lax.select(x > 0.0, x * x, -x))
    _close(secant.grad(select)(x), _fd_grad(select, x), rtol=1e-5, atol=1e-7)


def test_membership_of_a_dict_key_under_vmap():
    def f(d, keys):
        return {k: v * 2.0 if k in keys else v for k, v in d.items()}
    d = {"a": np.arange(3.0, dtype=np.float32), "b": np.ones(3, np.float32)}
    got = secant.vmap(lambda dd: f(dd, ["a"]))(d)
    _close(got["a"], 2 * d["a"])
    _close(got["b"], d["b"])


def counter_break(x):
    k = 0
    while True:
        x = x * 0.5
        k = k + 1
        if k >= 3:
            break
    return x


def index_continue(x):
    out = 0.0               # a scalar that becomes an array: the loop must unroll under jit
    for i in range(5):
        if i == 3:
            continue
        out = out + x * i
    return out


@pytest.mark.parametrize("f", [counter_break, index_continue], ids=lambda f: f.__name__)
def test_jit_keeps_a_static_exit_a_python_loop(f):
    """An exit test on counters and loop indices stays Python (the loop unrolls as before)."""
    x = np.array([1.0, -2.0], np.float32)
    _close(secant.jit(f)(x), f(x))
    assert "lax.fori_loop" not in secant.source(secant.jit(f))


def test_vmap_of_grad_of_grad_keeps_the_scalar_output_check():
    """grad(grad(f)) where grad f is not scalar is an error per example under vmap, as eagerly
    (the derivative's unread grad_seed check is batched, not dropped)."""
    f = lambda x: snp.sum(snp.abs(x))     # noqa: E731
    with pytest.raises(secant.SecantError, match="scalar output"):
        secant.grad(secant.grad(f))(np.ones(3, np.float32))
    with pytest.raises(secant.SecantError, match="scalar output"):
        secant.vmap(secant.grad(secant.grad(f)))(np.ones((2, 3), np.float32))
    # scalar per example: fine (the second derivative of |x| is 0 away from 0)
    _close(secant.vmap(secant.grad(secant.grad(snp.abs)))(np.array([0.7, -1.2], np.float32)),
           [0.0, 0.0])

"""Starred calls (issue 15, star15): `op(*[comprehension])`, `f(*[x, y])`, `op([*parts, x])`,
`f(*xs, x)`, `max(*counts)`, `f(**{k: v ...})` written inside the call, of differentiated and
batched values, under grad, jvp, vjp, vmap, vmap(vmap), jit, jacfwd(grad), hessian and
vmap(grad); also comprehensions over a list of lists. The canonical form names the starred
list itself and spells the call out (a static length) or calls it through a dispatcher that
spells it out when it runs (a run-time length). Each example is square (3, 3) beside a batch of
4 (and 2 outer), so a query read from the wrong axis gives another number; values are checked
against float64 central differences, Python loops over the examples, and eager runs."""
import os
import pathlib

import numpy as np
import pytest

import secant
import secant.numpy as snp
from central_differences import check_first_order, grad_fd, hessian_fd
from user_programs.checks import rotated

RNG = np.random.default_rng(15015)
N, B, OUTER = 3, 4, 2


def pair(a, b):
    return snp.sum(snp.tanh(a @ b) * a)


def varargs(*xs):
    return sum(snp.sum(v @ v) for v in xs)


def shifted(a, scale, shift):
    return a * scale + shift


def doubled(a):
    return a, 2.0 * a


# --- the programs: a scalar of x (N, N) and w (N, N) ------------------------------------------
def max_of_enumerate(x, w):
    m = max(*[(i + 1) * e.shape[0] for i, e in enumerate([x, w])], 0)
    return m * snp.sum(x ** 2) + snp.sum(x * w)


def stack_of_comprehension(x, w):
    return snp.sum(snp.sin(snp.stack([*[x * (k + 1) for k in range(3)], w]) @ x))


def call_of_a_list(x, w):
    return pair(*[x, w]) + pair(*(w, x * x))


def concatenate_parts(x, w):
    parts = [x, 2.0 * x]
    return snp.sum(snp.tanh(snp.concatenate([*parts, w]) @ x))


def max_of_counts(x, w):
    counts = [x.shape[0], w.shape[1] + 1]
    return max(*counts) * snp.sum(x * x) + min(*counts, 2) * snp.sum(snp.cos(x))


def max_of_values(x, w):
    return max(*[snp.sum(c * c) for c in [x, w]]) + min(*[snp.sum(x), snp.sum(w)], 100.0)


def varargs_not_last(x, w):
    return varargs(*[x * k for k in range(1, 3)], w) + varargs(x, *[w, x])


def keywords_of_a_comprehension(x, w):
    kw = {k: w * (i + 1) for i, k in enumerate(["scale", "shift"])}
    return snp.sum(shifted(x, **kw) ** 2) + snp.sum(shifted(x, **{"scale": x, "shift": w}))


def keywords_of_an_op(x, w):
    return snp.sum(snp.clip(x @ w, **{k: v for k, v in [("a_min", -0.5), ("a_max", 0.7)]}))


def in_a_lambda(x, w):
    fn = lambda a: max(*[e.shape[0] for e in [a, w]], 0) * snp.sum(a * a) + pair(*[a, w])
    return fn(x)


def in_a_loop(x, w):
    t = 0.0
    for k in range(2):
        t = t + snp.sum(snp.maximum(*[x * (k + 1), w]) ** 2) + snp.sum(snp.stack([*[x, w]])[k])
    return t


def of_a_tuple_helper(x, w):
    return snp.sum(snp.maximum(*doubled(x)) * w) + pair(*doubled(w))


def in_a_helper(x, w):
    return helper_with_star(x, w) * 2.0


def helper_with_star(a, b):
    return snp.sum(snp.stack([*[a @ b for _ in range(2)], *[b]]) ** 2) + \
        max(*[c.shape[1] for c in (a, b)], 1) * snp.sum(a)


def max_of_rows(x, w):
    return max(*[snp.sum(r * r) for r in x], 0.0) * snp.sum(w) + min(*x[0], *w[1])


def stack_of_rows(x, w):
    # (a batched array's rows, as many as each example has: vmap(grad) once read the batch's)
    return snp.sum(snp.stack([*x, *w]) ** 2 * snp.concatenate([w, x]))


PROGRAMS = [max_of_rows, stack_of_rows, max_of_enumerate, stack_of_comprehension, call_of_a_list, concatenate_parts,
            max_of_counts, max_of_values, varargs_not_last, keywords_of_a_comprehension,
            keywords_of_an_op, in_a_lambda, in_a_loop, of_a_tuple_helper, in_a_helper]
JITTED = [f for f in PROGRAMS if f not in (max_of_values, max_of_rows)]  # (as jax: no bool
#                                                                           of a tracer)

W = RNG.normal(size=(N, N)) * 0.5
X = RNG.normal(size=(OUTER, B, N, N)) * 0.5
WB = RNG.normal(size=(B, N, N)) * 0.5


def _loop(f, xs, *rest):
    return np.stack([np.asarray(f(x, *rest)) for x in xs])


ids = dict(ids=lambda f: f.__name__)


@pytest.mark.parametrize("f", PROGRAMS, **ids)
def test_grad_jvp_vjp(x64, f):
    check_first_order(f, X[0, 0], W, RNG.normal(size=(N, N)))


@pytest.mark.parametrize("f", PROGRAMS, **ids)
def test_vmap(x64, f):
    np.testing.assert_allclose(secant.vmap(f, in_axes=(0, None))(X[0], W), _loop(f, X[0], W),
                               rtol=1e-9)
    want = np.stack([f(X[0, i], WB[i]) for i in range(B)])
    np.testing.assert_allclose(secant.vmap(f)(X[0], WB), want, rtol=1e-9)


@pytest.mark.parametrize("f", PROGRAMS, **ids)
def test_vmap_of_vmap(x64, f):
    vv = secant.vmap(secant.vmap(f, in_axes=(0, None)), in_axes=(0, None))
    np.testing.assert_allclose(vv(X, W), np.stack([_loop(f, xs, W) for xs in X]), rtol=1e-9)


@pytest.mark.parametrize("f", PROGRAMS, **ids)
def test_vmap_of_grad(x64, f):
    want = np.stack([grad_fd(f, x, W) for x in X[0]])
    np.testing.assert_allclose(secant.vmap(secant.grad(f), in_axes=(0, None))(X[0], W), want,
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", JITTED, **ids)
def test_jit(x64, f):
    x = X[1, 1]
    np.testing.assert_allclose(secant.jit(f)(x, W), f(x, W), rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.grad(f))(x, W), secant.grad(f)(x, W),
                               rtol=1e-12)


def test_jit_refuses_max_of_traced_values():
    """As jax: Python's max of traced values needs their truth value, unknown while tracing."""
    with pytest.raises(secant.SecantError, match="test_star15_calls.py"):
        secant.jit(max_of_values)(X[0, 0], W)


# (each program under jacfwd(grad) or hessian in turn, both under HYPOTHESIS_PROFILE=thorough)
@pytest.mark.parametrize("f, second", [
    pytest.param(f, second, id=f"{second}-{f.__name__}")
    for f, second in rotated(PROGRAMS, ["jacfwd_grad", "hessian"])])
def test_second_order(x64, f, second):
    x = X[1, 2]
    h = (secant.jacfwd(secant.grad(f)) if second == "jacfwd_grad" else secant.hessian(f))(x, W)
    want = hessian_fd(f, x, W)
    np.testing.assert_allclose(h, want, rtol=1e-4, atol=1e-4)


# --- the generated form (golden): the starred list built in the callee's name, then spelled
# out when the call runs -------------------------------------------------------------------------
GOLDEN = pathlib.Path(__file__).parent / "golden" / "star15"


def largest_square_sum(x, w):
    return max(*[snp.sum(c * c) for c in [x, w]]) * snp.sum(x)


def test_generated_source_matches_golden(x64):
    from test_golden import generated_program
    x, w = X[0, 0], W
    grad, batched = secant.grad(largest_square_sum), secant.vmap(largest_square_sum,
                                                                  in_axes=(0, None))
    want = max(np.sum(x * x), np.sum(w * w))
    np.testing.assert_allclose(grad(x, w), grad_fd(largest_square_sum, x, w), rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(batched(X[0], w), _loop(largest_square_sum, X[0], w), rtol=1e-9)
    assert float(largest_square_sum(x, w)) == pytest.approx(want * np.sum(x))
    text = "# grad\n" + generated_program(grad) + "\n# vmap\n" + generated_program(batched)
    path = GOLDEN / "largest_square_sum.py.txt"
    if os.environ.get("SECANT_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"{path} is missing: run SECANT_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text()

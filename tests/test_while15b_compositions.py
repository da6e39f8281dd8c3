"""vmap of second derivatives through a Python `while` on a batched value (issue 15, while15b).

vmap(jacrev(f)), vmap(hessian(f)) and vmap(jvp(grad(f))) batch derivatives that secant wrote for
one example, whose loops are Python `while`s (the vjp jacrev's rows_of vmaps, the jvp of that
vjp hessian's columns_of vmaps): vmapped over the examples, each such loop's test is batched.
secant then batches the same derivative of the user's staged function, whose loop is a
lax.while_loop (secant/transforms.py restaged): it runs while any example's test holds, each
example frozen after its own trips. Checked: each composition (eager and under jit) against a
Python loop over the examples, and those per-example values against float64 central
differences; for batches whose trip counts differ (0 to several) and whose trip counts are
equal; for a while with a break, a while in a helper, a while in a for, a while carrying a tuple
and a dict; jacrev(vmap(f)) and the hessian of a function that vmaps such a helper; vmap(vmap).
"""
import os
import pathlib

import numpy as np
import pytest

import secant
import secant.numpy as snp

from test_random_programs import fd_grad
from test_while15_batched_while import XB, appends, breaks, data_while, first_assigned_inside
from user_programs.checks import rotated

GOLDEN = pathlib.Path(__file__).parent / "golden" / "while15b"
UPDATE = os.environ.get("SECANT_UPDATE_GOLDEN") == "1"


def helper(v):
    v1 = v
    while snp.sum(v1 * v1) < 3.0123:
        v1 = 1.3 * v1 + 0.2 * snp.cos(v)
    return v1


def calls_helper(v0):
    """The batched while inside a helper the function calls."""
    return snp.sum(helper(v0) * snp.sin(v0))


def for_while(v0):
    v1 = v0
    for k in range(2):
        while snp.sum(v1 * v1) < 3.0123 + k:
            v1 = 1.3 * v1 + 0.2 * snp.cos(v0)
    return snp.sum(v1 * v0)


def tuple_carry(v0):
    a, b = v0, 0.5 * v0
    while snp.sum(a * a) < 3.0123:
        a, b = 1.3 * a + 0.2 * snp.cos(b), b * 1.1
    return snp.sum(a * b)


def dict_carry(v0):
    d = {"a": v0, "b": 0.5 * v0}
    while snp.sum(d["a"] * d["a"]) < 3.0123:
        d = {"a": 1.3 * d["a"] + 0.2 * snp.cos(d["b"]), "b": d["b"] * 1.1}
    return snp.sum(d["a"] * d["b"])


FUNCTIONS = [data_while, breaks, calls_helper, for_while, tuple_carry, dict_carry]


def trips(f, x):
    """The iterations f's loop(s) run for one example, in NumPy."""
    a, b, n = x, 0.5 * x, 0
    bounds = [3.0123, 4.0123] if f is for_while else [3.0123]
    for bound in bounds:
        while np.sum(a * a) + (n if f is data_while else 0) < bound:
            if f in (tuple_carry, dict_carry):
                a, b = 1.3 * a + 0.2 * np.cos(b), b * 1.1
            else:
                a = 1.3 * a + 0.2 * np.cos(x)
            n += 1
            if f is breaks and np.sum(a) > 0.6:
                break
    return n


# the same example nudged: every function runs the same number of iterations on each row
XE = np.array([XB[1], XB[1] * 1.01, XB[1] * 0.99 + 0.001])


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_the_batches_run_differing_and_equal_trip_counts(f):
    differing = [trips(f, x) for x in XB]
    equal = [trips(f, x) for x in XE]
    assert len(set(differing)) >= 3 and (0 in differing or f is for_while), differing
    assert len(set(equal)) == 1 and equal[0] > 0, equal


def per_example(f, kind):
    return {"jacrev": secant.jacrev(f), "hessian": secant.hessian(f),
            "jvp_grad": lambda x: secant.jvp(secant.grad(f), (x,), (x,))[1]}[kind]


def central_differences(f, kind, x):
    """kind's value at x by float64 central differences of f (of its gradient, for second
    derivatives)."""
    if kind == "jacrev":
        return fd_grad(f, x)
    first = secant.grad(f)
    hess = np.stack([fd_grad(lambda y: float(first(y)[k]), x) for k in range(x.size)])
    return hess if kind == "hessian" else hess @ x


# (each function under one of the three in turn, every one on some functions; every pair
# under HYPOTHESIS_PROFILE=thorough)
@pytest.mark.parametrize("f, kind", [pytest.param(f, kind, id=f"{f.__name__}-{kind}") for f, kind
                                     in rotated(FUNCTIONS, ["jacrev", "hessian", "jvp_grad"])])
def test_vmap_of_a_second_derivative_matches_each_example(x64, f, kind):
    g = per_example(f, kind)
    for batch in (XB, XE):
        want = np.stack([np.asarray(g(x)) for x in batch])
        for wrapped in (secant.vmap(g), secant.jit(secant.vmap(g))):
            np.testing.assert_allclose(np.asarray(wrapped(batch)), want, rtol=1e-10,
                                       atol=1e-11)
    # the per-example values themselves: no iterations (row 0) and several (row 3)
    for x in (XB[0], XB[3], XE[0]):
        np.testing.assert_allclose(np.asarray(g(x)), central_differences(f, kind, x),
                                   rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_jacrev_of_vmap_is_each_examples_gradient_on_the_diagonal(x64, f):
    want = np.zeros((len(XB),) + XB.shape)
    for b, x in enumerate(XB):
        want[b, b] = fd_grad(f, x)
    for jac in (secant.jacrev(secant.vmap(f)), secant.jit(secant.jacrev(secant.vmap(f)))):
        np.testing.assert_allclose(np.asarray(jac(XB)), want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("f", [data_while, breaks, calls_helper], ids=lambda f: f.__name__)
def test_hessian_of_a_function_that_vmaps_a_helper_with_the_while(x64, f):
    def total(xs):
        return snp.sum(secant.vmap(f)(xs) ** 2)

    def one(x):
        return f(x) ** 2
    got = np.asarray(secant.hessian(total)(XB))
    blocks = [np.asarray(secant.hessian(one)(x)) for x in XB]
    want = np.zeros(XB.shape + XB.shape)
    for b, block in enumerate(blocks):
        want[b, :, b, :] = block
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-11)
    first = secant.grad(one)
    fd = np.stack([fd_grad(lambda y: float(first(y)[k]), XB[3]) for k in range(3)])
    np.testing.assert_allclose(blocks[3], fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_vmap_of_vmap_of_the_while_and_of_its_gradient(x64, f):
    xs = np.concatenate([XB, XE])[:8].reshape(2, 4, 3)
    want = np.array([[float(f(x)) for x in row] for row in xs])
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.vmap(f))(xs)), want, rtol=1e-12)
    grads = np.array([[fd_grad(f, x) for x in row] for row in xs])
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.vmap(secant.grad(f)))(xs)),
                               grads, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("kind", ["jacrev", "hessian", "jvp_grad"])
@pytest.mark.parametrize("f", [appends, first_assigned_inside], ids=lambda f: f.__name__)
def test_a_second_derivative_of_a_while_that_cannot_be_exact_is_refused_at_its_line(f, kind):
    line = f.__code__.co_firstlineno + (3 if f is appends else 2)
    with pytest.raises(secant.SecantError, match=r"(?s)while on a batched value.*"
                       rf"test_while15_batched_while.py:{line}\b"):
        secant.vmap(per_example(f, kind))(XB)


def test_the_batched_rows_of_jacrev_run_the_staged_loop_per_example():
    """vmap(jacrev(f))'s rows: the vjp of f's staged loop, batched over the examples and the
    output basis: the forward loop runs while any example's test holds (any_example, each
    example frozen by select_batched), and its reverse pass (while_loop_vjp) steps an example
    only where `active`, its own test, held on that step."""
    from secant.codegen.program import program_source
    text = program_source(secant.vmap(secant.jacrev(data_while)))
    rows = "def data_while_vjp_vmap_vmap("
    assert rows in text
    text = text[text.index(rows):].split("\n\n\n")[0] + "\n"
    path = GOLDEN / "data_while_jacrev_rows_vmap.py.txt"
    if UPDATE or not path.exists():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()
    assert "any_example(" in text and "while_loop_vjp(" in text and "active=lambda" in text

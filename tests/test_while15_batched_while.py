"""A Python `while` whose test is batched under vmap (issue 15, task while15).

JAX refuses `while <test on a batched tracer>` (one truth value per example); secant batches it
as lax.while_loop's batching rule does: the loop runs while any example's test holds, and each
example's carry is frozen (select) once its own test is false. So each example runs exactly its
own number of iterations, and reverse mode replays each example's own trip count (its
while_loop_vjp steps only the examples still active). Checked: vmap and jit(vmap) against a
Python loop over the batch, vmap(grad) and jit(vmap(grad)) against float64 central differences
of each example, on inputs whose trip counts differ (0 to several). What cannot be exact is
refused at the user's line: a body with an effect (an append per iteration: each example would
append a different number of times) and a variable first assigned in the loop (unbound in an
example whose loop runs no iteration).
"""
import os
import pathlib

import numpy as np
import pytest

import secant
import secant.numpy as snp

from test_random_programs import fd_grad

GOLDEN = pathlib.Path(__file__).parent / "golden" / "while15"
UPDATE = os.environ.get("SECANT_UPDATE_GOLDEN") == "1"

# rows whose loops below run 0 to 9 iterations (asserted by trips())
XB = np.array([[1.2, -1.0, 0.9], [0.3, -0.7, 1.1], [0.01, 0.26, -0.12], [0.16, -0.04, -0.28],
               [-0.3, 0.2, -0.5], [-0.6, -0.5, -0.4]])


def data_while(v0):
    """test_random_programs' data_while construct, as its jit(vmap) property drew it."""
    v1 = v0
    j1 = 0
    while snp.sum(v1 * v1) + j1 < 3.0123:
        v1 = 1.3 * v1 + 0.2 * snp.cos(v0)
        j1 += 1
    return snp.sum(v1 * v0 + v1)


def breaks(v0):
    """A break on a value inside the batched while: a flag the loop carries per example."""
    v1 = v0
    while snp.sum(v1 * v1) < 3.0123:
        v1 = 1.3 * v1 + 0.2 * snp.cos(v0)
        if snp.sum(v1) > 0.6:
            break
    return snp.sum(v1 * v1)


def trips(x):
    """data_while's and breaks' iteration counts for one example, in NumPy."""
    out = []
    for with_break in (False, True):
        v, j = x, 0
        while np.sum(v * v) + (0 if with_break else j) < 3.0123:
            v = 1.3 * v + 0.2 * np.cos(x)
            j += 1
            if with_break and np.sum(v) > 0.6:
                break
        out.append(j)
    return out


def test_the_inputs_run_different_numbers_of_iterations():
    counts = np.array([trips(x) for x in XB])
    assert len(set(counts[:, 0])) >= 3 and 0 in counts[:, 0], counts
    assert len(set(counts[:, 1])) >= 4 and 0 in counts[:, 1], counts


@pytest.mark.parametrize("f", [data_while, breaks], ids=lambda f: f.__name__)
def test_vmap_and_jit_of_vmap_match_a_loop(x64, f):
    want = np.array([np.asarray(f(x)) for x in XB])
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(XB)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(f))(XB)), want, rtol=1e-12)


@pytest.mark.parametrize("f", [data_while, breaks], ids=lambda f: f.__name__)
def test_per_example_gradients_run_each_examples_own_trip_count(x64, f):
    want = np.array([fd_grad(f, x) for x in XB])
    for got in (secant.vmap(secant.grad(f))(XB), secant.jit(secant.vmap(secant.grad(f)))(XB)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-9)


def test_float32_jit_of_vmap_matches_a_loop():
    x = XB.astype(np.float32)
    want = np.array([np.asarray(data_while(r)) for r in x])
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(data_while))(x)), want,
                               rtol=1e-5)


def test_the_batched_while_source_is_a_while_loop_with_a_select():
    """The loop runs while any example's test holds; an example whose test is false keeps its
    carry (select_batched); the test and the body are functions named after the carry."""
    from secant.codegen.program import program_source
    text = program_source(secant.vmap(data_while))    # with the functions it calls
    path = GOLDEN / "data_while_vmap.py.txt"
    if UPDATE or not path.exists():
        path.write_text(text)
    assert text == path.read_text()
    assert "lax.while_loop(" in text and "any_example(v1_while_cond_vmap(carry, v0))" in text
    assert "select_batched(v1_while_cond_vmap(carry, v0), v1_while_body_vmap" in text


def appends(v0):
    v1 = v0
    seen = []
    while snp.sum(v1 * v1) < 3.0123:
        v1 = 1.3 * v1 + 0.2 * snp.cos(v0)
        seen.append(v1)
    return snp.sum(v1) + len(seen)


def first_assigned_inside(v0):
    v1 = v0
    while snp.sum(v1 * v1) < 3.0123:
        w = snp.sin(v1)
        v1 = 1.3 * v1 + 0.2 * w
    return snp.sum(v1 + w)


@pytest.mark.parametrize("f", [appends, first_assigned_inside], ids=lambda f: f.__name__)
@pytest.mark.parametrize("transform", ["vmap", "jit_vmap", "vmap_grad"])
def test_a_batched_while_that_cannot_be_exact_is_refused_at_its_line(f, transform):
    wrapped = {"vmap": secant.vmap(f), "jit_vmap": secant.jit(secant.vmap(f)),
               "vmap_grad": secant.vmap(secant.grad(f))}[transform]
    line = f.__code__.co_firstlineno + (3 if f is appends else 2)
    # (the reason functionalize kept the loop: said of the user's loop, not of a derivative's,
    # whose stacks append in the body)
    why = "" if transform == "vmap_grad" else \
        "mutates a Python object" if f is appends else "w is first assigned inside it"
    with pytest.raises(secant.SecantError, match=rf"(?s)while on a batched value.*{why}.*"
                       rf"{os.path.basename(__file__)}:{line}\b"):
        wrapped(XB)


@pytest.mark.parametrize("transform", ["jacrev", "hessian", "jvp_grad"])
def test_per_example_second_derivatives_of_a_batched_while(x64, transform):
    f = data_while
    g = {"jacrev": secant.jacrev(f), "hessian": secant.hessian(f),
         "jvp_grad": lambda x: secant.jvp(secant.grad(f), (x,), (x,))[1]}[transform]
    want = np.stack([np.asarray(g(x)) for x in XB])
    if transform == "hessian":      # the per-example reference itself, against differences
        first = secant.grad(f)
        fd = np.stack([fd_grad(lambda y: first(y)[k], XB[3]) for k in range(3)])
        np.testing.assert_allclose(want[3], fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.vmap(g)(XB)), want, rtol=1e-10, atol=1e-12)

"""Counter while loops under jit save their carries on a stack (issue 19): a while loop whose
trip count its concrete counters give (`i = 0; while i < n: ...; i += 1` with n static, a
lax.while_loop over (counter, x)) is read back by a reverse scan over the saved carries, at
every order, instead of recomputing step k's carry from the start. Each order against float64
central differences of the order before and against eager; the trip count learnt against the
loop run; loops whose test reads other values keep the recomputing path (values still right)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import secant.numpy as snp
from secant import grad, jit, vmap
from secant.lax_control_flow import trip_count

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from loop_programs import counter_while, while_cubic  # noqa: E402

pytestmark = pytest.mark.usefixtures("fast_compiles")

EPS = 1e-5


def float_test_counter(x):
    """The test does float arithmetic on the counter: eager's dtypes decide the count."""
    s = x
    i = 0
    while i * 0.1 < 0.7:
        s = snp.cos(s) * x
        i += 1
    return s


def two_counters(x):
    s = x
    i, j = 0, 10
    while i < j:
        s = snp.tanh(s + x) * 1.1
        i += 2
        j -= 1
    return s


def no_trips(x):
    s = x
    i = 7
    while i < 3:
        s = snp.sin(s)
        i += 1
    return s * x


def data_dependent(x):
    """The test reads a float carry: no trip count is learnt (the carries are recomputed)."""
    s = x
    while s < 10.0:
        s = s * 1.5 + x
    return s


PROGRAMS = {"counter_while": (counter_while, 0.7), "while_cubic": (while_cubic, 2.0),
            "float_test_counter": (float_test_counter, 0.6), "two_counters": (two_counters, 0.3),
            "no_trips": (no_trips, 0.8), "data_dependent": (data_dependent, 0.9)}


def _diff(f, x, h):
    return (float(f(x + h)) - float(f(x - h))) / (2 * h)


@pytest.mark.parametrize("name,order", [(n, k) for n in sorted(PROGRAMS) for k in (1, 2)]
                         + [("while_cubic", 4)])
def test_orders_against_differences_and_eager(x64, name, order):
    f, x = PROGRAMS[name]
    lo = f
    for _ in range(order - 1):
        lo = grad(lo)
    top = grad(lo)
    want = _diff(lo, x, EPS * max(1.0, abs(x)))
    got = float(top(x))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(jit(top)(x)), got, rtol=1e-10, atol=1e-12)


def test_third_order_of_a_counter_while(x64):
    g2, g3 = grad(grad(counter_while)), grad(grad(grad(counter_while)))
    got = float(jit(g3)(0.7))
    np.testing.assert_allclose(got, _diff(g2, 0.7, EPS), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, float(g3(0.7)), rtol=1e-10, atol=1e-12)


def test_the_reverse_pass_recomputes_nothing():
    """jit(grad) of a counter while: the forward loop and one reverse loop, none nested (the
    recomputing reverse pass runs a while inside its while); a data-dependent one recomputes."""
    text = jit(grad(counter_while)).lower(0.7).as_text()
    assert text.count("stablehlo.while") == 2
    text = jit(grad(while_cubic)).lower(2.0).as_text()
    assert text.count("stablehlo.while") == 2
    text = jit(grad(data_dependent)).lower(0.9).as_text()
    assert text.count("stablehlo.while") == 2    # (its reverse reads no carry: nothing to redo)


def test_a_traced_bound_keeps_the_recomputing_path(x64):
    def f(x, n):
        s = x
        i = 0
        while i < n:
            s = snp.sin(s) * x
            i += 1
        return s
    g = jit(grad(f))
    assert g.lower(0.7, 4).as_text().count("stablehlo.while") == 3   # (recomputes: nested)
    want = _diff(lambda x: f(x, 4), 0.7, EPS)
    np.testing.assert_allclose(float(g(0.7, 4)), want, rtol=1e-6)
    np.testing.assert_allclose(float(g(0.7, 4)), float(grad(f)(0.7, 4)), rtol=1e-12)


def test_vmap_of_jit_of_grad_against_a_loop(x64):
    xs = np.array([0.3, 0.7, 1.1])
    for f in (counter_while, while_cubic, two_counters):
        want = [float(grad(grad(f))(v)) for v in (xs if f is not while_cubic else xs + 1.0)]
        got = jit(vmap(grad(grad(f))))(xs if f is not while_cubic else xs + 1.0)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _count(f, init):
    """trip_count under a trace of its own, as jit meets it."""
    got = []

    def probe(x):
        got.append(trip_count(*f(x), init(x)))
        return x
    jit(probe)(1.0)
    return got[0]


def test_trip_count_from_counters_only():
    body = lambda c: (c[0] + 3, c[1] * 2.0)    # noqa: E731
    assert _count(lambda x: (lambda c: c[0] < 10, body), lambda x: (1, x)) == 3   # 1, 4, 7
    assert _count(lambda x: (lambda c: c[0] < 0, body), lambda x: (1, x)) == 0
    # the test reads the float carry: no count (whatever x is)
    assert _count(lambda x: (lambda c: c[1] < 10.0, body), lambda x: (1, x)) is None
    assert _count(lambda x: (lambda c: c[0] < 10, body), lambda x: (x, x)) is None
    # eagerly too: a batch of examples whose test reads their values gives no single count
    assert trip_count(lambda c: c[0] < 4, body, (0, np.ones(3))) == 2
    assert trip_count(lambda c: snp.sum(c[1]) < 5.0, body, (0, np.ones(3))) is None


def test_a_loop_past_the_limit_gives_no_count(monkeypatch):
    import secant.lax_control_flow as lcf
    monkeypatch.setattr(lcf, "TRIP_COUNT_LIMIT", 10)
    body = lambda c: (c[0] + 1, c[1])          # noqa: E731
    assert trip_count(lambda c: c[0] < 10, body, (0, 1.0)) == 10
    assert trip_count(lambda c: c[0] < 11, body, (0, 1.0)) is None
    assert trip_count(lambda c: c[0] >= 0, body, (0, 1.0)) is None    # (never stops)


def test_float32_counter_test_matches_eager():
    """Under float32 (the default) the counter's float test is decided with float32
    arithmetic, as eager and XLA decide it: jit and eager take the same number of steps."""
    g = grad(float_test_counter)
    np.testing.assert_allclose(float(jit(g)(0.6)), float(g(0.6)), rtol=1e-5)
    assert _count(lambda x: (lambda c: c[0] * 0.1 < 0.7, lambda c: (c[0] + 1, c[1])),
                  lambda x: (0, x)) == 7

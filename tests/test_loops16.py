"""Left-over gaps of loops and dtypes (issue 15, loops16): shape queries of the items of a
batched list inside a starred comprehension, and the neighbourhood of staged loops."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

RNG = np.random.default_rng(16)


# --- max(*[c.ndim for c in xs], 0): shape queries of batched items are per example ---------
def widest(a, b):
    xs = [a, b]
    n = max(*[c.ndim for c in xs], 0)
    return a * n + b


def twice_rows(a, b):
    xs = [a, b]
    m = max(*[sum([e.shape[0] for e in [c, c]]) for c in xs])      # (a query inside a query)
    return a * m + b.shape[-1]


def test_vmap_of_a_starred_comprehension_of_shape_queries():
    a, b = RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))
    for f in (widest, twice_rows):
        want = np.stack([f(a[i], b[i]) for i in range(3)])
        np.testing.assert_allclose(secant.vmap(f)(a, b), want, rtol=1e-6)
        np.testing.assert_allclose(secant.jit(secant.vmap(f))(a, b), want, rtol=1e-6)


def test_grad_of_a_starred_comprehension_of_shape_queries():
    a, b = RNG.normal(size=2), RNG.normal(size=2)
    g = secant.grad(lambda a, b: snp.sum(widest(a, b) ** 2), argnums=(0, 1))
    ga, gb = g(a, b)
    np.testing.assert_allclose(ga, 2 * (a + b) * 1, rtol=1e-6)      # n is 1
    np.testing.assert_allclose(gb, 2 * (a + b), rtol=1e-6)
    g2 = secant.grad(lambda a, b: snp.sum(twice_rows(a, b) ** 2))
    np.testing.assert_allclose(g2(a, b), 2 * (4 * a + 2) * 4, rtol=1e-6)


# --- the neighbourhood of staged loops: several carries, integer counters, constants, dtypes --
def while_counter_and_constant(x):
    def body(c):
        i, a, k, b = c                  # an int counter, a constant, an inactive accumulator
        return i + 1, a * snp.sin(x) + b, k, b * 1.5 + k
    i, a, k, b = secant.lax.while_loop(lambda c: c[0] < 4, body, (0, x, 3.0, 2.0))
    return a + b * k + i


def python_while_int_read_as_float(x):
    i, a, b = 0, x, 1.0
    while i < 3:                        # (jit stages it into a while loop)
        a = a * snp.cos(a) + i * 0.1 + b
        b = b + 0.5
        i = i + 1
    return a * b


def scan_with_an_inactive_carry(x):
    def body(c, t):
        a, count = c
        return (a * snp.tanh(t * x), count + 1.0), a * count
    (a, count), ys = secant.lax.scan(body, (x, 0.0), snp.arange(1.0, 4.0))
    return a + snp.sum(ys) * count


def while_trip_count_from_the_value(x):
    def body(c):
        i, a = c
        return i + 1, a * 1.3 + snp.sin(a)
    i, a = secant.lax.while_loop(lambda c: (c[1] < 5.0) & (c[0] < 10), body, (0, x))
    return a * a                        # (JAX refuses reverse mode here; secant recomputes)


LOOPS = {"while_counter_and_constant": (while_counter_and_constant, 0.7),
         "python_while_int_read_as_float": (python_while_int_read_as_float, 0.4),
         "scan_with_an_inactive_carry": (scan_with_an_inactive_carry, 0.5),
         "while_trip_count_from_the_value": (while_trip_count_from_the_value, 0.3)}


def _fd(f, x, eps=1e-5):
    return (float(f(x + eps)) - float(f(x - eps))) / (2 * eps)


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_reverse_mode_through_loops_to_the_third_order(x64, name):
    f, x = LOOPS[name]
    d = [f]
    for _ in range(3):
        d.append(secant.grad(d[-1]))
    for k in (1, 2, 3):
        got = float(d[k](snp.asarray(x)))
        np.testing.assert_allclose(got, _fd(d[k - 1], x), rtol=1e-6, atol=1e-8)
        if k > 1:                       # (jit of the 1st is the others' first step)
            np.testing.assert_allclose(float(secant.jit(d[k])(snp.asarray(x))), got,
                                       rtol=1e-10)


def fori_of_mixed_dtypes(x):
    def body(j, c):
        a16, a32, n = c                 # float16, float64 (x's), an int
        return (a16 * snp.asarray(1.1, snp.float16) + x.astype(snp.float16),
                a32 * snp.sin(x) + a16.astype(snp.float32), n + j)
    a16, a32, n = secant.lax.fori_loop(0, 3, body, (snp.asarray(0.5, snp.float16), x, 0))
    return a32 + a16.astype(snp.float32) * n


def test_fori_loop_of_mixed_dtypes_as_jax(x64):
    # JAX's values (jax 0.4, x64, jit): the float16 steps round alike, so finite differences
    # cannot check them; dtypes float64, x's
    want = {1: 14.6550774241539, 2: 4.0027410405450485}
    d1 = secant.grad(fori_of_mixed_dtypes)
    d2 = secant.grad(d1)
    for k, d in ((1, d1), (2, d2)):
        for g in (d(snp.asarray(0.6)), secant.jit(d)(snp.asarray(0.6))):
            assert g.dtype == np.float64
            np.testing.assert_allclose(float(g), want[k], rtol=1e-6)
    d3 = secant.jit(secant.grad(d2))(snp.asarray(0.6))
    np.testing.assert_allclose(float(d3), -0.4958179213950209, rtol=1e-6)


def test_eager_third_order_of_a_fori_loop_of_mixed_dtypes(x64):
    # x is weakly typed at the 3rd order, so the loop runs in float32, as JAX's does: the 2nd
    # order's add_grads(float32 cotangent, float64 one) gives each operand its cotangent in its
    # own dtype (ad/helpers.py grads_as), or the reverse scan's carry changed dtype
    d3 = secant.grad(secant.grad(secant.grad(fori_of_mixed_dtypes)))
    np.testing.assert_allclose(float(d3(snp.asarray(0.6))), -0.4958179213950209, rtol=1e-6)


def fori_of_float32_weight(x):
    def body(j, c):
        a, w = c
        return a * w + snp.tanh(a) * x, w
    return secant.lax.fori_loop(0, 3, body, (x, snp.asarray(0.9, snp.float32)))[0]


def test_eager_third_order_of_a_fori_loop_of_a_float32_weight(x64):
    # JAX's (jax 0.4, x64): -24.251145362854004, float64; the loop runs in float32 (x weak)
    d2 = secant.grad(secant.grad(fori_of_float32_weight))
    d3 = secant.grad(d2)
    got = d3(snp.asarray(0.4))
    assert got.dtype == np.float64
    np.testing.assert_allclose(float(got), -24.251145362854004, rtol=1e-6)
    np.testing.assert_allclose(float(secant.jit(d3)(snp.asarray(0.4))), float(got), rtol=1e-6)
    h = 1e-3        # (the 2nd order, in float32 steps: a wide step)
    fd = (float(d2(snp.asarray(0.4 + h))) - float(d2(snp.asarray(0.4 - h)))) / (2 * h)
    np.testing.assert_allclose(float(got), fd, rtol=1e-3)

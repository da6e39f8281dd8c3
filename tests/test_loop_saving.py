"""Loops save for the reverse pass only what it reads (transformer/dataflow.py), and pytree
carries (dicts, tuples, lists; a value under two keys) get their cotangents accumulated.

Every gradient here is checked against float64 central finite differences."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax


def _fd(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return g


def fori_dict(x):
    def body(i, c):
        a, b = c['a'], c['b']
        return {'a': a * b, 'b': b + snp.sin(a)}
    c = lax.fori_loop(0, 3, body, {'a': x, 'b': x * 2.0})
    return snp.sum(c['a'] + c['b'])


def fori_dict_display(x):
    def body(i, c):
        a = c['a'] * 1.1 + c['b']
        b = c['b'] * c['a']
        carry = {'a': a, 'b': b}
        return carry
    c = lax.fori_loop(0, 3, body, {'a': x, 'b': x})
    return snp.sum(c['a'] * c['b'])


def fori_dict_two_keys(x):
    def body(i, c):
        a = snp.sin(c['a']) + c['b']
        return {'a': a, 'b': a}
    c = lax.fori_loop(0, 3, body, {'a': x, 'b': x})
    return snp.sum(c['a'] * c['b'])


def fori_list(x):
    def body(i, c):
        a = c[0] * c[1]
        return [a, a + c[1]]
    c = lax.fori_loop(0, 3, body, [x, x * 0.5])
    return snp.sum(c[0] + c[1] * c[0])


def fori_tuple_nested_dict(x):
    def body(i, c):
        a, d = c
        a2 = a * snp.cos(d['u']) + d['v']
        return (a2, {'u': a2, 'v': d['v'] * 0.9})
    c = lax.fori_loop(0, 4, body, (x, {'u': x, 'v': 2.0 * x}))
    return snp.sum(c[0] * c[1]['u'] + c[1]['v'])


def scan_dict_in_tuple(x):
    def body(c, xi):
        a = c['a'] * xi + c['b']
        return {'a': a, 'b': a}, a
    c, ys = lax.scan(body, {'a': x, 'b': x}, snp.arange(3.0) + 0.5)
    return snp.sum(c['a'] * c['b']) + snp.sum(ys)


def scan_dict_two_keys(x):
    def body(c, xi):
        a = snp.sin(c['a']) * xi + c['b']
        carry = {'a': a, 'b': a}
        return carry, a * 2.0
    c, ys = lax.scan(body, {'a': x, 'b': x}, snp.arange(4.0) * 0.3)
    return snp.sum(c['a'] + c['b'] * c['b']) + snp.sum(ys)


def scan_tuple_same(x):
    def body(c, xi):
        a, b = c
        a2 = snp.sin(a) * xi + b
        return (a2, a2), a2
    c, ys = lax.scan(body, (x, x), snp.arange(3.0) + 0.5)
    return snp.sum(c[0] * c[1]) + snp.sum(ys)


def while_dict(x):
    def cond(c):
        return c['i'] < 3

    def body(c):
        a = c['a'] * 1.3 + snp.sin(c['b'])
        return {'i': c['i'] + 1, 'a': a, 'b': a}
    c = lax.while_loop(cond, body, {'i': 0, 'a': x, 'b': x})
    return snp.sum(c['a'] * c['b'])


def python_dict(x):
    c = {'a': x, 'b': x}
    for i in range(3):
        a = snp.sin(c['a']) + c['b']
        c = {'a': a, 'b': a * 0.5}
    return snp.sum(c['a'] * c['b'])


def python_dict_same(x):
    c = {'a': x, 'b': x}
    for i in range(3):
        a = snp.sin(c['a']) + c['b']
        c = {'a': a, 'b': a}
    return snp.sum(c['a'] * c['b'])


def python_tuple(x):
    a, b = x, x
    for i in range(3):
        a, b = snp.sin(a) * b, a
    return snp.sum(a * b)


def python_list(x):
    c = [x, x]
    for i in range(3):
        a = snp.cos(c[0]) * c[1]
        c = [a, a]
    return snp.sum(c[0] + c[1])


def python_accumulator(x):
    acc = 0.0
    for i in range(5):
        acc = acc + snp.sin(x * i)
    return snp.sum(acc)


def python_accumulator_broadcast(x):
    acc = snp.ones((3, 1)) * x[0]        # (3, 1) carry broadcast up by a (2,) addend
    for i in range(3):
        acc = acc + snp.sin(x * i)
    return snp.sum(acc * snp.arange(6.0).reshape(3, 2))


def python_accumulator_also_read(x):
    acc = x
    for i in range(4):
        acc = acc + snp.sin(acc * 0.5)
    return snp.sum(acc)


def fori_accumulator(x):
    return snp.sum(lax.fori_loop(0, 5, lambda i, a: a + snp.sin(x * i), snp.zeros_like(x)))


def scan_accumulator(x):
    c, _ = lax.scan(lambda a, xi: (a + snp.sin(x * xi), None), snp.zeros_like(x),
                    snp.arange(5.0))
    return snp.sum(c)


def scan_two_carries(x):
    def body(c, xi):
        acc, h = c
        h2 = snp.tanh(h * xi + x)
        return (acc + h2, h2), None
    (acc, h), _ = lax.scan(body, (snp.zeros_like(x), x), snp.arange(4.0) * 0.2)
    return snp.sum(acc * h)


def python_two_accumulators(x):
    a, b = 0.0, x
    for i in range(4):
        a, b = a + snp.sin(x * i), b - snp.cos(x) * i
    return snp.sum(a * b)


def scan_dict_accumulator(x):
    def body(c, xi):
        return {'s': c['s'] + snp.sin(x * xi), 'p': c['p'] * snp.cos(x + xi)}, None
    s0, p0 = snp.zeros_like(x), snp.ones_like(x)
    c, _ = lax.scan(body, {'s': s0, 'p': p0}, snp.arange(4.0))
    return snp.sum(c['s'] * c['p'])


def fori_same_leaf_twice(x):
    def body(i, c):
        s = c[0] + snp.sin(x * i)
        return (s, s)
    c = lax.fori_loop(0, 4, body, (snp.zeros_like(x), snp.zeros_like(x)))
    return snp.sum(c[0] * c[1])


def scan_dict_with_counter(x):
    def body(c, xi):
        return {'n': c['n'] + 1, 's': c['s'] + snp.sin(x * xi)}, None
    s0 = x * 0.0
    c, _ = lax.scan(body, {'n': 0, 's': s0}, snp.arange(4.0))
    return snp.sum(c['s']) * c['n']


def scan_carry_leaf_as_output(x):
    def body(c, xi):
        return (c[0] + snp.sin(x * xi), c[1]), c[0]
    c, ys = lax.scan(body, (x * 0.0, x * 2.0), snp.arange(4.0))
    return snp.sum(c[0] * c[1]) + snp.sum(ys)


CASES = [scan_dict_with_counter, scan_carry_leaf_as_output, python_two_accumulators, scan_dict_accumulator, fori_same_leaf_twice, fori_dict, fori_dict_display, fori_dict_two_keys, fori_list, fori_tuple_nested_dict,
         scan_dict_in_tuple, scan_dict_two_keys, scan_tuple_same, while_dict, python_dict,
         python_dict_same, python_tuple, python_list, python_accumulator,
         python_accumulator_broadcast, python_accumulator_also_read, fori_accumulator,
         scan_accumulator, scan_two_carries]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_loop_gradient_matches_finite_differences(x64, f):
    x = np.array([0.3, -0.7])
    np.testing.assert_allclose(secant.grad(f)(x), _fd(f, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jit_of_loop_gradient_matches_eager(x64, f):
    x = np.array([0.3, -0.7])
    np.testing.assert_allclose(secant.jit(secant.grad(f))(x), secant.grad(f)(x), rtol=1e-10)


def loop(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + snp.sin(x * i)
    return acc


def _reverse_loop(src):
    """The lines of the generated reverse loop (after `for ... in reversed(...)`)."""
    lines = src.splitlines()
    start = next(k for k, ln in enumerate(lines) if "in reversed(" in ln)
    return lines[start + 1:]


def test_accumulator_loop_pushes_nothing_for_acc_and_replays_no_sin():
    src = secant.source(secant.grad(loop))
    assert "_stack" not in src and ".append(" not in src and ".pop()" not in src, src
    assert not any(ln.strip().startswith("sin_x_times_i =") for ln in _reverse_loop(src)), src
    assert float(secant.grad(loop)(0.3, 5)) == pytest.approx(
        sum(i * np.cos(0.3 * i) for i in range(5)), rel=1e-6)


def test_a_carry_read_by_the_derivative_is_still_saved(x64):
    src = secant.source(secant.grad(python_accumulator_also_read))
    # (acc takes x's name: x is dead after `acc = x`, lean20u's _into_dead_source)
    # (read back by its reverse loop's header: lean20r)
    assert "x_stack.append(x)" in src and "for x in reversed(x_stack):" in src, src


def test_a_carry_whose_shape_grows_gets_its_cotangent_summed_where_it_starts(x64):
    def f(x, y):
        acc = y                         # (3, 1), broadcast up to (3, 2) by the loop
        for i in range(3):
            acc = acc - snp.sin(x * i)
        return snp.sum(acc * snp.arange(6.0).reshape(3, 2))
    x, y = np.array([0.3, -0.7]), np.array([[1.0], [2.0], [0.5]])
    src = secant.source(secant.grad(f, argnums=(0, 1)))
    # (acc is y: its cotangent summed to y's shape)
    assert "_stack" not in src and "unbroadcast(acc_1_bar, y)" in src, src
    gx, gy = secant.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, _fd(lambda v: f(v, y), x), rtol=1e-6)
    np.testing.assert_allclose(gy, _fd(lambda v: f(x, v), y), rtol=1e-6)
    np.testing.assert_allclose(gy, [[1.0], [5.0], [9.0]], rtol=1e-8)


def _sum_of_sines(x):
    return sum(snp.sum(snp.sin(x * i)) for i in range(5))


@pytest.mark.parametrize("f", [fori_accumulator, scan_accumulator], ids=lambda f: f.__name__)
def test_lax_accumulator_saves_no_carries(f):
    src = secant.source(secant.grad(f))
    assert "_with_carries" not in src and "_carries" not in src, src


@pytest.mark.parametrize("f", [fori_accumulator, scan_accumulator, scan_two_carries],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("transform", ["hessian", "jacfwd_grad", "jacrev_grad", "vmap_grad"])
def test_lax_loop_derivatives_compose(x64, f, transform):
    x = np.array([0.3, -0.7])
    make = {"hessian": secant.hessian,
            "jacfwd_grad": lambda g: secant.jacfwd(secant.grad(g)),
            "jacrev_grad": lambda g: secant.jacrev(secant.grad(g)),
            "vmap_grad": lambda g: secant.vmap(secant.grad(g))}[transform]
    arg = np.stack([x, 2 * x]) if transform == "vmap_grad" else x
    ref = _sum_of_sines if f is not scan_two_carries else None
    got = np.asarray(make(f)(arg))
    if ref is not None:
        want = np.asarray(make(ref)(arg))
    elif transform == "vmap_grad":
        want = np.stack([_fd(f, a) for a in arg])
    else:
        want = np.stack([_fd(lambda v, k=k: secant.grad(f)(v)[k], x) for k in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@secant.checkpoint
def _scaled_exp(h, w):
    return snp.exp(h) * 2.0, -w             # (its vjp reads h, not w)


def test_checkpoint_barrier_only_for_what_its_vjp_reads(x64):
    def f(h, w):
        a, b = _scaled_exp(h, w)
        return snp.sum((a + b) ** 2)
    h, w = np.array([0.1, -0.4]), np.array([0.3, 0.2])
    g = secant.jit(secant.grad(f, argnums=(0, 1)))
    assert g.lower(h, w).as_text().count("optimization_barrier") == 1   # h's, not w's
    gh, gw = g(h, w)
    np.testing.assert_allclose(gh, _fd(lambda v: f(v, w), h), rtol=1e-6)
    np.testing.assert_allclose(gw, _fd(lambda v: f(h, v), w), rtol=1e-6)

"""Issue 20 (lean20g): grad's reverse loop unpacks its items in its header, as a person writes
it: `for (a, b), x in zip(reversed(items), reversed(x_stack)):` (and `for a, b in
reversed(items):` with no stack), not `for item, x in zip(...):` followed by `a, b = item`
(ad/reverse.py _unpacked_target: the replayed iteration's first line unpacks the loop variable,
which no other line reads). transformer/stack_loops.py reads the header back as the pop loop it
stands for when the derivative is transformed again: its tuple target is the loop's own.

Every composition (hessian, jacfwd/jacrev of grad, grad of an item, jvp of grad, vmap/jit of
grad, grad to the 4th order) is checked against float64 central differences or a loop."""
import re

import numpy as np
import pytest

import secant
import secant.numpy as snp
from test_lean20c import fd_grad
from test_lean20y_reversed import _reloaded
from test_lean20y_reversed import test_gradients_and_second_order_match_differences as \
    second_order_checks
from test_lean20y_reversed import test_vmap_and_jit_of_grad_match_a_loop as vmap_jit_checks

RNG = np.random.default_rng(2020)
PAIRS = [(0.5, 1.0), (-1.1, 0.3), (0.7, -0.4), (0.2, 0.9)]
NESTED = [((0.5, 1.0), 0.2), ((-1.1, 0.3), -0.6), ((0.7, -0.4), 0.9)]


def pairs(x, n):
    """`for (a, b), x in zip(reversed(items), reversed(x_stack)):`."""
    for a, b in PAIRS[:n]:
        x = snp.cos(x * a) * b + x
    return snp.sum(x * x)


def nested(x, n):
    """A nested target: `for ((a, b), c), x in zip(...)`."""
    for (a, b), c in NESTED[:n]:
        x = snp.sin(x * a + c) * b + x
    return snp.sum(x * x)


def enumerated(x, n):
    """enumerate's pairs: `for (i, (a, b)), x in zip(...)`."""
    for i, (a, b) in enumerate(PAIRS[:n]):
        x = snp.cos(x * a) * (b + i) * 0.5 + x
    return snp.sum(x * x)


def zipped(x, n):
    """zip's pairs, one list of them read from a parameter's rows."""
    for y, a in zip(PAIRS[:n], [0.5, -0.3, 1.2, 0.4]):
        x = snp.sin(x * y[0]) + a * x
    return snp.sum(x)


def no_stack(x, n):
    """Nothing carried is replayed: `for a, b in reversed(items):`."""
    acc = 0.0
    for a, b in PAIRS[:n]:
        acc = acc + a * snp.sin(x * b)
    return snp.sum(acc * acc)


def item_read(x, n):
    """The loop variable read past its unpacking: the unpacking stays a line of its own."""
    for p in PAIRS[:n]:
        a, b = p
        x = snp.sin(x * a) * p[1] + x * b
    return snp.sum(x * x)


def two_stacks(x, n):
    """Two carries saved and a tuple target: three lists zipped."""
    y = snp.cos(x)
    for a, b in PAIRS[:n]:
        x, y = snp.sin(x * y * a) + x, snp.cos(x + y) * b
    return snp.sum(x * y)


PROGRAMS = [pairs, nested, enumerated, zipped, no_stack, item_read, two_stacks]


def _source(f):
    return secant.source(secant.grad(f))


def test_reverse_loops_unpack_in_their_headers():
    assert "    for (a, b), x in zip(reversed(items), reversed(x_stack)):\n" \
        "        x_1_times_a = " in _source(pairs), _source(pairs)
    assert "    for ((a, b), c), x in zip(reversed(items), reversed(x_stack)):" in \
        _source(nested)
    assert "    for (i, (a, b)), x in zip(reversed(items), reversed(x_stack)):" in \
        _source(enumerated)
    assert "    for (y, a), x in zip(reversed(items), reversed(x_stack)):" in _source(zipped)
    assert "    for a, b in reversed(items):\n" in _source(no_stack), _source(no_stack)
    assert re.search(r"    for \(a, b\), (x\w*), (y\w*) in zip\(reversed\(items\), "
                     r"reversed\(\1_stack\), reversed\(\2_stack\)\):", _source(two_stacks))
    for f in PROGRAMS:      # the reverse loop never unpacks an item in its body
        src = _source(f)
        reverse = src[src.index("# Grad of: for"):]
        assert not re.search(r"\n +[\w, ()]+ = item\n", reverse), (f.__name__, src)
        assert ".pop()" not in src, (f.__name__, src)


def test_an_item_read_past_its_unpacking_keeps_its_name():
    src = _source(item_read)
    assert "    for p, x in zip(reversed(items), reversed(x_stack)):\n        a, b = p\n" in \
        src, src


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_compositions_match_differences(x64, f):
    """grad, hessian, jacfwd(grad), jacrev(grad), grad of a gradient's item and jvp of grad,
    each against float64 central differences (lean20y's checks)."""
    second_order_checks(x64, f)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_and_jit_of_grad_match_a_loop(x64, f):
    """vmap(grad) against a loop over the examples, jit(grad) and jit(vmap(grad)) against
    eager (lean20y's checks)."""
    vmap_jit_checks(x64, f)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_iteration_counts(x64, n):
    """No iteration (empty lists), one, several: grad and hessian against differences."""
    x = np.array([0.3, -0.2, 0.5])
    for f in (pairs, two_stacks, no_stack):
        g = secant.grad(f)
        np.testing.assert_allclose(g(x, n), fd_grad(lambda v: f(v, n), x), rtol=1e-6,
                                   atol=1e-9)
        want = np.stack([fd_grad(lambda v: g(v, n)[i], x) for i in range(3)])
        np.testing.assert_allclose(secant.hessian(f)(x, n), want, rtol=1e-5, atol=1e-8)


def scalar_pairs(x):
    y = x * 0.3
    for a, b in PAIRS[:3]:
        x, y = snp.sin(x * y * a) + x * b, snp.cos(x) * y + b
    return x * y


def test_grad_to_the_fourth_order(x64):
    """grad of grad ... (4th order), each order against central differences of the one
    below: each order's reverse loop unpacks in its header, and is read back as pops."""
    x, eps = 0.4, 1e-5
    orders = [scalar_pairs]
    for _ in range(4):
        orders.append(secant.grad(orders[-1]))
    for k in range(1, 5):
        lower = orders[k - 1]
        want = (float(lower(x + eps)) - float(lower(x - eps))) / (2 * eps)
        np.testing.assert_allclose(float(orders[k](x)), want, rtol=1e-5, atol=1e-7,
                                   err_msg=f"order {k}")
    for k in (1, 2):
        assert re.search(r"for \(a, b\), \w+, \w+ in zip\(reversed\(items",
                         secant.source(orders[k])), secant.source(orders[k])
    np.testing.assert_allclose(float(secant.jit(orders[2])(x)), float(orders[2](x)),
                               rtol=1e-10)


def test_the_header_and_the_unpacking_line_agree(x64):
    """The derivative with its item unpacked in the body again, loaded as a derivative: the
    same hessian and vmap as the header's form."""
    g = secant.grad(pairs)
    head = "    for (a, b), x in zip(reversed(items), reversed(x_stack)):\n"
    body = "    for item, x in zip(reversed(items), reversed(x_stack)):\n        a, b = item\n"
    plain = _reloaded(g, head, body)
    x = RNG.normal(size=3) * 0.5
    np.testing.assert_allclose(plain(x, 3), g(x, 3), rtol=1e-12)
    np.testing.assert_allclose(secant.jacfwd(plain)(x, 3), secant.jacfwd(g)(x, 3), rtol=1e-12)
    xs = RNG.normal(size=(2, 3))
    np.testing.assert_allclose(secant.vmap(plain, in_axes=(0, None))(xs, 3),
                               secant.vmap(g, in_axes=(0, None))(xs, 3), rtol=1e-12)

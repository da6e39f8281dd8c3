"""Issue 20 (lean20r): grad's reverse loop of a Python for loop, or of any loop saving several
stacks, reads its stacks backwards in the loop's header (ad/reverse.py reversed_loop):

    for x in reversed(x_stack):                              (the loop variable not read)
    for i, x in zip(reversed(i_range), reversed(x_stack)):   (read: the loop's own iterable too)
    for x, y in zip(reversed(x_stack), reversed(y_stack)):   (several stacks, one per value)

in place of `for i in reversed(i_range):` / `for _ in range(len(x_stack)):` followed by one
`x = x_stack.pop()` per stack. One stack per saved value (not one stack of tuples): each push
and pop stays marked per value, so a transform of the derivative carries each value's tangent
and batch axis through its own stack (transformer/stack_loops.py reads the header back as those
pops); the forward loop's pushes are unchanged.

Every composition of the generated derivative (hessian, jacfwd/jacrev of grad, vmap/jit of
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
from user_programs.checks import turns

RNG = np.random.default_rng(2021)


def for_range(x, n):
    """The loop variable is not read by the reverse loop: `for x in reversed(x_stack):`."""
    for i in range(n):
        x = snp.sin(x) * 1.1
    return snp.sum(x * x)


def for_range_index(x, n):
    """The loop variable is read: `for i, x in zip(reversed(i_range), reversed(x_stack)):`."""
    for i in range(n):
        x = snp.tanh(x * (i + 1) * 0.5) + x
    return snp.sum(x * x)


def for_items(x, n):
    """A loop over a list of constants: its items list zipped with the stack."""
    for a in [0.5, -1.2, 0.8][:n]:
        x = snp.sin(x * a) + x * x * 0.1
    return snp.sum(x)


def for_pairs(x, n):
    """A tuple target over a list of constant pairs."""
    for a, b in [(0.5, 1.0), (-1.1, 0.3), (0.7, -0.4)][:n]:
        x = snp.cos(x * a) * b + x
    return snp.sum(x * x)


def while_two(x, n):
    """A while loop saving two stacks."""
    y = x * 0.5
    i = 0
    while i < n:
        x, y = snp.sin(x * y) + x, snp.cos(x + y)
        i = i + 1
    return snp.sum(x * y)


def for_two(x, n):
    """A for loop saving two stacks, its variable not read."""
    y = snp.cos(x)
    for i in range(n):
        x, y = snp.sin(x * y) + x, snp.cos(x + y) * 0.9
    return snp.sum(x * y)


def for_two_index(x, n):
    """A for loop saving two stacks, its variable read: three lists zipped."""
    y = snp.cos(x)
    for i in range(n):
        x, y = snp.sin(x * y * i) + x, snp.cos(x + y) * 0.9
    return snp.sum(x + y * y)


def for_in_for(x, n):
    """Nested for loops: the inner loop's stack is made in the outer body."""
    for j in range(n):
        for k in range(2):
            x = snp.sin(x) * 1.1 + 0.1 * k
        x = x * snp.cos(x)
    return snp.sum(x * x)


def while_in_for(x, n):
    """A while loop inside a for loop, each saving values."""
    y = snp.sin(x)
    for j in range(2):
        i = 0
        while i < n:
            x, y = snp.sin(x) * y, y + 0.1 * x
            i = i + 1
    return snp.sum(x * y)


def for_over_rows(x, n):
    """A loop over a parameter's rows: the index loop that reads them."""
    acc = snp.zeros(3)
    for r in x.reshape(3, 1):
        acc = snp.sin(acc + r * n) * 1.05
    return snp.sum(acc * acc)


def long_names(position, n):
    """Four lists with long names: the header goes on two rows."""
    velocity_component = position * 0.5
    acceleration_term = snp.cos(position)
    for step in range(n):
        position, velocity_component, acceleration_term = (
            position + 0.1 * velocity_component * step,
            velocity_component * snp.cos(acceleration_term), snp.sin(position) * acceleration_term)
    return snp.sum(position * velocity_component + acceleration_term)


PROGRAMS = [for_range, for_range_index, for_items, for_pairs, while_two, for_two,
            for_two_index, for_in_for, while_in_for, for_over_rows, long_names]
# each program under the second-order compositions or vmap/jit of grad in turn (both under
# HYPOTHESIS_PROFILE=thorough)
UNDER = turns(PROGRAMS, ["second_order", "vmap_jit"])


def _source(f):
    return secant.source(secant.grad(f))


def test_for_loop_reads_its_stack_backwards():
    src = _source(for_range)
    assert "for x in reversed(x_stack):" in src, src
    assert ".pop()" not in src and "i_range" not in src and "for i in range(n):" in src, src
    src = _source(for_range_index)
    assert "for i, x in zip(reversed(i_range), reversed(x_stack)):" in src, src
    assert ".pop()" not in src, src


def test_several_stacks_are_zipped():
    src = _source(while_two)        # (y is y_1: a name the loop carries from before it)
    assert re.search(r"\n    for x, (y\w*) in zip\(reversed\(x_stack\), reversed\(\1_stack\)\):",
                     src), src
    assert ".pop()" not in src and "range(len(" not in src, src
    src = _source(for_two)
    assert re.search(r"\n    for (x\w*), (y\w*) in zip\(reversed\(\1_stack\), "
                     r"reversed\(\2_stack\)\):", src), src
    src = _source(for_two_index)
    assert re.search(r"\n    for i, (x\w*), (y\w*) in zip\(reversed\(i_range\), "
                     r"reversed\(\1_stack\), reversed\(\2_stack\)\):", src), src
    for f in PROGRAMS:      # no pop loop is left in any of them
        assert ".pop()" not in _source(f), f.__name__


def _head(f):
    """The (first) reverse loop's header line in grad(f)'s source."""
    return next(ln for ln in _source(f).splitlines() if "in zip(reversed(" in ln)


def _fd_jacobian(g, x, n):
    return np.stack([fd_grad(lambda v: g(v, n)[i], x) for i in range(x.size)])


@pytest.mark.parametrize("f", UNDER["second_order"], ids=lambda f: f.__name__)
def test_second_order_compositions_match_differences(x64, f):
    """grad, hessian, jacfwd(grad), jacrev(grad), grad of a gradient's item and jvp of grad,
    each against float64 central differences (lean20y's checks)."""
    second_order_checks(x64, f)


@pytest.mark.parametrize("f", UNDER["vmap_jit"], ids=lambda f: f.__name__)
def test_vmap_and_jit_of_grad_match_a_loop(x64, f):
    """vmap(grad) against a loop over the examples, jit(grad) and jit(vmap(grad)) against
    eager (lean20y's checks)."""
    vmap_jit_checks(x64, f)


def scalar_for(x):
    y = x * 0.3
    for i in range(3):
        x, y = snp.sin(x * y) + x * 0.5 * i, snp.cos(x) * y + 0.2
    return x * y


def scalar_while(x):
    y = x * 0.3
    i = 0
    while i < 2:
        x, y = snp.sin(x + y) * x, y * snp.cos(x)
        i = i + 1
    return x + y * y


@pytest.mark.parametrize("f", [scalar_for, scalar_while], ids=lambda f: f.__name__)
def test_grad_to_the_fourth_order(x64, f):
    """grad of grad ... (4th order), each order against central differences of the one
    below (the reverse loop of a reverse loop of ...: each reads its stacks backwards)."""
    x, eps = 0.4, 1e-5
    orders = [f]
    for _ in range(4):
        orders.append(secant.grad(orders[-1]))
    for k in range(1, 5):
        lower = orders[k - 1]
        want = (float(lower(x + eps)) - float(lower(x - eps))) / (2 * eps)
        np.testing.assert_allclose(float(orders[k](x)), want, rtol=1e-5, atol=1e-7,
                                   err_msg=f"order {k}")
    assert "zip(reversed(" in secant.source(orders[2]), secant.source(orders[2])


@pytest.mark.parametrize("n", [0, 1, 4])
def test_iteration_counts(x64, n):
    """Zero iterations (empty stacks, an empty range), one, several: grad and hessian."""
    x = np.array([0.3, -0.2, 0.5])
    for f in (for_range_index, for_two_index, while_two):
        g = secant.grad(f)
        np.testing.assert_allclose(g(x, n), fd_grad(lambda v: f(v, n), x), rtol=1e-6,
                                   atol=1e-9)
        np.testing.assert_allclose(secant.hessian(f)(x, n), _fd_jacobian(g, x, n), rtol=1e-5,
                                   atol=1e-8)


def test_the_zipped_loop_and_its_pops_agree(x64):
    """The pop loop the zipped header stands for, loaded as a derivative: the same hessian
    and vmap."""
    g = secant.grad(for_two_index)
    head = _head(for_two_index)
    (x, y), = re.findall(r"for i, (\w+), (\w+) in", head)
    pops = _reloaded(g, head, f"    for i in reversed(i_range):\n        {x} = {x}_stack.pop()\n"
                              f"        {y} = {y}_stack.pop()")
    x = RNG.normal(size=3) * 0.5
    np.testing.assert_allclose(secant.jacfwd(pops)(x, 3), secant.jacfwd(g)(x, 3), rtol=1e-12)
    xs = RNG.normal(size=(2, 3))
    np.testing.assert_allclose(secant.vmap(pops, in_axes=(0, None))(xs, 3),
                               secant.vmap(g, in_axes=(0, None))(xs, 3), rtol=1e-12)


@pytest.mark.parametrize("head", [
    "for x, y in zip(x_stack[::-1], reversed(y_stack)):",
    "for x, y in zip(reversed(x_stack), y_stack):",
    "for x, y in zip(reversed(x_stack), reversed(y_stack), strict=True):",
    "for (x, y) in reversed(list(zip(x_stack, y_stack))):"])
def test_other_loops_over_several_stacks_are_refused(head):
    """Another loop over a derivative's stacks is refused naming a stack, not read as a loop
    over lists of constants."""
    old = _head(while_two).strip()
    y = re.findall(r"for x, (\w+) in", old)[0]
    bad = _reloaded(secant.grad(while_two), old, head.replace("y", y))
    x = RNG.normal(size=3) * 0.5
    with pytest.raises(secant.SecantError, match=r"loop stack \w+_stack"):
        secant.jacfwd(bad)(x, 3)
    with pytest.raises(secant.SecantError, match=r"loop stack \w+_stack"):
        secant.vmap(bad, in_axes=(0, None))(np.stack([x, x]), 3)


def test_user_zip_of_reversed_lists_is_a_plain_loop(x64):
    """A user's own `zip(reversed(xs), reversed(ys))` over lists appended in a loop is the
    user's loop (read as written), right under hessian and vmap(grad)."""
    def f(x, n):
        xs, ys = [], []
        for i in range(n):
            xs.append(x)
            ys.append(snp.cos(x))
            x = snp.sin(x) * 1.2
        acc = x
        for a, b in zip(reversed(xs), reversed(ys)):
            acc = acc * b + a * a
        return snp.sum(acc)
    x = RNG.normal(size=3) * 0.5
    g = secant.grad(f)
    np.testing.assert_allclose(g(x, 3), fd_grad(lambda v: f(v, 3), x), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(secant.hessian(f)(x, 3), _fd_jacobian(g, x, 3), rtol=1e-5,
                               atol=1e-8)
    xs = RNG.normal(size=(3, 3)) * 0.5
    np.testing.assert_allclose(secant.vmap(g, in_axes=(0, None))(xs, 3),
                               np.stack([g(r, 3) for r in xs]), rtol=1e-12)


def test_generated_reverse_loop_headers():
    """Every reverse loop in these derivatives reads its lists backwards in its header; a
    header past 90 columns continues its lists on rows aligned after `zip(` (or after a row
    ending `zip(`, eight columns in, where those would not fit)."""
    for f in PROGRAMS:
        src = _source(f)
        for head in re.findall(r"\n( *for [\w, ]+ in (?:zip\()?reversed\(.*?:)\n", src, re.S):
            rows = head.split("\n")
            assert all(len(r.strip()) <= 90 for r in rows), (f.__name__, head)
            assert re.fullmatch(r"\s*for [\w, ]+ in (zip\(\s*)?reversed\(\w+\)"
                                r"(,\s+reversed\(\w+\))*\)?:", head), (f.__name__, head)
            if len(rows) > 1:
                first = rows[0]
                column = len(first) - len(first.lstrip()) + 8 if first.endswith("zip(") else \
                    first.index("zip(") + 4
                assert all(r.index("reversed(") == column for r in rows[1:]), head
    src = _source(long_names)
    head = next(ln for ln in src.splitlines() if "for step," in ln)
    assert head.endswith(" in zip("), src

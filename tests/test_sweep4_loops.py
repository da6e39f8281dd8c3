"""Which names a block reads before it assigns them (normalize._first_reads), the question a
loop asks of the code after it and of its own body for every name: it was asked one name at a
time, a walk of the rest of the function per name, quadratic in a derivative's length
(hessian(grad(hessian(python_loop))) of the composition sweep spent ~3 of every 4 minutes
there and did not finish in 20; now ~3 minutes on a loaded machine, too long for `make test`:
the thorough sweep runs it). One walk now answers for all names; these pin its answers."""
import textwrap

import gast

from secant.transformer.normalize import _first_reads


def body(src):
    return gast.parse(textwrap.dedent(src)).body


def test_read_before_assigned_and_assigned_before_read():
    stmts = body("""
        a = b + 1
        c = 2
        d = c * a
        e += 1
    """)
    assert _first_reads(stmts, {"a", "b", "c", "d", "e", "z"}) == {"b", "e"}


def test_a_body_that_may_not_run_does_not_assign():
    stmts = body("""
        for i in range(n):
            a = 1
            t = t + i
        while w > 0:
            u = 1
        if k:
            v = 1
        else:
            v = 2
        r = a + u + i + v
    """)
    # the loop's own target counts as assigned in its body; after the loop it may be unbound;
    # v is assigned on both branches of the if/else, one of which runs: not read first
    assert _first_reads(stmts, {"a", "i", "n", "t", "w", "u", "k", "v", "r"}) == \
        {"a", "i", "n", "t", "w", "u", "k"}


def test_a_later_if_on_the_same_saved_test_sees_what_the_first_assigned():
    stmts = body("""
        if c:
            y = 1
        else:
            z = 1
        if c:
            r = y
        else:
            r = y + z
    """)
    assert _first_reads(stmts, {"c", "y", "z", "r"}) == {"c", "y"}
    reassigned = body("""
        if c:
            y = 1
        c = g
        if c:
            r = y
    """)
    assert _first_reads(reassigned, {"y"}) == {"y"}


def test_a_nested_function_parameter_is_not_a_read():
    stmts = body("""
        def h(p, q=q0):
            return p + s
        f = lambda p: p * m
    """)
    assert _first_reads(stmts, {"p", "q", "q0", "s", "m", "h"}) == {"q0", "s", "m"}

"""Loop programs that bench/perf19_loops.py times and tests/test_perf19e_while_stacks.py,
test_nested_loop_orders.py and test_perf19d_prune.py check (issues 15 and 19), written once so
that the figures and the tests are about the same programs. They live in a file because
secant's transforms read source from disk."""
import secant.numpy as snp
from secant import lax

N_LONG = 200


def counter_while(x):
    s = x
    i = 0
    while i < 5:
        s = snp.sin(s) * x + 0.1
        i += 1
    return s


def counter_while_long(x):
    s = x
    i = 0
    while i < N_LONG:
        s = snp.sin(s) * 0.9 + x * 0.1
        i += 1
    return s


def while_cubic(a):
    def body(c):
        i, x = c
        return i + 1, x - (x ** 3 - a) / (3 * x ** 2)
    return lax.while_loop(lambda c: c[0] < 6, body, (0, a))[1]


def nested_for(x):
    s = x
    for i in range(3):
        for j in range(2):
            s = snp.sin(s) * x
    return s


def for_in_while(x):
    s = x
    k = 0
    while k < 2:
        for j in range(2):
            s = snp.sin(s) * x + 0.1
        k += 1
    return s

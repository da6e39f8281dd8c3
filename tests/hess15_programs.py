"""Loops that carry integer counters and bool flags beside floats (hess15's sweep: the tangent of
an integer or bool value keeps its dtype through every loop form and every derivative order)."""
import secant.numpy as snp
from secant import lax


def counted_while(x):
    """A Python while with an int counter in its test and in the result."""
    v, n = x, 0
    while (snp.sum(v * v) < 3.0) & (n < 6):
        v = 1.3 * v + 0.2 * snp.cos(x)
        n = n + 1
    return snp.sum(v * v) * (n + 1)


def flag_break(x):
    """A bool flag set in the loop and a break."""
    v, hit = x, False
    for k in range(5):
        v = 1.2 * v + 0.3 * snp.sin(x)
        if snp.sum(v) > 1.5:
            hit = True
            break
    return snp.sum(v * x) + snp.where(hit, 1.0, 0.0) * snp.sum(x * x)


def skips(x):
    """A continue that skips the update on some iterations."""
    v = x
    for k in range(4):
        if snp.sum(v * v) > 2.0 + k:
            continue
        v = v * 1.25 + 0.1 * snp.cos(v)
    return snp.sum(v ** 3)


def early_return(x):
    """A return inside the loop."""
    v = x
    for k in range(6):
        v = 1.4 * v + 0.1 * snp.sin(x)
        if snp.sum(v * v) > 4.0:
            return snp.sum(v * snp.cos(x)) + k
    return snp.sum(v)


def while_in_for(x):
    """A while with a counter inside a for."""
    v, n = x, 0
    for k in range(2):
        while snp.sum(v * v) < 2.0 + k:
            v = 1.3 * v + 0.2 * snp.cos(x)
            n = n + 1
    return snp.sum(v * x) + 0.1 * n * snp.sum(x)


def where_counter(x):
    """An integer carry updated by where, read back as a float factor."""
    v, n = x, 0
    for k in range(4):
        v = snp.tanh(v) + 0.5 * x
        n = snp.where(snp.sum(v) > 0.8, n + 1, n)
    return snp.sum(v * v) * (1.0 + 0.25 * n)


def continue_return(x):
    """A while on a Python counter with a continue and a return inside."""
    v, n = x, 0
    while n < 6:
        n = n + 1
        v = 1.2 * v + 0.1 * snp.sin(x)
        if snp.sum(v) < 0.0:
            continue
        if snp.sum(v * v) > 3.0:
            return snp.sum(v * x) * n
    return snp.sum(v)


def lax_while(x):
    """lax.while_loop carrying (float, int counter, bool flag)."""
    def cond(c):
        v, n, done = c
        return (n < 8) & ~done

    def body(c):
        v, n, done = c
        v = 1.3 * v + 0.2 * snp.cos(v)
        return v, n + 1, snp.sum(v * v) > 3.0
    v, n, done = lax.while_loop(cond, body, (x, 0, False))
    return snp.sum(v * v) + n * snp.sum(x)


def lax_fori(x):
    """lax.fori_loop carrying an int counted by where and a bool flag."""
    def body(i, c):
        v, n, seen = c
        v = snp.sin(v) * 1.1 + 0.2 * x
        big = snp.sum(v) > 0.5
        return v, snp.where(big, n + i, n), seen | big
    v, n, seen = lax.fori_loop(0, 4, body, (x, 0, False))
    return snp.sum(v * v) * (1.0 + 0.1 * n) + snp.where(seen, 0.5, 0.0) * snp.sum(x)


def lax_scan(x):
    """lax.scan carrying an int and a bool beside a float; int ys."""
    def body(c, xi):
        v, n, flag = c
        v = v * snp.cos(xi) + xi
        up = snp.sum(v) > 0.0
        return (v, n + up.astype(int), flag ^ up), n
    (v, n, flag), ns = lax.scan(body, (x, 0, False), snp.stack([x, 0.5 * x, -x]))
    return snp.sum(v * v) + snp.sum(ns) * 0.01 * snp.sum(x) + flag * snp.sum(x ** 3)


def cond_ints(x):
    """lax.cond whose branches return a float beside an int and a bool."""
    def yes(v):
        return snp.sin(v), 3, True

    def no(v):
        return v * v, 1, False
    a, n, b = lax.cond(snp.sum(x) > 0.2, yes, no, x)
    return snp.sum(a) * n + snp.where(b, 2.0, 1.0) * snp.sum(x * a)


def switch_ints(x):
    """lax.switch whose branches return a float beside an int count."""
    branches = [lambda v: (v * 2.0, snp.int32(0)), lambda v: (snp.sin(v), snp.int32(1)),
                lambda v: (v ** 3, snp.int32(2))]
    i = snp.clip(snp.sum(x > 0), 0, 2)
    a, n = lax.switch(i, branches, x)
    return snp.sum(a * x) * (n + 1)


PROGRAMS = [counted_while, flag_break, skips, early_return, continue_return, while_in_for, where_counter,
            lax_while, lax_fori, lax_scan, cond_ints, switch_ints]

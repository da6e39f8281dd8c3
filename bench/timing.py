"""Shared by the benchmarks: a timeit-style timer and the optional jax comparison. Wall clock
by default; SECANT_BENCH_CPU=1: this process's CPU time, all its threads (PJRT's and XLA's
included), which a machine shared with other work disturbs far less."""
import os
import statistics
import time

CLOCK = time.process_time if os.environ.get("SECANT_BENCH_CPU") else time.perf_counter


def per_call_us(fn, rounds=7, min_round_s=0.05):
    """Median over `rounds` of the mean time per call, each round long enough to time reliably."""
    number = 1
    while _round(fn, number) < min_round_s:
        number *= 4
    return statistics.median(_round(fn, number) / number for _ in range(rounds)) * 1e6


def _round(fn, number):
    start = CLOCK()
    for _ in range(number):
        fn()
    return CLOCK() - start


def once_ms(fn):
    start = CLOCK()
    fn()
    return (CLOCK() - start) * 1e3


def import_jax():
    """(jax, jax.numpy), or (None, None): jax is a benchmark-only dependency."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None, None
    return jax, jnp


def report(label, secant_value, jax_value=None, unit="µs"):
    line = f"  {label:<42} secant {secant_value:10.2f} {unit}"
    if jax_value is not None:
        line += f"   jax {jax_value:10.2f} {unit}   secant/jax {secant_value / jax_value:5.2f}x"
    print(line)


def interleaved_us(fns, rounds=9, min_round_s=0.02):
    """Per-call µs of each fn: the median over `rounds`, the rounds interleaved (fn1, fn2, ...,
    fn1, fn2, ...) so that each candidate sees the same load on a shared, noisy machine; ratios
    between candidates are what to read."""
    numbers = []
    for fn in fns:
        number = 1
        while _round(fn, number) < min_round_s:
            number *= 2
        numbers.append(number)
    times = [[] for _ in fns]
    for _ in range(rounds):
        for i, (fn, number) in enumerate(zip(fns, numbers)):
            times[i].append(_round(fn, number) / number)
    return [statistics.median(t) * 1e6 for t in times]

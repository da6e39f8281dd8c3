"""Issue 20, loops: what the reverse pass of a 10,000-step accumulator loop keeps. For a Python
`for`, lax.fori_loop and lax.scan: the tracemalloc peak of the eager gradient (the values saved
for the reverse pass dominate it) and the StableHLO op count of jit(grad) (`jit(f).lower(x)
.as_text()`, counting lines that define or run an op).

    .venv/bin/python bench/loop_saving.py
"""
import gc
import re
import tracemalloc

import numpy as np

import secant
import secant.numpy as snp
from secant import lax
from lean import count_statements

N = 10_000


def python_for(x):
    acc = 0.0
    for i in range(N):
        acc = acc + snp.sin(x * i)
    return acc


def fori(x):
    return lax.fori_loop(0, N, lambda i, acc: acc + snp.sin(x * i), 0.0 * x)


def scan(x):
    acc, _ = lax.scan(lambda acc, i: (acc + snp.sin(x * i), None), 0.0 * x,
                      snp.arange(N, dtype=snp.float32))
    return acc


def python_rows(x):
    """A loop over an array's rows whose variable is read after the loop (carried: the
    reverse loop gives the after-loop cotangent to the last row alone, zeros to the others)."""
    ws = snp.outer(snp.arange(ROWS, dtype=snp.float32) / ROWS, x)
    v = x
    for w in ws:
        v = snp.sin(w * v)
    return snp.sum(v * w)


def eager_peak_kib(f, x):
    g = secant.grad(f)
    gc.collect()                # (before the warm call: it empties the free lists that call
    g(x)                        # fills again; bench/memory.py) generated and warmed up outside
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    g(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / 1024


_OP = re.compile(r"^\s*(%\S+(, %\S+)* = )?\"?[a-z_]+\.[a-z_.]+\"?[ (]")


def stablehlo_ops(f, x):
    text = secant.jit(secant.grad(f)).lower(x).as_text()
    return sum(1 for line in text.splitlines() if _OP.match(line)
               and not line.strip().startswith(("func.func", "module")))


# measured with this script at da976a4, before transformer/dataflow.py: every iteration's carry
# stacked (Python for: acc_1 pushed; fori/scan: the carries stacked and shifted)
BEFORE = {"python for": (2000.3, 50), "fori_loop": (8314.5, 54), "scan": (8861.4, 51)}
ROWS, ROWS_BEFORE = 1000, (16104.2, 27)   # (measured at shape20o before its change)


def main():
    x = np.float32(0.3)
    print(f"{N}-step accumulator loop: acc = acc + sin(x * i)")
    print(f"{'loop':<12}{'eager grad peak (KiB)':>30}{'jit(grad) StableHLO ops':>28}")
    print(f"{'':<12}{'before':>15}{'now':>15}{'before':>14}{'now':>14}")
    for name, f in (("python for", python_for), ("fori_loop", fori), ("scan", scan)):
        kib, ops = BEFORE[name]
        print(f"{name:<12}{kib:>15.1f}{eager_peak_kib(f, x):>15.1f}{ops:>14}"
              f"{stablehlo_ops(f, x):>14}")
    # before 20o: the loop variable stacked every iteration, only to shape its zero cotangent
    print(f"\n{ROWS}-row loop over snp.outer(arange({ROWS}) / {ROWS}, x), x 1,000 float32s, "
          "w read after it")
    print(f"{'loop':<12}{'eager grad peak (KiB)':>30}{'grad statements':>28}")
    print(f"{'':<12}{'before':>15}{'now':>15}{'before':>14}{'now':>14}")
    rows = np.linspace(-1.0, 1.0, 1000, dtype=np.float32)
    kib, statements = ROWS_BEFORE
    now = count_statements(secant.source(secant.grad(python_rows)))
    print(f"{'rows':<12}{kib:>15.1f}{eager_peak_kib(python_rows, rows):>15.1f}{statements:>14}"
          f"{now:>14}")


if __name__ == "__main__":
    main()

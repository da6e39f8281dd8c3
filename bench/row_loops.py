"""Issue 20, row loops: the eager gradient of a Python loop over the rows of x, against the
hand-written NumPy gradient (the same loop, one row's derivative per iteration written into a
preallocated array). Three forms, for n = 1,000 and 10,000 rows of 16 float32s:

    read:  for i in range(x.shape[0]): total += sum(tanh(x[i]) * w)
    rows:  for row in x:               total += sum(tanh(row) * w)    (x a list or an array)
    write: for i in range(x.shape[0]): out = out.at[i].set(tanh(x[i]) * w); sum(out ** 2 * v)

Wall time, CPU time (the process's: wall times are inflated by load on a shared machine) and
tracemalloc peak of one warm call.

    .venv/bin/python bench/row_loops.py [n ...] [--forms read,rows,write]

Before ad/reverse.py _RowAdds each reverse iteration added its row's cotangent by
`x_bar = x_bar.at[i].add(x_item_bar)` (`add_at(x_bar, i, row_bar)` for `for row in x`): a copy
of x_bar per row, quadratic; the write form also zeroed out_bar's row by a copy per row and
numbered the updates by a scatter over out's shape (at_set_won). The rows are now gathered in a
list and added after the loop in one scatter (ad/helpers.py add_rows), the written rows zeroed
after it (zero_rows). That list held every row's cotangent at once: peak memory 7-11 times the
hand-written gradient's at 10,000 rows (11-15 times at 1,000; measured at cb0eac31: read 5.13
MiB, rows 4.52, write 6.59 at 10,000 rows). The reverse loop now runs over row_chunks of its
range (n/32 rows, 32 at least), each chunk's rows added after it (issue 20, rows20s). `rows()`
gives (form, n, secant s, secant CPU s, secant peak MiB,
by hand s, by hand CPU s, by hand peak MiB) per form and n."""
import gc
import os
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import secant                       # noqa: E402
import secant.numpy as snp          # noqa: E402

D = 16
W = np.linspace(0.1, 1.0, D).astype(np.float32)
V = np.linspace(-1.0, 1.0, D).astype(np.float32)


def row_sum(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + snp.sum(snp.tanh(x[i]) * W)
    return total


def over_rows(x):
    total = 0.0
    for row in x:
        total = total + snp.sum(snp.tanh(row) * W)
    return total


def row_sum_grad_by_hand(x):
    g = np.empty_like(x)
    for i in range(x.shape[0]):
        t = np.tanh(x[i])
        g[i] = (1 - t * t) * W
    return g


def row_set(x):
    out = snp.zeros_like(x)
    for i in range(x.shape[0]):
        out = out.at[i].set(snp.tanh(x[i]) * W)
    return snp.sum(out ** 2 * V)


def row_set_grad_by_hand(x):
    g = np.empty_like(x)
    for i in range(x.shape[0]):
        t = np.tanh(x[i])
        g[i] = 2 * t * W * W * V * (1 - t * t)
    return g


FORMS = {"read": (row_sum, row_sum_grad_by_hand), "rows": (over_rows, row_sum_grad_by_hand),
         "write": (row_set, row_set_grad_by_hand)}

# measured with this script on the shared 2-core development machine under load (wall s, CPU s,
# peak MiB of secant; the hand-written gradient's alongside in each run): "read" at f31368d9
# (before _RowAdds, wall and peak only), "rows" and "write" at a5a50a63 (before rows20r)
BEFORE = {("read", 1000): (9.547, None, 0.36), ("read", 10000): (126.590, None, 1.46),
          ("rows", 1000): (38.400, 1.626, 0.36), ("rows", 10000): (371.256, 16.811, 1.46),
          ("write", 1000): (96.306, 4.529, 1.22), ("write", 10000): (473.609, 46.983, 10.09)}


def measure(fn, x):
    """(seconds, CPU seconds, peak MiB above the start) of one call of fn(x), after a warm
    call."""
    fn(x)
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    start, cpu = time.perf_counter(), time.process_time()
    fn(x)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, cpu, (peak - base) / 2 ** 20


def rows(sizes=(1000, 10000), forms=tuple(FORMS)):
    out = []
    for form in forms:
        f, by_hand = FORMS[form]
        g = secant.grad(f)
        for n in sizes:
            x = np.random.default_rng(0).normal(size=(n, D)).astype(np.float32)
            np.testing.assert_allclose(np.asarray(g(x)), by_hand(x), rtol=1e-4, atol=1e-6)
            out.append((form, n) + measure(g, x) + measure(by_hand, x))
    return out


def main(sizes=(1000, 10000), forms=tuple(FORMS)):
    print(f"eager grad of a row loop, x of n rows of {D} float32s (CPU s: the process's)")
    print(f"{'form':>6}{'n':>7}{'secant s':>10}{'CPU s':>8}{'peak MiB':>10}{'by hand s':>11}"
          f"{'CPU s':>8}{'peak MiB':>10}{'CPU x':>7}{'peak x':>8}   before: secant s, CPU s, MiB")
    for form, n, s, s_cpu, s_mib, h, h_cpu, h_mib in rows(sizes, forms):
        line = f"{form:>6}{n:>7}{s:>10.3f}{s_cpu:>8.3f}{s_mib:>10.2f}{h:>11.4f}{h_cpu:>8.4f}" \
               f"{h_mib:>10.2f}{s_cpu / max(h_cpu, 1e-9):>7.1f}{s_mib / h_mib:>8.1f}"
        if (form, n) in BEFORE:
            b = BEFORE[form, n]
            line += "   " + ", ".join("-" if v is None else f"{v:.3f}" for v in b)
        print(line)


if __name__ == "__main__":
    args = sys.argv[1:]
    forms = tuple(FORMS)
    if "--forms" in args:
        k = args.index("--forms")
        forms = tuple(args[k + 1].split(","))
        del args[k:k + 2]
    main(tuple(int(a) for a in args) or (1000, 10000), forms)

"""Issue 20, row loops: the eager gradient of a Python loop that reads one row of x per
iteration, against the hand-written NumPy gradient (the same loop, one row's derivative per
iteration written into a preallocated array). For n = 1,000 and 10,000 rows of 16 float32s:
wall time and tracemalloc peak of one warm call.

    .venv/bin/python bench/row_loops.py [n ...]

Before ad/reverse.py _RowAdds the reverse loop added each row's cotangent by
`x_bar = x_bar.at[i].add(x_item_bar)`, a copy of x_bar per row (quadratic); the rows are now
gathered in a list and added after the loop in one scatter (ad/helpers.py add_rows).
`rows()` gives (n, secant s, secant peak MiB, by hand s, by hand peak MiB) per n."""
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


def row_sum(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + snp.sum(snp.tanh(x[i]) * W)
    return total


def row_sum_grad_by_hand(x):
    g = np.empty_like(x)
    for i in range(x.shape[0]):
        t = np.tanh(x[i])
        g[i] = (1 - t * t) * W
    return g


# measured with this script at f31368d9 (before _RowAdds), on the shared 2-core development
# machine under load: n -> (secant s, peak MiB, by hand s, peak MiB) of one run; the issue
# measured > 600 s for 10,000 rows of another loop
BEFORE = {1000: (9.547, 0.36, 0.0479, 0.06), 10000: (126.590, 1.46, 1.0717, 0.61)}


def measure(fn, x):
    """(seconds, peak MiB above the start) of one call of fn(x), after a warm call."""
    fn(x)
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    fn(x)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, (peak - base) / 2 ** 20


def rows(sizes=(1000, 10000)):
    out = []
    g = secant.grad(row_sum)
    for n in sizes:
        x = np.random.default_rng(0).normal(size=(n, D)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(g(x)), row_sum_grad_by_hand(x), rtol=1e-5,
                                   atol=1e-6)
        s, s_mib = measure(g, x)
        h, h_mib = measure(row_sum_grad_by_hand, x)
        out.append((n, s, s_mib, h, h_mib))
    return out


def main(sizes=(1000, 10000)):
    print(f"eager grad of a row loop: total += sum(tanh(x[i]) * w), x of n rows of {D} float32s")
    print(f"{'':>7}{'now':>49}{'before _RowAdds (its own run)':>40}")
    head = f"{'secant s':>11}{'peak MiB':>10}{'by hand s':>11}{'peak MiB':>10}{'time x':>8}" \
           f"{'peak x':>8}"
    print(f"{'n':>7}{head}{head}")
    for n, s, s_mib, h, h_mib in rows(sizes):
        line = f"{n:>7}{s:>11.3f}{s_mib:>10.2f}{h:>11.4f}{h_mib:>10.2f}{s / h:>8.1f}" \
               f"{s_mib / h_mib:>8.1f}"
        if n in BEFORE:
            b_s, b_mib, bh, bh_mib = BEFORE[n]
            line += f"{b_s:>11.3f}{b_mib:>10.2f}{bh:>11.4f}{bh_mib:>10.2f}{b_s / bh:>8.1f}" \
                    f"{b_mib / bh_mib:>8.1f}"
        print(line)


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (1000, 10000))

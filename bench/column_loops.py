"""Issue 20, column loops: the eager gradient of a Python loop over the columns of x (16 rows,
n columns of float32s), against the hand-written NumPy gradient:

    read:  for j in range(x.shape[1]): total += sum(tanh(x[:, j]) * w)
    write: for j in range(x.shape[1]): out = out.at[:, j].set(tanh(x[:, j]) * w); sum(out ** 2)

Before rows20s each reverse iteration scattered its column's cotangent into the whole x_bar
(`x_bar.at[:, j].add(...)`), zeroed out_bar's column by a copy (`out_2_bar.at[:, j].set(0)`),
and the read form stacked `total` once a column (for its shape: dataflow.reads read `:, j` as
reading anything). The columns are now added after each chunk of the reverse loop as the rows
are (ad/reverse.py _RowAdds, ad/helpers.py add_rows(..., axis=1)).

    .venv/bin/python bench/column_loops.py [n ...]

CPU seconds (the process's; wall times are inflated by load on a shared machine) and
tracemalloc peak of one warm call."""
import gc
import sys
import time
import tracemalloc

import numpy as np

import secant
import secant.numpy as snp

R = 16
W = np.linspace(0.1, 1.0, R).astype(np.float32)


def column_sum(x):
    total = 0.0
    for j in range(x.shape[1]):
        total = total + snp.sum(snp.tanh(x[:, j]) * W)
    return total


def column_sum_grad_by_hand(x):
    g = np.empty_like(x)
    for j in range(x.shape[1]):
        g[:, j] = (1 - np.tanh(x[:, j]) ** 2) * W
    return g


def column_set(x):
    out = snp.zeros_like(x)
    for j in range(x.shape[1]):
        out = out.at[:, j].set(snp.tanh(x[:, j]) * W)
    return snp.sum(out ** 2)


def column_set_grad_by_hand(x):
    g = np.empty_like(x)
    for j in range(x.shape[1]):
        t = np.tanh(x[:, j])
        g[:, j] = 2 * t * W * W * (1 - t * t)
    return g


FORMS = {"read": (column_sum, column_sum_grad_by_hand),
         "write": (column_set, column_set_grad_by_hand)}
# measured with this script's functions at cb0eac31 (before rows20s) on the shared development
# machine: (CPU s, peak MiB) of secant's gradient
BEFORE = {("read", 500): (0.797, 0.33), ("read", 2000): (3.270, 0.73),
          ("write", 500): (1.979, 0.40), ("write", 2000): (7.932, 0.85)}


def measure(fn, x):
    """(CPU seconds, peak MiB above the start) of one call of fn(x), after a warm call."""
    fn(x)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    cpu = time.process_time()
    fn(x)
    cpu = time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return cpu, (peak - base) / 2 ** 20


def main(sizes=(500, 2000)):
    print(f"eager grad of a column loop, x of {R} rows and n columns of float32s")
    print(f"{'form':>6}{'n':>6}{'CPU s':>8}{'peak MiB':>10}{'hand CPU s':>12}{'peak MiB':>10}"
          f"   before: CPU s, MiB")
    for form, (f, by_hand) in FORMS.items():
        g = secant.grad(f)
        for n in sizes:
            x = np.random.default_rng(0).normal(size=(R, n)).astype(np.float32)
            np.testing.assert_allclose(np.asarray(g(x)), by_hand(x), rtol=1e-4, atol=1e-6)
            (c, p), (hc, hp) = measure(g, x), measure(by_hand, x)
            line = f"{form:>6}{n:>6}{c:>8.3f}{p:>10.2f}{hc:>12.4f}{hp:>10.2f}"
            if (form, n) in BEFORE:
                line += "   " + ", ".join(f"{v:.3f}" for v in BEFORE[form, n])
            print(line)


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (500, 2000))

"""Transformation time of grad against function size (issue 19: linear; a 1,000-statement
function's grad transformed in under 1 s). Straight-line functions of 100, 300 and 1000
statements (bench/grad.py's generator), each run on a freshly loaded function, so that every
step (desugaring included, which caches per function) is timed: the median of a few runs; the
growth ratio compares seconds per statement at 1000 and at 100 (1.0: linear). Then the same
statements in loops of 10, and loop nests of growing depth (seconds per level: linear in the
depth would keep it flat; each level's fixpoints once walked every inner level again, 2**depth).

    .venv/bin/python bench/transform_time.py
    SECANT_BENCH_CPU=1 .venv/bin/python bench/transform_time.py   # CPU time (a loaded host)"""
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import load_source, straight_line_source   # noqa: E402
from secant import transforms                         # noqa: E402

SIZES = ((100, 5), (300, 3), (1000, 3))
# wall clock by default; SECANT_BENCH_CPU=1: this process's CPU time (a machine shared by many)
CLOCK = time.process_time if os.environ.get("SECANT_BENCH_CPU") else time.perf_counter


def first_transform_s(n, repeat, tmpdir, source=straight_line_source):
    """Median seconds of transforms.generate(grad) of a new function `source(n)`."""
    text, times = source(n), []
    for r in range(repeat):
        fn = load_source(text, "f", tmpdir, f"{source.__name__}_{n}_{r}")
        start = CLOCK()
        transforms.generate(fn, (0, 1), "grad")
        times.append(CLOCK() - start)
        transforms._generated.clear()
    return statistics.median(times)


def measure(sizes=SIZES, source=straight_line_source):
    """[(size, seconds)] for grad's transformation of each function `source(size)` writes."""
    with tempfile.TemporaryDirectory(prefix="secant_bench_transform_") as tmpdir:
        return [(n, first_transform_s(n, repeat, tmpdir, source)) for n, repeat in sizes]


def loop_nest_source(depth):
    """def f(x, y): `depth` nested for loops, each level with an accumulator of its own that
    its loop makes active (the activity and liveness fixpoints of every level: issue 19)."""
    lines = ["import secant.numpy as snp", "", "", "def f(x, y):", "    a = x"]
    ind = "    "
    for d in range(depth):
        lines += [f"{ind}s{d} = 0.0", f"{ind}for i{d} in range(2):"]
        ind += "    "
        lines.append(f"{ind}s{d} = s{d} + snp.sin(a)")
    lines.append(f"{ind}a = a * y")
    lines.append("    return snp.sum(a + " + " + ".join(f"s{d}" for d in range(depth)) + ")")
    return "\n".join(lines) + "\n"


def loops_in_a_row_source(n, per=10):
    """def f(x, y): n statements (bench/grad.py's), `per` to a for loop, the loops in a row."""
    lines = straight_line_source(n).splitlines()
    head, body, ret = lines[:4], lines[4:-1], lines[-1]
    out = list(head)
    for k in range(0, len(body), per):
        out.append("    for _ in range(2):")
        out += ["    " + ln for ln in body[k:k + per]]
    return "\n".join(out + [ret]) + "\n"


def rows(results=None):
    """Summary rows for run_all: the 1,000-statement grad against its 1 s budget, and the
    seconds per statement at 1000 against those at 100 (linear: 1.0; the target allows 1.2)."""
    results = results or measure(((100, 3), (1000, 3)))
    (n0, s0), (n1, s1) = results[0], results[-1]
    (d0, t0), (d1, t1) = measure(((4, 3), (12, 3)), loop_nest_source)
    ((m, u),) = measure(((1000, 1),), loops_in_a_row_source)
    return [(f"transform, grad of {n1} statements", s1, "budget", 1.0, 1.0),
            (f"transform per statement, {n1} vs {n0}", s1 / n1, f"{n0} statements", s0 / n0,
             1.2),
            (f"transform, grad of {m} statements in {m // 10} loops", u, "budget", 1.0, 1.0),
            (f"transform per loop level, nest of {d1} vs {d0}", t1 / d1, f"nest of {d0}",
             t0 / d0, 1.2)]


def main():
    clock = "CPU time" if CLOCK is time.process_time else "wall clock"
    print(f"transform time: grad of new straight-line functions (generate(), median, {clock})")
    rows = measure()
    for n, s in rows:
        print(f"  {n:5d} statements  {s:8.3f} s   {s / n * 1e6:8.1f} µs/statement")
    (n0, s0), (n1, s1) = rows[0], rows[-1]
    print(f"  growth ratio (s/statement at {n1} over at {n0}): {(s1 / n1) / (s0 / n0):.2f}   "
          f"target: ~1 (linear), {n1} statements < 1 s: {'ok' if s1 < 1 else 'MISSED'}")
    print("  the same statements, 10 to a for loop, the loops in a row:")
    for n, s in measure(((100, 3), (300, 3), (1000, 1)), loops_in_a_row_source):
        print(f"  {n:5d} statements  {s:8.3f} s   {s / n * 1e6:8.1f} µs/statement")
    print("  nested loops, an accumulator per level (depth = loops nested):")
    for d, s in measure(((2, 3), (4, 3), (8, 3), (12, 3), (16, 1)), loop_nest_source):
        print(f"  depth {d:3d}         {s:8.3f} s   {s / d * 1e3:8.1f} ms/level")


if __name__ == "__main__":
    main()

"""Transformation time of grad against function size (issue 19: linear; a 1,000-statement
function's grad transformed in under 1 s). Straight-line functions of 100, 300 and 1000
statements (bench/grad.py's generator), each run on a freshly loaded function, so that every
step (desugaring included, which caches per function) is timed: the median of a few runs; the
growth ratio compares seconds per statement at 1000 and at 100 (1.0: linear).

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


def first_transform_s(n, repeat, tmpdir):
    """Median seconds of transforms.generate(grad) of a new n-statement function."""
    source, times = straight_line_source(n), []
    for r in range(repeat):
        fn = load_source(source, "f", tmpdir, f"straight_{n}_{r}")
        start = CLOCK()
        transforms.generate(fn, (0, 1), "grad")
        times.append(CLOCK() - start)
        transforms._generated.clear()
    return statistics.median(times)


def measure(sizes=SIZES):
    """[(statements, seconds)] for grad's transformation of each straight-line function."""
    with tempfile.TemporaryDirectory(prefix="secant_bench_transform_") as tmpdir:
        return [(n, first_transform_s(n, repeat, tmpdir)) for n, repeat in sizes]


def rows(results=None):
    """Summary rows for run_all: the 1,000-statement grad against its 1 s budget, and the
    seconds per statement at 1000 against those at 100 (linear: 1.0; the target allows 1.2)."""
    results = results or measure(((100, 3), (1000, 3)))
    (n0, s0), (n1, s1) = results[0], results[-1]
    return [(f"transform, grad of {n1} statements", s1, "budget", 1.0, 1.0),
            (f"transform per statement, {n1} vs {n0}", s1 / n1, f"{n0} statements", s0 / n0,
             1.2)]


def main():
    clock = "CPU time" if CLOCK is time.process_time else "wall clock"
    print(f"transform time: grad of new straight-line functions (generate(), median, {clock})")
    rows = measure()
    for n, s in rows:
        print(f"  {n:5d} statements  {s:8.3f} s   {s / n * 1e6:8.1f} µs/statement")
    (n0, s0), (n1, s1) = rows[0], rows[-1]
    print(f"  growth ratio (s/statement at {n1} over at {n0}): {(s1 / n1) / (s0 / n0):.2f}   "
          f"target: ~1 (linear), {n1} statements < 1 s: {'ok' if s1 < 1 else 'MISSED'}")


if __name__ == "__main__":
    main()

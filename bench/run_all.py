"""Runs every benchmark in one process (`make bench` or `.venv/bin/python bench/run_all.py`),
then prints issue 19's summary: one table of every figure with its anchor and their ratio.
`--summary` prints the summary table alone (it runs only the benchmarks it needs).

jax (and autograd) are optional: without them the anchor columns of their rows stay empty."""
import importlib.util
import os
import sys

import checkpoint
import compile_cache
import control_flow
import dispatch
import eager
import first_call
import fresh_closures
import grad
import jacobians
import memory
import mlp
import pmap
import prng
import transform_time
import vmap


def eager_rows():
    """bench/eager_summary.py's rows() (issue 19's eager figures), when that file exists."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eager_summary.py")
    if not os.path.exists(path):
        return []
    spec = importlib.util.spec_from_file_location("eager_summary", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return list(mod.rows())


def summary_rows(dispatch_results=None):
    """(name, secant s, anchor name, anchor s, target ratio) for every issue-19 figure."""
    return (first_call.rows() + transform_time.rows() + compile_cache.rows()
            + dispatch.rows(dispatch_results) + fresh_closures.rows() + eager_rows())


def _fmt(seconds):
    if seconds is None:
        return "-"
    if seconds >= 0.1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-4:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} µs"


def print_summary(rows):
    head = ("figure", "secant", "anchor", "ratio", "target")
    table = []
    for name, ours, anchor_name, anchor, target in rows:
        ratio = f"{ours / anchor:.2f}x" if anchor else "-"
        met = "" if not anchor or target is None else (" ok" if ours / anchor <= target
                                                       else " MISSED")
        table.append((name, _fmt(ours), f"{anchor_name} {_fmt(anchor)}" if anchor_name else "-",
                      ratio + met, f"<= {target:.2f}x" if target is not None else "-"))
    widths = [max(len(r[i]) for r in table + [head]) for i in range(5)]
    print("issue 19 summary (ratio = secant / anchor)")
    for r in [head] + table:
        print("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))))


if __name__ == "__main__":
    dispatch_results = None
    if "--summary" not in sys.argv[1:]:
        for bench in (dispatch, mlp, eager, grad, control_flow, jacobians, prng, vmap, pmap,
                      checkpoint, fresh_closures, memory):
            out = bench.main()
            if bench is dispatch:
                dispatch_results = out
            print()
    print_summary(summary_rows(dispatch_results))

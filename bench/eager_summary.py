"""Issue 19's eager targets in one table: each row times secant against its anchor in one process
(interleaved rounds, best round) and gives the ratio next to the target.

    .venv/bin/python bench/eager_summary.py
    PYTHONPATH=/tmp/benchpkgs .venv/bin/python bench/eager_summary.py     # with autograd rows
    SECANT_BENCH_CPU=1 OPENBLAS_NUM_THREADS=1 ...    # CPU time instead of wall clock (loaded host)

`rows()` returns the rows as (name, secant_seconds, anchor_name, anchor_seconds, target_ratio);
a row meets its target when secant_seconds / anchor_seconds <= target_ratio (the issue's "3x
faster than autograd" is target_ratio 1/3). autograd is a benchmark-only dependency: without it
its rows are left out."""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import secant                                   # noqa: E402
import secant.numpy as snp                      # noqa: E402
import grad_programs as progs                   # noqa: E402
from grad import compare_us, import_autograd, mlp_data   # noqa: E402



def compare_cpu_us(fns, rounds=15, min_round_s=0.02):
    """bench/grad.py's compare_us (interleaved rounds, best round) on this process's CPU time:
    on a machine shared by many, wall-clock rounds measure the others' load as much as the
    code (BLAS threads count their CPU time too: run with OPENBLAS_NUM_THREADS=1)."""
    numbers = []
    for fn in fns:
        number = 1
        while _cpu_round_s(fn, number) < min_round_s:
            number *= 2
        numbers.append(number)
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, (fn, number) in enumerate(zip(fns, numbers)):
            best[i] = min(best[i], _cpu_round_s(fn, number) / number)
    return [b * 1e6 for b in best]


def _cpu_round_s(fn, number):
    start = time.process_time()
    for _ in range(number):
        fn()
    return time.process_time() - start


# wall clock by default; SECANT_BENCH_CPU=1: this process's CPU time (a loaded machine)
TIMER = compare_cpu_us if os.environ.get("SECANT_BENCH_CPU") else compare_us


def _pair(name, secant_fn, anchor_name, anchor_fn, target, rounds=15):
    s_us, a_us = TIMER([secant_fn, anchor_fn], rounds=rounds)
    return (name, s_us * 1e-6, anchor_name, a_us * 1e-6, target)


def _sin_rows():
    x_np = np.linspace(-3, 3, 1000, dtype=np.float32)
    x = snp.asarray(x_np)
    s_np = np.float32(0.5)
    s = snp.asarray(s_np)
    return [_pair("snp.sin f32[1000]", lambda: snp.sin(x), "np.sin", lambda: np.sin(x_np), 1.5),
            _pair("snp.sin f32[] scalar", lambda: snp.sin(s), "np.sin", lambda: np.sin(s_np), 3.0)]


def _chain_rows():
    g = secant.grad(progs.sin_chain)
    gv = secant.grad(progs.sin_chain_sum)
    autograd, anp = import_autograd()
    out = []
    # float32 throughout: what secant computes without enable_x64 (anchors at the same precision)
    for label, x, grad_fn in (("scalar", np.float32(0.5), g),
                              ("f32[1000]", np.linspace(-1, 1, 1000, dtype=np.float32), gv)):
        want = progs.sin_chain_grad_numpy(np.asarray(x, np.float64))
        np.testing.assert_allclose(np.asarray(grad_fn(x)), want, rtol=1e-4)
        out.append(_pair(f"grad sin-chain {label}", lambda: grad_fn(x), "hand-written NumPy",
                         lambda: progs.sin_chain_grad_numpy(x), 3.0))
        if autograd is not None:
            def achain(v):
                for _ in range(progs.CHAIN_LENGTH):
                    v = anp.sin(v)
                return v if np.ndim(v) == 0 else anp.sum(v)
            ag = autograd.grad(achain)
            out.append(_pair(f"grad sin-chain {label}", lambda: grad_fn(x), "autograd.grad",
                             lambda: ag(x), 1 / 3))
    return out


def _mlp_rows():
    params, x, y = mlp_data()
    g = secant.grad(progs.mlp_loss)
    want = progs.mlp_loss_grad_numpy(params, x, y)
    got = g(params, x, y)
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=2e-3, atol=2e-5)
    return [_pair("grad MLP loss 784-512-512-10 b128", lambda: g(params, x, y),
                  "hand-written NumPy", lambda: progs.mlp_loss_grad_numpy(params, x, y), 1.3,
                  rounds=9)]


def rows():
    """[(name, secant_seconds, anchor_name, anchor_seconds, target_ratio)] for issue 19's eager
    targets; ratio = secant_seconds / anchor_seconds, met when <= target_ratio."""
    return _sin_rows() + _chain_rows() + _mlp_rows()


def main():
    clock = "CPU time" if TIMER is compare_cpu_us else "wall clock"
    print(f"eager summary (issue 19): secant / anchor, best of interleaved rounds ({clock}); "
          "met when ratio <= target")
    print(f"  {'name':<34} {'secant':>10} {'anchor':<20} {'anchor':>10} {'ratio':>7} "
          f"{'target':>7}")
    for name, s, anchor, a, target in rows():
        ratio = s / a
        ok = "ok" if ratio <= target else "MISSED"
        print(f"  {name:<34} {s * 1e6:8.1f}µs {anchor:<20} {a * 1e6:8.1f}µs {ratio:7.3f} "
              f"{target:7.3f} {ok}")


if __name__ == "__main__":
    main()

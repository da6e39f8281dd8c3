"""Counter while loops under jit(grad) (issue 19): a while loop whose trip count jit learns
while tracing (`i = 0; while i < n: ...; i += 1` with n static, a lax.while_loop over
(counter, x)) saves each step's carry on a stack, so its reverse pass reads them back instead
of recomputing step k's carry by running the body k times from the start (n^2 work, and each
further derivative order multiplied that).

For each program and order (jit(grad), jit(grad(grad)), the 4th order): the first call
(transform + trace + compile + run, in a fresh process), the StableHLO text's size, and the
steady-state time per call; beside the same with the trip count left unlearnt
(`--baseline`: secant.lax_control_flow.TRIP_COUNT_LIMIT = 0, the reverse pass recomputing).

    .venv/bin/python bench/perf19_loops.py            # both, each in its own processes
    .venv/bin/python bench/perf19_loops.py --one NAME ORDER [--baseline]
"""
import json
import os
import subprocess
import sys
import time

# the programs, written once: tests/test_perf19e_while_stacks.py and others check them
from loop_programs import counter_while, counter_while_long, for_in_while, while_cubic

PROGRAMS = {"counter_while": (counter_while, 0.7), "counter_while_200": (counter_while_long, 0.7),
            "while_cubic": (while_cubic, 2.0), "for_in_while": (for_in_while, 0.7)}
ORDERS = {"counter_while": (1, 2, 4), "counter_while_200": (1, 2), "while_cubic": (1, 2, 4),
          "for_in_while": (1, 2, 4)}


def one(name, order, baseline):
    import secant.lax_control_flow as lcf
    if baseline:
        lcf.TRIP_COUNT_LIMIT = 0
    secant.config.update("enable_x64", True)
    f, x = PROGRAMS[name]
    d = f
    for _ in range(order):
        d = grad(d)
    t0 = time.perf_counter()
    j = jit(d)
    v = float(j(x))
    first = time.perf_counter() - t0
    size = len(j.lower(x).as_text())
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.3:
        j(x).block_until_ready()
        reps += 1
    steady = (time.perf_counter() - t0) / reps
    return {"value": v, "first_s": first, "hlo_chars": size, "steady_us": steady * 1e6}


def main():
    here = os.path.abspath(__file__)
    print(f"{'program':<20}{'order':>6}{'first call s':>22}{'StableHLO chars':>24}"
          f"{'per call us':>22}")
    print(f"{'':<26}{'before -> after':>22}{'before -> after':>24}{'before -> after':>22}")
    for name, orders in ORDERS.items():
        for order in orders:
            got = []
            for flag in (["--baseline"], []):
                out = subprocess.run([sys.executable, here, "--one", name, str(order)] + flag,
                                     capture_output=True, text=True, check=True).stdout
                got.append(json.loads(out.strip().splitlines()[-1]))
            b, a = got
            same = abs(a["value"] - b["value"]) <= 1e-9 * max(1.0, abs(b["value"]))
            print(f"{name:<20}{order:>6}{b['first_s']:>12.2f} -> {a['first_s']:<7.2f}"
                  f"{b['hlo_chars']:>14} -> {a['hlo_chars']:<8}"
                  f"{b['steady_us']:>11.0f} -> {a['steady_us']:<8.0f}"
                  f"{'' if same else '  VALUES DIFFER'}")


if __name__ == "__main__":
    import secant
    from secant import grad, jit
    if "--one" in sys.argv:
        k = sys.argv.index("--one")
        print(json.dumps(one(sys.argv[k + 1], int(sys.argv[k + 2]), "--baseline" in sys.argv)))
    else:
        main()

"""Runs every (program, composition) of the deep compositions battery (tests/user_programs/
deep.py) under secant and prints how each compares with JAX's recorded outcome
(deep_expected.py): '.' same, 'j' both refuse, 'R' secant refuses, 'E' internal error, 'X' a
value where JAX raises, 'W' a wrong value. Then the count per composition.

    .venv/bin/python bench/deep_table.py [PROGRAM ...] [--only COMPOSITION,...] [-v]
"""
import contextlib
import importlib
import io
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import user_programs
from user_programs import deep, deep_expected

import secant

args = sys.argv[1:]
verbose = "-v" in args
comps = list(deep.COMPOSITIONS)
if "--only" in args:
    comps = args[args.index("--only") + 1].split(",")
    args = [a for a in args if a not in ("--only", ",".join(comps))]
programs = [a for a in args if a != "-v"] or list(deep.PROGRAMS)
secant.config.update("enable_x64", True)
secant.config.update("backend_optimization_level", 0)     # as the tests (fast_compiles)
counts = {c: 0 for c in comps}
problems = []
t_all = time.process_time()
for name in programs:
    case = user_programs.BY_NAME[name]
    importlib.reload(deep_expected)       # (while the oracle still records)
    row = []
    t0 = time.process_time()
    for comp in comps:
        with contextlib.redirect_stdout(io.StringIO()):
            got = deep.outcome(case, comp)
        if (name, comp) in deep_expected.EXPECTED:
            letter, why = deep.judge(deep_expected.EXPECTED[name, comp], got)
        else:            # not recorded yet: what secant gives alone ('v' a value)
            letter, why = ("v", "") if got[0] == "value" else deep.judge(("value", []), got)
        row.append(letter)
        counts[comp] += letter in ".j"
        if letter not in ".jv":
            problems.append(f"{name} {comp}: {letter} {why}")
    print(f"{name:32s} {''.join(row)}  {time.process_time() - t0:.1f}s", flush=True)
    bad = sum(row.count(c) for c in "WERX")
    if verbose and bad:
        for p in problems[-bad:]:
            print("   ", p)
print()
for c in comps:
    print(f"{c:22s} {counts[c]}/{len(programs)}")
print(f"total {sum(counts.values())}/{len(programs) * len(comps)}, "
      f"CPU {time.process_time() - t_all:.0f}s")
print()
print("\n".join(problems))

"""Differential fuzzing of secant against JAX 0.10.2 (silent15r, issue 15): random small
programs (tests/user_programs/fuzz.py's grammar) run under eager, jit, grad, vmap, jvp,
vmap(grad), grad(grad) (scalar x), jacfwd and jit(grad) by both, their outcomes judged by
numerics.judge (value, dtype, shape, weak type; raises or not). Run with the JAX environment:

    /tmp/jaxenv/bin/python bench/fuzz_oracle.py --n 500 --seed 1000   # fuzz, print a summary
    /tmp/jaxenv/bin/python bench/fuzz_oracle.py --n 50 --seed 20000   # the idioms' grammar
    /tmp/jaxenv/bin/python bench/fuzz_oracle.py --record               # fuzz_expected.py
    /tmp/jaxenv/bin/python bench/fuzz_oracle.py --record NAME ...      # only these again

Letters (numerics.judge): W a different value or shape and D a different dtype (silent
wrong results), w a different weak type, X secant gives a value where JAX raises, R secant
refuses (SecantError) what JAX runs, E an internal error. Each mismatch is minimised (the
statements it does not need dropped) and printed once per (letter, reason) kind.
"""
import argparse
import collections
import contextlib
import importlib.util
import io
import pathlib
import pprint
import sys
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import oracle_env  # noqa: E402,F401  (this tree's secant, tests/ on the path)

import jax
from user_programs import fuzz, numerics

JAX, SECANT = fuzz.backend("jax"), fuzz.backend("secant")
OUT = ROOT / "tests" / "user_programs" / "fuzz_expected.py"


def quiet(thunk):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return thunk()


def compare(src, args, transforms=None):
    """{transform: (letter, why)} of program `src` (JAX's outcome against secant's)."""
    want = quiet(lambda: fuzz.outcomes(JAX, src, args, transforms))
    got = quiet(lambda: fuzz.outcomes(SECANT, src, args, transforms))
    return {t: numerics.judge(want[t], got[t], relative=True) for t in want}


def kind(letter, why):
    return letter, why.split(":")[0] if letter in "WDw" else why


def minimise(src, args, t, letter, why):
    """A smaller program with the same mismatch (kind) under t: statements dropped one at a
    time, and the return replaced by an earlier variable, while the mismatch stays."""
    def same(s):
        try:
            return kind(*compare(s, args, [t])[t]) == kind(letter, why)
        except Exception:                        # noqa: BLE001 -- a broken candidate
            return False
    stmts, ret = fuzz.statements(src)
    idiom = fuzz.IDIOM_HELPERS in src
    for name in [s.split(" = ")[0].split(", ")[0] for s in stmts]:
        if name.startswith("v") and ret.split(" ")[0] != name:
            cand = fuzz.source(stmts, name, idiom)
            if same(cand):
                ret = name
                break
    i = len(stmts) - 1
    while i >= 0:
        cand = stmts[:i] + stmts[i + 1:]
        if cand and same(fuzz.source(cand, ret, idiom)):
            stmts = cand
        i -= 1
    return fuzz.source(stmts, ret, idiom)


def fuzz_run(n, seed, show):
    tally, kinds, t0 = collections.Counter(), {}, time.process_time()
    runs = 0
    for s in range(seed, seed + n):
        if (s - seed) % 10 == 0:
            print(f"(seed {s}, {time.process_time() - t0:.0f} CPU s, {runs} runs: "
                  f"{dict(sorted(tally.items()))})", flush=True)
        src, args = fuzz.generate(s)
        try:
            judged = compare(src, args, fuzz.applicable(args, s))
        except Exception as e:                   # noqa: BLE001 -- the harness's own failure
            print(f"seed {s}: the harness failed: {type(e).__name__}: {e}")
            continue
        for t, (letter, why) in judged.items():
            runs += 1
            tally[letter] += 1
            if letter in ".j":
                continue
            key = (t,) + kind(letter, why)
            if key not in kinds:
                print(f"seed {s} {t}: {letter} {why[:200]}", flush=True)
            kinds.setdefault(key, (s, src, args, t, letter, why))
    print(f"{n} programs (seeds {seed}..{seed + n - 1}), {runs} program x transform runs, "
          f"{time.process_time() - t0:.0f} CPU s")
    print("outcomes:", dict(sorted(tally.items())))
    by_letter = collections.Counter(k[1] for k in kinds)
    print("mismatch kinds (letter, transform, reason):", dict(by_letter))
    for k, (s, src, args, t, letter, why) in list(kinds.items())[:show]:
        small = minimise(src, args, t, letter, why) if letter in "WDwXE" else src
        print(f"\n--- seed {s} {t}: {letter} {why[:300]}\nargs = {args}\n{small}")


def record(only=()):
    """JAX's outcomes of the fixed programs into fuzz_expected.py (with `only`: of those seeds
    or regression names alone, the others kept as recorded)."""
    kept = {}
    if only:
        spec = importlib.util.spec_from_file_location("fuzz_expected", OUT)
        recorded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(recorded)
        kept = recorded.EXPECTED
    programs = [(s, fuzz.generate(s)) for s in list(fuzz.DEFAULT_SEEDS) + list(
        fuzz.THOROUGH_SEEDS)] + list(fuzz.REGRESSIONS.items())
    expected = {}
    for key, (src, args) in programs:
        expected[key] = quiet(lambda s=src, a=args, k=key: fuzz.outcomes(
            JAX, s, a, fuzz.applicable(a, k))) if not only or str(
            key) in only or key not in kept else kept[key]
    text = pprint.pformat(expected, width=100, sort_dicts=False)
    OUT.write_text(
        f'"""JAX {jax.__version__}\'s outcome of each fuzz program (fuzz.generate(seed), and '
        'the named\nfuzz.REGRESSIONS) under each transform, written by bench/fuzz_oracle.py '
        '--record:\n{seed or name: {transform: ("value", [(dtype, weak_type, shape, values)]) '
        'or\n("raises", [exception classes])}}. Do not edit by hand."""\n'
        "from math import inf, nan  # noqa: F401\n\n"
        f"EXPECTED = {text}\n")
    print(len(expected), "programs recorded")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--show", type=int, default=30, help="mismatch kinds printed (minimised)")
    ap.add_argument("--record", nargs="*", metavar="ONLY",
                    help="record JAX's outcomes (of these seeds or regressions only)")
    a = ap.parse_args()
    if a.record is not None:
        record(a.record)
    else:
        fuzz_run(a.n, a.seed, a.show)


if __name__ == "__main__":
    main()

"""Runs the corpus of issue 15 (tests/corpus/) through every transform and composition and
prints, for each, how many cases pass, then every failure with the first line of its error.

    .venv/bin/python bench/corpus_report.py              # the table and the failures
    .venv/bin/python bench/corpus_report.py --known      # also a KNOWN_FAILURES table to paste
    .venv/bin/python bench/corpus_report.py -k mlp       # only cases whose name contains "mlp"

A WRONG line is a silently wrong value (the worst defect); the others raised.
"""
import argparse
import collections
import contextlib
import io
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

import secant  # noqa: E402
from corpus import ALL  # noqa: E402
from corpus import harness  # noqa: E402


def first_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def run_all(cases, compositions, seconds=None):
    """{(case, composition): None (passed) or (kind, message)}, kind 'WRONG' or 'ERROR';
    `seconds` (a dict), if given, gets the time each (case, composition) took."""
    results = {}
    secant.config.update("enable_x64", True)
    try:
        for case in cases:
            for name in harness.applicable(case):
                if name not in compositions:
                    continue
                t = time.perf_counter()
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        harness.run(case, name)
                    results[case.name, name] = None
                except harness.WrongValue as e:
                    results[case.name, name] = ("WRONG", str(e).splitlines()[0])
                except Exception as e:             # noqa: BLE001 - a refusal is a result
                    results[case.name, name] = ("ERROR", first_line(e))
                if seconds is not None:
                    seconds[case.name, name] = time.perf_counter() - t
    finally:
        secant.config.update("enable_x64", False)
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("--known", action="store_true", help="print a KNOWN_FAILURES table")
    args = ap.parse_args(argv)
    cases = [c for c in ALL if args.k in c.name]
    comps = list(harness.COMPOSITIONS)
    t0 = time.perf_counter()
    seconds = {}
    results = run_all(cases, comps, seconds)
    elapsed = time.perf_counter() - t0

    print(f"corpus: {len(cases)} cases, {len(results)} (case, composition) pairs, "
          f"{elapsed:.1f} s\n")
    per = collections.defaultdict(lambda: [0, 0, 0])
    for (cname, comp), r in results.items():
        per[comp][1] += 1
        if r is None:
            per[comp][0] += 1
        elif r[0] == "WRONG":
            per[comp][2] += 1
    width = max(len(c) for c in comps)
    spent = collections.Counter()
    for (cname, comp), t in seconds.items():
        spent[comp] += t
    print(f"{'composition':{width}s}  passing  wrong  seconds")
    for comp in comps:
        ok, n, wrong = per[comp]
        if n:
            print(f"{comp:{width}s}  {ok:3d}/{n:<3d}  {wrong:5d}  {spent[comp]:7.1f}")
    ok_all = sum(r is None for r in results.values())
    print(f"{'all':{width}s}  {ok_all}/{len(results)}  "
          f"{sum(1 for r in results.values() if r and r[0] == 'WRONG'):5d}")
    full = [c.name for c in cases
            if all(results.get((c.name, n)) is None for n in harness.applicable(c))]
    print(f"\ncases passing every composition: {len(full)}/{len(cases)}")

    print("\nfailures (case, composition: first line of the error):")
    for kind in ("WRONG", "ERROR"):
        for (cname, comp), r in results.items():
            if r is not None and r[0] == kind:
                print(f"  {kind:5s} {cname} {comp}: {r[1][:160]}")
    if args.known:
        print("\nKNOWN_FAILURES = {")
        for (cname, comp), r in results.items():
            if r is not None:
                reason = ("WRONG: " if r[0] == "WRONG" else "") + r[1][:100]
                print(f"    {(cname + '-' + comp)!r}: {reason!r},")
        print("}")
    return results


if __name__ == "__main__":
    main()

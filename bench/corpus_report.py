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


# (pattern in the first line of the error, short reason) for KNOWN_FAILURES; first match wins
REASONS = [
    (r"(?:does not know the derivative of|has no batching rule for) "
     r"(f|f1|g1|hv|dv|fn|g|act|inner|stats)\b:",
     "a callee's transform failed (reported as unknown callee {0})"),
    (r"(does not know the derivative|has no batching rule) for (tree_util\.\w+)",
     "{1} called in transformed code"),
    (r"does not know the derivative of (getattr\(.*?\))", "getattr callee unresolved"),
    (r"(?:does not know the derivative of|has no batching rule for) ([\w.\[\]'\"]+)",
     "callee {0} unresolved"),
    (r"cannot transform (functools\.partial|<bound method|<corpus\.callees\.Model)",
     "non-function passed to the transform ({0})"),
    (r"cannot transform ImportFrom", "transforms secant's own code (ImportFrom)"),
    (r"tuple or list of (differentiated|batched) arrays cannot be stored",
     "list/tuple of traced values in a variable"),
    (r"a return inside a branch", "early return inside if"),
    (r"reverse mode through the Python loop of a derivative", "reverse-over-reverse through a loop"),
    (r"second order\) are not supported yet \(second order through lax",
     "reverse-over-reverse through lax loop"),
    (r"cannot (?:differentiate|batch) through a (\w+) expression", "{0} expression"),
    (r"differentiating this part of a derivative \(a (\w+)", "second order through generated {0}"),
    (r"cannot transform (try/except|with|break|continue)", "{0} statement"),
    (r"in-place updates", "in-place x[i] = v"),
    (r"\.append\(|receives the differentiated value .* result is dropped",
     "side-effecting call (append/print) on a traced value"),
    (r"\*args or \*\*kwargs", "*args/**kwargs signature"),
    (r"cannot (?:differentiate|batch) the recursive function", "recursion on a static value"),
    (r"only names \(or nested tuples of names\) can be unpacked", "starred unpacking"),
    (r"_vjp_vmap\(\) missing 1 required positional argument", "vmap of a vjp function"),
    (r"a for loop over a batched array", "for over a batched array"),
    (r"if on a batched value", "Python if on a batched value"),
    (r"grad requires a scalar output", "output not scalar (output misread)"),
]


# what a silently wrong value of a case comes from (found by reading the generated source)
WRONG_REASONS = {
    "mean_of_bare_list": "snp.mean of a Python list of traced values drops the derivative",
    "walrus_scalar": "walrus target's derivative dropped (zeros); vmap misreads it",
    "walrus_in_sum": "walrus target's derivative dropped (zeros); vmap misreads it",
    "decorated_wraps": "differentiates the undecorated function (inspect follows __wrapped__)",
    "decorated_with_args": "differentiates the undecorated function (inspect follows "
                           "__wrapped__)",
    "calls_decorated": "a decorated callee is differentiated undecorated (__wrapped__)",
    "append_loop": "vmap of a list built with .append in a loop ignores the batch",
    "conv1d_loop": "vmap of a list built with .append in a loop ignores the batch",
    "rnn_loop": "dict field read in a Python loop: its cotangent is taken from the last "
                "iteration only (add_grads after the reverse loop)",
}


# cases whose every refusal comes from the one construct they exist to show
CASE_REASONS = {
    "shadowing_locals": "user locals named like generated helpers (grad_seed, mean_grad, ...)",
    "shadowing_global": "user global named like a generated helper (matmul_grad_y)",
    "positional_only": "positional-only parameters (IndexError)",
    "star_kwargs": "**kwargs callee",
}


def short_reason(kind, message, case=None):
    import re
    if kind != "WRONG" and case in CASE_REASONS:
        return CASE_REASONS[case]
    for pattern, reason in REASONS:
        m = re.search(pattern, message)
        if m:
            text = reason.format(*m.groups())
            return f"WRONG: {text}" if kind == "WRONG" else text
    return (f"WRONG: {message}" if kind == "WRONG" else message)[:90]


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
    ap.add_argument("--write-known", metavar="PATH", help="write the KNOWN_FAILURES module")
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
        print("\n" + known_failures_source(results))
    if args.write_known:
        pathlib.Path(args.write_known).write_text(known_failures_source(results))
    return results


def known_failures_source(results):
    """tests/corpus/known_failures.py for these results (every failing (case, composition))."""
    lines = [KNOWN_HEADER, "KNOWN_FAILURES = {"]
    for (cname, comp), r in results.items():
        if r is None:
            continue
        if r[0] == "WRONG":
            reason = "WRONG: " + WRONG_REASONS.get(cname, r[1][:80])
        else:
            reason = short_reason(*r, case=cname)
        lines.append(f"    {(cname + '-' + comp)!r}: {reason!r},")
    lines.append("}")
    return "\n".join(lines) + "\n"


KNOWN_HEADER = '''"""(case, composition) pairs of the corpus that fail today, each with a short reason; a reason
starting "WRONG:" is a silently wrong value, the worst defect.

tests/test_corpus.py marks each one xfail(strict=True): when a fix makes one pass, its test
fails until the entry is removed here. Regenerate after a fix and review the diff:

    .venv/bin/python bench/corpus_report.py --write-known tests/corpus/known_failures.py
    git diff tests/corpus/known_failures.py
"""
# flake8: noqa: E501
'''


if __name__ == "__main__":
    main()

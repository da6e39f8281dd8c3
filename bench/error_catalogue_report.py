"""Runs every case of the error catalogue (tests/error_catalogue_cases.py) and prints how many
end in each outcome:

  correct    the exception type JAX raises, naming the user's file and line (or the right value)
  line       a clear error naming the line, not the type JAX raises
  noline     a clear error that does not name the line
  internal   an error from inside secant (KeyError, AttributeError, RecursionError, ...)
  wrong      an invalid input accepted, or a wrong value

    .venv/bin/python bench/error_catalogue_report.py            # counts, by group
    .venv/bin/python bench/error_catalogue_report.py -v         # and every case not correct
    .venv/bin/python bench/error_catalogue_report.py -k leak    # cases whose id contains 'leak'
    .venv/bin/python bench/error_catalogue_report.py --write-known tests/error_catalogue_known.py

--write-known regenerates the strict xfail table of tests/test_error_catalogue.py (check that
the diff only removes lines after a fix).
"""
import argparse
import collections
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

import error_catalogue_cases as catalogue  # noqa: E402

# Which section of issue 16 owns a failure (the lead removes entries as those land).
_OWNERS = [
    ("custom-", "validated custom rules (issue 16)"),
    ("leak-", "leaked tracers (issue 16)"),
    ("threads-", "threads (issue 16); nondeterministic"),
    ("limits-", "limits (issue 16)"),
    ("cli-", "command line (issue 16, limits)"),
    ("api-lax_", "validated API inputs (issue 16)"),
    ("api-checkpoint_", "validated API inputs (issue 16)"),
    ("api-custom_vjp_", "validated API inputs (issue 16)"),
]


def results(ids):
    """{case id: (outcome, detail)}; the crash-prone groups run in one child process."""
    out = {}
    child = [cid for cid in ids if catalogue.in_child(catalogue.CASES[cid])]
    for cid in ids:
        if cid not in child:
            out[cid] = catalogue.classify(catalogue.CASES[cid])
    if child:
        out.update(catalogue.run_in_child(child))
    return out


def reason(cid, outcome, detail):
    owner = next((o for prefix, o in _OWNERS if cid.startswith(prefix)), "not fixed yet")
    tag = "WRONG: " if outcome == "wrong" else ""
    return f"{tag}{owner}: {outcome}: {detail}"[:200]


def write_known(path, res):
    lines = ['"""Catalogue cases (tests/error_catalogue_cases.py) that fail today, each with its '
             'outcome; a reason\nstarting "WRONG:" is an invalid input accepted or a wrong '
             'value.\n\ntests/test_error_catalogue.py marks each xfail(strict=True): when a fix makes '
             'one pass, its test\nfails until the entry is removed here. Regenerate after a fix and review '
             'the diff:\n\n    .venv/bin/python bench/error_catalogue_report.py --write-known '
             'tests/error_catalogue_known.py\n    git diff tests/error_catalogue_known.py\n"""',
             "# flake8: noqa: E501", "", "KNOWN_FAILURES = {"]
    for cid, (outcome, detail) in res.items():
        if outcome != "correct":
            lines.append(f"    {cid!r}: {reason(cid, outcome, detail)!r},")
    lines.append("}")
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only cases whose id contains this")
    parser.add_argument("-v", action="store_true", help="print every case not correct")
    parser.add_argument("--write-known", metavar="PATH", help="write the xfail table")
    args = parser.parse_args()
    ids = [cid for cid in catalogue.CASES if args.k in cid]
    start = time.time()
    res = results(ids)
    by_group = collections.defaultdict(collections.Counter)
    for cid, (outcome, _) in res.items():
        by_group[catalogue.CASES[cid].group][outcome] += 1
    total = collections.Counter()
    header = f"{'group':10s}" + "".join(f"{o:>10s}" for o in catalogue.OUTCOMES) + f"{'cases':>8s}"
    print(header)
    for group, counts in by_group.items():
        total.update(counts)
        print(f"{group:10s}" + "".join(f"{counts[o]:>10d}" for o in catalogue.OUTCOMES)
              + f"{sum(counts.values()):>8d}")
    print(f"{'total':10s}" + "".join(f"{total[o]:>10d}" for o in catalogue.OUTCOMES)
          + f"{sum(total.values()):>8d}")
    print(f"({time.time() - start:.1f} s)")
    if args.v:
        for cid, (outcome, detail) in res.items():
            if outcome != "correct":
                print(f"{outcome:9s} {cid}: {detail}")
    if args.write_known:
        write_known(args.write_known, res)


if __name__ == "__main__":
    main()

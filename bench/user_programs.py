"""Runs the user programs of issue 15 (tests/user_programs/: tutorials' models, science,
finance, optimizers, Python styles) through grad, hessian, grad∘grad, jit, jit∘grad, vmap,
vmap∘grad, jvp and jacrev, and prints a pass table per program and transform, the total, and
each failure with the first line of its error.

    .venv/bin/python bench/user_programs.py            # the table, the total, the failures
    .venv/bin/python bench/user_programs.py -k kalman  # only programs whose name has "kalman"
    .venv/bin/python bench/user_programs.py --theme science   # one module's programs
    .venv/bin/python bench/user_programs.py --second   # the second battery (autograd, Tangent,
                                # functorch, recipes; + grad∘grad∘grad), then its bad inputs
    .venv/bin/python bench/user_programs.py --third    # the third battery (the JAX docs'
                                # examples, modules, optimizers, science, classroom AD), then
                                # its bad inputs
    .venv/bin/python bench/user_programs.py --fourth   # the fourth battery (domains: RL,
                                # finance, robotics, graph nets, PDEs, signal, ranking, OT;
                                # match/walrus/generator styles), then its bad inputs
    .venv/bin/python bench/user_programs.py --fifth    # the fifth battery (how people write:
                                # PyTorch habits, optax-like, flax-like, scipy-style, Python
                                # idioms), then its bad inputs
    .venv/bin/python bench/user_programs.py --sixth    # the sixth battery (the JAX API as
                                # users combine it: lax control flow, custom rules, transforms
                                # inside, vmap's arguments, random, tree_util), then its bad inputs
    .venv/bin/python bench/user_programs.py --numerics # the seventh battery (numerics and
                                # dtype semantics against JAX's recorded outcomes; x64 off)

In the table: `.` passed, `W` a silently WRONG value (the worst defect), `E` an error from
secant's internals (KeyError, AttributeError, TypeError, ...), `R` a clear SecantError refusal,
`j` refused as JAX refuses it (counted a pass), `-` not applicable. Every reference comes from the program's eager run alone (float64 central
differences, a Python loop, the eager value).
"""
import argparse
import contextlib
import io
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

import secant  # noqa: E402
from corpus import harness  # noqa: E402
from user_programs import ALL, FIFTH, FOURTH, SECOND, SIXTH, THIRD, checks  # noqa: E402


def _refusals():
    """(program, transform) pairs JAX refuses: checks.JAX_REFUSES and the fifth and sixth
    batteries'"""
    from user_programs import api_surface, habits
    return {**checks.JAX_REFUSES, **habits.JAX_REFUSES, **api_surface.JAX_REFUSES}


JAX_REFUSES = _refusals()


def outcome(case, name):
    """('.', '') or (letter, first line of the error)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            checks.run(case, name)
    except harness.WrongValue as e:
        return "W", str(e).splitlines()[0]
    except secant.SecantError as e:
        return "R", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    except Exception as e:                      # noqa: BLE001 -- the report names it
        return "E", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return ".", ""


def numerics_main(k):
    """The seventh battery: each (program, transform) against JAX's recorded outcome."""
    from user_programs import numerics
    from user_programs.numerics_expected import EXPECTED
    cases = [c for c in numerics.CASES if k in c.name]
    names = numerics.TRANSFORMS
    width = max(len(c.name) for c in cases)
    print("program".ljust(width), " ".join(n[:9].ljust(9) for n in names))
    failures, counts, start = [], {}, time.time()
    for case in cases:
        row = []
        for t in names:
            if (case.name, t) not in EXPECTED:
                row.append("-")
                continue
            with contextlib.redirect_stdout(io.StringIO()):
                letter, why = numerics.judge(EXPECTED[case.name, t], numerics.outcome(case, t))
            counts[letter] = counts.get(letter, 0) + 1
            row.append(letter)
            if letter not in ".j":
                failures.append((case.name, t, letter, why))
        print(case.name.ljust(width), " ".join(r.ljust(9) for r in row), flush=True)
    total = sum(counts.values())
    print(f"\n{counts.get('.', 0) + counts.get('j', 0)}/{total} match JAX ({len(cases)} "
          f"programs, {time.time() - start:.0f} s): {dict(sorted(counts.items()))}")
    for case, t, letter, why in failures:
        print(f"  {letter} {case} / {t}: {why[:160]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-k", default="", help="only programs whose name contains this")
    parser.add_argument("--theme", default="", help="only one module's programs (models, ...)")
    parser.add_argument("--second", action="store_true", help="the second battery (explore15i)")
    parser.add_argument("--third", action="store_true", help="the third battery (explore15j)")
    parser.add_argument("--fourth", action="store_true", help="the fourth battery (explore15k)")
    parser.add_argument("--fifth", action="store_true", help="the fifth battery (explore15l)")
    parser.add_argument("--sixth", action="store_true", help="the sixth battery (explore15o)")
    parser.add_argument("--numerics", action="store_true", help="the seventh battery")
    opts = parser.parse_args()
    if opts.numerics:
        return numerics_main(opts.k)
    secant.config.update("enable_x64", True)
    later = opts.second or opts.third or opts.fourth or opts.fifth or opts.sixth
    transforms = checks.SECOND_TRANSFORMS if later else checks.TRANSFORMS
    names = list(transforms)
    battery = (SIXTH if opts.sixth else FIFTH if opts.fifth else FOURTH if opts.fourth
               else THIRD if opts.third else SECOND if opts.second else ALL)
    cases = [c for c in battery if opts.k in c.name
             and c.fn.__module__.endswith("." + opts.theme if opts.theme else "")]
    width = max(len(c.name) for c in cases)
    col = 14 if later else 9          # (grad∘grad∘grad)
    print("program".ljust(width), " ".join(n[:col].ljust(col) for n in names))
    failures, passed, total = [], 0, 0
    start = time.time()
    for case in cases:
        row = []
        for name in names:
            if name not in checks.applicable(case, transforms):
                row.append("-")
                continue
            letter, why = outcome(case, name)
            if (case.name, name) in JAX_REFUSES:
                letter = "j" if letter == "R" else letter
            total += 1
            passed += letter in ".j"
            row.append(letter)
            if letter not in ".j":
                failures.append((case.name, name, letter, why))
        print(case.name.ljust(width), " ".join(r.ljust(col) for r in row), flush=True)
    if later and not opts.k and not opts.theme:      # the bad inputs a user gives them
        if opts.sixth:
            from user_programs import bad_inputs_sixth as bad_inputs
        elif opts.fifth:
            from user_programs import bad_inputs_fifth as bad_inputs
        elif opts.fourth:
            from user_programs import bad_inputs_fourth as bad_inputs
        elif opts.third:
            from user_programs import bad_inputs_third as bad_inputs
        else:
            from user_programs import bad_inputs
        for cid, case in bad_inputs.CASES.items():
            with contextlib.redirect_stdout(io.StringIO()):
                got, why = bad_inputs.classify(case)
            total += 1
            passed += got == "correct"
            print(f"bad input {cid}: {got}" + (f" ({why[:120]})" if why else ""))
            if got != "correct":
                failures.append(("bad input " + cid, "-", "R" if got in ("line", "noline")
                                 else "W" if got == "wrong" else "E", why))
    print(f"\n{passed}/{total} pass ({len(cases)} programs, {time.time() - start:.0f} s)")
    for kind, title in (("W", "WRONG values"), ("E", "internal errors"), ("R", "refusals")):
        rows = [f for f in failures if f[2] == kind]
        if rows:
            print(f"\n{title} ({len(rows)}):")
            for case, name, _, why in rows:
                print(f"  {case} / {name}: {why[:160]}")


if __name__ == "__main__":
    main()

"""JAX's outcomes of tests/user_programs/sem15v_cases.py (run with jax's Python):

    /tmp/jaxenv/bin/python bench/sem15v_oracle.py            # print JAX's against secant's
    /tmp/jaxenv/bin/python bench/sem15v_oracle.py --record   # write sem15v_expected.py

Dtypes and weak types of promotions (eager and jit), and the derivatives of functions at a pole
or branch point (grad, grad of grad, jacfwd(jacrev), jacrev(jacfwd), hessian, jit of grad of
grad), read by tests/test_sem15v_semantics.py (which never imports jax)."""
import argparse
import contextlib
import io
import math
import pathlib
import pprint
import sys
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import oracle_env  # noqa: E402,F401  (this worktree's secant, tests/ on the path)

import jax
from user_programs import fuzz
from user_programs.sem15v_cases import (
    DTYPE_CASES,
    POLE_CASES,
    POLE_TRANSFORMS,
    dtype_outcome,
    pole_outcome,
)

OUT = ROOT / "tests" / "user_programs" / "sem15v_expected.py"


def outcomes(B):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return {
            "dtypes": {n: {h: dtype_outcome(B, n, h) for h in ("eager", "jit")}
                       for n in DTYPE_CASES},
            "poles": {n: {t: pole_outcome(B, n, t) for t in POLE_TRANSFORMS}
                      for n in POLE_CASES},
        }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    want = outcomes(fuzz.backend("jax"))
    if args.record:
        OUT.write_text(f'"""JAX {jax.__version__}\'s outcomes of sem15v_cases.py, written by '
                       f'bench/sem15v_oracle.py --record."""\n'
                       f"nan, inf = float('nan'), float('inf')\n\n"
                       f"EXPECTED = {pprint.pformat(want, width=100, sort_dicts=False)}\n"
                       .replace("-inf", "-inf").replace("'nan'", "'nan'"))
        print(f"wrote {OUT}")
        return
    got = outcomes(fuzz.backend("secant"))
    for part in want:
        for name in want[part]:
            for how, w in want[part][name].items():
                g = got[part][name][how]
                same = w == g or (isinstance(w, float) and isinstance(g, float)
                                  and math.isnan(w) and math.isnan(g))
                print(f"{'  ' if same else '<>'} {part} {name} {how}: jax {w} secant {g}")


if __name__ == "__main__":
    main()

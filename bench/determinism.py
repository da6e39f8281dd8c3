"""Whether generated source depends on the process's history (issue 20, determinism): the fixed
set of tests/test_nondet20_sources.py (bench/lean.py's gradients, the golden cases' gradients,
vmaps and jvps) generated in a fresh process under another PYTHONHASHSEED, and here after
transforming the user programs of tests/user_programs (all five batteries, in a shuffled order,
under grad, vmap and jvp, the references dropped and the garbage collected after each, holes
made in the heap between them), every function's cached derivatives then cleared. Prints the
cases whose text differs. Not a test (minutes); the test runs a small part of it.

    .venv/bin/python bench/determinism.py                   # 300 s of churn
    .venv/bin/python bench/determinism.py --seconds 60 --seed 3
"""
import argparse
import gc
import pathlib
import random
import signal
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from secant.backends import function_cache  # noqa: E402
from test_nondet20_sources import (_differences, _in_fresh_process, sources,  # noqa: E402
                                   transform_each)


def _timed_out(*_):
    raise TimeoutError


def churn(seconds, seed):
    """Transforms user programs for about `seconds` (each program stopped after 45 s)."""
    from user_programs import ALL, FIFTH, FOURTH, SECOND, THIRD
    rng = random.Random(seed)
    cases = list(ALL + SECOND + THIRD + FOURTH + FIFTH)
    rng.shuffle(cases)
    held, ran, start = [], 0, time.time()
    signal.signal(signal.SIGALRM, _timed_out)
    for case in cases:
        if time.time() - start > seconds:
            break
        signal.alarm(45)
        try:
            ran += transform_each(case)
        except TimeoutError:
            pass
        finally:
            signal.alarm(0)
        junk = [object() if rng.random() < 0.5 else [0] * rng.randrange(1, 40)
                for _ in range(rng.randrange(1, 5000))]
        held.extend(junk[::rng.randrange(2, 7)])        # (holes: addresses reused)
        gc.collect()
    return ran, time.time() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args()
    want = _in_fresh_process(opts.seed + 1)
    here = sources()
    print(f"fresh process (PYTHONHASHSEED={opts.seed + 1}) vs this one: "
          f"{_differences(want, here) or 'the same'}")
    ran, took = churn(opts.seconds, opts.seed)
    function_cache.clear_all()
    gc.collect()
    after = sources()
    print(f"after {ran} transforms ({took:.0f} s), generated anew: "
          f"{_differences(want, after) or 'the same'}")


if __name__ == "__main__":
    main()

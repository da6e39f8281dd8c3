"""Node ids of a slice of the thorough composition sweep (tests/test_composition_sweep.py), to
run its 14,600 cases in parts on a shared machine (ids hold '/', which `-k` cannot match):

    python tests/sweep_slices.py python_loop,scan --depth 3 --outer=-hessian > /tmp/ids
    HYPOTHESIS_PROFILE=thorough SECANT_CASE_TIMEOUT=150 python -m pytest -p no:randomly -q -rx \\
        $(cat /tmp/ids)

--outer=NAME keeps chains whose outermost transform is NAME, --outer=-NAME those whose is not;
--has=NAME keeps chains with NAME anywhere. Functions: a comma list, or `all`.
"""
import argparse
import itertools

import composition_sweep_cases as cases


def slice_ids(functions, depth, outer=None, has=None):
    for f in functions:
        for chain in itertools.product(cases.TRANSFORMS, repeat=depth):
            if outer and (chain[-1] == outer.lstrip("-")) == outer.startswith("-"):
                continue
            if has and has not in chain:
                continue
            yield f"tests/test_composition_sweep.py::test_composition[{f}-{'/'.join(chain)}]"


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("functions")
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--outer")
    p.add_argument("--has")
    a = p.parse_args()
    names = list(cases.FUNCTIONS) if a.functions == "all" else a.functions.split(",")
    unknown = set(names) - set(cases.FUNCTIONS)
    if unknown:
        raise SystemExit(f"no sweep function {sorted(unknown)}; known: {list(cases.FUNCTIONS)}")
    print("\n".join(slice_ids(names, a.depth, a.outer, a.has)))

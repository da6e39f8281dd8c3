"""Where grad's transformation time goes (issue 19): transforms.generate(grad) of a new
n-statement straight-line function (bench/transform_time.py's), split into its phases, CPU time
of each (nested phases subtracted), the median of a few fresh functions:

    parse      reading the user's source into a gast tree (transformer/gast_parse.py)
    desugar    transformer/desugar.py (its passes, the parse aside)
    normalise  transformer/normalize.py (the canonical IR)
    reverse    the reverse pass and the rest of transforms._generate
    fold/cse   ad/copies, ad/cse, ad/algebra, ad/fold, ad/accumulate, dead code
    unparse    the generated text (transforms._text, hygiene.swap)
    compile    codegen/loader.py (Python's compile of the generated module)

    .venv/bin/python bench/transform_split.py [statements] [repeats]
    SECANT_SPLIT_FOLD=1 ...     # fold/cse split into its steps"""
import functools
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import load_source, straight_line_source          # noqa: E402
from secant import transforms                                 # noqa: E402
from secant.ad import accumulate, algebra, copies, cse, fold, reverse   # noqa: E402
from secant.codegen import loader                             # noqa: E402
from secant.transformer import desugar, gast_parse, hygiene   # noqa: E402

CLOCK = time.process_time
FOLD_STEPS = ((fold, "folded"), (cse, "computed_once"), (accumulate, "summed"),
              (copies, "without_copies"), (algebra, "simplified_lines"),
              (algebra, "simplifier"), (reverse, "dead_code_eliminated"))
PHASES = ["parse", "desugar", "normalise", "reverse", "fold/cse", "unparse", "compile", "other"]


class _Split:
    def __init__(self):
        self.acc, self.stack = {}, []

    def wrap(self, owner, attr, phase):
        fn = getattr(owner, attr)

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            self.stack.append([CLOCK(), 0.0])
            try:
                return fn(*args, **kwargs)
            finally:
                start, inner = self.stack.pop()
                spent = CLOCK() - start
                self.acc[phase] = self.acc.get(phase, 0.0) + spent - inner
                if self.stack:
                    self.stack[-1][1] += spent
        setattr(owner, attr, timed)


def measure(n=1000, repeat=3, fold_steps=False):
    """{phase: median CPU seconds} of grad's transformation of new n-statement functions."""
    split = _Split()
    split.wrap(gast_parse, "parse", "parse")
    split.wrap(desugar, "_desugar", "desugar")
    split.wrap(transforms, "normalise", "normalise")
    split.wrap(transforms, "_generate", "reverse")
    for owner, attr in FOLD_STEPS:
        split.wrap(owner, attr, attr if fold_steps else "fold/cse")
    split.wrap(transforms, "_text", "unparse")
    split.wrap(hygiene, "swap", "unparse")
    split.wrap(loader, "load", "compile")
    runs = []
    with tempfile.TemporaryDirectory(prefix="secant_bench_split_") as tmpdir:
        warm = load_source(straight_line_source(50), "f", tmpdir, "warm")
        transforms.generate(warm, (0, 1), "grad")
        transforms._generated.clear()
        source = straight_line_source(n)
        for r in range(repeat):
            fn = load_source(source, "f", tmpdir, f"straight_{n}_{r}")
            split.acc.clear()
            start = CLOCK()
            transforms.generate(fn, (0, 1), "grad")
            total = CLOCK() - start
            transforms._generated.clear()
            run = dict(split.acc)
            run["other"] = total - sum(run.values())
            run["total"] = total
            runs.append(run)
    keys = list(dict.fromkeys(k for r in runs for k in r))
    return {k: statistics.median(r.get(k, 0.0) for r in runs) for k in keys}


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    got = measure(n, repeat, bool(os.environ.get("SECANT_SPLIT_FOLD")))
    print(f"grad of {n} straight-line statements, CPU s (median of {repeat}):")
    print("  " + "  ".join(f"{k} {v:.3f}" for k, v in got.items()))


if __name__ == "__main__":
    main()

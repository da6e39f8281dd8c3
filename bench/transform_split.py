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

    .venv/bin/python bench/transform_split.py [statements] [repeats] [kind]
    SECANT_SPLIT_FOLD=1 ...     # fold/cse split into its steps

kind: straight (the default), loops (the same statements 10 to a for loop,
bench/transform_time.py's) or model (a function of about `statements` lines made of blocks like
bench/lean_functions.py's bodies: a layer, log-softmax, a Python loop's sum, leapfrog steps, a
polynomial, a Gaussian log-likelihood, each block's result the next one's input)."""
import functools
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import load_source, straight_line_source          # noqa: E402
from transform_time import loops_in_a_row_source              # noqa: E402
from secant import transforms                                 # noqa: E402
from secant.ad import accumulate, algebra, copies, cse, fold, reverse   # noqa: E402
from secant.codegen import loader                             # noqa: E402
from secant.transformer import desugar, gast_parse, hygiene   # noqa: E402

CLOCK = time.process_time
FOLD_STEPS = ((fold, "folded"), (cse, "computed_once"), (accumulate, "summed"),
              (copies, "without_copies"), (algebra, "simplified_lines"),
              (algebra, "simplifier"), (reverse, "dead_code_eliminated"))
PHASES = ["parse", "desugar", "normalise", "reverse", "fold/cse", "unparse", "compile", "other"]


MODEL_BLOCK = """\
    h{k} = snp.tanh(x{k} @ w + y)
    z{k} = h{k} - snp.max(h{k})
    logp{k} = z{k} - snp.log(snp.sum(snp.exp(z{k})))
    acc{k} = snp.zeros_like(x{k})
    for i in range(3):
        acc{k} = acc{k} + snp.sin(x{k} * i)
    q{k}, p{k} = x{k}, h{k}
    for _ in range(2):
        p{k} = p{k} - 0.05 * q{k}
        q{k} = q{k} + 0.05 * p{k}
    energy{k} = 0.5 * snp.sum(p{k} ** 2) + 0.5 * snp.sum(q{k} ** 2)
    poly{k} = 3.0 * x{k} ** 3 - 2.0 * x{k} ** 2 + x{k}
    r{k} = (x{k} - h{k}) * snp.exp(-y)
    ll{k} = -0.5 * snp.sum(r{k} ** 2) - snp.sum(y)
    mix{k} = q{k} + 0.1 * acc{k} + 0.01 * poly{k}
    total{k} = snp.sum(logp{k}) + ll{k} + energy{k}
    x{n} = snp.tanh(mix{k}) + 0.001 * total{k}
"""


def model_source(n):
    """def f(x0, y, w): about n lines, MODEL_BLOCK's 17 again and again."""
    blocks = max(1, round(n / MODEL_BLOCK.count("\n")))
    body = "".join(MODEL_BLOCK.format(k=k, n=k + 1) for k in range(blocks))
    return ("import secant.numpy as snp\n\n\ndef f(x0, y, w):\n" + body +
            f"    return snp.sum(x{blocks})\n")


SOURCES = {"straight": straight_line_source, "loops": loops_in_a_row_source,
           "model": model_source}


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


def measure(n=1000, repeat=3, fold_steps=False, source=straight_line_source):
    """{phase: median CPU seconds} of grad's transformation of new n-statement functions
    (`source(n)`'s)."""
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
        text = source(n)
        for r in range(repeat):
            fn = load_source(text, "f", tmpdir, f"{source.__name__}_{n}_{r}")
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
    kind = sys.argv[3] if len(sys.argv) > 3 else "straight"
    got = measure(n, repeat, bool(os.environ.get("SECANT_SPLIT_FOLD")), SOURCES[kind])
    print(f"grad of {n} statements ({kind}), CPU s (median of {repeat}):")
    print("  " + "  ".join(f"{k} {v:.3f}" for k, v in got.items()))


if __name__ == "__main__":
    main()

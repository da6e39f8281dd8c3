"""Transformation time of deep compositions (issue 19): the first and second call of
hessian(jvp(hessian(matmul_tanh))) and hessian(hessian(grad(helper_call))) from
tests/composition_sweep_cases.py, CPU seconds of this process (a loaded host disturbs it far
less than the wall clock), each in a fresh process; the first call builds every transform, the
second only checks that what it resolved still holds. Also the number of generated functions
and the lines of the largest, and of each level's outermost derivative.

    .venv/bin/python bench/composition_time.py
    .venv/bin/python bench/composition_time.py matmul_tanh hessian,jvp,hessian"""
import inspect
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = (("matmul_tanh", "hessian,jvp,hessian"), ("helper_call", "grad,hessian,hessian"))


def one(fname, chain):
    """(first call s, second call s, generated functions, lines of the largest)."""
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    import numpy as np

    import composition_sweep_cases as cases
    import secant
    import secant.numpy as snp
    from secant import transforms
    secant.config.update("enable_x64", True)
    cases.check("chain", ["grad"])          # imports and the first transform's one-off costs
    sizes = []
    transforms.GENERATE_HOOKS.append(
        lambda fn, mode, wrt, staged, gen: sizes.append(len(inspect.getsource(gen).splitlines())))
    g, _, _, (x, w) = cases.compose(fname, chain.split(","))
    times = []
    for _ in range(2):
        start = time.process_time()
        np.asarray(g(snp.asarray(x), w))
        times.append(time.process_time() - start)
    return times[0], times[1], len(sizes), max(sizes)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(*one(sys.argv[2], sys.argv[3]))
        return
    cases = [tuple(sys.argv[1:3])] if len(sys.argv) > 2 else CASES
    print("deep compositions: CPU seconds of the first and second call (fresh process each)")
    for fname, chain in cases:
        out = subprocess.run([sys.executable, __file__, "--one", fname, chain],
                             capture_output=True, text=True, check=True).stdout.split()
        first, second, n, big = float(out[0]), float(out[1]), int(out[2]), int(out[3])
        names = chain.split(",")[::-1]         # (innermost first)
        print(f"  {'('.join(names)}({fname}){')' * (len(names) - 1)}: first "
              f"{first:6.2f} s  second {second:6.3f} s  {n} functions generated, the largest "
              f"{big} lines")


if __name__ == "__main__":
    main()

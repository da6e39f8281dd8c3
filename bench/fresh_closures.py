"""A training loop that writes a fresh lambda per step (issue 19, issue 15):

    for batch in batches: g = secant.grad(lambda p: loss(p, batch))(params)

Each step's lambda is a new function object with the same code: secant/code_cache.py binds the
derivative generated for the first one to each new one's cells instead of transforming it again.
Per-step seconds (median of rounds over 20 closures) with that cache and without it (every step
transformed anew, as before), against a cached grad(loss)(params, batch), for grad,
value_and_grad, vmap(grad) and jit(grad).

    .venv/bin/python bench/fresh_closures.py"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import secant                       # noqa: E402
import secant.numpy as snp          # noqa: E402
from secant import code_cache       # noqa: E402

STEPS = 20
CLOCK = time.process_time if os.environ.get("SECANT_BENCH_CPU") else time.perf_counter


def loss(p, batch):
    h = snp.tanh(batch @ p["w"] + p["b"])
    return snp.mean((h - 1.0) ** 2)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    params = {"w": rng.standard_normal((4, 3)).astype(np.float32),
              "b": np.zeros(3, np.float32)}
    batches = [rng.standard_normal((8, 4)).astype(np.float32) for _ in range(STEPS)]
    return params, batches


def _stacked(params):
    return {k: np.stack([v, v + 1]) for k, v in params.items()}


TRANSFORMS = {
    "grad": lambda f, p: secant.grad(f)(p),
    "value_and_grad": lambda f, p: secant.value_and_grad(f)(p),
    "vmap(grad)": lambda f, p: secant.vmap(secant.grad(f))(_stacked(p)),
    "jit(grad)": lambda f, p: secant.jit(secant.grad(f))(p),
}


_SEED = [0]     # (never the same batches twice: jit would find their programs compiled)


def per_step(name, cached, rounds=3):
    """Median seconds per step of the fresh-lambda loop for transform `name`."""
    params, batches = _data()
    run = TRANSFORMS[name]
    was = code_cache.enabled[0]
    code_cache.enabled[0] = cached
    try:
        run(lambda p: loss(p, batches[0]), params)      # (loss's own derivatives made)
        times = []
        for _ in range(rounds):
            _SEED[0] += 1
            batches = _data(_SEED[0])[1]    # (new values each round, as a training loop's:
            start = CLOCK()                 # jit compiles a program per closure's values)
            for batch in batches:
                run(lambda p: loss(p, batch), params)   # noqa: B023 (the pattern measured)
            times.append((CLOCK() - start) / len(batches))
        return statistics.median(times)
    finally:
        code_cache.enabled[0] = was


def cached_grad_step():
    params, batches = _data()
    g = secant.grad(loss)
    g(params, batches[0])
    times = []
    for _ in range(3):
        start = CLOCK()
        for batch in batches:
            g(params, batch)
        times.append((CLOCK() - start) / len(batches))
    return statistics.median(times)


def one_lambda_step():
    """Seconds per step of grad of one lambda made once, its closure cell rebound to each
    batch: the same derivative run, with no function made per step (the anchor)."""
    params, batches = _data()

    def make():
        batch = batches[0]

        def set_batch(b):
            nonlocal batch
            batch = b
        return (lambda p: loss(p, batch)), set_batch
    f, set_batch = make()
    g = secant.grad(f)
    g(params)
    times = []
    for _ in range(3):
        start = CLOCK()
        for batch in batches:
            set_batch(batch)
            g(params)
        times.append((CLOCK() - start) / len(batches))
    return statistics.median(times)


def rows():
    """Summary rows for run_all: a fresh lambda's grad step against grad of one lambda made
    once (target: within 1.5x; what is left is making the grad function), and against a
    cached grad(loss)(params, batch) (no target: the lambda's derivative calls loss and its
    vjp, a derivative of a different shape)."""
    fresh = per_step("grad", True)
    return [("fresh lambda per step, grad", fresh, "one lambda's grad", one_lambda_step(), 1.5),
            ("fresh lambda per step, grad", fresh, "grad(loss)", cached_grad_step(), None)]


def main():
    print(f"fresh closures: grad(lambda p: loss(p, batch)) per step ({STEPS} closures, median)")
    anchor = cached_grad_step()
    print(f"  cached grad(loss)(params, batch)   {anchor * 1e3:8.2f} ms")
    print(f"  one lambda's grad, cell rebound    {one_lambda_step() * 1e3:8.2f} ms")
    for name in TRANSFORMS:
        before, after = per_step(name, False), per_step(name, True)
        print(f"  {name:15s} transformed anew {before * 1e3:8.2f} ms   code cache "
              f"{after * 1e3:8.2f} ms   ({before / after:5.1f}x; {after / anchor:5.2f}x cached)")


if __name__ == "__main__":
    main()

"""Peak memory of secant's eager gradients against hand-written NumPy ones (issues 19 and 20):
tracemalloc's peak above the memory held before the call (NumPy reports its buffers to
tracemalloc), the gradient it returns included.

- the MLP loss of bench/lean_functions.py, 784-512-512-10, batch 128, float32;
- a 10,000-step loop (acc = acc + sin(x * i) on 1,000 float32s) written as a Python for loop,
  lax.fori_loop and lax.scan;
- a loop over 10,000 rows of 16 float32s (`for row in x`, bench/row_loops.py).

    .venv/bin/python bench/memory.py

Not a test: it prints numbers."""
import gc
import tracemalloc

import numpy as np

import secant
import handwritten_grads as hand
import lean_functions as funcs
from lean import written_with

STEPS = 10_000


def peak_kib(fn):
    """KiB that fn() allocates at its peak, above what was held before it ran. The warm call
    runs after the collection: a full collection empties CPython's free lists (tuples, floats,
    ...), which the next call fills again, and tracemalloc would count those cached objects
    (up to ~100 KiB for a loop of small indexing ops, whatever its length) as the call's."""
    gc.collect()
    fn()                     # warm: transformation caches, first-call allocations, free lists
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1]
    del out
    return (peak - before) / 1024


def import_autograd():
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None, None
    return autograd, anp


def row(label, ours, theirs, autograd_kib=None):
    line = (f"  {label:<38} secant {ours:8.0f} KiB   hand-written {theirs:8.0f} KiB"
            f"   {ours / theirs:7.2f}x")
    if autograd_kib:
        line += f"   autograd {autograd_kib:8.0f} KiB"
    print(line)


def main():
    tracemalloc.start()
    autograd, anp = import_autograd()
    rng = np.random.default_rng(0)
    print("memory: tracemalloc peak of one eager gradient call (result included)" +
          ("" if autograd else "; autograd not importable: its column left out"))
    args = funcs.inputs("mlp_loss", rng)
    g = secant.grad(funcs.mlp_loss)
    ag = autograd and autograd.grad(written_with(anp, None, "mlp_loss"))
    row("MLP loss 784-512-512-10, batch 128", peak_kib(lambda: g(*args)),
        peak_kib(lambda: hand.mlp_loss(*args)), ag and peak_kib(lambda: ag(*args)))
    loops(funcs.LOOPS, autograd, anp)
    row_loop()


def loops(names=funcs.LOOPS, autograd=None, anp=None):
    """The 10,000-step loop's row per loop of `names` (tracemalloc started)."""
    x, _ = funcs.inputs("python_loop", np.random.default_rng(0))
    for name in names:
        g = secant.grad(getattr(funcs, name))
        ag = autograd and name == "python_loop" and autograd.grad(
            written_with(anp, None, name))
        row(f"{STEPS}-step {name} ({x.size} floats)", peak_kib(lambda: g(x, STEPS)),
            peak_kib(lambda: hand.python_loop(x, STEPS)), ag and peak_kib(lambda: ag(x, STEPS)))


def row_loop(n=10_000):
    """A loop over n rows (`for row in x`, 16 float32s a row: bench/row_loops.py), whose
    reverse loop adds each chunk of rows' cotangents after it (tracemalloc started)."""
    import row_loops
    x = np.random.default_rng(0).normal(size=(n, row_loops.D)).astype(np.float32)
    g = secant.grad(row_loops.over_rows)
    row(f"{n}-row for row in x ({row_loops.D} floats)", peak_kib(lambda: g(x)),
        peak_kib(lambda: row_loops.row_sum_grad_by_hand(x)))


if __name__ == "__main__":
    main()

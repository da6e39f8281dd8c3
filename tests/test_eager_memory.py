"""Issue 19: the eager reverse pass keeps only live residuals. Generated functions drop each
local after its last use (codegen/release.py), and eager loop gradients hold the saved carries
once. Peaks are tracemalloc's (NumPy reports its buffers to it): deterministic byte counts, no
timings. The releasing itself must never change what a function computes."""
import ast
import gc
import os
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from secant.codegen.release import release_dead_names

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import handwritten_grads as hand   # noqa: E402
import lean_functions as funcs     # noqa: E402


def _peak_bytes(fn):
    fn()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del out
    return peak - before


def test_eager_mlp_gradient_peaks_no_higher_than_the_hand_written_one():
    rng = np.random.default_rng(0)
    params = {}
    sizes = (256, 256, 256, 10)
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:]), 1):
        params[f"w{i}"] = (rng.normal(size=(m, n)) / np.sqrt(m)).astype(np.float32)
        params[f"b{i}"] = (0.1 * rng.normal(size=n)).astype(np.float32)
    x = rng.normal(size=(64, sizes[0])).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)]
    g = secant.grad(funcs.mlp_loss)
    ours = _peak_bytes(lambda: g(params, x, y))
    theirs = _peak_bytes(lambda: hand.mlp_loss(params, x, y))
    # every forward temporary and cotangent held to the end would be ~1.9x the hand-written peak
    assert ours <= 1.1 * theirs, (ours, theirs)


@pytest.mark.parametrize("name", ["fori_loop", "scan_loop"])
def test_eager_loop_gradient_saves_no_carry_the_reverse_pass_does_not_read(name):
    """acc = acc + sin(x * i): no derivative reads acc, so no carry is saved (issue 20's
    to-be-recorded analysis); a few rows of x's size are live at once (measured 0.003x of the
    2,000 carries for fori, 0.018x for scan; saving them once would be 1x, twice 2x)."""
    steps, x = 2000, np.linspace(0, 1, 1000, dtype=np.float32)
    g = secant.grad(getattr(funcs, name))
    np.testing.assert_allclose(np.asarray(g(x, steps)), hand.python_loop(x, steps), rtol=1e-3,
                               atol=1e-2)
    carries = steps * x.nbytes
    assert _peak_bytes(lambda: g(x, steps)) < 0.06 * carries


def _scan_ys_unread(x, n):
    def step(acc, i):
        acc = acc + snp.sin(x * i)
        return acc, acc
    acc, ys = lax.scan(step, snp.zeros_like(x), snp.arange(n, dtype=x.dtype))
    return snp.sum(acc)


def test_cotangent_of_unread_scan_outputs_costs_no_memory():
    """The zero cotangent of the stacked ys nobody reads is one broadcast zero, not n rows."""
    steps, x = 2000, np.linspace(0, 1, 1000, dtype=np.float32)
    g = secant.grad(_scan_ys_unread)
    np.testing.assert_allclose(np.asarray(g(x, steps)), hand.python_loop(x, steps), rtol=1e-3,
                               atol=1e-2)
    stack = steps * x.nbytes        # the carries saved and the ys the program itself stacks
    assert _peak_bytes(lambda: g(x, steps)) < 2.25 * stack       # (a zero ys cotangent: 3x)


def test_eager_scan_ys_are_what_stacking_gives():
    """ys go into preallocated rows; a y that does not fit the first falls back to stacking."""
    def f(c, x):
        return c + x, (c * x, {"pos": x > 0, "none": None})
    for reverse in (False, True):
        carry, (prod, d) = lax.scan(f, 0.0, snp.arange(5.0), reverse=reverse)
        order = range(4, -1, -1) if reverse else range(5)
        c, want = 0.0, [0.0] * 5
        for i in order:
            want[i], c = c * i, c + i
        np.testing.assert_allclose(np.asarray(prod), want)
        assert prod.dtype == np.float32 and not prod.weak_type
        assert d["none"] is None and d["pos"].dtype == np.bool_
        assert float(carry) == 10.0
    # a weakly typed Python float for the first steps, an array after: stacked as a list is
    ys = lax.scan(lambda c, x: (c, 1.0 if x < 2 else x), 0, snp.arange(5.0))[1]
    np.testing.assert_array_equal(np.asarray(ys), [1, 1, 2, 3, 4])
    assert not ys.weak_type
    # weak ys stay weak
    assert lax.scan(lambda c, x: (c, c), 1.0, length=3)[1].weak_type


def _released(source):
    fdef = ast.parse(textwrap.dedent(source)).body[0]
    return ast.unparse(release_dead_names(fdef))


def test_release_deletes_plain_locals_after_their_last_use():
    out = _released("""
        def f(x, y):
            a = x * 2
            b, c = a + 1, a - 1
            d = b * y
            return d + c
        """)
    lines = [line.strip() for line in out.splitlines()]
    assert lines[lines.index("b, c = (a + 1, a - 1)") + 1] == "del a"
    assert lines[lines.index("d = b * y") + 1] == "del b"
    assert "del x" not in out and "del y" not in out and "del d" not in out   # params, return


@pytest.mark.parametrize("source, kept, released", [
    # bound in one branch only, a loop target, a closure, a walrus, an annotation, locals(),
    # breakpoint() (pdb sees every local)
    ("def f(x):\n    if x > 0:\n        a = 1\n    b = x\n    return x\n", "a", "b"),
    ("def f(x):\n    for i in range(3):\n        x = x + i\n    j = i\n    return x\n", "i", "j"),
    ("def f(x):\n    a = x\n    g = lambda: a\n    y = 1\n    return g()\n", "a", "y"),
    ("def f(x):\n    a = (w := x)\n    y = w\n    return x\n", "w", "a"),
    ("def f(x):\n    a: int\n    y = 1\n    return x\n", "a", "y"),
    ("def f(x):\n    a = x\n    y = locals()\n    return y\n", "a", None),
    ("def f(x):\n    a = x\n    y = breakpoint if x is None else a\n    return x\n", "a", None),
])
def test_release_leaves_names_that_may_be_unbound_or_captured(source, kept, released):
    out = _released(source)
    deleted = {t.id for node in ast.walk(ast.parse(out)) if isinstance(node, ast.Delete)
               for t in node.targets}
    assert kept not in deleted, out
    assert (released in deleted) if released else not deleted, out
    ns = {}
    exec(compile(out, "<released>", "exec"), ns)
    exec(compile(source, "<source>", "exec"), ns_orig := {})
    assert ns["f"](1) == ns_orig["f"](1)


def test_release_keeps_results_in_generated_code():
    """A generated gradient with loops, closures and helpers gives the hand-written values."""
    for name in ("rnn_loss", "python_loop", "while_loop", "helpers", "attention"):
        args = funcs.inputs(name, np.random.default_rng(3), np.float32, small=True)
        got = secant.grad(getattr(funcs, name))(*args)
        np.testing.assert_allclose(np.asarray(got), getattr(hand, name)(*args), rtol=1e-4,
                                   atol=1e-5)

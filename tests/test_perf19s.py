"""Issue 19 (speed19a): a grad's transformation does work linear in the function's size, and
the desugaring and normalising passes do not each walk the whole tree. Checked by counting
work, not time: the Python calls the transformation makes (a generator's every step counts,
so a scan written as `any(s is t for t in top)` per statement shows as calls; before:
2.37x the calls for twice the statements, dataflow.shift_only's scan of the top level per
statement among them) and the nodes hygiene.walk visits against the nodes of the function's
tree (before: 33 visits a node, the passes of desugar.py each walking the tree for a
construct that most functions do not hold; now they ask hygiene.Census first)."""
import ast
import sys

import numpy as np

import secant
from secant.transformer import hygiene
from test_lean20c import fd_grad
from test_perf19v import _straight_line


def _work(fn):
    """(Python calls, nodes hygiene.walk visits) of grad(fn)'s transformation."""
    walk_code, counts = hygiene.walk.__code__, [0, 0]

    def profile(frame, event, arg):
        if event == "call":
            counts[0] += 1
            counts[1] += frame.f_code is walk_code      # (one resumption per node visited)
    sys.setprofile(profile)
    try:
        secant.source(secant.grad(fn, argnums=(0, 1)))
    finally:
        sys.setprofile(None)
    return counts


def _nodes(n, tmp_path):
    return sum(1 for _ in ast.walk(ast.parse((tmp_path / f"straight_{n}.py").read_text())))


def test_transformation_work_grows_linearly(tmp_path):
    small, _ = _work(_straight_line(300, tmp_path))
    large, _ = _work(_straight_line(600, tmp_path))
    assert large <= 2.15 * small, (small, large)        # (now 2.0x; before 2.37x)


def test_passes_walk_the_tree_a_few_times(tmp_path):
    _, visits = _work(_straight_line(300, tmp_path))
    nodes = _nodes(300, tmp_path)
    # every walk: the desugaring passes', normalisation's, and those of the derivative's lines
    # (ad/cse.py, ad/fold.py, codegen/release.py): now 18 visits a node, before 33
    assert visits <= 24 * nodes, (visits, nodes, visits / nodes)


def test_census_skips_keep_the_rewrites(tmp_path, x64):
    """A function holding the constructs the census lets passes skip is still rewritten: a
    starred call, a walrus and a keyword-only SimpleNamespace, against central differences."""
    path = tmp_path / "census_mod.py"
    path.write_text(
        "import types\n"
        "import secant.numpy as snp\n\n\n"
        "def h(a, b):\n"
        "    return a * snp.sin(b)\n\n\n"
        "def f(x, y):\n"
        "    pair = (x, y)\n"
        "    ns = types.SimpleNamespace(w=x * 2.0)\n"
        "    z = h(*pair) + (t := snp.tanh(y)) * ns.w\n"
        "    return snp.sum(z * t)\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("census_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(19)
    x, y = rng.uniform(0.1, 0.5, size=3), rng.uniform(0.1, 0.5, size=3)
    gx, gy = secant.grad(mod.f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, fd_grad(lambda v: mod.f(v, y), x), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(gy, fd_grad(lambda v: mod.f(x, v), y), rtol=1e-5, atol=1e-8)

"""Issue 19 (perf19v): transformation time linear in the function's size. ad/accumulate.py's
merge of a cotangent's contributions across user lines looked, from each first contribution,
for the cotangent's next mention however far it was (a straight-line function reading an early
value late: quadratic), though no merge may name more than MAX_SECTIONS user lines; and it
rebuilt the whole list of lines for each merge. Checked by counting the lines the scan reads
(not by timing), and the derivatives against float64 central differences; accumulate reads the
shared parsed trees (walker.parsed) and never changes one."""
import ast
import importlib.util

import numpy as np

import secant
import secant.numpy as snp
from secant.ad import accumulate, fold
from test_lean20c import fd_grad

TEMPLATES = [
    "v{i} = snp.sin(v{p}) + v{j}",
    "v{i} = v{p} * v{j} - 0.5",
    "v{i} = snp.tanh(v{p}) * 2.0",
    "v{i} = snp.maximum(v{p}, v{j})",
    "v{i} = snp.exp(snp.tanh(v{p}))",
]


def _straight_line(n, tmp_path):
    """def f(v0, v1): n statements, each reading the previous value and an earlier one (the
    generator of bench/transform_time.py), loaded from a file of its own."""
    lines = ["import secant.numpy as snp", "", "", "def f(v0, v1):"]
    for i in range(2, n + 2):
        lines.append("    " + TEMPLATES[i % len(TEMPLATES)].format(
            i=i, p=i - 1, j=(i * 7919) % (i - 1)))
    lines.append(f"    return snp.sum(v{n + 1})")
    path = tmp_path / f"straight_{n}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"straight_{n}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.f


def _lines_scanned(fn, monkeypatch):
    """How many lines ad/accumulate.py's scans read (fold._mutates asks each) for grad(fn)."""
    count, inside = [0], [False]
    mutates, summed = fold._mutates, accumulate.summed

    def counted(ln, names):
        count[0] += inside[0]
        return mutates(ln, names)

    def summing(*args, **kwargs):
        inside[0] = True
        try:
            return summed(*args, **kwargs)
        finally:
            inside[0] = False
    monkeypatch.setattr(fold, "_mutates", counted)
    monkeypatch.setattr(accumulate, "summed", summing)
    secant.source(secant.grad(fn, argnums=(0, 1)))
    assert count[0], "accumulate.summed scanned no line"
    return count[0]


def test_accumulate_scans_grow_linearly(tmp_path, monkeypatch):
    small = _lines_scanned(_straight_line(150, tmp_path), monkeypatch)
    large = _lines_scanned(_straight_line(300, tmp_path), monkeypatch)
    # (before: 4.2x for twice the statements, each scan running to the cotangent's far use)
    assert large <= 2.5 * small, (small, large)


def test_straight_line_grad_against_differences(tmp_path, x64):
    f = _straight_line(40, tmp_path)
    rng = np.random.default_rng(19)
    x, y = rng.uniform(0.1, 0.5, size=3), rng.uniform(0.1, 0.5, size=3)
    gx, gy = secant.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, fd_grad(lambda v: f(v, y), x), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gy, fd_grad(lambda v: f(x, v), y), rtol=1e-6, atol=1e-9)


def three_projections(x, wq, wk, wv):
    q = x @ wq
    k = x @ wk
    v = x @ wv
    return snp.sum(q * k) + snp.sum(snp.tanh(v))


def test_accumulate_leaves_the_shared_trees_as_they_are(monkeypatch, x64):
    seen = []
    original = fold.parsed

    def recording(code, kind="stmt"):
        tree = original(code, kind)
        seen.append((code, kind, tree, ast.dump(tree)))
        return tree
    monkeypatch.setattr(fold, "parsed", recording)
    source = secant.source(secant.grad(three_projections))
    # (the sum accumulate wrote, v_bar then folded in on two rows: ad/fold.py wrapped)
    assert "+ matmul_grad_x(k_bar, x, wk) + matmul_grad_x(q_bar, x, wq))" in source
    assert seen
    for code, kind, tree, before in seen:
        fresh = ast.parse(code + "\n    pass" if kind == "block" else code)
        assert ast.dump(tree) == ast.dump(fresh) == before, code
    rng = np.random.default_rng(20)
    args = [rng.normal(size=s) for s in ((5, 3), (3, 4), (3, 4), (3, 4))]
    np.testing.assert_allclose(
        secant.grad(three_projections)(*args),
        fd_grad(lambda v: three_projections(v, *args[1:]), args[0]), rtol=1e-6, atol=1e-8)

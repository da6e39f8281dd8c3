"""Issue 19 (perf19a): grad's transformation time linear in the function's size. ad/fold.py
looked for each cotangent accumulation's next read up to hundreds of lines on, past its user
line's comment, where it could not fold (quadratic); the scan now stops there unless a
grad_of_fields line reads the name. Checked here without timings: the lines that scan examines
per statement do not grow with the function's length, and the derivative of such a function
still matches float64 central differences."""
import importlib.util

import numpy as np
from numpy.testing import assert_allclose

import secant
from secant import transforms
from secant.ad import fold

TEMPLATES = [
    "v{i} = snp.sin(v{p}) + v{j}",
    "v{i} = v{p} * v{j} - 0.5",
    "v{i} = snp.tanh(v{p}) * 2.0",
    "v{i} = snp.maximum(v{p}, v{j})",
    "v{i} = snp.exp(snp.tanh(v{p}))",
]


def _straight_line(n, tmp_path, tag):
    """def f(v0, v1): n statements, each reading the previous value and an earlier one (far
    back: its cotangent's accumulations lie hundreds of lines apart), as bench/grad.py's."""
    lines = ["import secant.numpy as snp", "", "", "def f(v0, v1):"]
    for i in range(2, n + 2):
        lines.append("    " + TEMPLATES[i % len(TEMPLATES)].format(
            i=i, p=i - 1, j=(i * 7919) % (i - 1)))
    lines.append(f"    return snp.sum(v{n + 1})")
    path = tmp_path / f"perf19a_{tag}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"perf19a_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def _lines_scanned(fn, monkeypatch):
    """How many lines fold's scans for a use examined while grad(fn) was generated."""
    count = [0]
    original = fold._mutates

    def counting(ln, names):
        count[0] += 1
        return original(ln, names)
    monkeypatch.setattr(fold, "_mutates", counting)
    transforms.generate(fn, (0, 1), "grad")
    monkeypatch.setattr(fold, "_mutates", original)
    return count[0]


def test_fold_scans_do_not_grow_with_the_function(tmp_path, monkeypatch):
    small = _lines_scanned(_straight_line(100, tmp_path, "s100"), monkeypatch) / 100
    large = _lines_scanned(_straight_line(500, tmp_path, "s500"), monkeypatch) / 500
    # (before: 7.5 lines per scan at 100 statements, 66 at 1000; now under 2 at both)
    assert large <= 1.5 * small + 1, (small, large)


def _central(f, args, i, eps=1e-6):
    args = [np.asarray(a, np.float64) for a in args]
    out = np.zeros_like(args[i])
    for idx in np.ndindex(args[i].shape):
        up = [a.copy() for a in args]
        down = [a.copy() for a in args]
        up[i][idx] += eps
        down[i][idx] -= eps
        out[idx] = (float(f(*up)) - float(f(*down))) / (2 * eps)
    return out


def test_long_straight_line_gradient_matches_central_differences(tmp_path, x64):
    f = _straight_line(60, tmp_path, "s60")
    x = np.linspace(0.5, 0.9, 3)
    y = np.linspace(-0.6, -0.2, 3)
    gx, gy = secant.grad(f, argnums=(0, 1))(x, y)     # (v0 is read by no statement: gx = 0)
    assert_allclose(gx, _central(f, (x, y), 0), rtol=1e-5, atol=1e-7)
    assert_allclose(gy, _central(f, (x, y), 1), rtol=1e-5, atol=1e-7)

"""Smoke tests of examples/: each runs in a subprocess at a reduced size with this Python, exits
0 and prints the lines that state its checks (examples/data_parallel.py is tested in
tests/test_pmap.py; quickstart.py runs as `make demo`)."""
import os
import re
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def run_example(name, *args, tmp_path=None, timeout=120):
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args],
                          capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=str(tmp_path) if tmp_path else None)
    assert proc.returncode == 0, (f"{name} exited {proc.returncode}\n--- stdout\n"
                                  f"{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")
    return proc.stdout


def max_errors(out):
    return [float(v) for v in re.findall(r"max error ([0-9.e+-]+)", out)]


def test_teach_ad(tmp_path):
    out = run_example("teach_ad.py", "--out", str(tmp_path / "generated"), tmp_path=tmp_path)
    for step in ("1. A polynomial", "2. The chain rule", "3. A call to your own helper",
                 "4. A loop", "5. A data-dependent if, under jit", "6. A scan",
                 "7. A Hessian-vector product"):
        assert step in out
    assert "def poly_grad(x):" in out and "def poly_jvp(x, x_dot):" in out
    assert "lax.cond(pred, y_if_true, y_if_false)" in out      # the functionalised if
    assert "def energy_grad_jvp(x, x_dot):" in out
    assert "[horner] grad max error" in out and "[energy] grad max error" in out
    assert "all 7 steps match finite differences" in out
    errors = max_errors(out)
    assert len(errors) >= 14 and max(errors) < 1e-6
    saved = os.listdir(tmp_path / "generated")
    for name in ("poly_grad.py", "poly_jvp.py", "layer_loss_grad.py", "bounce_grad.py",
                 "rnn_sum_grad.py", "energy_hvp.py", "bounce_functionalised.py"):
        assert name in saved
    # a saved derivative is a standalone module: it imports and runs
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import poly_grad; "
            "print(float(poly_grad.poly_grad(0.7)))")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "generated")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == pytest.approx(9 * 0.49 - 4 * 0.7 + 1)


def test_mlp_digits(tmp_path):
    out = run_example("mlp_digits.py", "--epochs", "2", "--out", str(tmp_path), tmp_path=tmp_path)
    match = re.search(r"final test accuracy: ([0-9.]+)", out)
    assert match, out
    assert float(match.group(1)) > 0.5                          # 2 epochs reach about 0.9
    assert (tmp_path / "mlp_digits.png").stat().st_size > 10_000


def test_per_example_clipping():
    out = run_example("per_example_clipping.py", "--steps", "30", "--show-source")
    assert "def loss_grad_vmap(params, x, y):" in out
    assert "against a Python loop of grad: max error" in out
    assert "clipped mean gradient" in out
    assert max(max_errors(out)) < 1e-5
    assert re.search(r"DP-SGD: 30 steps", out)


def test_rnn_scan():
    out = run_example("rnn_scan.py", "--steps", "30", "--show-source")
    assert "def step_vjp(" in out and "scan_vjp(step_vjp" in out
    match = re.search(r"test loss \(mean squared error of the next value\): ([0-9.]+) -> "
                      r"([0-9.]+)", out)
    assert match, out
    assert float(match.group(2)) < float(match.group(1))


def test_newton():
    out = run_example("newton.py", "--n", "300", "--d", "5")
    assert "grad against the closed form: max error" in out
    assert max(max_errors(out)) < 1e-12
    match = re.search(r"converged in (\d+) Newton steps \([0-9.]+ s\): gradient norm "
                      r"([0-9.e+-]+)", out)
    assert match, out
    assert int(match.group(1)) <= 10 and float(match.group(2)) < 1e-5


def test_custom_rules():
    out = run_example("custom_rules.py")
    assert "return log1pexp_vjp(" in out                          # the rule's vjp, by name
    assert "log1pexp_jvp((x,), (x_dot,))" in out                # the user's rule, by name
    assert "y, y_res = clip_gradient_fwd_checked((-1.0), 1.0, x)" in out
    assert "return clip_gradient_bwd_checked(y_bar, y_res, (-1.0), 1.0, x)" in out
    assert "clip_gradient_bwd(lo, hi, res, out_bar)" in out
    assert "custom_jvp: grad max error" in out and "the naive grad has 1 nan" in out
    assert "custom_vjp: clipped grad max error 0.00e+00" in out
    assert "custom rules: all checks passed" in out


def test_library_does_not_import_example_dependencies():
    code = ("import sys, secant, secant.numpy, secant.lax, secant.random; "
            "print(sorted(m for m in ('sklearn', 'matplotlib', 'tqdm', 'pygments') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"

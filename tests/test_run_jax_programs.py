"""`python -m secant run`: JAX programs run unchanged, with `import jax` resolved to secant.

The programs in tests/jax_programs/ are written against jax.* (they run under JAX too); each
prints one `RESULT {json}` line, checked here against values computed independently with NumPy.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "jax_programs")


def run(script, *args, show_source=None, cwd=None):
    cmd = [sys.executable, "-m", "secant", "run"]
    if show_source:
        cmd += ["--show-source", str(show_source)]
    cmd += [str(script), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=600)


def result(proc):
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0][len("RESULT "):])


def program(tmp_path, text, name="prog.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# --- the three programs ---------------------------------------------------------------------------
def test_linear_regression_matches_numpy_gradient_descent():
    steps, lr = 60, 0.1
    r = result(run(os.path.join(PROGRAMS, "linear_regression.py"), steps, lr))
    rng = np.random.RandomState(0)
    x = rng.randn(64, 3).astype(np.float32).astype(np.float64)
    y = (x @ np.array([1.5, -2.0, 0.5]) + 0.3
         + 0.01 * rng.randn(64).astype(np.float32).astype(np.float64))
    w, b = np.zeros(3), 0.0
    for _ in range(steps):          # d/dw mean((xw + b - y)^2) = 2/n x^T (xw + b - y)
        err = x @ w + b - y
        w, b = w - lr * 2 * x.T @ err / len(y), b - lr * 2 * err.mean()
    np.testing.assert_allclose(r["w"], w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r["b"], b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r["loss"], np.mean((x @ w + b - y) ** 2), rtol=1e-3, atol=1e-6)


def test_per_example_gradients_match_numpy():
    r = result(run(os.path.join(PROGRAMS, "per_example_gradients.py")))
    rng = np.random.RandomState(1)
    xs = rng.randn(8, 4).astype(np.float32).astype(np.float64)
    ys = (rng.rand(8) > 0.5).astype(np.float64)
    w, b = np.array([0.5, -0.25, 0.1, 0.0]), 0.2
    p = 1 / (1 + np.exp(-(xs @ w + b)))
    g_w = (p - ys)[:, None] * xs                # d/dw of the logistic loss, per example
    g_b = p - ys
    np.testing.assert_allclose(r["w"], g_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r["b"], g_b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r["mean_w"], g_w.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r["full_w"], g_w.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r["full_b"], g_b.mean(), rtol=1e-5, atol=1e-6)
    loss = -(ys * np.log(p) + (1 - ys) * np.log(1 - p)).mean()
    np.testing.assert_allclose(r["loss"], loss, rtol=1e-5)


def _stax_reference(initial, steps=50, lr=0.01):
    """The program's MLP (Dense(8), Relu, Dense(1)) trained by Adam, by hand in float64."""
    rng = np.random.RandomState(2)
    x = rng.randn(32, 2).astype(np.float32).astype(np.float64)
    y = np.sin(x[:, :1]) + 0.5 * x[:, 1:]
    (w1, b1), relu, (w2, b2) = [[np.array(a, np.float64) for a in layer] for layer in initial]
    assert relu == []
    params = [w1, b1, w2, b2]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    beta1, beta2, eps = 0.9, 0.999, 1e-8

    def grads(w1, b1, w2, b2):
        z = x @ w1 + b1
        h = np.maximum(z, 0)
        out = h @ w2 + b2
        d_out = 2 * (out - y) / out.size
        d_z = (d_out @ w2.T) * (z > 0)
        return [x.T @ d_z, d_z.sum(0), h.T @ d_out, d_out.sum(0)], np.mean((out - y) ** 2)

    for i in range(steps):
        g, _ = grads(*params)
        for k in range(4):
            m[k] = (1 - beta1) * g[k] + beta1 * m[k]
            v[k] = (1 - beta2) * g[k] ** 2 + beta2 * v[k]
            mhat, vhat = m[k] / (1 - beta1 ** (i + 1)), v[k] / (1 - beta2 ** (i + 1))
            params[k] = params[k] - lr * mhat / (np.sqrt(vhat) + eps)
    return params, grads(*params)[1]


@pytest.mark.skipif(importlib.util.find_spec("secant.example_libraries") is None,
                    reason="secant.example_libraries (stax, optimizers) is not on this branch")
def test_stax_adam_training_matches_numpy():
    r = result(run(os.path.join(PROGRAMS, "stax_training.py")))
    params, loss = _stax_reference(r["initial"])
    (w1, b1), _, (w2, b2) = r["final"]
    for got, want in zip((w1, b1, w2, b2), params):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(r["loss"], loss, rtol=1e-3)
    assert r["loss"] < 0.1 * r["loss0"]


# --- the run itself -----------------------------------------------------------------------------
def test_program_sees_its_argv_name_and_file(tmp_path):
    path = program(tmp_path, """
        import json, sys
        import jax, jax.numpy as jnp
        print("RESULT " + json.dumps({"argv": sys.argv, "name": __name__, "file": __file__,
                                      "sum": float(jnp.sum(jnp.arange(4.0)))}))
        """)
    r = result(run(path, "--flag", "3"))
    assert r == {"argv": [str(path), "--flag", "3"], "name": "__main__", "file": str(path),
                 "sum": 6.0}


def test_jax_modules_resolve_to_secant(tmp_path):
    path = program(tmp_path, """
        import json
        import jax
        import jax.numpy as jnp
        import jax.scipy.special
        from jax import lax, random, tree_util, nn
        from jax.scipy.stats import norm
        from jax.scipy import linalg
        import jax.test_util
        from jax.test_util import check_grads
        import secant
        check_grads(jnp.sin, (0.5,), order=2)
        jax.config.update("jax_platform_name", "cpu")     # secant runs on CPU
        from jax import config
        config.update("jax_enable_x64", True)
        x64 = jnp.ones(2).dtype.name
        jax.config.update("jax_enable_x64", False)
        print("RESULT " + json.dumps({
            "same": [jnp.sin is secant.numpy.sin, lax.scan is secant.lax.scan,
                     random.normal is secant.random.normal, nn.relu is secant.nn.relu,
                     tree_util.tree_map is secant.tree_util.tree_map,
                     jax.grad is secant.grad, jax.jit is secant.jit,
                     jax.scipy.special.erf is secant.scipy.special.erf,
                     jnp.linalg.norm is secant.numpy.linalg.norm,
                     jax.Array is secant.Array],
            "x64": [x64, jnp.ones(2).dtype.name, jax.config.jax_enable_x64],
            "logpdf": float(norm.logpdf(0.0)),
            "hasattr": [hasattr(jax, "not_a_jax_name"), hasattr(jnp, "sin")],
            "getattr": getattr(jnp, "not_a_name", "default")}))
        """)
    r = result(run(path))
    assert all(r["same"]), r["same"]
    np.testing.assert_allclose(r["logpdf"], -0.5 * np.log(2 * np.pi), rtol=1e-6)
    assert r["hasattr"] == [False, True]
    assert r["getattr"] == "default"
    assert r["x64"] == ["float64", "float32", False]


@pytest.mark.parametrize("line, missing", [
    ("y = jax.numpy.not_a_function(1.0)", "jax.numpy.not_a_function"),
    ("from jax import not_a_name", "jax.not_a_name"),
    ("import jax.experimental.sparse", "jax.experimental.sparse"),
    ("from jax.numpy import not_a_function", "jax.numpy.not_a_function"),
    ("y = jax.lax.not_a_primitive", "jax.lax.not_a_primitive"),
    ('jax.config.update("jax_platform_name", "gpu")',
     "jax.config.update('jax_platform_name', 'gpu') (secant runs on CPU)"),
])
def test_missing_api_names_program_line_and_name(tmp_path, line, missing):
    path = program(tmp_path, f"""
        import jax
        import jax.numpy as jnp
        x = jnp.ones(3)
        {line}
        print("never reached")
        """)
    proc = run(path)
    assert proc.returncode == 1
    assert "never reached" not in proc.stdout
    assert f"{missing} is not in secant (secant run maps jax to secant)" in proc.stderr
    assert f"at {path}:5" in proc.stderr, proc.stderr
    assert "jax_compat.py" not in proc.stderr      # secant's own frames are not shown


def test_program_error_shows_its_own_frames(tmp_path):
    path = program(tmp_path, """
        import jax.numpy as jnp

        def inner(x):
            return {"a": x}["b"]

        inner(jnp.ones(2))
        """)
    proc = run(path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Traceback (most recent call last):")
    assert f'File "{path}", line 7, in <module>' in proc.stderr
    assert f'File "{path}", line 5, in inner' in proc.stderr
    assert proc.stderr.rstrip().endswith("KeyError: 'b'")
    assert "runpy" not in proc.stderr and "jax_compat" not in proc.stderr


def test_exit_status_and_neighbour_imports(tmp_path):
    program(tmp_path, """
        import jax.numpy as jnp
        def double(x):
            return 2 * x
        """, name="helper_mod.py")
    path = program(tmp_path, """
        import sys
        import jax
        from helper_mod import double
        print("RESULT", float(jax.grad(lambda x: double(x) ** 2)(3.0)))
        sys.exit(3)
        """)
    proc = run(path, cwd=str(tmp_path.parent))
    assert proc.returncode == 3, proc.stderr
    assert "RESULT 24.0" in proc.stdout      # d/dx (2x)^2 = 8x


def test_jax_is_not_importable_outside_a_run():
    proc = subprocess.run([sys.executable, "-c", "import secant, secant.jax_compat\nimport jax"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "No module named 'jax'" in proc.stderr


def test_missing_script_is_a_clear_error(tmp_path):
    proc = run(tmp_path / "nope.py")
    assert proc.returncode == 2 and "no such file" in proc.stderr


# --- --show-source ------------------------------------------------------------------------------
def test_show_source_writes_every_transform_with_an_index(tmp_path):
    out = tmp_path / "src"
    script = os.path.join(PROGRAMS, "linear_regression.py")
    proc = run(script, 3, 0.1, show_source=out)
    result(proc)
    index = (out / "index.txt").read_text().splitlines()
    assert index[0].startswith("# function | transform | defined at | generated source")
    rows = [tuple(part.strip() for part in ln.split("|")) for ln in index[1:]]
    by_transform = {(r[0], r[1].split(" ")[0]): r for r in rows}
    assert ("update", "jit") in by_transform
    assert ("loss", "grad") in by_transform
    src = open(script).read().splitlines()
    for fn, transform, where, filename in rows:
        file, line = where.rsplit(":", 1)
        assert os.path.abspath(file) == script
        assert src[int(line) - 1].startswith(f"def {fn}(")       # the user's def line
        text = (out / filename).read_text()
        compile(text, filename, "exec")                        # each is Python source
        assert f"of {fn}, defined at {where}" in text.splitlines()[0]
    grad_text = (out / by_transform[("loss", "grad")][3]).read_text()
    assert "def loss_grad(params, x, y):" in grad_text
    assert "wrote the source of" in proc.stderr


def test_show_source_of_vmap_and_grad(tmp_path):
    out = tmp_path / "src"
    result(run(os.path.join(PROGRAMS, "per_example_gradients.py"), show_source=out))
    index = (out / "index.txt").read_text()
    assert "example_loss | grad with respect to params" in index
    assert "| vmap batched in x, y" in index


def _printed(out):
    """The values printed by the program, one flat float array per print (a printed 2-D array
    spans lines until its brackets close)."""
    values, current = [], ""
    for line in out.splitlines():
        current += " " + line
        if current.count("[") == current.count("]"):
            nums = re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", current)
            values.append(np.array([float(n) for n in nums]))
            current = ""
    return values


def test_the_jax_quickstart_runs_unchanged():
    """examples/jax_quickstart.py is the JAX documentation's quickstart (README)."""
    proc = run(os.path.join(os.path.dirname(HERE), "examples", "jax_quickstart.py"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("quickstart: all checks passed")
    selu, grad, fd, third, jac, hess = _printed(proc.stdout)[:6]
    x = np.arange(5.0)
    np.testing.assert_allclose(selu, 1.05 * np.where(x > 0, x, 1.67 * np.exp(x) - 1.67),
                               rtol=1e-6)
    s = 1 / (1 + np.exp(-np.arange(3.0)))
    np.testing.assert_allclose(grad, s * (1 - s), rtol=1e-6)
    np.testing.assert_allclose(fd, s * (1 - s), rtol=1e-3)
    s1 = 1 / (1 + np.exp(-1.0))           # the third derivative of the logistic function at 1
    np.testing.assert_allclose(third, [s1 * (1 - s1) * (1 - 6 * s1 + 6 * s1 ** 2)], rtol=1e-5)
    np.testing.assert_allclose(jac, np.diag(np.exp(np.arange(3.0))).ravel(), rtol=1e-6)
    np.testing.assert_allclose(np.abs(hess), np.abs(np.diag(s * (1 - s) * (1 - 2 * s))).ravel(),
                               atol=1e-7, rtol=1e-5)


def test_transforms_read_jax_names_inside_functions(tmp_path):
    """Functions written with jax.* names are transformed as if written with secant's: the
    derivative is generated from their source (no opaque call), under grad, vmap and jit."""
    out = tmp_path / "src"
    path = program(tmp_path, """
        import json
        import jax
        import jax.numpy as jnp

        def f(x):
            y = jax.nn.relu(x) + jax.numpy.sin(x)
            z = jax.lax.cond(jnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, y)
            return jnp.linalg.norm(z) + jax.scipy.special.logsumexp(x)

        x = jnp.array([0.5, -1.0, 2.0])
        g = jax.grad(f)(x)
        gs = jax.jit(jax.vmap(jax.grad(f)))(jnp.stack([x, -x]))
        print("RESULT " + json.dumps({"g": [float(v) for v in g],
                                      "gs": [[float(v) for v in r] for r in gs]}))
        """)
    r = result(run(path, show_source=out))

    def f(x):
        y = np.maximum(x, 0) + np.sin(x)
        z = y * 2.0 if x.sum() > 0 else -y
        return np.linalg.norm(z) + np.log(np.exp(x).sum())

    def fd(x, eps=1e-6):
        return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])

    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(r["g"], fd(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r["gs"], [fd(x), fd(-x)], rtol=1e-4, atol=1e-5)
    grad_src = (out / "f_grad.py").read_text()
    assert "dynamic_call" not in grad_src       # every jax.* callee resolved at transform time

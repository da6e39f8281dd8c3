"""The public API around grad: generated functions as real functions (inspect, tracebacks),
value_and_grad / vjp / argnums / has_aux / pytree parameters, composition with jit, saving a
standalone module (secant.save_source) and the command line `python -m secant grad`."""
import collections
import inspect
import os
import subprocess
import sys
import textwrap
import traceback

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.codegen.save import SaveError, module_source, save_source

HERE = os.path.abspath(__file__)
REPO = os.path.dirname(os.path.dirname(HERE))
Params = collections.namedtuple("Params", "w b")
SCALE = 0.5
TRACES = []


# --- functions under test (module level: their source is on disk) -------------------------------
def f(x, y):
    z = x * y + np.sin(x)
    return np.sum(z * z)


def layer(w, x):
    return snp.tanh(x @ w)


def loss(w, x):
    h = layer(w, x)
    return snp.sum(h * h) * SCALE


def two_layers(w, x):
    h = layer(w, x)
    h2 = layer(w, h)
    return snp.sum(layer(w, h2))      # (three calls: layer's vjps keep their names)


def dict_loss(params, x):
    return snp.sum(snp.tanh(x @ params["w"] + params["b"]) ** 2)


def tuple_loss(params, x):
    w, b = params
    return snp.sum((x @ w + b) ** 2)


def namedtuple_loss(p, x):
    return snp.sum(snp.tanh(x * p.w + p.b))


def with_aux(x):
    y = x * 3.0
    return snp.sum(y * y), y


def traced_loss(x):
    TRACES.append(1)                   # kept as written: runs once per eager call or per trace
    return snp.sum(snp.sin(x) * x)


@secant.jit
def jitted_square(x):
    return x * x


def calls_jitted(x):
    return snp.sum(jitted_square(x) * 2.0)


def bad_shapes(w, x):
    y = x @ w
    return snp.sum(y)


def rng_inputs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32)


# --- generated functions are real functions -----------------------------------------------------
def test_getsource_equals_secant_source():
    g = secant.grad(f)
    assert inspect.getsource(g) == secant.source(g)
    assert secant.source(g).startswith("def f_grad(x, y):")
    assert "# Grad of: z = x * y + np.sin(x)" in secant.source(g)


def test_grad_is_cached_per_function_and_argnums():
    assert secant.source(secant.grad(f)) == secant.source(secant.grad(f))
    assert secant.source(secant.grad(f, argnums=1)) != secant.source(secant.grad(f))


def test_traceback_shows_the_generated_line():
    g = secant.grad(bad_shapes)
    try:
        g(np.ones((5, 2), np.float32), np.ones((4, 3), np.float32))
    except Exception:                                  # noqa: BLE001 - any shape error
        text = traceback.format_exc()
    else:
        pytest.fail("mismatched shapes did not raise")
    assert 'File "<secant: bad_shapes_grad' in text, text
    assert "y = x @ w" in text, text              # the generated line's own text


# --- values -------------------------------------------------------------------------------------
def test_grad_values(x64):
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -0.7])
    z = x * y + np.sin(x)
    gx, gy = secant.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(np.asarray(gx), 2 * z * (y + np.cos(x)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gy), 2 * z * x, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.grad(f, argnums=1)(x, y)), 2 * z * x)


def test_argnums_one_tuple_gives_a_one_tuple(x64):
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -0.7])
    z = x * y + np.sin(x)
    out = secant.grad(f, argnums=(0,))(x, y)
    assert isinstance(out, tuple) and len(out) == 1
    np.testing.assert_allclose(np.asarray(out[0]), 2 * z * (y + np.cos(x)), rtol=1e-12)


def test_value_and_grad(x64):
    w, x = (a.astype(np.float64) for a in rng_inputs())
    value, g = secant.value_and_grad(loss)(w, x)
    np.testing.assert_allclose(float(value), float(np.sum(np.tanh(x @ w) ** 2) * SCALE))
    np.testing.assert_allclose(np.asarray(g), np.asarray(secant.grad(loss)(w, x)))
    value, (gw, gx) = secant.value_and_grad(loss, argnums=(0, 1))(w, x)
    assert np.shape(gw) == w.shape and np.shape(gx) == x.shape


def test_vjp(x64):
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -0.7])
    out, pullback = secant.vjp(f, x, y)
    np.testing.assert_allclose(float(out), float(f(x, y)))
    gx, gy = pullback(2.0)
    fx, fy = secant.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(np.asarray(gx), 2 * np.asarray(fx))
    np.testing.assert_allclose(np.asarray(gy), 2 * np.asarray(fy))


def test_vjp_has_aux(x64):
    x = np.array([1.0, 2.0])
    out, pullback, aux = secant.vjp(with_aux, x, has_aux=True)
    np.testing.assert_allclose(np.asarray(aux), 3 * x)
    g, = pullback(1.0)
    np.testing.assert_allclose(np.asarray(g), 18 * x)


def test_has_aux(x64):
    x = np.array([1.0, 2.0])
    g, aux = secant.grad(with_aux, has_aux=True)(x)
    np.testing.assert_allclose(np.asarray(g), 18 * x)
    np.testing.assert_allclose(np.asarray(aux), 3 * x)
    (value, aux), g = secant.value_and_grad(with_aux, has_aux=True)(x)
    np.testing.assert_allclose(float(value), 9 * 5.0)
    np.testing.assert_allclose(np.asarray(aux), 3 * x)


def test_dict_params_keep_their_structure(x64):
    rng = np.random.default_rng(1)
    params = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    x = rng.normal(size=(4, 3))
    g = secant.grad(dict_loss)(params, x)
    assert isinstance(g, dict) and set(g) == {"w", "b"}
    h = np.tanh(x @ params["w"] + params["b"])
    dz = 2 * h * (1 - h ** 2)
    np.testing.assert_allclose(np.asarray(g["w"]), x.T @ dz, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(g["b"]), dz.sum(0), rtol=1e-10)


def test_tuple_params_keep_their_structure(x64):
    rng = np.random.default_rng(2)
    params = (rng.normal(size=(3, 2)), rng.normal(size=2))
    x = rng.normal(size=(4, 3))
    gw, gb = secant.grad(tuple_loss)(params, x)
    r = 2 * (x @ params[0] + params[1])
    np.testing.assert_allclose(np.asarray(gw), x.T @ r, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(gb), r.sum(0), rtol=1e-10)


def test_namedtuple_params_keep_their_structure(x64):
    p, x = Params(np.array([0.5, -1.0]), np.array([0.1, 0.2])), np.array([1.0, 2.0])
    g = secant.grad(namedtuple_loss)(p, x)
    assert type(g) is Params
    d = 1 - np.tanh(x * p.w + p.b) ** 2
    np.testing.assert_allclose(np.asarray(g.w), x * d, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g.b), d, rtol=1e-12)


# --- composition with jit -----------------------------------------------------------------------
def test_jit_of_grad_traces_once_per_signature():
    g = secant.jit(secant.grad(traced_loss))
    TRACES.clear()
    x3, x4 = np.ones(3, np.float32), np.ones(4, np.float32)
    first = g(x3)
    g(x3)
    g(x3 + 1)
    assert len(TRACES) == 1
    g(x4)
    g(x4)
    assert len(TRACES) == 2
    g(np.ones(3, np.float64))        # float64 is float32 without x64: the same signature
    assert len(TRACES) == 2
    np.testing.assert_allclose(np.asarray(first), np.sin(x3) + x3 * np.cos(x3), rtol=1e-6)


def test_grad_of_jit():
    x = np.array([0.5, 1.5], np.float32)
    g = secant.grad(secant.jit(traced_loss))(x)
    np.testing.assert_allclose(np.asarray(g), np.sin(x) + x * np.cos(x), rtol=1e-6)
    assert secant.source(secant.grad(secant.jit(traced_loss))) == \
        secant.source(secant.grad(traced_loss))


def test_grad_of_a_function_calling_a_jitted_function():
    x = np.array([0.5, 1.5, -2.0], np.float32)
    g = secant.grad(calls_jitted)
    np.testing.assert_allclose(np.asarray(g(x)), 4 * x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(x)), 4 * x, rtol=1e-6)


# --- save_source --------------------------------------------------------------------------------
def _run(code, *args, cwd=None):
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, *args] if not code else [sys.executable, "-c", code],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=120)
    return proc


def _run_saved(path, call):
    """Import the saved module alone in a fresh interpreter and print repr(list) of results."""
    code = textwrap.dedent(f"""
        import importlib.util, sys
        import numpy as np
        from secant import tree_util
        spec = importlib.util.spec_from_file_location("saved", {str(path)!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        assert "test_grad_api" not in sys.modules
        out = {call}
        out = out if isinstance(out, tuple) else (out,)
        print(repr([tree_util.tree_map(lambda o: np.asarray(o).tolist(), o) for o in out]))
        """)
    proc = _run(code, cwd=os.path.dirname(str(path)))
    assert proc.returncode == 0, proc.stderr
    return eval(proc.stdout.strip().splitlines()[-1])


def test_save_source_runs_in_a_fresh_interpreter(tmp_path):
    g = secant.grad(loss)
    path = save_source(g, tmp_path / "loss_grad.py")
    text = open(path).read()
    assert text.rstrip().endswith(secant.source(g).rstrip())        # ends with the gradient
    assert "import secant.numpy as snp" in text
    assert "from secant.ad.helpers import" in text
    # (layer's vjp, small and called once, is written in place: ad/reverse.py _inlined)
    assert "def layer(w, x):" in text and "layer_vjp" not in text
    # (w's cotangent returned in place through grads_as: ad/fold.py returned_in_place)
    assert "return grads_as(matmul_grad_y(h_bar * (1 - h ** 2), x, w), w)" in text
    assert "SCALE = 0.5" in text
    w, x = rng_inputs()
    got = _run_saved(path, f"mod.loss_grad(np.array({w.tolist()}, np.float32), "
                           f"np.array({x.tolist()}, np.float32))")
    np.testing.assert_allclose(np.array(got[0]), np.asarray(g(w, x)), rtol=1e-6)


def test_save_two_vjps_of_one_helper(tmp_path):
    """Two vjps of `layer` (w.r.t. (w, x) and w.r.t. w) get two names in the module."""
    g = secant.value_and_grad(two_layers)
    path = save_source(g, tmp_path / "two.py")
    text = open(path).read()
    assert "def layer_vjp(" in text and "def layer_vjp_w(" in text
    w, x = rng_inputs()
    w = np.ones((3, 3), np.float32) / 3
    got = _run_saved(path, f"mod.two_layers_value_and_grad(np.ones((3, 3), np.float32) / 3, "
                           f"np.array({x.tolist()}, np.float32))")
    value, grad_w = g(w, x)
    np.testing.assert_allclose(got[0], float(value), rtol=1e-6)
    np.testing.assert_allclose(np.array(got[1]), np.asarray(grad_w), rtol=1e-6)


def test_save_dict_params_and_jitted_callee(tmp_path):
    path = save_source(secant.grad(dict_loss), tmp_path / "d.py")
    got = _run_saved(path, "mod.dict_loss_grad({'w': np.ones((3, 2), np.float32), "
                           "'b': np.zeros(2, np.float32)}, np.ones((4, 3), np.float32))")
    params = {"w": np.ones((3, 2), np.float32), "b": np.zeros(2, np.float32)}
    expected = secant.grad(dict_loss)(params, np.ones((4, 3), np.float32))
    assert set(got[0]) == {"w", "b"}
    for k in "wb":
        np.testing.assert_allclose(np.array(got[0][k]), np.asarray(expected[k]), rtol=1e-6)
    path = save_source(secant.grad(calls_jitted), tmp_path / "j.py")
    assert "@secant.jit" in open(path).read()
    got = _run_saved(path, "mod.calls_jitted_grad(np.array([1.0, 2.0], np.float32))")
    np.testing.assert_allclose(got[0], [4.0, 8.0])


def test_save_accepts_the_generated_function_and_vjp_pullbacks(tmp_path):
    gen = secant.grad(f).__secant_generated__
    assert module_source(gen) == module_source(secant.grad(f))
    assert "import numpy as np" not in module_source(gen)   # generated code names secant only
    _, pullback = secant.vjp(f, np.ones(2, np.float32), np.ones(2, np.float32))
    text = module_source(pullback)
    assert "def f_vjp(" in text


def test_save_refuses_closed_over_arrays():
    table = np.arange(3.0)

    def uses_table(x):
        return snp.sum(x * table)
    with pytest.raises(secant.SecantError, match="'table'") as info:
        module_source(secant.grad(uses_table))
    assert isinstance(info.value, SaveError)
    assert "numpy.ndarray" in str(info.value)


def test_save_writes_closed_over_constants(tmp_path):
    scale, shift = 3.0, (1, 2)

    def closure(x):
        return snp.sum(x * scale + shift[0])
    path = save_source(secant.grad(closure), tmp_path / "c.py")
    text = open(path).read()
    assert "scale = 3.0" in text
    got = _run_saved(path, "mod.closure_grad(np.ones(2, np.float32))")
    np.testing.assert_allclose(got[0], [3.0, 3.0])


def test_save_refuses_things_that_are_not_generated():
    with pytest.raises(secant.SecantError, match="save_source expects"):
        module_source(f)


def test_saved_module_text_is_deterministic():
    assert module_source(secant.grad(loss)) == module_source(secant.grad(loss))


# --- the command line ---------------------------------------------------------------------------
def test_cli_prints_the_gradient_source():
    proc = _run(None, "-m", "secant", "grad", f"{HERE}:f", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == secant.source(secant.grad(f))


def _cli(capsys, *argv):
    """Run the command line in this process: (exit code, stdout, stderr)."""
    from secant.__main__ import main
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_argnums(capsys):
    code, out, err = _cli(capsys, "grad", f"{HERE}:f", "--argnums", "0,1")
    assert code == 0, err
    assert out == secant.source(secant.grad(f, argnums=(0, 1)))
    assert out.rstrip().endswith("return x_bar, y_bar")


def test_cli_value_and_grad(capsys):
    code, out, err = _cli(capsys, "value_and_grad", f"{HERE}:loss")
    assert code == 0, err
    assert out.startswith("def loss_value_and_grad(w, x):")


def test_cli_out_writes_a_standalone_module(tmp_path, capsys):
    out_file = tmp_path / "loss_grad_cli.py"
    code, _, err = _cli(capsys, "grad", f"{HERE}:loss", "--out", str(out_file))
    assert code == 0, err
    assert out_file.exists() and "def loss_grad(w, x):" in out_file.read_text()
    got = _run_saved(out_file, "mod.loss_grad(np.ones((3, 2), np.float32), "
                               "np.ones((4, 3), np.float32))")
    expected = secant.grad(loss)(np.ones((3, 2), np.float32), np.ones((4, 3), np.float32))
    np.testing.assert_allclose(np.array(got[0]), np.asarray(expected), rtol=1e-6)


@pytest.mark.parametrize("target, words", [
    ("no_such_file.py:f", ["no such file", "no_such_file.py"]),
    (f"{HERE}:no_such_function", ["no function", "no_such_function", "loss"]),
    (f"{HERE}", ["FILE.py:FUNC"]),
    (f"{HERE}:SCALE", ["not a function"]),
])
def test_cli_errors_are_clear(target, words, capsys):
    code, _, err = _cli(capsys, "grad", target)
    assert code == 2
    for word in words:
        assert word in err, err


def test_cli_transform_error_is_reported_without_a_traceback(tmp_path, capsys):
    src = tmp_path / "bad.py"
    # (a class reading the function's locals: refused at its line, left15a)
    src.write_text("def bad(x):\n    k = 2.0\n    class Box:\n        s = k\n    return x\n")
    code, _, err = _cli(capsys, "grad", f"{src}:bad")
    assert code == 2 and "Traceback" not in err
    assert f"{src}:3:5" in err and "class" in err, err


def test_cli_missing_file_from_a_shell():
    proc = _run(None, "-m", "secant", "grad", "no_such_file.py:f", cwd=REPO)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "no such file: no_such_file.py" in proc.stderr


def _pair_helper(p, t):
    a, b = t
    x, y = p
    return x * y, a * y + x * b


def _tuple_arguments(x, y):
    return _pair_helper((x, y), (x, y))[1] + _pair_helper((x, y), (2.0, 3.0))[1]


def test_grad_through_tuple_arguments_of_a_helper():
    # d/dx (x*y + x*y + 2*y + 3*x) = 2y + 3, d/dy = 2x + 2
    for g in (secant.grad(_tuple_arguments, argnums=(0, 1)),
              secant.jit(secant.grad(_tuple_arguments, argnums=(0, 1)))):
        gx, gy = g(1.5, 2.0)
        assert float(gx) == pytest.approx(2 * 2.0 + 3) and float(gy) == pytest.approx(2 * 1.5 + 2)


# --- saving code that calls custom rules: the objects are rebuilt from their functions ---------
@secant.custom_jvp
def _log1pexp(x):
    return snp.log(1.0 + snp.exp(x))


@_log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return _log1pexp(x), (1.0 - 1.0 / (1.0 + snp.exp(x))) * x_dot


def _clip_fwd(x, c):
    return x, None


def _clip_bwd(c, res, g):
    return (snp.clip(g, -c, c),)


def _clip_identity(x, c):
    return x


_clip_gradient = secant.custom_vjp(_clip_identity, nondiff_argnums=(1,))
_clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def _softplus_clipped(x):
    return snp.sum(_log1pexp(_clip_gradient(x * 3.0, 1.0)))


def test_save_source_rebuilds_custom_rules(tmp_path):
    path = tmp_path / "softplus_grad.py"
    save_source(secant.grad(_softplus_clipped), str(path))
    text = path.read_text()
    assert "_log1pexp = secant.custom_jvp(" in text and "_log1pexp.defjvp(_log1pexp_jvp)" in text
    # (the forward pass calls _clip_identity_fwd, which names the function after its def)
    assert "_clip_identity = secant.custom_vjp(_clip_identity_2, nondiff_argnums=(1,))" in text
    assert "_clip_identity.defvjp(_clip_fwd, _clip_bwd)" in text
    x = np.array([0.0, 100.0, -2.0], np.float32)
    want = np.asarray(secant.grad(_softplus_clipped)(x)).tolist()
    got = _run_saved(path, "mod._softplus_clipped_grad(np.array([0.0, 100.0, -2.0], "
                           "np.float32))")
    assert got == [want]
    assert want[1] == 3.0          # the custom rules' gradient: clipped at 1, no nan at 100

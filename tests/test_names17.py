"""Issue 20 (names17): two different generated functions are never shown under one name. A second
derivative of one helper, for other arguments, is bound and printed by what it differentiates
(`_layer_vjp_w`); a whole program (secant/codegen/program.py: the goldens, bench/lean.py) and
`secant run --show-source` print each function once, under the name the code that calls it uses.
"""
import ast
import pathlib
import re

import numpy as np

import secant
import secant.numpy as snp
from secant import source_log
from secant.codegen.program import program

GOLDEN = pathlib.Path(__file__).parent / "golden"


def _affine(x, w, b):
    return x @ w + b


def _layer(x, w, b):
    return snp.tanh(_affine(x, w, b))


def helpers(w, b, x):
    h = _layer(x, w, b)         # x is data: this _layer's vjp is for w alone
    return snp.sum(_layer(h, w, b) ** 2)


def _args():
    r = np.random.default_rng(0)
    return r.normal(size=(3, 3)) / 2, r.normal(size=3) / 2, r.normal(size=(2, 3))


def _defs_and_calls(text):
    tree = ast.parse(text)
    defs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]   # (top level)
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name)}
    return defs, calls


def _fd_grad(fn, args, eps=1e-6):
    w = args[0]
    out = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        plus, minus = w.copy(), w.copy()
        plus[i] += eps
        minus[i] -= eps
        out[i] = (float(fn(plus, *args[1:])) - float(fn(minus, *args[1:]))) / (2 * eps)
    return out


def _named_vjps(monkeypatch):
    # (these helpers' vjps are small: written in place in their callers, ad/reverse.py
    # _inlined; here each kept as a function of its own, the naming under test)
    import secant.transforms
    monkeypatch.setattr(secant.transforms, "INLINE_STATEMENTS", -1)


def test_a_program_prints_each_function_under_the_name_its_caller_calls(x64, monkeypatch):
    _named_vjps(monkeypatch)
    g = secant.grad(helpers)
    printed = program(g)
    names = [n for n, _ in printed]
    assert len(names) == len(set(names)), names
    text = "\n\n".join(t for _, t in printed)
    defs, calls = _defs_and_calls(text)
    assert defs == names
    # the two vjps of _layer (for x and w; for w alone) and of _affine each under its own name
    assert {"_layer_vjp", "_layer_vjp_w", "_affine_vjp_x_w", "_affine_vjp_w"} <= set(defs), defs
    assert set(defs[1:]) <= calls          # each printed function is called by that name
    root = printed[0][1]
    assert "_layer_vjp_w(h_bar, h, x, w, b)" in root, root     # as the generated code runs it
    assert "_layer_vjp_w(" in secant.source(g)
    w_only = dict(printed)["_layer_vjp_w"]
    assert "_affine_vjp_w(" in w_only and "x_bar" not in w_only, w_only
    np.testing.assert_allclose(g(*_args()), _fd_grad(helpers, _args()), rtol=1e-6, atol=1e-8)


def test_no_golden_file_defines_a_name_twice():
    """(mixins_super_grad.py.txt is not one program: three classes' own __call__ methods)"""
    for path in sorted(GOLDEN.rglob("*.py.txt")):
        if path.name == "mixins_super_grad.py.txt":
            continue
        defs, _ = _defs_and_calls(path.read_text())
        assert len(defs) == len(set(defs)), (path.name, sorted(d for d in defs
                                                               if defs.count(d) > 1))


def _affine2(x, w, b):
    return x @ w + b


def _layer2(x, w, b):
    return snp.tanh(_affine2(x, w, b))


def helpers2(w, b, x):
    h = _layer2(x, w, b)
    return snp.sum(_layer2(h, w, b) ** 2)


def test_show_source_writes_each_function_under_the_name_its_callers_call(tmp_path, x64,
                                                                          monkeypatch):
    _named_vjps(monkeypatch)
    log = source_log.record(tmp_path)
    try:
        got = secant.grad(helpers2)(*_args())
    finally:
        source_log.stop(log)
    np.testing.assert_allclose(got, _fd_grad(helpers2, _args()), rtol=1e-6, atol=1e-8)
    files = {row[3]: (tmp_path / row[3]).read_text() for row in log.entries}
    written = set()
    for filename, text in files.items():
        defs, _ = _defs_and_calls(text)
        # one def, named as its file (a text written again for other arguments: file_2.py)
        assert len(defs) == 1 and re.fullmatch(rf"{defs[0]}(_\d+)?\.py", filename), (filename,
                                                                                    defs)
        written.add(defs[0])
    for filename, text in files.items():
        _, calls = _defs_and_calls(text)
        for name in calls:
            if re.fullmatch(r"_(layer|affine)2_(vjp|replay)\w*", name):
                assert name in written, (filename, name)   # calls only what the log holds
    grad_text = files["helpers2_grad.py"]
    assert "_layer2_vjp_w(h_bar" in grad_text, grad_text
    assert "_affine2_vjp_w" in files["_layer2_vjp_w.py"]


# --- grad's seed from the operands' dtype, not from a value computed only for it -----------------
def sin_times(x, y, c):
    return snp.sum(snp.sin(x * y) * c)


def test_the_seed_reads_the_operands_dtype_not_a_value_computed_for_it():
    src = secant.source(secant.grad(sin_times))
    assert "grad_seed_like(snp.result_type(x_times_y, c))" in src, src
    code = [ln for ln in src.splitlines() if not ln.strip().startswith("#")]
    assert not any("snp.sin(" in ln for ln in code), src   # (eager ran sin and a * for it)


def test_the_seed_from_result_type_keeps_values_and_dtypes():
    from secant.ad.helpers import grad_seed
    xs = [np.array([0.3, -0.2, 0.5], d) for d in ("float16", "float32", "float64")]
    cs = [np.full(3, 1.5, "float16"), np.full(3, 1.5, "float32"), np.full(3, 1.5), 1.5, 2,
          np.full(3, 3, "int32")]
    ys = [np.arange(3.0, dtype="float32"), 2.0, np.arange(3)]
    for x64 in (False, True):
        secant.config.update("enable_x64", x64)
        try:
            for x in xs + [0.3]:
                for c in cs:
                    for y in ys:
                        g = secant.grad(sin_times)(x, y, c)
                        xa = snp.asarray(x)
                        want_seed = grad_seed(sin_times(xa, y, c))   # the output's own seed
                        assert g.dtype == xa.dtype, (g.dtype, xa.dtype, x64)
                        xf, yf = np.asarray(x, float), np.asarray(y, float)
                        want = np.cos(xf * yf) * yf * np.asarray(c, float)
                        want = np.sum(want) if np.ndim(x) == 0 else np.broadcast_to(want, (3,))
                        half = np.float16 in (xa.dtype, getattr(c, "dtype", None))
                        tol = 2e-2 if half else 1e-5
                        np.testing.assert_allclose(np.asarray(g, float), want, rtol=tol,
                                                   atol=tol)
                        gj = secant.jit(secant.grad(sin_times))(x, y, c)
                        assert gj.dtype == g.dtype
                        np.testing.assert_allclose(np.asarray(gj, float), np.asarray(g, float),
                                                   rtol=tol, atol=tol)
                        from secant.ad.helpers import grad_seed_like
                        seed = grad_seed_like(snp.result_type(xa * y, c))
                        assert seed.dtype == want_seed.dtype and float(seed) == 1.0
        finally:
            secant.config.update("enable_x64", False)


def test_the_seed_from_result_type_under_hessian_and_vmap(x64):
    x, y, c = np.array([0.3, -0.2, 0.5]), np.arange(3.0), np.full(3, 1.5)
    np.testing.assert_allclose(secant.hessian(sin_times)(x, y, c),
                               np.diag(-np.sin(x * y) * y * y * c), rtol=1e-10)
    got = secant.vmap(secant.grad(sin_times), in_axes=(0, None, None))(np.stack([x, 2 * x]), y, c)
    np.testing.assert_allclose(got, np.stack([np.cos(x * y) * y * c, np.cos(2 * x * y) * y * c]),
                               rtol=1e-10)

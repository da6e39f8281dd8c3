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


def test_a_program_prints_each_function_under_the_name_its_caller_calls(x64):
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


def test_show_source_writes_each_function_under_the_name_its_callers_call(tmp_path, x64):
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

"""secant.source(f, stage=...): each step of the pipeline as Python text (the function read, its
functionalised form, the canonical form, the generated result), the command line's --stage, and
the highlighted display Jupyter shows for a transformed function."""
import builtins
import pathlib

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

HERE = pathlib.Path(__file__).resolve()


def loss(w, x, y):
    pred = snp.tanh(x @ w)
    err = pred - y
    if snp.sum(err) > 0:
        err = err * 2
    return snp.mean(err * err)


def loop(x):
    return lax.fori_loop(0, 3, lambda i, c: c * x, 1.0)


def _defines(text, name):
    """Running the text defines a function `name`: return it (the text is real Python)."""
    namespace = {"snp": snp, "lax": lax, "secant": secant}
    exec(compile(text, "<stage>", "exec"), namespace)
    return namespace[name]


def test_each_stage_is_python_that_computes_the_function():
    g = secant.grad(loss)
    w = np.full((3, 2), 0.4, np.float32)
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    for y in (np.zeros((4, 2), np.float32), np.full((4, 2), 3.0, np.float32)):   # both branches
        want = float(loss(w, x, y))
        for stage in ("source", "functionalised", "normalised"):
            text = secant.source(g, stage=stage)
            assert text.startswith("def loss(w, x, y):"), stage
            assert float(_defines(text, "loss")(w, x, y)) == pytest.approx(want, rel=1e-6)
    assert "lax.cond(" in secant.source(g, stage="functionalised")
    assert secant.source(g, stage="generated") == secant.source(g)


def test_the_normalised_stage_is_one_op_per_line_under_the_users_line():
    text = secant.source(secant.grad(loss), stage="normalized")     # either spelling
    assert "    # pred = snp.tanh(x @ w)\n    x_matmul_w = x @ w\n    pred = snp.tanh(x_matmul_w)" \
        in text
    assert "lax.fori_loop(0, 3, lambda i, c: c * x, 1.0)" in secant.source(
        secant.jvp_fn(loop), stage="normalised")


def test_stages_of_jit_and_of_a_plain_function():
    assert "lax.cond(" in secant.source(secant.jit(loss), stage="functionalised")
    assert secant.source(secant.jit(loss), stage="source").startswith("def loss(")
    with pytest.raises(secant.SecantError, match="no normalised stage"):
        secant.source(secant.jit(loss), stage="normalised")
    assert "err_1_sq = err_1 * err_1" in secant.source(loss, stage="normalised")
    with pytest.raises(secant.SecantError, match="unknown stage 'parsed'"):
        secant.source(loss, stage="parsed")


def test_cli_stage(capsys):
    from secant.__main__ import main
    assert main(["grad", f"{HERE}:loss", "--stage", "normalised"]) == 0
    assert capsys.readouterr().out == secant.source(secant.grad(loss), stage="normalised")


def test_jupyter_display_highlights_the_generated_source(monkeypatch):
    g = secant.grad(loss)
    shown = g._repr_html_()
    assert "loss_grad" in shown and "matmul_grad_y" in shown
    real_import = builtins.__import__

    def without_pygments(name, *args, **kwargs):
        if name.startswith("pygments"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", without_pygments)
    plain = g._repr_html_()
    assert plain.startswith("<pre>def loss_grad(w, x, y):") and "&gt;" in plain


def test_stages_of_vmap():
    v = secant.vmap(loss, in_axes=(None, 0, 0))
    text = secant.source(v, stage="normalised")
    assert text.startswith("def loss(w, x, y):") and "x_matmul_w = x @ w" in text
    assert secant.source(v, stage="source") == secant.source(loss)
    assert "loss_vmap" in v._repr_html_()

"""secant.show (a generated function beside the user lines it comes from) and the teaching
notebook examples/teach_ad.ipynb, executed in a real Jupyter kernel.

The notebook is checked in with its outputs (so it reads on its own); this test runs it again
and requires the text of every `secant.show` table to equal the checked-in one, as golden files
are (SECANT_UPDATE_GOLDEN=1 rewrites the notebook's outputs).
"""
import html.parser
import inspect
import os

import numpy as np
import pytest

import secant
import secant.numpy as snp

NOTEBOOK = os.path.join(os.path.dirname(__file__), "..", "examples", "teach_ad.ipynb")


def looped(x):
    y = snp.sin(x) * x
    for i in range(3):
        y = y + x * i
    return snp.sum(y ** 2)


def _line(fn, text):
    """The file line number of the line of `fn` that contains `text`."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(lines) if text in s)


class _Table(html.parser.HTMLParser):
    """The rows of a secant-show table: (attributes of <tr>, [cell texts])."""

    def __init__(self):
        super().__init__()
        self.rows, self.cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append((dict(attrs), []))
        elif tag == "td":
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "td":
            self.rows[-1][1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def test_rows_follow_the_origin_map():
    view = secant.show(secant.grad(looped))
    gen = secant.source(secant.grad(looped)).splitlines()
    assert [r.gen_text for r in view.rows] == gen          # every generated line, in order
    sin_line, loop_line = _line(looped, "snp.sin(x) * x"), _line(looped, "y = y + x * i")
    by_text = {r.gen_text.strip(): r.user_line for r in view.rows}
    assert by_text["sin_x = snp.sin(x)"] == sin_line
    assert by_text["return x_bar + sin_x * y_bar + y_bar * x * snp.cos(x)"] == sin_line  # (issue 20)
    assert by_text["y_1 = y_1 + x * i"] == loop_line
    assert all(r.user_line is None for r in view.rows if r.gen_text.strip().startswith("def "))
    # the user line is written once per run of rows, and is the user's own text
    firsts = [r for r in view.rows if r.first]
    assert all(r.user_text.strip() in inspect.getsource(looped) for r in firsts)
    assert [r.user_line for r in firsts].count(loop_line) == 2      # forward, then reverse


def test_html_view_colours_rows_by_user_line():
    view = secant.show(secant.grad(looped))
    table = _Table()
    table.feed(view._repr_html_())
    rows = [r for r in table.rows if "data-gen-line" in r[0]]
    assert len(rows) == len(view.rows)
    colour = {}
    for (attrs, (left, right)), row in zip(rows, view.rows):
        assert right == row.gen_text                        # escaped and unescaped back
        assert attrs.get("data-user-line") == (None if row.user_line is None
                                               else str(row.user_line))
        if row.user_line is not None:   # one colour per user line, the same on every row
            assert colour.setdefault(row.user_line, attrs["style"]) == attrs["style"]
        assert (left.strip() != "") == row.first
    assert len(set(colour.values())) == len(colour)         # distinct lines, distinct colours


def test_text_view_and_other_transforms():
    for transform in (secant.grad, secant.jvp_fn, secant.vmap):
        g = transform(looped)
        text = str(secant.show(g))
        assert all(line.rstrip() in text for line in secant.source(g).splitlines())
        assert "y = y + x * i" in text
    # jit(grad(f)): the derivative jit traces
    assert str(secant.show(secant.jit(secant.grad(looped)))) == str(
        secant.show(secant.grad(looped)))


def test_show_of_a_plain_function_names_the_call():
    with pytest.raises(secant.SecantTypeError, match=r"(?s)secant\.show expects.*test_teach_notebook"):
        secant.show(looped)


def _show_outputs(nb):
    """The text of each secant.show output of a notebook, in order."""
    return [out["data"]["text/plain"] for cell in nb.cells if cell.cell_type == "code"
            for out in cell.get("outputs", ()) if out.get("output_type") == "execute_result"
            and "text/html" in out.get("data", {})]


def test_notebook_runs_in_a_kernel_and_matches_its_outputs():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    saved = nbformat.read(NOTEBOOK, as_version=4)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                      for o in c.outputs if o.output_type == "stream")
    checks = [ln for ln in printed.splitlines() if ": max error " in ln]
    assert len(checks) == 7 and all(float(ln.rsplit(" ", 1)[1]) < 1e-6 for ln in checks)
    assert "stablehlo" in printed
    shown = _show_outputs(nb)
    assert len(shown) == 5 and all("| generated" in s for s in shown)
    for out in (o for c in nb.cells if c.cell_type == "code" for o in c.outputs
                if "text/html" in o.get("data", {})):
        assert out["data"]["text/html"].startswith('<table class="secant-show"')
    if os.environ.get("SECANT_UPDATE_GOLDEN"):
        nbformat.write(nb, NOTEBOOK)
    else:
        assert _show_outputs(saved) == shown, (
            "examples/teach_ad.ipynb's outputs are stale: rerun with SECANT_UPDATE_GOLDEN=1")


def test_notebook_values_are_right(x64):
    """The notebook's claims, checked here without a kernel too."""
    def horner(x):
        acc = 0.0
        for c in [2.0, -1.0, 0.5, 3.0]:
            acc = acc * x + c
        return acc
    x = 1.3
    want = 3 * 2.0 * x ** 2 + 2 * -1.0 * x + 0.5
    np.testing.assert_allclose(secant.grad(horner)(x), want, rtol=1e-12)

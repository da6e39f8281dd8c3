"""ad/fold.segment (issue 19): the text of a node of a one-line statement, cut by its offsets
without splitting lines, is exactly ast.get_source_segment's, for every node, also where the
offsets count UTF-8 bytes (non-ASCII text) and for code of several lines (both left to ast)."""
import ast

import pytest

from secant.ad.fold import segment

CODES = [
    "g_w = dict({'a': t * w, 'b': np.tanh(x @ w + b) ** 2, 'c': [u, v][0]})",
    "x_bar = unbroadcast(t * (1 - np.tanh(z) ** 2), x.shape) + y[1:, ::2]",
    "naïve = {'é': α * 2.0, 'b': β}",                  # offsets in bytes: ast's answer
    "out = f(a,\n        b) + {'k': c}",                 # several lines: ast's answer
    "s = 'a\\nb' + t",                                   # an escaped newline in a string
]


@pytest.mark.parametrize("code", CODES)
def test_segment_is_get_source_segment(code):
    tree = ast.parse(code)
    nodes = [n for n in ast.walk(tree) if hasattr(n, "end_col_offset")]
    assert len(nodes) > 3
    for n in nodes:
        assert segment(code, n) == ast.get_source_segment(code, n), ast.dump(n)

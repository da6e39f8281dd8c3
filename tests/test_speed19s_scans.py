"""Issue 19 (transformation time): two scans over generated lines rewritten to one pass each
give the answers of the scans they replace.

- transformer/walker.py _block_tree reads each block's end from _block_ends (one backward pass
  with a stack) instead of scanning forward from each block line: the trees must be those of
  the forward scan, on random line structures (nested blocks, else branches, comments, blanks).
- codegen/naming.py versions_dropped realigns continuation rows from the tokens of the edited
  multi-row statements alone (_edited_statements_tokens): the rows moved must be those the whole
  source's tokens give, for every golden source and random renaming edits.
"""
import ast
import pathlib
import random

from secant.codegen import naming
from secant.transformer import walker

GOLDEN = pathlib.Path(__file__).parent / "golden"


class _Line:
    def __init__(self, kind, indent, code):
        self.kind, self.indent, self.code = kind, indent, code


def _scanned_tree(lines, i, stop):
    """_block_tree as it was: each block's end found by scanning forward from its header."""
    nodes = []
    while i < stop:
        ln = lines[i]
        if ln.kind != "block":
            if ln.kind == "stmt":
                nodes.append(i)
            i += 1
            continue
        if ln.code == "else:":
            return None
        end = i + 1
        while end < stop and (lines[end].kind in ("comment", "blank") or
                              lines[end].indent > ln.indent):
            end += 1
        body = _scanned_tree(lines, i + 1, end)
        els, orelse = None, []
        if end < stop and lines[end].kind == "block" and lines[end].code == "else:" and \
                lines[end].indent == ln.indent:
            if not ln.code.startswith("if "):
                return None
            els, end2 = end, end + 1
            while end2 < stop and (lines[end2].kind in ("comment", "blank") or
                                   lines[end2].indent > ln.indent):
                end2 += 1
            orelse = _scanned_tree(lines, end + 1, end2)
            end = end2
        if body is None or orelse is None:
            return None
        nodes.append((i, body, els, orelse))
        i = end
    return nodes


def _random_lines(rng):
    lines, indent = [], 1
    for _ in range(rng.randint(0, 30)):
        r = rng.random()
        if r < 0.15:
            lines.append(_Line(rng.choice(["comment", "blank", "slot"]), rng.randint(0, 6), "#"))
            continue
        if r < 0.4:
            lines.append(_Line("block", indent, rng.choice(
                ["for i in xs:", "if c:", "else:", "while t:", "if d:"])))
            indent += 1
        else:
            lines.append(_Line("stmt", indent, "a = b"))
        indent = max(1, indent - rng.choice([0, 0, 0, 1, 2]))
    return lines


def test_block_tree_is_the_forward_scans():
    rng = random.Random(19)
    read = 0
    for _ in range(3000):
        lines = _random_lines(rng)
        want = _scanned_tree(lines, 0, len(lines))
        assert walker._block_tree(lines, 0, len(lines), None) == want
        read += want is not None
    assert read > 1000         # (most structures read, not only refused ones)


def test_block_tree_of_nested_loops_and_branches():
    lines = [_Line("block", 1, "for i in xs:"), _Line("block", 2, "if c:"),
             _Line("stmt", 3, "a = b"), _Line("comment", 1, "#"), _Line("block", 2, "else:"),
             _Line("stmt", 3, "a = c"), _Line("blank", 0, ""), _Line("stmt", 2, "d = a"),
             _Line("stmt", 1, "return d")]
    assert walker._block_tree(lines, 0, len(lines), None) == \
        [(0, [(1, [2], 4, [5]), 7], None, []), 8]


def _sources():
    for path in sorted(GOLDEN.rglob("*.txt")):
        text = path.read_text()
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        if text.isascii():
            yield path.name, text, tree


def test_realigned_rows_from_the_edited_statements_alone():
    rng = random.Random(20)
    checked = moved = 0
    for name, text, tree in _sources():
        rows = text.count("\n") + 1
        whole = naming._tokens(text)
        for _ in range(20):
            edits = {}
            for row in rng.sample(range(1, rows + 1), min(rows, rng.randint(1, 6))):
                edits[row] = [(rng.randint(0, 40), rng.choice([-3, -1, 1, 2, 5]))]
            want = naming._realigned(whole, edits)
            got = naming._realigned(naming._edited_statements_tokens(text, tree, edits), edits)
            assert got == want, name
            checked += 1
            moved += bool(want)
    assert checked > 500 and moved > 20     # (rows were moved: continuations were edited)


def test_versions_dropped_realigns_a_continued_call():
    source = ("def f_grad(x_1, y):\n"
              "    a_1 = snp.sin(x_1)\n"
              "    b = g(a_1, y,\n"
              "          a_1)\n"
              "    return b\n")
    assert naming.versions_dropped(source, {"a_1"}) == (
        "def f_grad(x_1, y):\n"
        "    a = snp.sin(x_1)\n"
        "    b = g(a, y,\n"
        "          a)\n"
        "    return b\n")
    moved = ("def f_grad(x, y):\n"
             "    ab_1 = snp.sin(x)\n"
             "    b = ab_1 + g(y,\n"
             "                 ab_1)\n"
             "    return b\n")
    assert naming.versions_dropped(moved, {"ab_1"}) == (
        "def f_grad(x, y):\n"
        "    ab = snp.sin(x)\n"
        "    b = ab + g(y,\n"
        "               ab)\n"
        "    return b\n")

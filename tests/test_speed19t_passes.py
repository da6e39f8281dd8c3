"""Issue 19 (transformation time): shortcuts in the passes over a derivative's lines give the
answers of the work they skip.

- codegen/naming.py `_part_replaced` (versions_dropped's rewrite of a name built from a
  version) against the pattern it replaced, `re.sub(rf"(?:^|(?<=_)){v}(?=_|$)", ...)`, on
  random words of `_`-joined parts;
- ad/cse.py `_candidates` walks no operator or context node: its candidates (and the parent of
  each) are those of the walk over every child, on every line of every golden source;
- ad/algebra.py `simplified_line` skips `_reductions_composed` on a line that does not name
  unreduce_to: that rewrite leaves such a line's tree as it is (every golden line), and still
  composes the rules of a line that does;
- ad/fold.py `folded` carries one pass's mentions and comment groups into the next, and
  ad/accumulate.py `summed` its mentions across its sweeps: a derivative written with them
  counted afresh for every pass and sweep is the same text (grads of straight-line code, of
  loops in a row and of a loop nest, bench/transform_time.py's).
"""
import ast
import inspect
import pathlib
import random
import re
import sys

import pytest
from secant.ad import accumulate, algebra, cse, fold
from secant.codegen import naming

GOLDEN = pathlib.Path(__file__).parent / "golden"
sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "bench"))


def _golden_statements():
    """Each one-line statement (a def's body line, dedented) of every golden source."""
    out = []
    for path in sorted(GOLDEN.rglob("*")):
        if not path.is_file():
            continue
        for row in path.read_text().splitlines():
            code = row.strip()
            if not code or code.startswith(("#", "def ", "for ", "if ", "else", "while ", "@",
                                            "elif ", "with ", "class ", "try",
                                            "except", "finally")):
                continue
            try:
                tree = ast.parse(code)
            except SyntaxError:
                continue
            if len(tree.body) == 1:
                out.append((code, tree.body[0]))
    return out


def test_part_replaced_as_the_pattern():
    rng = random.Random(19)
    parts = ["y", "1", "y_1", "x", "2", "bar", "", "y1", "_1", "1y", "sin", "11", "y_1_bar"]
    found = 0
    for _ in range(20000):
        word = "_".join(rng.choice(parts) for _ in range(rng.randint(1, 6)))
        for v, base in (("y_1", "y"), ("x_2", "x"), ("y_11", "y")):
            pattern = re.compile(rf"(?:^|(?<=_)){re.escape(v)}(?=_|$)")
            want = pattern.sub(base, word) if pattern.search(word) else None
            assert naming._part_replaced(word, v, base) == want, (word, v)
            found += want is not None
    assert found > 1000         # (the draws do hit: not only words without the version)


def _children_all(node):
    """cse._children as it was: every child node, operators and contexts included."""
    return list(ast.iter_child_nodes(node))


_CRAFTED = ["z = (snp.sin(x) and snp.cos(x)) * 2", "z = -snp.sin(x) if a > b else snp.cos(x)",
            "z = [snp.sin(v) * 2 for v in xs] + snp.exp(-x)", "z = (a or -x) @ snp.tanh(x)",
            "z = f(lambda v: snp.sin(v) + 1, x) - snp.log(x) ** 2", "z = not snp.all(x < y)"]


def test_candidates_without_leaves(monkeypatch):
    statements = _golden_statements() + [(c, ast.parse(c).body[0]) for c in _CRAFTED]
    assert len(statements) > 500
    kept = []
    for code, tree in statements:
        parents = {}
        kept.append((cse._candidates(tree, parents), parents))
    monkeypatch.setattr(cse, "_children", _children_all)
    hits = 0
    for (code, tree), (got, got_parents) in zip(statements, kept):
        parents = {}
        want = cse._candidates(tree, parents)
        assert [id(n) for n in got] == [id(n) for n in want], code
        assert all(got_parents[n] is parents[n] for n in want), code
        hits += len(want)
    assert hits > 500


def test_reductions_composed_only_where_named():
    unchanged = 0
    for code, tree in _golden_statements():
        if "unreduce_to" not in code and isinstance(tree, ast.Assign):
            assert algebra._reductions_composed(tree.value) is tree.value, code
            unchanged += 1
    assert unchanged > 500
    # a line that names it is still composed (a mean of per-row sums: one rule)
    tree = ast.parse("g = unreduce_to(mean_grad_to(t, shape_of(xs, axis=1)), shape_of(xs), "
                     "axis=1)").body[0]
    composed = algebra._reductions_composed(tree.value)
    assert ast.unparse(composed) == "mean_grad_to(t, shape_of(xs), summed=1)"


@pytest.fixture(scope="module")
def sources():
    from grad import straight_line_source
    from transform_time import loop_nest_source, loops_in_a_row_source
    return [straight_line_source(60), loops_in_a_row_source(60), loop_nest_source(3)]


def _grads(sources, tmp_path, tag):
    from grad import load_source

    from secant import transforms
    out = []
    for k, text in enumerate(sources):
        fn = load_source(text, "f", str(tmp_path), f"speed19t_{tag}_{k}")
        out.append(inspect.getsource(transforms.generate(fn, (0, 1), "grad")))
        transforms._generated.clear()
    return out


def _counted(mentions):
    return {n: c for n, c in mentions.items() if c}


def _partition(groups):
    """The lines grouped by the comment each stands under (its position's number aside)."""
    seen = {}
    return [seen.setdefault(g, len(seen)) for g in groups]


def test_counts_carried_as_counted_afresh(sources, tmp_path, monkeypatch):
    """Each fold pass and each sum is tried with the mentions (and comment groups) that
    counting the lines afresh gives, and the derivatives are those written without checks."""
    plain = _grads(sources, tmp_path, "plain")
    checked, calls = [0, 0], [0]
    use_to_fold, merged = fold._use_to_fold, accumulate._merged

    def folding(lines, i, names, temporaries, kept, groups, mentions, *args, **kw):
        calls[0] += 1
        if calls[0] % 5 == 0:
            assert _counted(mentions) == _counted(fold.mentioned(lines))
            assert _partition(groups) == _partition(fold._groups(lines))
            checked[0] += 1
        return use_to_fold(lines, i, names, temporaries, kept, groups, mentions, *args, **kw)

    def merging(lines, i, cotangents, prefix, kept, simplify, reads_once, mentions, *args,
                **kw):
        if i % 7 == 0:
            assert _counted(mentions) == _counted(fold.mentioned(lines))
            checked[1] += 1
        return merged(lines, i, cotangents, prefix, kept, simplify, reads_once, mentions,
                      *args, **kw)
    monkeypatch.setattr(fold, "_use_to_fold", folding)
    monkeypatch.setattr(accumulate, "_merged", merging)
    assert _grads(sources, tmp_path, "checked") == plain
    assert checked[0] > 10 and checked[1] > 50

"""Issue 19 (transformation time): the walks and analyses shared or skipped give the answers of
the work they replace.

- transformer/normalize.py `_census` also reads what hygiene.apart asks (`hygiene._names(node,
  bound_too=True)`): the same sets as that walk, on every function of the corpus and the golden
  functions;
- transformer/desugar.py `_Desugarer._bindings` read from its Census (no import in the tree):
  the names of the walk it replaced;
- transformer/parse.py `_parsed_text` (kept as it was: a conversion per read from a kept ast
  tree saved a fresh function's first read but cost each later read more than its copy): each
  read is a tree equal to a fresh gast parse, and a tree of its own;
- transformer/dataflow.py `read_only`: `reads` and `definitions` inside give what they give
  outside, and a copy (a caller changing its answer changes no later one);
- transformer/normalize.py `Normaliser._loop_stores`'s one walk: the names of the two walks it
  replaced, on every loop of the corpus;
- and the derivatives built with them (straight-line code, loops in a row and a loop nest:
  bench/transform_time.py's) agree with float64 finite differences.
"""
import inspect
import pathlib
import sys
import tempfile
import textwrap

import gast
import numpy as np
import pytest
from secant.transformer import (
    dataflow,
    desugar,
    gast_parse,
    hygiene,
    ir,
    normalize,
    parse,
)
from secant.transformer.hygiene import walk

from secant import transforms

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "bench"))


def _functions():
    """Every plain function the corpus and the golden functions define (their own source)."""
    import importlib
    out = []
    for name in ("corpus.callees", "corpus.containers", "corpus.models", "corpus.scalar",
                 "corpus.syntax", "golden.functions"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            sys.path.insert(0, str(HERE))
            mod = importlib.import_module(name)
        out += [f for _, f in inspect.getmembers(mod, inspect.isfunction)
                if f.__module__ == mod.__name__]
    return out


FUNCTIONS = _functions()


def _trees():
    out = []
    for f in FUNCTIONS:
        try:
            out.append(parse.function_source(f).node)
        except Exception:       # noqa: BLE001, S112 (no source of its own: none to compare)
            continue
    return out


def test_census_reads_what_apart_asks():
    trees = _trees()
    assert len(trees) > 100
    classes = 0
    for node in trees:
        *_, names = normalize._census(node)
        assert names == hygiene._names(node, bound_too=True)
        classes += any(isinstance(n, (gast.ClassDef, gast.alias)) for n in walk(node))
    assert classes         # (a class or an import among them: the names only apart reads)


def test_bindings_from_the_census():
    compared = 0
    for node in _trees():
        d = desugar._Desugarer.__new__(desugar._Desugarer)
        d.node, d.changed, d._census = node, False, hygiene.Census(node)
        got = d._bindings()
        bound, imported = set(), set()
        for m in walk(node):
            if isinstance(m, gast.Name) and isinstance(m.ctx, gast.Store):
                bound.add(m.id)
            elif isinstance(m, (gast.Import, gast.ImportFrom)):
                imported.update((a.asname or a.name).split(".")[0] for a in m.names)
        assert got == (bound | imported, imported)
        compared += bool(bound)
    assert compared > 50


def test_parsed_text_reads_are_fresh_and_equal():
    read = 0
    for f in FUNCTIONS[:60]:
        try:
            text = "".join(inspect.getsourcelines(f)[0])
        except (OSError, TypeError):
            continue
        text = textwrap.dedent(text)
        if not text.startswith("def "):     # (a decorated def, a lambda: not this read)
            continue
        first = parse._parsed_text(text)
        want = gast.dump(gast_parse.parse(text), include_attributes=True)
        assert gast.dump(first, include_attributes=True) == want
        for n in walk(first):       # (the first read changed: the next is the source's)
            if isinstance(n, gast.Name):
                n.id = "changed_" + n.id
        first.body[0].body.clear()
        second = parse._parsed_text(text)
        assert gast.dump(second, include_attributes=True) == want
        assert not {id(n) for n in walk(first)} & {id(n) for n in walk(second)}
        read += 1
    assert read > 30


def _canonical(f, n_params):
    return normalize.normalise(f, list(range(n_params)))


def _bench_functions():
    from grad import load_source, straight_line_source
    from transform_time import loop_nest_source, loops_in_a_row_source
    d = tempfile.mkdtemp(prefix="speed19v_")
    return [load_source(src(n), "f", d, f"{src.__name__}_{n}") for src, n in (
        (straight_line_source, 40), (loops_in_a_row_source, 40), (loop_nest_source, 3))]


def test_read_only_answers_as_outside():
    for f in _bench_functions():
        fn = _canonical(f, 2)
        stmts = list(ir.nested(fn.body)) + [fn.result]
        want = [dataflow.reads(s) for s in stmts]
        count = dataflow.definitions(fn)
        with dataflow.read_only():
            for _ in range(2):
                got = [dataflow.reads(s) for s in stmts]
                assert got == want
                for g in got:           # (a caller's change to its answer: not kept)
                    if g is not None:
                        g["changed"] = 1
                mine = dataflow.definitions(fn)
                assert mine == count
                mine["changed"] = 1
        assert [dataflow.reads(s) for s in stmts] == want


def test_loop_stores_as_two_walks():
    seen = 0
    for node in _trees():
        for loop in walk(node):
            if not isinstance(loop, (gast.For, gast.While)):
                continue
            norm = normalize.Normaliser.__new__(normalize.Normaliser)
            norm.src = type("S", (), {"generated": False})()
            target = loop.target.id if isinstance(loop, gast.For) and isinstance(
                loop.target, gast.Name) else None
            own, every, stored = norm._loop_stores(loop, loop.body, target)
            want_every = {n.id for s in loop.body for n in walk(s)
                          if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
            want = want_every - {target}
            want -= {m.id for s in loop.body for n in walk(s) if isinstance(n, gast.comprehension)
                     for m in walk(n.target) if isinstance(m, gast.Name)} - own
            assert (every, stored) == (want_every, want)
            seen += 1
    assert seen > 20


def _fd_grad(f, args, i, eps=1e-6):
    x = np.array(args[i], dtype=np.float64)
    g = np.zeros_like(x)
    for k in range(x.size):
        up, down = x.copy(), x.copy()
        up.flat[k] += eps
        down.flat[k] -= eps
        a = list(args)
        a[i] = up
        hi = float(f(*a))
        a[i] = down
        lo = float(f(*a))
        g.flat[k] = (hi - lo) / (2 * eps)
    return g


@pytest.mark.parametrize("which", [0, 1, 2])
def test_derivatives_of_the_bench_functions(which, x64):
    f = _bench_functions()[which]
    rng = np.random.default_rng(19)
    args = [rng.uniform(-0.5, 0.5, 3), rng.uniform(-0.5, 0.5, 3)]
    g = transforms.generate(f, (0, 1), "grad")
    got = g(*args)
    for i in (0, 1):
        np.testing.assert_allclose(np.asarray(got[i], dtype=np.float64),
                                   _fd_grad(f, args, i), rtol=1e-5, atol=1e-7)

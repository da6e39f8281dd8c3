"""Issue 19 (perf19t): a derivative's generated lines are parsed once (transformer/walker.py
`parsed`, a cache shared by ad/cse.py, ad/algebra.py and ad/fold.py, which only read the trees)
and ast.dump is compared as a tuple (ad/fold.py `dump_key`). Checked here: no transform changes
a cached tree, dump_key and fold._same agree with ast.dump, and derivatives whose lines cse,
algebra and fold rewrite still give the values of float64 central differences. No timings."""
import ast
import itertools

import numpy as np
from numpy.testing import assert_allclose

import secant
import secant.numpy as snp
from secant.ad import fold
from secant.transformer import walker


def leapfrog(x, v, dt, k):
    a = -k * x
    v_half = v + 0.5 * dt * a
    x_new = x + dt * v_half
    a_new = -k * x_new
    v_new = v_half + 0.5 * dt * a_new
    return snp.sum(x_new * x_new + v_new * v_new * snp.sin(0.5 * dt * k))


def repeated(x, y):
    s = snp.sin(x * y)
    t = snp.sin(x * y) * 3.0 * 4.0
    u = s * t + s * t + snp.exp(x * y)
    w = snp.tanh(u) * 2 * x * snp.exp(x * y)
    return snp.sum(w + u * u - (s * 3) * x)


def _central(f, args, i, eps=1e-6):
    args = [np.asarray(a, np.float64) for a in args]
    out = np.zeros_like(args[i])
    for idx in np.ndindex(args[i].shape):
        up = [a.copy() for a in args]
        down = [a.copy() for a in args]
        up[i][idx] += eps
        down[i][idx] -= eps
        out[idx] = (float(f(*up)) - float(f(*down))) / (2 * eps)
    return out


def test_no_transform_changes_a_cached_line_tree(monkeypatch):
    seen = []
    original = walker.parsed

    def recording(code, kind="stmt"):
        tree = original(code, kind)
        seen.append((code, kind, tree))
        return tree
    monkeypatch.setattr(walker, "parsed", recording)
    for mod in ("secant.ad.cse", "secant.ad.fold", "secant.ad.algebra"):
        monkeypatch.setattr(__import__(mod, fromlist=["parsed"]), "parsed", recording)
    dumps = {}
    for fn, argnums in ((leapfrog, (0, 1)), (repeated, (0, 1))):
        secant.grad(fn, argnums=argnums)   # (generated on first call)
        x = np.linspace(0.1, 0.9, 5)
        args = (x, x[::-1].copy(), 0.1, 2.0) if fn is leapfrog else (x, x[::-1].copy())
        secant.grad(fn, argnums=argnums)(*args)
        for code, kind, tree in seen:
            dumps.setdefault((code, kind, id(tree)), (tree, ast.dump(tree)))
    assert seen, "no line was read through walker.parsed"
    for (code, kind, _), (tree, before) in dumps.items():
        fresh = ast.parse(code + "\n    pass" if kind == "block" else code)
        assert ast.dump(tree) == ast.dump(fresh) == before, code


def test_dump_key_and_same_agree_with_ast_dump():
    src = "\n".join([
        "a = 1 + 1.0 + True + (-1) + 1j + x",
        "b = f(*args, k=1, **kw)[1:2, ::3] if c else (lambda q: q)(x)",
        "c = [1, 1.0, 'a', b'a', None, ..., (1, 2), {1: 2}, {1}] or not x",
        "d = snp.sin(x * y) * snp.sin(x * y) + snp.sin(y * x) - x @ y ** 2",
        "e = snp.sum(x, axis=0, keepdims=True) + snp.sum(x, axis=0)",
        "f = 1 < x <= 2 and x is not None",
    ])
    nodes = [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.expr)]
    memo = {}
    for a, b in itertools.product(nodes, nodes):
        same = ast.dump(a) == ast.dump(b)
        assert (fold.dump_key(a, memo) == fold.dump_key(b, memo)) == same, \
            (ast.dump(a), ast.dump(b))
        assert fold._same(a, b) == same, (ast.dump(a), ast.dump(b))


def test_same_reads_a_node_as_its_replacement():
    use = ast.parse("y_bar = t * 2 + snp.sin(t)")
    t = use.body[0].value.left.left         # the first read of t
    value = ast.parse("a * b", mode="eval").body
    want = ast.parse("y_bar = a * b * 2 + snp.sin(t)")
    before = ast.dump(use)
    assert fold._same(want, use, (t, value))
    assert not fold._same(want, use)
    assert not fold._same(ast.parse("y_bar = t * 2 + snp.sin(a * b)"), use, (t, value))
    assert ast.dump(use) == before          # (the use's tree is not changed)


def test_derivatives_rewritten_by_cse_algebra_and_fold_match_central_differences(x64):
    x = np.linspace(0.1, 0.9, 5)
    y = x[::-1].copy()
    for i in (0, 1):
        got = secant.grad(repeated, argnums=i)(x, y)
        want = _central(lambda a, b: repeated(a, b), (x, y), i)
        assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)
        got = secant.grad(leapfrog, argnums=i)(x, y, 0.1, 2.0)
        want = _central(lambda a, b: leapfrog(a, b, 0.1, 2.0), (x, y), i)
        assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)
    source = secant.source(secant.grad(leapfrog, argnums=(0, 1)))
    assert "times_dt = 0.5 * dt" in source      # (cse named the common 0.5 * dt)

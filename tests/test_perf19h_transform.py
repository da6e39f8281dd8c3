"""Issue 19 (perf19h): transformation time linear in nesting and in the number of loops gives the
same answers. walker._live_before starts a loop's liveness fixpoint from the one it reached for
fewer live names (the same least fixpoint: liveness is monotone) and must keep and report
exactly what the cold fixpoint did; normalize._suffix_first_reads answers, for every top-level
loop at once, what _first_reads of the statements after it answers; grads of deeply nested
loops and of many loops in a row match central differences. No timings here."""
import random

import gast
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.transformer import walker
from secant.transformer.normalize import _first_reads, _suffix_first_reads
from secant.transformer.walker import Line


# --- liveness: the warm-started fixpoint against the cold one (walker.py before issue 19) ------
def _cold_live_before(lines, nodes, live, keep, after=None):
    live = set(live)
    for node in reversed(nodes):
        if isinstance(node, int):
            ln = lines[node]
            if after is not None and node in after:
                after[node].update(live)
            if not ln.defines or ln.code.startswith(("return", "@")) or ln.defines & live or \
                    walker._MUTATES.search(ln.code):
                keep[node] = True
                if not (walker._AUGMENTED.match(ln.code) or "\n" in ln.code):
                    live -= ln.defines
                live |= ln.uses
            continue
        head, body, els, orelse = node
        header = lines[head]
        if header.code.startswith("if "):
            inner = _cold_live_before(lines, body, live, keep, after) | _cold_live_before(
                lines, orelse, live, keep, after)
            if any(keep[k] for k in _cold_statements(body) + _cold_statements(orelse)):
                keep[head] = True
                if els is not None:
                    keep[els] = True
                live = inner | header.uses
            continue
        top = live | header.uses
        while True:
            got = _cold_live_before(lines, body, top, keep, after) | live | header.uses
            if got <= top:
                break
            top |= got
        if any(keep[k] for k in _cold_statements(body)):
            keep[head] = True
            live = top
    return live


def _cold_statements(nodes):
    out = []
    for node in nodes:
        out += [node] if isinstance(node, int) else \
            _cold_statements(node[1]) + _cold_statements(node[3])
    return out


_NAMES = "abcdefgh"


def _random_lines(rng, depth=0, indent=1, budget=None):
    budget = budget if budget is not None else [40]
    out = []
    for _ in range(rng.randint(1, 4)):
        if budget[0] <= 0:
            break
        budget[0] -= 1
        k = rng.random()
        if depth < 5 and k < 0.3:
            i = rng.choice("ijk")
            out.append(Line(f"for {i} in range({rng.choice(_NAMES)}):", indent, "block"))
            out += _random_lines(rng, depth + 1, indent + 1, budget) or \
                [Line(f"{rng.choice(_NAMES)} = {i}", indent + 1)]
        elif depth < 5 and k < 0.4:
            out.append(Line(f"if {rng.choice(_NAMES)}:", indent, "block"))
            out += _random_lines(rng, depth + 1, indent + 1, budget) or [Line("pass", indent + 1)]
            if rng.random() < 0.5:
                out.append(Line("else:", indent, "block"))
                out += _random_lines(rng, depth + 1, indent + 1, budget) or \
                    [Line("pass", indent + 1)]
        elif k < 0.47:
            out.append(Line(f"{rng.choice(_NAMES)} += {rng.choice(_NAMES)}", indent))
        elif k < 0.52:
            out.append(Line(f"s.append({rng.choice(_NAMES)})", indent))
        elif k < 0.6:
            out.append(Line(f"{rng.choice(_NAMES)}, {rng.choice(_NAMES)} = "
                            f"f({rng.choice(_NAMES)})", indent))
        else:
            x, y, z = (rng.choice(_NAMES) for _ in range(3))
            out.append(Line(f"{x} = {y} * {z}", indent))
    return out


@pytest.mark.parametrize("seed", range(60))
def test_warm_started_liveness_keeps_and_reports_what_the_cold_fixpoint_does(seed):
    rng = random.Random(seed)
    lines = _random_lines(rng) + [Line(f"return {rng.choice(_NAMES)}, s", 1)]
    tree = walker._block_tree(lines, 0, len(lines), None)
    assert tree is not None
    stmts = [i for i, ln in enumerate(lines) if ln.kind == "stmt"]
    keep, after = [False] * len(lines), {i: set() for i in stmts}
    live = walker._live_before(lines, tree, set(), keep, after)
    want_keep, want_after = [False] * len(lines), {i: set() for i in stmts}
    want_live = _cold_live_before(lines, tree, set(), want_keep, want_after)
    assert (live, keep, after) == (want_live, want_keep, want_after)


def test_deep_loop_nest_keeps_only_what_the_result_needs():
    lines = [Line("a = x", 1)]
    for d in range(12):       # (2**12 cold passes before issue 19)
        lines += [Line(f"for i{d} in range(n):", d + 1, "block"),
                  Line(f"dead{d} = a * {d}", d + 2), Line(f"a = a + i{d}", d + 2)]
    lines.append(Line("return a", 1))
    out = [ln.code for ln in walker.dead_code_eliminated(lines)]
    assert not any(c.startswith("dead") for c in out)
    assert out.count("a = a + i11") == 1 and out[-1] == "return a"


# --- first reads after each top-level loop -------------------------------------------------------
def _random_source(rng, depth=0, ind=""):
    out = []
    for _ in range(rng.randint(1, 4)):
        k = rng.random()
        e = f"{rng.choice(_NAMES)} + {rng.choice(_NAMES)}"
        if depth < 2 and k < 0.15:
            out += [f"{ind}for {rng.choice(_NAMES)} in range({e}):"] + \
                _random_source(rng, depth + 1, ind + "    ")
        elif depth < 2 and k < 0.3:
            out += [f"{ind}if {rng.choice(['t', 'u', 'a < b'])}:"] + \
                _random_source(rng, depth + 1, ind + "    ")
            if rng.random() < 0.5:
                out += [f"{ind}else:"] + _random_source(rng, depth + 1, ind + "    ")
        elif depth < 2 and k < 0.35:
            out += [f"{ind}while {e}:"] + _random_source(rng, depth + 1, ind + "    ")
        elif k < 0.45:
            out.append(f"{ind}{rng.choice(_NAMES)} += {e}")
        elif k < 0.5:
            out.append(f"{ind}{rng.choice(_NAMES)}, {rng.choice(_NAMES)} = {e}, 1")
        elif k < 0.55:
            out.append(f"{ind}g = lambda {rng.choice(_NAMES)}: {e}")
        else:
            out.append(f"{ind}{rng.choice(_NAMES)} = {e}")
    return out


@pytest.mark.parametrize("seed", range(150))
def test_suffix_first_reads_is_first_reads_of_each_suffix(seed):
    rng = random.Random(seed)
    stmts = gast.parse("\n".join(_random_source(rng) + _random_source(rng))).body
    names = set(_NAMES) | {"g", "t", "u", "range"}
    got = _suffix_first_reads(stmts, set(range(len(stmts))))
    if got is None:         # two ifs on one test name: the scan per suffix instead
        tests = [s.test.id for s in stmts if isinstance(s, gast.If)
                 and isinstance(s.test, gast.Name)]
        assert len(tests) != len(set(tests))
        return
    for i in range(len(stmts)):
        assert got[i] == _first_reads(stmts[i + 1:], names)
        some = set(rng.sample(sorted(names), 3))
        assert got[i] & some == _first_reads(stmts[i + 1:], some)


# --- end to end: grads against central differences -----------------------------------------------
def _central(f, x, y, eps=1e-6):
    return np.array([(f(x + eps * e, y) - f(x - eps * e, y)) / (2 * eps)
                     for e in np.eye(x.size)]).reshape(x.shape)


def test_grad_of_a_deep_loop_nest_matches_central_differences(x64):
    def nest(x, y):
        a, b = x, y
        for i0 in range(2):
            a = snp.sin(a) * b
            for i1 in range(2):
                b = b + snp.tanh(a) * 0.5
                for i2 in range(2):
                    c = a * 0.5
                    for i3 in range(2):
                        a = a + c * 0.1
                        for i4 in range(1):
                            a = snp.cos(a) + b * 0.1
        return snp.sum(a * b)
    x, y = np.linspace(0.1, 0.9, 3), np.linspace(-0.5, 0.5, 3)
    got = secant.grad(nest)(x, y)
    want = _central(lambda u, v: float(nest(u, v)), x, y)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)


def test_grad_of_many_loops_in_a_row_matches_central_differences(x64):
    def loops(x, y):
        a, b = x, y
        for _ in range(2):
            a = snp.sin(a) + b
        keep = a * 2.0
        for _ in range(2):
            b = b * snp.tanh(a)
        for k in range(3):
            a = a + b * k
        for _ in range(2):
            b = keep + snp.cos(b)
        if True:
            c = a * b
        for _ in range(2):
            c = c + keep * 0.1
        return snp.sum(c)
    x, y = np.linspace(0.1, 0.9, 3), np.linspace(-0.5, 0.5, 3)
    got = secant.grad(loops)(x, y)
    want = _central(lambda u, v: float(loops(u, v)), x, y)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)


def test_grad_of_nested_accumulating_loops_matches_central_differences(x64):
    # each level's accumulator becomes active in its loop's first pass: the enclosing loops'
    # next passes start from that (normalize._loop's warm start), the same derivative
    def acc(x, y):
        a = x
        s0 = 0.0
        for i0 in range(2):
            s0 = s0 + snp.sin(a)
            s1 = 0.0
            for i1 in range(2):
                s1 = s1 + snp.cos(a) * y
                s2 = 0.0
                for i2 in range(2):
                    s2 = s2 + a * s1
                    a = a * 0.9 + s2 * 0.01
                s1 = s1 + s2
            s0 = s0 + s1 * 0.5
        return snp.sum(a + s0)
    x, y = np.linspace(0.1, 0.9, 3), np.linspace(-0.5, 0.5, 3)
    for wrt in (0, 1):
        got = secant.grad(acc, argnums=wrt)(x, y)
        f = (lambda u, v: float(acc(u, v))) if wrt == 0 else (lambda u, v: float(acc(v, u)))
        want = _central(f, *((x, y) if wrt == 0 else (y, x)))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)
    xs = np.stack([x, x * 0.5])
    per_example = secant.vmap(secant.grad(acc), in_axes=(0, None))(xs, y)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(per_example[k]),
                                   np.asarray(secant.grad(acc)(xs[k], y)), rtol=1e-10)

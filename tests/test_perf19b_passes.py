"""Issue 19 (perf19b): fewer passes over loops, the same answers.

normalize._loop stops its activity fixpoint after one pass where nothing in the pass asked
whether the loop names it found tracked were tracked (the body would come out the same);
normalize._loop_stores keeps each loop's assigned names per statement (never stale: a new body
is walked again); walker._live_before does not walk a loop again for live names its body never
assigns, and (no `after` to collect: dead_code_eliminated) walks each block with the names it
assigns only. Checked against the cold liveness fixpoint, against central differences, and by the
passes counted. No timings here."""
import random

import gast
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import transforms
from secant.ad import cse
from secant.transformer import dataflow, ir, normalize, walker
from secant.transformer.walker import Line
from test_perf19h_transform import _NAMES, _central, _cold_live_before, _random_lines


# --- liveness: loops whose new live names pass through them -----------------------------------
def _nest_with_passing_names(rng, depth, indent=1):
    """A loop nest that assigns only a..c inside, reading p..u (assigned before it, read after
    it at random): each enclosing pass brings names live that the inner loops never assign."""
    out = []
    for _ in range(rng.randint(1, 3)):
        k = rng.random()
        if depth > 0 and k < 0.45:
            out.append(Line(f"for i{depth} in range({rng.choice('pqrstu')}):", indent, "block"))
            out += _nest_with_passing_names(rng, depth - 1, indent + 1) or \
                [Line(f"a = i{depth}", indent + 1)]
        elif depth > 0 and k < 0.55:
            out.append(Line(f"if {rng.choice('abpq')}:", indent, "block"))
            out += _nest_with_passing_names(rng, depth - 1, indent + 1) or \
                [Line("pass", indent + 1)]
        else:
            x, y, z = rng.choice("abc"), rng.choice("abcpqrstu"), rng.choice("abcpqrstu")
            out.append(Line(f"{x} = {y} * {z}", indent))
    return out


@pytest.mark.parametrize("seed", range(80))
def test_liveness_skipping_loops_keeps_and_reports_what_the_cold_fixpoint_does(seed):
    rng = random.Random(seed)
    lines = [Line(f"{n} = x", 1) for n in "abcpqrstu"]
    for _ in range(rng.randint(1, 3)):
        lines += _nest_with_passing_names(rng, rng.randint(2, 6))
        lines.append(Line(f"{rng.choice('abc')} = {rng.choice('pqrstu')} + a", 1))
    lines.append(Line(f"return {rng.choice('abc')}, {rng.choice('pqrstu')}", 1))
    tree = walker._block_tree(lines, 0, len(lines), None)
    stmts = [i for i, ln in enumerate(lines) if ln.kind == "stmt"]
    keep, after = [False] * len(lines), {i: set() for i in stmts}
    live = walker._live_before(lines, tree, set(), keep, after)
    want_keep, want_after = [False] * len(lines), {i: set() for i in stmts}
    want_live = _cold_live_before(lines, tree, set(), want_keep, want_after)
    assert (live, keep, after) == (want_live, want_keep, want_after)
    _assert_liveness_without_after_is_cold(lines, tree)


def _assert_liveness_without_after_is_cold(lines, tree):
    """dead_code_eliminated's walk (no `after`: blocks walked with the names they assign)."""
    keep = [False] * len(lines)
    live = walker._live_before(lines, tree, set(), keep)
    want_keep = [False] * len(lines)
    assert (live, keep) == (_cold_live_before(lines, tree, set(), want_keep), want_keep)


def test_a_name_both_branches_assign_is_dead_before_the_if():
    lines = [Line("a = x", 1), Line("b = x", 1), Line("for i in range(n):", 1, "block"),
             Line("if p:", 2, "block"), Line("a = b", 3), Line("else:", 2, "block"),
             Line("a = 2", 3), Line("c = a + i", 2), Line("return c", 1)]
    _assert_liveness_without_after_is_cold(lines, walker._block_tree(lines, 0, len(lines), None))
    assert [ln.code for ln in walker.dead_code_eliminated(lines)][0] == "b = x"


@pytest.mark.parametrize("seed", range(80))
def test_liveness_without_after_is_the_cold_fixpoint_on_perf19h_programs(seed):
    rng = random.Random(1000 + seed)
    lines = _random_lines(rng) + [Line(f"return {rng.choice(_NAMES)}, s", 1)]
    _assert_liveness_without_after_is_cold(lines, walker._block_tree(lines, 0, len(lines), None))


def test_a_deep_nest_is_walked_a_bounded_number_of_times_per_level():
    lines = [Line(f"{n} = x", 1) for n in "apq"]
    for d in range(14):
        lines += [Line(f"for i{d} in range(p):", d + 1, "block"),
                  Line(f"a = a * {'pq'[d % 2]}", d + 2)]
    lines.append(Line("return a", 1))
    calls = []
    real = walker._live_before

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    walker._live_before = counted
    try:
        out = walker.dead_code_eliminated(lines)
    finally:
        walker._live_before = real
    assert [ln.code for ln in out] == [ln.code for ln in lines]
    assert len(calls) <= 3 * 14     # (29; 120 before: each enclosing pass walked every level)


# --- the loop's stored names: kept per statement, never stale -----------------------------------
def test_loop_stores_are_recomputed_for_a_changed_body():
    def f(x):
        a = x
        for i in range(2):
            a = a * 2.0
        return a
    norm = normalize.Normaliser(f, [0])
    loop = next(s for s in norm.node.body if isinstance(s, gast.For))
    own, every, stored = norm._loop_stores(loop, loop.body, "i")
    assert (own, every, stored) == ({"a"}, {"a"}, {"a"})
    assert norm._loop_stores(loop, loop.body, "i")[2] is stored      # (kept)
    extra = gast.parse("b = a + 1.0\nc = [k for k in a]").body
    loop.body = loop.body + extra                                    # a new body list
    assert norm._loop_stores(loop, loop.body, "i")[1:] == ({"a", "b", "c", "k"}, {"a", "b", "c"})
    loop.body[1] = gast.parse("d = a").body[0]                       # the same list, changed
    assert norm._loop_stores(loop, loop.body, "i")[1:] == ({"a", "c", "d", "k"}, {"a", "c", "d"})
    assert norm._loop_stores(loop, loop.body, "d")[2] == {"a", "c"}      # (another target)


# --- activity: one pass where the body never asks about the loop names --------------------------
def _passes(fn):
    counts = {"loops": 0, "passes": 0}
    real_loop, real_pass = normalize.Normaliser._loop, normalize.Normaliser._loop_pass

    def loop(self, *args, **kwargs):
        counts["loops"] += 1
        return real_loop(self, *args, **kwargs)

    def one_pass(self, *args, **kwargs):
        counts["passes"] += 1
        return real_pass(self, *args, **kwargs)
    normalize.Normaliser._loop, normalize.Normaliser._loop_pass = loop, one_pass
    try:
        transforms._generated.clear()
        grad = secant.grad(fn)
        grad(np.linspace(0.1, 0.9, 3), np.linspace(-0.5, 0.5, 3))
    finally:
        normalize.Normaliser._loop, normalize.Normaliser._loop_pass = real_loop, real_pass
        transforms._generated.clear()
    return counts, grad


def straight_loops(x, y):
    for _ in range(2):
        u = snp.tanh(y) * 2.0
        v = snp.maximum(u, x)
    for _ in range(2):
        w = snp.sin(v) + u
        z = w * v - 0.5
    return snp.sum(z)


def carried_via_alias(x, y):
    a = y
    b = y
    for i in range(3):
        b = a               # the previous iteration's a: its loop name, carried into b
        a = x * 2.0 + y
    return snp.sum(a * b)


def carried_under_if(x, y):
    a = y * 0.0
    for i in range(3):
        if i > 0:
            a = snp.sin(x) * y + a
    return snp.sum(a)


def read_before_assigned(x, y):
    acc = 0.0
    for i in range(3):
        acc = acc + snp.cos(x) * y
    return snp.sum(acc)


@pytest.mark.parametrize("fn, passes", [(straight_loops, 2), (carried_via_alias, None),
                                        (carried_under_if, None), (read_before_assigned, 2)])
def test_loops_normalised_once_where_no_pass_asked_and_grads_match(x64, fn, passes):
    counts, grad = _passes(fn)
    if passes is not None:
        assert counts["passes"] == passes, counts   # (a pass more per loop before issue 19)
    x, y = np.linspace(0.1, 0.9, 3), np.linspace(-0.5, 0.5, 3)
    np.testing.assert_allclose(np.asarray(grad(x, y)),
                               _central(lambda u, v: float(fn(u, v)), x, y),
                               rtol=1e-6, atol=1e-8)
    got_y = secant.grad(fn, argnums=1)(x, y)
    want_y = _central(lambda v, u: float(fn(u, v)), y, x)
    np.testing.assert_allclose(np.asarray(got_y), want_y, rtol=1e-6, atol=1e-8)


# --- cse: the lines between occurrences looked up by name, not scanned ---------------------------
def _scanned_same_value(lines, occ, reads, target):
    """ad/cse.py's _same_value before issue 19: every line from the first occurrence on."""
    first, out, k = occ[0][0], [], occ[0][0]
    for j, node in occ[1:]:
        while k < j:
            ln = lines[k]
            changed = (ln.defines - ({target} if k == first else set())) & reads
            if changed or cse.fold._mutates(ln, reads) or cse._passed(ln, reads):
                return out
            k += 1
        out.append((j, node))
    return out


@pytest.mark.parametrize("seed", range(60))
def test_same_value_by_mentions_is_the_scan(seed):
    rng = random.Random(seed)
    names = "abcdxyz"
    kinds = ["{a} = {b} * {c}", "{a} = snp.sin({b})", "{a}.append({b})", "{a}[0] = {b}",
             "{a} = user({b})", "{a} = {a} + 1.0", "snp.sum({b})", "# {a}"]
    lines = []
    for _ in range(rng.randint(5, 40)):
        a, b, c = (rng.choice(names) for _ in range(3))
        code = rng.choice(kinds).format(a=a, b=b, c=c)
        lines.append(Line(code, 1, "comment" if code.startswith("#") else "stmt"))
    mentions = cse._mentions(lines)
    for _ in range(10):
        at = sorted(rng.sample(range(len(lines)), rng.randint(2, min(6, len(lines)))))
        at = sorted(at + [at[0]] * rng.randint(0, 1))       # (two occurrences in one line)
        occ = [(k, object()) for k in at]
        reads = set(rng.sample(names, rng.randint(1, 3)))
        target = rng.choice([None, *sorted(lines[at[0]].defines)])
        if target:
            reads.add(target)
        assert cse._same_value(lines, occ, reads, target, mentions) == \
            _scanned_same_value(lines, occ, reads, target)


# --- a loop's start values found from the loop back ----------------------------------------------
def _forward_starts(before):
    """dataflow.unreduced_carries's start values before issue 19: every statement, in order."""
    starts = {}
    for s in before:
        if isinstance(s, ir.Op) and s.op == "identity" and len(s.targets) == 1:
            starts[s.targets[0]] = s.operands.get("x")
        elif isinstance(s, ir.Plain) and len(s.defines) == 1 and not s.stack and \
                s.code.strip().startswith(f"{next(iter(s.defines))} = "):
            starts[next(iter(s.defines))] = ir.Expr(s.code.split("=", 1)[1].strip())
        else:
            for t in (s.targets if isinstance(s, ir.Op) else
                      s.defines if isinstance(s, ir.Plain) else ()):
                starts.pop(t, None)
    return starts


def accumulators(x, y):
    acc = 0.0
    tot = y * 1.0
    for i in range(3):
        acc = acc + snp.sin(x) * i
        tot = tot - x * acc
    acc = acc * 2.0
    for i in range(2):
        acc = acc + tot
        tot = snp.cos(tot) + y
    return snp.sum(acc + tot)


@pytest.mark.parametrize("fn", [accumulators, read_before_assigned, carried_under_if,
                                straight_loops])
def test_loop_starts_from_the_loop_back_match_a_forward_scan(x64, fn, monkeypatch):
    real, seen = dataflow.unreduced_carries, []

    def checked(loop, before, indexed=None):
        starts = _forward_starts(before)
        got = dataflow.loop_starts(loop, before)
        carried = [name for name, last in loop.carried if name != last]
        assert set(got) <= set(carried)
        assert [got.get(n) for n in carried] == [starts.get(n) for n in carried]
        assert indexed == got       # (reverse.py's: the block's dataflow.LoopStarts)
        seen.append(got)
        return real(loop, before, indexed)
    monkeypatch.setattr(dataflow, "unreduced_carries", checked)
    transforms._generated.clear()
    x, y = np.linspace(0.1, 0.9, 3), np.linspace(-0.5, 0.5, 3)
    got = secant.grad(fn)(x, y)
    transforms._generated.clear()
    assert seen
    np.testing.assert_allclose(np.asarray(got), _central(lambda u, v: float(fn(u, v)), x, y),
                               rtol=1e-6, atol=1e-8)

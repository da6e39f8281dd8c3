"""Copy removal on a derivative's generated lines: no `a_bar = b_bar` statements and no zero
accumulator that its first contribution could simply assign.

Works on the lines ad/reverse.py assembles (each knows the names it reads and writes, and its
indentation gives the block structure), for cotangent names and, but for the zeros rewrite,
the forward values' (a loop's `x_2 = f(x_1)`, `x_1 = x_2` is `x_1 = f(x_1)`, as written; a
value is renamed only in lines holding no scope of their own, def, lambda or comprehension,
and not joined at a branch, where it would lose the user's name):

- a copy `a = b` that repeats an earlier `b = a` with neither reassigned since is dropped;
- a copy `a = b` whose `a` is assigned nowhere else and read only further down its block is
  dropped, those reads renamed to `b`, when `b` is not reassigned before the last of them
  (through the end of the loop or branch holding it; `b = f(a)` itself may reassign it);
- a copy `a = b` of a `b` assigned once, just above in the same block and read nowhere else,
  becomes that assignment, to `a`;
- `a = zeros_like(v)` (a cotangent) whose next mention is `a = a + e` in the same block
  becomes `a = e` (an accumulator in a loop the zeros stand before keeps them: each
  iteration adds), and a copy `a = b` whose next mention reassigns it, `a = a + e`, becomes
  `a = b + e`.
"""
import ast
import heapq
import re
from collections import defaultdict

from secant.transformer.walker import parsed

_COPY = re.compile(r"(\w+) = (\w+)")
_WORD = re.compile(r"(?<![\w.])\w+")       # a name (or a number), not an attribute
# a name to rename, or text that only looks like one: a string literal's contents (a field's
# key, variables['batch_stats']) or, inside brackets, a keyword argument's name (f(train=train);
# `a, b = ...` at the statement's level is no keyword); an f-string's (its braces hold names)
# is renamed as before, by words
_STRING = r"""(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
_NAME_OR_NOT = re.compile(rf"""(?<!\w)(?P<f>(?:[fF][rR]?|[rR][fF]){_STRING})|"""
                          rf"""(?P<not>(?<!\w)[rRbBuU]{{0,2}}{_STRING})|"""
                          r"""(?P<kw>(?<=[(,])\s*\w+\s*=(?!=))|(?<![\w.])\w+""")
_STRINGS = re.compile(rf"(?<!\w)[rRbBuUfF]{{0,2}}{_STRING}")
_ADD = re.compile(r"(\w+) = (\w+) \+ (.+)")
_SCOPES = re.compile(r"\b(?:def|lambda|for)\b")
_CLOSURES = re.compile(r"\b(?:def|lambda)\b")
_SAME = re.compile(r"(\w+) = \1")     # `x = x`
_ZEROS = re.compile(r"(\w+) = (?:snp\.zeros_like|zeros_like_tree)\(\w+\)")


def without_copies(lines, names, values=frozenset(), alike=None):
    """`lines` (ad/reverse.py's Line) with the copies between the cotangent `names` removed,
    and those between forward `values` (the user's variables: the renaming rewrites only,
    never the zeros one, since `v = zeros_like(x)`, `v = v + e` broadcasts e to x's shape).

    The rewrites apply one at a time, each time the first that applies in the order of the
    steps (_Copies.STEPS), then of the lines. A rewrite at line i depends only on the lines
    that mention its copy's names (and on the block structure, which no rewrite changes), so
    a line found not to apply is tried again only after a rewrite changes a line mentioning
    one of its names: the same result as retrying every line after every rewrite, in time
    linear in the lines rather than quadratic. alike(a, b): a provably has b's dtype wherever
    it holds a value (a parameter b's loop carry a: transformer/shapes.py parameter_like), so
    grad's seed may read either (_into_dead_source)."""
    return _Copies(lines, names, values, alike).run()


class _Removed:
    """The place of a removed line while the rewrites run (the others keep their positions)."""
    kind, indent, code, origin = "removed", 0, "", None
    uses = defines = frozenset()


_REMOVED = _Removed()


class _Todo:
    """The lines a step is still to try, in increasing order (a heap: not sorted again after
    every rewrite)."""

    def __init__(self, lines):
        self.members = set(lines)
        self.heap = sorted(self.members)

    def add(self, lines):
        for k in lines:
            if k not in self.members:
                self.members.add(k)
                heapq.heappush(self.heap, k)

    def first(self, step):
        """Whether `step` rewrote at one of the lines (tried in order; those found not to
        apply leave)."""
        while self.heap:
            i = heapq.heappop(self.heap)
            self.members.discard(i)
            if step(i):
                return True
        return False


class _Copies:
    def __init__(self, lines, names, values=frozenset(), alike=None):
        self.lines, self.names = list(lines), names | values
        self.cotangents = names
        self.alike = alike
        self.uses, self.defines = defaultdict(set), defaultdict(set)    # name -> positions
        n = len(self.lines)
        self.copies, self.zeros, self.keys = [None] * n, [None] * n, [()] * n
        self.touched = set()        # names of the lines the last rewrite changed
        for k, ln in enumerate(self.lines):
            self._index(k, ln)
        self.touched.clear()
        self.context = _contexts(self.lines)
        self.block_start, self.block_end = _block_bounds(self.lines)

    STEPS = ("_drop_repeated", "_forward", "_backward", "_first_contribution", "_join",
             "_into_dead_source")

    def run(self):
        steps = [getattr(self, s) for s in self.STEPS]
        start = [k for k, key in enumerate(self.keys) if key]
        todo = [_Todo(start) for _ in steps]
        while True:
            if not any(t.first(step) for step, t in zip(steps, todo)):
                return [ln for ln in self.lines if ln is not _REMOVED]
            touched, self.touched = self.touched & self.names, set()
            again = {k for n in touched for k in self._mentions(n) if n in self.keys[k]}
            for t in todo:
                t.add(again)

    # --- the lines and what names they read and write ---------------------------------------
    def _index(self, k, ln):
        for n in ln.uses:
            self.uses[n].add(k)
        for n in ln.defines:
            self.defines[n].add(k)
        self.touched |= ln.uses | ln.defines
        code = _code(ln) or ""
        same = _SAME.fullmatch(code)
        zeros = _ZEROS.fullmatch(code)
        self.copies[k] = _copy(ln, self.names)
        self.zeros[k] = zeros.group(1) if zeros and zeros.group(1) in self.cotangents else None
        self.keys[k] = (self.copies[k] or ()) + tuple(
            m.group(1) for m in (same, zeros) if m and m.group(1) in self.names)

    def _unindex(self, k):
        ln = self.lines[k]
        for n in ln.uses:
            self.uses[n].discard(k)
        for n in ln.defines:
            self.defines[n].discard(k)
        self.touched |= ln.uses | ln.defines

    def replace(self, k, ln):
        self._unindex(k)
        self.lines[k] = ln
        self._index(k, ln)

    def delete(self, k):
        self._unindex(k)
        self.lines[k] = _REMOVED
        self.copies[k] = self.zeros[k] = None
        self.keys[k] = ()

    def _mentions(self, name):
        return self.uses[name] | self.defines[name]

    def _renamable(self, name, lines):
        """Whether `name` may be renamed word by word in `lines`: a cotangent (ours) always; a
        forward value where no line holds a scope of its own (a def, lambda or comprehension,
        which may bind a name of its own spelled alike)."""
        return name in self.cotangents or not any(_has_scope(self.lines[k]) for k in lines)

    def _same_block(self, j, i):
        """Lines j < i at one indentation with nothing between them indented less."""
        return self.lines[j].indent == self.lines[i].indent and self.block_end[j] > i

    # --- the rewrites ---------------------------------------------------------------------------
    def _drop_repeated(self, i):
        """`b = a` ... `a = b` with neither reassigned between: the second does nothing."""
        ln = self.lines[i]
        same = re.fullmatch(r"(\w+) = \1", _code(ln) or "")
        if same and same.group(1) in self.names:         # `a = a`
            self.delete(i)
            return True
        if not self.copies[i]:
            return False
        a, b = self.copies[i]
        start = self.block_start[i]
        # (only a line defining a or b decides: `b = a` is one of them)
        for j in sorted((k for k in self.defines[a] | self.defines[b] if start < k < i),
                        reverse=True):
            if self.copies[j] == (b, a) and self.lines[j].indent == ln.indent:
                self.delete(i)
                return True
            if a in self.lines[j].defines or b in self.lines[j].defines:
                return False
        return False

    def _forward(self, i):
        if not self.copies[i]:
            return False
        a, b = self.copies[i]
        if self.defines[a] - {i}:
            return False
        reads = sorted(self.uses[a])
        if any(not i < k < self.block_end[i] for k in reads):
            return False
        stop = _statement_end(self.lines, reads[-1], self.lines[i].indent) if reads else i + 1
        if not self._unchanged_at_reads(i, stop, reads, b) or not self._renamable(a, reads):
            return False
        for k in reads:
            self.replace(k, _renamed(self.lines[k], a, b))
        self.delete(i)
        return True

    def _unchanged_at_reads(self, i, stop, reads, b):
        """Whether b holds, at each of `reads` (of a, copied from b at line i), the value it had
        at line i: no assignment of b on a path between them. Within ifs, an assignment in one
        branch is on no path to a read in the other; `b = f(a)` reads before it assigns. A loop
        between them (its next iteration) counts every assignment of b up to the statement's
        end."""
        lines, context = self.lines, self.context
        base = len(context[i])
        defs = sorted(d for d in self.defines[b] if i < d < stop)
        if any(loop for k in reads + defs for _, _, loop in context[k][base:]):
            return not any(not (k == reads[-1] and _simple(lines[k], lines[i].indent))
                           for k in defs)

        def exclusive(d, k):
            branches = {h: br for h, br, _ in context[d][base:]}
            return any(h in branches and branches[h] != br for h, br, _ in context[k][base:])
        return all(exclusive(d, k) for d in defs for k in reads
                   if k > d or k == d and not _simple(lines[d], None))

    def _backward(self, i):
        if not self.copies[i]:
            return False
        a, b = self.copies[i]
        if len(self.defines[b]) != 1 or self.uses[b] != {i}:
            return False
        j, = self.defines[b]
        if not j < i or self.lines[j].kind != "stmt" or not self._same_block(j, i) or any(
                j < k < i for k in self._mentions(a)) or not self._renamable(b, [j]):
            return False
        self.replace(j, _renamed(self.lines[j], b, a))
        self.delete(i)
        return True

    def _first_contribution(self, i):
        c, ln = self.copies[i], self.lines[i]
        if not (self.zeros[i] or c):
            return False
        a = c[0] if c else self.zeros[i]
        nxt = min((k for k in self._mentions(a) if k > i), default=None)
        if nxt is None or not self._same_block(i, nxt):
            return False
        later = self.lines[nxt]
        if c:           # `a = b` ... `a = a + e` (b not reassigned between): `a = b + e`
            assign = re.fullmatch(r"([\w, ]+) = (.+)", _code(later) or "")
            b = c[1]
            if not assign or "\n" in later.code or a not in later.defines or any(
                    i < k < nxt for k in self.defines[b]):
                return False
            rhs = _rename(assign.group(2), a, b)
            self.replace(nxt, type(ln)(f"{assign.group(1)} = {rhs}", later.indent, "stmt",
                                       later.origin))
            self.delete(i)
            return True
        add = _ADD.fullmatch(_code(later) or "")
        if not add or add.group(1) != a or add.group(2) != a or any(
                m.group() == a for m in _WORD.finditer(add.group(3))):
            return False
        self.replace(nxt, type(ln)(f"{a} = {add.group(3)}", later.indent, "stmt", later.origin))
        self.delete(i)
        return True

    def _join(self, i):
        """`a = b` in a branch of an if (no loop around it) where a's other assignments are in
        the if's branches: a and b become one name, b, when b is assigned only before the if,
        read nowhere after it, and in each branch read only up to a's first assignment
        there (a one-line statement, which reads before it assigns; the copy itself in its
        branch)."""
        c = self.copies[i]
        ctx = self.context[i]
        if not c or not ctx or any(loop for _, _, loop in ctx):
            return False
        a, b = c
        h = ctx[-1][0]
        level = self.lines[h].indent
        if self.lines[i].indent != level + 1:
            return False
        end = _statement_end(self.lines, h, level)
        outer = ctx[:-1]

        def branch(k):          # which branch of the if line k is directly in (else None)
            c = self.context[k]
            if len(c) == len(ctx) and c[:-1] == outer and c[-1][0] == h and \
                    self.lines[k].indent == level + 1:
                return c[-1][1]
            return None
        if any(branch(k) is None for k in self.defines[a]) or \
                any(k <= h for k in self.uses[a]) or \
                any(k >= h for k in self.defines[b]) or any(k >= end for k in self.uses[b]):
            return False
        for br in (0, 1):
            defs = sorted(k for k in self.defines[a] if branch(k) == br)
            if not defs:
                continue
            if br == ctx[-1][1] and defs[0] != i or not _simple(self.lines[defs[0]], level + 1):
                return False
            first = defs[1] if defs[0] == i and len(defs) > 1 else None if defs[0] == i \
                else defs[0]
            if first is not None and any(first < k < end and branch_of(self.context[k], h) == br
                                         for k in self.uses[b]):
                return False        # b read after a's assignment overwrote it
        if a not in self.cotangents:    # (a value keeps the user's name: `result = -x_1`)
            return False
        for k in sorted(self._mentions(a)):
            self.replace(k, _renamed(self.lines[k], a, b))
        self.delete(i)
        return True


    def _into_dead_source(self, i):
        """`a = b` at the function's top level (a loop's carry copied from a parameter, `x_1 =
        x`) where b is dead after it: a is mentioned nowhere before it, and after it b is read
        only for its dtype or shape, by grad's seed `grad_seed_like(b)` or as the shape a
        reduction's cotangent takes, `unreduce(t, b)`, `mean_grad(t, b)` (`alike(a, b)`: every
        value a holds has b's shape, and computed from b by elementwise ops with real Python
        numbers, b's dtype where b is the inexact parameter grad's seed reads), and assigned
        nowhere; no def or lambda (which reads a name when called,
        not where written) mentions either. a then takes b's name: the values the lines after
        it read are the same, and the user's name is kept where the loop rebinds it."""
        c = self.copies[i]
        if not c or self.context[i] or c[0] in self.cotangents:
            return False
        a, b = c
        mentions_a, mentions_b = self._mentions(a), self._mentions(b)
        if any(k < i for k in mentions_a) or any(k > i for k in self.defines[b]):
            return False
        later_b = [k for k in mentions_b if k > i]
        if later_b and (self.alike is None or not self.alike(a, b)):
            return False
        if any(not _reads_dtype_or_shape_only(self.lines[k], b) for k in later_b):
            return False
        if any(_CLOSURES.search(self.lines[k].code) for k in mentions_a | mentions_b) or \
                any(_SCOPES.search(self.lines[k].code) for k in mentions_b if k < i) or \
                not self._renamable(a, [k for k in mentions_a if k != i]):
            return False
        for k in sorted(mentions_a - {i}):
            self.replace(k, _renamed(self.lines[k], a, b))
        self.delete(i)
        stack, free = f"{a}_stack", f"{b}_stack"     # (its loop's stack: `x_stack.append(x)`)
        if self._mentions(stack) and not self._mentions(free) and free not in self.names:
            for k in sorted(self._mentions(stack)):
                self.replace(k, _renamed(self.lines[k], stack, free))
        return True


def _has_scope(ln):
    """Whether a line holds a scope of its own (a def, lambda or comprehension): a for loop's
    header binds its target in the function's scope (`for x in reversed(x_stack):`)."""
    code = ln.code[4:] if ln.kind == "block" and ln.code.startswith("for ") else ln.code
    return bool(_SCOPES.search(code))


# b read for its dtype or shape alone: the seed's one argument, a reduction cotangent's shape
SHAPE_READERS = {"grad_seed_like": 0, "unreduce": 1, "mean_grad": 1}


def _reads_dtype_or_shape_only(ln, b):
    """Whether every read of the name b in the line is the dtype or shape argument of
    SHAPE_READERS (grad_seed_like(b) its only argument)."""
    if ln.kind != "stmt":
        return False
    tree = parsed(ln.code)
    allowed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in SHAPE_READERS:
            k = SHAPE_READERS[node.func.id]
            if len(node.args) > k and isinstance(node.args[k], ast.Name) and \
                    node.args[k].id == b and (k or len(node.args) == 1 and not node.keywords):
                allowed.add(id(node.args[k]))
    return all(id(n) in allowed for n in ast.walk(tree) if isinstance(n, ast.Name) and
               n.id == b)


def branch_of(context, h):
    """The branch of the if at line h that a line with `context` lies in (else None)."""
    return next((br for k, br, _ in context if k == h), None)


def _code(ln):
    return ln.code.strip() if ln.kind == "stmt" else None


def _copy(ln, names):
    m = _COPY.fullmatch(_code(ln) or "")
    if m and m.group(1) in names and m.group(2) in names and m.group(1) != m.group(2):
        return m.group(1), m.group(2)
    return None


def _structural(ln):
    return ln.kind in ("stmt", "block")


def _block_bounds(lines):
    """For each line, the positions of the nearest structural lines indented less before it
    and after it (-1 and len(lines) where none): its block lies strictly between them."""
    start, end = [-1] * len(lines), [len(lines)] * len(lines)
    for order, out in ((range(len(lines)), start), (range(len(lines) - 1, -1, -1), end)):
        stack = []
        for k in order:
            if not _structural(lines[k]):
                continue
            while stack and lines[stack[-1]].indent >= lines[k].indent:
                stack.pop()
            if stack:
                out[k] = stack[-1]
            stack.append(k)
    return start, end


def _statement_end(lines, k, level):
    """Index just past the statement at indentation `level` that holds line k (an if with its
    else, a loop)."""
    end = k + 1
    while end < len(lines) and (not _structural(lines[end]) or lines[end].indent > level
                                or lines[end].code == "else:" and lines[end].indent == level):
        end += 1
    return end


def _renamed(ln, old, new):
    return type(ln)(_rename(ln.code, old, new), ln.indent, ln.kind, ln.origin)


def _rename(code, old, new):
    """`code` with the name `old` (a whole word, not an attribute) read as `new`. (One
    pattern for every name: a pattern per name overflowed re's cache, and compiling them took
    most of this module's time on a long function.)"""
    if old not in code:
        return code
    def word(w):
        return new if w.group() == old else w.group()

    def one(m):
        if m.group("kw") and _depth(code[:m.start()]) > 0:
            return m.group()            # f(x, train=...): a keyword's name
        if m.group("f") or m.group("kw"):
            return _WORD.sub(word, m.group())
        return word(m)
    return _NAME_OR_NOT.sub(one, code)


def _depth(prefix):
    """How many brackets are open at the end of `prefix` (string literals skipped)."""
    prefix = _STRINGS.sub("", prefix)
    return sum(prefix.count(c) for c in "([{") - sum(prefix.count(c) for c in ")]}")


def _simple(ln, indent):
    """A one-line statement (it reads everything before it assigns), at `indent` if given."""
    return ln.kind == "stmt" and "\n" not in ln.code and indent in (None, ln.indent)


def _contexts(lines):
    """For each line, the blocks around it, outermost first: (if line, branch, False) for a
    branch of an if, (header line, 0, True) for a loop (or any other block)."""
    out, stack, ifs = [], [], {}
    for k, ln in enumerate(lines):
        if not _structural(ln):
            out.append(tuple(e for _, e in stack))
            continue
        while stack and stack[-1][0] >= ln.indent:
            stack.pop()
        out.append(tuple(e for _, e in stack))
        if ln.kind == "block":
            if ln.code.startswith("if "):
                ifs[ln.indent] = k
                stack.append((ln.indent, (k, 0, False)))
            elif ln.code == "else:" and ln.indent in ifs:
                stack.append((ln.indent, (ifs[ln.indent], 1, False)))
            else:
                stack.append((ln.indent, (k, 0, True)))
    return out

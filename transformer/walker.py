"""The walk over the canonical form that every source transform shares, and the lines it writes.

forward mode (ad/forward.py), batching (batching/vectorize.py) and reverse mode (ad/reverse.py)
each subclass Walker with their own rules; the walk itself (statement dispatch, a comment slot
above each user line the transform changes, if/else and loop headers) and the clean-up of what
they wrote (dead assignments, empty blocks) are written once here.
"""
import ast
import functools
import re

from secant.codegen.naming import push_children
from secant.transformer import ir
from secant.transformer.hygiene import walk as _walk


class Line:
    """One generated statement (or comment / block opener) and the names it reads and writes."""

    def __init__(self, code, indent=0, kind="stmt", origin=None):
        self.code, self.indent, self.kind, self.origin = code, indent, kind, origin
        uses, defines = _names(code, kind)
        self.uses, self.defines = set(uses), set(defines)


def parsed(code, kind="stmt"):
    """The module tree of one generated line (a block's header parsed with an empty body),
    parsed once: the passes over a derivative's lines (ad/cse.py, ad/algebra.py, ad/fold.py)
    read each line many times (issue 19: transformation time). The tree is shared: a caller
    only reads it (one that changes a tree copies it: hygiene.copy_tree). (One cache key per
    line whether the kind is given or not: `parsed(c)` and `parsed(c, "stmt")` parsed it
    twice, a fold's every new line among them.)"""
    return _parsed_once(code, kind == "block")


@functools.lru_cache(maxsize=65536)
def _parsed_once(code, block):
    return ast.parse(code + "\n    pass" if block else code)


@functools.lru_cache(maxsize=65536)
def _names(code, kind):
    """(names read, names bound) by one generated line of `kind` (frozensets: transforms write
    the same lines again and again, parsed once)."""
    uses, defines = set(), set()
    if kind == "block" and code != "else:":      # if/for headers read (and bind) names
        _add_names(parsed(code, "block"), uses, defines)
    if kind == "stmt":
        tree = parsed(code)
        if isinstance(tree.body[0], ast.FunctionDef):   # a nested def: binds its name only
            defines.add(tree.body[0].name)
            uses = free_names(tree.body[0])     # (its own locals are not read)
        else:
            _add_names(tree, uses, defines)
    return frozenset(uses), frozenset(defines)


def _add_names(tree, uses, defines):
    """Each Name of `tree` added to `defines` (bound: Store) or to `uses` (read, deleted): a
    walk of its own, no generator (every new generated line is walked: issue 19)."""
    Name, Store = ast.Name, ast.Store
    stack = [tree]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        if type(node) is Name:
            (defines if isinstance(node.ctx, Store) else uses).add(node.id)
            continue
        push_children(node, push)


def free_names(fdef):
    """The names a nested def reads from the enclosing scope (lambdas' and nested defs' too)."""
    def scope_nodes(node):
        stack = list(ast.iter_child_nodes(node))
        while stack:
            n = stack.pop()
            yield n
            if not isinstance(n, (ast.FunctionDef, ast.Lambda)):
                stack.extend(ast.iter_child_nodes(n))
    own, loads, inner = set(), set(), set()
    for a in _walk(fdef.args):
        if isinstance(a, ast.arg):
            own.add(a.arg)
    defaults = fdef.args.defaults + [d for d in fdef.args.kw_defaults if d is not None]
    body = fdef.body if isinstance(fdef.body, list) else [fdef.body]
    for stmt in body:
        for n in [stmt, *scope_nodes(stmt)]:
            if isinstance(n, ast.Name):
                (own if isinstance(n.ctx, (ast.Store, ast.Del)) else loads).add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.Lambda)):
                if isinstance(n, ast.FunctionDef):
                    own.add(n.name)
                inner |= free_names(n)
    outer = {n.id for d in defaults for n in _walk(d) if isinstance(n, ast.Name)}
    cells = {name for stmt in body for n in [stmt, *scope_nodes(stmt)]     # (`nonlocal n`:
             if isinstance(n, ast.Nonlocal) for name in n.names}          # the enclosing n)
    return ((loads | inner) - own) | outer | cells


class Walker:
    """Writes a transform of a canonical function line by line. Subclasses set `label` (the
    comment above a user line the transform changed: `# <label>: <line>`) and handle each
    statement kind: op, if_, loop, stack (a derivative's loop stack), plain."""
    label = ""

    def __init__(self, fn, names):
        self.fn = fn
        self.names = names
        self.lines = []
        self.indent = 1
        self.origin = None                  # the user line being transformed
        self.slot = None                    # where the current user line's comment goes
        self.last_comment = None

    # --- emission ---------------------------------------------------------------------------
    def emit(self, code):
        self.lines.append(Line(code, self.indent, origin=self.origin))

    def start(self, origin):
        """A new user line: a slot for its comment, filled once the transform changes it."""
        if origin is not None and origin.text != self.last_comment:
            self.slot = Line("", self.indent, "slot")
            self.slot.text = origin.text
            self.lines.append(self.slot)
            self.last_comment = origin.text

    def mark(self):
        """The current user line was changed: its comment goes above it."""
        if self.slot is not None and self.slot.kind == "slot":
            self.slot.kind, self.slot.code = "comment", f"# {self.label}: {self.slot.text}"

    def wrapped(self, code):
        """A long call's arguments on a continuation line (past 100 columns)."""
        head, sep, args = code.partition("(")
        if sep and len(code) + 4 * self.indent > 100 and " = " in head:
            return f"{head}(\n    {args}"
        return code

    # --- statements ---------------------------------------------------------------------------
    def block(self, stmts):
        for s in stmts:
            self.origin = s.origin
            self.start(s.origin)
            if isinstance(s, ir.Plain) and s.stack:
                self.stack(s)
            elif isinstance(s, ir.Plain):
                self.plain(s)
            elif isinstance(s, ir.Op):
                self.op(s)
            elif isinstance(s, ir.If):
                self.if_(s)
            elif isinstance(s, (ir.For, ir.While)):
                self.loop(s)

    def plain(self, s):
        self.emit(s.code)

    def branches(self, s):
        """Writes `if test:` and `else:` around each branch, yielding (k, body) with the
        indentation set for the caller to write branch k."""
        self.lines.append(Line(f"if {s.test}:", self.indent, "block", s.origin))
        for k, body in enumerate((s.body, s.orelse)):
            if k == 1:
                self.lines.append(Line("else:", self.indent, "block"))
            self.indent += 1
            self.last_comment = None
            yield k, body
            self.indent -= 1
        self.last_comment = None

    def loop_header(self, s):
        """`for target in iterable:` or `while test:`, indenting what follows."""
        if isinstance(s, ir.For):
            self.lines.append(Line(f"for {s.target} in {s.iterable}:", self.indent, "block"))
        else:
            self.lines.append(Line(f"while {s.test}:", self.indent, "block", s.origin))
        self.indent += 1
        self.last_comment = None


def src(o):
    if isinstance(o, ir.Var):
        return o.name
    if isinstance(o, ir.Seq) and o.kind == "dict":
        return "{" + ", ".join(f"{k}: {src(i)}" for k, i in zip(o.keys, o.items)) + "}"
    if isinstance(o, ir.Seq):
        inner = ", ".join(src(i) for i in o.items)
        if o.kind == "tuple":
            return f"({inner},)" if len(o.items) == 1 else f"({inner})"
        return f"[{inner}]"
    return o.as_operand()


_SHAPE_QUERY = re.compile(r"^[\w.]*(\.shape\[[^\]]*\]|\.ndim|\.size|len\([\w.]*\))$")


def is_literal_number(o):
    """A Python number: a literal, or a shape query such as x.shape[0] (never broadcasts)."""
    if not isinstance(o, ir.Expr):
        return False
    if o.src == "None":
        return True
    try:
        float(o.src)
        return True
    except ValueError:
        return bool(_SHAPE_QUERY.match(o.src.replace(" ", "")))


def defined_in(stmts):
    out = set()
    for s in stmts:
        if isinstance(s, ir.Op):
            out.update(s.targets)
        elif isinstance(s, ir.Plain):
            out.update(s.defines)
        elif isinstance(s, (ir.If, ir.For, ir.While)):
            for block in ((s.body, s.orelse) if isinstance(s, ir.If) else (s.body,)):
                out |= defined_in(block)
    return out


def fill_slot(slot, codes):
    """A placeholder line becomes the statements decided later (or stays empty)."""
    if codes:
        slot.kind = "stmt"
        slot.code = "\n".join(codes)
        fresh = Line(slot.code, slot.indent)
        slot.uses, slot.defines = fresh.uses, fresh.defines


def dead_code_eliminated(lines):
    """Keep what the result needs (liveness, backwards from the end): statements with effects
    (calls, asserts, a stack's append, the return), assignments of names read later (in a loop,
    by a later iteration too), and the loops and ifs holding a kept statement, whose headers
    then read their names. A loop whose values nothing after it reads goes whole, the values it
    carries from one iteration to the next included. Comments and blank lines stay; what
    follows a raise of the body's own level goes (it never runs)."""
    lines = _reachable([ln for ln in lines if ln.kind != "slot"])
    tree = _block_tree(lines, 0, len(lines), None)
    if tree is None:                # (a structure not read here: every line kept)
        keep = [True] * len(lines)
    else:
        keep = [False] * len(lines)
        _live_before(lines, tree, set(), keep)
    checks = {i: _power_check(ln) for i, ln in enumerate(lines) if not keep[i]
              and ln.kind == "stmt" and ("**" in ln.code or "pow(" in ln.code)}
    checks = {i: c for i, c in checks.items() if c is not None}
    if checks:      # (not where a kept line raises the base to a negative power anyway: the
        kept = "\n".join(ln.code for ln, k in zip(lines, keep) if k)   # derivative of x ** -1
        checks = {i: c for i, c in checks.items() if not re.search(     # reads x ** (-2))
            rf"\b{c.base} \*\* \(?-\d|integer_pow\({c.base}, -\d", kept)}
    if checks and tree is not None:     # (dropped: each a check of its operand's dtype)
        lines = [checks.get(i, ln) for i, ln in enumerate(lines)]
        keep = [False] * len(lines)
        _live_before(lines, tree, set(), keep)
    out = [ln for ln, k in zip(lines, keep) if k or ln.kind in ("comment", "blank")]
    cleaned = _without_bare_comments(out)
    filled = _fill_empty_blocks(cleaned)
    while filled != cleaned:    # an else left empty by dropping an empty if in it (a `pass`
        # added elsewhere: same length); a loop whose body was that if and its comment
        cleaned = _without_bare_comments(filled)
        filled = _fill_empty_blocks(cleaned)
    return filled


# `t = a ** (-2)`, `t = lax.integer_pow(a, -2)`, `t = pow(a, -2)`: a power whose exponent is
# a negative integer literal (snp.power(a, -2) reads as the first)
_NEGATIVE_POWER = re.compile(r"\w+ = (?:(\w+) \*\* \((-\d+)\)|(?:lax\.integer_pow|pow)\((\w+), "
                             r"(-\d+)\))$")


def _power_check(ln):
    """The line checking what `ln`, a power of a negative integer literal nothing reads, would
    raise: JAX's TypeError for an integer (or bool) base, which jax.jit and every transform
    raise as they trace the statement (issue 15, fuzz seed 10325); None for another line. A
    check of the base's dtype, not the power: dead code stays removed (issue 20)."""
    m = _NEGATIVE_POWER.match(ln.code)
    if m is None:
        return None
    base, exponent = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    check = Line(f"check_integer_power({base}, {exponent})", ln.indent, "stmt", ln.origin)
    check.base = base
    return check


def _reachable(lines):
    """`lines` up to a raise of the body's own level (a statement Python refuses whatever the
    values: transformer/python_errors.py), whose derivative would never run."""
    top = min((ln.indent for ln in lines if ln.kind == "stmt"), default=0)
    for i, ln in enumerate(lines):
        if ln.kind == "stmt" and ln.indent == top and ln.code.startswith("raise "):
            return lines[:i + 1]
    return lines


def _next_nonblank(lines, i):
    """The first line after lines[i] that is not blank, or None."""
    for k in range(i + 1, len(lines)):
        if lines[k].kind != "blank":
            return lines[k]
    return None


def _without_bare_comments(lines):
    """Drop comments left with nothing under them."""
    cleaned = []
    for i, ln in enumerate(lines):
        if ln.kind == "comment":
            nxt = _next_nonblank(lines, i)
            if nxt is None or nxt.kind == "comment" or nxt.indent < ln.indent:
                continue
        cleaned.append(ln)
    return cleaned


_MUTATES = re.compile(r"\.(pop|append|extend|insert|remove|clear|update|popitem)\(")
_AUGMENTED = re.compile(r"\s*\w+\s*((\*\*|//|>>|<<|[-+*/@%&|^])=|\[)")   # (buf[i] = v too)


@functools.lru_cache(maxsize=65536)
def _kills(code):
    """Whether a kept line of `code` ends what its names held before (not an augmented or
    item assignment, nor a block of several lines): each line's text read once, though every
    dead-code pass asks of every line (issue 19)."""
    return not (_AUGMENTED.match(code) or "\n" in code)


@functools.lru_cache(maxsize=65536)
def _effect(code):
    """(whether a line of `code` whose names nothing reads later is kept all the same: a
    return, a decorated def, a call that changes a list or dict in place; _kills(code))."""
    return bool(code.startswith(("return", "@")) or _MUTATES.search(code)), _kills(code)


def _block_tree(lines, i, stop, ends):
    """lines[i:stop] as a list of nodes: a statement's index; (header index, body nodes,
    else index or None, else nodes) for a block. None for a structure it does not read (an
    `else:` of a loop). `ends` (None at the top: _block_ends): where each block line's block
    ends."""
    if ends is None:
        ends = _block_ends(lines)
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
        end = min(ends[i], stop)
        body = _block_tree(lines, i + 1, end, ends)
        els, orelse = None, []
        if end < stop and lines[end].kind == "block" and lines[end].code == "else:" and \
                lines[end].indent == ln.indent:
            if not ln.code.startswith("if "):
                return None
            els, end2 = end, min(ends[end], stop)
            orelse = _block_tree(lines, end + 1, end2, ends)
            end = end2
        if body is None or orelse is None:
            return None
        nodes.append((i, body, els, orelse))
        i = end
    return nodes


def _block_ends(lines):
    """{i: the index of the first line after lines[i] that is neither a comment nor blank and
    is indented no deeper (len(lines) if none)} for each block line i: where its block ends.
    One backward pass with a stack (each block's own scan to its end walked every line of a
    block nested d deep d times, issue 19)."""
    ends, stack = {}, []        # stack: statement and block lines after i, indents ascending
    for i in range(len(lines) - 1, -1, -1):
        ln = lines[i]
        if ln.kind in ("comment", "blank"):
            continue
        if ln.kind == "block":
            while stack and lines[stack[-1]].indent > ln.indent:
                stack.pop()
            ends[i] = stack[-1] if stack else len(lines)
        while stack and lines[stack[-1]].indent >= ln.indent:
            stack.pop()
        stack.append(i)
    return ends


def unread_targets_unnamed(lines):
    """`a, b = f(x)` is `a, _ = f(x)` where nothing after it reads b (liveness as
    dead_code_eliminated's, a loop's later iterations included): a tuple assignment of plain
    names, one row, whose unread names are no value of the program. `_` only where nothing
    after the line reads a `_` of its own (a user's)."""
    # the tuple assignments only: each statement's live set copied would take time growing
    # as the function's length times the values it keeps for its reverse pass (issue 19)
    after = {i: set() for i, ln in enumerate(lines) if ln.kind == "stmt" and
             len(ln.defines) > 0 and "\n" not in ln.code and _tuple_of_names(ln.code)}
    if not after:
        return lines
    tree = _block_tree(lines, 0, len(lines), None)
    if tree is None:
        return lines
    _live_before(lines, tree, set(), [False] * len(lines), after)
    out = list(lines)
    for i, live in after.items():
        ln = lines[i]
        if "_" in live or not ln.defines - live:
            continue
        node = parsed(ln.code).body[0]
        names = [e.id for e in node.targets[0].elts]
        if not any(n in live for n in names):
            continue
        target = ", ".join(n if n in live else "_" for n in names)
        if len(names) == 1:
            target += ","
        source = ast.get_source_segment(ln.code, node.value)
        if source is None:
            continue
        out[i] = Line(f"{target} = {source}", ln.indent, ln.kind, ln.origin)
    return out


def _live_before(lines, nodes, live, keep, after=None, _loops=None):
    """The names live before `nodes` given those `live` after them; marks in `keep` the lines
    kept; `after` (where given: {statement's index: set()}) collects, for each of its
    statements, the names live after it (over a loop's fixpoint iterations: their union).
    A loop's fixpoint starts from the one it reached last time (in `_loops`, by header index)
    where the names live after it grew since: liveness is monotone, so that is the same least
    fixpoint, and a loop nested d deep is walked O(d) times, not 2**d; not at all again where
    the names live after it are still within that fixpoint (issue 19)."""
    loops = {} if _loops is None else _loops
    live = set(live)
    for node in reversed(nodes):
        if isinstance(node, int):
            ln = lines[node]
            if after is not None and node in after:
                after[node].update(live)
            if not ln.defines or not live.isdisjoint(ln.defines):
                kept, kills = True, _kills(ln.code)
            else:       # (a decorated def: @f.defjvp registers a rule)
                kept, kills = _effect(ln.code)
            if kept:
                keep[node] = True
                if kills:
                    live -= ln.defines      # (in place: `live` is this call's own set)
                live |= ln.uses
            continue
        if after is None:
            _block_live_before(lines, node, live, keep, loops)
            continue
        head, body, els, orelse = node
        header = lines[head]
        if header.code.startswith("if "):
            inner = _if_live_before(lines, node, live, keep, after, loops)
            if inner is not None:
                live = inner | header.uses
            continue
        entry = live | header.uses          # a loop: to a fixpoint over its iterations
        entered, reached = loops.get(head, (None, None))
        new = entry - reached if entered is not None and entered <= entry else None
        if new is not None and not new & _defined(node, lines, loops):
            # names the body never assigns pass through it: live throughout, they keep no
            # line more (a line is kept for the names it assigns) nor make others live, so
            # the fixpoint from entry is the one from entry & reached (which lies between
            # entered and reached, a fixpoint: reached) with them; its last walk marked what
            # reached keeps, so the body need not be walked again (each enclosing pass walked
            # it again: a loop nested d deep d times, issue 19)
            top = reached | new
            if after is not None and new:
                for k in _statements(node, loops):
                    if k in after:
                        after[k].update(new)
        else:
            # (from the fixpoint for fewer names live, below ours; `top` holds entry throughout)
            top = entry | reached if entered is not None and entered <= entry else set(entry)
            while True:
                inner = _live_before(lines, body, top, keep, after, loops)
                if inner <= top:
                    break
                top |= inner
            loops[head] = (entry, top)
        if any(keep[k] for k in _statements(node, loops)):
            keep[head] = True
            live = set(top)         # (this call's own: changed in place above)
    return live


def _block_live_before(lines, node, live, keep, loops):
    """_live_before of an if or loop node where no `after` is collected, `live` (the caller's
    own set) changed in place. Only the names its statements assign are walked through it:
    those it never assigns pass through (live throughout, they keep no line, which is kept for
    the names it assigns, nor make others live), so a block costs its own size, not that of
    every name live after it (copied once per block: quadratic in a function of many loops, a
    derivative keeping hundreds of values for its reverse pass, issue 19)."""
    head, body, els, orelse = node
    header, defined = lines[head], _defined(node, lines, loops)
    mine = live & defined
    if header.code.startswith("if "):
        inner = _if_live_before(lines, node, mine, keep, None, loops)
        if inner is not None:
            live -= defined - inner
            live |= inner
            live |= header.uses
        return
    entry = mine | (header.uses & defined)      # a loop: to a fixpoint over its iterations
    entered, reached, passing = loops.get(("walked", head), (None, None, None))
    if entered is None or not entered <= entry <= reached:
        # (from the fixpoint for fewer names live, below ours: the same least fixpoint;
        # unchanged where ours lies within it: a loop nested d deep walked twice, not d times)
        top = entry | reached if entered is not None and entered <= entry else set(entry)
        while True:
            inner = _live_before(lines, body, top, keep, None, loops)
            grown = inner & defined
            if grown <= top:
                break
            top |= grown
        # (the names the body reads and never assigns: the last walk's, the most)
        reached, passing = top, inner - defined
        loops[("walked", head)] = (entry, reached, passing)
    if any(keep[k] for k in _statements(node, loops)):
        keep[head] = True
        live |= header.uses
        live |= reached
        live |= passing


def _if_live_before(lines, node, live, keep, after, loops):
    """The names live before an if node's branches (`live` after it), or None where none of
    its statements is kept (then the if and its else line are dropped too)."""
    head, body, els, orelse = node
    inner = _live_before(lines, body, live, keep, after, loops) | _live_before(
        lines, orelse, live, keep, after, loops)
    if not any(keep[k] for k in _statements(node, loops)):
        return None
    keep[head] = True
    if els is not None:
        keep[els] = True
    return inner


def _defined(block, lines, memo):
    """The names the statements under block node assign (memoised as _statements)."""
    key = ("defined", id(block))
    if key not in memo:
        memo[key] = frozenset().union(*(lines[k].defines for k in _statements(block, memo)))
    return memo[key]


def _tuple_of_names(code):
    """Whether one-row statement `code` assigns a tuple of plain names: `a, b = E`."""
    node = parsed(code).body[0]
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
        node.targets[0], ast.Tuple) and all(isinstance(e, ast.Name)
                                            for e in node.targets[0].elts)


def _statements(block, memo):
    """The statement indices under block node (header, body, else, orelse), memoised in
    `memo` by the node's id (the tree outlives the walk)."""
    key = ("statements", id(block))
    if key not in memo:
        out = []
        for node in block[1] + block[3]:
            out += [node] if isinstance(node, int) else _statements(node, memo)
        memo[key] = out
    return memo[key]


def _fill_empty_blocks(lines):
    """Drop an `else:` with nothing under it and an `if` left empty; else fill with `pass`."""
    def body_empty(i):
        nxt = _next_nonblank(lines, i)
        return nxt is None or nxt.indent <= lines[i].indent

    out = []
    skip_if_else = set()
    for i, ln in enumerate(lines):
        if i in skip_if_else:
            continue
        if ln.kind == "block" and body_empty(i):
            if ln.code == "else:":
                continue
            j = next((k for k in range(i + 1, len(lines)) if lines[k].kind != "blank"), None)
            has_else = (j is not None and lines[j].code == "else:"
                        and lines[j].indent == ln.indent)
            if not has_else:
                continue
            if body_empty(j):
                skip_if_else.add(j)
                continue
            out.append(ln)
            out.append(Line("pass", ln.indent + 1))
            continue
        out.append(ln)
    return out

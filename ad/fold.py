"""Single-use temporaries folded into their one use (issue 20: as lean as hand-written).

A person writes `x_bar = x_bar + g * snp.cos(x * i) * i`, not `x_times_i = x * i`,
`t_bar = g * snp.cos(x_times_i)`, `x_bar = x_bar + t_bar * i`. On a derivative's generated
lines (ad/reverse.py's Line), an assignment `t = E` is folded into the one later line that
reads t when

- t is a cotangent (E: a rule's expression, which has no effect; not a stack's `.pop()`, a
  statement of its own that the next order reads), or a temporary of the canonical form (a
  value the user gave no name: normalize.py's `temporaries`) whose E only applies operators,
  indexing and secant.numpy / lax functions, never a user's function or method;
- the value that line gives t is read by one later line only, once there: t is assigned by
  that line only and read by one other line only, or the next line that mentions t reads it
  and assigns it again (`x_bar = a`, then `x_bar = x_bar + b`: the first value reaches that
  line only, and the two become `x_bar = a + b`, as a person accumulates). The merge keeps
  no value alive longer: a name's value lives until the name is bound again or the function
  returns (CPython frees no local at its last read), E's inputs are not bound again between
  the two (below), and t's first value no longer lives between them;
- both are one-line statements of one block (nothing indented less between them), or the use
  is a `for` loop's header (its iterable evaluated once), so E runs as often as it did (never
  moved into a loop or a branch); a cotangent's use also under the
  same `# Grad of:` comment, so each user line's rule stays under it, but for a field's
  cotangent that its structure's cotangent takes as an entry (`grad_of_fields(params,
  {'w3': w3_bar, ...})`: the key names it there, as a person returns a model's gradients);
- no name E reads is assigned, or changed in place, between them (E computes the same value
  where it is used), and the use is evaluated exactly once (not in a lambda, comprehension,
  `and`/`or` or `x if c else y`);
- the folded line stays short: at most `MAX_OPERATIONS` calls and operators and
  `MAX_LENGTH` characters (in a last pass, a call's arguments may take a second row,
  `wrapped`, as a person continues a call a little too long: each row then within it); a
  line passing a structure's cotangent as a dict display (`grad_of_fields(params, {'w1':
  ..., 'b1': ...})`) counts each entry against those limits, and is laid out one entry a
  line when longer (`laid_out`), as a person writes the dict of a model's gradients.

The folded text is checked to parse to the substituted tree (parentheses added only where
precedence needs them). The parameters' cotangents (`kept`) fold only into a line that assigns
them again: what the derivative returns keeps their names.

The first pass folds single reads only; the next ones merge accumulations too, and run again
while they fold (a copy `t_bar = x_bar` whose input x_bar was assigned again before its use
folds once the two assignments are one), `MAX_PASSES` passes in all at most.
"""
import ast
import functools
import re

from secant.transformer.hygiene import walk as _walk
from secant.transformer.walker import parsed

MAX_OPERATIONS = 5
# a folded line written on one row may take more (bench/handwritten_grads.py's densest line,
# attention's return, has 8 in 84 columns): its width bounds it; a second row does not
MAX_ONE_ROW_OPERATIONS = 8
MAX_ARITHMETIC = 12
MAX_LENGTH = 90
MAX_PASSES = 3
MAX_ROWS = 3        # rows of a chain of operators continued (_operator_wrapped)

_ONCE_BREAKERS = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                  ast.BoolOp, ast.IfExp)
_OPERATIONS = (ast.Call, ast.BinOp, ast.UnaryOp, ast.Compare)


def folded(lines, names, temporaries=frozenset(), kept=frozenset(), simplify=None,
           unfed=frozenset(), wrap=False, one_row=False, targets=None):
    """`lines` with each single-use assignment of a cotangent in `names` (or in `kept`, into a
    line that assigns it again), or of a forward temporary in `temporaries` by a pure
    expression, folded into its use, first to last (a fold's result may itself be folded
    further down, within the limits), again while a pass folds. `simplify` (a Line -> Line,
    ad/algebra.py's) rewrites each folded line before its limits are checked; nothing folds
    into the line assigning a name of `unfed` (what simplify reads it as stays bound). wrap:
    the last pass, only the folds whose line `wrapped` writes on two rows within MAX_LENGTH
    (the folds within one row made first, so a fold on two rows never takes their place).
    one_row: a folded line on one row may take up to MAX_ONE_ROW_OPERATIONS (a pass after the
    sums are written: earlier, a wide fold could take the place of a simplification).
    targets: line -> _target's answer, a dict the caller may share among calls folding the
    same `names` and `temporaries` (each line read once, not once per call: issue 19)."""
    if targets is None:
        targets = {}                # line -> _target's answer (each line parsed once)
    blocked = None                  # after the first pass: the single reads an input's change
    counts = {}                     # (the mentions and comment groups each pass keeps: formed
    for n in range(MAX_PASSES):     # once, not per pass; issue 19) kept from folding, the only
        before = len(lines)         # ones tried again (single reads first: a value computed
        retry, blocked = blocked, set()     # for one use is written in it before an
        lines = _folded_once(lines, names, temporaries, kept, targets, retry, blocked,
                             simplify, unfed, wrap, one_row, counts)  # accumulation is merged)
        if n and len(lines) == before:
            break
    return lines


def _folded_once(lines, names, temporaries, kept, targets, retry, blocked, simplify=None,
                 unfed=frozenset(), wrap=False, one_row=False, counts=None):
    """One pass, first line to last. retry None: the first pass, single reads only; else
    accumulations merged too, and only the single reads in `retry` tried again. The single
    reads an input's change kept from folding are added to `blocked`. counts: {} at the first
    of passes over the same lines, where this pass leaves its mentions, groups and fielded
    names (kept up to date as it folds) for the next."""
    lines = list(lines)
    foldable = names | kept
    retried = foldable | temporaries    # (formed once: not per name read)
    if counts:
        groups, mentions, fielded = counts["groups"], counts["mentions"], counts["fielded"]
    else:
        groups = _groups(lines)
        mentions = mentioned(lines)
        fielded = set()             # the names a grad_of_fields line reads (maybe an entry)
        for ln in lines:
            if _FIELDS in ln.code:
                fielded.update(ln.uses)
        if counts is not None:
            counts.update(groups=groups, mentions=mentions, fielded=fielded)
    defining = None                 # name -> {id: line} assigning it (at the first fold: a
    #                                 pass folding nothing needs none, issue 19)
    i = 0
    while i < len(lines):
        got = targets.get(lines[i])     # (a line that assigns nothing foldable: no call)
        if got is not None and got[0] is None:
            i += 1
            continue
        k = _use_to_fold(lines, i, foldable, temporaries, kept, groups, mentions, targets,
                         retry, blocked, fielded)
        if k is not None and not lines[k].defines & unfed:
            new = _substituted(lines[i], lines[k], simplify, wrap=wrap, one_row=one_row)
            if new is not None:
                for old, sign in ((lines[i], -1), (lines[k], -1), (new, 1)):
                    for n in old.uses | old.defines:
                        mentions[n] = mentions.get(n, 0) + sign
                # a value read once now (terms the simplification made one): tried again
                once = {n for n in (lines[i].uses | lines[k].uses) - new.defines
                        if mentions.get(n) == 2 and n in retried}
                if defining is None:
                    defining = {}
                    for ln in lines:
                        for n in ln.defines:
                            defining.setdefault(n, {})[id(ln)] = ln
                blocked.update(ln for n in once for ln in defining.get(n, {}).values())
                for old in (lines[i], lines[k]):
                    for n in old.defines:
                        defining[n].pop(id(old), None)
                for n in new.defines:
                    defining.setdefault(n, {})[id(new)] = new
                if _FIELDS in new.code:
                    fielded.update(new.uses)
                lines[k] = new
                del lines[i]
                del groups[i]
                continue
        i += 1
    return lines


def mentioned(lines):
    """name -> how many of `lines` mention it (read or assign it)."""
    out = {}
    count = out.get
    for ln in lines:
        uses = ln.uses
        for n in uses:
            out[n] = count(n, 0) + 1
        for n in ln.defines:
            if n not in uses:       # (no set formed per line: each pass counts all, issue 19)
                out[n] = count(n, 0) + 1
    return out


def _groups(lines):
    """For each line, the position of the comment it stands under (-1 before any), reset by a
    line indented less than that comment (the end of its block)."""
    out, current = [], None
    for k, ln in enumerate(lines):
        if ln.kind == "comment":
            current = (k, ln.indent)
        elif current is not None and ln.kind in ("stmt", "block") and ln.indent < current[1]:
            current = None
        out.append(-1 if current is None else current[0])
    return out


def _target(ln, names, temporaries):
    """(t, whether a cotangent: in `names`) for a line `t = E` that may fold, else
    (None, None)."""
    if ln.kind != "stmt" or "\n" in ln.code or len(ln.defines) != 1:
        return None, None
    t, = ln.defines
    if t in names:          # a rule's expression; not a stack's pop (a statement of its own)
        return (t, True) if _assigns(ln.code, True) else (None, None)
    if t in temporaries:
        return (t, False) if _assigns(ln.code, False) else (None, None)
    return None, None


@functools.lru_cache(maxsize=65536)
def _assigns(code, cotangent):
    """Whether a line of `code` is `t = E` that may fold (_target): E no stack's pop (nor
    other change in place: a cotangent's), or pure (a forward temporary's). Each line's text
    read once: every folded() call asks of every line again (issue 19)."""
    tree = parsed(code).body[0]
    if not (isinstance(tree, ast.Assign) and len(tree.targets) == 1
            and isinstance(tree.targets[0], ast.Name)):
        return False
    if cotangent:
        return not _MUTATED.search(code)
    return _pure(tree.value) or _range(tree.value)


def _range(expr):
    """Whether a forward expression is `range(...)` of pure arguments (the builtin: generated
    code's names are its own), what a loop over it reads once."""
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and \
        expr.func.id == "range" and not expr.keywords and all(_pure(a) for a in expr.args)


_PURE = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Subscript, ast.Slice,
         ast.Tuple, ast.Attribute, ast.keyword, ast.Call, ast.operator, ast.unaryop, ast.cmpop,
         ast.expr_context)


# secant.numpy / lax functions that call functions they are given (the user's, maybe printing)
_CALLERS = {"cond", "switch", "scan", "fori_loop", "while_loop", "map", "associative_scan",
            "custom_root", "custom_linear_solve", "reduce", "reduce_window", "apply_along_axis",
            "apply_over_axes", "piecewise", "vectorize", "frompyfunc"}


def _pure(expr):
    """Whether a forward expression has no effect: operators, indexing and calls of secant's
    NumPy and lax (`snp.sin(x)`), never a call of the user's functions or methods, nor of one
    that calls functions it is given (lax.cond's branches)."""
    return all(_pure_node(n) for n in _walk(expr))


def _pure_node(n):
    """Whether node n itself (its children aside) has no effect (see _pure)."""
    if not isinstance(n, _PURE):
        return False
    if isinstance(n, ast.Call):
        f = n.func
        while isinstance(f, ast.Attribute):
            f = f.value
        if not (isinstance(n.func, ast.Attribute) and isinstance(f, ast.Name)
                and f.id in ("snp", "lax") and n.func.attr not in _CALLERS):
            return False
    return True


_FIELDS = "grad_of_fields"
# (the name possessive, \w++: a shorter part of it, followed by a word character, never matches,
# and was tried at every length: nearly half the search's time, issue 19)
_MUTATED = re.compile(r"(\w++)(?:\.(?:pop|append|extend|insert|remove|clear|update|popitem|"
                      r"setdefault|sort|reverse)\(|\[[^\]]*\]\s*\S?=[^=]|\.\w+\s*\S?=[^=])")


def _mutates(ln, names):
    """Whether line ln may change one of `names` in place (a method that mutates, an item or
    attribute assignment) or unbind it (`del`)."""
    if not names & ln.uses:
        return False
    unbinds, changed = _changed_in_place(ln.code)
    return unbinds or not changed.isdisjoint(names)


@functools.lru_cache(maxsize=65536)
def _changed_in_place(code):
    """(whether a line of `code` is a `del`, the names _MUTATED finds it changing in place):
    each line's text searched once, though the folds ask of every line between a value and
    its use, again in each pass (issue 19)."""
    return code.lstrip().startswith("del "), frozenset(
        m.group(1) for m in _MUTATED.finditer(code))


def _use_to_fold(lines, i, names, temporaries, kept, groups, mentions, targets, retry,
                 blocked, fielded=None):
    """The position of the one line into which lines[i] may fold, else None (`names`: the
    cotangents, `kept` among them; the rest as _folded_once's). fielded: the names that some
    line passing grad_of_fields reads (what _entry may take; None: any name): a cotangent
    assigned again past its rule's comment, not one of them, cannot fold there, and its scan
    stops at that comment (issue 19: else each accumulation scans to the next one, which the
    user's program may read hundreds of lines later: quadratic in the function's size)."""
    got = targets.get(lines[i])
    if got is None:
        got = targets[lines[i]] = _target(lines[i], names, temporaries)
    t, cotangent = got
    if t is None:
        return None
    reads = lines[i].uses
    single = mentions.get(t) == 2 and t not in reads and t not in kept
    redefining = retry is not None and mentions.get(t, 0) > 2
    if not (redefining or single and (retry is None or lines[i] in retry)):
        return None
    k, crossed = None, False
    indent, group = lines[i].indent, groups[i]
    for j in range(i + 1, len(lines)):      # the next line that mentions t: its use
        ln = lines[j]
        uses, defines = ln.uses, ln.defines
        if ln.indent < indent and ln.kind in ("stmt", "block") or t in defines \
                and t not in uses:
            return None             # the end of the block before the use
        if cotangent and groups[j] != group:
            if not single and fielded is not None and t not in fielded:
                return None     # (its use is not an entry, and no single read is blocked)
            crossed = True
        if t in uses:
            k = j
            break
        if not reads.isdisjoint(defines) or not reads.isdisjoint(uses) and _mutates(ln, reads):
            if single:                              # an input of E changed before the use
                blocked.add(lines[i])
            return None
    if k is None:
        return None
    use = lines[k]
    if use.kind != "stmt" and not (use.kind == "block" and use.code.startswith("for ")) or \
            "\n" in use.code or use.indent != lines[i].indent:
        return None         # (a for loop's header evaluates its iterable once: it may take E)
    if crossed and not _entry(use, t):
        return None         # a cotangent's rule stays under its user line's comment, but
        #                     for a field's entry in its structure's cotangent
    # the value reaches that line only: t's one read in all the lines (its assignment and
    # that read), or the line assigns t again (one straight-line block: nothing between them
    # mentions t)
    if t in use.defines:
        return k if redefining else None
    return k if single else None


def _substituted(definition, use, simplify=None, entries=True, wrap=False, one_row=False):
    """`use` with its one read of definition's target replaced by definition's value (then
    simplified), or None where the read is not evaluated exactly once or the result is too
    long. entries: a dict display's entries (a structure's cotangent: `display`) each within
    the limits, the line laid out one entry a line (`laid_out`) when long; else the line as
    one."""
    t, = definition.defines
    value = parsed(definition.code).body[0].value
    tree = _parsed(use)
    hits = [n for n in _walk(tree) if isinstance(n, ast.Name) and n.id == t and
            isinstance(n.ctx, ast.Load)]     # (not the use's own target: `t = t + b`)
    if len(hits) != 1 or _under_breaker(tree, hits[0]):
        return None
    layout = entries and use.kind == "stmt" and display(tree) is not None
    if simplify is None and not layout and \
            _operations(tree) + _operations(value) > (MAX_ONE_ROW_OPERATIONS if one_row and
                                                      not wrap else MAX_OPERATIONS):
        return None
    start, end = _span(use.code, hits[0])
    text = segment(definition.code, value)
    if isinstance(value, _ATOMS):       # binds tighter than any operator: no parentheses
        code = use.code[:start] + text + use.code[end:]
        return _within_limits(type(use)(code, use.indent, use.kind, use.origin), simplify,
                              layout, wrap, one_row)
    for candidate in (text, f"({text})"):
        code = use.code[:start] + candidate + use.code[end:]
        if simplify is None and not layout and _width(code, wrap) > MAX_LENGTH:
            return None
        try:
            new = type(use)(code, use.indent, use.kind, use.origin)
            if not _same(_parsed(new), tree, (hits[0], value)):     # (the use's tree, value
                continue                                            # for the read)
        except SyntaxError:
            continue
        return _within_limits(new, simplify, layout, wrap, one_row)
    return None


def _within_limits(line, simplify, layout=False, wrap=False, one_row=False):
    """`line` (simplified) if short enough, else None: a cotangent's sum of products of names
    and numbers (a polynomial, as a person writes it) may have up to MAX_ARITHMETIC
    operators, and one call beside them. layout: a line passing a dict display (`display`)
    counts each entry's operations, and the rest's, against the limits, and is as wide as
    its widest line laid out (`laid_out`)."""
    if simplify is not None and line.kind == "stmt":
        new = simplify(line)
        tree = parsed(new.code)
        limit = MAX_ARITHMETIC if new.defines <= simplify.cotangents and \
            _arithmetic(tree.body[0].value) else MAX_OPERATIONS
        line = new
    else:
        tree, limit = _parsed(line), MAX_OPERATIONS
    entries = display(tree) if layout else None
    if wrap and (len(line.code) <= MAX_LENGTH or entries is not None):
        return None         # (the last pass: only what needs a second row)
    if entries is None:
        if one_row and not wrap and "\n" not in line.code or wrap and _operator_split(
                line.code):
            limit = max(limit, MAX_ONE_ROW_OPERATIONS)      # (one row: its width bounds it)
        return None if _operations(tree) > limit or _width(line.code, wrap) > MAX_LENGTH \
            else line
    inner = [_operations(v) for v in entries.values]
    if _operations(tree) - sum(inner) > limit or max(inner) > MAX_OPERATIONS:
        return None
    return None if max(map(len, laid_out(line.code).split("\n"))) > MAX_LENGTH else line


def _entry(use, t):
    """Whether line `use` builds a structure's cotangent, `grad_of_fields(s, {k: v, ...})`,
    with t as one entry's whole value (v): the cotangent of the field k, named by its key
    there, as a person writes a model's gradients in one dict (hand-written mlp_loss's)."""
    tree = _parsed(use)
    d = display(tree)
    return d is not None and isinstance(tree.body[0].value.func, ast.Name) and \
        tree.body[0].value.func.id == "grad_of_fields" and \
        any(isinstance(v, ast.Name) and v.id == t for v in d.values)


def display(tree):
    """The dict display of a one-line statement `t = f(..., {k: v, ...})` or `return f(...)`
    (a structure's cotangent, grad_of_fields's: its last argument, two entries or more, no
    `**`), else None. A person writes each entry's expression in it, one a line where the line
    is long."""
    st = tree.body[0] if isinstance(tree, ast.Module) else tree
    if not (isinstance(st, (ast.Assign, ast.Return)) and isinstance(st.value, ast.Call) and
            st.value.args
            and not st.value.keywords):
        return None
    d = st.value.args[-1]
    if not isinstance(d, ast.Dict) or len(d.keys) < 2 or None in d.keys:
        return None
    return d


def segment(code, node):
    """ast.get_source_segment(code, node). Python 3.11's splits `code` into lines one character
    at a time, each call (jit(grad(mlp_loss))'s first call makes 40: 0.5-0.8 ms of it, 0.06-0.08
    ms this way; issue 19). One ASCII line needs no split: its columns are the node's offsets
    (which count UTF-8 bytes)."""
    if node.lineno == node.end_lineno == 1 and "\n" not in code and code.isascii():
        return code[node.col_offset:node.end_col_offset]
    return ast.get_source_segment(code, node)


def laid_out(code):
    """A one-line statement passing a dict display (`display`) longer than MAX_LENGTH written
    on several lines: its head to the `{`, then each entry on a line of its own indented four
    columns, the last closing the display and the call; else `code` itself."""
    if len(code) <= MAX_LENGTH or "\n" in code:
        return code
    tree = parsed(code)
    d = display(tree)
    if d is None:
        return code
    start, end = _span(code, d)
    items = [f"{segment(code, k)}: {segment(code, v)}"
             for k, v in zip(d.keys, d.values)]
    return "\n".join([code[:start] + "{"] + [f"    {e}," for e in items[:-1]] +
                      [f"    {items[-1]}}}{code[end:]}"])


def _width(code, wrap=True):
    """The columns a one-line statement takes (written out as `wrapped` does: wrap)."""
    if len(code) <= MAX_LENGTH or not wrap:
        return len(code)
    return max(map(len, wrapped(code).split("\n")))


def wrapped(code):
    """A one-line statement `t = f(a, b, ...)` or `return f(...)` longer than MAX_LENGTH with
    its call's last arguments on a second line, aligned after the `(`, else all of them there,
    indented four columns (a person's layout of a call a little too long), where both lines
    fit; else a call nested in its first row's arguments continued so, aligned after its own
    `(` (`unbroadcast(labels * unreduce_to(t,` then `shape_of(labels, logits), axis=-1), x)`
    under `t`), the outermost that fits; else `code` itself (its width then tells it does not
    fit). Not a line with a comment after it."""
    if len(code) <= MAX_LENGTH or "\n" in code:
        return code
    st = parsed(code).body[0]
    call = st.value if isinstance(st, (ast.Assign, ast.Return)) else None
    if call is None or code[_span(code, st)[1]:].strip():
        return code         # (a comment after it)
    if isinstance(call, ast.BinOp):
        return _operator_wrapped(code, call)
    rows = _call_rows(code, call, outermost=True)
    for inner in _walk(call) if rows is None and isinstance(call, ast.Call) else ():
        if inner is not call and isinstance(inner, ast.Call):
            rows = _call_rows(code, inner)
            if rows is not None:
                break
    if rows is None:
        return code
    out = "\n".join(rows)
    if not _same(parsed(out), parsed(code)):      # (ast.dump equal, not written out)
        return code
    return out


def _call_rows(code, call, outermost=False):
    """The two rows of `wrapped` continuing `call`'s arguments (the statement's own call:
    outermost, which may also take all of them on the next row, indented), each within
    MAX_LENGTH, or None."""
    if not isinstance(call, ast.Call) or not call.args and not call.keywords or \
            not _dotted(call.func):
        return None         # (a function's name, `f` or `snp.f`: not a method of a value)
    start, end = _span(code, call)
    head = code[:_span(code, call.func)[1]] + "("
    if code[len(head) - 1] != "(":     # (f (a): the head as written, then its arguments)
        return None
    parts = sorted(list(call.args) + list(call.keywords), key=lambda n: n.col_offset)
    texts = [code[slice(*_span(code, n))] for n in parts]
    rows, row = [], head + texts[0]
    for t in texts[1:]:
        if len(row) + 2 + len(t) <= MAX_LENGTH:
            row += ", " + t
        else:
            rows.append(row + ",")
            row = " " * len(head) + t
    rows.append(row + code[end - 1:])
    if outermost and (len(rows) > 2 or max(map(len, rows)) > MAX_LENGTH):  # (or all the
        rows = [head, "    " + ", ".join(texts) + code[end - 1:]]   # arguments on the next
    if len(rows) != 2 or max(map(len, rows)) > MAX_LENGTH:             # row, indented)
        return None
    return rows


_PRECEDENCE = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2, ast.FloorDiv: 2, ast.Mod: 2,
               ast.MatMult: 2}


def _operator_wrapped(code, value):
    """`wrapped` of a statement whose value is a chain of binary operators of one precedence
    (`a * b`, `a + b - c`): the value in parentheses, continued on a second row (a third,
    MAX_ROWS, where two do not fit: a sum of three calls, one a row, as attention's gradient)
    before one of the chain's operators, aligned after the `(` (PEP 8's break before a binary
    operator), each row as full as fits; else `code` itself."""
    level = _PRECEDENCE.get(type(value.op))
    splits, node = [], value        # (the chain's operators, right to left: a left spine)
    while isinstance(node, ast.BinOp) and _PRECEDENCE.get(type(node.op)) == level:
        left_end, right_start = _span(code, node.left)[1], _span(code, node.right)[0]
        gap = code[left_end:right_start]
        splits.append(left_end + len(gap) - len(gap.lstrip(" )")))  # (after the left
        node = node.left                        # operand's closing parentheses: the operator)
    if level is None:
        return code
    start, end = _span(code, value)
    head = code[:start] + "("
    rows, at = [], start            # (each row as full as fits, left to right)
    while len(head) + len(code[at:end].strip()) + len(code[end:]) + 1 > MAX_LENGTH:
        cut = next((c for c in splits if c > at and
                    len(head) + len(code[at:c].rstrip()) <= MAX_LENGTH), None)
        if cut is None or len(rows) == MAX_ROWS - 1:
            return code
        rows.append((head if not rows else " " * len(head)) + code[at:cut].strip())
        at = cut
    if not rows:
        return code
    out = "\n".join(rows + [" " * len(head) + code[at:end].strip() + ")" + code[end:]])
    return out if _same(parsed(out), parsed(code)) else code


def _operator_split(code):
    """Whether `wrapped` writes the one-line statement `code` on two rows split at a binary
    operator (each row then one operand of the chain: `_within_limits` lets the line take
    MAX_ONE_ROW_OPERATIONS, as a row of its own would)."""
    rows = wrapped(code).split("\n")     # (a call's arguments re-read may fit one row)
    return len(rows) >= 2 and all(r.lstrip()[:1] in "+-*/@%" for r in rows[1:])


def _dotted(node):
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _parsed(line):
    """The tree of a one-line statement, or of a block's header (with an empty body)."""
    return parsed(line.code, line.kind)


def _arithmetic(node, calls=1):
    """Whether an expression is +, -, * and ** of names and numbers, with at most `calls`
    calls (of names and numbers) among them."""
    stack, seen = [node], 0
    while stack:
        n = stack.pop()
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult, ast.Pow)):
            stack += [n.left, n.right]
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            stack.append(n.operand)
        elif isinstance(n, ast.Call) and not n.keywords and seen < calls:
            seen += 1
            if not all(isinstance(a, (ast.Name, ast.Constant)) for a in n.args):
                return False
        elif not isinstance(n, (ast.Name, ast.Constant)):
            return False
    return True


_ATOMS = (ast.Name, ast.Call, ast.Attribute, ast.Subscript)


def _operations(tree):
    """Calls and operators in `tree`, a negative number (`axis=-1`) not counted: a literal;
    nor a shape query `shape_of(...)` (its arguments are names: a shape, as a tuple written
    out would be, no array computed)."""
    return sum(isinstance(n, _OPERATIONS) and not _negative_literal(n) and
               not _shape_query(n) for n in _walk(tree))


def _negative_literal(n):
    return isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and \
        isinstance(n.operand, ast.Constant) and type(n.operand.value) in (int, float)


def _shape_query(node):
    """`shape_of(...)` (ad/helpers.py): its arguments stay names, each one's shape read per
    example under vmap by whether that name is batched (transformer/normalize.py
    _PerExampleQueries), never an expression folded in."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "shape_of"


def _under_breaker(tree, target):
    """Whether `target` lies in a part of `tree` evaluated other than exactly once, or in a
    shape query's arguments (`_shape_query`)."""
    def visit(node, inside):
        if node is target:
            return inside
        for child in ast.iter_child_nodes(node):
            found = visit(child, inside or isinstance(node, _ONCE_BREAKERS) and
                          not (isinstance(node, ast.BoolOp) and child is node.values[0]) and
                          not (isinstance(node, ast.IfExp) and child is node.test) or
                          _shape_query(node))
            if found is not None:
                return found
        return None
    return bool(visit(tree, False))


def _span(code, node):
    """The character offsets of `node` in the one-line `code`."""
    data = code.encode()
    start = len(data[:node.col_offset].decode())
    end = len(data[:node.end_col_offset].decode())
    return start, end


def _same(a, b, replaced=None):
    """ast.dump(a) == ast.dump(b), without writing either out: the same node types, fields
    (one left out, or None where its class's default is None, on both sides or neither) and
    values (their reprs, as dump compares them). replaced: (old, new), b read with its node
    old as new (b itself is not changed: a shared tree, walker.parsed)."""
    if replaced is not None and b is replaced[0]:
        b = replaced[1]
    if isinstance(a, ast.AST):
        if not isinstance(b, ast.AST) or type(a).__name__ != type(b).__name__:
            return False
        for field in a._fields:
            x, y = getattr(a, field, _SKIPPED), getattr(b, field, _SKIPPED)
            if x is None and getattr(type(a), field, ...) is None:
                x = _SKIPPED
            if y is None and getattr(type(b), field, ...) is None:
                y = _SKIPPED
            if (x is _SKIPPED) != (y is _SKIPPED) or \
                    x is not _SKIPPED and not _same(x, y, replaced):
                return False
        return True
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and \
            all(_same(x, y, replaced) for x, y in zip(a, b))
    return not isinstance(b, (ast.AST, list)) and repr(a) == repr(b)


_SKIPPED = object()


def dump_key(x, memo=None):
    """ast.dump(x) as a tuple: equal where the dumps are (as _same compares), a dict's key,
    without writing text out (`memo`: each node's, so that a subtree's is formed once)."""
    if isinstance(x, ast.AST):
        got = memo.get(x) if memo is not None else None
        if got is None:
            cls = type(x)
            d = x.__dict__
            fields = []
            for name in x._fields:
                value = d[name] if name in d else getattr(x, name, _SKIPPED)
                if value is _SKIPPED or value is None and getattr(cls, name, ...) is None:
                    continue
                t = type(value)
                fields.append((name, repr(value) if t in _ATOMS_TYPES else
                               dump_key(value, memo)))
            got = (cls.__name__, tuple(fields))
            if memo is not None:
                memo[x] = got
        return got
    if isinstance(x, list):
        return ("[]", tuple(dump_key(v, memo) for v in x))
    return repr(x)


_ATOMS_TYPES = frozenset([str, int, float, complex, bytes, bool, type(None), type(Ellipsis)])


def returned_in_place(lines, kept, simplify=None):
    """`lines` whose last two are `t = E` and `return t`, t a parameter's cotangent (`kept`),
    written as `return E` (and `return F(t)`, t read once there, as `return F(E)` where that
    fits one row: fold's limits, then `simplify`d, ad/algebra.py's): a person returns the expression (bench/handwritten_grads.py), not a
    copy of it under a name read nowhere else. Exact: the two lines are consecutive statements
    of the function's body, so E is evaluated where it was, once, and t's binding is read by the
    return alone (no nested def or lambda reads t: none could read it after the return). The
    line is no longer (`return ` is not longer than `t = `); one written on several rows is
    left as it is."""
    if len(lines) < 2:
        return lines
    last, ret = lines[-2], lines[-1]
    if ret.kind != "stmt" or last.kind != "stmt" or last.indent != ret.indent or \
            "\n" in last.code or "\n" in ret.code or not ret.code.startswith("return "):
        return lines
    st = parsed(last.code).body[0]
    if not isinstance(st, ast.Assign) or len(st.targets) != 1 or \
            not isinstance(st.targets[0], ast.Name) or st.targets[0].id not in kept:
        return lines
    t = st.targets[0].id
    if any(t in ln.uses and ("lambda" in ln.code or ln.code.startswith(("def ", "async def ")))
           for ln in lines):
        return lines
    if ret.code == f"return {t}":
        value = last.code[_span(last.code, st.value)[0]:]
        return lines[:-2] + [type(ret)(f"return {value}", ret.indent, ret.kind, last.origin)]
    # `return grads_as(t, x)`: t read once there, not as one of several values returned, the
    # line within one row's limits (fold's single-read substitution, parentheses as needed)
    returned = parsed(ret.code).body[0].value
    if returned is None or isinstance(returned, ast.Tuple) or t in ret.defines:
        return lines
    new = _substituted(last, ret, entries=False, one_row=True, simplify=simplify)
    if new is None:
        return lines
    return lines[:-2] + [type(ret)(new.code, ret.indent, ret.kind, last.origin)]

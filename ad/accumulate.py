"""A cotangent's contributions from consecutive user lines in one expression (issue 20).

The reverse pass writes each user line's rule under its own `# Grad of:` comment, so a value
read by several lines gets its cotangent as a chain

    # Grad of: v = x @ wv
    x_bar = matmul_grad_x(v_bar, x, wv)
    # Grad of: k = x @ wk
    x_bar = x_bar + matmul_grad_x(k_bar, x, wk)

where a person writes the sum once; and a cotangent one line computes for the next line's rule
alone gets a name of its own. ad/fold.py folds such pairs only under one comment (each rule
stays under its user line's). Here, across the comments:

- the first assignment `v = A` of a cotangent is merged into the next line that mentions v
  when that line is `v = v + B` (`v = B + v`, `v = v - B`): `v = A + B`, first through the
  whole function (a sum is never made too long by a fold below);
- then a cotangent `t = A` that one later line reads once, and no other line mentions (not a
  name the derivative returns, nor an item of a tuple or list: a structure's cotangent reads
  as its named parts), is folded into that read, within ad/fold.py's limits and with its
  simplification (ad/algebra.py);

and the comments of the sections from A's to the use's are joined into one, above the first of
them, naming their user lines in the order the user wrote them (a line of the comment at most
MAX_COMMENT columns, the next user line under the first where two do not fit):

    # Grad of: k = x @ wk; v = x @ wv
    x_bar = matmul_grad_x(v_bar, x, wv) + matmul_grad_x(k_bar, x, wk)

so every rule still stands under a comment naming its line. A merge or fold is made when

- both lines are one-line statements at one indent, every line between them too (no loop or
  branch between: A runs exactly as often as before, where the use is), under comments of that
  indent, at most MAX_SECTIONS user lines named by the joined comment;
- v is a cotangent, `v = A` its plain assignment by a rule's expression (not a stack's pop)
  that does not read v, and no line between mentions v (A's value reaches the use only);
- no line between assigns or changes in place a name A reads (A computes the same value where
  it is evaluated now);
- for a sum, A and B each within ad/fold.py's MAX_OPERATIONS, the sum within MAX_LINE columns
  (where the generator starts wrapping a call), A written into it as ad/fold.py substitutes
  (parentheses where precedence needs them, the result checked to parse as the sum).

No value lives longer than before: A's inputs stay bound until the function returns (CPython
frees no local at its last read) and v held A's value from the first line on.
"""
import ast

from secant.ad import fold

MAX_SECTIONS = 6        # user lines one comment names
MAX_COMMENT = 100       # columns of a line of the joined comment, its indent included
MAX_LINE = 100          # columns of the sum, its indent included


def summed(lines, cotangents, label="Grad of", kept=frozenset(), simplify=None, wrap=False):
    """`lines` with each cotangent's first contribution merged into the accumulation that
    follows it across user lines' sections, or a cotangent read once (not one of `kept`, the
    names the derivative returns) folded into that read, their comments joined (module
    docstring); `simplify` as ad/fold.py's. wrap: only the reads once whose fold needs a
    second row (ad/fold.py's last pass, `wrapped`)."""
    lines = list(lines)
    prefix = f"# {label}: "
    firsts = {}         # line -> _first_assignment's answer (each line parsed once)
    # the sums first, each read once folded after them: a fold may make a contribution too
    # long to be summed (attention's k_bar into x_bar's), a sum does not
    mentions = fold.mentioned(lines)    # (kept up to date below: counted once, issue 19)
    for reads_once in (True,) if wrap else (False, True, False):
        i = 0
        while i < len(lines):
            merged = _merged(lines, i, cotangents, prefix, kept, simplify, reads_once,
                             mentions, firsts, wrap)
            if merged is None:
                i += 1
                continue
            lines, gone, new = merged   # (the line now at i tried in turn; the new one, later)
            for lns, sign in ((gone, -1), (new, 1)):
                for ln in lns:
                    for n in ln.uses | ln.defines:
                        mentions[n] = mentions.get(n, 0) + sign
    return lines


def _group(lines, i):
    """The position of the comment lines[i] stands under (-1 before any, or past the end of
    its block): fold._groups' answer for one line."""
    lowest = lines[i].indent
    for j in range(i - 1, -1, -1):
        ln = lines[j]
        if ln.kind == "comment":
            return j if ln.indent <= lowest else -1
        if ln.kind in ("stmt", "block"):
            lowest = min(lowest, ln.indent)
    return -1


def _merged(lines, i, cotangents, prefix, kept, simplify, reads_once, mentions, firsts,
            wrap=False):
    """(the lines with lines[i] merged into the accumulation that follows it, or folded into
    its one read; the lines gone; the lines new), or None. `mentions`: _mentions(lines);
    `firsts`: line -> _first_assignment's answer, filled here."""
    first = lines[i]
    if first not in firsts:
        firsts[first] = _first_assignment(first, cotangents)
    v = firsts[first]
    if v is None:
        return None
    group = _group(lines, i)
    if group < 0:
        return None
    reads = first.uses
    k, sections = None, 1       # (the comments from group's to j's: each names a user line)
    for j in range(i + 1, len(lines)):
        ln = lines[j]
        if ln.kind == "blank":
            continue
        if ln.indent != first.indent or ln.kind not in ("stmt", "comment") or \
                ln.kind == "stmt" and "\n" in ln.code:
            return None             # (a block's end, a loop or branch, a multi-line statement)
        if v in ln.uses or v in ln.defines:
            k = j
            break
        if ln.kind == "comment":
            sections += 1
            if sections > MAX_SECTIONS:     # (the joined comment would name too many: the
                return None                 # scan stops here, not at v's far use: issue 19)
        if not reads.isdisjoint(ln.defines) or not reads.isdisjoint(ln.uses) and \
                fold._mutates(ln, reads):
            return None
    if k is None or not any(lines[j].kind == "comment" for j in range(i + 1, k)):
        return None             # (one section: ad/fold.py's)
    if not reads_once and _accumulates(lines[k], v):
        total = _sum(first, lines[k])
    elif reads_once and v not in kept and v not in lines[k].defines and \
            mentions.get(v) == 2 and not _in_display(lines[k], v):
        total = fold._substituted(first, lines[k], with_signs_cancelled(simplify),
                                  entries=False, wrap=wrap)  # (a display's: one section's)
    else:
        return None
    if total is None:
        return None
    comments = [c for c in range(group, k) if lines[c].kind == "comment"]
    if not all(lines[c].code.startswith(prefix) and lines[c].indent == first.indent and
               (hasattr(lines[c], "texts") or "\n" not in lines[c].code) for c in comments):
        return None
    texts = [t for c in reversed(comments)
             for t in getattr(lines[c], "texts", [lines[c].code[len(prefix):]])]
    if len(texts) > MAX_SECTIONS:
        return None
    comment = _comment(prefix, texts, first)
    dropped = set(comments) | {i}      # (all from comments[0] on, before k)
    gone = [first, lines[k]]
    lines[comments[0]:k + 1] = [comment] + [lines[j] for j in range(comments[0] + 1, k)
                                            if j not in dropped] + [total]
    return lines, gone, [total]     # (in place: summed's own copy; issue 19, not n per merge)


def _in_display(ln, v):
    """Whether line ln reads v as an item of a tuple or list display (`f((w_bar, v_bar), a)`:
    a structure's cotangent, read as its named parts, as eigh_vjp's pair)."""
    for node in ast.walk(fold._parsed(ln)):
        if isinstance(node, (ast.Tuple, ast.List)) and any(
                isinstance(e, ast.Name) and e.id == v for e in node.elts):
            return True
    return False


def with_signs_cancelled(simplify):
    """`simplify` (ad/fold.py's, or None) followed by _signs_cancelled, for fold's limits."""
    if simplify is None:
        return None

    def both(ln):
        return _signs_cancelled(simplify(ln), simplify.cotangents)
    both.cotangents = simplify.cotangents
    return both


def _signs_cancelled(ln, cotangents):
    """Line ln (`t = E`, t a cotangent) with each `-(-a * b / c)` in E written `a * b / c`: a
    negation of a product or quotient whose first factor is a negation. Exact in floating
    point (negation is, and a product's or a quotient's rounding is symmetric in sign), as a
    person cancels the two signs; what a fold leaves (`-(z_bar / e)` with z_bar = `-z * g`)."""
    if ln.kind != "stmt" or "\n" in ln.code or not ln.defines or not ln.defines <= cotangents \
            or ln.code.count("-") < 2:
        return ln
    tree = ast.parse(ln.code)
    changed = False
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            values = value if isinstance(value, list) else [value]
            for n, v in enumerate(values):
                new = _cancelled(v)
                if new is not v:
                    changed = True
                    if isinstance(value, list):
                        value[n] = new
                    else:
                        setattr(node, field, new)
    if not changed:
        return ln
    return type(ln)(ast.unparse(tree), ln.indent, ln.kind, ln.origin)


def _cancelled(node):
    """`a * b / c` for a node `-(-a * b / c)`, else the node itself."""
    if not (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)):
        return node
    chain = node.operand
    parent, first = None, chain
    while isinstance(first, ast.BinOp) and isinstance(first.op, (ast.Mult, ast.Div)):
        parent, first = first, first.left
    if parent is None or not (isinstance(first, ast.UnaryOp) and isinstance(first.op, ast.USub)):
        return node
    parent.left = first.operand
    return chain


def _comment(prefix, texts, first):
    """The comment naming the user lines `texts` (in the user's order), `; ` between two, a
    line of it at most MAX_COMMENT columns where two fit: a text that does not goes on the
    next, under the first's."""
    rows = [prefix + texts[0]]
    for t in texts[1:]:
        if len(rows[-1]) + 2 + len(t) + 4 * first.indent <= MAX_COMMENT:
            rows[-1] += "; " + t
        else:
            rows[-1] += ";"
            rows.append("#" + " " * (len(prefix) - 1) + t)
    comment = type(first)("\n".join(rows), first.indent, "comment")
    comment.texts = texts
    return comment


def _first_assignment(ln, cotangents):
    """v for a line `v = A` assigning a cotangent by an expression that does not read it and
    changes nothing in place, else None."""
    if ln.kind != "stmt" or "\n" in ln.code or len(ln.defines) != 1:
        return None
    v, = ln.defines
    if v not in cotangents or v in ln.uses or not fold._assigns(ln.code, True):
        return None     # (fold's test of the text, cached: `v = A`, A changing nothing)
    return v


def _accumulates(ln, v):
    """Whether ln is `v = v + B`, `v = B + v` or `v = v - B`, B not reading v."""
    if ln.kind != "stmt" or ln.defines != {v}:
        return False
    tree = fold.parsed(ln.code).body[0]
    if not (isinstance(tree, ast.Assign) and len(tree.targets) == 1
            and isinstance(tree.targets[0], ast.Name) and isinstance(tree.value, ast.BinOp)
            and isinstance(tree.value.op, (ast.Add, ast.Sub))):
        return False
    sides = (tree.value.left, tree.value.right)
    if isinstance(tree.value.op, ast.Sub):
        sides = sides[:1]
    reads = [s for s in sides if isinstance(s, ast.Name) and s.id == v]
    if len(reads) != 1:
        return False
    other = tree.value.right if reads[0] is tree.value.left else tree.value.left
    return not any(isinstance(n, ast.Name) and n.id == v for n in ast.walk(other))


def _sum(first, use):
    """`use` (`v = v + B`) with its read of v replaced by first's value A, or None where A or
    B has more than fold.MAX_OPERATIONS operations or the line passes MAX_LINE columns."""
    value = fold.parsed(first.code).body[0].value
    tree = fold._parsed(use)
    add = tree.body[0].value
    hit = add.left if isinstance(add.left, ast.Name) and add.left.id in first.defines \
        else add.right
    other = add.right if hit is add.left else add.left
    if fold._operations(value) > fold.MAX_OPERATIONS or \
            fold._operations(other) > fold.MAX_OPERATIONS:
        return None
    start, end = fold._span(use.code, hit)
    text = ast.get_source_segment(first.code, value)
    for candidate in (text, f"({text})"):
        code = use.code[:start] + candidate + use.code[end:]
        if len(code) + 4 * use.indent > MAX_LINE:
            return None
        try:
            if not fold._same(ast.parse(code), tree, (hit, value)):    # (tree: shared, unchanged)
                continue
        except SyntaxError:
            continue
        return type(use)(code, use.indent, use.kind, use.origin)
    return None

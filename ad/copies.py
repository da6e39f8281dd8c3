"""Copy removal on a derivative's generated lines: no `a_bar = b_bar` statements and no zero
accumulator that its first contribution could simply assign.

Works on the lines ad/reverse.py assembles (each knows the names it reads and writes, and its
indentation gives the block structure), for cotangent names only:

- a copy `a = b` that repeats an earlier `b = a` with neither reassigned since is dropped;
- a copy `a = b` whose `a` is assigned nowhere else and read only further down its block is
  dropped, those reads renamed to `b`, when `b` is not reassigned before the last of them
  (through the end of the loop or branch holding it; `b = f(a)` itself may reassign it);
- a copy `a = b` of a `b` assigned once, just above in the same block and read nowhere else,
  becomes that assignment, to `a`;
- `a = zeros_like(v)` whose next mention is `a = a + e` in the same block becomes `a = e`
  (an accumulator in a loop the zeros stand before keeps them: each iteration adds), and a
  copy `a = b` whose next mention reassigns it, `a = a + e`, becomes `a = b + e`.
"""
import re

_COPY = re.compile(r"(\w+) = (\w+)")
_ZEROS = re.compile(r"(\w+) = (?:snp\.zeros_like|zeros_like_tree)\(\w+\)")


def without_copies(lines, names):
    """`lines` (ad/reverse.py's Line) with the copies between the cotangent `names` removed."""
    lines = list(lines)
    while True:
        for step in (_drop_repeated, _forward, _backward, _first_contribution):
            changed = step(lines, names)
            if changed:
                break
        else:
            return lines


def _code(ln):
    return ln.code.strip() if ln.kind == "stmt" else None


def _copy(ln, names):
    m = _COPY.fullmatch(_code(ln) or "")
    if m and m.group(1) in names and m.group(2) in names and m.group(1) != m.group(2):
        return m.group(1), m.group(2)
    return None


def _structural(lines):
    return [k for k, ln in enumerate(lines) if ln.kind in ("stmt", "block")]


def _block_end(lines, i):
    """Index just past the block holding line i (the first later line indented less)."""
    for k in range(i + 1, len(lines)):
        if lines[k].kind in ("stmt", "block") and lines[k].indent < lines[i].indent:
            return k
    return len(lines)


def _statement_end(lines, k, level):
    """Index just past the statement at indentation `level` that holds line k (an if with its
    else, a loop)."""
    end = k + 1
    while end < len(lines) and (lines[end].kind not in ("stmt", "block")
                                or lines[end].indent > level
                                or lines[end].code == "else:" and lines[end].indent == level):
        end += 1
    return end


def _same_block(lines, j, i):
    """Lines j < i at one indentation with nothing between them indented less."""
    return lines[j].indent == lines[i].indent and all(
        lines[k].indent >= lines[i].indent for k in range(j + 1, i)
        if lines[k].kind in ("stmt", "block"))


def _mentions(ln, name):
    return name in ln.uses or name in ln.defines


def _renamed(ln, old, new):
    code = re.sub(rf"(?<![\w.]){re.escape(old)}(?![\w])", new, ln.code)
    return type(ln)(code, ln.indent, ln.kind, ln.origin)


def _drop_repeated(lines, names):
    """`b = a` ... `a = b` with neither reassigned between: the second does nothing."""
    for i, ln in enumerate(lines):
        same = re.fullmatch(r"(\w+) = \1", _code(ln) or "")
        if same and same.group(1) in names:         # `a = a`
            del lines[i]
            return True
        c = _copy(ln, names)
        if not c:
            continue
        a, b = c
        for j in range(i - 1, -1, -1):
            if lines[j].kind not in ("stmt", "block"):
                continue
            if lines[j].indent < ln.indent:
                break
            if _copy(lines[j], names) == (b, a) and lines[j].indent == ln.indent:
                del lines[i]
                return True
            if a in lines[j].defines or b in lines[j].defines:
                break
    return False


def _forward(lines, names):
    for i, ln in enumerate(lines):
        c = _copy(ln, names)
        if not c:
            continue
        a, b = c
        if any(a in m.defines for k, m in enumerate(lines) if k != i):
            continue
        end = _block_end(lines, i)
        reads = [k for k, m in enumerate(lines) if a in m.uses]
        if any(not i < k < end for k in reads):
            continue
        stop = _statement_end(lines, reads[-1], ln.indent) if reads else i + 1
        if not _unchanged_at_reads(lines, i, stop, reads, b):
            continue
        for k in reads:
            lines[k] = _renamed(lines[k], a, b)
        del lines[i]
        return True
    return False


def _unchanged_at_reads(lines, i, stop, reads, b):
    """Whether b holds, at each of `reads` (of a, copied from b at line i), the value it had at
    line i: no assignment of b on a path between them. Within ifs, an assignment in one branch
    is on no path to a read in the other; `b = f(a)` reads before it assigns. A loop between
    them (its next iteration) counts every assignment of b up to the statement's end."""
    context = _contexts(lines)
    base = len(context[i])
    defs = [d for d in range(i + 1, stop) if b in lines[d].defines]
    if any(loop for k in reads + defs for _, _, loop in context[k][base:]):
        return not any(b in lines[k].defines for k in range(i + 1, stop)
                       if not (k == reads[-1] and _simple(lines[k], lines[i].indent)))

    def exclusive(d, k):
        branches = {h: br for h, br, _ in context[d][base:]}
        return any(h in branches and branches[h] != br for h, br, _ in context[k][base:])
    return all(exclusive(d, k) for d in defs for k in reads
               if k > d or k == d and not _simple(lines[d], None))


def _simple(ln, indent):
    """A one-line statement (it reads everything before it assigns), at `indent` if given."""
    return ln.kind == "stmt" and "\n" not in ln.code and indent in (None, ln.indent)


def _contexts(lines):
    """For each line, the blocks around it, outermost first: (if line, branch, False) for a
    branch of an if, (header line, 0, True) for a loop (or any other block)."""
    out, stack, ifs = [], [], {}
    for k, ln in enumerate(lines):
        if ln.kind not in ("stmt", "block"):
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


def _backward(lines, names):
    for i, ln in enumerate(lines):
        c = _copy(ln, names)
        if not c:
            continue
        a, b = c
        defs = [k for k, m in enumerate(lines) if b in m.defines]
        reads = [k for k, m in enumerate(lines) if b in m.uses]
        if len(defs) != 1 or reads != [i] or not defs[0] < i or lines[defs[0]].kind != "stmt":
            continue
        j = defs[0]
        if not _same_block(lines, j, i) or any(_mentions(lines[k], a) for k in range(j + 1, i)):
            continue
        lines[j] = _renamed(lines[j], b, a)
        del lines[i]
        return True
    return False


def _first_contribution(lines, names):
    for i, ln in enumerate(lines):
        m = _ZEROS.fullmatch(_code(ln) or "")
        c = _copy(ln, names)
        if not (m and m.group(1) in names or c):
            continue
        a = c[0] if c else m.group(1)
        nxt = next((k for k in range(i + 1, len(lines)) if _mentions(lines[k], a)), None)
        if nxt is None or not _same_block(lines, i, nxt):
            continue
        if c:           # `a = b` ... `a = a + e` (b not reassigned between): `a = b + e`
            assign = re.fullmatch(r"([\w, ]+) = (.+)", _code(lines[nxt]) or "")
            b = c[1]
            if not assign or "\n" in lines[nxt].code or a not in lines[nxt].defines or any(
                    b in lines[k].defines for k in range(i + 1, nxt)):
                continue
            rhs = re.sub(rf"(?<![\w.]){re.escape(a)}(?!\w)", b, assign.group(2))
            lines[nxt] = type(ln)(f"{assign.group(1)} = {rhs}", lines[nxt].indent, "stmt",
                                  lines[nxt].origin)
            del lines[i]
            return True
        add = re.fullmatch(rf"{re.escape(a)} = {re.escape(a)} \+ (.+)", _code(lines[nxt]) or "")
        if not add or re.search(rf"(?<![\w.]){re.escape(a)}(?!\w)", add.group(1)):
            continue
        lines[nxt] = type(ln)(f"{a} = {add.group(1)}", lines[nxt].indent, "stmt",
                              lines[nxt].origin)
        del lines[i]
        return True
    return False

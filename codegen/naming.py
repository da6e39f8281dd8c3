"""Readable, deterministic names for generated variables: temporaries are named after the
expression they hold (`sin_x`, `x_times_y`), derivatives after their variable (`x_bar`)."""
import ast
import keyword
import re
import tokenize

WORDS = {"add": "plus", "subtract": "minus", "multiply": "times", "true_divide": "over",
         "power": "pow", "matmul": "matmul", "remainder": "mod", "negative": "neg",
         "getitem": "item", "at_set": "set", "at_add": "add", "absolute": "abs",
         "true_divide_": "over"}
MAX_LEN = 24


def _part(operand):
    name = getattr(operand, "name", None)
    if name is not None:
        return name
    src = getattr(operand, "src", "")
    if re.fullmatch(r"\d+(\.0*)?", src):
        return src.split(".")[0]
    return src if src.isidentifier() else ""


def suggest(op, operands):
    """A name for the result of `op` over `operands` (a list of Var/Expr)."""
    parts = [p for p in (_part(o) for o in operands) if p]
    if op == "multiply" and len(operands) == 2 and parts[:1] * 2 == parts:
        name = f"{parts[0]}_sq"
    elif op == "power" and len(parts) == 2 and parts[1] == "2":
        name = f"{parts[0]}_sq"
    elif op in ("add", "subtract", "multiply", "true_divide", "power", "matmul") and len(parts) == 2:
        name = f"{parts[0]}_{WORDS[op]}_{parts[1]}"
    else:
        name = "_".join([WORDS.get(op, op)] + parts[:1])
    if len(name) > MAX_LEN:
        word = WORDS.get(op, op)
        short = f"{word}_{parts[0]}" if parts else word
        name = short if len(short) <= MAX_LEN else f"{word}_out"
    return name


_NOT_WORD = re.compile(r"\W")


class Names:
    """Hands out names not used anywhere in the function (deterministic counters, no uuids)."""

    def __init__(self, taken=()):
        self.taken = set(taken)

    def fresh(self, base):
        if not (base.isascii() and base.isidentifier()):   # (most are: no re.sub of each of
            base = _NOT_WORD.sub("_", base) or "tmp"        # a long grad's names, issue 19)
        if keyword.iskeyword(base) or base[0].isdigit():
            base = "v_" + base
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def reserve(self, name):
        self.taken.add(name)


def versions_dropped(source, versions):
    """`source` (one generated function) with a version `y_1` of the user's `y` (one of
    `versions`: the canonical form's names for the user's variables) written `y` where no
    name `y` is left in the code (`y = x` before a loop rebinding y: its copy into the loop's
    carry removed, only the carry is left), and the names built from it alike (`y_1_bar`,
    `sin_y_1`, `y_1_stack`: `y_bar`, `sin_y`, `y_stack`), as a person names them.

    A consistent renaming of names bound in the function to names the code does not mention
    (the hygiene argument, transformer/hygiene.py): the binding structure is unchanged, so the
    code means what it meant. A version is left as it is where any name built from it is a
    parameter (the signature: keyword calls), is not bound in the function (a global or free
    name it reads), is mentioned other than as a variable (an attribute, a keyword argument,
    a nested def's or class's name, a global statement), or would take a name the code
    mentions or another renaming takes, and where `y` is spelled in a string (a placeholder's
    `unbound_before_loop('y')`: a transform of the derivative renames the versions of what
    that string names, the string with them). Comments and strings are never renamed."""
    if not source.isascii():        # (ast's columns count bytes; tokenize's, characters)
        return source
    # (no version spelled in the text, so none a name token: nothing to rename, and neither
    # the parse nor the two tokenizations, a tenth of a long grad's transform, are needed)
    if not versions or set(versions).isdisjoint(re.findall(r"[A-Za-z_]\w*", source)):
        return source
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    fdef = tree.body[0]
    params = {a.arg for a in ast.walk(fdef.args) if isinstance(a, ast.arg)}
    spots, bound = _spots(tree)
    counts = {}
    for _, _, name in spots:
        counts[name] = counts.get(name, 0) + 1
    words, quoted = {}, set()
    for m in _WORD_OR_STRING.finditer(source):      # (tokenize's NAME and STRING tokens,
        kind = m.lastgroup                          # at a fraction of its cost)
        if kind == "w":
            word = m.group()
            words[word] = words.get(word, 0) + 1
        elif kind == "s":
            quoted.update(re.findall(r"\w+", m.group()))
    renamable = {w for w, k in words.items() if counts.get(w) == k and w in bound and
                 w not in params}
    taken, table = set(words), {}
    # a name built from v holds v's `_`-parts as parts of its own, v's first among them: the
    # words holding each part, in the words' order (each version searched only those: the
    # search of every word for each version was quadratic in a loop's long grad, issue 19)
    parts = {}
    for w in words:
        for part in set(w.split("_")):
            parts.setdefault(part, []).append(w)
    for v in sorted(versions, key=lambda s: (len(s), s)):
        m = re.fullmatch(r"([A-Za-z]\w*?)_(\d+)", v)
        if m is None or v not in words or m.group(1) in taken or m.group(1) in quoted or \
                keyword.iskeyword(m.group(1)):
            continue
        derived = {}
        for w in parts.get(v.split("_")[0], ()):
            got = _part_replaced(w, v, m.group(1))
            if got is not None:
                derived[w] = got
        new = set(derived.values())
        if not set(derived) <= renamable or set(derived) & set(table) or new & taken or \
                len(new) != len(derived) or any(keyword.iskeyword(n) for n in new):
            continue
        table.update(derived)
        taken |= new
    if not table:
        return source
    edits = {}      # row -> [(column, change of length)]
    lines = source.splitlines(True)
    for line, col, name in sorted(spots, reverse=True):
        if name in table:
            text = lines[line - 1]
            lines[line - 1] = text[:col] + table[name] + text[col + len(name):]
            edits.setdefault(line, []).append((col, len(table[name]) - len(name)))
    for row, change in _realigned(_edited_statements_tokens(source, tree, edits),
                                  edits).items():
        text = lines[row - 1]
        lines[row - 1] = " " * change + text if change > 0 else text[-change:]
    return "".join(lines)


def _part_replaced(word, part, new):
    """`word` with each `_`-delimited occurrence of `part` (at its start or after a `_`, at its
    end or before a `_`), left to right, written `new`, else None where none is:
    re.sub(rf"(?:^|(?<=_)){re.escape(part)}(?=_|$)", new, word), without a pattern compiled
    per version (hundreds in a long loop's grad, each evicting the re module's cache; issue
    19)."""
    out, start, at, n = [], 0, word.find(part), len(part)
    while at >= 0:
        if (at == 0 or word[at - 1] == "_") and (at + n == len(word) or word[at + n] == "_"):
            out += [word[start:at], new]
            start = at + n
            at = word.find(part, start)
        else:
            at = word.find(part, at + 1)
    return None if not out else "".join(out) + word[start:]


def push_children(node, push, AST=ast.AST):
    """push(child) for each child node of `node`, in field order: the step of the tree walks
    that cost counts (hygiene.walk, walker's names, versions_dropped; issue 19). Fields are
    read from the node's __dict__, so for ast's nodes as for gast's."""
    d = node.__dict__
    for field in node._fields:
        value = d.get(field)
        if type(value) is list:
            for v in value:
                if isinstance(v, AST):
                    push(v)
        elif isinstance(value, AST):
            push(value)


def _spots(tree):
    """([(row, column, name)] of each Name and parameter of `tree`, {the names bound}): a walk
    of its own (ast.walk, a generator over iter_child_nodes, took a third of versions_dropped's
    time in a long grad, issue 19)."""
    spots, bound = [], set()
    Name, Load, arg = ast.Name, ast.Load, ast.arg
    stack = [tree]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        if kind is Name:
            spots.append((node.lineno, node.col_offset, node.id))
            if type(node.ctx) is not Load:
                bound.add(node.id)
            continue
        if kind is arg:
            spots.append((node.lineno, node.col_offset, node.arg))
            bound.add(node.arg)
        push_children(node, push)
    return spots, bound


# Python's tokens as tokenize reads them, at a fraction of its cost (a long grad's source has
# tens of thousands: issue 19), in a source that parses: a comment, a string (prefix and
# quotes; a triple-quoted one over rows), a number (tokenize's own pattern: `1e5` holds no
# name `e5`), a name (a keyword too), a backslash continuing a row, blanks, a row's end; any
# other character one of an operator (`**` as two: the first where the operator starts)
_STRING = ("(?:[rRbBuUfF]{1,2})?(?:'''(?:[^'\\\\]|\\\\[\\s\\S]|'(?!''))*'''"
           '|"""(?:[^"\\\\]|\\\\[\\s\\S]|"(?!""))*"""'
           "|'(?:[^'\\\\\\n]|\\\\[\\s\\S])*'"
           '|"(?:[^"\\\\\\n]|\\\\[\\s\\S])*")')
_WORD_OR_STRING = re.compile(rf"#[^\n]*|(?P<s>{_STRING})|{tokenize.Number}|(?P<w>\w+)")
_TOKEN = re.compile(rf"(?P<c>#[^\n]*)|(?P<s>{_STRING})|(?P<n>{tokenize.Number}|\w+)"
                    r"|(?P<w>\\\r?\n|[ \t\f\r]+)|(?P<nl>\n)|(?P<o>.)")


def _tokens(source):
    """[(kind, text, (row, column))] of `source`'s tokens as _TOKEN reads them ("s" a string,
    "n" a name or number, "o" an operator's character), comments, blanks and rows' ends left
    out (as _realigned skips them)."""
    out, row, start = [], 1, 0
    for m in _TOKEN.finditer(source):
        kind = m.lastgroup
        if kind == "nl" or kind == "w" and "\n" in m.group():
            row, start = row + 1, m.end()
        elif kind != "c" and kind != "w":
            text = m.group()
            out.append((kind, text, (row, m.start() - start)))
            if kind == "s" and "\n" in text:
                row, start = row + text.count("\n"), m.start() + text.rfind("\n") + 1
    return out


def _edited_statements_tokens(source, tree, edits):
    """_tokens(source)'s tokens of the statements spanning several rows with a row in `edits`
    (a compound statement's header alone, its body's statements each on their own): only
    there can a row continue a statement aligned under a moved bracket (_realigned; each
    statement's brackets close within it). A long grad's source is mostly one-row statements:
    its tokenization was a quarter of versions_dropped's time (issue 19). The whole source's
    where its rows are not plain `\\n`-ended rows, or a statement's span is not read here."""
    if re.search(r"[\r\x0b\x0c\x1c-\x1e]", source):
        return _tokens(source)
    spans, rows = [], source.split("\n")
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                node.decorator_list or isinstance(node, ast.Match):
            return _tokens(source)
        blocks = [getattr(node, f) for f in ("body", "orelse", "finalbody")
                  if isinstance(getattr(node, f, None), list)]
        blocks += [h.body for h in getattr(node, "handlers", ())]
        if not blocks:                                  # a simple statement
            spans.append((node.lineno, node.end_lineno))
            continue
        heads = [(node, node.body[0])] + [(h, h.body[0]) for h in getattr(node, "handlers", ())]
        for head, first in heads:
            if rows[first.lineno - 1][:first.col_offset].strip():
                return _tokens(source)      # (a body on its header's row: `if c: x = 1`)
            spans.append((head.lineno, max(head.lineno, first.lineno - 1)))
        for block in blocks:
            todo.extend(block)
    out, last = [], 0
    for a, b in sorted(spans):
        if a <= last:
            return _tokens(source)          # (statements sharing a row: `a = f(x,` `y); b = 1`)
        last = b
        if b > a and any(r in edits for r in range(a, b + 1)):
            out += [(kind, text, (row + a - 1, col))
                    for kind, text, (row, col) in _tokens("\n".join(rows[a - 1:b]) + "\n")]
    return out


def _realigned(tokens, edits):
    """{row: the change of its indent} for the rows of a source (`tokens`: its tokens, read
    once by versions_dropped) that continue a statement aligned after an open bracket of an
    earlier row (`f(a,` then `  b)` under a; a chain of operators continued under its `(`),
    where `edits` ({row: [(column, change of length)]}, the renaming's) moved that bracket:
    the continuation stays aligned under it."""
    moved, stack, seen = {}, [], set()
    for kind, text, (row, col) in tokens:
        if row not in seen:
            seen.add(row)
            if stack and stack[-1][0] < row and col == stack[-1][1] + 1:
                at, bracket = stack[-1]
                new = bracket + 1 + moved.get(at, 0) + sum(
                    d for c, d in edits.get(at, ()) if c < bracket)
                if new != col and new > 0:
                    moved[row] = new - col
        if kind == "o" and text in "([{":
            stack.append((row, col))
        elif kind == "o" and text in ")]}" and stack:
            stack.pop()
    return moved

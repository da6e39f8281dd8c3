"""Readable, deterministic names for generated variables: temporaries are named after the
expression they hold (`sin_x`, `x_times_y`), derivatives after their variable (`x_bar`)."""
import ast
import io
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


class Names:
    """Hands out names not used anywhere in the function (deterministic counters, no uuids)."""

    def __init__(self, taken=()):
        self.taken = set(taken)

    def fresh(self, base):
        base = re.sub(r"\W", "_", base) or "tmp"
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
    spots, bound, counts = [], set(), {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            spots.append((n.lineno, n.col_offset, n.id))
            if not isinstance(n.ctx, ast.Load):
                bound.add(n.id)
        elif isinstance(n, ast.arg):
            spots.append((n.lineno, n.col_offset, n.arg))
            bound.add(n.arg)
    for _, _, name in spots:
        counts[name] = counts.get(name, 0) + 1
    words, quoted = {}, set()
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))   # (read twice)
    for tok in tokens:
        if tok.type == tokenize.NAME:
            words[tok.string] = words.get(tok.string, 0) + 1
        elif tok.type == tokenize.STRING:
            quoted.update(re.findall(r"\w+", tok.string))
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
        built = re.compile(rf"(?:^|(?<=_)){re.escape(v)}(?=_|$)")
        derived = {w: built.sub(m.group(1), w) for w in parts.get(v.split("_")[0], ())
                   if built.search(w)}
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
    for row, change in _realigned(tokens, edits).items():
        text = lines[row - 1]
        lines[row - 1] = " " * change + text if change > 0 else text[-change:]
    return "".join(lines)


def _realigned(tokens, edits):
    """{row: the change of its indent} for the rows of a source (`tokens`: its tokens, read
    once by versions_dropped) that continue a statement aligned after an open bracket of an
    earlier row (`f(a,` then `  b)` under a; a chain of operators continued under its `(`),
    where `edits` ({row: [(column, change of length)]}, the renaming's) moved that bracket:
    the continuation stays aligned under it."""
    moved, stack, seen = {}, [], set()
    for tok in tokens:
        row, col = tok.start
        if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
                        tokenize.DEDENT):
            continue
        if row not in seen:
            seen.add(row)
            if stack and stack[-1][0] < row and col == stack[-1][1] + 1:
                at, bracket = stack[-1]
                new = bracket + 1 + moved.get(at, 0) + sum(
                    d for c, d in edits.get(at, ()) if c < bracket)
                if new != col and new > 0:
                    moved[row] = new - col
        if tok.type == tokenize.OP and tok.string in "([{":
            stack.append((row, col))
        elif tok.type == tokenize.OP and tok.string in ")]}" and stack:
            stack.pop()
    return moved

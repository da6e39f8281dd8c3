"""Readable, deterministic names for generated variables: temporaries are named after the
expression they hold (`sin_x`, `x_times_y`), derivatives after their variable (`x_bar`)."""
import keyword
import re

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

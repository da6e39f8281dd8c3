"""The canonical form: a function body as straight-line statements in A-normal form.

Operands are `Var` (an array value the transform tracks: it may carry a derivative) or `Expr`
(any other Python expression, kept as source text: constants, shapes, static arguments,
comparisons). Every statement remembers the user's line it came from.
"""
import ast
import functools
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Expr:
    src: str

    def as_operand(self):
        """Source safe to splice into a larger expression (parenthesised only if it needs it)."""
        return _as_operand(self.src)


_ATOMIC = (ast.Name, ast.Call, ast.Attribute, ast.Subscript, ast.List, ast.Tuple, ast.Dict)


@functools.lru_cache(maxsize=65536)
def _as_operand(s):
    """Expr(s).as_operand() (each text parsed once: issue 19, transformation time)."""
    try:
        node = ast.parse(s, mode="eval").body
    except SyntaxError:
        return f"({s})"
    if isinstance(node, _ATOMIC) or (isinstance(node, ast.Constant) and not s.startswith("-")):
        return s
    return f"({s})"


@dataclass(frozen=True)
class Seq:
    """A list or tuple literal of operands (for ops taking sequences, and tuple returns); for
    vmap, also a dict literal (kind "dict", `keys` the keys' source) passed to a helper."""
    items: tuple
    kind: str = "list"
    keys: tuple = None


@dataclass
class Origin:
    line: int          # line in the user's file
    text: str          # that line's source, stripped
    filename: str = ""


@dataclass
class Op:
    """targets = op(operands, statics): a tracked computation."""
    targets: list
    op: str
    operands: dict            # array parameter -> Var | Expr | Seq
    statics: dict             # static parameter -> source text
    origin: Origin
    callee: object = None     # for op == "call": the user function
    callee_name: str = ""     # how generated code names it
    spelling: str = ""        # a lax function generated code calls for this op (`lax.add`):
                              # lax's argument checks (one dtype, ranks) run as in the user's code


@dataclass
class Plain:
    """A statement kept as written (no derivative flows through it). For vmap of a derivative
    that replays a Python loop, `stack` marks the loop stack's statements that move a batched
    value: ("push", stack, value) for `stack.append(value)`, ("pop", stack, target) for
    `target = stack.pop()`; the statement stays as written and the vectorizer carries the
    batching through the stack (a list of batched arrays)."""
    code: str
    defines: set
    origin: Origin
    stack: tuple = None
    effect: bool = False      # run for its effect (print): not replayed by a reverse loop


@dataclass
class Return:
    value: object             # Var | Expr | Seq
    origin: Origin


@dataclass
class If:
    test: str                 # name of the saved condition
    body: list
    orelse: list
    origin: Origin


@dataclass
class For:
    """for target in <saved iterable>: body. `carried` lists (loop name, last version) of each
    variable the body assigns: the body ends by copying its last version to the loop name."""
    target: str
    iterable: str             # name of the saved iterable (a range or a list)
    body: list
    carried: list
    origin: Origin


@dataclass
class While:
    """while <test>: body, the test written over the loop names; `carried` as for For."""
    test: str                 # source of the test (not differentiated)
    body: list
    carried: list
    origin: Origin


@dataclass
class Function:
    name: str
    args_src: str             # the parameter list as written
    params: list              # parameter names
    body: list = field(default_factory=list)
    result: Return = None


def nested(stmts):
    """Every statement of `stmts` in order, those inside ifs and loops included."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from nested(s.body)
            yield from nested(s.orelse)
        elif isinstance(s, (For, While)):
            yield from nested(s.body)

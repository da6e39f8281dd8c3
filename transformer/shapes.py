"""Static shape relations on the canonical form: which names are Python numbers, and which
values provably have the same shape (and the same real-or-complex kind) as which.

Each value's shape is described as the broadcast of a set of *symbols*: a parameter, or the
result of an op whose shape the analysis does not follow (a matmul, a reduction), each stands
for one shape and one real-or-complex kind. An elementwise op's result is the union of its
operands' sets; a Python real number (a literal, a shape query, a `range` counter, a counter
`i_2 = i_1 + 1` of those) is the empty set. So `acc + snp.sin(x * i)` has the set {x}, and its
operand `snp.sin(x * i)` too. An expression the canonical form keeps as text (an inline
`0.5 * dt * k`, an inactive `m = snp.ones_like(x) * 3.0`) is read the same way: names,
real numbers, arithmetic and NumPy's elementwise functions (`snp.log(2 * snp.pi)` is a real
scalar, which widens nothing).

A reduction's result is its own symbol, but when it keeps its operand's rank (keepdims=True)
or is a scalar, its shape broadcasts to its operand's: `bound` gives, for another operand,
the sets that bound its shape from above, so `z - snp.log(snp.sum(e, axis=1, keepdims=True))`
needs no unbroadcast of z's cotangent when z's set holds e's.

The question the analysis answers is `needs_unbroadcast(operands, name)`: whether the
cotangent of an elementwise op's result may differ in shape (or be complex for a real operand)
from the operand `name`; that is, whether some other operand's set is not included in
`name`'s (or, for another operand, the sets bounding it). When unsure it answers yes: a
missing unbroadcast is a wrong gradient.

A name assigned in several places (a loop's carried name, both branches of an if) has several
alternative sets. Symbols minted inside a loop stand for one iteration's value; a name assigned
in several places that holds one of them is unknown (two iterations' values would otherwise
pass for one). A Python number's own cotangent is discarded, so the alternatives a name takes
from Python-number assignments (`acc = 0.0` before `acc = acc + ...`) do not count when asking
about its own cotangent, only when it is another operand.
"""
import ast
import functools
import itertools
import re

from secant.transformer import ir

# the result has the operands' broadcast shape and is complex if one of them is
ELEMENTWISE = {
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
    "cbrt", "square", "reciprocal", "logistic", "rsqrt", "erf", "conj", "negative", "positive",
    "identity",
    "add", "subtract", "multiply", "true_divide", "power", "maximum", "minimum", "arctan2",
    "hypot", "logaddexp", "remainder", "where", "clip", "rem", "clamp", "lax_div",
    "zeros_like", "ones_like", "empty_like",
}
# ops whose result is one array, whatever their operands (a row of it is an array's row)
ONE_ARRAY = (ELEMENTWISE - {"identity", "where"}) | {
    "stack", "concatenate", "matmul", "dot", "outer", "reshape",
    "transpose", "sum", "mean", "prod", "max", "min", "cumsum", "cumprod"}
# ops that, on Python numbers only, give a Python number (written as Python operators)
_ARITHMETIC = {"add", "subtract", "multiply", "true_divide", "power", "negative", "positive",
               "identity", "floor_divide", "remainder"}
_SHAPE_QUERY = re.compile(r"^[\w.]*(\.shape\[[^\]]*\]|\.ndim|\.size|len\([\w.]*\))$")
_MAX_ALTERNATIVES = 8
_NUMBER = frozenset({frozenset()})     # the alternatives of a Python number (no symbol)
# reductions: with keepdims=True (or no axis) the result broadcasts to the operand's shape
_REDUCTIONS = {"sum", "mean", "max", "min", "prod", "var", "std"}
_MODULES = ("snp", "np", "numpy", "math", "lax")     # as the canonical form spells them
_MODULE_NUMBERS = ("pi", "e", "inf", "nan", "euler_gamma")
UNKNOWN = None          # a name whose shape the analysis does not know


def is_python_number(src):
    """A real Python number written as source: a literal or a shape query (x.shape[0])."""
    s = src.replace(" ", "")
    if _SHAPE_QUERY.match(s):
        return True
    try:
        float(s)
    except ValueError:
        return False
    return True


def operands_of(op):
    """An elementwise op's operands, with what it keeps as source text (where's condition,
    clip's bounds), which broadcast too."""
    return list(op.operands.values()) + [ir.Expr(v) for v in op.statics.values()
                                         if isinstance(v, str)]


def _copied(plain):
    """The right-hand side of a Plain statement `name = <one operand>` (else None)."""
    m = re.fullmatch(r"\s*\w+\s*=\s*([\w.\[\]\-+ ]+?)\s*", plain.code)
    return m.group(1) if m else None


def _assigned(plain):
    """The right-hand side (an ast expression) of a Plain statement `name = <expr>` (else
    None)."""
    return _assigned_in(plain.code)


# (each statement's text parsed once: the fixpoint reads every definition on each round, and
# deep compositions write the same lines again; the trees are only read, never changed)
@functools.lru_cache(maxsize=4096)
def _assigned_in(code):
    try:
        tree = ast.parse(code.strip())
    except SyntaxError:
        return None
    st = tree.body[0] if len(tree.body) == 1 else None
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
        return st.value
    return None


@functools.lru_cache(maxsize=4096)
def _expression(src):
    """The ast expression of an operand's source text (None: not one); read only."""
    try:
        return ast.parse(src.strip(), mode="eval").body
    except SyntaxError:
        return None


_NUMBER_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)


def _number_arithmetic(node, static):
    """Whether an ast expression is a real Python number for every value of the names of
    `static` (real Python numbers): literals, shape queries and those names under + - * / //
    % and unary signs (not ** : a negative number to a fractional power is complex)."""
    if node is None:
        return False
    if isinstance(node, ast.Name):
        return node.id in static
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float))
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd)) and _number_arithmetic(node.operand,
                                                                               static)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _NUMBER_BINOPS) and _number_arithmetic(node.left, static) \
            and _number_arithmetic(node.right, static)
    return bool(_SHAPE_QUERY.match(ast.unparse(node).replace(" ", "")))


class Flow:
    """What an analysis of values by symbols shares (this module's of shapes, and
    transformer/dtype_flow.py's of dtypes): each name's definitions, the names that are Python
    numbers, and the fixpoint of each name's alternatives over its definitions (`_def_alts`,
    the subclass's). `shared`: another analysis of the same function, whose definitions and
    Python numbers are taken as they are (read only)."""

    def __init__(self, fn, shared=None):
        self.local = set()      # the symbols minted inside a loop
        if shared is not None:
            self.defs, self.static = shared.defs, shared.static
        else:
            self.defs = {}      # name -> [(definition, loop depth)]
            for p in fn.params:
                self.defs.setdefault(p, []).append(("param", 0))
            self._collect(fn.body, 0)
            self.static = self._python_numbers()
        self.alts = {}          # name -> frozenset of alternatives (frozensets of symbols)
        self.active = {}        # the same, without the Python-number assignments
        self._bounds = {}       # name -> alternatives bounding its shape (see `bound`)
        self._reads = None      # while _solve works a name out: the names it reads
        self._solve()

    # --- definitions ---------------------------------------------------------------------------
    def _collect(self, stmts, depth):
        for s in stmts:
            if isinstance(s, ir.Op):
                for k, t in enumerate(s.targets):
                    self.defs.setdefault(t, []).append(((s, k), depth))
            elif isinstance(s, ir.Plain):
                for t in s.defines:
                    self.defs.setdefault(t, []).append((("plain", s), depth))
            elif isinstance(s, ir.If):
                self._collect(s.body, depth)
                self._collect(s.orelse, depth)
            elif isinstance(s, ir.For):
                self.defs.setdefault(s.target, []).append((("for", s), depth + 1))
                self._collect(s.body, depth + 1)
            elif isinstance(s, ir.While):
                self._collect(s.body, depth + 1)

    def _python_numbers(self):
        """Names every assignment of which gives a real Python number (greatest fixpoint:
        `n_1 = n_2` in a loop whose other assignments are numbers)."""
        static = set(self.defs)
        changed = True
        while changed:
            changed = False
            for name in list(static):
                if not all(self._static_def(d, static) for d, _ in self.defs[name]):
                    static.discard(name)
                    changed = True
        return static

    def _static_def(self, d, static):
        if d == "param":
            return False
        if d[0] == "plain":     # `i_1 = i`, `i_2 = i_1 + 1` (a counter the normaliser keeps)
            return _number_arithmetic(_assigned(d[1]), static)
        if d[0] == "for":       # `for i in i_range` where every i_range is a range(...)
            return self._is_range(d[1].iterable, set())
        op, _ = d
        return op.op in _ARITHMETIC and len(op.targets) == 1 and all(
            self._static_operand(o, static) for o in op.operands.values())

    def _is_range(self, name, seen):
        """Whether every assignment of `name` is a range(...), or list(...) or reversed(...)
        of such a name (a derivative's `items = list(reversed(i_range))`)."""
        its = self.defs.get(name, [])
        if not its or name in seen:
            return False
        seen.add(name)
        for d, _ in its:
            if d == "param" or d[0] != "plain":
                return False
            m = re.fullmatch(r"\s*\w+\s*=\s*(range\(.*\)|list\((?:reversed\()?(\w+)\)?\)|"
                             r"reversed\((\w+)\))\s*", d[1].code)
            if not m:
                return False
            inner = m.group(2) or m.group(3)
            if inner and not self._is_range(inner, seen):
                return False
        return True

    @staticmethod
    def _static_operand(o, static):
        if isinstance(o, ir.Var):
            return o.name in static
        return isinstance(o, ir.Expr) and is_python_number(o.src)

    # --- sets --------------------------------------------------------------------------------
    def _solve(self):
        """Rounds over the definitions in order until none changes (20 at most). A name is
        worked out again only when a name its last working-out read has changed since (its
        value would be the same otherwise): the rounds, and what each finds, are those of
        working out every name on every round, without the cost (issue 19)."""
        readers = {}            # name -> the names whose last working-out read it
        dirty = set(self.defs) - self.static
        for _ in range(20):
            changed = False
            for name, defs in self.defs.items():
                if name not in dirty:
                    continue
                dirty.discard(name)
                self._reads = set()
                new = self._alternatives(name, defs)
                for read in self._reads:
                    readers.setdefault(read, set()).add(name)
                self._reads = None
                if (self.alts.get(name, frozenset()), self.active.get(name, frozenset())) != new:
                    self.alts[name], self.active[name] = new
                    changed = True
                    dirty |= readers.get(name, set())
            if not changed:
                return
        for name in self.defs:          # no fixpoint: nothing is known
            self.alts[name] = self.active[name] = UNKNOWN

    def _alternatives(self, name, defs):
        """(alts, active) of `name` from its definitions `defs`, as the names read now stand."""
        alts, active = set(), set()
        unknown = False
        for d, depth in defs:
            got = self._def_alts(name, d, depth)
            if got is UNKNOWN:
                unknown = True
                break
            alts |= got
            if not self._static_def(d, self.static):
                active |= got
        if not unknown and len(defs) > 1 and any(not a.isdisjoint(self.local) for a in alts):
            unknown = True      # one iteration's value, assigned in several places
        if unknown or len(alts) > _MAX_ALTERNATIVES:
            return (UNKNOWN, UNKNOWN)
        return (frozenset(alts), frozenset(active))

    def _symbol(self, key, depth):
        if depth:
            self.local.add(key)
        return frozenset({frozenset({key})})

    def _def_alts(self, name, d, depth):
        if d == "param":
            return self._symbol(name, 0)
        if d[0] == "plain" and _copied(d[1]) is not None:     # `acc_1 = acc`
            return self.of(ir.Expr(_copied(d[1])), f"expr@{id(d[1])}", depth)
        if d[0] == "plain" and _assigned(d[1]) is not None:   # `m = snp.ones_like(x) * 3.0`
            got = self._expr(_assigned(d[1]))
            if got is not UNKNOWN and got:
                return got
        if d[0] in ("plain", "for"):
            return self._symbol(f"{name}@{id(d[1])}", depth)
        return self._op_alts(name, d[0], depth)      # (the subclass's: an op's result)

    def of(self, o, key=None, depth=0):
        """The alternatives of an operand (UNKNOWN, or a frozenset of symbol sets; empty while
        a loop's fixpoint has not reached it). An expression the analysis does not follow is
        the symbol `key` (of its place in the function), or UNKNOWN without one."""
        if isinstance(o, ir.Expr) and o.src.strip().isidentifier() and o.src.strip() not in (
                "None", "True", "False"):
            o = ir.Var(o.src.strip())       # a name the transform does not track (`i`)
        if isinstance(o, ir.Var):
            if o.name in self.static:
                return frozenset({frozenset()})
            if o.name not in self.defs:     # a global or a closure's value: one shape, dtype
                return frozenset({frozenset({o.name})})
            if self._reads is not None:
                self._reads.add(o.name)
            return self.alts.get(o.name, frozenset())
        if isinstance(o, ir.Expr) and (is_python_number(o.src) or o.src.strip() == "None"):
            return frozenset({frozenset()})
        if isinstance(o, ir.Expr):          # an expression kept inline: `(0.5 * dt * k)`
            node = _expression(o.src)
            got = UNKNOWN if node is None else self._expr(node)
            if got is not UNKNOWN:
                return got
        return UNKNOWN if key is None else self._symbol(key, depth)


class Shapes(Flow):
    """The analysis of one ir.Function (see the module docstring)."""

    def _op_alts(self, name, op, depth):
        if op.op not in ELEMENTWISE or len(op.targets) != 1:
            return self._symbol(f"{name}@{id(op)}", depth)
        parts = [self.of(o, f"expr@{id(op)}.{k}", depth) for k, o in enumerate(operands_of(op))]
        if any(p is UNKNOWN for p in parts):
            return self._symbol(f"{name}@{id(op)}", depth)
        return frozenset(frozenset().union(*combo) for combo in itertools.product(*parts))

    def _expr(self, node):
        """The alternatives of an expression of names, real numbers, arithmetic and NumPy's
        elementwise functions (UNKNOWN for anything else): the broadcast of its parts, as an
        op's. A real number's elementwise function (`snp.log(2 * snp.pi)`) is a real scalar:
        it neither widens a shape nor makes a result complex, as a Python number."""
        number = frozenset({frozenset()})
        if isinstance(node, ast.Constant):
            return number if isinstance(node.value, (int, float)) else UNKNOWN
        if isinstance(node, ast.Name):
            return self.of(ir.Var(node.id))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in _MODULES and node.value.id not in self.defs and \
                node.attr in _MODULE_NUMBERS:
            return number                   # snp.pi
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self._expr(node.operand)
        parts = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, _NUMBER_BINOPS + (ast.Pow,)):
            parts = [self._expr(node.left), self._expr(node.right)]
            if isinstance(node.op, ast.Pow) and parts == [number, number]:
                return UNKNOWN              # (-1) ** 0.5 is complex
        elif isinstance(node, ast.Call) and not node.keywords and \
                not any(isinstance(a, ast.Starred) for a in node.args):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("float", "int") and f.id not in self.defs:
                return number               # float(q.shape[-1]): a Python number, whatever
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                    f.value.id in _MODULES and f.value.id not in self.defs and \
                    f.attr in ELEMENTWISE - {"identity", "lax_div"} and node.args and \
                    (f.attr != "where" or len(node.args) == 3):     # (where(c): indices)
                parts = [self._expr(a) for a in node.args]
        if parts is None:
            return number if is_python_number(ast.unparse(node)) else UNKNOWN
        if any(p is UNKNOWN or not p for p in parts):
            return UNKNOWN
        out = frozenset(frozenset().union(*combo) for combo in itertools.product(*parts))
        return out if len(out) <= _MAX_ALTERNATIVES else UNKNOWN

    def bound(self, o):
        """Alternatives that bound an operand's shape from above (its shape broadcasts to
        theirs), as `of` for most; tighter for a reduction that keeps its operand's rank
        (keepdims=True) or leaves a scalar (no axis), and for elementwise ops of those:
        `snp.log(snp.sum(e, axis=1, keepdims=True))` is bounded by e's. (Its own shape is
        still its own symbol: a cotangent reaching it is summed down.)"""
        if isinstance(o, ir.Expr) and o.src.strip().isidentifier():
            o = ir.Var(o.src.strip())
        if not isinstance(o, ir.Var):
            return self.of(o)
        if o.name not in self._bounds:
            self._bounds[o.name] = self.of(o)       # (while it is worked out: a cycle)
            self._bounds[o.name] = self._bound_of_name(o)
        return self._bounds[o.name]

    def _bound_of_name(self, var):
        defs = self.defs.get(var.name, [])
        if var.name in self.static or len(defs) != 1 or defs[0][0] == "param" or \
                isinstance(defs[0][0][0], str):
            return self.of(var)
        op = defs[0][0][0]
        if len(op.targets) != 1:
            return self.of(var)
        if op.op in _REDUCTIONS and set(op.operands) == {"a"}:  # (its statics read only
            st = {k: v.strip() if isinstance(v, str) else v    # then: issue 19)
                  for k, v in op.statics.items()}
            if set(st) <= {"axis", "keepdims", "ddof"} and \
                    (st.get("keepdims") == "True" or st.get("axis", "None") == "None"):
                got = self.bound(op.operands["a"])
                return self.of(var) if got is UNKNOWN or not got else got
        if op.op not in ELEMENTWISE:
            return self.of(var)
        parts = [self.bound(x) for x in operands_of(op)]
        if any(p is UNKNOWN or not p for p in parts):
            return self.of(var)
        out = frozenset(frozenset().union(*combo) for combo in itertools.product(*parts))
        return out if len(out) <= _MAX_ALTERNATIVES else self.of(var)

    def _is_number(self, o):
        return self.of(o) == _NUMBER

    # --- queries -----------------------------------------------------------------------------
    def is_python_number(self, name):
        return name in self.static

    def parameter_like(self, name):
        """A parameter (assigned nowhere in the function) of provably the same shape and kind
        as `name`: the one symbol of its one alternative (`acc_1` of `acc = zeros_like(x)`,
        `acc = acc + sin(x * i)` has x's); else None."""
        alts = self.alts.get(name) if name in self.defs else None
        if not alts or len(alts) != 1:
            return None
        symbols, = alts
        if len(symbols) != 1:
            return None
        p, = symbols
        return p if self.defs.get(p) == [("param", 0)] else None

    def rows_alike(self, name):
        """Whether every value `name` takes is a row of one array read at a Python integer
        (`w = ws[i]` of a loop over ws's rows, ws the result of an op that gives one array):
        every iteration's value has the same shape and dtype, so a zero shaped like this
        iteration's stands for the one before's (ad/reverse.py reverse_for: no stack of them)."""
        defs = self.defs.get(name, [])
        if len(defs) != 1 or defs[0][0] == "param" or not isinstance(defs[0][0][0], ir.Op):
            return False
        op = defs[0][0][0]
        a, idx = op.operands.get("a"), op.statics.get("idx", "")
        return op.op == "getitem" and isinstance(a, ir.Var) and self._one_array(a.name, set()) \
            and (idx.isdigit() or idx.isidentifier() and idx in self.static)

    def _one_array(self, name, seen):
        """Whether every assignment of `name` is an op giving one array (a copy of such a name
        too), outside every loop (one array for the whole function: a loop inside another one
        meets rows of the same shape on each of its runs); a parameter may be a list of
        differently shaped arrays: no."""
        defs = self.defs.get(name, [])
        if not defs or name in seen:
            return False
        seen.add(name)
        for d, depth in defs:
            if d == "param" or depth or not isinstance(d[0], ir.Op) or len(d[0].targets) != 1:
                return False
            op = d[0]
            if op.op == "identity":
                x = op.operands.get("x")
                if not (isinstance(x, ir.Var) and self._one_array(x.name, seen)):
                    return False
            elif op.op not in ONE_ARRAY:
                return False
        return True

    def same_shape(self, name, other):
        """Whether the values `name` and `other` provably have the same shape: each one
        alternative, `other`'s symbols among `name`'s (its shape broadcasts to name's) and the
        symbols bounding name's shape (`bound`) among `other`'s (name's broadcasts to other's):
        softmax's `logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))` and logits
        (z = logits - snp.max(logits, ...)): {logits, max, sum}, bounded by {logits}."""
        mine, theirs = self.alts.get(name), self.alts.get(other)
        if name not in self.defs or other not in self.defs or not mine or not theirs or \
                len(mine) != 1 or len(theirs) != 1:
            return False
        bound = self.bound(ir.Var(name))
        if not bound or len(bound) != 1:
            return False
        (a,), (w,), (b,) = mine, theirs, bound
        return b <= w <= a

    def real_scalars(self, fn, result):
        """Names that provably hold real scalars when `result` does (grad's output: grad_seed
        checks it is a real scalar before the reverse pass runs): the operands of an
        elementwise op whose result is one (broadcasting never shrinks a shape, and a complex
        operand makes the result complex), followed through names assigned once, each op at
        the top level (one value; in a loop, an iteration's shape may differ)."""
        top = {s.targets[0]: s for s in fn.body if isinstance(s, ir.Op) and len(s.targets) == 1}
        out, todo = set(), [result]
        while todo:
            n = todo.pop()
            defs = self.defs.get(n, ())
            if n in out or len(defs) != 1 or defs[0][0] != "param" and n not in top:
                continue        # (assigned twice, or in a loop or branch: not one value)
            out.add(n)
            op = top.get(n)
            if op is not None and op.op in ELEMENTWISE:
                todo.extend(o.name for o in operands_of(op) if isinstance(o, ir.Var))
        return frozenset(out)

    def needs_unbroadcast(self, operands, name, cotangent=True, dtype=False):
        """Whether the cotangent of an elementwise op of `operands` (ir operands, the
        conditions included) may differ in shape or kind from its operand variable `name`.
        cotangent=False: whether the value `name` itself may have a smaller shape than the
        result (the alternatives from Python numbers count: a carried `acc = 0.0`). dtype:
        or a narrower dtype (another operand that is an array may promote it: float16 x +
        float32 c is float32)."""
        if name in self.static:
            return not cotangent and any(not self._is_number(o) for o in operands)
        others = [o for o in operands if not (isinstance(o, ir.Var) and o.name == name)]
        parts = [self.bound(o) for o in others]
        if all(p == _NUMBER for p in parts):
            return False        # only Python numbers (or the operand itself) besides it
        if dtype:
            return True
        table = self.active if cotangent else self.alts
        mine = table.get(name, frozenset()) if name in self.defs else \
            frozenset({frozenset({name})})
        if mine is UNKNOWN or any(p is UNKNOWN or not p for p in parts) or not mine:
            return True
        return any(not frozenset().union(*combo) <= m
                   for m in mine for combo in itertools.product(*parts))

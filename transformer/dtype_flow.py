"""Static dtype relations on the canonical form, beside transformer/shapes.py's shapes: which
values provably have the same dtype as which, where that dtype is inexact (float or complex).

Each value's dtype is described by one *symbol*: a parameter, a global, or the result of an op
whose dtype the analysis does not follow (a cast, a call, a promotion of two symbols), each of
one dtype. A value computed from one symbol's values and real Python numbers by ops that keep
an inexact dtype has that symbol: elementwise math (`sin`, `exp`, `-x`), `ones_like` and
`zeros_like`, arithmetic, `where`'s and `clip`'s branches, reductions and reshapes of an array.
A real Python number (a literal, a shape query, a counter of those; transformer/shapes.py's
Python numbers) is weak: float16 x * 3.0 is float16, complex64 z + 1 complex64; it is the empty
set, and `snp.ones_like(x) * 3.0` has x's symbol. Two symbols meeting (float16 x + float32 c)
give the op's own symbol: its dtype is one, but known equal to no other.

The claim `dtype(v) == dtype(S)` holds where S's dtype is inexact; an integer S is no claim
(sin of an int32 x is float32), and needs none: an integer value's tangent is zeros, which no
wrapper casts (ad/jvp_helpers.py broadcast_like casts float to wider float, real to complex).

The question is `keeps_dtype(op, name)`: whether the result of the elementwise op has the dtype
of its operand `name`, so that `name`'s lone tangent is already the result's (ad/forward.py
writes `broadcast_like(x_dot, ans)` only where shape or dtype may differ). When unsure: no.

Names assigned in several places, symbols minted inside a loop and the fixpoint are
transformer/shapes.py's (`Flow`): the definitions and Python numbers are the shape analysis's.
"""
import ast
import itertools

from secant.transformer import ir
from secant.transformer.ops import OPS
from secant.transformer.shapes import _MODULE_NUMBERS, _NUMBER_BINOPS, UNKNOWN, Flow, \
    is_python_number

# one array operand; for an inexact operand the result has its dtype (tests/test_dtype_flow.py
# checks each on float16, bfloat16 and complex64 arrays)
UNARY = {
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
    "cbrt", "square", "reciprocal", "logistic", "rsqrt", "erf", "conj", "negative", "positive",
    "identity", "zeros_like", "ones_like", "empty_like",
    # of an array (a list parameter's items are promoted first, as by any of these)
    "sum", "mean", "max", "min", "prod", "cumsum", "cumprod", "reshape", "ravel", "transpose",
    "swapaxes", "expand_dims", "squeeze", "broadcast_to",
}
# array operands promoted together (a condition not: `where`'s)
PROMOTING = {"add", "subtract", "multiply", "true_divide", "power", "maximum", "minimum",
             "arctan2", "hypot", "logaddexp", "remainder", "where", "clip", "rem", "clamp",
             "lax_div", "matmul", "dot", "outer"}
# the functions of an expression kept as text (`m = snp.ones_like(x) * 3.0`), by module: of
# a real Python number, NumPy's give a strong float64 scalar (it would promote float16 x)
_ARRAY_MODULES = ("snp", "np", "numpy", "lax")
_NUMBER_MODULES = ("snp", "lax", "math")
_EXPR_FUNCTIONS = {n: 1 for n in UNARY - {"identity", "reshape", "swapaxes", "expand_dims",
                                           "broadcast_to"}} | {
    "add": 2, "subtract": 2, "multiply": 2, "true_divide": 2, "power": 2, "maximum": 2,
    "minimum": 2, "arctan2": 2, "hypot": 2, "logaddexp": 2, "remainder": 2, "matmul": 2,
    "dot": 2, "outer": 2}
_NUMBER = frozenset({frozenset()})


class Dtypes(Flow):
    """The analysis of one ir.Function, sharing `shapes`'s definitions (module docstring)."""

    def __init__(self, fn, shapes):
        super().__init__(fn, shared=shapes)

    def _op_alts(self, name, op, depth):
        own = f"{name}@{id(op)}"
        operands = self.promoted(op)
        if operands is None or len(op.targets) != 1:
            return self._symbol(own, depth)
        parts = [self.of(o, f"expr@{id(op)}.{k}", depth) for k, o in enumerate(operands)]
        if any(p is UNKNOWN for p in parts):
            return self._symbol(own, depth)
        return self._joined(parts, own, depth)

    def _joined(self, parts, own, depth):
        """The alternatives of a result whose dtype is its operands' promoted: one symbol where
        every operand has it or is a number; where two symbols meet, the result's own."""
        out = set()
        for combo in itertools.product(*parts):
            symbols = frozenset().union(*combo)
            if not symbols:                 # (a function of numbers only: an array, strong
                return self._symbol(own, depth)      # or weak as the function makes it)
            out |= {symbols} if len(symbols) == 1 else self._symbol(own, depth)
        return frozenset(out)

    @staticmethod
    def promoted(op):
        """The operands whose dtypes an op's result takes, promoted together (None: the op's
        result is its own: a cast, a call, a product of structure, an op given a dtype)."""
        if "dtype" in op.statics or "out" in op.statics:
            return None
        spec = OPS.get(op.op)
        if spec is None or op.op not in UNARY | PROMOTING or spec.sequence:
            return None
        out = []
        for p in spec.arrays:
            if p in op.operands:
                out.append(op.operands[p])
            elif isinstance(op.statics.get(p), str) and op.statics[p].strip() != "None":
                out.append(ir.Expr(op.statics[p]))     # (clip's bounds written inline)
        if any(isinstance(o, ir.Seq) for o in out) or not out:
            return None
        return out

    def _expr(self, node):
        """The alternatives of an expression of names, real numbers, arithmetic and the
        functions of _EXPR_FUNCTIONS (UNKNOWN for anything else, and where two symbols meet)."""
        if isinstance(node, ast.Constant):      # (True: a bool; 1j: complex)
            return _NUMBER if type(node.value) in (int, float) else UNKNOWN
        if isinstance(node, ast.Name):
            return self.of(ir.Var(node.id))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in _NUMBER_MODULES + ("np", "numpy") and \
                node.value.id not in self.defs and node.attr in _MODULE_NUMBERS:
            return _NUMBER                      # snp.pi, np.pi: Python floats
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self._expr(node.operand)
        parts = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, _NUMBER_BINOPS + (ast.Pow,)):
            parts = [self._expr(node.left), self._expr(node.right)]
            if isinstance(node.op, ast.Pow) and parts == [_NUMBER, _NUMBER]:
                return UNKNOWN              # (-1) ** 0.5 is complex
        elif isinstance(node, ast.Call) and not node.keywords and \
                not any(isinstance(a, ast.Starred) for a in node.args):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("float", "int") and f.id not in self.defs:
                return _NUMBER              # float(q.shape[-1]): a Python number
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                    f.value.id not in self.defs and \
                    _EXPR_FUNCTIONS.get(f.attr) == len(node.args):
                parts = [self._expr(a) for a in node.args]
                if parts and all(p == _NUMBER for p in parts):
                    return _NUMBER if f.value.id in _NUMBER_MODULES else UNKNOWN
                if f.value.id not in _ARRAY_MODULES:
                    return UNKNOWN
        if parts is None:
            return _NUMBER if is_python_number(ast.unparse(node)) else UNKNOWN
        if any(p is UNKNOWN or not p for p in parts):
            return UNKNOWN
        out = frozenset(frozenset().union(*combo) for combo in itertools.product(*parts))
        return UNKNOWN if any(len(a) > 1 for a in out) else out

    # --- queries -----------------------------------------------------------------------------
    def symbol(self, name):
        """The one symbol whose dtype `name` provably has (where inexact), else None."""
        alts = self.alts.get(name) if name in self.defs else frozenset({frozenset({name})})
        if not alts or len(alts) != 1:
            return None
        symbols, = alts
        return next(iter(symbols)) if len(symbols) == 1 else None

    def keeps_dtype(self, op, name, operands=None):
        """Whether the result of `op` provably has the dtype of its operand variable `name`
        where that is inexact: `name` has one symbol and every other operand whose dtype the
        result takes has it too or is a real Python number. `operands`: those operands, for an
        op whose result is their promotion that the table does not name (`sum([a, b])`)."""
        mine = self.symbol(name)
        operands = self.promoted(op) if operands is None else operands
        if mine is None or operands is None or ir.Var(name) not in operands:
            return False
        for o in operands:
            if isinstance(o, ir.Var) and o.name == name:
                continue
            got = self.of(o)
            if got is UNKNOWN or not got or any(a - {mine} for a in got):
                return False
        return True

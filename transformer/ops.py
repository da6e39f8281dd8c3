"""The source-level vocabulary: every call or operator the transforms understand.

Each op has a signature (to bind the user's arguments), the names of its array operands, how
generated code writes it (always through secant's API, whatever the user wrote), and the objects
that resolve to it (numpy's, secant.numpy's, math's functions, builtins, array methods).
ad/ and batching/ key their rule tables by these names.
"""
import inspect
import math

import numpy as np


class OpSpec:
    def __init__(self, name, signature, arrays, code=None, differentiable=True, sequence=None):
        self.name = name
        self.signature = inspect.signature(eval(f"lambda {signature}: None"))  # noqa: S307
        self.params = list(self.signature.parameters)
        self.arrays = tuple(arrays)          # operand parameters (differentiable inputs)
        self.sequence = sequence             # a parameter holding a list of arrays, if any
        self.code = code                     # format string; None: snp.<name>(...)
        self.differentiable = differentiable

    def render(self, operands, statics):
        """Source of a call: operands maps array params to source, statics param -> source."""
        if self.code is not None:
            return self.code.format(**operands, **statics,
                                    static=_static_kwargs(statics, self.code))
        parts = []
        for p in self.params:
            if p in operands:
                parts.append(operands[p])
            elif p in statics:
                parts.append(f"{p}={statics[p]}")
        return f"snp.{self.name}({', '.join(parts)})"


def _static_kwargs(statics, code):
    used = {k for k in statics if "{" + k + "}" in code}
    return "".join(f", {k}={v}" for k, v in statics.items() if k not in used)


OPS = {}


def op(name, signature="x", arrays=("x",), **kw):
    OPS[name] = OpSpec(name, signature, arrays, **kw)


# --- elementwise, one array operand ---------------------------------------------------------
for _n in ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
           "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
           "cbrt", "square", "reciprocal", "absolute", "logistic", "erf", "rsqrt"):
    op(_n)
op("negative", code="-{x}")
op("positive", code="{x}")
op("identity", code="{x}")
for _n in ("sign", "floor", "ceil", "rint", "trunc", "isnan", "isfinite", "isinf", "signbit"):
    op(_n, differentiable=False)

# --- elementwise, two array operands (operators keep operator syntax) --------------------------
BINARY_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/",
                    "power": "**", "matmul": "@"}
for _n, _sym in BINARY_OPERATORS.items():
    op(_n, "x, y", ("x", "y"), code="{x} " + _sym + " {y}")
for _n in ("maximum", "minimum", "arctan2", "hypot", "logaddexp"):
    op(_n, "x, y", ("x", "y"))
op("floor_divide", "x, y", ("x", "y"), code="{x} // {y}", differentiable=False)
op("remainder", "x, y", ("x", "y"), code="{x} % {y}")
op("where", "condition, x, y", ("x", "y"))
op("clip", "a, a_min=None, a_max=None", ("a",))

# --- reductions ------------------------------------------------------------------------------
for _n in ("sum", "mean", "max", "min", "prod"):
    op(_n, "a, axis=None, keepdims=False", ("a",))
for _n in ("var", "std"):
    op(_n, "a, axis=None, ddof=0, keepdims=False", ("a",))
op("argmax", "a, axis=None, keepdims=None", ("a",), differentiable=False)
op("argmin", "a, axis=None, keepdims=None", ("a",), differentiable=False)
op("cumsum", "a, axis=None", ("a",))

# --- products ----------------------------------------------------------------------------------
op("dot", "a, b", ("a", "b"))
op("outer", "a, b", ("a", "b"))

# --- shapes ----------------------------------------------------------------------------------
op("reshape", "a, newshape", ("a",), code="{a}.reshape({newshape})")
op("ravel", "a", ("a",))
op("transpose", "a, axes=None", ("a",))
op("swapaxes", "a, axis1, axis2", ("a",))
op("expand_dims", "a, axis", ("a",))
op("squeeze", "a, axis=None", ("a",))
op("broadcast_to", "array, shape", ("array",))
op("concatenate", "arrays, axis=0", (), sequence="arrays")
op("stack", "arrays, axis=0", (), sequence="arrays")
op("astype", "x, dtype", ("x",), code="{x}.astype({dtype})")

# --- indexing and structure ---------------------------------------------------------------------
op("getitem", "a, idx", ("a",), code="{a}[{idx}]")
op("at_set", "a, idx, values", ("a", "values"), code="{a}.at[{idx}].set({values})")
op("at_add", "a, idx, values", ("a", "values"), code="{a}.at[{idx}].add({values})")
op("field", "tree, key", ("tree",), code="{tree}[{key}]")
op("attribute", "tree, name", ("tree",), code="{tree}.{name}")
op("add_n", "arrays", (), code="sum({arrays})", sequence="arrays")
op("stop_gradient", differentiable=False, code="lax.stop_gradient({x})")

# --- ones and zeros are constants whatever their argument -----------------------------------------
for _n in ("zeros_like", "ones_like", "empty_like"):
    op(_n, differentiable=False)

# a call of another user function (rendered by the transform, which knows its generated name)
op("call", "*args", (), differentiable=True)

# --- resolution: which Python objects mean which op ---------------------------------------------
NUMPY_ALIASES = {"absolute": ("abs", "absolute", "fabs"), "true_divide": ("true_divide", "divide"),
                 "max": ("max", "amax"), "min": ("min", "amin"), "arcsin": ("arcsin", "asin"),
                 "arccos": ("arccos", "acos"), "arctan": ("arctan", "atan"),
                 "arctan2": ("arctan2", "atan2"), "arcsinh": ("arcsinh", "asinh"),
                 "arccosh": ("arccosh", "acosh"), "arctanh": ("arctanh", "atanh"),
                 "rint": ("rint", "round", "around")}
MATH_NAMES = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos",
              "atan": "arctan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "exp": "exp",
              "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
              "log1p": "log1p", "sqrt": "sqrt", "fabs": "absolute", "atan2": "arctan2",
              "hypot": "hypot", "erf": "erf", "floor": "floor", "ceil": "ceil", "trunc": "trunc"}
BUILTINS = {abs: "absolute", sum: "add_n", max: "maximum", min: "minimum"}
# methods of arrays -> op (the array is the first operand)
METHODS = {"sum": "sum", "mean": "mean", "max": "max", "min": "min", "prod": "prod",
           "var": "var", "std": "std", "argmax": "argmax", "argmin": "argmin",
           "cumsum": "cumsum", "dot": "dot", "reshape": "reshape", "ravel": "ravel",
           "flatten": "ravel", "transpose": "transpose", "swapaxes": "swapaxes",
           "squeeze": "squeeze", "astype": "astype", "clip": "clip"}
STATIC_ATTRIBUTES = {"shape", "ndim", "dtype", "size", "itemsize", "nbytes"}
BINOPS = {"Add": "add", "Sub": "subtract", "Mult": "multiply", "Div": "true_divide",
          "Pow": "power", "MatMult": "matmul", "FloorDiv": "floor_divide", "Mod": "remainder"}


def _resolution_table():
    from secant import lax
    import secant.numpy as snp
    table = {}
    for name in OPS:
        for alias in NUMPY_ALIASES.get(name, (name,)):
            for module in (np, snp):
                obj = getattr(module, alias, None)
                if obj is not None and callable(obj):
                    table.setdefault(id(obj), (obj, name))
    for mname, name in MATH_NAMES.items():
        obj = getattr(math, mname)
        table[id(obj)] = (obj, name)
    for name in ("logistic", "erf", "rsqrt", "stop_gradient"):
        obj = getattr(lax, name, None)
        if obj is not None:
            table[id(obj)] = (obj, name)
    for obj, name in BUILTINS.items():
        table[id(obj)] = (obj, name)
    return table


_TABLE = None


def op_for(obj):
    """The op name a Python object stands for, or None."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _resolution_table()
    hit = _TABLE.get(id(obj))
    return hit[1] if hit is not None and hit[0] is obj else None

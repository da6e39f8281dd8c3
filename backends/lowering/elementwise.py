"""Lowerings of the elementwise primitives. Binary ones broadcast NumPy-style, so operands are
broadcast to the result's shape first."""
import numpy as np

from secant.backends.emitter import tensor_type, ttype
from secant.backends.lowering.common import LOWERINGS, compare_type, lowering


# --- elementwise ------------------------------------------------------------------------------
def _unary(op):
    def lower(b, avals, out, x, **params):
        # generic syntax: chlo's pretty form differs from stablehlo's, this one suits both
        return b.op(f'"{op}"({x}) : ({ttype(avals[0])}) -> {ttype(out)}')
    return lower


UNARY_OPS = {
    "neg": "stablehlo.negate", "abs": "stablehlo.abs", "sign": "stablehlo.sign",
    "floor": "stablehlo.floor", "ceil": "stablehlo.ceil", "sqrt": "stablehlo.sqrt",
    "rsqrt": "stablehlo.rsqrt", "cbrt": "stablehlo.cbrt", "exp": "stablehlo.exponential",
    "log": "stablehlo.log", "log1p": "stablehlo.log_plus_one",
    "expm1": "stablehlo.exponential_minus_one", "sin": "stablehlo.sine", "cos": "stablehlo.cosine",
    "tan": "stablehlo.tan", "tanh": "stablehlo.tanh", "logistic": "stablehlo.logistic",
    "is_finite": "stablehlo.is_finite", "not": "stablehlo.not",
    "asin": "chlo.asin", "acos": "chlo.acos", "atan": "chlo.atan", "sinh": "chlo.sinh",
    "cosh": "chlo.cosh", "asinh": "chlo.asinh", "acosh": "chlo.acosh", "atanh": "chlo.atanh",
    "erf": "chlo.erf", "erf_inv": "chlo.erf_inv", "lgamma": "chlo.lgamma",
    "digamma": "chlo.digamma",
}
for _name, _op in UNARY_OPS.items():
    LOWERINGS[_name] = _unary(_op)


@lowering("round")
def _round(b, avals, out, x, rounding_method=0):
    op = "stablehlo.round_nearest_afz" if rounding_method == 0 else "stablehlo.round_nearest_even"
    return b.op(f"{op} {x} : {ttype(out)}")


@lowering("exp2")
def _exp2(b, avals, out, x):
    ln2 = b.constant(np.log(2.0), out.dtype, out.shape)
    t = ttype(out)
    y = b.op(f"stablehlo.multiply {x}, {ln2} : {t}")
    return b.op(f"stablehlo.exponential {y} : {t}")


def _broadcast_operands(b, avals, names, shape):
    return [b.broadcast_to(n, a, shape) for n, a in zip(names, avals)]


def _binary(op):
    def lower(b, avals, out, x, y, **params):
        x, y = _broadcast_operands(b, avals, (x, y), out.shape)
        t = ttype(out)
        return b.op(f'"{op}"({x}, {y}) : ({t}, {t}) -> {t}' if op.startswith("chlo.")
                    else f"{op} {x}, {y} : {t}")
    return lower


BINARY_OPS = {
    "add": "stablehlo.add", "sub": "stablehlo.subtract", "mul": "stablehlo.multiply",
    "div": "stablehlo.divide", "rem": "stablehlo.remainder", "pow": "stablehlo.power",
    "max": "stablehlo.maximum", "min": "stablehlo.minimum", "atan2": "stablehlo.atan2",
    "and": "stablehlo.and", "or": "stablehlo.or", "xor": "stablehlo.xor",
    "shift_left": "stablehlo.shift_left", "shift_right_logical": "stablehlo.shift_right_logical",
    "shift_right_arithmetic": "stablehlo.shift_right_arithmetic",
    "nextafter": "chlo.next_after",
}
for _name, _op in BINARY_OPS.items():
    LOWERINGS[_name] = _binary(_op)

COMPARISONS = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}


def _compare(direction):
    def lower(b, avals, out, x, y):
        x, y = _broadcast_operands(b, avals, (x, y), out.shape)
        in_t = tensor_type(out.shape, avals[0].dtype)
        return b.op(f"stablehlo.compare {direction}, {x}, {y}, {compare_type(avals[0].dtype)} : "
                    f"({in_t}, {in_t}) -> {ttype(out)}")
    return lower


for _name, _dir in COMPARISONS.items():
    LOWERINGS[_name] = _compare(_dir)


@lowering("integer_pow")
def _integer_pow(b, avals, out, x, y):
    t = ttype(out)
    if y == 0:
        return b.constant(1, out.dtype, out.shape)
    base, acc, n = x, None, abs(y)
    while n:                           # square-and-multiply, as XLA would after fusion
        if n & 1:
            acc = base if acc is None else b.op(f"stablehlo.multiply {acc}, {base} : {t}")
        n >>= 1
        if n:
            base = b.op(f"stablehlo.multiply {base}, {base} : {t}")
    if y < 0:
        one = b.constant(1, out.dtype, out.shape)
        acc = b.op(f"stablehlo.divide {one}, {acc} : {t}")
    return acc


@lowering("select")
def _select(b, avals, out, pred, on_true, on_false):
    p, t, f = avals
    pred = b.broadcast_to(pred, p, out.shape)
    on_true = b.broadcast_to(on_true, t, out.shape)
    on_false = b.broadcast_to(on_false, f, out.shape)
    return b.op(f"stablehlo.select {pred}, {on_true}, {on_false} : "
                f"{tensor_type(out.shape, np.bool_)}, {ttype(out)}")


@lowering("clamp")
def _clamp(b, avals, out, lo, x, hi):
    lo_a, _, hi_a = avals
    if lo_a.shape:
        lo = b.broadcast_to(lo, lo_a, out.shape)
        lo_a = out
    if hi_a.shape:
        hi = b.broadcast_to(hi, hi_a, out.shape)
        hi_a = out
    return b.op(f"stablehlo.clamp {lo}, {x}, {hi} : ({ttype(lo_a)}, {ttype(out)}, {ttype(hi_a)}) "
                f"-> {ttype(out)}")


@lowering("convert_element_type")
def _convert(b, avals, out, x, new_dtype, weak_type=False):
    if avals[0].dtype == out.dtype:
        return x
    src = avals[0]
    if src.dtype.kind == "c" and out.dtype.kind != "c":     # complex -> real: the real part
        part = tensor_type(src.shape, np.float32 if src.dtype == np.complex64 else np.float64)
        x = b.op(f'"stablehlo.real"({x}) : ({ttype(src)}) -> {part}')
        if part == ttype(out):
            return x
        return b.op(f"stablehlo.convert {x} : ({part}) -> {ttype(out)}")
    return b.op(f"stablehlo.convert {x} : ({ttype(avals[0])}) -> {ttype(out)}")


@lowering("bitcast_convert_type")
def _bitcast(b, avals, out, x, new_dtype):
    return b.op(f"stablehlo.bitcast_convert {x} : ({ttype(avals[0])}) -> {ttype(out)}")


LOWERINGS["population_count"] = _unary("stablehlo.popcnt")
LOWERINGS["clz"] = _unary("stablehlo.count_leading_zeros")


@lowering("reduce_precision")
def _reduce_precision(b, avals, out, x, exponent_bits, mantissa_bits):
    t = ttype(out)
    return b.op(f'"stablehlo.reduce_precision"({x}) {{exponent_bits = {int(exponent_bits)} : i32, '
                f'mantissa_bits = {int(mantissa_bits)} : i32}} : ({t}) -> {t}')

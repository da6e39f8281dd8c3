"""Elementwise primitives: unary maths, binary arithmetic and comparisons, select, clamp, casts."""
import numpy as np

from secant.backends import dtypes
from secant.backends.core import Primitive, ShapedArray, register
from secant.backends.primitives.common import (_check_kind, _kind_ok, _low_precision, _same_dtypes,
                                               broadcast_shapes, lazy_scipy_special, type_error)


# --- elementwise unary ---------------------------------------------------------------------------
def unary(name, np_fn, kind="float", out_dtype=None, differentiable=True):
    def rule(x, **params):
        _check_kind(name, kind, x.dtype)
        return ShapedArray(x.shape, out_dtype or x.dtype, x.weak_type)

    impl = _of_kind(kind, _low_precision(np_fn)) if kind in ("float", "real") else np_fn
    prim = register(Primitive(name, rule, impl, weak="never" if out_dtype else "inputs",
                              differentiable=differentiable))
    if isinstance(np_fn, np.ufunc) and out_dtype is None and kind in ("float", "real", "num"):
        # impl is np_fn itself on these dtypes (core.eager_unary calls it directly)
        prim.ufunc = np_fn
        prim.ufunc_dtypes = frozenset(map(np.dtype, ["float32", "float64"] + (
            ["complex64", "complex128"] if kind != "real" else [])))
    return prim


def _of_kind(kind, fn):
    """Eagerly as under jit: a kernel refuses the dtypes its rule refuses (the rule names them:
    bind's failure report calls it), though NumPy or SciPy might compute them (np.exp of int32
    is float64; scipy's expit of int32 rounds to int32 zeros)."""
    def impl(*xs, **params):
        if not _kind_ok(kind, xs[0].dtype):
            raise TypeError(f"{xs[0].dtype} input")
        return fn(*xs, **params)
    return impl


def _erf(x):
    return lazy_scipy_special().erf(x).astype(x.dtype)


def _erf_inv(x):
    return lazy_scipy_special().erfinv(x).astype(x.dtype)


def _lgamma(x):
    return lazy_scipy_special().gammaln(x).astype(x.dtype)


def _digamma(x):
    pole = (x <= 0) & (x == np.floor(x))        # XLA's (and JAX's): nan at 0, -1, -2, ...
    return np.where(pole, np.nan, lazy_scipy_special().psi(x)).astype(x.dtype)  # (SciPy: +-inf)


def _logistic(x):
    if dtypes.is_complex(x.dtype):               # (scipy's expit is real only)
        return (1 / (1 + np.exp(-x))).astype(x.dtype)
    return lazy_scipy_special().expit(x).astype(x.dtype)


def _rsqrt(x):
    return (1 / np.sqrt(x)).astype(x.dtype)


def _round(x, rounding_method=0):
    if rounding_method == 0:                     # half away from zero (lax.round's default),
        t = np.trunc(x)                          # signed as x (-0.3 is -0.0, as XLA's)
        return np.copysign(np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t),
                           x).astype(x.dtype)
    return np.round(x)                           # half to even (jnp.round)


def _sign(x):
    if x.dtype.kind == "f" or x.dtype == dtypes.bfloat16:
        return np.where(x == 0, x, np.sign(x)).astype(x.dtype)  # sign(-0.0) is -0.0, as XLA's
    return np.sign(x).astype(x.dtype)


neg_p = unary("neg", np.negative, "num")
abs_p = unary("abs", np.abs, "num")


def _abs_rule(x):
    _check_kind("abs", "num", x.dtype)
    real = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}
    return ShapedArray(x.shape, real.get(x.dtype, x.dtype), x.weak_type)


abs_p.shape_rule = _abs_rule        # |z| of a complex z is real
sign_p = unary("sign", _sign, "num")
floor_p = unary("floor", np.floor, "real", differentiable=False)
ceil_p = unary("ceil", np.ceil, "real", differentiable=False)
round_p = unary("round", _round, "real", differentiable=False)
sqrt_p = unary("sqrt", np.sqrt)
rsqrt_p = unary("rsqrt", _rsqrt)
cbrt_p = unary("cbrt", np.cbrt, "real")
exp_p = unary("exp", np.exp)
exp2_p = unary("exp2", np.exp2)
log_p = unary("log", np.log)
log1p_p = unary("log1p", np.log1p)
expm1_p = unary("expm1", np.expm1)
sin_p = unary("sin", np.sin)
cos_p = unary("cos", np.cos)
tan_p = unary("tan", np.tan)
asin_p = unary("asin", np.arcsin)
acos_p = unary("acos", np.arccos)
atan_p = unary("atan", np.arctan)
sinh_p = unary("sinh", np.sinh)
cosh_p = unary("cosh", np.cosh)
tanh_p = unary("tanh", np.tanh)
asinh_p = unary("asinh", np.arcsinh)
acosh_p = unary("acosh", np.arccosh)
atanh_p = unary("atanh", np.arctanh)
logistic_p = unary("logistic", _logistic)
erf_p = unary("erf", _erf, "real")
erf_inv_p = unary("erf_inv", _erf_inv, "real")
lgamma_p = unary("lgamma", _lgamma, "real")
digamma_p = unary("digamma", _digamma, "real")
is_finite_p = unary("is_finite", np.isfinite, out_dtype=dtypes.bool_, differentiable=False)
not_p = unary("not", np.invert, "intbool", differentiable=False)


def _integer_pow_rule(x, y):
    _check_kind("integer_pow", "num", x.dtype)
    if dtypes.is_int(x.dtype) and y < 0:
        type_error("integer_pow of an integer array to a negative power")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _integer_pow(x, y):
    if y == 0:
        return np.ones_like(x)
    r = x
    for _ in range(abs(y) - 1):
        r = r * x
    return (1 / r).astype(x.dtype) if y < 0 else r


integer_pow_p = register(Primitive("integer_pow", _integer_pow_rule, _low_precision(_integer_pow)))


# --- elementwise binary (NumPy broadcasting, equal dtypes) ------------------------------------------
def binary(name, np_fn, kind="num", out_dtype=None, differentiable=True):
    def rule(x, y):
        dt = _same_dtypes(name, (x, y))
        _check_kind(name, kind, dt)
        return ShapedArray(broadcast_shapes(name, x.shape, y.shape), out_dtype or dt,
                           x.weak_type and y.weak_type)

    def impl(x, y):
        if x.dtype != y.dtype:     # NumPy would promote silently; the rule names the mismatch
            raise TypeError("dtype mismatch")
        r = np_fn(x, y)
        dt = out_dtype or x.dtype
        return r if r.dtype == dt else r.astype(dt)

    prim = register(Primitive(name, rule, _low_precision(impl) if kind in ("float", "real")
                              else impl,
                              weak="never" if out_dtype else "inputs",
                              differentiable=differentiable))
    if isinstance(np_fn, np.ufunc) and out_dtype is None and kind in ("num", "any", "real"):
        # impl is np_fn itself on two arrays of one of these dtypes (core.eager_binary)
        prim.ufunc = np_fn
        prim.ufunc_dtypes = frozenset(map(np.dtype, ["float32", "float64"] + (
            ["complex64", "complex128"] if kind != "real" else [])))
    return prim


def _div(x, y):
    if dtypes.is_int(x.dtype):                   # C semantics: truncate toward zero; by zero
        zero = y == 0                            # XLA's: all bits set (-1, or the unsigned max)
        if dtypes.is_unsigned(x.dtype):
            q = np.floor_divide(x, np.where(zero, 1, y))
        else:
            with np.errstate(over="ignore"):     # (INT_MIN / -1 wraps to INT_MIN, as XLA's)
                q = np.floor_divide(np.abs(x), np.where(zero, 1, np.abs(y)))
                q = np.where((x < 0) != (y < 0), -q, q)
        return np.where(zero, np.array(np.iinfo(x.dtype).max if dtypes.is_unsigned(x.dtype)
                                       else -1, x.dtype), q).astype(x.dtype)
    return np.true_divide(x, y)


def _rem(x, y):
    if dtypes.is_int(x.dtype):                   # XLA's: x % 0 is x
        return np.where(y == 0, x, np.fmod(x, np.where(y == 0, 1, y))).astype(x.dtype)
    return np.fmod(x, y)


def _pow(x, y):
    if dtypes.is_int(x.dtype):                   # a negative power: XLA's (1 and -1 keep their
        r = np.power(x, np.maximum(y, 0))        # powers, every other base gives 0)
        if (y < 0).any():
            neg = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 0, 1, -1), 0))
            r = np.where(y < 0, neg, r).astype(x.dtype)
        return r
    return np.power(x, y)


def _shift(kind):
    def impl(x, y):
        bits = x.dtype.itemsize * 8
        if y.ndim == 0 and 0 <= int(y) < bits:     # the common case (a constant shift): fast
            s = x.dtype.type(y)
            if kind == "left":
                return np.left_shift(x, s)
            if kind == "arith":
                return np.right_shift(x, s)
            ux = x.view(np.dtype(f"u{x.dtype.itemsize}"))
            return np.asarray(np.right_shift(ux, ux.dtype.type(y))).view(x.dtype)
        yy = y.astype(x.dtype)
        big = (y < 0) | (yy >= bits) if dtypes.is_int(y.dtype) and y.dtype.kind == "i" else yy >= bits
        safe = np.where(big, 0, yy).astype(x.dtype)
        if kind == "left":
            return np.where(big, 0, np.left_shift(x, safe)).astype(x.dtype)
        if kind == "arith":
            fill = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0
            return np.where(big, fill, np.right_shift(x, safe)).astype(x.dtype)
        ux = x.view(np.dtype(f"u{x.dtype.itemsize}"))
        r = np.right_shift(ux, safe.view(ux.dtype))
        return np.where(big, 0, r).astype(ux.dtype).view(x.dtype)
    return impl


add_p = binary("add", np.add)
sub_p = binary("sub", np.subtract)
mul_p = binary("mul", np.multiply)
div_p = binary("div", _div)
# (on two arrays of one float or complex dtype div's impl is NumPy's true_divide itself: the
# eager fast paths call it directly, as binary() lets them call add's np.add; core.eager_binary)
div_p.ufunc = np.true_divide
div_p.ufunc_dtypes = frozenset(map(np.dtype, ["float32", "float64", "complex64", "complex128"]))
rem_p = binary("rem", _rem, "realint")
pow_p = binary("pow", _pow)
max_p = binary("max", np.maximum, "any")
min_p = binary("min", np.minimum, "any")
atan2_p = binary("atan2", np.arctan2, "real")
nextafter_p = binary("nextafter", np.nextafter, "real", differentiable=False)
and_p = binary("and", np.bitwise_and, "intbool", differentiable=False)
or_p = binary("or", np.bitwise_or, "intbool", differentiable=False)
xor_p = binary("xor", np.bitwise_xor, "intbool", differentiable=False)
shift_left_p = binary("shift_left", _shift("left"), "int", differentiable=False)
shift_right_logical_p = binary("shift_right_logical", _shift("logical"), "int", differentiable=False)
shift_right_arithmetic_p = binary("shift_right_arithmetic", _shift("arith"), "int",
                                  differentiable=False)

eq_p = binary("eq", np.equal, "any", dtypes.bool_, differentiable=False)
ne_p = binary("ne", np.not_equal, "any", dtypes.bool_, differentiable=False)
lt_p = binary("lt", np.less, "any", dtypes.bool_, differentiable=False)
le_p = binary("le", np.less_equal, "any", dtypes.bool_, differentiable=False)
gt_p = binary("gt", np.greater, "any", dtypes.bool_, differentiable=False)
ge_p = binary("ge", np.greater_equal, "any", dtypes.bool_, differentiable=False)


# --- select, clamp, conversions ----------------------------------------------------------------------
def _select_rule(pred, on_true, on_false):
    if pred.dtype != dtypes.bool_:
        type_error(f"select requires a boolean predicate, got {pred.dtype.name}")
    dt = _same_dtypes("select", (on_true, on_false))
    shape = broadcast_shapes("select", pred.shape, on_true.shape, on_false.shape)
    return ShapedArray(shape, dt, on_true.weak_type and on_false.weak_type)


def _select(pred, on_true, on_false):
    if pred.dtype != np.bool_ or on_true.dtype != on_false.dtype:
        raise TypeError("dtype mismatch")
    return np.where(pred, on_true, on_false)


# weak when both values are (where(c, 1.0, -1.0) times a float32 array stays float32, as JAX's)
select_p = register(Primitive("select", _select_rule, _select, weak="rest"))


def _clamp_rule(lo, x, hi):
    _same_dtypes("clamp", (lo, x, hi))
    for b in (lo, hi):
        if b.shape and b.shape != x.shape:
            type_error(f"clamp bounds must be scalars or of the operand's shape {x.shape}, "
                       f"got {b.shape}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _clamp(lo, x, hi):
    return np.minimum(np.maximum(x, lo), hi).astype(x.dtype)


clamp_p = register(Primitive("clamp", _clamp_rule, _clamp))


def _convert_rule(x, new_dtype, weak_type=False):
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert(x, new_dtype, weak_type=False):
    if x.dtype == new_dtype:
        return x
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(new_dtype):
        x = np.real(x)                            # complex -> real: the real part (as XLA)
    if dtypes.is_float(x.dtype) and dtypes.is_int(new_dtype):
        info = np.iinfo(new_dtype)                # XLA saturates; NaN becomes 0
        with np.errstate(invalid="ignore"):       # (the max, rounded up to a float, wraps:
            out = np.nan_to_num(np.clip(x, info.min, info.max), nan=0).astype(new_dtype)
        high = x >= info.max                      #  float32(2**31 - 1) is 2**31)
        return np.where(high, np.asarray(info.max, new_dtype), out) if high.any() else out
    return x.astype(new_dtype)


convert_element_type_p = register(Primitive("convert_element_type", _convert_rule, _convert,
                                            weak="param"))


def _bitcast_rule(x, new_dtype):
    if np.dtype(new_dtype).itemsize != x.dtype.itemsize:
        type_error(f"bitcast_convert_type needs equal bit widths: {x.dtype.name} -> "
                   f"{np.dtype(new_dtype).name}")
    return ShapedArray(x.shape, new_dtype, False)


def _bitcast(x, new_dtype):
    # np.ascontiguousarray makes a 0-d array 1-d: reshape back
    return np.ascontiguousarray(x).view(new_dtype).reshape(x.shape)


bitcast_convert_type_p = register(Primitive("bitcast_convert_type", _bitcast_rule, _bitcast,
                                            weak="never", differentiable=False))


# --- bit counting and reduce_precision (XLA's PopulationCount, Clz, ReducePrecision) ------------
def _unsigned(x):
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _population_count(x):
    return np.bitwise_count(_unsigned(x)).astype(x.dtype)     # (of the bits: signed counts |x|)


def _clz(x):
    """Leading zero bits: halve the window of the top bits while it is zero."""
    bits = x.dtype.itemsize * 8
    u = np.array(_unsigned(x))
    count = np.zeros(u.shape, np.int64)
    width = bits // 2
    while width:
        zero = (u >> u.dtype.type(bits - width)) == 0
        count += np.where(zero, width, 0)
        u = np.where(zero, u << u.dtype.type(width), u)
        width //= 2
    return (count + (u == 0)).astype(x.dtype)


population_count_p = unary("population_count", _population_count, "int", differentiable=False)
clz_p = unary("clz", _clz, "int", differentiable=False)


def _reduce_precision(x, exponent_bits, mantissa_bits):
    """XLA's ReducePrecision: the mantissa rounded to `mantissa_bits` (to nearest, ties to
    even), then exponents past the reduced range overflow to inf and those at or below its
    bottom flush to (signed) zero; nan stays nan."""
    info = dtypes.finfo(x.dtype)
    src_mantissa, src_exponent = info.nmant, info.nexp
    bits = x.dtype.itemsize * 8
    u = np.array(_unsigned(x))
    t = u.dtype.type
    if mantissa_bits < src_mantissa:
        shift = src_mantissa - mantissa_bits
        last_bit = t(1) << t(shift)
        bias = (u & last_bit) >> t(shift)
        bias = bias + ((last_bit >> t(1)) - t(1))
        u = (u + bias) & ~(last_bit - t(1))
    if exponent_bits < src_exponent:
        exponent_mask = ((t(1) << t(src_exponent)) - t(1)) << t(src_mantissa)
        exponent_bias = (1 << (src_exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = u & exponent_mask
        over = exponent > (t(exponent_bias + reduced_bias) << t(src_mantissa))
        under = exponent <= (t(exponent_bias - reduced_bias) << t(src_mantissa))
        signed_zero = u & (t(1) << t(bits - 1))
        u = np.where(over, signed_zero | exponent_mask, np.where(under, signed_zero, u))
    out = u.astype(u.dtype).view(x.dtype).reshape(x.shape)
    return np.where(np.isnan(x), x, out)


def _reduce_precision_rule(x, exponent_bits, mantissa_bits):
    _check_kind("reduce_precision", "real", x.dtype)
    if int(exponent_bits) < 1 or int(mantissa_bits) < 0:
        type_error(f"reduce_precision needs exponent_bits >= 1 and mantissa_bits >= 0, got "
                   f"{exponent_bits} and {mantissa_bits}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


reduce_precision_p = register(Primitive("reduce_precision", _reduce_precision_rule,
                                        _reduce_precision))

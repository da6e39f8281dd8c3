"""Elementwise functions with NumPy's names and JAX's dtype rules, each a primitive or a short
composition of primitives."""
import numpy as np

from secant.backends import dtypes
from secant.backends.core import Tracer, eager_binary, eager_unary
from secant.backends.errors import SecantTypeError, SecantValueError, where as _where
from secant.backends.primitives import elementwise as ew
from secant.numpy.conversion import (convert, dtype_weak, ensure_array, promote,
                                     promote_inexact, to_inexact)


def _float_unary(prim, name):
    def slow(x, /):
        return prim.bind(to_inexact(x))
    f = eager_unary(prim, slow)
    f.__name__ = f.__qualname__ = name
    f.__module__ = __name__
    f.__doc__ = f"Elementwise {name} (NumPy's `{name}`), computed in floating point."
    return f


def _num_unary(prim, name):
    def slow(x, /):
        return prim.bind(ensure_array(x))
    f = eager_unary(prim, slow)
    f.__name__ = f.__qualname__ = name
    f.__module__ = __name__
    f.__doc__ = f"Elementwise {name} (NumPy's `{name}`)."
    return f


sin = _float_unary(ew.sin_p, "sin")
cos = _float_unary(ew.cos_p, "cos")
tan = _float_unary(ew.tan_p, "tan")
arcsin = asin = _float_unary(ew.asin_p, "arcsin")
arccos = acos = _float_unary(ew.acos_p, "arccos")
arctan = atan = _float_unary(ew.atan_p, "arctan")
sinh = _float_unary(ew.sinh_p, "sinh")
cosh = _float_unary(ew.cosh_p, "cosh")
tanh = _float_unary(ew.tanh_p, "tanh")
arcsinh = asinh = _float_unary(ew.asinh_p, "arcsinh")
arccosh = acosh = _float_unary(ew.acosh_p, "arccosh")
arctanh = atanh = _float_unary(ew.atanh_p, "arctanh")
exp = _float_unary(ew.exp_p, "exp")
exp2 = _float_unary(ew.exp2_p, "exp2")
expm1 = _float_unary(ew.expm1_p, "expm1")
log = _float_unary(ew.log_p, "log")
log1p = _float_unary(ew.log1p_p, "log1p")
sqrt = _float_unary(ew.sqrt_p, "sqrt")
cbrt = _float_unary(ew.cbrt_p, "cbrt")
negative = _num_unary(ew.neg_p, "negative")
sign = _num_unary(ew.sign_p, "sign")


def log2(x, /):
    x = to_inexact(x)
    return ew.div_p.bind(ew.log_p.bind(x), convert(np.log(2), x.dtype, x.weak_type))


def log10(x, /):
    x = to_inexact(x)
    return ew.div_p.bind(ew.log_p.bind(x), convert(np.log(10), x.dtype, x.weak_type))


def absolute(x, /):
    x = ensure_array(x)
    if dtypes.is_bool(x.dtype) or dtypes.is_unsigned(x.dtype):
        return x
    return ew.abs_p.bind(x)


abs = absolute


def _real_only(name, *xs, error=SecantTypeError):
    """xs, after raising as JAX's `name` does where one is complex (the function reads a sign,
    an order or an exponent, which a complex number lacks; NumPy's kernels would drop the
    imaginary part or compare real parts). The eager ops call it; the sources the transforms
    read (sources_existing.py) test the dtype in an `if` of their own."""
    for x in xs:
        if np.iscomplexobj(x) if not hasattr(x, "dtype") else dtypes.is_complex(x.dtype):
            raise error(f"{name} does not support complex-valued inputs" + _where())
    return xs[0] if len(xs) == 1 else xs


def fabs(x, /):
    return ew.abs_p.bind(to_inexact(_real_only("fabs", x)))


def positive(x, /):
    return ensure_array(x)


def _rounding(prim, name):
    def f(x, /):
        x = ensure_array(x)
        if not dtypes.is_inexact(x.dtype):
            return x
        return prim.bind(x)
    f.__name__ = f.__qualname__ = name
    return f


floor = _rounding(ew.floor_p, "floor")
ceil = _rounding(ew.ceil_p, "ceil")


def trunc(x, /):
    x = ensure_array(x)
    if not dtypes.is_inexact(x.dtype):
        return x
    return where(ew.lt_p.bind(x, convert(0, x.dtype)), ew.ceil_p.bind(x), ew.floor_p.bind(x))


fix = trunc


def rint(x, /):
    x = to_inexact(x)
    if dtypes.is_complex(x.dtype):            # each part, as NumPy
        return _complex_parts_of(rint, x)
    return ew.round_p.bind(x, rounding_method=1)


def _complex_parts_of(fn, z, *args):
    from secant.backends.primitives import complex as cx
    return cx.complex_p.bind(fn(cx.real_p.bind(z), *args), fn(cx.imag_p.bind(z), *args))


def round(a, decimals=0, out=None):
    a = ensure_array(a)
    if not dtypes.is_inexact(a.dtype):
        if decimals >= 0:
            return a
        # NumPy's: to a multiple of 10 ** -decimals, a half to the even one (25 -> 20, not
        # 30); jnp raises NotImplementedError here
        factor, one = convert(10 ** (-decimals), a.dtype), convert(1, a.dtype)
        q = floor_divide(a, factor)
        r = ew.sub_p.bind(a, ew.mul_p.bind(q, factor))
        rest = ew.sub_p.bind(factor, r)
        odd = ew.ne_p.bind(ew.and_p.bind(q, one), convert(0, a.dtype))
        up = ew.or_p.bind(ew.gt_p.bind(r, rest), ew.and_p.bind(ew.eq_p.bind(r, rest), odd))
        return ew.mul_p.bind(ew.select_p.bind(up, ew.add_p.bind(q, one), q), factor)
    if dtypes.is_complex(a.dtype):            # each part, as NumPy
        return _complex_parts_of(round, a, decimals)
    if decimals == 0:
        return ew.round_p.bind(a, rounding_method=1)
    factor = convert(10.0 ** decimals, a.dtype, a.weak_type)
    return ew.div_p.bind(ew.round_p.bind(ew.mul_p.bind(a, factor), rounding_method=1), factor)


around = round


def square(x, /):
    return ew.integer_pow_p.bind(ensure_array(x), y=2)


def reciprocal(x, /):
    x = ensure_array(x)
    return ew.integer_pow_p.bind(x, y=-1) if dtypes.is_int(x.dtype) else \
        ew.div_p.bind(convert(1, x.dtype, x.weak_type), x)


def rsqrt(x, /):
    return ew.rsqrt_p.bind(to_inexact(x))


def logistic(x, /):
    return ew.logistic_p.bind(to_inexact(x))


def isfinite(x, /):
    x = ensure_array(x)
    if not dtypes.is_inexact(x.dtype):
        return full_like_bool(x, True)
    return ew.is_finite_p.bind(x)


def isnan(x, /):
    x = ensure_array(x)
    if not dtypes.is_inexact(x.dtype):
        return full_like_bool(x, False)
    return ew.ne_p.bind(x, x)


def isinf(x, /):
    x = ensure_array(x)
    if not dtypes.is_inexact(x.dtype):
        return full_like_bool(x, False)
    if dtypes.is_complex(x.dtype):      # either part infinite (|z| may overflow: not that)
        from secant.backends.primitives import complex as cx
        return ew.or_p.bind(isinf(cx.real_p.bind(x)), isinf(cx.imag_p.bind(x)))
    return ew.eq_p.bind(ew.abs_p.bind(x), convert(np.inf, x.dtype))


def isposinf(x, /):
    x = to_inexact(_real_only("isposinf", x, error=SecantValueError))
    return ew.eq_p.bind(x, convert(np.inf, x.dtype))


def isneginf(x, /):
    x = to_inexact(_real_only("isneginf", x, error=SecantValueError))
    return ew.eq_p.bind(x, convert(-np.inf, x.dtype))


def full_like_bool(x, value):
    from secant.numpy.creation import full
    return full(x.shape, value, dtypes.bool_)


def deg2rad(x, /):
    x = to_inexact(x)
    return ew.mul_p.bind(x, convert(np.pi / 180, x.dtype, x.weak_type))


def rad2deg(x, /):
    x = to_inexact(x)
    return ew.mul_p.bind(x, convert(180 / np.pi, x.dtype, x.weak_type))


radians, degrees = deg2rad, rad2deg


# --- binary ---------------------------------------------------------------------------------
def _binary(prim, name, inexact=False):
    if inexact:
        def slow(x1, x2, /):
            return prim.bind(*promote_inexact(x1, x2))
    else:
        def slow(x1, x2, /):
            return prim.bind(*promote(x1, x2))
    f = eager_binary(prim, slow)     # (the float dtypes it takes are inexact already)
    f.__name__ = f.__qualname__ = name
    f.__module__ = __name__
    f.__doc__ = f"Elementwise {name} with NumPy broadcasting and JAX's type promotion."
    return f


def _add(x1, x2, /):
    x1, x2 = promote(x1, x2)
    return (ew.or_p if x1.dtype == dtypes.bool_ else ew.add_p).bind(x1, x2)


def _multiply(x1, x2, /):
    bools = [type(x) is not bool and getattr(x, "dtype", None) == dtypes.bool_ for x in (x1, x2)]
    x1, x2 = promote(x1, x2)
    if x1.dtype == dtypes.bool_:
        return ew.and_p.bind(x1, x2)
    b, x = (x1, x2) if bools[0] else (x2, x1)
    if bools[0] != bools[1] and np.shape(b) == np.broadcast_shapes(np.shape(x1), np.shape(x2)):
        # x * b of a bool array b not broadcast: XLA's select(b, x, 0), as jit's and jnp's
        return where(b, x, 0)           # (nan * False is 0, not nan; -1.5 * False is +0.0)
    return ew.mul_p.bind(x1, x2)


# (two float arrays of one dtype: eager_binary runs the ufunc directly; bool never goes there)
add = eager_binary(ew.add_p, _add)
add.__name__ = add.__qualname__ = "add"
add.__module__ = __name__
add.__doc__ = "Elementwise add with NumPy broadcasting and JAX's type promotion (bool: logical or)."
multiply = eager_binary(ew.mul_p, _multiply)
multiply.__name__ = multiply.__qualname__ = "multiply"
multiply.__module__ = __name__
multiply.__doc__ = ("Elementwise multiply with NumPy broadcasting and JAX's type promotion "
                    "(bool: and).")


subtract = _binary(ew.sub_p, "subtract")
true_divide = divide = _binary(ew.div_p, "true_divide", inexact=True)
maximum = _binary(ew.max_p, "maximum")
minimum = _binary(ew.min_p, "minimum")
arctan2 = atan2 = _binary(ew.atan2_p, "arctan2", inexact=True)
nextafter = _binary(ew.nextafter_p, "nextafter", inexact=True)
equal = _binary(ew.eq_p, "equal")
not_equal = _binary(ew.ne_p, "not_equal")
less = _binary(ew.lt_p, "less")
less_equal = _binary(ew.le_p, "less_equal")
greater = _binary(ew.gt_p, "greater")
greater_equal = _binary(ew.ge_p, "greater_equal")


def _intbool(name, *xs):
    xs = promote(*xs)
    dt = dtype_weak(xs[0])[0]
    if not (dtypes.is_int(dt) or dtypes.is_bool(dt)):
        raise SecantTypeError(f"{name} is only defined for integer and boolean arrays, got "
                              f"{dt.name}{_where()}")
    return xs


def bitwise_and(x1, x2, /):
    return ew.and_p.bind(*_intbool("bitwise_and", x1, x2))


def bitwise_or(x1, x2, /):
    return ew.or_p.bind(*_intbool("bitwise_or", x1, x2))


def bitwise_xor(x1, x2, /):
    return ew.xor_p.bind(*_intbool("bitwise_xor", x1, x2))


def bitwise_not(x, /):
    return ew.not_p.bind(*_intbool("bitwise_not", x))


invert = bitwise_not


def _to_bool(x):
    return convert(x, dtypes.bool_)


def logical_and(x1, x2, /):
    return ew.and_p.bind(_to_bool(x1), _to_bool(x2))


def logical_or(x1, x2, /):
    return ew.or_p.bind(_to_bool(x1), _to_bool(x2))


def logical_xor(x1, x2, /):
    return ew.xor_p.bind(_to_bool(x1), _to_bool(x2))


def logical_not(x, /):
    return ew.not_p.bind(_to_bool(x))


def _numeric(*xs):
    """JAX's promote_args_numeric (shifts, //, %, fmod, power): promoted, then booleans count
    as the default int (True // True is 1, bool ** 2 an int32)."""
    if dtypes.is_bool(xs[0].dtype):
        return [convert(x, dtypes.default_int()) for x in xs]
    return xs


def left_shift(x1, x2, /):
    return ew.shift_left_p.bind(*_numeric(*_intbool("left_shift", x1, x2)))


def right_shift(x1, x2, /):
    x1, x2 = _numeric(*_intbool("right_shift", x1, x2))
    prim = ew.shift_right_logical_p if dtypes.is_unsigned(x1.dtype) else ew.shift_right_arithmetic_p
    return prim.bind(x1, x2)


def power(x1, x2, /):
    exponent = x2
    base = x1
    x1, x2 = _numeric(*promote(x1, x2))
    if type(exponent) is int and exponent < 0 and dtypes.is_int(x1.dtype):
        raise SecantTypeError(f"Integers cannot be raised to negative powers, got "
                              f"{x1.dtype.name} ** {exponent} (as in JAX); make the base "
                              f"a float, e.g. x.astype(float) ** {exponent}" + _where())
    if x1.weak_type and type(exponent) is not int and (
            isinstance(exponent, Tracer) or np.ndim(exponent) > 0):
        # a float base to a traced or non-scalar integer power: JAX's lax.pow of the two
        # unpromoted, weakly typed only where both are (2.0 ** int32 array: a strong float32;
        # a concrete integer scalar's is integer_pow of the base, weak as the base)
        (bdt, bweak), (edt, eweak) = dtype_weak(base), dtype_weak(exponent)
        if dtypes.is_inexact(bdt) and dtypes.is_int(edt) and not (bweak and eweak):
            x1, x2 = convert(x1, x1.dtype), convert(x2, x2.dtype)
    return ew.pow_p.bind(x1, x2)


def float_power(x1, x2, /):
    """x1 ** x2 in the widest float (complex where either is complex), as jnp.float_power."""
    x64 = dtypes.x64_enabled()
    x1, x2 = ensure_array(x1), ensure_array(x2)
    if dtypes.is_complex(x1.dtype) or dtypes.is_complex(x2.dtype):
        dt = dtypes.complex128 if x64 else dtypes.complex64
    else:
        dt = dtypes.float64 if x64 else dtypes.float32
    return ew.pow_p.bind(convert(x1, dt), convert(x2, dt))


def _nonzero_divisor(x2):
    """An integer divisor with its zeros replaced by one, as JAX's remainder and fmod do: x % 0
    is 0 (as NumPy's), eagerly and under jit alike (XLA's own remainder gives x)."""
    if not dtypes.is_int(x2.dtype):
        return x2
    return ew.select_p.bind(ew.eq_p.bind(x2, convert(0, x2.dtype)), convert(1, x2.dtype), x2)


def fmod(x1, x2, /):
    x1, x2 = _numeric(*promote(x1, x2))
    return ew.rem_p.bind(x1, _nonzero_divisor(x2))


def _not_complex(name, *xs):
    if dtypes.is_complex(xs[0].dtype):
        raise SecantTypeError(f"{name} is not defined for complex numbers, got "
                              f"{xs[0].dtype.name} (as NumPy and JAX){_where()}")
    return xs


def remainder(x1, x2, /):
    """Python's modulo: the result takes the divisor's sign."""
    x1, x2 = _numeric(*_not_complex("remainder", *promote(x1, x2)))
    x2 = _nonzero_divisor(x2)
    r = ew.rem_p.bind(x1, x2)
    if dtypes.is_unsigned(x1.dtype) or dtypes.is_bool(x1.dtype):
        return r
    zero = convert(0, r.dtype)
    fix_sign = ew.and_p.bind(ew.ne_p.bind(r, zero),
                             ew.ne_p.bind(ew.lt_p.bind(r, zero), ew.lt_p.bind(x2, zero)))
    return ew.select_p.bind(fix_sign, ew.add_p.bind(r, x2), r)


mod = remainder


def floor_divide(x1, x2, /):
    x1, x2 = _numeric(*_not_complex("floor_divide", *promote(x1, x2)))
    if dtypes.is_inexact(x1.dtype):     # JAX's (CPython's float divmod): (x1 - x1 % x2) / x2,
        zero = convert(0, x1.dtype)     # one less where the remainder's sign is not x2's;
        m = ew.rem_p.bind(x1, x2)       # floor(x1 / x2) rounds: 1.0 // 0.1 was 10, not 9
        q = ew.div_p.bind(ew.select_p.bind(ew.eq_p.bind(x2, zero), x1, ew.sub_p.bind(x1, m)),
                          x2)                   # (x // 0: x / 0, inf)
        adjust = ew.and_p.bind(ew.ne_p.bind(m, zero),
                               ew.ne_p.bind(ew.sign_p.bind(x2), ew.sign_p.bind(m)))
        q = ew.select_p.bind(adjust, ew.sub_p.bind(q, convert(1, q.dtype)), q)
        return ew.round_p.bind(q, rounding_method=0)
    q = ew.div_p.bind(x1, x2)
    if dtypes.is_unsigned(x1.dtype) or dtypes.is_bool(x1.dtype):
        return q
    # as JAX's floor_divide: with XLA's x / 0 == -1 and x % 0 == x, x // 0 is -2 for x != 0
    # and -1 for x == 0, eagerly and under jit alike
    zero = convert(0, x1.dtype)
    r = ew.rem_p.bind(x1, x2)
    adjust = ew.and_p.bind(ew.ne_p.bind(r, zero),
                           ew.ne_p.bind(ew.sign_p.bind(x1), ew.sign_p.bind(x2)))
    return ew.select_p.bind(adjust, ew.sub_p.bind(q, convert(1, q.dtype)), q)


def divmod(x1, x2, /):
    return floor_divide(x1, x2), remainder(x1, x2)


def hypot(x1, x2, /):
    x1, x2 = promote_inexact(*_real_only("hypot", x1, x2, error=SecantValueError))
    # big |x1| * sqrt(1 + (small / big)^2), as NumPy's and JAX's: sqrt(x1^2 + x2^2) overflows
    # past sqrt(max) (1.8e19 in float32) and underflows below sqrt(tiny); an infinite argument
    # gives inf even beside a nan
    a1, a2 = ew.abs_p.bind(x1), ew.abs_p.bind(x2)
    big, small = ew.max_p.bind(a1, a2), ew.min_p.bind(a1, a2)
    one = convert(1, big.dtype)
    ratio = ew.div_p.bind(small, where(ew.eq_p.bind(big, convert(0, big.dtype)), one, big))
    out = ew.mul_p.bind(big, ew.sqrt_p.bind(ew.add_p.bind(one, ew.mul_p.bind(ratio, ratio))))
    infinite = ew.or_p.bind(isposinf(a1), isposinf(a2))
    return where(infinite, convert(np.inf, big.dtype), out)


def _complex_logaddexp(x1, x2, amax):
    """log(exp(x1) + exp(x2)) of complex numbers, as JAX's: amax + log1p(exp(other - amax)) (amax
    the larger in complex order), its imaginary part wrapped into [-pi, pi)."""
    from secant.backends.primitives import complex as cx
    delta = ew.sub_p.bind(ew.add_p.bind(x1, x2), ew.add_p.bind(amax, amax))
    out = ew.add_p.bind(amax, ew.log1p_p.bind(ew.exp_p.bind(delta)))
    im = cx.imag_p.bind(out)
    pi, two_pi = convert(np.pi, im.dtype), convert(2 * np.pi, im.dtype)
    rem = ew.rem_p.bind(ew.add_p.bind(im, pi), two_pi)
    rem = where(ew.lt_p.bind(rem, convert(0, im.dtype)), ew.add_p.bind(rem, two_pi), rem)
    return cx.complex_p.bind(cx.real_p.bind(out), ew.sub_p.bind(rem, pi))


def logaddexp(x1, x2, /):
    x1, x2 = promote_inexact(x1, x2)
    amax = ew.max_p.bind(x1, x2)
    if dtypes.is_complex(x1.dtype):
        return _complex_logaddexp(x1, x2, amax)
    diff = ew.sub_p.bind(x1, x2)
    delta = ew.neg_p.bind(ew.abs_p.bind(diff))
    out = ew.add_p.bind(amax, ew.log1p_p.bind(ew.exp_p.bind(delta)))
    # x1 = x2 = +-inf: diff is inf - inf = nan; the answer is x1 + x2 (+-inf), as NumPy's and
    # JAX's (a nan argument still gives nan)
    return where(isnan(diff), ew.add_p.bind(x1, x2), out)


_SAME_WIDTH_INT = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}


def _sign_bit(x):
    """x's sign bit (floats): True for -0.0 and a nan with its sign bit set too, which
    `x < 0` misses."""
    bits = ew.bitcast_convert_type_p.bind(x, new_dtype=_SAME_WIDTH_INT[x.dtype.itemsize])
    return ew.lt_p.bind(bits, convert(0, bits.dtype))


def copysign(x1, x2, /):
    x1, x2 = promote_inexact(*_real_only("copysign", x1, x2))
    neg = _sign_bit(x2)
    a = ew.abs_p.bind(x1)
    return ew.select_p.bind(neg, ew.neg_p.bind(a), a)


def fmax(x1, x2, /):
    x1, x2 = promote(x1, x2)
    return where(isnan(x1), x2, where(isnan(x2), x1, ew.max_p.bind(x1, x2)))


def fmin(x1, x2, /):
    x1, x2 = promote(x1, x2)
    return where(isnan(x1), x2, where(isnan(x2), x1, ew.min_p.bind(x1, x2)))


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """where(c, x, y) selects elementwise; where(c) alone is nonzero(c, size=, fill_value=)."""
    if x is None and y is None:
        from secant.numpy.indexing import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    if size is not None or fill_value is not None:
        raise SecantTypeError("size and fill_value arguments cannot be used in the three-term "
                              "where function" + _where())
    if x is None or y is None:
        raise SecantTypeError("where takes either one or three arguments" + _where())
    x, y = promote(x, y)
    return ew.select_p.bind(_to_bool(condition), x, y)


def clip(a, a_min=None, a_max=None, *, min=None, max=None):
    a_min = a_min if min is None else min
    a_max = a_max if max is None else max
    a = ensure_array(a)
    if a_min is not None:
        a = maximum(a, a_min)
    if a_max is not None:
        a = minimum(a, a_max)
    return a


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = ensure_array(x)
    if not dtypes.is_inexact(x.dtype):
        return x
    if dtypes.is_complex(x.dtype):            # each part, as NumPy and JAX
        return _complex_parts_of(nan_to_num, x, copy, nan, posinf, neginf)
    info = dtypes.finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = where(isnan(x), convert(nan, x.dtype), x)
    x = where(isposinf(x), convert(posinf, x.dtype), x)
    return where(isneginf(x), convert(neginf, x.dtype), x)


def heaviside(x1, x2, /):
    x1, x2 = promote_inexact(*_real_only("heaviside", x1, x2))
    zero = convert(0, x1.dtype)
    return where(ew.lt_p.bind(x1, zero), zero,
                 where(ew.gt_p.bind(x1, zero), convert(1, x1.dtype), x2))


def signbit(x, /):
    x = ensure_array(_real_only("signbit", x, error=SecantValueError))
    if dtypes.is_unsigned(x.dtype) or dtypes.is_bool(x.dtype):
        return full_like_bool(x, False)
    if dtypes.is_int(x.dtype):
        return ew.lt_p.bind(x, convert(0, x.dtype))
    return _sign_bit(x)


def sinc(x, /):
    x = to_inexact(x)
    pix = ew.mul_p.bind(x, convert(np.pi, x.dtype, x.weak_type))
    zero = ew.eq_p.bind(x, convert(0, x.dtype))
    safe = where(zero, convert(1, x.dtype), pix)
    return where(zero, convert(1, x.dtype), ew.div_p.bind(ew.sin_p.bind(safe), safe))

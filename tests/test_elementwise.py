"""Elementwise functions: eager against NumPy, jit against eager, across dtypes and broadcasting."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

rng = np.random.default_rng(0)


def _data(shape, dtype, lo=-3.0, hi=3.0):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        lo = max(lo, np.iinfo(dtype).min)
        return rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def check(fn, ref, *arrays, rtol=2e-6, atol=1e-6, ref_dtype=None):
    """fn eagerly == ref on NumPy (within float tolerance), fn under jit == fn eagerly."""
    eager = fn(*[snp.asarray(a) for a in arrays])
    expected = ref(*arrays)
    if ref_dtype is not None:
        assert eager.dtype == np.dtype(ref_dtype), (eager.dtype, ref_dtype)
    np.testing.assert_allclose(np.asarray(eager, dtype=np.float64) if eager.dtype.kind != "b"
                               else np.asarray(eager), expected, rtol=rtol, atol=atol)
    jitted = secant.jit(fn)(*arrays)
    assert jitted.dtype == eager.dtype and jitted.shape == eager.shape
    np.testing.assert_allclose(np.asarray(jitted, dtype=np.float64) if eager.dtype.kind != "b"
                               else np.asarray(jitted), np.asarray(eager, dtype=np.float64)
                               if eager.dtype.kind != "b" else np.asarray(eager),
                               rtol=max(rtol, 1e-5), atol=max(atol, 1e-5))


def _f64(f):
    return lambda *xs: f(*[np.asarray(x, np.float64) for x in xs])


FLOAT_UNARY = {
    # name: (numpy reference, input range)
    "sin": (np.sin, (-5, 5)), "cos": (np.cos, (-5, 5)), "tan": (np.tan, (-1.2, 1.2)),
    "arcsin": (np.arcsin, (-0.99, 0.99)), "arccos": (np.arccos, (-0.99, 0.99)),
    "arctan": (np.arctan, (-5, 5)), "sinh": (np.sinh, (-3, 3)), "cosh": (np.cosh, (-3, 3)),
    "tanh": (np.tanh, (-3, 3)), "arcsinh": (np.arcsinh, (-3, 3)),
    "arccosh": (np.arccosh, (1.01, 5)), "arctanh": (np.arctanh, (-0.99, 0.99)),
    "exp": (np.exp, (-5, 5)), "exp2": (np.exp2, (-5, 5)), "expm1": (np.expm1, (-2, 2)),
    "log": (np.log, (0.01, 10)), "log1p": (np.log1p, (-0.9, 5)), "log2": (np.log2, (0.01, 10)),
    "log10": (np.log10, (0.01, 10)), "sqrt": (np.sqrt, (0, 10)), "cbrt": (np.cbrt, (-8, 8)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 10)), "floor": (np.floor, (-5, 5)),
    "ceil": (np.ceil, (-5, 5)), "rint": (np.rint, (-5, 5)), "trunc": (np.trunc, (-5, 5)),
    "logistic": (lambda x: 1 / (1 + np.exp(-x)), (-6, 6)), "square": (np.square, (-3, 3)),
    "reciprocal": (lambda x: 1 / x, (0.5, 3)), "deg2rad": (np.deg2rad, (-360, 360)),
    "sinc": (np.sinc, (-3, 3)), "fabs": (np.fabs, (-3, 3)),
}


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
@pytest.mark.parametrize("shape", [(), (7,), (2, 3)])
def test_float_unary(name, shape):
    ref, (lo, hi) = FLOAT_UNARY[name]
    x = _data(shape, np.float32, lo, hi)
    check(getattr(snp, name), _f64(ref), x, rtol=1e-5, atol=1e-5, ref_dtype=np.float32)


def test_erf_against_math():
    import math
    x = _data((9,), np.float32, -3, 3)
    check(lambda v: secant.lax.erf(v), np.vectorize(math.erf), x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["sin", "exp", "sqrt", "log1p"])
def test_float_unary_promotes_integers(name):
    x = np.arange(1, 6, dtype=np.int32)
    check(getattr(snp, name), _f64(getattr(np, name)), x, rtol=1e-6, ref_dtype=np.float32)


NUM_UNARY = {"negative": np.negative, "absolute": np.absolute, "sign": np.sign,
             "positive": np.positive, "square": np.square}


@pytest.mark.parametrize("name", sorted(NUM_UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8])
def test_numeric_unary_keeps_dtype(name, dtype):
    x = _data((3, 4), dtype, -50, 50)
    check(getattr(snp, name), NUM_UNARY[name], x, ref_dtype=dtype)


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "true_divide": np.true_divide, "floor_divide": np.floor_divide,
    "remainder": np.remainder, "fmod": np.fmod, "power": np.power, "arctan2": np.arctan2,
    "hypot": np.hypot, "logaddexp": np.logaddexp, "copysign": np.copysign,
}
SHAPES = [((5,), (5,)), ((2, 3), (3,)), ((4, 1), (1, 5)), ((), (2, 2)), ((3, 1, 2), (4, 1))]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", SHAPES)
def test_float_binary(name, shapes):
    lo = 0.5 if name in ("power", "floor_divide", "remainder", "fmod", "true_divide") else -3
    x, y = _data(shapes[0], np.float32, lo, 3), _data(shapes[1], np.float32, lo, 3)
    check(getattr(snp, name), _f64(BINARY[name]), x, y, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum",
                                  "floor_divide", "remainder", "fmod"])
@pytest.mark.parametrize("dtype", [np.int32, np.int16, np.uint8])
def test_integer_binary(name, dtype):
    x = _data((4, 5), dtype, -20, 20)
    y = _data((5,), dtype, 1, 7)
    if np.dtype(dtype).kind == "i":
        y = y * np.where(np.arange(5) % 2, 1, -1).astype(dtype)
    check(getattr(snp, name), getattr(np, name), x, y, ref_dtype=dtype)


def test_integer_division_matches_python_semantics():
    x = np.array([7, -7, 7, -7, 0], np.int32)
    y = np.array([2, 2, -2, -2, 3], np.int32)
    check(lambda a, b: a // b, lambda a, b: a // b, x, y, ref_dtype=np.int32)
    check(lambda a, b: a % b, lambda a, b: a % b, x, y, ref_dtype=np.int32)


COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("name", COMPARE)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.bool_])
def test_comparisons(name, dtype):
    x, y = _data((3, 4), dtype, 0, 3), _data((4,), dtype, 0, 3)
    check(getattr(snp, name), getattr(np, name), x, y, ref_dtype=np.bool_)


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                                  "right_shift"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int8])
def test_bitwise(name, dtype):
    x = _data((6,), dtype, -100, 100)
    y = _data((6,), dtype, 0, 5)
    check(getattr(snp, name), getattr(np, name), x, y, ref_dtype=dtype)


def test_shifts_past_the_bit_width_follow_xla():
    x = np.array([1, -8, 5], np.int32)
    s = np.array([40, 33, 32], np.int32)
    for f in (snp.left_shift, snp.right_shift):
        np.testing.assert_array_equal(np.asarray(f(x, s)), np.asarray(secant.jit(f)(x, s)))
    np.testing.assert_array_equal(np.asarray(snp.left_shift(x, s)), [0, 0, 0])
    np.testing.assert_array_equal(np.asarray(snp.right_shift(x, s)), [0, -1, 0])


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical(name):
    x, y = _data((5,), np.float32, -1, 1) > 0, _data((5,), np.int32, 0, 1)
    check(getattr(snp, name), getattr(np, name), x, y, ref_dtype=np.bool_)


def test_logical_not_and_invert():
    b = _data((7,), np.bool_)
    check(snp.logical_not, np.logical_not, b, ref_dtype=np.bool_)
    check(snp.invert, np.invert, b, ref_dtype=np.bool_)
    i = _data((7,), np.int32, -9, 9)
    check(snp.invert, np.invert, i, ref_dtype=np.int32)


def test_where_clip_isnan_isinf_nan_to_num():
    x = np.array([-np.inf, -1.5, 0.0, np.nan, 2.0, np.inf], np.float32)
    for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit"):
        check(getattr(snp, name), getattr(np, name), x, ref_dtype=np.bool_)
    check(snp.nan_to_num, np.nan_to_num, x)
    check(lambda v: snp.clip(v, -1.0, 1.0), lambda v: np.clip(v, -1, 1), x)
    check(lambda v: snp.where(v > 0, v, 0.0), lambda v: np.where(v > 0, v, 0), x)


def test_round_half_to_even_like_numpy():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.234], np.float32)
    check(snp.round, np.round, x)
    check(lambda v: snp.round(v, 2), lambda v: np.round(v, 2), x, rtol=1e-6)
    check(lambda v: secant.lax.round(v), lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5), x)


def test_operators_on_arrays_and_scalars():
    a, b = _data((3,), np.float32, 1, 2), _data((3,), np.float32, 1, 2)

    def f(x, y):
        return (x + y, x - 1, 2 * y, x / y, 1 / x, x ** 2, 2 ** x, x ** y, -x, abs(-x),
                x // 0.5, x % 0.7, x < y, x >= 1.5)

    eager = f(snp.asarray(a), snp.asarray(b))
    jitted = secant.jit(f)(a, b)
    ref = f(a.astype(np.float64), b.astype(np.float64))
    for e, j, r in zip(eager, jitted, ref):
        np.testing.assert_allclose(np.asarray(e), r, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-5)
        assert e.dtype == j.dtype


def test_nan_propagates_through_max_min():
    x = np.array([np.nan, 1.0], np.float32)
    y = np.array([0.0, np.nan], np.float32)
    check(snp.maximum, np.maximum, x, y)
    check(snp.minimum, np.minimum, x, y)
    check(snp.fmax, np.fmax, x, y)


def test_mismatched_shapes_name_the_user_line():
    x, y = snp.ones(3), snp.ones(4)
    with pytest.raises(secant.SecantTypeError, match=r"test_elementwise.py:\d+") as e:
        x + y
    assert "(3,)" in str(e.value) and "(4,)" in str(e.value)
    with pytest.raises(secant.SecantTypeError, match=r"test_elementwise.py:\d+"):
        secant.jit(lambda a, b: a * b)(np.ones(3, np.float32), np.ones(4, np.float32))


def test_integer_only_ops_reject_floats():
    with pytest.raises(secant.SecantTypeError, match="integer"):
        snp.bitwise_and(snp.ones(2), snp.ones(2))

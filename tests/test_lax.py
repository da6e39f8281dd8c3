"""secant.lax: every wrapper against a NumPy reference, eagerly and under jit, plus lax's dtype
policy (no promotion; Python scalars take the array operand's dtype)."""
import numpy as np
import pytest
import scipy.special
from numpy.testing import assert_allclose, assert_array_equal

import secant
from secant import lax

RNG = np.random.default_rng(0)


def uniform(shape, dtype=np.float32, low=-3.0, high=3.0):
    return RNG.uniform(low, high, shape).astype(dtype)


def ints(shape, low=-9, high=10, dtype=np.int32):
    return RNG.integers(low, high, shape).astype(dtype)


def bools(shape):
    return RNG.integers(0, 2, shape).astype(bool)


def check(fn, args, ref, rtol=None):
    """fn(*args) eagerly equals ref(*args) (value and dtype), and jit(fn) equals the eager result."""
    want = ref(*args)
    eager = fn(*args)
    jitted = secant.jit(fn)(*args)
    for got_eager, got_jit, expected in zip(*(_as_list(v) for v in (eager, jitted, want))):
        expected = np.asarray(expected)
        assert isinstance(got_eager, secant.Array) and isinstance(got_jit, secant.Array)
        assert got_eager.dtype == got_jit.dtype == expected.dtype, (got_eager.dtype, expected.dtype)
        assert got_eager.shape == got_jit.shape == expected.shape
        if expected.dtype.kind in "fc":
            tol = rtol or (1e-2 if expected.dtype.itemsize == 2 else 1e-5)
            assert_allclose(np.asarray(got_eager, np.float64), expected.astype(np.float64),
                            rtol=tol, atol=tol)
            assert_allclose(np.asarray(got_jit, np.float64), np.asarray(got_eager, np.float64),
                            rtol=tol, atol=tol)
        else:
            assert_array_equal(np.asarray(got_eager), expected)
            assert_array_equal(np.asarray(got_jit), expected)


def _as_list(v):
    return list(v) if isinstance(v, (tuple, list)) else [v]


# --- elementwise unary: (lax name, reference, input domain, dtypes) -----------------------------------
def _round_away(x):
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(x.dtype)


POSITIVE, UNIT, ANY = (0.1, 4.0), (-0.95, 0.95), (-3.0, 3.0)
FLOATS, LOWP = (np.float32,), (np.float32, np.float16)
UNARY = [
    ("neg", np.negative, ANY, LOWP + (np.int32,)),
    ("abs", np.abs, ANY, LOWP + (np.int32,)),
    ("sign", np.sign, ANY, FLOATS + (np.int32,)),
    ("floor", np.floor, ANY, LOWP),
    ("ceil", np.ceil, ANY, LOWP),
    ("round", _round_away, ANY, FLOATS),
    ("sqrt", np.sqrt, POSITIVE, LOWP),
    ("rsqrt", lambda x: (1 / np.sqrt(x)).astype(x.dtype), POSITIVE, FLOATS),
    ("cbrt", np.cbrt, ANY, FLOATS),
    ("exp", np.exp, ANY, LOWP),
    ("exp2", np.exp2, ANY, FLOATS),
    ("log", np.log, POSITIVE, LOWP),
    ("log1p", np.log1p, (-0.9, 3.0), FLOATS),
    ("expm1", np.expm1, ANY, FLOATS),
    ("sin", np.sin, ANY, LOWP),
    ("cos", np.cos, ANY, LOWP),
    ("tan", np.tan, (-1.2, 1.2), FLOATS),
    ("asin", np.arcsin, UNIT, FLOATS),
    ("acos", np.arccos, UNIT, FLOATS),
    ("atan", np.arctan, ANY, FLOATS),
    ("sinh", np.sinh, ANY, FLOATS),
    ("cosh", np.cosh, ANY, FLOATS),
    ("tanh", np.tanh, ANY, LOWP),
    ("asinh", np.arcsinh, ANY, FLOATS),
    ("acosh", np.arccosh, (1.1, 4.0), FLOATS),
    ("atanh", np.arctanh, UNIT, FLOATS),
    ("logistic", scipy.special.expit, ANY, FLOATS),
    ("erf", scipy.special.erf, ANY, FLOATS),
    ("erf_inv", scipy.special.erfinv, UNIT, FLOATS),
    ("lgamma", scipy.special.gammaln, POSITIVE, FLOATS),
    ("digamma", scipy.special.psi, POSITIVE, FLOATS),
]


@pytest.mark.parametrize("name, ref, domain, dtype",
                         [pytest.param(n, r, d, t, id=f"{n}-{np.dtype(t).name}")
                          for n, r, d, ts in UNARY for t in ts])
def test_unary(name, ref, domain, dtype):
    x = uniform((3, 4), dtype, *domain) if np.dtype(dtype).kind == "f" else ints((3, 4))
    check(getattr(lax, name), (x,), lambda x: np.asarray(ref(x)).astype(x.dtype))


@pytest.mark.parametrize("name", ["neg", "exp", "tanh"])
def test_unary_on_0d(name):
    check(getattr(lax, name), (np.float32(0.75),), getattr(np, name.replace("neg", "negative")))


def test_round_methods_on_halves():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], np.float32)
    check(lax.round, (x,), _round_away)
    check(lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), (x,), np.round)


def test_is_finite():
    x = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, 3e38], np.float32)
    check(lax.is_finite, (x,), np.isfinite)


@pytest.mark.parametrize("y", [0, 1, 2, 3, -1, -2])
def test_integer_pow(y):
    check(lambda x: lax.integer_pow(x, y), (uniform((5,), low=0.5, high=2.0),),
          lambda x: (x.astype(np.float64) ** y).astype(np.float32))
    if y >= 0:
        check(lambda x: lax.integer_pow(x, y), (ints((5,)),), lambda x: x ** y)


# --- elementwise binary ---------------------------------------------------------------------------
def _c_div(x, y):
    """lax.div is C division: integer quotients truncate toward zero."""
    return x / y if x.dtype.kind == "f" else np.trunc(x / y).astype(x.dtype)


BINARY = [
    ("add", np.add, (np.float32, np.int32, np.float16)),
    ("sub", np.subtract, (np.float32, np.int32)),
    ("mul", np.multiply, (np.float32, np.int32)),
    ("div", _c_div, (np.float32, np.int32)),
    ("rem", np.fmod, (np.float32, np.int32)),
    ("max", np.maximum, (np.float32, np.int32)),
    ("min", np.minimum, (np.float32, np.int32)),
    ("atan2", np.arctan2, (np.float32,)),
    ("nextafter", np.nextafter, (np.float32,)),
    ("eq", np.equal, (np.float32, np.int32)),
    ("ne", np.not_equal, (np.float32, np.int32)),
    ("lt", np.less, (np.float32, np.int32)),
    ("le", np.less_equal, (np.float32, np.int32)),
    ("gt", np.greater, (np.float32, np.int32)),
    ("ge", np.greater_equal, (np.float32, np.int32)),
]


def _pair(dtype, shapes):
    if np.dtype(dtype).kind == "f":
        return uniform(shapes[0], dtype), uniform(shapes[1], dtype)
    x, y = ints(shapes[0]), ints(shapes[1], 1, 6)        # no zero divisors
    return x, y * np.where(ints(shapes[1], 0, 2) == 0, -1, 1).astype(np.int32)


@pytest.mark.parametrize("name, ref, dtype",
                         [pytest.param(n, r, t, id=f"{n}-{np.dtype(t).name}")
                          for n, r, ts in BINARY for t in ts])
@pytest.mark.parametrize("shapes", [((2, 3), (1, 3)), ((4,), ())], ids=["broadcast", "scalar"])
def test_binary(name, ref, dtype, shapes):
    x, y = _pair(dtype, shapes)
    out_dtype = bool if name in ("eq", "ne", "lt", "le", "gt", "ge") else dtype
    check(getattr(lax, name), (x, y), lambda x, y: np.asarray(ref(x, y)).astype(out_dtype))


def test_pow():
    x, y = uniform((6,), low=0.1, high=3.0), uniform((6,), low=-2.0, high=2.0)
    check(lax.pow, (x, y), np.power)


@pytest.mark.parametrize("name, ref", [("bitwise_and", np.bitwise_and),
                                       ("bitwise_or", np.bitwise_or),
                                       ("bitwise_xor", np.bitwise_xor)])
def test_bitwise(name, ref):
    check(getattr(lax, name), (ints((8,), -100, 100), ints((8,), -100, 100)), ref)
    check(getattr(lax, name), (bools((8,)), bools((8,))), ref)


def test_bitwise_not():
    check(lax.bitwise_not, (ints((8,), -100, 100),), np.invert)
    check(lax.bitwise_not, (bools((8,)),), np.invert)


def test_shifts():
    x, s = ints((16,), -1000, 1000), ints((16,), 0, 32)
    check(lax.shift_left, (x, s), np.left_shift)
    check(lax.shift_right_arithmetic, (x, s), np.right_shift)
    check(lax.shift_right_logical, (x, s),
          lambda x, s: np.right_shift(x.view(np.uint32), s.view(np.uint32)).view(np.int32))


# --- select, clamp, casts --------------------------------------------------------------------------
def test_select():
    check(lax.select, (bools((3, 4)), uniform((3, 4)), uniform((3, 4))), np.where)
    check(lax.select, (bools((5,)), ints((5,)), ints((5,))), np.where)


def test_clamp():
    x = uniform((10,))
    check(lambda x: lax.clamp(-1.0, x, 1.5), (x,), lambda x: np.clip(x, -1.0, 1.5))
    lo, hi = uniform((10,), low=-3, high=0), uniform((10,), low=0, high=3)
    check(lax.clamp, (lo, x, hi), lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi))


@pytest.mark.parametrize("src, dst", [(np.float32, np.int32), (np.int32, np.float32),
                                      (np.float32, np.float16), (np.float32, bool),
                                      (np.int32, np.int8), (bool, np.float32)])
def test_convert_element_type(src, dst):
    x = (uniform((9,), low=-50, high=50) if np.dtype(src).kind == "f" else
         bools((9,)) if src is bool else ints((9,), -100, 100)).astype(src)
    check(lambda x: lax.convert_element_type(x, dst), (x,), lambda x: x.astype(dst))


def test_bitcast_convert_type():
    x = uniform((6,))
    check(lambda x: lax.bitcast_convert_type(x, np.int32), (x,), lambda x: x.view(np.int32))
    check(lambda x: lax.bitcast_convert_type(x, np.float32), (ints((6,)),),
          lambda x: x.view(np.float32))


# --- shapes ------------------------------------------------------------------------------------------
X34 = uniform((3, 4))
STRUCTURAL = [
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
     lambda x: np.broadcast_to(x, (2, 3, 4))),
    ("broadcast_in_dim_expand",
     lambda x: lax.broadcast_in_dim(lax.slice(x, (0, 0), (3, 1)), (3, 5), (0, 1)),
     lambda x: np.broadcast_to(x[:, :1], (3, 5))),
    ("broadcast", lambda x: lax.broadcast(x, (2,)), lambda x: np.broadcast_to(x, (2, 3, 4))),
    ("reshape", lambda x: lax.reshape(x, (2, 6)), lambda x: x.reshape(2, 6)),
    ("reshape_dimensions", lambda x: lax.reshape(x, (12,), dimensions=(1, 0)),
     lambda x: x.T.reshape(12)),
    ("transpose", lambda x: lax.transpose(x, (1, 0)), np.transpose),
    ("rev", lambda x: lax.rev(x, (0, 1)), lambda x: x[::-1, ::-1]),
    ("squeeze", lambda x: lax.squeeze(lax.reshape(x, (1, 3, 4, 1)), (0, -1)), lambda x: x),
    ("expand_dims", lambda x: lax.expand_dims(x, (0, 3)), lambda x: x[None, :, :, None]),
    ("reduce_sum", lambda x: lax.reduce_sum(x, (0,)), lambda x: x.sum(0)),
    ("reduce_max", lambda x: lax.reduce_max(x, (1,)), lambda x: x.max(1)),
    ("reduce_min", lambda x: lax.reduce_min(x, (0, 1)), lambda x: x.min()),
    ("reduce_prod", lambda x: lax.reduce_prod(x, (1,)), lambda x: x.prod(1)),
    ("argmax", lambda x: lax.argmax(x, 1, np.int32), lambda x: x.argmax(1).astype(np.int32)),
    ("argmin", lambda x: lax.argmin(x, 0, np.int32), lambda x: x.argmin(0).astype(np.int32)),
    ("slice", lambda x: lax.slice(x, (0, 1), (3, 4), (2, 2)), lambda x: x[0:3:2, 1:4:2]),
    ("slice_in_dim", lambda x: lax.slice_in_dim(x, 1, None, axis=1), lambda x: x[:, 1:]),
    ("slice_in_dim_negative", lambda x: lax.slice_in_dim(x, -2, -1, axis=0),
     lambda x: x[-2:-1]),
    ("concatenate", lambda x: lax.concatenate([x, lax.slice_in_dim(x, 0, 1), x], 0),
     lambda x: np.concatenate([x, x[:1], x], 0)),
    ("pad", lambda x: lax.pad(x, 1, ((1, 2, 0), (-1, 1, 1))),
     lambda x: np.pad(np.insert(x, [1, 2, 3], 1, axis=1), ((1, 2), (0, 1)),
                      constant_values=1)[:, 1:]),
    ("cumsum", lambda x: lax.cumsum(x, axis=1), lambda x: np.cumsum(x, 1)),
    ("cumsum_reverse", lambda x: lax.cumsum(x, axis=0, reverse=True),
     lambda x: np.cumsum(x[::-1], 0)[::-1]),
    ("cumprod", lambda x: lax.cumprod(x, axis=1), lambda x: np.cumprod(x, 1)),
    ("cummax", lambda x: lax.cummax(x, axis=0), lambda x: np.maximum.accumulate(x, 0)),
    ("cummin", lambda x: lax.cummin(x, axis=1, reverse=True),
     lambda x: np.minimum.accumulate(x[:, ::-1], 1)[:, ::-1]),
    ("sort", lambda x: lax.sort(x), lambda x: np.sort(x, -1)),
    ("sort_dimension0", lambda x: lax.sort(x, dimension=0), lambda x: np.sort(x, 0)),
    ("full_like", lambda x: lax.full_like(x, 2.5), lambda x: np.full_like(x, 2.5)),
    ("full_like_dtype_shape", lambda x: lax.full_like(x, 7, np.int32, (2,)),
     lambda x: np.full((2,), 7, np.int32)),
    ("zeros_like_array", lax.zeros_like_array, np.zeros_like),
]


OWN_DTYPE = {"argmax", "argmin", "full_like_dtype_shape"}    # the others keep the input's dtype


@pytest.mark.parametrize("name, fn, ref", [pytest.param(*c, id=c[0]) for c in STRUCTURAL])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_structural(name, fn, ref, dtype):
    x = X34 if dtype == np.float32 else ints((3, 4), 1, 5)
    check(fn, (x,), ref if name in OWN_DTYPE else lambda x: np.asarray(ref(x)).astype(x.dtype))


def test_reduce_and_or():
    b = bools((4, 5))
    check(lambda b: lax.reduce_and(b, (1,)), (b,), lambda b: b.all(1))
    check(lambda b: lax.reduce_or(b, (0, 1)), (b,), lambda b: np.bool_(b.any()))


def test_sort_several_operands_and_key_val():
    keys = ints((10,), 0, 4)
    vals = np.arange(10, dtype=np.float32)
    order = np.argsort(keys, kind="stable")
    check(lambda k, v: lax.sort((k, v), num_keys=1), (keys, vals),
          lambda k, v: (k[order], v[order]))
    check(lax.sort_key_val, (keys, vals), lambda k, v: (k[order], v[order]))
    k2 = ints((10,), 0, 2)
    order2 = np.lexsort((k2, keys))
    check(lambda a, b, v: lax.sort([a, b, v], num_keys=2), (keys, k2, vals),
          lambda a, b, v: [a[order2], b[order2], v[order2]])


def test_sort_puts_nans_last():
    x = np.array([3.0, np.nan, -1.0, 2.0, np.nan, 0.0], np.float32)
    check(lax.sort, (x,), np.sort)


# --- dot ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_dot_general(dtype):
    make = (lambda s: uniform(s, dtype)) if dtype == np.float32 else (lambda s: ints(s, -4, 5))
    a, b = make((3, 4)), make((4, 5))
    check(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))), (a, b), np.matmul)
    a, b = make((2, 3, 4)), make((2, 5, 4))
    check(lambda a, b: lax.dot_general(a, b, (((2,), (2,)), ((0,), (0,)))), (a, b),
          lambda a, b: np.einsum("bik,bjk->bij", a, b))
    a, b = make((4, 2)), make((3, 4))
    check(lambda a, b: lax.dot_general(a, b, (((0,), (1,)), ((), ()))), (a, b),
          lambda a, b: a.T @ b.T)


def test_dot_general_preferred_element_type():
    a, b = uniform((3, 4), np.float16), uniform((4, 2), np.float16)
    check(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                       preferred_element_type=np.float32),
          (a, b), lambda a, b: a.astype(np.float32) @ b.astype(np.float32))


def test_dot():
    v, w, m, n = uniform((4,)), uniform((4,)), uniform((3, 4)), uniform((4, 2))
    check(lax.dot, (v, w), np.dot)
    check(lax.dot, (m, v), np.dot)
    check(lax.dot, (m, n), np.dot)
    with pytest.raises(secant.SecantTypeError):
        lax.dot(uniform((2, 2, 2)), v)


# --- dynamic slicing (start indices are traced under jit) -----------------------------------------------
def _clamp_start(start, dim, size):
    return min(max(int(start), 0), dim - size)


@pytest.mark.parametrize("i, j", [(0, 1), (2, 3), (-4, 1), (9, 9)])
def test_dynamic_slice(i, j):
    x = uniform((5, 6))
    si, sj = np.int32(i), np.int32(j)
    check(lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)), (x, si, sj),
          lambda x, i, j: x[_clamp_start(i, 5, 2):][:2, _clamp_start(j, 6, 3):][:, :3])
    check(lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, axis=1), (x, sj),
          lambda x, j: x[:, _clamp_start(j, 6, 2):][:, :2])
    check(lambda x, i: lax.dynamic_index_in_dim(x, i, axis=0, keepdims=False), (x, si),
          lambda x, i: x[_clamp_start(i, 5, 1)])
    check(lambda x, i: lax.dynamic_index_in_dim(x, i, axis=1), (x, sj),
          lambda x, j: x[:, _clamp_start(j, 6, 1)][:, None])


@pytest.mark.parametrize("i, j", [(0, 0), (1, 2), (4, 5), (-1, 0)])
def test_dynamic_update_slice(i, j):
    x, u = uniform((5, 6)), uniform((2, 3))

    def ref(x, u, i, j):
        out = x.copy()
        a, b = _clamp_start(i, 5, 2), _clamp_start(j, 6, 3)
        out[a:a + 2, b:b + 3] = u
        return out
    check(lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)),
          (x, u, np.int32(i), np.int32(j)), ref)
    check(lambda x, u: lax.dynamic_update_slice(x, u, (i, j)), (x, u),
          lambda x, u: ref(x, u, i, j))


# --- creation ------------------------------------------------------------------------------------------
def test_iota_and_full():
    check(lambda: lax.iota(np.int32, 5), (), lambda: np.arange(5, dtype=np.int32))
    check(lambda: lax.iota(np.float32, 4), (), lambda: np.arange(4, dtype=np.float32))
    check(lambda: lax.broadcasted_iota(np.int32, (2, 3), 1), (),
          lambda: np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3)))
    check(lambda: lax.full((2, 3), 1.5), (), lambda: np.full((2, 3), 1.5, np.float32))
    check(lambda: lax.full((3,), 4, np.int8), (), lambda: np.full((3,), 4, np.int8))
    assert lax.full((2,), 1.0).weak_type and not lax.full((2,), 1.0, np.float32).weak_type


# --- gather and scatter ----------------------------------------------------------------------------------
ROWS_GATHER = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                         start_index_map=(0,))
ROWS_SCATTER = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                           scatter_dims_to_operand_dims=(0,))


def test_gather_rows_with_clamping():
    x = uniform((5, 3))
    idx = np.array([[0], [4], [2], [7], [-3]], np.int32)
    check(lambda x, i: lax.gather(x, i, ROWS_GATHER, (1, 3)), (x, idx),
          lambda x, i: x[np.clip(i[:, 0], 0, 4)])


def test_gather_2d_windows():
    x = uniform((4, 5))
    idx = np.array([[0, 0], [2, 3], [3, 4]], np.int32)
    dn = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                    start_index_map=(0, 1))
    check(lambda x, i: lax.gather(x, i, dn, (2, 2)), (x, idx),
          lambda x, i: np.stack([x[min(a, 2):min(a, 2) + 2, min(b, 3):min(b, 3) + 2]
                                 for a, b in i]))


SCATTERS = [
    ("scatter", lambda out, i, u: out.__setitem__(i, u)),
    ("scatter_add", np.add.at),
    ("scatter_mul", np.multiply.at),
    ("scatter_min", np.minimum.at),
    ("scatter_max", np.maximum.at),
]


@pytest.mark.parametrize("name, np_at", SCATTERS, ids=[s[0] for s in SCATTERS])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_rows_drops_out_of_bounds(name, np_at, dtype):
    x = uniform((5, 3)).astype(dtype)
    unique = name == "scatter"                   # plain scatter with duplicates is unordered
    rows = np.array([0, 3, 9, 1] if unique else [0, 3, 3, 9, 1, 0], np.int32)
    upd = uniform((len(rows), 3)).astype(dtype)

    def ref(x, idx, upd):
        out = x.copy()
        keep = (idx[:, 0] >= 0) & (idx[:, 0] < 5)
        np_at(out, idx[keep, 0], upd[keep])
        return out
    check(lambda x, i, u: getattr(lax, name)(x, i, u, ROWS_SCATTER), (x, rows[:, None], upd), ref)


# --- lax's dtype policy --------------------------------------------------------------------------------
def test_no_promotion_between_arrays():
    f32, i32 = np.ones(3, np.float32), np.ones(3, np.int32)
    with pytest.raises(secant.SecantTypeError, match="same dtype"):
        lax.add(f32, i32)
    with pytest.raises(secant.SecantTypeError, match="same dtype"):
        secant.jit(lax.mul)(f32, np.ones(3, np.float16))


def test_python_scalars_take_the_operand_dtype():
    half = np.ones(3, np.float16)
    out = lax.add(half, 1.0)
    assert out.dtype == np.float16 and not out.weak_type
    assert lax.mul(np.ones(2, np.int8), 3).dtype == np.int8
    assert secant.jit(lambda x: lax.sub(x, 2))(np.ones(2, np.uint8)).dtype == np.uint8
    both = lax.add(1.0, 2.0)
    assert both.dtype == np.float32 and both.weak_type and float(both) == 3.0
    with pytest.raises(secant.SecantTypeError, match="does not fit"):
        lax.add(np.ones(2, np.int32), 1.5)


def test_stop_gradient_is_identity_on_pytrees():
    tree = {"w": uniform((2, 2)), "b": [1.0, np.arange(3, dtype=np.int32)]}
    out = lax.stop_gradient(tree)
    assert secant.tree_util.tree_structure(out) == secant.tree_util.tree_structure(tree)
    for got, want in zip(secant.tree_util.tree_leaves(out), secant.tree_util.tree_leaves(tree)):
        assert isinstance(got, secant.Array)
        assert_array_equal(np.asarray(got), np.asarray(want, dtype=got.dtype))
    jitted = secant.jit(lambda t: lax.stop_gradient(t["w"]) * 2)(tree)
    assert_allclose(np.asarray(jitted), tree["w"] * 2)


LAX_API = """add sub mul div rem pow integer_pow max min neg abs sign floor ceil round sqrt rsqrt cbrt
exp exp2 log log1p expm1 sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh logistic
erf erf_inv lgamma digamma is_finite eq ne lt le gt ge bitwise_and bitwise_or bitwise_xor
bitwise_not shift_left shift_right_logical shift_right_arithmetic select clamp convert_element_type
bitcast_convert_type broadcast_in_dim broadcast reshape transpose rev squeeze expand_dims reduce_sum
reduce_max reduce_min reduce_prod reduce_and reduce_or argmax argmin dot_general dot slice
slice_in_dim dynamic_slice dynamic_slice_in_dim dynamic_update_slice dynamic_index_in_dim
concatenate pad iota broadcasted_iota full full_like zeros_like_array cumsum cumprod cummax cummin
sort sort_key_val gather scatter scatter_add scatter_mul scatter_min scatter_max
GatherDimensionNumbers ScatterDimensionNumbers stop_gradient""".split()


def test_lax_exposes_the_documented_names():
    assert [n for n in LAX_API if not callable(getattr(lax, n, None))] == []

"""jax.lax's names secant lacked: population_count, clz (stablehlo.popcnt /
count_leading_zeros), reduce_precision (stablehlo.reduce_precision; linear, as JAX's), and the
shift operations under vmap (they were refused: no batching rule). Eager (NumPy) against jit
(XLA) and against NumPy references, vmap against a loop, reduce_precision's derivative."""
import ml_dtypes
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

INTS = {
    np.int8: [0, 1, 7, -1, 127, -128, 64],
    np.uint8: [0, 1, 255, 128, 3, 16, 200],
    np.int32: [0, 1, 7, -1, 255, 2 ** 30, -2 ** 31],
    np.uint32: [0, 1, 2 ** 32 - 1, 2 ** 31, 12345, 2 ** 16, 3],
    np.int64: [0, 1, -1, 2 ** 62, -2 ** 63, 2 ** 40 + 5, 99],
    np.uint64: [0, 1, 2 ** 64 - 1, 2 ** 63, 2 ** 33, 77, 5],
}


def _popcount_reference(x):
    return np.array([bin(int(v) & (2 ** (8 * x.itemsize) - 1)).count("1") for v in x], x.dtype)


def _clz_reference(x):
    bits = 8 * x.itemsize
    return np.array([bits - (int(v) & (2 ** bits - 1)).bit_length() for v in x], x.dtype)


@pytest.mark.parametrize("dtype", sorted(INTS, key=lambda d: np.dtype(d).name))
def test_population_count_and_clz(x64, dtype):
    x = np.array(INTS[dtype], dtype)
    for fn, ref in ((lax.population_count, _popcount_reference), (lax.clz, _clz_reference)):
        want = ref(x)
        got = fn(x)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(np.asarray(got), want)
        np.testing.assert_array_equal(np.asarray(secant.jit(fn)(x)), want)
        np.testing.assert_array_equal(np.asarray(secant.vmap(fn)(x)), want)


def test_bit_counts_lower_to_stablehlo_and_refuse_floats():
    text = secant.jit(lambda v: lax.clz(lax.population_count(v))).lower(
        np.arange(3, dtype=np.int32)).as_text()
    assert "stablehlo.popcnt" in text and "stablehlo.count_leading_zeros" in text
    for fn in (lax.population_count, lax.clz):
        with pytest.raises(TypeError, match="integer"):
            secant.jit(fn)(np.float32([1.0]))


def test_shifts_under_vmap_and_grad_of_a_program_using_them():
    x = np.arange(-3, 5, dtype=np.int32)
    for name in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
        fn = getattr(lax, name)
        want = np.array([int(fn(v, np.int32(2))) for v in x])
        np.testing.assert_array_equal(np.asarray(secant.vmap(lambda v: fn(v, 2))(x)), want)
        np.testing.assert_array_equal(
            np.asarray(secant.vmap(fn)(x, np.full(8, 2, np.int32))), want)

    def f(v):
        scale = lax.convert_element_type(lax.shift_left(lax.population_count(
            lax.convert_element_type(v, np.int32)), 1), np.float32)
        return (snp.sin(v) * scale).sum()
    v = np.float32([1.0, 3.0, 7.0])
    np.testing.assert_allclose(np.asarray(secant.grad(f)(v)), np.cos(v) * [2, 4, 6], rtol=1e-6)


F32 = np.array([1.0, 1.0 / 3, 3.14159, 1e30, -1e-30, 65504, 65520, 1e-6, np.inf, -np.inf,
                np.nan, 0.0, -0.0, 1.00390625, 1.01171875], np.float32)   # (two bf16 ties)


@pytest.mark.parametrize("exponent_bits, mantissa_bits", [(8, 7), (5, 10), (8, 23), (4, 3),
                                                          (11, 52), (2, 0)])
def test_reduce_precision_eager_equals_xla(exponent_bits, mantissa_bits):
    def fn(v):
        return lax.reduce_precision(v, exponent_bits, mantissa_bits)
    eager = np.asarray(fn(F32))
    np.testing.assert_array_equal(eager, np.asarray(secant.jit(fn)(F32)))
    np.testing.assert_array_equal(np.asarray(secant.vmap(fn)(F32)), eager)
    assert fn(F32).dtype == np.float32


def test_reduce_precision_formats():
    # bfloat16's widths: as a round trip through bfloat16 (round to nearest even)
    np.testing.assert_array_equal(np.asarray(lax.reduce_precision(F32, 8, 7)),
                                  F32.astype(ml_dtypes.bfloat16).astype(np.float32))
    # float16's: the same on float16's normal range, inf past it, zero below (no subnormals)
    normal = F32[np.isfinite(F32) & ((np.abs(F32) >= 2 ** -14) | (F32 == 0))
                 & (np.abs(F32) <= 65504)]
    np.testing.assert_array_equal(np.asarray(lax.reduce_precision(normal, 5, 10)),
                                  normal.astype(np.float16).astype(np.float32))
    out = np.asarray(lax.reduce_precision(np.float32([1e5, -1e5, 1e-6, -1e-6]), 5, 10))
    np.testing.assert_array_equal(out, [np.inf, -np.inf, 0.0, -0.0])
    assert np.signbit(out[3])
    text = secant.jit(lambda v: lax.reduce_precision(v, 5, 10)).lower(F32).as_text()
    assert "stablehlo.reduce_precision" in text
    with pytest.raises(TypeError):
        lax.reduce_precision(np.int32([1]), 5, 10)


def test_reduce_precision_float64(x64):
    x = np.array([1.0 / 3, np.pi, 1e300, -2.5e-300, 1e-320])
    np.testing.assert_array_equal(np.asarray(lax.reduce_precision(x, 8, 23)),
                                  np.asarray(secant.jit(lambda v: lax.reduce_precision(v, 8, 23))(x)))
    np.testing.assert_array_equal(np.asarray(lax.reduce_precision(x[:2], 8, 23)),
                                  x[:2].astype(np.float32).astype(np.float64))


def test_reduce_precision_derivative_is_the_rounded_cotangent():
    """JAX's rule: linear (the tangent, and the cotangent, rounded the same way)."""
    v = np.float32([1.0, 1.0 / 3, 0.7])
    g = secant.grad(lambda x: (lax.reduce_precision(x, 5, 10) * x).sum())(v)
    r = np.asarray(lax.reduce_precision(v, 5, 10))
    np.testing.assert_allclose(np.asarray(g), r + np.asarray(lax.reduce_precision(v, 5, 10)),
                               rtol=1e-7)
    _, tangent = secant.jvp(lambda x: lax.reduce_precision(x, 5, 2), (np.float32(1.3),),
                            (np.float32(0.3),))
    assert float(tangent) == float(lax.reduce_precision(np.float32(0.3), 5, 2)) == 0.3125
    got = secant.vmap(secant.grad(lambda x: lax.reduce_precision(x * x, 8, 7)))(v)
    np.testing.assert_allclose(np.asarray(got), 2 * v, rtol=1e-7)
    jitted = secant.jit(secant.grad(lambda x: (lax.reduce_precision(x, 5, 10) * x).sum()))(v)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(g), rtol=1e-7)


def _mulhi_reference(x, y):
    bits = 8 * x.itemsize
    return np.array([(int(a) * int(b)) >> bits for a, b in zip(x, y)], dtype=object).astype(
        np.int64 if x.dtype.kind == "i" else np.uint64).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32])
def test_mulhi_against_exact_products(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, info.max, info.min, 123 % info.max, info.max // 3,
                  -7 if info.min < 0 else 7], dtype=dtype)
    y = np.array([5, info.max, info.max, info.min, 99, 3, info.max], dtype=dtype)
    want = _mulhi_reference(x, y)
    np.testing.assert_array_equal(np.asarray(lax.mulhi(x, y)), want)
    np.testing.assert_array_equal(np.asarray(secant.jit(lax.mulhi)(x, y)), want)
    np.testing.assert_array_equal(np.asarray(secant.vmap(lax.mulhi)(x, y)), want)
    with pytest.raises(TypeError):
        lax.mulhi(np.float32([1.0]), np.float32([2.0]))


def test_mulhi_64_bit(x64):
    x = np.array([2 ** 63 - 1, -2 ** 63, -3, 2 ** 40 + 17], np.int64)
    y = np.array([2 ** 63 - 1, 5, 2 ** 62, -(2 ** 35) + 3], np.int64)
    np.testing.assert_array_equal(np.asarray(lax.mulhi(x, y)), _mulhi_reference(x, y))
    u = x.view(np.uint64)
    np.testing.assert_array_equal(np.asarray(secant.jit(lax.mulhi)(u, u)), _mulhi_reference(u, u))


def test_reduce_xor():
    a = np.array([[1, 2, 3], [7, 7, 1]], np.int32)
    for axes in ((0,), (1,), (0, 1)):
        want = np.bitwise_xor.reduce(a, axis=axes)
        np.testing.assert_array_equal(np.asarray(lax.reduce_xor(a, axes)), want)
        np.testing.assert_array_equal(np.asarray(secant.jit(lambda v, ax=axes: lax.reduce_xor(
            v, ax))(a)), want)
    np.testing.assert_array_equal(np.asarray(secant.vmap(lambda v: lax.reduce_xor(v, (0,)))(a)),
                                  [0, 1])
    assert not bool(lax.reduce_xor(np.array([True, True, False]), (0,)))
    with pytest.raises(TypeError):
        lax.reduce_xor(np.float32([1.0]), (0,))


def test_scatter_sub_and_its_gradient():
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    idx = np.array([[1], [3], [1]])
    upd = np.float32([1.0, 2.0, 3.0])
    operand = np.float32([10.0, 20.0, 30.0, 40.0])
    want = np.float32([10.0, 16.0, 30.0, 38.0])
    np.testing.assert_array_equal(np.asarray(lax.scatter_sub(operand, idx, upd, dn)), want)
    np.testing.assert_array_equal(
        np.asarray(secant.jit(lambda o, u: lax.scatter_sub(o, idx, u, dn))(operand, upd)), want)
    g = secant.grad(lambda u: (lax.scatter_sub(operand, idx, u, dn) ** 2).sum())(upd)
    np.testing.assert_allclose(np.asarray(g), [-32.0, -76.0, -32.0])      # -2 * out at each index


def test_approx_max_k_and_min_k_are_exact():
    v = np.float32([[3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0], [0.0, -1.0, 2.0, 8.0, 7.0, 3.0, 3.0, 1.0]])
    values, indices = lax.approx_max_k(v, 3)
    order = np.argsort(-v, axis=-1, kind="stable")[:, :3]
    np.testing.assert_array_equal(np.asarray(indices), order)
    np.testing.assert_array_equal(np.asarray(values), np.take_along_axis(v, order, -1))
    values, indices = lax.approx_min_k(v, 2, recall_target=0.9)
    order = np.argsort(v, axis=-1, kind="stable")[:, :2]
    np.testing.assert_array_equal(np.asarray(indices), order)
    np.testing.assert_array_equal(np.asarray(values), np.take_along_axis(v, order, -1))
    batched = secant.vmap(lambda r: lax.approx_max_k(r, 2)[0])(v)
    np.testing.assert_array_equal(np.asarray(batched), [np.sort(r)[::-1][:2] for r in v])
    g = secant.grad(lambda r: lax.approx_min_k(r, 2)[0].sum())(v[0])
    np.testing.assert_array_equal(np.asarray(g), [0, 1, 0, 1, 0, 0, 0, 0])
    assert lax.approx_max_k(v, 1, reduction_dimension=0)[1].shape == (1, 8)


def test_index_take():
    src = np.arange(24.0).reshape(2, 3, 4)
    idxs = (np.array([0, 1, 5]), np.array([1, 2, -4]))       # (modulo each axis' size, as JAX)
    want = np.stack([src[0, :, 1], src[1, :, 2], src[1, :, 0]])
    np.testing.assert_array_equal(np.asarray(lax.index_take(src, idxs, (0, 2))), want)
    np.testing.assert_array_equal(
        np.asarray(secant.jit(lambda s: lax.index_take(s, idxs, (0, 2)))(src)), want)
    g = secant.grad(lambda s: lax.index_take(s, idxs, (0, 2)).sum())(src.astype(np.float32))
    want_g = np.zeros_like(src)
    for i, j in ((0, 1), (1, 2), (1, 0)):
        want_g[i, :, j] += 1
    np.testing.assert_array_equal(np.asarray(g), want_g)


def test_shape_helpers_match_the_convolutions():
    lhs, rhs = np.ones((2, 3, 10, 9), np.float32), np.ones((4, 3, 3, 2), np.float32)
    for strides, padding in (((1, 2), "SAME"), ((2, 1), "VALID"), ((1, 1), [(0, 0), (1, 2)])):
        out = lax.conv_general_dilated(lhs, rhs, strides, padding)
        assert lax.conv_shape_tuple(lhs.shape, rhs.shape, strides, padding) == out.shape
    x, k = np.ones((1, 7, 6, 3), np.float32), np.ones((3, 2, 3, 5), np.float32)
    for strides, padding in (((2, 2), "SAME"), ((2, 1), "VALID"), ((1, 2), [(1, 2), (0, 1)])):
        dn = ("NHWC", "HWIO", "NHWC")
        out = lax.conv_transpose(x, k, strides, padding, dimension_numbers=dn)
        assert lax.conv_transpose_shape_tuple(x.shape, k.shape, strides, padding, dn) == out.shape
    a = np.ones((5, 6), np.float32)
    out = lax.reduce_window(a, 0.0, lax.add, (2, 2), (1, 2), ((0, 0), (1, 1)))
    assert lax.reduce_window_shape_tuple(a.shape, (2, 2), (1, 2), ((0, 0), (1, 1))) == out.shape
    assert lax.reduce_window_shape_tuple((5, 6), (2, 2), (1, 1), ((0, 0), (0, 0)), (2, 1),
                                         (1, 2)) == (8, 4)


def test_single_device_no_ops():
    v = np.float32([1.0, 2.0])
    assert lax.with_sharding_constraint(v, None) is v
    plus_one = lax.composite(lambda x: x + 1.0, "my.plus_one")
    np.testing.assert_array_equal(np.asarray(secant.grad(lambda x: (plus_one(x) ** 2).sum())(v)),
                                  [4.0, 6.0])
    got = lax.platform_dependent(v, cpu=lambda x: x * 10, default=lambda x: x)
    np.testing.assert_array_equal(np.asarray(got), [10.0, 20.0])
    assert float(lax.platform_dependent(3.0, default=lambda x: x - 1)) == 2.0
    with pytest.raises(NotImplementedError):
        lax.platform_dependent(3.0, tpu=lambda x: x)


def test_gather_scatter_mode_members_are_the_mode_strings():
    mode = lax.GatherScatterMode
    assert mode.from_any("clip") is mode.CLIP and mode.from_any(None) is mode.FILL_OR_DROP
    assert mode.from_any(mode.ONE_HOT) is mode.ONE_HOT
    with pytest.raises(ValueError):
        mode.from_any("wrap")
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    out = lax.scatter_add(np.zeros(3, np.float32), np.array([[1], [5]]), np.float32([1.0, 2.0]),
                          dn, mode=mode.FILL_OR_DROP)              # index 5: dropped
    np.testing.assert_array_equal(np.asarray(out), [0.0, 1.0, 0.0])
    dg = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))

    def take(v):
        return lax.gather(v, np.array([[1], [5]]), dg, (1,), mode=mode.CLIP).sum()
    v = np.float32([0.0, 1.0, 2.0])
    assert float(take(v)) == 3.0                                     # index 5: clipped to 2
    np.testing.assert_array_equal(np.asarray(secant.grad(take)(v)), [0.0, 1.0, 1.0])
    filled = lax.gather(v, np.array([[1], [5]]), dg, (1,), mode=mode.FILL_OR_DROP)
    np.testing.assert_array_equal(np.asarray(filled), [1.0, np.nan])   # index 5: NaN
    with pytest.raises(secant.SecantError, match="mode"):
        lax.gather(v, np.array([[1]]), dg, (1,), mode=mode.ONE_HOT)


def test_conv_general_dilated_patches():
    x = np.random.default_rng(0).normal(size=(2, 3, 5, 6)).astype(np.float32)
    want = np.zeros((2, 18, 4, 2), np.float32)      # (c, a, b) flattened: channel first
    count = np.zeros_like(x)
    for i in range(4):
        for j in range(2):
            want[:, :, i, j] = x[:, :, i:i + 2, 2 * j:2 * j + 3].reshape(2, -1)
            count[:, :, i:i + 2, 2 * j:2 * j + 3] += 1

    def patches(v):
        return lax.conv_general_dilated_patches(v, (2, 3), (1, 2), "VALID")
    np.testing.assert_allclose(np.asarray(patches(x)), want, atol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.jit(patches)(x)), want, atol=1e-6)
    nhwc = lax.conv_general_dilated_patches(np.moveaxis(x, 1, -1), (2, 3), (1, 2), "VALID",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(np.moveaxis(np.asarray(nhwc), -1, 1), want, atol=1e-6)
    g = secant.grad(lambda v: (patches(v) ** 2).sum())(x)
    np.testing.assert_allclose(np.asarray(g), 2 * x * count, rtol=1e-5)
    batched = secant.vmap(patches)(x[:, None])
    np.testing.assert_allclose(np.asarray(batched)[:, 0], want, atol=1e-6)


def test_conv_dimension_numbers_has_jax_signature():
    """jax.lax.conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) (secant's took
    (ndim, dimension_numbers): a JAX program calling it failed)."""
    dn = lax.conv_dimension_numbers((1, 5, 5, 3), (2, 2, 3, 4), ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    iota = (0, 1, 2, 3)
    assert lax.conv_dimension_numbers((1, 3, 5, 5), (4, 3, 2, 2), None) == (iota, iota, iota)
    assert lax.conv_dimension_numbers((1, 3, 5, 5), (4, 3, 2, 2), dn) == dn
    with pytest.raises(TypeError):
        lax.conv_dimension_numbers((1, 3, 5, 5), (4, 3, 2), None)

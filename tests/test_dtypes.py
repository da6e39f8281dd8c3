"""JAX's dtype semantics: the promotion lattice, weak Python scalars, 32-bit defaults, x64."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends import dtypes

bf16 = dtypes.bfloat16

# (a, b, expected) for strong dtypes, from JAX's published promotion table (x64 enabled).
STRONG = [
    (np.int8, np.uint8, np.int16), (np.uint8, np.int32, np.int32), (np.int32, np.float32, np.float32),
    (np.int64, np.float16, np.float16), (bf16, np.float16, np.float32), (np.bool_, np.int8, np.int8),
    (np.uint32, np.int32, np.int64), (np.uint64, np.float32, np.float32),
    (np.float32, np.complex64, np.complex64), (np.float64, np.complex64, np.complex128),
    (np.uint8, np.uint16, np.uint16), (np.int16, bf16, bf16), (np.bool_, np.bool_, np.bool_),
]


@pytest.mark.parametrize("a,b,expected", STRONG)
def test_strong_promotion_table(a, b, expected, x64):
    assert dtypes.promote_types(a, b) == np.dtype(expected)
    assert dtypes.promote_types(b, a) == np.dtype(expected)


@pytest.mark.parametrize("a,b,expected", [
    (np.uint32, np.int32, np.int32), (np.float64, np.float32, np.float32),
    (np.int64, np.int8, np.int32)])
def test_promotion_is_canonicalised_without_x64(a, b, expected):
    assert dtypes.promote_types(a, b) == np.dtype(expected)


@pytest.mark.parametrize("dtype,scalar,expected,weak", [
    (np.int8, 3, np.int8, False), (np.uint32, 3, np.uint32, False),
    (np.float16, 2.5, np.float16, False), (bf16, 2.5, bf16, False),
    (np.int32, 2.5, np.float32, True), (np.bool_, 3, np.int32, True),
    (np.int8, 2.5, np.float32, True),
])
def test_python_scalars_are_weak(dtype, scalar, expected, weak):
    x = snp.ones(3, dtype=dtype)
    for y in (x + scalar, scalar + x):
        assert y.dtype == np.dtype(expected)
    assert (x * scalar).weak_type == weak


def test_int_plus_float_weak_is_strong_float():
    # jnp: int32 array + 2.5 -> float32 (the weak float takes the default float width)
    y = snp.arange(3) + 2.5
    assert y.dtype == np.float32
    np.testing.assert_allclose(np.asarray(y), np.arange(3) + 2.5)


def test_defaults_are_32_bit():
    assert snp.asarray(np.arange(3.0)).dtype == np.float32
    assert snp.asarray([1, 2]).dtype == np.int32
    assert snp.asarray(1.0).dtype == np.float32 and snp.asarray(1.0).weak_type
    assert snp.asarray(True).dtype == np.bool_


def test_x64_keeps_64_bit(x64):
    assert snp.asarray(np.arange(3.0)).dtype == np.float64
    assert snp.asarray([1, 2]).dtype == np.int64
    big = snp.asarray(np.array([2 ** 40 + 1]))
    out = secant.jit(lambda v: v + 1)(big)
    assert out.dtype == np.int64 and int(np.asarray(out)[0]) == 2 ** 40 + 2
    f = secant.jit(lambda v: snp.exp(v))(np.array([1e-300, 700.0]))
    assert f.dtype == np.float64
    np.testing.assert_allclose(np.asarray(f), np.exp([1e-300, 700.0]), rtol=1e-14)


def test_weak_type_is_part_of_the_jit_signature():
    calls = []

    def f(x):
        calls.append(1)
        return x * 2

    jf = secant.jit(f)
    a = jf(3.0)
    b = jf(snp.asarray(np.float32(3.0)))
    assert a.weak_type and not b.weak_type
    assert len(calls) == 2
    jf(4.0)
    assert len(calls) == 2


def test_bfloat16_through_core_ops():
    x = snp.asarray(np.array([0.5, 1.5, -2.0], dtype=bf16))
    for f in (lambda v: v * v + 1, snp.sin, snp.exp, lambda v: snp.maximum(v, 0.0)):
        eager = f(x)
        jitted = secant.jit(f)(x)
        assert eager.dtype == bf16 and jitted.dtype == bf16
        ref = f(snp.asarray(np.asarray(x).astype(np.float32)))
        np.testing.assert_allclose(np.asarray(eager).astype(np.float32), np.asarray(ref), rtol=1e-2)
        np.testing.assert_allclose(np.asarray(jitted).astype(np.float32), np.asarray(ref), rtol=1e-2)


def test_unsupported_dtype_is_a_clear_error():
    with pytest.raises(secant.SecantTypeError, match="not supported"):
        snp.asarray(np.array(["a"]))

"""secant.numpy array creation: constants, ranges, eye/tri/diag, meshgrid, with JAX's dtypes."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.errors import ConcretizationError, SecantValueError
from numpy_api_checks import check, data


def test_default_dtypes_are_32_bit():
    assert snp.zeros(3).dtype == np.float32 and snp.ones((2, 2)).dtype == np.float32
    assert snp.empty((2,)).dtype == np.float32
    assert snp.arange(5).dtype == np.int32
    assert snp.arange(0.0, 1.0, 0.25).dtype == np.float32
    assert snp.arange(0, 5, 0.5).dtype == np.float32
    assert snp.eye(3).dtype == np.float32 and snp.identity(2).dtype == np.float32
    assert snp.linspace(0, 1, 5).dtype == np.float32
    assert snp.full((2,), 3).dtype == np.int32 and snp.full((2,), 3).weak_type
    assert snp.full((2,), 3.0, np.int8).dtype == np.int8
    assert snp.zeros(3, dtype=int).dtype == np.int32
    assert snp.tri(3).dtype == np.float32


def test_x64_defaults(x64):
    assert snp.zeros(3).dtype == np.float64 and snp.arange(3).dtype == np.int64
    assert snp.linspace(0, 1, 3).dtype == np.float64


@pytest.mark.parametrize("shape", [(), 3, (2, 3), (0, 2)])
@pytest.mark.parametrize("dtype", [None, np.int32, np.bool_, np.float16])
def test_constant_fills(shape, dtype):
    for name in ["zeros", "ones"]:
        out = getattr(snp, name)(shape, dtype)
        ref = getattr(np, name)(shape, dtype or np.float32)
        assert out.dtype == ref.dtype and out.shape == ref.shape
        np.testing.assert_array_equal(np.asarray(out), ref)
    out = snp.full(shape, 2, dtype)
    np.testing.assert_array_equal(np.asarray(out), np.full(shape, 2, dtype or np.int32))


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_])
def test_like_functions(dtype):
    x = data((2, 3), dtype)
    check(snp.zeros_like, np.zeros_like, x)
    check(snp.ones_like, np.ones_like, x)
    check(lambda a: snp.full_like(a, 1), lambda a: np.full_like(a, 1), x)
    assert snp.empty_like(x, shape=(4,)).shape == (4,)
    check(lambda a: snp.zeros_like(a, dtype=np.float32), lambda a: np.zeros_like(a, np.float32), x)


def test_like_functions_keep_weak_type():
    assert snp.zeros_like(2.0).weak_type and not snp.zeros_like(snp.zeros(2)).weak_type


def test_full_with_traced_value_and_array_fill():
    x = data((3,))
    check(lambda a: snp.full((2, 3), a), lambda a: np.full((2, 3), a), x)
    check(lambda a: snp.full((4,), snp.sum(a)), lambda a: np.full((4,), a.sum()), x)
    check(lambda a: snp.full_like(a, snp.max(a)), lambda a: np.full_like(a, a.max()), x)
    check(lambda a: snp.zeros_like(a) + a, lambda a: a, x)


@pytest.mark.parametrize("args", [(5,), (2, 7), (1, 10, 3), (10, 1, -2), (0.0, 1.0, 0.1),
                                  (-1.5, 2.0), (3, 3)])
def test_arange(args):
    ref = np.arange(*args)
    out = snp.arange(*args)
    assert out.dtype == (np.int32 if ref.dtype.kind == "i" else np.float32)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6, atol=1e-6)
    assert snp.arange(*args, dtype=np.float32).dtype == np.float32


def test_arange_of_traced_bound_raises():
    with pytest.raises(ConcretizationError, match="static"):
        secant.jit(lambda n: snp.arange(n))(3)
    with pytest.raises(SecantValueError):
        snp.arange(0, 5, 0)


@pytest.mark.parametrize("num", [0, 1, 2, 7])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace(num, endpoint):
    out, step = snp.linspace(-1.0, 2.0, num, endpoint, retstep=True)
    ref, ref_step = np.linspace(-1.0, 2.0, num, endpoint, retstep=True)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(float(step), ref_step, rtol=1e-6)
    assert out.dtype == np.float32


def test_linspace_arrays_axis_and_int_dtype():
    lo, hi = data((3,), lo=-5, hi=0), data((3,), lo=1, hi=5)
    for axis in [0, 1, -1]:
        check(lambda a, b: snp.linspace(a, b, 5, axis=axis),
              lambda a, b: np.linspace(a, b, 5, axis=axis).astype(np.float32), lo, hi, rtol=1e-5)
    check(lambda a, b: snp.linspace(a, b, 4, dtype=np.int32),
          lambda a, b: np.linspace(a, b, 4, dtype=np.int32), lo, hi)
    check(lambda a: snp.logspace(a, 2.0, 4), lambda a: np.logspace(a, 2.0, 4).astype(np.float32),
          np.float32(0.5), rtol=1e-5)
    check(lambda a: snp.logspace(0, a, 3, base=2.0),
          lambda a: np.logspace(0, a, 3, base=2.0).astype(np.float32), np.float32(3), rtol=1e-5)


@pytest.mark.parametrize("N,M,k", [(3, None, 0), (3, 4, 1), (4, 2, -1), (2, 2, 5), (0, 3, 0)])
def test_eye_tri(N, M, k):
    for name in ["eye", "tri"]:
        out = getattr(snp, name)(N, M, k)
        ref = getattr(np, name)(N, M, k)
        assert out.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(out), ref)
    assert snp.eye(N, M, k, dtype=np.int32).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(snp.identity(N, np.bool_)), np.identity(N, bool))


@pytest.mark.parametrize("k", [-1, 0, 2])
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3)])
def test_tril_triu(k, shape):
    x = data(shape, np.int32)
    check(lambda a: snp.tril(a, k), lambda a: np.tril(a, k), x)
    check(lambda a: snp.triu(a, k), lambda a: np.triu(a, k), x)


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_diag(k):
    check(lambda a: snp.diag(a, k), lambda a: np.diag(a, k), data((3,)))
    check(lambda a: snp.diag(a, k), lambda a: np.diag(a, k), data((3, 4), np.int32))
    check(lambda a: snp.diagflat(a, k), lambda a: np.diagflat(a, k), data((2, 2)))


@pytest.mark.parametrize("offset,axes", [(0, (0, 1)), (1, (0, 1)), (-2, (0, 1)), (0, (2, 0)),
                                         (1, (-1, 1)), (9, (0, 1))])
def test_diagonal(offset, axes):
    x = data((4, 3, 5))
    check(lambda a: snp.diagonal(a, offset, *axes), lambda a: np.diagonal(a, offset, *axes), x)
    check(lambda a: a.diagonal(offset, *axes), lambda a: a.diagonal(offset, *axes), x, jit=False)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(indexing, sparse):
    x, y, z = data((3,)), data((4,)), data((2,))
    check(lambda a, b: snp.meshgrid(a, b, indexing=indexing, sparse=sparse),
          lambda a, b: np.meshgrid(a, b, indexing=indexing, sparse=sparse), x, y)
    check(lambda a, b, c: snp.meshgrid(a, b, c, indexing=indexing, sparse=sparse),
          lambda a, b, c: np.meshgrid(a, b, c, indexing=indexing, sparse=sparse), x, y, z)


def test_indices():
    out = snp.indices((2, 3))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), np.indices((2, 3)))


def test_constants_inside_jit():
    def f(a):
        return snp.dot(a, snp.eye(3)) + snp.arange(3) + snp.ones(3) * snp.tri(2, 3)
    check(f, lambda a: a + np.arange(3) + np.tri(2, 3, dtype=np.float32), data((2, 3)))

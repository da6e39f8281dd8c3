"""secant.numpy reductions: values against NumPy, jit against eager, and jax.numpy's dtype rules."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.errors import SecantError, SecantValueError
from numpy_api_checks import check, data

AXES = [None, 0, -1, (0, 2), ()]


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "all", "any", "ptp"])
@pytest.mark.parametrize("axis", AXES)
def test_basic_reductions(name, axis):
    x = data((2, 3, 4), lo=0.5, hi=1.5) if name == "prod" else data((2, 3, 4))
    check(lambda a: [getattr(snp, name)(a, axis=axis, keepdims=k) for k in (False, True)],
          lambda a: [getattr(np, name)(a, axis=axis, keepdims=k) for k in (False, True)], x,
          rtol=1e-5)


@pytest.mark.parametrize("dtype,want", [(np.int32, np.int32), (np.int8, np.int32),
                                        (np.uint8, np.uint32), (np.bool_, np.int32),
                                        (np.float16, np.float16), (np.float32, np.float32)])
def test_sum_prod_cumsum_dtypes(dtype, want):
    def accumulations(lib, names):
        return lambda a: [getattr(lib, name)(a, axis=1) for name in names]
    x = data((3, 4), dtype, 0, 3)
    rtol = 2e-3 if dtype == np.float16 else 2e-5
    check(accumulations(snp, ("sum", "prod")), accumulations(np, ("sum", "prod")), x,
          dtype=want, rtol=rtol)
    # cumsum/cumprod keep a small int's dtype in JAX 0.10.2 (int8 stays int8; bool counts
    # in int32): numerics15o's battery records it
    cum = ("cumsum", "cumprod")
    check(accumulations(snp, cum), accumulations(np, cum), x,
          dtype=np.int32 if dtype == np.bool_ else dtype, rtol=rtol)
    assert snp.sum(x, dtype=np.float32).dtype == np.float32


def test_sum_promote_integers_false_keeps_dtype():
    assert snp.sum(snp.ones(3, np.int8), promote_integers=False).dtype == np.int8


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.bool_])
def test_mean_var_std_of_integers_are_float32(dtype):
    def moments(lib):
        return lambda a: [getattr(lib, name)(a, axis=0) for name in ("mean", "var", "std")]
    check(moments(snp), moments(np), data((4, 5), dtype, -4, 4), dtype=np.float32, rtol=1e-5)


@pytest.mark.parametrize("axis", AXES[:4])
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std(axis, ddof):
    def moments(lib):
        return lambda a: [getattr(lib, name)(a, axis, ddof=ddof, keepdims=k)
                          for name in ("var", "std") for k in (False, True)]
    check(moments(snp), moments(np), data((3, 4, 5)), rtol=1e-5)


def test_var_with_too_large_ddof_is_inf():
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        check(lambda a: snp.var(a, ddof=3), lambda a: np.var(a, ddof=3), data((3,)), jit=False)
    assert np.isinf(float(secant.jit(lambda a: snp.var(a, ddof=3))(data((3,)))))


def test_float16_mean_accumulates_in_float32():
    x = np.full((4096,), 0.1, np.float16)
    out = snp.mean(x)
    assert out.dtype == np.float16
    assert abs(float(out) - 0.1) < 1e-3


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "all", "any"])
def test_where_masks(name):
    x = data((3, 4), lo=0.5, hi=1.5)
    mask = np.arange(12).reshape(3, 4) % 3 != 0
    extra = {"initial": 0.0} if name == "max" else {"initial": 5.0} if name == "min" else {}
    check(lambda a, m: getattr(snp, name)(a, axis=1, where=m, **extra),
          lambda a, m: getattr(np, name)(a, axis=1, where=m, **extra), x, mask, rtol=1e-5)


def test_initial():
    x = data((3, 4))
    check(lambda a: snp.sum(a, 0, initial=2.0), lambda a: np.sum(a, 0, initial=2.0), x)
    check(lambda a: snp.max(a, 0, initial=2.0), lambda a: np.max(a, 0, initial=2.0), x)
    check(lambda a: snp.max(a, 0, initial=2), lambda a: np.max(a, 0, initial=2),
          data((3, 4), np.int8))
    check(lambda a: snp.max(a, 0, initial=-9.0), lambda a: np.max(a, 0, initial=-9.0),
          np.zeros((0, 3), np.float32))


def test_empty_reductions():
    e = np.zeros((0, 3), np.float32)
    check(lambda a: snp.sum(a, 0), lambda a: np.sum(a, 0), e)
    check(lambda a: snp.prod(a), lambda a: np.prod(a), e)
    check(lambda a: snp.all(a, 0), lambda a: np.all(a, 0), e)
    with pytest.raises(SecantValueError, match="zero-size array to reduction operation max"):
        snp.max(e, axis=0)
    with pytest.raises(SecantValueError, match="empty"):
        snp.argmax(e)
    with pytest.raises(SecantValueError, match="initial"):
        snp.min(snp.ones(3), where=np.array([True, False, True]))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.bool_])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin(dtype, axis, keepdims):
    def args(lib):
        return lambda a: [lib.argmax(a, axis, keepdims=keepdims),
                          lib.argmin(a, axis, keepdims=keepdims)]
    check(args(snp), args(np), data((4, 5), dtype, -2, 2), dtype=np.int32)  # ties: first wins


def test_argmax_nan_wins():
    x = np.array([[1.0, np.nan, 3.0], [2.0, 1.0, 0.0]], np.float32)
    check(lambda a: snp.argmax(a, 1), lambda a: np.argmax(a, 1), x, dtype=np.int32)
    check(lambda a: snp.nanargmax(a, 1), lambda a: np.nanargmax(a, 1), x, dtype=np.int32)
    check(lambda a: snp.nanargmin(a, 1), lambda a: np.nanargmin(a, 1), x, dtype=np.int32)


@pytest.mark.parametrize("axis", [None, 0, -1])
def test_cumulative(axis):
    def cumulative(lib):
        return lambda a: [getattr(lib, name)(a, axis)
                          for name in ("cumsum", "cumprod", "nancumsum", "nancumprod")]
    x = data((3, 4))
    x[0, 1] = np.nan
    check(cumulative(snp), cumulative(np), x, rtol=1e-5)


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar",
                                  "nanstd"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nan_reductions(name, axis):
    x = data((3, 4), lo=0.5, hi=2)
    x[1, 2] = x[0, 0] = np.nan
    check(lambda a: getattr(snp, name)(a, axis), lambda a: getattr(np, name)(a, axis), x,
          rtol=1e-5)


def test_nanmax_of_all_nan_slice_is_nan():
    x = np.array([[np.nan, np.nan], [1.0, np.nan]], np.float32)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        ref = np.nanmax(x, 1)
    np.testing.assert_array_equal(np.asarray(snp.nanmax(x, 1)), ref)
    np.testing.assert_array_equal(np.asarray(secant.jit(lambda a: snp.nanmax(a, 1))(x)), ref)


def test_count_nonzero():
    x = data((3, 4), np.int32, -1, 1)
    for axis in [None, 0, (0, 1)]:
        check(lambda a: snp.count_nonzero(a, axis), lambda a: np.count_nonzero(a, axis), x,
              dtype=np.int32)


def test_average():
    x, w = data((3, 4)), data((3, 4), lo=0.1, hi=1)
    w1 = data((4,), lo=0.1, hi=1)
    check(lambda a: snp.average(a, 1, returned=True), lambda a: np.average(a, 1, returned=True),
          x)
    check(lambda a, b: snp.average(a, None, b), lambda a, b: np.average(a, None, b), x, w)
    check(lambda a, b: snp.average(a, 1, b, returned=True),
          lambda a, b: np.average(a, 1, b, returned=True), x, w1)
    check(lambda a, b: snp.average(a, 0, b), lambda a, b: np.average(a, 0, b), x, w)
    assert snp.average(snp.arange(4)).dtype == np.float32


@pytest.mark.parametrize("shape,axis", [((5,), None), ((4,), None), ((3, 4), 0), ((3, 4), 1),
                                        ((2, 3, 4), (0, 2)), ((2, 3, 4), -1)])
def test_median_quantile_percentile(shape, axis):
    def stats(lib):
        return lambda a: [lib.median(a, axis), lib.median(a, axis, keepdims=True),
                          lib.percentile(a, 30, axis)]
    check(stats(snp), stats(np), data(shape))


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_methods(method):
    def quantiles(lib):
        return lambda a: [lib.quantile(a, [0.0, 0.1, 0.5, 0.9, 1.0], 1, method=method),
                          lib.quantile(a, 0.3, None, method=method)]
    check(quantiles(snp), quantiles(np), data((3, 6)))


def test_median_of_ints_and_nans():
    check(snp.median, np.median, np.array([3, 1, 2, 8], np.int32), dtype=np.float32)
    check(lambda a: snp.median(a, 1), lambda a: np.median(a, 1),
          np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 2.0]], np.float32))


def test_methods():
    x = data((3, 4))
    check(lambda a: a.sum(0) + a.mean() + a.max(1).sum() + a.std() + a.var(ddof=1),
          lambda a: a.sum(0) + a.mean() + a.max(1).sum() + a.std() + a.var(ddof=1), x)
    check(lambda a: a.argmax(0), lambda a: a.argmax(0), x, dtype=np.int32)
    check(lambda a: a.cumsum(1), lambda a: a.cumsum(1), x)
    check(lambda a: a.prod(), lambda a: a.prod(), x)
    check(lambda a: a.ptp(0), lambda a: np.ptp(a, 0), x)
    check(lambda a: (a > 0).all(1), lambda a: (a > 0).all(1), x)


def test_axis_errors():
    with pytest.raises(SecantValueError, match="out of bounds"):
        snp.sum(snp.ones((2, 3)), axis=2)
    with pytest.raises(SecantValueError, match="repeated"):
        snp.sum(snp.ones((2, 3)), axis=(0, -2))
    with pytest.raises(SecantError):
        snp.sum(snp.ones(3), out=np.zeros(()))


def test_weak_python_scalars_and_lists():
    assert snp.sum([1, 2, 3]).dtype == np.int32
    assert snp.mean([1, 2, 3]).dtype == np.float32
    assert float(snp.sum(2.5)) == 2.5

"""Issue 19: eager dispatch of scalar code (an ODE solver's steps) without bind's generic work:
a float32/float64 Array with a Python float or int runs the ufunc on the scalar converted to the
array's dtype (backends/core.py eager_binary), reshape's shape is worked out once per (shape,
old shape) (secant/numpy/shape.py), and x64 is read from its cache. Each fast path gives what
promote + bind give: value bits, dtype, weak type, in both operand orders."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends import dtypes
from secant.backends.primitives import elementwise as ew
from secant.numpy.conversion import promote, promote_inexact

OPS = [(snp.add, ew.add_p, promote), (snp.multiply, ew.mul_p, promote),
       (snp.subtract, ew.sub_p, promote), (snp.divide, ew.div_p, promote_inexact),
       (snp.maximum, ew.max_p, promote), (snp.arctan2, ew.atan2_p, promote_inexact)]
SCALARS = [2.0, -0.3, 3, 0, -7, 1e300, 2 ** 40, float("nan"), True]


def _arrays(x64):
    out = [snp.asarray(np.float32(0.7)), snp.asarray(np.array([0.5, -1.5, 3.0], np.float32)),
           snp.asarray(0.25), snp.asarray(np.array([1, 2], np.int32)),
           snp.zeros_like(0.5) + 1.5]                      # weak, of the default float dtype
    if x64:
        out += [snp.asarray(np.float64(0.7)), snp.asarray(np.array([0.5, 2.0])),
                snp.asarray(np.array([1.0, 2.0], np.float32)).astype(np.float32)]
    return out


def _same(got, want):
    assert got.dtype == want.dtype and got.weak_type == want.weak_type
    assert np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("op,prim,prom", OPS, ids=lambda p: getattr(p, "__name__", ""))
def test_array_with_python_scalar_as_promote_and_bind(x64_or_not, op, prim, prom):
    for a in _arrays(dtypes.X64[0]):
        for s in SCALARS:
            for args in ((a, s), (s, a)):
                try:
                    want = prim.bind(*prom(*args))
                except Exception as e:      # (an int too wide for an int32 array: as before)
                    with pytest.raises(type(e)):
                        op(*args)
                    continue
                _same(op(*args), want)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_operators_take_the_fast_path_values(x64):
    a = snp.asarray(np.array([0.5, -1.5]))
    _same(a * 2.0, ew.mul_p.bind(*promote(a, 2.0)))
    _same(1.0 - a, ew.sub_p.bind(*promote(1.0, a)))
    f = snp.asarray(np.float32(1.5))
    _same(f * 1e300, ew.mul_p.bind(*promote(f, 1e300)))     # (inf in float32, as JAX)


def test_reshape_memo_same_shapes_and_errors():
    a = snp.asarray(np.arange(6.0, dtype=np.float32))
    for shape in [(2, 3), (3, -1), 6, (-1,), (1, 6, 1)]:
        for _ in range(2):          # (the second call reads the memo)
            got = snp.reshape(a, shape)
            assert got.shape == np.reshape(np.arange(6.0), shape).shape
            np.testing.assert_array_equal(np.asarray(got), np.reshape(np.arange(6.0), shape))
    for bad in [(4, -1), (-1, -1), (5,), (2, -2)]:
        for _ in range(2):
            with pytest.raises(secant.SecantError):
                snp.reshape(a, bad)


def test_x64_cache_follows_config():
    old = dtypes.X64[0]
    try:
        secant.config.update("enable_x64", True)
        assert dtypes.x64_enabled() and dtypes.canonicalize_dtype(np.float64) == np.float64
        secant.config.update("enable_x64", False)
        assert not dtypes.x64_enabled()
        assert dtypes.canonicalize_dtype(np.float64) == np.float32
    finally:
        secant.config.update("enable_x64", old)


def test_getitem_fast_path_as_slice_and_squeeze(x64_or_not):
    """x[i] and x[a:b] of an eager value (NumPy's indexing) against x[(i,)] and x[(a:b,)] (the
    slice + squeeze binds) and NumPy: values, dtype, weak type, shape; out-of-range ints too
    (clamped, as JAX: the slow path)."""
    values = [snp.asarray(np.arange(6.0, dtype=np.float32)),
              snp.asarray(np.arange(12).reshape(3, 4)),
              snp.asarray(np.array([True, False, True])), snp.zeros_like(0.5) + np.zeros(4),
              snp.asarray(np.arange(24.0).reshape(2, 3, 4))]
    for x in values:
        n = x.shape[0]
        idxs = list(range(-n - 2, n + 2)) + [slice(None), slice(1, None), slice(None, -1),
                                             slice(-2, 10), slice(5, 1), slice(-100, 100),
                                             slice(0, n, 2), slice(None, None, -1)]
        for idx in idxs:
            got, want = x[idx], x[(idx,)]
            _same(got, want)
            if not isinstance(idx, int) or -n <= idx < n:
                np.testing.assert_array_equal(np.asarray(got), np.asarray(x)[idx])
    with pytest.raises(secant.SecantError):
        snp.asarray(np.float32(1.0))[0]      # (a 0-d value: the slow path's error)


def test_getitem_tuple_fast_path_as_slow(x64_or_not, monkeypatch):
    """Tuples of in-range ints, unit-step slices and one Ellipsis (`flat[..., a:b]`, `m[1, 2:]`)
    against the slow path (the fast path's test off) and NumPy; others, errors alike."""
    from secant.numpy import indexing
    x = snp.asarray(np.arange(24.0).reshape(2, 3, 4))
    idxs = [(0,), (1, 2), (1, 2, 3), (-1, -3, -4), (Ellipsis, 1), (Ellipsis, slice(1, 3)),
            (0, Ellipsis), (0, Ellipsis, -1), (slice(None), 1, slice(2, None)),
            (Ellipsis,), (1, 3), (2, 0), (Ellipsis, 4), (0, 0, 0, 0), (Ellipsis, Ellipsis),
            (slice(0, 2, 2),), (0, None), (1.0,), (0, 1, 2, Ellipsis), (Ellipsis, 0, 1, 2)]
    fast = [indexing._plain(idx, x.shape) for idx in idxs]
    assert sum(fast) == 12
    outs = []
    for idx in idxs:
        try:
            outs.append(x[idx])
        except Exception as e:
            outs.append(e)
    monkeypatch.setattr(indexing, "_plain", lambda idx, shape: False)
    for idx, got, quick in zip(idxs, outs, fast):
        try:
            want = x[idx]
        except Exception as e:
            assert type(got) is type(e), idx
            continue
        _same(got, want)
        if quick:       # (the others: out-of-range ints clamped, as JAX; NumPy raises)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(x)[idx])

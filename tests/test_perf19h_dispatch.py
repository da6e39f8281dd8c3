"""Issue 19 (perf19h): jit's warm paths (NumPy arguments through jaxlib's C++ dispatcher, device
arrays through the last signature's runner) give what the Python path gives (SECANT_CPP_DISPATCH
off: `_cpp_ok` False) and what NumPy computes: dtypes narrowed as enable_x64 off narrows them,
0-d, bool, non-contiguous and read-only inputs, mixed NumPy and device arguments, and a NumPy
input changed right after the call (C++ reads it in place: the call must not return before the
program has read it). No timings here."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.array import Array


def _affine(a, b):
    return a * b + a


def _python_path(fn):
    slow = secant.jit(fn)
    slow._cpp_ok = False
    return slow


def _same(got, want):
    assert type(got) is Array
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def _inputs(dtype, shape):
    rng = np.random.default_rng(7)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5, rng.random(shape) < 0.5
    return (rng.uniform(1, 3, shape).astype(dtype), rng.uniform(1, 3, shape).astype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "float64", "int64", "uint8",
                                   "float16"])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_numpy_arguments_warm_path_matches_python_path_and_numpy(dtype, shape):
    a, b = _inputs(dtype, shape)
    fast, slow = secant.jit(_affine), _python_path(_affine)
    want = slow(a, b)
    # x64 off: 64-bit inputs computed in 32 bits, as NumPy does on the narrowed values
    narrow = {np.float64: np.float32, np.int64: np.int32}.get(np.dtype(dtype).type)
    if narrow is not None:
        expect = _affine(a.astype(narrow), b.astype(narrow))
    else:
        expect = _affine(a, b)
    for _ in range(3):      # first call, then the warm paths (C++ once it has the signature)
        got = fast(a, b)
        _same(got, want)
        _same(got, expect)


def test_non_contiguous_and_read_only_numpy_inputs():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    fast = secant.jit(_affine)
    strided, transposed = base[:, ::2], base.T[:3, :3]
    frozen = np.array(base[:3, :3])
    frozen.flags.writeable = False
    fortran = np.asfortranarray(base[:3, :3])
    for _ in range(3):
        _same(fast(strided, strided), _affine(strided, strided))
        _same(fast(transposed, frozen), _affine(transposed, frozen))
        _same(fast(fortran, frozen), _affine(fortran, frozen))
    assert not frozen.flags.writeable      # (left as it was)


def test_numpy_input_changed_right_after_the_call_does_not_change_the_result():
    def heavy(x):       # long enough that XLA runs it off the caller's thread
        y = x
        for _ in range(20):
            y = snp.sin(y) + x
        return y
    x = np.ones(1_000_000, np.float32)
    fast = secant.jit(heavy)
    want = np.asarray(_python_path(heavy)(x)).copy()
    for _ in range(4):
        x[:] = 1.0
        out = fast(x)
        x[:] = 5.0      # changed before anyone reads the result
        np.testing.assert_array_equal(np.asarray(out), want)


def test_mixed_numpy_and_device_arguments_and_device_calls_after_numpy_calls():
    a, b = _inputs("float32", (4,))
    fast = secant.jit(_affine)
    da, db = secant.device_put((a, b))
    want = _affine(a, b)
    for _ in range(3):
        _same(fast(a, b), want)
        _same(fast(da, db), want)       # the device arrays' warm path
        _same(fast(a, db), want)        # NumPy first, a device array second
        _same(fast(da, b), want)        # a device array first, NumPy second
        out = fast(da, db)
        _same(fast(out, b), _affine(want, b))     # a result fed back


def test_warm_path_notices_a_new_signature_and_keyword_arguments():
    fast = secant.jit(_affine)
    for n in (3, 4, 3):
        a, b = _inputs("float32", (n,))
        _same(fast(a, b), _affine(a, b))
        _same(fast(a, b=b), _affine(a, b))
    a32, b32 = _inputs("float32", (3,))
    i32 = np.arange(3, dtype=np.int32)
    _same(fast(a32, i32), _affine(a32, i32.astype(np.float32)))
    _same(fast(i32, i32), _affine(i32, i32))


def test_several_outputs_and_x64_switch(x64_or_not):
    def two(a, b):
        return a + b, a * b
    a, b = _inputs("float64", (3,))
    fast, slow = secant.jit(two), _python_path(two)
    for _ in range(3):
        got, want = fast(a, b), slow(a, b)
        for g, w in zip(got, want):
            _same(g, w)

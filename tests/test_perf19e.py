"""Issue 19 (perf19e): the eager shortcuts give what the general paths give. secant.numpy's
broadcast_to and expand_dims of a one-element host value (a reduction's cotangent, which
unreduce spreads over the reduced axes) build NumPy's view directly: same values, dtype, shape,
weak type and read-only flag as np.broadcast_to / np.expand_dims. No timings here."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.array import Array

_ONE_ELEMENT = [np.float32(2), np.asarray(3.0), np.ones((1, 1), np.float32),
                np.arange(3.0)[1:2], 2.0, np.arange(3, dtype=np.int32)[2:3],
                np.complex64(1 + 2j), np.asarray(True)]


@pytest.mark.parametrize("value", _ONE_ELEMENT, ids=repr)
@pytest.mark.parametrize("shape", [(3,), (2, 3), (1, 1), (4, 1, 1), (0, 1), (2, 0, 3)])
def test_broadcast_to_of_one_element_is_numpys_view(value, shape, x64_or_not):
    a = snp.asarray(value)
    host = np.asarray(a)
    if host.ndim > len(shape):
        return
    got = snp.broadcast_to(a, shape)
    want = np.broadcast_to(host, shape)
    view = np.asarray(got)
    assert type(got) is Array and got.weak_type == a.weak_type
    assert (view.shape, view.dtype) == (want.shape, want.dtype)
    np.testing.assert_array_equal(view, want)
    if shape != host.shape:     # (the same shape: the array itself)
        assert not view.flags.writeable
        assert view.strides == want.strides


@pytest.mark.parametrize("value", _ONE_ELEMENT, ids=repr)
def test_expand_dims_of_one_element_is_numpys(value, x64_or_not):
    a = snp.asarray(value)
    host = np.asarray(a)
    for axis in ((0,), (0, 1), (-1,), (1, 0, 2)):
        if len(axis) + host.ndim <= max(axis):
            continue
        got = snp.expand_dims(a, axis)
        want = np.expand_dims(host, axis)
        assert type(got) is Array and got.weak_type == a.weak_type
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
        np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(secant.SecantError, match="repeated"):
        snp.expand_dims(a, (0, 0))


def test_grad_of_sums_and_means_against_the_closed_form(x64_or_not):
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(np.asarray(secant.grad(lambda v: snp.sum(snp.sin(v)))(x)),
                               np.cos(x), rtol=1e-6)
    got = np.asarray(secant.grad(lambda v: snp.mean(v * v))(x))
    np.testing.assert_allclose(got, 2 * x / x.size, rtol=1e-6)
    got = np.asarray(secant.grad(lambda v: snp.sum(snp.sum(v, axis=1) ** 2))(x))
    np.testing.assert_allclose(got, 2 * np.broadcast_to(x.sum(1, keepdims=True), x.shape),
                               rtol=1e-6)


# --- eager derivatives on NumPy's values (secant/raw_eager.py) ----------------------------------
from secant.raw_eager import NOT_RAW, call_raw, raw_version   # noqa: E402


def _chain(x):
    for _ in range(4):
        x = snp.sin(x) * 1.5 - x / 3
    return snp.sum(snp.exp(x))


def _scalar_chain(x):
    y = snp.exp(-x) + 2
    for _ in range(3):
        y = snp.cos(y) * x
    return y


def _two(x, y):
    return snp.sum(snp.sin(x) * y + x * x)


def _with_int(x, n):
    for i in range(n):
        x = snp.sin(x) * i + x
    return snp.sum(x)


def _as_written(g, *args):
    """The derivative run on secant Arrays (what grad does without the NumPy-value run)."""
    return g.__secant_current__()(*[snp.asarray(a) if isinstance(a, np.ndarray | np.generic)
                                    else a for a in args])


def _identical(got, want):
    assert type(got) is Array and type(want) is Array
    assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))   # (bit for bit)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_value_runs_give_the_derivative_as_written(dtype, x64_or_not):
    x = np.linspace(-1.5, 1.2, 7, dtype=dtype)
    cases = [(_chain, 0, (x,)), (_scalar_chain, 0, (x.dtype.type(0.7),)),
             (_two, (0, 1), (x, x[::-1].copy())), (_with_int, 0, (x, 3))]
    for fn, argnums, args in cases:
        g = secant.grad(fn, argnums=argnums)
        raw = raw_version(g.__secant_current__())
        arrays = [snp.asarray(a) if isinstance(a, np.ndarray | np.generic) else a for a in args]
        assert call_raw(raw, arrays) is not NOT_RAW, fn.__name__     # (it ran on NumPy's)
        got, want = g(*args), _as_written(g, *args)
        for a, b in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            _identical(a, b)
    # against float64 finite differences too (the two runs could share a mistake)
    g = secant.grad(_chain)
    x64 = x.astype(np.float64)
    eps = 1e-6
    fd = [(_chain_np(x64 + eps * e) - _chain_np(x64 - eps * e)) / (2 * eps)
          for e in np.eye(len(x))]
    np.testing.assert_allclose(np.asarray(g(x), np.float64), fd, rtol=2e-4, atol=2e-5)


def _chain_np(x):
    for _ in range(4):
        x = np.sin(x) * 1.5 - x / 3
    return np.sum(np.exp(x))


def test_value_and_grad_and_inputs_left_alone():
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    before = x.copy()
    value, grad = secant.value_and_grad(_chain)(x)
    np.testing.assert_array_equal(x, before)
    want_value, want_grad = _as_written(secant.value_and_grad(_chain), x)
    _identical(value, want_value)
    _identical(grad, want_grad)
    assert not np.shares_memory(np.asarray(grad), x)


def _const_sin(x):
    return snp.sum(x * snp.sin(2.0))


def _subscript(x):
    return snp.sum(snp.sin(x[1:]))


def _inplace(x):
    y = x * 2
    y += x
    return snp.sum(y)


def _helper(v):
    return snp.sin(v)


def _calls_user(x):
    return snp.sum(_helper(x))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_python_numbers_keep_secants_weak_types(dtype, x64_or_not):
    """sin(2.0) is a weak array in secant; on NumPy's values a 64-bit scalar: the run notices
    (its float32 results would be float64, or under x64 a checked call refuses) and the
    derivative runs as written."""
    x = np.linspace(-1, 1, 4, dtype=dtype)
    g = secant.grad(_const_sin)
    assert call_raw(raw_version(g.__secant_current__()), [snp.asarray(x)]) is NOT_RAW
    got = g(x)
    assert raw_version(g.__secant_current__()) is None      # (not tried again: see run)
    _identical(got, _as_written(g, x))
    assert got.dtype == snp.asarray(x).dtype


def _pow(x):
    return snp.sum(x ** 3)


def test_other_code_is_left_to_the_arrays():
    for fn in (_subscript, _pow, _calls_user):
        g = secant.grad(fn)
        assert raw_version(g.__secant_current__()) is None, fn.__name__
        x = np.linspace(-1, 1, 4, dtype=np.float32)
        _identical(g(x), _as_written(g, x))


def test_weak_int_and_device_arguments_are_not_run_on_numpy_values():
    g = secant.grad(_chain)
    raw = raw_version(g.__secant_current__())
    assert call_raw(raw, (snp.asarray(1.5),)) is NOT_RAW               # weak
    assert call_raw(raw, (snp.arange(3),)) is NOT_RAW                  # int
    assert call_raw(raw, ([1.0, 2.0],)) is NOT_RAW                     # a list
    _identical(g(snp.asarray(1.5)), _as_written(g, snp.asarray(1.5)))


def test_errors_still_name_the_users_line():
    def bad(x, y):
        return snp.sum(snp.sin(x) * y)      # shapes (3,) and (4,) do not broadcast
    g = secant.grad(bad)
    assert raw_version(g.__secant_current__()) is not None
    with pytest.raises(secant.SecantError) as info:
        g(np.ones(3, np.float32), np.ones(4, np.float32))
    assert "test_perf19e.py" in str(info.value) or "bad" in str(info.value)
    assert raw_version(g.__secant_current__()) is not None  # (the error was the user's)


def test_non_scalar_output_is_refused_as_before():
    g = secant.grad(lambda x: snp.sin(x))
    with pytest.raises(secant.SecantError, match="scalar output"):
        g(np.ones(3, np.float32))


def test_the_bytecode_reading_refuses_what_numpy_would_do_otherwise():
    def plain(x):
        y = snp.sin(x) * 2 - x / 3
        return y, -y
    assert raw_version(plain) is not None
    for written in ("y = x * 2\n    y += x",           # in place: would write to an input
                    "y = x[0]", "y = x ** 2", "y = x > 0", "y = x.T",
                    "y = x if x else x", "y = print(x)", "y = snp.where(x, x, x)",
                    "y = [v for v in x]", "y = x\n    y.sort()",
                    "y = x * snp.sin(True)", "y = x * snp.sin((True, 1.0))"):
        namespace = {"snp": snp}
        exec(f"def f(x):\n    {written}\n    return y", namespace)
        assert raw_version(namespace["f"]) is None, written


def test_the_inplace_function_runs_on_numpy_values_as_written():
    g = secant.grad(_inplace)
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    before = x.copy()
    _identical(g(x), _as_written(g, x))
    np.testing.assert_array_equal(x, before)

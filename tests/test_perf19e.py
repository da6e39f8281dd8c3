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

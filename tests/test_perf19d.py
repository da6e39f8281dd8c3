"""Issue 19 (perf19d): grad's eager seed taken at once for float outputs (grad_seed of a 0-d
array, grad_seed_like of a float array) gives what the general path gives: same value, dtype,
shape and weak type, and the same refusals. No timings here."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.ad.helpers import grad_seed, grad_seed_like
from secant.backends.array import Array


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64_or_not(request):
    secant.config.update("enable_x64", request.param)
    try:
        yield
    finally:
        secant.config.update("enable_x64", False)


def _zero_d_arrays(dtype):
    """0-d Arrays of `dtype` held as 0-d ndarrays (not as NumPy scalars), strong and weak."""
    strong = Array._wrap(np.asarray(0.5, dtype))
    weak = Array._wrap(np.asarray(0.5, dtype), True)
    reduced = snp.sum(snp.ones((3,), dtype))
    return [strong, weak, reduced]


def _same(got, want):
    assert type(got) is Array
    assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert type(np.asarray(got)) is np.ndarray


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_grad_seed_of_a_zero_d_array_is_ones_like(dtype, x64_or_not):
    for out in _zero_d_arrays(dtype):
        _same(grad_seed(out), snp.ones_like(out))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grad_seed_like_is_the_seed_of_a_scalar_of_that_dtype(dtype, x64_or_not):
    for x in (snp.asarray(np.linspace(0, 1, 4, dtype=dtype)), snp.asarray(np.asarray(2.0, dtype)),
              snp.sin(snp.asarray(np.dtype(dtype).type(0.3))), snp.asarray(1.5),
              Array._wrap(np.ones((2, 3), dtype), True)):
        want = snp.ones_like(snp.zeros((), snp.result_type(x)))
        _same(grad_seed_like(x), want)


def test_seeds_still_refuse_int_and_complex_outputs():
    with pytest.raises(secant.SecantError, match="floating-point"):
        grad_seed_like(snp.arange(3))
    with pytest.raises(secant.SecantError, match="holomorphic"):
        grad_seed(Array._wrap(np.asarray(1 + 2j, np.complex64)))
    with pytest.raises(secant.SecantError, match="scalar output"):
        grad_seed(snp.ones((2,)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grad_of_a_summed_chain_matches_the_closed_form(dtype, x64_or_not):
    def chain(x):
        for _ in range(3):
            x = snp.sin(x)
        return snp.sum(x)
    x = np.linspace(-1, 1, 5, dtype=dtype)
    got = secant.grad(chain)(x)
    assert got.dtype == snp.asarray(x).dtype and got.shape == (5,) and not got.weak_type
    v, d = x.astype(np.float64), np.ones(5)
    for _ in range(3):
        v, d = np.sin(v), d * np.cos(v)
    np.testing.assert_allclose(np.asarray(got), d, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(chain))(x)), d, rtol=1e-5)

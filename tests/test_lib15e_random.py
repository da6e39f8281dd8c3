"""issue 15 (lib15e): jax.random.key_impl / key_dtype, key_data / wrap_key_data round trips
(eagerly, under jit and vmap, the same numbers as the key itself), the impl= and dtype=
arguments of the key constructors, and jax.dtypes' prng_key / extended for issubdtype."""
import numpy as np
import pytest

import secant
from secant import dtypes, random

KEY = random.key(7)


def draw(k):
    assert random.key_impl(k) == "threefry2x32"
    return random.normal(random.wrap_key_data(random.key_data(k)), (3,))


def test_key_data_round_trips_give_the_same_numbers():
    want = np.asarray(random.normal(KEY, (3,)))
    np.testing.assert_array_equal(np.asarray(draw(KEY)), want)
    np.testing.assert_allclose(np.asarray(secant.jit(draw)(KEY)), want, rtol=1e-6)   # (XLA)
    keys = random.split(KEY, 4)
    np.testing.assert_array_equal(np.asarray(secant.vmap(draw)(keys)),
                                  np.stack([np.asarray(random.normal(k, (3,))) for k in keys]))
    np.testing.assert_array_equal(np.asarray(random.key_data(random.key(7, impl="threefry2x32"))),
                                  np.asarray(random.key_data(KEY)))


def test_key_dtype_and_prng_key():
    kd = random.key_dtype()
    assert kd.name == "key<fry>" and kd == random.key_dtype("threefry2x32")
    assert dtypes.issubdtype(kd, dtypes.prng_key) and dtypes.issubdtype(kd, dtypes.extended)
    assert not dtypes.issubdtype(np.uint32, dtypes.prng_key)
    assert not dtypes.issubdtype(kd, np.integer)
    assert random.key_impl(random.split(KEY, 3)) == "threefry2x32"      # (a batch of keys)


def test_other_implementations_and_bad_keys_are_clear_errors():
    with pytest.raises(secant.SecantValueError, match="'rbg' is not available"):
        random.key(0, impl="rbg")
    with pytest.raises(secant.SecantValueError, match="not available"):
        random.key_dtype("unsafe_rbg")
    with pytest.raises(secant.SecantTypeError, match="invalid PRNG key"):
        random.key_impl(np.ones(3, np.float32))

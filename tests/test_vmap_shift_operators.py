"""vmap of `x << n` and `x >> n` (regression: the shift operators were read as unbatched values
and the result broadcast, so every example got the whole batch: shape (2, 2, 3) for a batch of
2 rows of 3)."""
import numpy as np
import pytest

import secant

X = np.array([[1, 6, 255], [-8, 3, 1024]], np.int32)


@pytest.mark.parametrize("f", [lambda v: v >> 1, lambda v: v << 2, lambda v: v >> v % 3,
                               lambda v: (v << 1) + (v >> 2)],
                         ids=["rshift", "lshift", "by_batched", "mixed"])
def test_vmap_of_shifts_matches_a_loop(f):
    want = np.stack([np.asarray(f(row)) for row in X])
    np.testing.assert_array_equal(np.asarray(secant.vmap(f)(X)), want)
    np.testing.assert_array_equal(np.asarray(secant.jit(secant.vmap(f))(X)), want)
    np.testing.assert_array_equal(np.asarray(secant.vmap(f, in_axes=1, out_axes=1)(X)),
                                  np.stack([np.asarray(f(c)) for c in X.T], 1))

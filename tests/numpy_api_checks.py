"""The comparison every tests/test_numpy_*.py file runs: secant.numpy eagerly against plain NumPy,
and the same function under secant.jit against the eager result (values, shapes and dtypes)."""
import numpy as np

import secant
import secant.numpy as snp
from secant.backends import dtypes

rng = np.random.default_rng(0)


def data(shape, dtype=np.float32, lo=-3, hi=3):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(max(lo, np.iinfo(dt).min), hi + 1, size=shape).astype(dt)
    return rng.uniform(lo, hi, size=shape).astype(dt)


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _close(actual, expected, rtol, atol, what):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    if expected.dtype.kind in "biu" and actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=what)


def check(fn, ref, *arrays, rtol=2e-5, atol=2e-5, dtype=None, jit=True):
    """fn(secant arrays) == ref(numpy arrays), and jit(fn)(arrays) == fn(secant arrays).

    The result dtype must be `dtype` when given, else the canonical (32-bit) form of the NumPy
    reference's dtype, which is what jax.numpy returns for these functions."""
    eager = fn(*[snp.asarray(a) for a in arrays])
    expected = ref(*arrays)
    e_leaves, x_leaves = _leaves(eager), _leaves(expected)
    assert len(e_leaves) == len(x_leaves)
    for e, x in zip(e_leaves, x_leaves):
        want = np.dtype(dtype) if dtype is not None else \
            dtypes.canonicalize_dtype(np.asarray(x).dtype)
        assert e.dtype == want, ("eager dtype", e.dtype, want)
        _close(e, x, rtol, atol, "eager vs numpy")
    if jit:
        jitted = secant.jit(fn)(*arrays)
        j_leaves = _leaves(jitted)
        assert len(j_leaves) == len(e_leaves)
        for j, e in zip(j_leaves, e_leaves):
            assert j.dtype == e.dtype, ("jit dtype", j.dtype, e.dtype)
            _close(j, e, max(rtol, 1e-5), max(atol, 1e-5), "jit vs eager")
    return eager

"""secant.numpy.reshape of an eager value reshapes its NumPy value directly (issue 19: ODE
solvers ravel and unravel their state at each step; bind's generic path cost 30-40 µs a call).
The result must be what the primitive gives: value, shape, dtype, weak type, the same errors,
and the same under jit (where the primitive is recorded)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.array import Array
from secant.backends.primitives import structural as st

CASES = [(np.arange(6.0), (2, 3)), (np.arange(6.0), (3, -1)), (np.array([0.5]), ()),
         (np.array(0.5), (1,)), (np.array(0.5), (-1,)), (np.arange(4, dtype=np.int32), (2, 2)),
         (np.ones((2, 3), np.float32), [6]), (np.ones((2, 3), np.float32), 6),
         (np.ones((2, 3), np.float32), (np.int64(3), 2)), (np.array([True, False]), (2, 1))]


@pytest.mark.parametrize("value, shape", CASES, ids=[str(i) for i in range(len(CASES))])
@pytest.mark.parametrize("weak", [False, True])
def test_eager_reshape_is_the_primitive(value, shape, weak):
    a = Array._wrap(value, weak)
    got = snp.reshape(a, shape)
    new = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if -1 in new:
        known = int(np.prod([d for d in new if d != -1]))
        new = tuple(value.size // known if d == -1 else int(d) for d in new)
    want = st.reshape_p.bind(a, new_sizes=tuple(int(d) for d in new))
    assert type(got) is Array
    assert got.shape == want.shape == np.reshape(value, new).shape
    assert got.dtype == want.dtype
    assert got.weak_type == want.weak_type == weak
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_array_equal(np.asarray(secant.jit(lambda x: snp.reshape(x, shape))(a)),
                                  np.asarray(want))


def test_a_weak_scalar_raveled_stays_weak():
    s = snp.sin(snp.asarray(0.5)) * 2.0        # an eager result held as a NumPy scalar
    r = snp.ravel(snp.asarray(2.0) * 1.0)
    assert snp.ravel(s).shape == (1,) and r.weak_type and r.shape == (1,)
    assert snp.ravel(s).dtype == s.dtype


@pytest.mark.parametrize("shape", [(4,), (2, -1, -1), (-2, 3), (2.0, 3)])
def test_bad_shapes_raise_as_before(shape):
    a = Array._wrap(np.arange(6.0), False)
    with pytest.raises(secant.SecantError):
        snp.reshape(a, shape)


def test_the_same_as_a_method_and_under_grad():
    def f(x):
        return snp.sum(snp.reshape(x, (2, 3)) ** 2 * np.arange(6.0).reshape(2, 3))
    x = np.linspace(0.1, 0.6, 6)
    assert snp.asarray(x).reshape(3, 2).shape == (3, 2)
    np.testing.assert_allclose(secant.grad(f)(x), 2 * x * np.arange(6.0), rtol=1e-6)

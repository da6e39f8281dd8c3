"""Transform bugs found by using secant as others do: each a regression test checking values
(vmap against a Python loop, derivatives against float64 finite differences)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp


def _loop(fn, xs):
    return np.stack([np.asarray(fn(x)) for x in xs])


# --- vmap: a list indexed by the counter of a reversed range ------------------------------------
def _select_backwards(c, ch, default=0.0):
    out = default
    for i in range(len(c) - 1, -1, -1):
        out = snp.where(c[i], ch[i], out)
    return out


def _uses_select(x):
    return _select_backwards([x < 0, x >= 0], [x * 2, x * 3])


def test_vmap_list_indexed_by_reversed_range():
    xs = np.linspace(-1, 1, 6).reshape(2, 3).astype(np.float32)
    want = _loop(_uses_select, xs)
    np.testing.assert_allclose(secant.vmap(_uses_select)(xs), want)
    np.testing.assert_allclose(secant.jit(secant.vmap(_uses_select))(xs), want)
    got = secant.vmap(_select_backwards)([xs < 0, xs >= 0], [xs * 2, xs * 3])
    np.testing.assert_allclose(got, want)


# --- vmap: a slice of a returned tuple ----------------------------------------------------------
def _three(a):
    return a * 2, a + 1, a - 1


def _tail(a):
    return _three(a)[1:]


def _unique_tail(a):
    return snp.unique(a, return_index=True, return_counts=True, size=5)[1:]


def test_vmap_slice_of_returned_tuple():
    xs = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    got = secant.vmap(_tail)(xs)
    assert isinstance(got, tuple) and len(got) == 2
    np.testing.assert_allclose(got[0], xs + 1)
    np.testing.assert_allclose(got[1], xs - 1)


def test_vmap_slice_of_unique_results():
    xs = np.array([[1.0, 2, 2, 3], [3, 3, 1, 0]], dtype=np.float32)
    got = secant.vmap(_unique_tail)(xs)
    for k, want in enumerate(zip(*[_unique_tail(x) for x in xs])):
        np.testing.assert_array_equal(got[k], np.stack(want))


# --- hessian: an axis argument of a helper's op on a value only one vmap batches ----------------
def _sorted_last(a, axis=-1):
    a = snp.moveaxis(a, axis, -1)
    return snp.sort(a, axis=-1)


def _cubes_sorted(x):
    return snp.sum(_sorted_last(x) ** 3)


def test_hessian_of_moveaxis_in_a_helper(x64):
    x = np.array([0.3, -1.2, 0.7, 2.0, -0.4])
    got = secant.hessian(_cubes_sorted)(x)
    np.testing.assert_allclose(got, np.diag(6 * x), rtol=1e-10, atol=1e-12)
    # against finite differences of the gradient
    eps = 1e-6
    grad = secant.grad(_cubes_sorted)
    fd = np.stack([(np.asarray(grad(x + eps * e)) - np.asarray(grad(x - eps * e))) / (2 * eps)
                   for e in np.eye(5)])
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)


# --- jit: a Python loop whose carry changes shape stays a Python loop ---------------------------
def _second_differences(x):
    a = x
    for _ in range(2):
        a = a[1:] - a[:-1]
    return snp.sum(a ** 2)


def _fd_grad(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


def test_jit_of_a_loop_whose_carry_changes_shape(x64):
    x = np.array([0.3, -1.0, 2.0, 0.5, 1.5])
    d2 = x[2:] - 2 * x[1:-1] + x[:-2]
    np.testing.assert_allclose(secant.jit(_second_differences)(x), np.sum(d2 ** 2))
    want = _fd_grad(lambda v: float(_second_differences(v)), x)
    np.testing.assert_allclose(secant.grad(_second_differences)(x), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(_second_differences))(x), want, rtol=1e-6)
    hess = secant.hessian(_second_differences)(x)
    np.testing.assert_allclose(secant.jit(secant.hessian(_second_differences))(x), hess,
                               rtol=1e-10)
    xs = np.stack([x, 2 * x])
    np.testing.assert_allclose(secant.jit(secant.vmap(secant.grad(_second_differences)))(xs),
                               _loop(secant.grad(_second_differences), xs), rtol=1e-10)


def test_jit_of_lax_fori_loop_changing_its_carry_still_fails():
    def f(x):
        return secant.lax.fori_loop(0, 2, lambda i, a: a[1:], x)
    with pytest.raises(secant.SecantTypeError, match="loop carry must keep"):
        secant.jit(f)(np.ones(5, np.float32))


# --- min/max/abs of static Python ints stay Python ints -----------------------------------------
def _head_sum(x):
    n = min(x.shape[0], 3)
    k = max(abs(-2), 1)
    if not (type(n) is int and type(k) is int):
        raise TypeError("min/max of Python ints must stay Python ints")
    return snp.sum(snp.sin(x[:n])) * k + snp.sum(snp.zeros(n))


def test_min_max_of_static_ints_stay_python_ints(x64):
    x = np.array([0.3, -1.0, 2.0, 0.5, 1.5])
    want = np.r_[2 * np.cos(x[:3]), 0.0, 0.0]
    np.testing.assert_allclose(secant.grad(_head_sum)(x), want, rtol=1e-12)
    np.testing.assert_allclose(secant.jit(secant.grad(_head_sum))(x), want, rtol=1e-12)
    xs = np.stack([x, x / 2])
    np.testing.assert_allclose(secant.vmap(_head_sum)(xs), [_head_sum(v) for v in xs],
                               rtol=1e-12)
    src = secant.source(secant.grad(_head_sum))
    assert "min(x.shape[0], 3)" in src and "snp.minimum" not in src


def test_max_of_traced_values_is_still_differentiated(x64):
    def f(x):
        return snp.sum(max(x, x ** 2) + min(snp.sin(x), 0.5) + min(snp.cos(x), 2.0))
    x = np.array(0.7)
    want = 1.0 - np.sin(0.7)    # max picks x, min the constant 0.5, then cos(x)
    np.testing.assert_allclose(secant.grad(f)(x), want, rtol=1e-12)


# --- library functions passed to vmap directly ---------------------------------------------------
def test_vmap_of_vmap_of_a_library_reduction():
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(secant.vmap(secant.vmap(snp.sum))(x), x.sum(-1), rtol=1e-6)
    np.testing.assert_array_equal(secant.vmap(snp.argmax)(x[0]), x[0].argmax(-1))
    assert "def argmax_vmap(" in secant.source(secant.vmap(snp.argmax))
    np.testing.assert_allclose(secant.vmap(snp.sum, in_axes=(0, None))(x, 1), x.sum(2),
                               rtol=1e-6)


def _sum_of_squares_rows(v):
    return snp.sum(secant.vmap(snp.asarray)(v) ** 2)


def test_vmap_of_asarray(x64):
    x = np.random.default_rng(1).normal(size=(2, 3))
    got = secant.vmap(snp.asarray)(x)
    np.testing.assert_array_equal(got, x)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(secant.vmap(np.asarray)(x), x)
    assert secant.vmap(snp.asarray, in_axes=(0, None))(x, snp.float32).dtype == np.float32
    np.testing.assert_allclose(secant.grad(_sum_of_squares_rows)(x), 2 * x, rtol=1e-12)


# --- hessian: a shape query of a value only one of two vmaps batches ----------------------------
_XP = np.arange(-2.0, 3.0)
_FP = np.sin(_XP)


def _clamped(x, fp, right=None):
    f = x * fp[1]
    f = snp.where(x < 0.0, fp[0], f)
    if right is None:
        f = snp.where(x > 1.0, fp[4], f)
    else:
        f = snp.where(x > 1.0, right, f)
    return f


def _interp_squares(x):
    return snp.sum(snp.interp(x, _XP, _FP) ** 2)


def _clamped_squares(x):
    return snp.sum(_clamped(x, _FP) ** 2)


@pytest.mark.parametrize("f", [_interp_squares, _clamped_squares])
def test_hessian_of_chained_where_after_a_static_if(x64, f):
    x = np.linspace(-1.4, 1.6, 5)
    got = secant.hessian(f)(x)
    grad = secant.grad(f)
    eps = 1e-6
    fd = np.stack([(np.asarray(grad(x + eps * e)) - np.asarray(grad(x - eps * e))) / (2 * eps)
                   for e in np.eye(5)])
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.hessian(f))(x), got, rtol=1e-10, atol=1e-12)

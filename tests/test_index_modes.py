"""Out-of-range indices as JAX programs rely on them: a read (gather) clamps the index into range,
an update (scatter) drops it; `.at[...].get(mode=...)` and `.set(..., mode=...)`; negative indices
keep Python's meaning; derivatives agree with finite differences; a Python list still raises."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

X = np.array([1.5, -2.0, 3.25])
M = np.arange(12.0).reshape(3, 4)


def _fd_grad(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (float(f(snp.asarray(x + e))) - float(f(snp.asarray(x - e)))) / (2 * eps)
    return g


def _clamped(i, n):
    """JAX's reading of index i into an axis of size n: negatives count from the end, then
    clamp."""
    i = i + n if i < 0 else i
    return min(max(i, 0), n - 1)


# --- values: eager, jit, vmap ---------------------------------------------------------------------
@pytest.mark.parametrize("i", [10, 3, -4, -10, 2, -1, 0])
def test_static_int_read_clamps_eager_and_jit(i):
    x = snp.asarray(X)
    want = X[_clamped(i, 3)]
    assert float(x[i]) == want
    assert float(secant.jit(lambda x: x[i])(X)) == want
    assert float(x.at[i].get()) == want


def test_two_dimensional_reads_clamp_per_axis():
    m = snp.asarray(M)
    assert float(m[5, 1]) == M[2, 1]
    assert float(m[1, 9]) == M[1, 3]
    assert float(m[-9, 2]) == M[0, 2]
    np.testing.assert_array_equal(np.asarray(m[5]), M[2])
    np.testing.assert_array_equal(np.asarray(m[:, 7]), M[:, 3])
    np.testing.assert_array_equal(np.asarray(secant.jit(lambda m: m[:, 7])(M)), M[:, 3])


def test_traced_index_reads_clamp():
    f = secant.jit(lambda x, i: x[i])
    for i in (10, -10, 1, -1):
        assert float(f(X, np.int32(i))) == X[_clamped(i, 3)]
    idx = np.array([10, -10, -1, 1])
    want = X[[_clamped(int(i), 3) for i in idx]]
    np.testing.assert_array_equal(np.asarray(snp.asarray(X)[idx]), want)
    np.testing.assert_array_equal(np.asarray(secant.jit(lambda x, i: x[i])(X, idx)), want)


def test_vmap_reads_clamp_against_a_loop():
    xs = np.arange(6.0).reshape(2, 3)
    idx = np.array([5, -7])
    got = secant.vmap(lambda x, i: x[i])(xs, idx)
    np.testing.assert_array_equal(np.asarray(got), [xs[k, _clamped(int(idx[k]), 3)]
                                                    for k in range(2)])
    got = secant.vmap(lambda x: x[10])(xs)
    np.testing.assert_array_equal(np.asarray(got), xs[:, 2])


@pytest.mark.parametrize("i", [10, 3, -4, -10])
def test_updates_out_of_range_are_dropped(i):
    x = snp.asarray(X)
    for method, v in (("set", 7.0), ("add", 7.0), ("mul", 7.0), ("min", -70.0), ("max", 70.0)):
        np.testing.assert_array_equal(np.asarray(getattr(x.at[i], method)(v)), X)
        got = secant.jit(lambda x: getattr(x.at[i], method)(v))(X)
        np.testing.assert_array_equal(np.asarray(got), X)
    # in range: a normal update (negatives count from the end)
    want = X.copy()
    want[-1] = 7.0
    np.testing.assert_array_equal(np.asarray(x.at[-1].set(7.0)), want)


def test_update_index_arrays_drop_only_the_entries_out_of_range():
    x = snp.asarray(X)
    got = x.at[np.array([10, 1, -10])].set(np.array([5.0, 6.0, 7.0]))
    np.testing.assert_array_equal(np.asarray(got), [X[0], 6.0, X[2]])
    got = secant.jit(lambda x, i: x.at[i].add(1.0))(X, np.array([3, 0, -1]))
    np.testing.assert_array_equal(np.asarray(got), [X[0] + 1, X[1], X[2] + 1])


def test_get_modes():
    x = snp.asarray(X)
    assert float(x.at[10].get(mode="fill", fill_value=-1.0)) == -1.0
    assert np.isnan(float(x.at[10].get(mode="fill")))            # JAX's default fill: NaN
    assert float(x.at[10].get(mode="clip")) == X[2]
    assert float(x.at[-10].get(mode="clip")) == X[0]
    assert float(x.at[1].get(mode="promise_in_bounds")) == X[1]
    assert float(x.at[-1].get(mode="fill", fill_value=0.0)) == X[2]   # (in range: the value)
    got = secant.jit(lambda x, i: x.at[i].get(mode="fill", fill_value=0.0))(X, np.array([1, 5]))
    np.testing.assert_array_equal(np.asarray(got), [X[1], 0.0])
    ints = snp.arange(3)
    assert int(ints.at[7].get(mode="fill")) == np.iinfo(np.int32).min


def test_update_modes():
    x = snp.asarray(X)
    np.testing.assert_array_equal(np.asarray(x.at[10].set(5.0, mode="drop")), X)
    np.testing.assert_array_equal(np.asarray(x.at[10].set(5.0, mode="clip")), [X[0], X[1], 5.0])
    np.testing.assert_array_equal(np.asarray(x.at[-10].add(5.0, mode="clip")),
                                  [X[0] + 5, X[1], X[2]])
    got = secant.jit(lambda x: x.at[10].set(5.0, mode="clip"))(X)
    np.testing.assert_array_equal(np.asarray(got), [X[0], X[1], 5.0])


def test_an_axis_of_size_zero_and_python_lists_still_raise():
    with pytest.raises(IndexError):
        snp.zeros((0, 2))[0]
    xs = [1.0, 2.0]

    def f(x):
        return x * xs[5]            # a Python list: Python's IndexError, not a clamp
    with pytest.raises(IndexError):
        f(1.0)
    with pytest.raises(IndexError):
        secant.jit(f)(1.0)
    with pytest.raises(IndexError):
        secant.grad(f)(1.0)
    with pytest.raises(IndexError):
        secant.grad(lambda t: t[3])((1.0, 2.0))        # a tuple argument


# --- derivatives: against float64 finite differences ----------------------------------------------
W = np.array([0.3, -1.1, 2.0])


def _read_static(x):
    return x[10] * 2.0 + x[-10] ** 2 + x[-1]


def _read_traced(x):
    i = snp.array([10, -10, 1, 3])
    return snp.sum(x[i] * snp.array([1.0, 2.0, 3.0, 4.0]))


def _read_2d(m):
    return snp.sum(m[5]) * snp.sum(m[:, 9]) + m[-9, 2]


def _set_values(v):
    x = snp.asarray(X)
    y = x.at[snp.array([10, 1, -5])].set(v)
    return snp.sum(y * W)


def _add_static(x):
    return snp.sum(x.at[7].add(x[0] ** 2) * W) + snp.sum(x.at[1].add(x[0] * 3) * W)


def _mul_values(v):
    x = snp.asarray(X)
    return snp.sum(x.at[snp.array([0, 9])].mul(v) * W)


@pytest.mark.parametrize("f, x", [(_read_static, X), (_read_traced, X), (_read_2d, M),
                                  (_set_values, np.array([0.5, 1.5, 2.5])), (_add_static, X),
                                  (_mul_values, np.array([2.0, 3.0]))])
def test_gradients_match_finite_differences(x64, f, x):
    x = np.asarray(x, np.float64)
    fd = _fd_grad(f, x)
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(x)), fd, rtol=1e-6,
                               atol=1e-8)
    # forward mode: one tangent
    t = np.linspace(0.5, 1.5, x.size).reshape(x.shape)
    _, tangent = secant.jvp(f, (x,), (t,))
    np.testing.assert_allclose(float(tangent), float(np.sum(fd * t)), rtol=1e-6, atol=1e-8)


def test_gradient_of_a_clamped_read_goes_where_it_read(x64):
    # as JAX: grad(lambda x: x[10])(arange(3.)) is [0, 0, 1]
    np.testing.assert_array_equal(np.asarray(secant.grad(lambda x: x[10])(np.arange(3.0))),
                                  [0.0, 0.0, 1.0])
    g = secant.grad(lambda x, v: snp.sum(x.at[snp.array([10, 1])].set(v)), argnums=(0, 1))(
        np.arange(3.0), np.array([2.0, 3.0]))
    np.testing.assert_array_equal(np.asarray(g[0]), [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(np.asarray(g[1]), [0.0, 1.0])     # the dropped value: none


def test_vmap_of_gradient_of_clamped_reads(x64):
    xs = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    got = secant.vmap(secant.grad(_read_static))(xs)
    want = np.stack([_fd_grad(_read_static, x) for x in xs])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)


def test_a_derivative_through_a_clamped_read_saves_as_source(tmp_path):
    path = tmp_path / "read_grad.py"
    secant.save_source(secant.grad(_read_traced), str(path))
    text = path.read_text()
    assert '.at[i].add(' in text and 'mode="clip")' in text      # (where the read clamped)

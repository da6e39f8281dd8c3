"""secant/numpy/extra.py beyond the shared harness (tests/library_cases/numpy_missing.py): user
code calling r_/piecewise/searchsorted under grad and vmap, constants for grad, static sizes
under jit, argument checks, and NumPy agreement over shapes (hypothesis)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import secant
import secant.numpy as snp
from secant.backends.errors import ConcretizationError, SecantError


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return g


# --- r_ and c_ in user code ---------------------------------------------------------------------
def r_loss(x):
    y = snp.r_[x, 2.0 * x, 0:2, -1.5]
    return snp.sum(y * y)


def c_loss(x):
    return snp.sum(snp.c_[x, snp.sin(x)] ** 2)


def test_r_and_c_under_grad_vmap_and_jit(x64):
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(secant.grad(r_loss)(x), 10 * x)        # 2x + 2 * 2 * (2x)
    np.testing.assert_allclose(secant.jit(secant.grad(r_loss))(x), 10 * x)
    np.testing.assert_allclose(secant.grad(c_loss)(x), _fd(c_loss, x), rtol=1e-6)
    xs = np.stack([x, x + 1.0])
    np.testing.assert_allclose(secant.vmap(secant.grad(c_loss))(xs),
                               np.stack([_fd(c_loss, r) for r in xs]), rtol=1e-6)
    assert np.asarray(secant.vmap(r_loss)(xs)).shape == (2,)
    src = secant.source(secant.grad(r_loss))
    # (the slice's and the scalar's pieces are used twice, by the forward line and the vjp:
    # ad/cse.py names them once)
    assert "range_0_2_None = snp.r_.range(0, 2, None)" in src
    assert "y = snp.r_.concat(x, v_2_times_x, range_0_2_None, array_neg)" in src


def test_numpy_r_of_differentiated_values_is_an_error_naming_the_line():
    def f(x):
        return snp.sum(np.r_[x, x])
    with pytest.raises(SecantError, match=r"np\.r_\[\.\.\.\].*snp\.r_") as info:
        secant.grad(f)(np.ones(2, np.float32))
    assert "test_numpy_missing.py" in str(info.value)


def test_r_values_and_directives_against_numpy():
    a, b = np.arange(3.0), np.arange(3.0, 6.0)
    for got, want in [(snp.r_[a, 0:3, 7], np.r_[a, 0:3, 7]),
                      (snp.r_["-1", a[None], b[None]], np.r_["-1", a[None], b[None]]),
                      (snp.r_["0,2,0", a, b], np.r_["0,2,0", a, b]),
                      (snp.r_[0:1:4j], np.r_[0:1:4j]),
                      (snp.c_[a, b, a], np.c_[a, b, a])]:
        np.testing.assert_allclose(got, want)
    with pytest.raises(SecantError, match="matrix"):
        snp.r_["r", a, b]


# --- piecewise and select with functions in user code --------------------------------------------
def pw_loss(x):
    y = snp.piecewise(x, [x < 0.0, x > 1.0], [lambda t: t * t, snp.exp, 0.5])
    return snp.sum(y * x)


def test_piecewise_grad_jvp_vmap(x64):
    x = np.array([-1.5, -0.2, 0.3, 0.9, 1.4, 2.0])
    want = _fd(pw_loss, x)
    np.testing.assert_allclose(secant.grad(pw_loss)(x), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(pw_loss))(x), want, rtol=1e-6)
    t = np.linspace(-1, 1, 6)
    _, tangent = secant.jvp(pw_loss, (x,), (t,))
    np.testing.assert_allclose(tangent, want @ t, rtol=1e-6)
    xs = np.stack([x, -x])
    np.testing.assert_allclose(secant.vmap(secant.grad(pw_loss))(xs),
                               np.stack([_fd(pw_loss, r) for r in xs]), rtol=1e-6)


def test_piecewise_extra_arguments_are_bound():
    x = np.array([-1.0, 2.0], np.float32)
    got = snp.piecewise(x, [x < 0], [lambda t, k: k * t, lambda t, k: t + k], 3.0)
    np.testing.assert_allclose(got, [-3.0, 5.0])


def test_select_is_first_true_and_differentiable(x64):
    def f(x):
        return snp.sum(snp.select([x > 0.0, x > -1.0], [x ** 3, -x], 2.0 * x))
    x = np.array([-2.0, -0.5, 0.5, 1.5])
    np.testing.assert_allclose(snp.select([x > 0, x > -1], [x ** 3, -x], 2 * x),
                               np.select([x > 0, x > -1], [x ** 3, -x], 2 * x))
    np.testing.assert_allclose(secant.grad(f)(x), _fd(f, x), rtol=1e-6)
    with pytest.raises(SecantError, match="same length"):
        snp.select([x > 0], [x, x])


# --- comparisons and searches are constants for grad -------------------------------------------
def test_comparisons_and_searches_are_constants_for_grad(x64):
    xp = np.array([0.0, 1.0, 4.0, 9.0])

    def f(x, fp):
        i = snp.searchsorted(fp, x)                  # an index: no derivative, as in JAX
        close = snp.isclose(x, 0.5)
        return snp.sum(snp.interp(x, snp.arange(4.0), fp)) + snp.sum(fp[i]) \
            + snp.sum(snp.where(close, x, 3.0 * x))
    x = np.array([0.5, 2.5])
    gx, gfp = secant.grad(f, argnums=(0, 1))(x, xp)
    np.testing.assert_allclose(gx, [1.0 + 1.0, 5.0 + 3.0])
    np.testing.assert_allclose(gfp, [0.5, 1.5, 1.5, 0.5])
    _, t = secant.jvp(lambda x: snp.sum(snp.searchsorted(xp, x) * 1.0), (x,), (np.ones(2),))
    assert float(t) == 0.0


# --- unique, bincount, histogram: static sizes --------------------------------------------------
def test_unique_is_differentiable_away_from_ties(x64):
    def f(x):
        return snp.sum(snp.unique(x, size=4) * np.array([1.0, 2.0, 3.0, 4.0]))
    x = np.array([0.3, -1.0, 2.0, 0.7])
    np.testing.assert_allclose(snp.unique(x, size=4), np.unique(x))
    np.testing.assert_allclose(secant.grad(f)(x), _fd(f, x), rtol=1e-6)
    np.testing.assert_allclose(secant.grad(f)(x), [2.0, 1.0, 4.0, 3.0])


def test_data_dependent_shapes_need_a_static_size_under_jit():
    x = np.array([1, 1, 3], np.int32)
    np.testing.assert_array_equal(snp.unique(x), [1, 3])             # eager: computed
    np.testing.assert_array_equal(snp.bincount(x), [0, 2, 0, 1])
    with pytest.raises(ConcretizationError, match="size="):
        secant.jit(snp.unique)(x)
    with pytest.raises(ConcretizationError, match="length="):
        secant.jit(snp.bincount)(x)
    np.testing.assert_array_equal(secant.jit(lambda x: snp.unique(x, size=3, fill_value=-1))(x),
                                  [1, 3, -1])
    np.testing.assert_array_equal(secant.jit(lambda x: snp.bincount(x, length=3))(x), [0, 2, 0])


def test_bincount_clips_negative_and_drops_past_the_end_as_jax():
    x = np.array([-2, 0, 1, 5], np.int32)
    np.testing.assert_array_equal(snp.bincount(x, length=3), [2, 1, 0])


def test_histogram_weights_gradient_and_counts(x64):
    a = np.array([0.1, 0.4, 0.4, 0.9, 1.0, -3.0])
    counts, edges = snp.histogram(a, 3, range=(0.0, 1.0))
    want_counts, want_edges = np.histogram(a, 3, range=(0.0, 1.0))
    np.testing.assert_allclose(counts, want_counts)
    np.testing.assert_allclose(edges, want_edges)

    def f(w):
        return snp.sum(snp.histogram(a, 3, range=(0.0, 1.0), weights=w)[0] * np.arange(1.0, 4.0))
    w = np.linspace(0.5, 1.5, 6)
    np.testing.assert_allclose(secant.grad(f)(w), [1, 2, 2, 3, 3, 0])


# --- argument checks ----------------------------------------------------------------------------
def test_argument_checks():
    with pytest.raises(SecantError, match="1-D"):
        snp.meshgrid(np.ones((2, 2)), np.ones(3))
    with pytest.raises(SecantError, match="indexing"):
        snp.meshgrid(np.ones(2), np.ones(3), indexing="yx")
    with pytest.raises(SecantError, match="mode"):
        snp.convolve(np.ones(3), np.ones(2), mode="circular")
    with pytest.raises(SecantError, match="1-D"):
        snp.searchsorted(np.ones((2, 2)), 0.5)
    with pytest.raises(SecantError, match="kth"):
        snp.partition(np.ones(3), 3)
    with pytest.raises(SecantError, match="edge_order"):
        snp.gradient(np.ones(4), edge_order=3)


# --- the dot-product identity <u, J v> == <J^T u, v> -----------------------------------------------
@pytest.mark.parametrize("fn", [lambda a: snp.convolve(a, np.array([1.0, -2.0, 0.5]), "same"),
                                lambda a: snp.gradient(a, 0.3, edge_order=2),
                                lambda a: snp.insert(a, [1, 3], 2.0 * a[:2]),
                                lambda a: snp.interp(np.linspace(-1, 4, 7), np.arange(5.0), a)])
def test_dot_product_identity(x64, fn):
    rng = np.random.default_rng(0)
    a = rng.normal(size=5)
    v = rng.normal(size=5)
    out, jv = secant.jvp(fn, (a,), (v,))
    u = rng.normal(size=np.shape(out))
    _, pullback = secant.vjp(fn, a)
    jtu, = pullback(u)
    np.testing.assert_allclose(np.vdot(u, jv), np.vdot(jtu, v), rtol=1e-10)


# --- NumPy agreement over shapes and arguments ----------------------------------------------------
@given(n=st.integers(1, 7), m=st.integers(1, 7), mode=st.sampled_from(["full", "same", "valid"]))
def test_convolve_and_correlate_match_numpy(n, m, mode):
    rng = np.random.default_rng(n * 10 + m)
    a, v = rng.normal(size=n).astype(np.float32), rng.normal(size=m).astype(np.float32)
    np.testing.assert_allclose(snp.convolve(a, v, mode), np.convolve(a, v, mode), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(snp.correlate(a, v, mode), np.correlate(a, v, mode), rtol=1e-5,
                               atol=1e-5)


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_insert_delete_diff_match_numpy(shape, data):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) ** 2
    axis = data.draw(st.integers(-len(shape), len(shape) - 1) | st.none())
    length = a.size if axis is None else shape[axis]
    idx = data.draw(st.lists(st.integers(0, length - 1), min_size=1, max_size=3))
    np.testing.assert_allclose(snp.delete(a, idx, axis), np.delete(a, idx, axis))
    np.testing.assert_allclose(secant.jit(lambda a: snp.insert(a, idx, -1.0, axis))(a),
                               np.insert(a, idx, -1.0, axis))
    if axis is not None and shape[axis] > 1:
        n = data.draw(st.integers(0, shape[axis]))
        np.testing.assert_allclose(snp.diff(a, n, axis), np.diff(a, n, axis))


@given(bins=st.integers(1, 6), n=st.integers(1, 12))
def test_histogram_matches_numpy(bins, n):
    a = np.random.default_rng(n).normal(size=n).astype(np.float32)
    counts, edges = secant.jit(lambda a: snp.histogram(a, bins))(a)
    want_counts, want_edges = np.histogram(a, bins)
    np.testing.assert_allclose(edges, want_edges, rtol=1e-5, atol=1e-6)
    # binned by secant's own float32 edges (a value on an edge, as the single value of n=1 is,
    # may round to either side of NumPy's float64 edge)
    np.testing.assert_array_equal(counts, np.histogram(a, np.asarray(edges))[0])
    assert int(np.sum(counts)) == n

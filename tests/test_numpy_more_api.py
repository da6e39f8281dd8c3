"""jax.numpy functions of secant/numpy/more_api.py: values against NumPy (float64), eagerly
and under jit, gradients against central differences, vmap against a loop; the integer and
set functions against NumPy, with size= under jit."""

import numpy as np
import pytest

import secant
import secant.numpy as snp
from tests.central_differences import weighted_fd

rng = np.random.default_rng(1)
X = rng.normal(size=(4, 5))
Xn = X.copy()
Xn[0, 1] = Xn[3, 4] = np.nan
Xn[2, :] = np.nan
xs = np.linspace(0, 1, 7)
ys = 1 + 2 * xs - 3 * xs**2 + 0.01 * rng.normal(size=7)
ph = np.cumsum(rng.normal(size=9) * 3)
# f(x), x, NumPy's f
CASES = {  # f(x), x, numpy reference: values, jit, grad (central differences), vmap
    "geomspace": (lambda a: snp.geomspace(a, 100.0, 5), 2.0, lambda a: np.geomspace(a, 100.0, 5)),
    "geomspace_neg": (
        lambda a: snp.geomspace(-a, -1000.0, 4, endpoint=False),
        2.0,
        lambda a: np.geomspace(-a, -1000.0, 4, endpoint=False),
    ),
    "choose": (
        lambda a: snp.choose(np.array([0, 2, 1, 2]), a),
        X[:3, :4],
        lambda a: np.choose(np.array([0, 2, 1, 2]), a),
    ),
    "compress": (
        lambda a: snp.compress(np.array([True, False, True]), a, axis=1),
        X,
        lambda a: np.compress(np.array([True, False, True]), a, axis=1),
    ),
    "extract": (lambda a: snp.extract(X > 0, a), X, lambda a: np.extract(X > 0, a)),
    "nanquantile": (
        lambda a: snp.nanquantile(a, np.array([0.2, 0.5]), axis=1),
        Xn,
        lambda a: np.nanquantile(a, np.array([0.2, 0.5]), axis=1),
    ),
    "nanquantile_all": (
        lambda a: snp.nanquantile(a, 0.3, keepdims=True),
        Xn,
        lambda a: np.nanquantile(a, 0.3, keepdims=True),
    ),
    "nanmedian": (
        lambda a: snp.nanmedian(a, axis=0, keepdims=True),
        Xn,
        lambda a: np.nanmedian(a, axis=0, keepdims=True),
    ),
    "nanpercentile": (
        lambda a: snp.nanpercentile(a, 70.0, axis=1, method="nearest"),
        Xn,
        lambda a: np.nanpercentile(a, 70.0, axis=1, method="nearest"),
    ),
    "polyfit": (lambda a: snp.polyfit(xs, a, 2), ys, lambda a: np.polyfit(xs, a, 2)),
    "polyfit_w": (
        lambda a: snp.polyfit(xs, a, 1, w=xs + 1),
        ys,
        lambda a: np.polyfit(xs, a, 1, w=xs + 1),
    ),
    "unwrap": (lambda a: snp.unwrap(a), ph, lambda a: np.unwrap(a)),
    "resize": (lambda a: snp.resize(a, (3, 7)), X[0], lambda a: np.resize(a, (3, 7))),
    "frexp_m": (lambda a: snp.frexp(a)[0], X * 100, lambda a: np.frexp(a)[0]),
    "trim_zeros": (
        lambda a: snp.trim_zeros(a),
        np.array([0.0, 0.0, 1.5, 0.0, 2.0, 0.0]),
        lambda a: np.trim_zeros(a),
    ),
}


@pytest.mark.filterwarnings("ignore:All-NaN slice")
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_gradients_and_vmap(name, x64):
    f, x, ref = CASES[name]
    want = ref(x)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-9, atol=1e-12)
    if name == "trim_zeros":  # needs concrete values, as JAX's
        return
    np.testing.assert_allclose(np.asarray(secant.jit(f)(x)), want, rtol=1e-9, atol=1e-12)
    g0, w = weighted_fd(ref, x)
    g = secant.grad(lambda a: snp.nansum(f(a) * w))(x)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-5, atol=1e-7)
    xb = np.stack([np.asarray(x, float), np.asarray(x, float) * 1.5])
    np.testing.assert_allclose(
        np.asarray(secant.vmap(f)(xb)), np.stack([ref(xb[0]), ref(xb[1])]), rtol=1e-9, atol=1e-12
    )


def eq(x, y):
    np.testing.assert_array_equal(np.asarray(x), y)


def test_integer_set_and_static_functions():
    a = np.array([12, -18, 0, 7, 100, 0])
    b = np.array([18, 12, 5, 0, 75, 0])
    for fn, ref in ((snp.gcd, np.gcd), (snp.lcm, np.lcm)):
        eq(fn(a, b), ref(a, b))
        eq(secant.jit(fn)(a, b), ref(a, b))
        eq(secant.vmap(fn)(np.stack([a, b]), np.stack([b, a])), np.stack([ref(a, b), ref(b, a)]))
    idx = np.array([0, 5, 11, 7])
    for u, r in zip(snp.unravel_index(idx, (3, 4)), np.unravel_index(idx, (3, 4))):
        eq(u, r)
    eq(secant.jit(lambda i: snp.unravel_index(i, (3, 4))[1])(idx), np.unravel_index(idx, (3, 4))[1])
    mi = (np.array([0, 2, 1]), np.array([3, 0, 2]))
    for order in "CF":
        eq(
            snp.ravel_multi_index(mi, (3, 4), order=order),
            np.ravel_multi_index(mi, (3, 4), order=order),
        )
    eq(
        snp.ravel_multi_index((np.array([5]), np.array([-1])), (3, 4), mode="wrap"),
        np.ravel_multi_index((np.array([5]), np.array([-1])), (3, 4), mode="wrap"),
    )
    eq(
        snp.ravel_multi_index((np.array([5]), np.array([-1])), (3, 4), mode="clip"),
        np.ravel_multi_index((np.array([5]), np.array([-1])), (3, 4), mode="clip"),
    )
    x1 = np.array([5, 1, 3, 3, 9, 7])
    x2 = np.array([3, 4, 9, 10])
    eq(snp.setdiff1d(x1, x2), np.setdiff1d(x1, x2))
    eq(snp.union1d(x1, x2), np.union1d(x1, x2))
    eq(snp.intersect1d(x1, x2), np.intersect1d(x1, x2))
    r = np.intersect1d(x1, x2, return_indices=True)
    for g, w in zip(snp.intersect1d(x1, x2, return_indices=True), r):
        eq(g, w)
    eq(
        secant.jit(lambda p, q: snp.setdiff1d(p, q, size=5, fill_value=-1))(x1, x2),
        [1, 5, 7, -1, -1],
    )
    eq(secant.jit(lambda p, q: snp.intersect1d(p, q, size=3, fill_value=-1))(x1, x2), [3, 9, -1])
    eq(secant.jit(lambda p, q: snp.union1d(p, q, size=8))(x1, x2), [1, 3, 4, 5, 7, 9, 10, 1])
    eq(secant.jit(lambda c, v: snp.extract(c, v, size=4, fill_value=-1))(x1 > 4, x1), [5, 9, 7, -1])
    k1 = np.array([1, 0, 1, 0, 2])
    k2 = np.array([3, 3, 1, 1, 0])
    eq(snp.lexsort((k1, k2)), np.lexsort((k1, k2)))
    eq(secant.jit(lambda p, q: snp.lexsort((p, q)))(k1, k2), np.lexsort((k1, k2)))
    eq(
        snp.frexp(np.array([0.0, 3.0, -0.1, np.inf, 1e-40], np.float32))[1],
        np.frexp(np.array([0.0, 3.0, -0.1, np.inf, 1e-40], np.float32))[1],
    )
    eq(
        snp.frexp(np.array([0.0, 3.0, -0.1, 1e-40, 1.0, 0.5], np.float32))[0],
        np.frexp(np.array([0.0, 3.0, -0.1, 1e-40, 1.0, 0.5], np.float32))[0],
    )
    m = snp.mgrid[0:3, 0:4]
    eq(m, np.mgrid[0:3, 0:4])
    assert m.dtype == np.int32
    o = snp.ogrid[0:1:5j, 0:2]
    eq(o[0], np.ogrid[0:1:5j, 0:2][0].astype(np.float32))
    assert o[0].dtype == np.float32
    rts = np.asarray(snp.roots(np.array([0.0, 1.0, -6.0, 11.0, -6.0, 0.0])))
    np.testing.assert_allclose(
        np.sort_complex(rts),
        np.sort_complex(np.roots([0.0, 1.0, -6.0, 11.0, -6.0, 0.0])),
        atol=1e-5,
    )
    eq(
        snp.i0(np.array([0.0, 1.0])).round(5),
        np.i0(np.array([0.0, 1.0])).round(5).astype(np.float32),
    )


def test_choose_of_a_list_differentiates_each_choice():
    x = np.arange(12.0).reshape(3, 4)
    g = secant.grad(lambda x: snp.sum(snp.choose(np.array([0, 2, 1, 2]), [x[0], x[1], x[2]])))(x)
    eq(g, np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 1]], float))
    with pytest.raises(ValueError, match="invalid entry"):
        snp.choose(np.array([3]), [x[0], x[1]])


def test_vmap_of_choose_over_a_list_of_batched_choices():
    # regression: the list's shapes were read per item inside the batched source, giving one
    # row per choice (a silent wrong shape)
    x = np.arange(24.0).reshape(2, 3, 4)
    got = secant.vmap(lambda a: snp.choose(np.array([0, 2, 1, 2]), [a[0], a[1], a[2]]))(x)
    eq(got, np.stack([np.choose([0, 2, 1, 2], list(e)) for e in x]))

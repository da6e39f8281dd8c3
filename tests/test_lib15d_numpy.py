"""lib15d: jax.numpy names tutorials meet that secant lacked: histogramdd, histogram2d (values
and edges against NumPy, gradients in the weights against the closed form, jit against eager,
vmap against a loop) and unique_all (against NumPy's unique)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

RNG = np.random.default_rng(153)
S = RNG.normal(size=(40, 2))
W = RNG.uniform(size=40)
S3 = RNG.normal(size=(25, 3))


def close(a, b, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


CASES = [dict(bins=3), dict(bins=[3, 4]), dict(bins=4, range=[(-1, 1), (-2, 2)]),
         dict(bins=3, weights=W), dict(bins=3, density=True),
         dict(bins=[np.array([-3.0, 0.0, 3.0]), 4]), dict(bins=5, weights=W, density=True)]


@pytest.mark.parametrize("kw", CASES, ids=range(len(CASES)))
def test_histogramdd_against_numpy(kw, x64):
    h, edges = snp.histogramdd(S, **kw)
    H, E = np.histogramdd(S, **kw)
    close(h, H)
    assert len(edges) == 2
    for e, want in zip(edges, E):
        close(e, want)
    if "weights" not in kw and not kw.get("density"):
        assert np.asarray(h).dtype == np.int32         # counts, as JAX's
    h3, e3 = snp.histogramdd(S3, bins=[2, 3, 4])
    close(h3, np.histogramdd(S3, bins=[2, 3, 4])[0])
    hj, ej = secant.jit(lambda s: snp.histogramdd(s, bins=3, range=[(-3, 3), (-3, 3)]))(S)
    close(hj, np.histogramdd(S, bins=3, range=[(-3, 3), (-3, 3)])[0])


def test_histogram2d_against_numpy(x64):
    x, y = S[:, 0], S[:, 1]
    for kw in (dict(bins=5, weights=W), dict(bins=np.linspace(-3, 3, 7)),
               dict(bins=[3, 6], density=True)):
        h, xe, ye = snp.histogram2d(x, y, **kw)
        H, XE, YE = np.histogram2d(x, y, **kw)
        close(h, H)
        close(xe, XE)
        close(ye, YE)


def test_histogram2d_gradient_in_the_weights_and_vmap(x64):
    x, y = S[:, 0], S[:, 1]

    def f(w):
        return snp.sum(snp.histogram2d(x, y, bins=3, weights=w)[0] ** 2)

    # d/dw_i sum_b (sum_{j in b} w_j)^2 = 2 H[bin of i]
    H, xe, ye = np.histogram2d(x, y, bins=3, weights=W)
    bx = np.clip(np.searchsorted(xe, x, side="right") - 1, 0, 2)
    by = np.clip(np.searchsorted(ye, y, side="right") - 1, 0, 2)
    want = 2 * H[bx, by]
    close(secant.grad(f)(W), want)
    close(secant.jit(secant.grad(f))(W), want)
    ws = np.stack([W, 2 * W, W ** 2])
    got = secant.vmap(lambda w: snp.histogram2d(x, y, bins=3, weights=w)[0])(ws)
    for k in range(3):
        close(got[k], np.histogram2d(x, y, bins=3, weights=ws[k])[0])


def test_histogramdd_refusals():
    with pytest.raises(ValueError, match="one weight for each sample"):
        snp.histogramdd(S, weights=W[:3])
    with pytest.raises(ValueError, match="a bin for each dimension"):
        snp.histogramdd(S, bins=[2, 3, 4])


def test_unique_all_against_numpy():
    x = np.array([[3, 1, 3], [2, 7, 1]])
    got = snp.unique_all(x)
    values, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                               return_counts=True)
    np.testing.assert_array_equal(got.values, values)
    np.testing.assert_array_equal(got.indices, index)
    np.testing.assert_array_equal(got.inverse_indices, inverse.reshape(x.shape))
    np.testing.assert_array_equal(got.counts, counts)
    padded = secant.jit(lambda v: snp.unique_all(v, size=6, fill_value=-1))(x)
    np.testing.assert_array_equal(padded.values, [1, 2, 3, 7, -1, -1])
    np.testing.assert_array_equal(padded.counts[:4], counts)

"""lib15d: jax.scipy.cluster.vq.vq (against scipy.cluster.vq, its distances' gradient against
the closed form, vmap against a loop) and jax.nn.initializers.delta_orthogonal (its centre is
orthogonal()'s matrix for the same key, zeros elsewhere, under vmap over keys)."""
import numpy as np
import pytest
import scipy.cluster.vq as svq

import secant
import secant.numpy as snp
from secant import random
from secant.nn.initializers import delta_orthogonal, orthogonal
from secant.scipy.cluster.vq import vq

RNG = np.random.default_rng(154)
OBS = RNG.normal(size=(12, 3))
BOOK = RNG.normal(size=(4, 3))


def test_vq_against_scipy(x64):
    for obs, book in ((OBS, BOOK), (OBS[:, 0], BOOK[:, 0])):
        code, dist = vq(obs, book)
        want_code, want_dist = svq.vq(obs, book)
        np.testing.assert_array_equal(code, want_code)
        np.testing.assert_allclose(dist, want_dist, rtol=1e-12)
        jcode, jdist = secant.jit(vq)(obs, book)
        np.testing.assert_array_equal(jcode, want_code)
        np.testing.assert_allclose(jdist, want_dist, rtol=1e-12)
    with pytest.raises(ValueError, match="same rank"):
        vq(OBS, BOOK[:, 0])


def test_vq_distance_gradient_and_vmap(x64):
    code, dist = svq.vq(OBS, BOOK)
    want = np.zeros_like(BOOK)      # d/dc_j sum_i |o_i - c_code(i)| = sum_{code(i)=j} (c_j - o_i) / d_i
    for i, j in enumerate(code):
        want[j] += (BOOK[j] - OBS[i]) / dist[i]
    got = secant.grad(lambda b: snp.sum(vq(OBS, b)[1]))(BOOK)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    obs = np.stack([OBS, OBS[::-1] * 2])
    codes = secant.vmap(lambda o: vq(o, BOOK)[0])(obs)
    for k in range(2):
        np.testing.assert_array_equal(codes[k], svq.vq(obs[k], BOOK)[0])


def _kernel(key):
    return delta_orthogonal(scale=2.0)(key, (3, 3, 4, 5))


def test_delta_orthogonal():
    key = random.PRNGKey(7)
    w = np.asarray(_kernel(key))
    centre = np.asarray(orthogonal(scale=2.0)(key, (4, 5)))
    np.testing.assert_allclose(w[1, 1], centre)
    w[1, 1] = 0
    assert not w.any()
    np.testing.assert_allclose(centre @ centre.T, 4 * np.eye(4), atol=1e-5)
    assert np.asarray(delta_orthogonal()(key, (5, 2, 2, 3, 3))).shape == (5, 2, 2, 3, 3)
    keys = random.split(key, 3)
    batch = secant.vmap(_kernel)(keys)
    for k in range(3):
        np.testing.assert_allclose(batch[k], _kernel(keys[k]), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="3D, 4D or 5D"):
        delta_orthogonal()(key, (4, 5))
    with pytest.raises(ValueError, match="fan_in"):
        delta_orthogonal()(key, (3, 5, 4))

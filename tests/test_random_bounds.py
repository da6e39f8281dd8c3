"""grad / jvp of secant.random.uniform in minval, maxval and of truncated_normal in its bounds
(secant/random_bounds.py): JAX differentiates them (the noise is fixed by the key), secant used
to refuse. Checked against jax.random's gradients (jax 0.10.2, pasted as literals), float64
finite differences of the same draw, jit against eager, vmap against a loop, and the draws
against the sampler's own values bit for bit."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import random as R

K = R.PRNGKey(0)
W = np.array([1.0, 2.0, 3.0])


def _uniform_loss(lo, hi):
    return snp.sum(R.uniform(K, (3,), minval=lo, maxval=hi) * W)


def _truncnorm_loss(lo, hi):
    return snp.sum(R.truncated_normal(K, lo, hi, (3,)) * W)


def _fd(f, args, k, eps=1e-6):
    args = [np.asarray(a, np.float64) for a in args]
    g = np.zeros_like(args[k])
    for idx in np.ndindex(g.shape):
        e = np.zeros_like(g)
        e[idx] = eps
        up = [a + e if i == k else a for i, a in enumerate(args)]
        down = [a - e if i == k else a for i, a in enumerate(args)]
        g[idx] = (float(f(*up)) - float(f(*down))) / (2 * eps)
    return g


@pytest.mark.parametrize("loss, args, want", [
    (_uniform_loss, (0.5, 2.0), (2.098299, 3.901701)),
    (_truncnorm_loss, (-0.5, 2.0), (2.118609, 1.8824795)),
])
def test_grad_matches_jax(loss, args, want):
    got = secant.grad(loss, argnums=(0, 1))(*args)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5)
    got_jit = secant.jit(secant.grad(loss, argnums=(0, 1)))(*args)
    np.testing.assert_allclose(np.asarray(got_jit), want, rtol=2e-5)


def test_draws_unchanged_by_the_source():
    """The source read for grad computes the sampler's values bit for bit."""
    lo, hi = np.float32([0.0, 1.0, -2.0]), np.float32(3.0)
    draw = R.uniform(K, (2, 3), minval=lo, maxval=hi)
    val, _ = secant.vjp(lambda a: R.uniform(K, (2, 3), minval=a, maxval=hi), lo)
    np.testing.assert_array_equal(np.asarray(val), np.asarray(draw))
    val, _ = secant.vjp(lambda a: R.truncated_normal(K, a, 2.0, (3,)), np.float32(-0.5))
    np.testing.assert_array_equal(np.asarray(val),
                                  np.asarray(R.truncated_normal(K, -0.5, 2.0, (3,))))
    np.testing.assert_allclose(np.asarray(val), [1.5739813, 1.7856985, 0.0771426], rtol=1e-6)


def test_broadcast_bounds_against_finite_differences(x64):
    def loss(lo, hi):
        return snp.sum(snp.sin(R.uniform(K, (2, 3), minval=lo, maxval=hi)))
    lo, hi = np.array([0.0, 1.0, 2.0]), np.array([[3.0], [4.0]])
    g_lo, g_hi = secant.grad(loss, argnums=(0, 1))(lo, hi)
    np.testing.assert_allclose(np.asarray(g_lo), _fd(loss, (lo, hi), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(g_hi), _fd(loss, (lo, hi), 1), rtol=1e-6, atol=1e-9)
    # jax.random's gradient for the float32 sum (pasted): 1 - u summed over the rows
    g = secant.grad(lambda a: snp.sum(R.uniform(K, (2, 3), dtype=np.float32, minval=a,
                                                maxval=3.0)))(np.float32([0.0, 1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(g), [0.58366454, 0.4515314, 1.5022055], rtol=1e-5)


def test_truncated_normal_bounds_against_finite_differences(x64):
    def loss(lo, hi):
        return snp.sum(R.truncated_normal(K, lo, hi) ** 2)
    lo, hi = np.array([-1.0, 0.5, -3.0]), np.array([1.5, 2.0, -1.0])
    for k in (0, 1):
        got = secant.grad(loss, argnums=k)(lo, hi)
        np.testing.assert_allclose(np.asarray(got), _fd(loss, (lo, hi), k), rtol=1e-5)


def test_jvp_and_second_order(x64):
    lo, hi = 0.5, 2.0
    _, t = secant.jvp(_uniform_loss, (lo, hi), (1.0, 0.0))
    np.testing.assert_allclose(float(t), _fd(_uniform_loss, (lo, hi), 0), rtol=1e-6)
    # uniform is affine in its bounds: the second derivative is 0; truncated_normal's is not
    assert float(secant.grad(secant.grad(_uniform_loss))(lo, hi)) == pytest.approx(0.0, abs=1e-9)
    g = secant.grad(lambda a: _truncnorm_loss(a, hi))
    want = _fd(g, (-0.5,), 0, eps=1e-5)
    np.testing.assert_allclose(float(secant.grad(g)(-0.5)), want, rtol=1e-4)


def test_vmap_of_grad_over_bounds(x64):
    lows = np.array([-1.0, 0.0, 0.5])
    g = secant.grad(_truncnorm_loss)
    want = np.stack([np.asarray(g(a, 2.0)) for a in lows])
    np.testing.assert_allclose(np.asarray(secant.vmap(g, in_axes=(0, None))(lows, 2.0)), want,
                               rtol=1e-12)
    keys = R.split(K, 3)
    h = secant.grad(lambda a, k: snp.sum(R.uniform(k, (4,), minval=a, maxval=5.0)))
    want = np.stack([np.asarray(h(1.0, k)) for k in keys])
    np.testing.assert_allclose(np.asarray(secant.vmap(h, in_axes=(None, 0))(1.0, keys)), want,
                               rtol=1e-12)


def test_bad_bounds_still_name_the_line():
    with pytest.raises(secant.SecantError, match="broadcast") as info:
        secant.grad(lambda a: snp.sum(R.uniform(K, (3,), minval=a * snp.ones(4))))(0.0)
    assert "test_random_bounds.py" in str(info.value)

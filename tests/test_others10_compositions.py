"""Issue 15, code written by others (tenth round): the programs of the other test_others10_*
files under deeper compositions: forward over reverse over reverse through a lax.scan over a
namedtuple state (and reverse three times), grad of grad of the
expected-improvement acquisition along a line against its hessian, jacfwd of
jacrev against jacrev of jacfwd and hessian for the jax-md-like pair energy, vmap of jit of
grad of a scanned MPS amplitude against a loop, and grad of a vmapped sum against the sum of
grads. Each checked against float64 central differences of the order below, a Python loop or
another composition."""
import numpy as np

import secant.numpy as jnp
from secant import grad, hessian, jacfwd, jacrev, jit, vmap

from test_others10_science import R0, energy_fn, expected_improvement, tip_loss
from test_others10_tensors_ml import CONFIGS, MPS, log_norm_amp


def test_third_order_through_scan_over_namedtuple_state(x64):
    g2 = grad(grad(tip_loss))
    g3 = jacfwd(grad(grad(tip_loss)))(2.0, 0.3)         # forward over reverse over reverse
    eps = 1e-4
    np.testing.assert_allclose(g3, (g2(2.0 + eps, 0.3) - g2(2.0 - eps, 0.3)) / (2 * eps),
                               rtol=1e-5)


def test_third_order_reverse_through_scan_over_namedtuple_state(x64):
    # (the scan body's parameter is called `_`: the reverse rule's own discards (`state_bar, _
    # = out_1`) once rebound it, and its cotangent, zeros_like_tree(_), was a float for None)
    g2 = grad(grad(tip_loss))
    g3 = grad(grad(grad(tip_loss)))(2.0, 0.3)
    eps = 1e-4
    np.testing.assert_allclose(g3, (g2(2.0 + eps, 0.3) - g2(2.0 - eps, 0.3)) / (2 * eps),
                               rtol=1e-5)
    np.testing.assert_allclose(g3, jacfwd(grad(grad(tip_loss)))(2.0, 0.3), rtol=1e-10)
    # in the damping too: reverse three times against forward over reverse over reverse
    g3d = grad(grad(grad(tip_loss, argnums=1), argnums=1), argnums=1)(2.0, 0.3)
    np.testing.assert_allclose(
        g3d, jacfwd(grad(grad(tip_loss, argnums=1), argnums=1), argnums=1)(2.0, 0.3),
        rtol=1e-10)


def test_second_order_of_expected_improvement_along_a_line(x64):
    x0, d = np.array([0.7, 0.6]), np.array([0.6, -0.8])
    line = lambda t: expected_improvement(x0 + t * d)
    g1 = grad(line)
    eps = 1e-5
    g2 = grad(grad(line))(0.1)
    np.testing.assert_allclose(g2, (g1(0.1 + eps) - g1(0.1 - eps)) / (2 * eps), rtol=1e-5)
    # the second order along the line is the hessian's quadratic form
    np.testing.assert_allclose(g2, d @ np.asarray(hessian(expected_improvement)(x0 + 0.1 * d))
                               @ d, rtol=1e-10)


def test_jacfwd_of_jacrev_of_the_pair_energy(x64):
    R = jnp.asarray(R0[:3])
    H1 = jacfwd(jacrev(energy_fn))(R)
    H2 = jacrev(jacfwd(energy_fn))(R)
    np.testing.assert_allclose(H1, H2, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H1, hessian(energy_fn)(R), rtol=1e-10, atol=1e-12)
    # symmetric as a (6, 6) matrix
    M = np.asarray(H1).reshape(6, 6)
    np.testing.assert_allclose(M, M.T, rtol=1e-10, atol=1e-12)


def test_vmap_of_jit_of_grad_of_scanned_mps(x64):
    got = vmap(jit(grad(log_norm_amp)), in_axes=(None, 0))(jnp.asarray(MPS),
                                                          jnp.asarray(CONFIGS))
    for g, c in zip(got, CONFIGS):
        np.testing.assert_allclose(g, grad(log_norm_amp)(jnp.asarray(MPS), jnp.asarray(c)),
                                   rtol=1e-10, atol=1e-12)
    # grad of a vmapped sum is the sum of the per-configuration grads
    total = grad(lambda t: jnp.sum(vmap(lambda c: log_norm_amp(t, c))(jnp.asarray(CONFIGS))))
    np.testing.assert_allclose(total(jnp.asarray(MPS)), np.sum(np.asarray(got), axis=0),
                               rtol=1e-10, atol=1e-12)

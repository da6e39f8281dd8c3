"""secant/lax_more.py (more of jax.lax): values against NumPy/SciPy, grad against float64
finite differences, jit against eager, vmap against a loop."""
import numpy as np
import pytest
import scipy.special as ss

import secant
from secant import lax
from tests.central_differences import check_unary

rng = np.random.default_rng(3)
X = rng.uniform(0.3, 2.0, (2, 3))
A = np.array([[0.5, 2.0, 7.0], [1.5, 3.0, 0.8]])


def _cumlogsumexp_ref(x, axis, reverse):
    x = np.flip(x, axis) if reverse else x
    out = np.logaddexp.accumulate(x, axis=axis)
    return np.flip(out, axis) if reverse else out


CASES = {   # name: (f, x, reference)
    "square": (lax.square, X, np.square),
    "reciprocal": (lax.reciprocal, X, np.reciprocal),
    "erfc": (lax.erfc, X - 1, ss.erfc),
    "igamma": (lambda x: lax.igamma(A, x), X, lambda x: ss.gammainc(A, x)),
    "igammac": (lambda x: lax.igammac(A, x), X, lambda x: ss.gammaincc(A, x)),
    "polygamma": (lambda x: lax.polygamma(2.0, x), X, lambda x: ss.polygamma(2, x)),
    "zeta": (lambda q: lax.zeta(3.0, q), X, lambda q: ss.zeta(3.0, q)),
    "bessel_i0e": (lax.bessel_i0e, X - 1, ss.i0e),
    "bessel_i1e": (lax.bessel_i1e, X - 1, ss.i1e),
    "betainc": (lambda x: lax.betainc(2.0, 3.0, x / 2.5), X, lambda x: ss.betainc(2, 3, x / 2.5)),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(30 * x, axis=1), X,
                     lambda x: _cumlogsumexp_ref(30 * x, 1, False)),
    "cumlogsumexp_reverse": (lambda x: lax.cumlogsumexp(x, reverse=True), X,
                             lambda x: _cumlogsumexp_ref(x, 0, True)),
    "select_n_bool": (lambda x: lax.select_n(x > 1, x, -x), X, lambda x: np.where(x > 1, -x, x)),
    "select_n_int": (lambda x: lax.select_n(np.array([[0, 1, 2], [2, 1, 0]]), x, 2 * x, x ** 2),
                     X, lambda x: np.choose(np.array([[0, 1, 2], [2, 1, 0]]), [x, 2 * x, x ** 2])),
    "tile": (lambda x: lax.tile(x, (2, 1)), X, lambda x: np.tile(x, (2, 1))),
    "split": (lambda x: lax.split(x, (1, 2), axis=1)[1], X, lambda x: x[:, 1:]),
    "stack": (lambda x: lax.stack([x, 2 * x], axis=1), X, lambda x: np.stack([x, 2 * x], 1)),
    "unstack": (lambda x: lax.unstack(x, axis=1)[2], X, lambda x: x[:, 2]),
    "collapse": (lambda x: lax.collapse(x[None], 1), X, lambda x: x.reshape(1, 6)),
    "index_in_dim": (lambda x: lax.index_in_dim(x, -1, axis=1, keepdims=False), X,
                     lambda x: x[:, -1]),
    "dynamic_update_slice_in_dim": (
        lambda x: lax.dynamic_update_slice_in_dim(x, x[:, :1] ** 2, -2, axis=1), X,
        lambda x: np.concatenate([x[:, :1], x[:, :1] ** 2, x[:, 2:]], 1)),
    "broadcast_to_rank": (lambda x: lax.broadcast_to_rank(x, 4), X, lambda x: x[None, None]),
    "broadcast_like": (lambda x: lax.broadcast_like(x[0], x), X, lambda x: np.broadcast_to(x[0], x.shape)),
    "batch_matmul": (lambda x: lax.batch_matmul(x[:, :, None], x[:, None, :]), X,
                     lambda x: x[:, :, None] @ x[:, None, :]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_grad_jit_vmap(name, x64):
    check_unary(*CASES[name])


def test_gamma_grads_and_static_helpers(x64):
    a, x = np.array([0.5, 2.0, 7.0]), np.array([0.3, 1.5, 9.0])
    eps = 1e-6
    fd = (ss.gammainc(a + eps, x) - ss.gammainc(a - eps, x)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(lax.igamma_grad_a(a, x)), fd, rtol=1e-6)
    density = np.exp((a - 1) * np.log(x) - x - ss.gammaln(a))
    np.testing.assert_allclose(np.asarray(lax.random_gamma_grad(a, x)), -fd / density,
                               rtol=1e-6)
    assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    e = lax.empty((2, 3), np.float32)
    assert e.shape == (2, 3) and e.dtype == np.float32
    assert float(lax.cumlogsumexp(np.array([1000.0, 1000.0]))[1]) == pytest.approx(
        1000 + np.log(2))


def test_shape_errors_name_the_line():
    with pytest.raises(secant.SecantError, match="test_lax_more.py"):
        lax.split(np.ones((2, 3)), (1, 1), axis=1)
    with pytest.raises(secant.SecantError, match="len"):
        lax.tile(np.ones((2, 3)), (2,))

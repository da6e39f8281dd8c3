"""Issue 20: jit(grad(f)) at float32's extremes agrees with eager where the derivative divides a
quotient again (ad/reverse.py _quotients_not_divided_again): XLA rewrites (a / b) / c into
a / (b * c), and b * c overflows where neither quotient does. And softmax cross-entropy's
`labels * logp`, read by the sums' rules for its shape and by grad's seed for its dtype only,
is not computed: the rules read its operands' shapes (shape_of, unreduce_to, mean_grad_to:
plain tuples, static for every transform, each example's under vmap), the seed their dtypes
(grad_seed_like(labels, logp)); checked against float64 differences, jit, vmap against a loop,
and grad of vmap of grad."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from test_lean20c import fd_grad


def gaussian_loglik(mu, log_sigma, x):
    z = (x - mu) / snp.exp(log_sigma)
    return snp.sum(-0.5 * z * z - log_sigma - 0.5 * snp.log(2 * snp.pi))


def scaled_square(x, s):
    z = x / s
    return snp.sum(z * z)


def _extremes():
    mu = np.zeros(3, np.float32)
    log_sigma = np.array([50.0, 40.0, 1.0], np.float32)
    x = np.full((4, 3), 1e30, np.float32)
    x[:, 2] = 2.0
    return mu, log_sigma, x


def test_gaussian_jit_matches_eager_at_float32_extremes():
    mu, log_sigma, x = _extremes()
    g = secant.grad(gaussian_loglik)
    eager = np.asarray(g(mu, log_sigma, x))
    jitted = np.asarray(secant.jit(g)(mu, log_sigma, x))
    # the closed form: sum over the samples of (x - mu) / sigma^2, in float64
    want = ((x.astype(np.float64) - mu) / np.exp(2.0 * log_sigma.astype(np.float64))).sum(0)
    np.testing.assert_allclose(eager, want, rtol=1e-5)
    assert want[0] > 1e-13 and np.all(jitted != 0)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)


def test_gaussian_gradient_is_still_right(x64):
    rng = np.random.default_rng(20)
    mu, log_sigma, x = rng.normal(size=3), rng.normal(size=3) * 0.3, rng.normal(size=(4, 3))
    g = secant.grad(gaussian_loglik)(mu, log_sigma, x)
    want = fd_grad(lambda m: gaussian_loglik(m, log_sigma, x), mu)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(gaussian_loglik))(
        mu, log_sigma, x)), want, rtol=1e-6, atol=1e-8)


def test_scaled_square_jit_matches_eager_at_float32_extremes():
    x = np.array([1e30, 3e29, 2.0], np.float32)
    s = np.array([1e21, 2e21, 3.0], np.float32)
    g = secant.grad(scaled_square)
    eager = np.asarray(g(x, s))
    want = 2 * x.astype(np.float64) / s.astype(np.float64) ** 2
    np.testing.assert_allclose(eager, want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(x, s)), eager, rtol=1e-5)


# --- softmax cross-entropy: `labels * logp` read for its shape and dtype only ----------------
def softmax_xent(logits, labels):
    z = logits - snp.max(logits, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return -snp.mean(snp.sum(labels * logp, axis=-1))


def _xent_inputs(labels_shape, rng):
    logits = rng.normal(size=(5, 4))
    labels = rng.uniform(0.1, 1.0, size=labels_shape)
    return logits, labels


def test_softmax_xent_product_not_computed():
    src = secant.source(secant.grad(softmax_xent))
    assert "labels * logp\n" not in src and "labels_times_logp =" not in src, src
    # (logp, computed for log-softmax's rule (tests/test_lean20z_softmax.py), gives the dtype)
    assert "grad_seed_like(labels, logp)" in src, src
    # (the mean's rule and the sum's in one: ad/algebra.py _reductions_composed)
    assert "shape_of(labels, logits), summed=-1)" in src and "unreduce_to" not in src, src


@pytest.mark.parametrize("labels_shape", [(4,), (5, 1), (5, 4), (1, 4)])
def test_softmax_xent_gradient_by_label_shape(x64, labels_shape):
    logits, labels = _xent_inputs(labels_shape, np.random.default_rng(3))
    want = fd_grad(lambda l: softmax_xent(l, labels), logits)
    g = secant.grad(softmax_xent)
    np.testing.assert_allclose(np.asarray(g(logits, labels)), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(logits, labels)), want, rtol=1e-6,
                               atol=1e-9)
    want_labels = fd_grad(lambda y: softmax_xent(logits, y), labels)
    np.testing.assert_allclose(np.asarray(secant.grad(softmax_xent, argnums=1)(logits, labels)),
                               want_labels, rtol=1e-6, atol=1e-9)


def test_softmax_xent_python_number_labels(x64):
    logits = np.random.default_rng(4).normal(size=(3, 4))
    want = fd_grad(lambda l: softmax_xent(l, 0.25), logits)
    np.testing.assert_allclose(np.asarray(secant.grad(softmax_xent)(logits, 0.25)), want,
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0)])
@pytest.mark.parametrize("labels_shape", [(4,), (5, 1), (5, 4)])
def test_vmap_of_softmax_xent_grad_against_a_loop(x64, in_axes, labels_shape):
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(3, 5, 4)) if in_axes[0] == 0 else rng.normal(size=(5, 4))
    labels = rng.uniform(0.1, 1.0, size=((3,) if in_axes[1] == 0 else ()) + labels_shape)
    g = secant.grad(softmax_xent)
    got = secant.vmap(g, in_axes=in_axes)(logits, labels)
    loop = np.stack([np.asarray(g(logits[i] if in_axes[0] == 0 else logits,
                                  labels[i] if in_axes[1] == 0 else labels)) for i in range(3)])
    np.testing.assert_allclose(np.asarray(got), loop, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(g, in_axes=in_axes))(
        logits, labels)), loop, rtol=1e-12, atol=1e-14)


def test_grad_of_vmap_and_grad_of_vmap_of_grad(x64):
    rng = np.random.default_rng(6)
    logits, labels = rng.normal(size=(3, 5, 4)), rng.uniform(0.1, 1.0, size=(5, 1))

    def batch_loss(l):
        return snp.sum(secant.vmap(softmax_xent, in_axes=(0, None))(l, labels))
    want = fd_grad(batch_loss, logits)
    np.testing.assert_allclose(np.asarray(secant.grad(batch_loss)(logits)), want, rtol=1e-6,
                               atol=1e-9)

    def grads_squared(l):
        g = secant.vmap(secant.grad(softmax_xent), in_axes=(0, None))(l, labels)
        return snp.sum(g * g)
    want = fd_grad(grads_squared, logits)
    np.testing.assert_allclose(np.asarray(secant.grad(grads_squared)(logits)), want, rtol=1e-5,
                               atol=1e-9)


def test_hessian_and_jvp_of_grad(x64):
    logits, labels = _xent_inputs((5, 1), np.random.default_rng(7))
    logits, labels = logits[:2], labels[:2]
    g = secant.grad(softmax_xent)
    v = np.random.default_rng(8).normal(size=logits.shape)
    _, tangent = secant.jvp(lambda l: g(l, labels), (logits,), (v,))
    h = 1e-6
    want = (np.asarray(g(logits + h * v, labels)) - np.asarray(g(logits - h * v, labels))) / (2 * h)
    np.testing.assert_allclose(np.asarray(tangent), want, rtol=1e-5, atol=1e-8)
    hess = np.asarray(secant.hessian(softmax_xent)(logits, labels)).reshape(logits.size, -1)
    np.testing.assert_allclose(hess @ v.ravel(), want.ravel(), rtol=1e-5, atol=1e-8)


def test_softmax_xent_dtypes():
    rng = np.random.default_rng(9)
    logits = rng.normal(size=(5, 4)).astype(np.float32)
    for labels in (np.eye(4, dtype=np.int32)[rng.integers(0, 4, 5)],
                   np.eye(4, dtype=np.float32)[rng.integers(0, 4, 5)]):
        g = secant.grad(softmax_xent)(logits, labels)
        assert np.asarray(g).dtype == np.float32
        x = logits.astype(np.float64)
        p = np.exp(x - x.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)       # (the closed form: (softmax * sum(labels) - labels) / n)
        want = (p * labels.sum(-1, keepdims=True) - labels) / len(x)
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-7)


def test_labels_that_do_not_broadcast_name_the_users_line():
    logits, labels = np.ones((5, 4), np.float32), np.ones((3,), np.float32)
    for g in (secant.grad(softmax_xent), secant.jit(secant.grad(softmax_xent))):
        with pytest.raises(secant.SecantError) as err:
            g(logits, labels)
        assert "test_lean20t.py" in str(err.value), str(err.value)

"""Lean derivatives (issue 20): a value that a reduction's rule reads for its shape only, and
grad's seed for its dtype only, is not computed. `labels * logp` in softmax cross-entropy has
neither operand's shape in general (labels may be (k,) or (n, 1) beside logits (n, k)): the sum's
and mean's rules read its shape from the operands (ad/helpers.py shape_of, taken by unreduce
and mean_grad in a's place: ad/reverse.py _shape_source) and the seed the dtype the operands
promote to (grad_seed_like(labels, logp): transformer/dataflow.py _promoted_operands). Every
source check has a numerical twin: float64 central differences, jit against eager, vmap against
a Python loop, a second derivative against differences of the first."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.ad import helpers
from test_lean20c import fd_grad

RNG = np.random.default_rng(2020)


def softmax_xent(logits, labels):
    z = logits - snp.max(logits, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return -snp.mean(snp.sum(labels * logp, axis=-1))


def summed_product(x, y):
    return snp.sum(x * y)


def mean_of_row_sums(x, y):
    return snp.mean(snp.sum(x * y, axis=-1))


LOGITS = RNG.normal(size=(4, 5))
# labels of logits' shape, of one row's, a column, and with a leading axis logits broadcast to
LABELS = [np.eye(5)[[0, 3, 1, 4]], RNG.uniform(size=5), RNG.uniform(size=(4, 1)),
          RNG.uniform(size=(3, 4, 5))]


def test_softmax_xent_product_is_not_computed(x64):
    text = secant.source(secant.grad(softmax_xent))
    assert "labels_times_logp =" not in text and "= labels * logp" not in text, text
    assert "grad_seed_like(labels, logp)" in text, text
    assert "shape_of(labels, logp, axis=-1)" in text, text
    assert "shape_of(labels, logp), axis=-1)" in text, text


@pytest.mark.parametrize("k", range(len(LABELS)))
def test_softmax_xent_values_for_every_labels_shape(x64, k):
    labels = LABELS[k]
    g = secant.grad(softmax_xent)
    got = np.asarray(g(LOGITS, labels))
    want = fd_grad(lambda v: softmax_xent(v, labels), LOGITS)
    assert got.shape == LOGITS.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(LOGITS, labels)), got, rtol=1e-10)
    batch = np.stack([LOGITS, 0.5 * LOGITS, LOGITS + 1.0])
    np.testing.assert_allclose(np.asarray(secant.vmap(g, in_axes=(0, None))(batch, labels)),
                               np.stack([np.asarray(g(v, labels)) for v in batch]), rtol=1e-10)
    labels_batch = np.stack([labels, 2.0 * labels, labels + 0.1])
    np.testing.assert_allclose(
        np.asarray(secant.vmap(g, in_axes=(None, 0))(LOGITS, labels_batch)),
        np.stack([np.asarray(g(LOGITS, v)) for v in labels_batch]), rtol=1e-10)


def test_softmax_xent_second_order_and_labels_cotangent(x64):
    labels = LABELS[2]
    g = secant.grad(softmax_xent)
    w = RNG.normal(size=LOGITS.shape)
    h = secant.grad(lambda v: snp.sum(g(v, labels) * w))
    want = fd_grad(lambda v: np.sum(np.asarray(g(v, labels)) * w), LOGITS, eps=1e-5)
    np.testing.assert_allclose(np.asarray(h(LOGITS)), want, rtol=1e-5, atol=1e-8)
    _, tangent = secant.jvp(lambda v: g(v, labels), (LOGITS,), (w,))
    eps = 1e-6
    fd_tangent = (np.asarray(g(LOGITS + eps * w, labels))
                  - np.asarray(g(LOGITS - eps * w, labels))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(tangent), fd_tangent, rtol=1e-5, atol=1e-8)
    both = secant.grad(softmax_xent, argnums=(0, 1))
    _, labels_bar = both(LOGITS, labels)
    np.testing.assert_allclose(np.asarray(labels_bar),
                               fd_grad(lambda v: softmax_xent(LOGITS, v), labels), rtol=1e-6,
                               atol=1e-9)


@pytest.mark.parametrize("f", [summed_product, mean_of_row_sums])
def test_broadcast_products_under_reductions(x64, f):
    x, y = RNG.normal(size=(3, 1, 4)), RNG.normal(size=(2, 1))
    g = secant.grad(f)
    text = secant.source(g)
    assert "x_times_y =" not in text and "shape_of(x, y" in text, text
    got = np.asarray(g(x, y))
    np.testing.assert_allclose(got, fd_grad(lambda v: f(v, y), x), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(x, y)), got, rtol=1e-10)
    xs = np.stack([x, -x, 2 * x])
    np.testing.assert_allclose(np.asarray(secant.vmap(g, in_axes=(0, None))(xs, y)),
                               np.stack([np.asarray(g(v, y)) for v in xs]), rtol=1e-10)


def test_seed_dtype_is_the_promotion_of_both_operands():
    # float32 logits beside float64 labels (x64): the loss is float64, so is its seed; int
    # labels beside float32 logits: float32 (the product's dtype, never the int's)
    secant.config.update("enable_x64", True)
    try:
        logits = LOGITS.astype(np.float32)
        got = secant.grad(softmax_xent)(logits, LABELS[0])
        assert np.asarray(got).dtype == np.float32
        np.testing.assert_allclose(np.asarray(got),
                                   fd_grad(lambda v: softmax_xent(v, LABELS[0]), LOGITS),
                                   rtol=1e-5, atol=1e-6)
        got = secant.grad(softmax_xent)(logits, np.eye(5, dtype=np.int32)[[0, 3, 1, 4]])
        np.testing.assert_allclose(np.asarray(got),
                                   fd_grad(lambda v: softmax_xent(v, LABELS[0]), LOGITS),
                                   rtol=1e-5, atol=1e-6)
    finally:
        secant.config.update("enable_x64", False)
    # a complex operand: grad refuses the complex output, as it did reading the product
    with pytest.raises(secant.SecantError, match="real-valued"):
        secant.grad(summed_product)(np.ones(3, np.float32), np.ones(3, np.complex64))


def test_shape_of():
    x, y = np.zeros((3, 1, 4)), np.zeros((2, 1))
    assert np.shape(helpers.shape_of(x, y)) == (3, 2, 4)
    assert np.shape(helpers.shape_of(x, y, axis=-1)) == (3, 2)
    assert np.shape(helpers.shape_of(x, y, axis=(0, 2), keepdims=True)) == (1, 2, 1)
    assert np.shape(helpers.shape_of(x, y, axis=None)) == ()
    assert np.ndim(helpers.shape_of(x, y, axis=-1)) == 2
    t = np.arange(6.0).reshape(3, 2)
    s = helpers.shape_of(x, y)
    np.testing.assert_array_equal(np.asarray(helpers.unreduce(t, s, axis=-1)),
                                  np.broadcast_to(t[..., None], (3, 2, 4)))
    np.testing.assert_allclose(np.asarray(helpers.mean_grad(t, s, axis=-1)),
                               np.broadcast_to(t[..., None], (3, 2, 4)) / 4)


# --- gaussian_loglik (bench/lean_functions.py): why its 3 statements stay ---------------------
# z = (x - mu) / snp.exp(log_sigma) is the user's named line (kept: ad/fold.py folds only
# cotangents and unnamed temporaries); its rule for mu reads exp(log_sigma) again (z_bar / e).
# Fewer statements need exp(log_sigma) written twice (StableHLO 13 -> 14 ops: the tracer emits
# both) or (x - mu) / e ** 2, whose e ** 2 overflows where (x - mu) / e / e does not: float32
# log_sigma = 50 (e ~ 5e21) gives 0 for 1.5e-13. This checks the eager gradient there (jit's
# is 0 today: XLA's simplifier reads z * 1 / e as (x - mu) / (e * e); jax.jit's is right).

def gaussian_loglik(mu, log_sigma, x):
    z = (x - mu) / snp.exp(log_sigma)
    return snp.sum(-0.5 * z * z - log_sigma - 0.5 * snp.log(2 * snp.pi))


def test_gaussian_gradient_where_exp_squared_overflows():
    mu = np.zeros(3, np.float32)
    log_sigma = np.full(3, 50.0, np.float32)
    x = np.full((4, 3), 1e30, np.float32)
    want = 4 * 1e30 / np.exp(50.0) / np.exp(50.0)      # (float64: d/dmu = sum (x - mu) / e^2)
    g = secant.grad(gaussian_loglik)
    np.testing.assert_allclose(np.asarray(g(mu, log_sigma, x)), np.full(3, want), rtol=1e-5)
    text = secant.source(g)
    code = "\n".join(ln for ln in text.splitlines() if not ln.strip().startswith("#"))
    assert code.count("snp.exp(log_sigma)") == 1, text      # (computed once)


def mismatched(x, y):
    return snp.mean(snp.sum(snp.sin(x) * y, axis=-1))


def test_operands_that_do_not_broadcast_name_the_users_line():
    # the product is not computed: shape_of gives the error it gave, naming this line
    x, y = np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)
    g = secant.grad(mismatched)
    for f in (g, secant.jit(g)):
        with pytest.raises(secant.SecantError, match="cannot be broadcast") as info:
            f(x, y)
        assert "test_lean20s.py" in str(info.value), str(info.value)

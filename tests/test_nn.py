"""secant.nn beyond the shared table (tests/library_cases/nn.py): JAX's derivatives at kinks,
stability for large |x|, the generated source, and secant.nn.initializers' statistics."""
import math

import numpy as np
import pytest

import secant
import secant.numpy as snp
import secant.nn as nn
from secant.nn import initializers as init


def grad_each(f, x):
    return np.asarray(secant.grad(lambda x: snp.sum(f(x)))(snp.asarray(x)))


def test_derivatives_at_kinks_are_jax_s():
    x = np.array([-1.0, 0.0, 1.0, 6.0, 7.0, -3.0], np.float32)
    np.testing.assert_array_equal(grad_each(nn.relu, x), [0, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(grad_each(nn.relu6, x), [0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(grad_each(nn.hard_tanh, x), [1, 1, 1, 0, 0, 0])
    np.testing.assert_allclose(grad_each(nn.hard_sigmoid, x), [1 / 6, 1 / 6, 1 / 6, 0, 0, 0])
    np.testing.assert_allclose(grad_each(nn.leaky_relu, x), [0.01, 1, 1, 1, 1, 0.01])
    # forward mode agrees
    _, t = secant.jvp(nn.relu, (snp.asarray(x),), (snp.ones(6),))
    np.testing.assert_array_equal(np.asarray(t), [0, 0, 1, 1, 1, 0])


def test_stable_for_large_inputs():
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], np.float32)
    np.testing.assert_allclose(np.asarray(nn.softplus(x)), [0, 1.9287499e-22, np.log(2), 50, 1000],
                               rtol=1e-6)
    np.testing.assert_allclose(grad_each(nn.softplus, x), [0, 1.9287499e-22, 0.5, 1, 1], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.log_sigmoid(x)), [-1000, -50, -np.log(2), 0, 0],
                               rtol=1e-6, atol=1e-20)
    np.testing.assert_allclose(grad_each(nn.log_sigmoid, x), [1, 1, 0.5, 0, 0], atol=1e-20)
    big = np.array([1000.0, 1000.0, -1000.0], np.float32)
    assert float(nn.logsumexp(big)) == pytest.approx(1000 + np.log(2))
    np.testing.assert_allclose(grad_each(nn.logsumexp, big), [0.5, 0.5, 0], atol=1e-30)
    for f in (nn.softmax, nn.log_softmax):
        g = secant.grad(lambda x: f(x)[0])(snp.asarray(big))
        assert np.all(np.isfinite(np.asarray(g)))
    np.testing.assert_allclose(np.asarray(nn.softmax(big)), [0.5, 0.5, 0])
    # -inf entries (masked logits) stay exact
    masked = np.array([0.0, -np.inf, 1.0], np.float32)
    np.testing.assert_allclose(float(nn.logsumexp(masked)), np.logaddexp(0, 1), rtol=1e-6)
    assert float(nn.logsumexp(np.full(3, -np.inf, np.float32))) == -np.inf


def test_jit_grad_matches_eager_and_keeps_float32():
    x = snp.asarray(np.linspace(-4, 4, 9).astype(np.float32))
    for f in (nn.gelu, nn.selu, nn.silu, nn.softmax, nn.standardize, nn.celu):
        g = secant.grad(lambda x: snp.sum(f(x) ** 2))
        eager, jitted = g(x), secant.jit(g)(x)
        assert np.asarray(eager).dtype == np.float32
        np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=2e-5, atol=1e-6)


def test_second_derivative_of_softplus_is_the_sigmoid_slope(x64):
    x = np.array([-2.0, 0.3, 4.0])
    h = secant.vmap(secant.grad(secant.grad(lambda x: nn.softplus(x))))(x)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(np.asarray(h), s * (1 - s), rtol=1e-12)


def test_generated_source_names_the_activations():
    def loss(w, x):
        return snp.sum(nn.log_softmax(nn.relu(x @ w)))
    src = secant.source(secant.grad(loss))
    assert "relu_vjp(" in src and "log_softmax_vjp(" in src
    assert "where" not in src      # the activation's own rule lives in its own function


def test_one_hot_matches_jax_conventions():
    out = nn.one_hot(snp.asarray([1, 0, 3, -1]), 3)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), [[0, 1, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]])
    batched = secant.vmap(lambda i: nn.one_hot(i, 3))(snp.asarray([[0, 1], [2, 2]]))
    assert batched.shape == (2, 2, 3)


# --- initializers ------------------------------------------------------------------------------
KEY = secant.random.PRNGKey(42)


@pytest.mark.parametrize("factory, variance, dist", [
    (init.glorot_uniform, 2 / (300 + 200), "uniform"),
    (init.glorot_normal, 2 / (300 + 200), "truncated"),
    (init.xavier_uniform, 2 / (300 + 200), "uniform"),
    (init.lecun_uniform, 1 / 300, "uniform"),
    (init.lecun_normal, 1 / 300, "truncated"),
    (init.he_uniform, 2 / 300, "uniform"),
    (init.he_normal, 2 / 300, "truncated"),
    (init.kaiming_normal, 2 / 300, "truncated"),
])
def test_variance_scaling_statistics(factory, variance, dist):
    w = factory()(KEY, (300, 200))
    assert w.shape == (300, 200) and w.dtype == np.float32
    w = np.asarray(w, np.float64)
    n = w.size
    assert abs(w.mean()) < 4 * math.sqrt(variance / n)
    assert w.var() == pytest.approx(variance, rel=0.03)
    bound = math.sqrt(3 * variance) if dist == "uniform" else 2 * math.sqrt(variance) / .8796256610
    assert np.abs(w).max() <= bound * (1 + 1e-6)
    assert np.abs(w).max() > 0.95 * bound          # the support is used up to its end


def test_variance_scaling_modes_and_receptive_field():
    # a conv kernel (HWIO): fans count the receptive field, 3 * 3
    w = np.asarray(init.variance_scaling(1.0, "fan_out", "normal")(KEY, (3, 3, 40, 60)))
    assert w.var() == pytest.approx(1 / (60 * 9), rel=0.05)
    w = np.asarray(init.variance_scaling(2.0, "fan_in", "normal", in_axis=0, out_axis=1)(
        KEY, (50, 400)))
    assert w.var() == pytest.approx(2 / 50, rel=0.05)
    with pytest.raises(secant.SecantError):
        init.glorot_uniform()(KEY, (5,))
    with pytest.raises(secant.SecantError):
        init.variance_scaling(1.0, "fan_sideways", "normal")


def test_simple_initializers():
    assert np.all(np.asarray(init.zeros(KEY, (2, 3))) == 0)
    ones = init.ones(KEY, (2, 3), snp.float32)
    assert ones.dtype == np.float32 and np.all(np.asarray(ones) == 1)
    c = init.constant(-0.5)(KEY, (4,))
    np.testing.assert_array_equal(np.asarray(c), [-0.5] * 4)
    w = np.asarray(init.normal(0.3)(KEY, (200, 200)))
    assert w.std() == pytest.approx(0.3, rel=0.03) and abs(w.mean()) < 0.01
    u = np.asarray(init.uniform(2.0)(KEY, (200, 200)))
    assert u.min() >= 0 and u.max() < 2 and u.mean() == pytest.approx(1.0, rel=0.02)
    t = np.asarray(init.truncated_normal(1.0)(KEY, (200, 200)))
    assert np.abs(t).max() < 2 and t.std() == pytest.approx(0.8796, rel=0.03)


def test_determinism_per_key_and_dtype(x64):
    a = init.he_normal()(KEY, (5, 7))
    b = init.he_normal()(KEY, (5, 7))
    c = init.he_normal()(secant.random.PRNGKey(43), (5, 7))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.allclose(np.asarray(a), np.asarray(c))
    assert a.dtype == np.float64
    assert init.he_normal(dtype=snp.float32)(KEY, (5, 7)).dtype == np.float32
    assert init.glorot_uniform()(KEY, (5, 7), snp.float32).dtype == np.float32
    # the same draw under jit
    jitted = secant.jit(lambda k: init.he_normal()(k, (5, 7)))(KEY)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(a), rtol=1e-12)


@pytest.mark.parametrize("shape, axis", [((6, 4), -1), ((4, 6), -1), ((3, 2, 5), -1),
                                         ((5, 3), 0)])
def test_orthogonal(x64, shape, axis):
    w = np.asarray(init.orthogonal(scale=2.0, column_axis=axis)(KEY, shape))
    assert w.shape == shape
    cols = np.moveaxis(w, axis, -1).reshape(-1, shape[axis])
    gram = cols.T @ cols if cols.shape[0] >= cols.shape[1] else cols @ cols.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(len(gram)), atol=1e-10)
    jitted = secant.jit(lambda k: init.orthogonal(2.0, axis)(k, shape))(KEY)
    np.testing.assert_allclose(np.asarray(jitted), w, atol=1e-10)


def test_vmap_over_keys_builds_an_ensemble():
    keys = secant.random.split(KEY, 3)
    for factory in (init.he_normal(), init.glorot_uniform(dtype=snp.float32),
                    init.orthogonal(), init.normal(0.5)):
        ws = secant.vmap(lambda k: factory(k, (4, 3)))(keys)
        want = np.stack([np.asarray(factory(k, (4, 3))) for k in keys])
        np.testing.assert_allclose(np.asarray(ws), want, rtol=1e-6, atol=1e-7)
        assert not np.allclose(want[0], want[1])


def test_glu_refuses_an_odd_size():
    x = snp.ones((3, 5))
    with pytest.raises(secant.SecantError, match="even"):
        nn.glu(x)
    with pytest.raises(secant.SecantError, match="even"):
        secant.grad(lambda x: snp.sum(nn.glu(x)))(x)
    g = secant.grad(lambda x: snp.sum(nn.glu(x, axis=0)))(snp.ones((4, 5)))
    assert g.shape == (4, 5)

"""Issue 20 (lean20x): a value read only for its shape and dtype (a reduction's rule, an
unbroadcast, grad's seed) is read from a value that provably has both, so it is not computed:
softmax's `logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))` has logits' dtype
(transformer/dataflow.py dtype_root: subtract, log, sum, exp, max of logits, an inexact
parameter of grad) and shape (transformer/shapes.py same_shape: {logits, max, sum}, bounded by
{logits}). grad's seed reads the nearest such value computed anyway (a parameter first).
Every value is checked against float64 central differences, a Python loop, or eager."""
import os
import sys

import numpy as np
import pytest

import secant
import secant.numpy as snp
from test_lean20c import fd_grad

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import lean_functions as funcs  # noqa: E402

RNG = np.random.default_rng(2020)


def xent(logits, labels):
    z = logits - snp.max(logits, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return -snp.mean(snp.sum(labels * logp, axis=-1))


def _code(src):
    return [ln for ln in src.splitlines() if not ln.strip().startswith("#")]


def _labels(shape, k):
    n = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    return np.eye(k)[RNG.integers(0, k, n)].reshape(shape[:-1] + (k,))


def test_softmax_log_probabilities_not_computed():
    src = secant.source(secant.grad(xent))
    code = _code(src)
    # (logp is computed once, for log-softmax's rule, tests/test_lean20z_softmax.py: the values
    # read for its shape and dtype read it, no other value computed for them)
    assert sum("logp =" in ln for ln in code) == 1 and sum("snp.log(" in ln for ln in code) == 1
    assert "grad_seed_like(labels, logp)" in src, src
    # (the mean of a sum: one rule, lean20o's mean_grad_to(..., summed=-1), ad/algebra.py)
    assert "unbroadcast(labels * mean_grad_to(-grad_seed_like(labels, logp)," in src, src
    assert "shape_of(labels, logits), summed=-1), logp)" in src, src   # (ad/fold.py wrapped)


def test_mlp_log_probabilities_not_computed(x64):
    src = secant.source(secant.grad(funcs.mlp_loss))
    code = _code(src)
    assert sum("logp =" in ln for ln in code) == 1, src     # (log-softmax's rule reads it)
    assert "grad_seed_like(logp, y)" in src, src    # (logp: the nearest value computed anyway)
    args = funcs.inputs("mlp_loss", RNG, np.float64, small=True)
    got = secant.grad(funcs.mlp_loss)(*args)
    for k, v in args[0].items():
        def f(w, k=k):
            return funcs.mlp_loss({**args[0], k: w}, *args[1:])
        np.testing.assert_allclose(np.asarray(got[k]), fd_grad(f, v), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("label_shape", [(5, 4), (4,), (5, 1), (1, 4)])
def test_xent_gradient_matches_float64_differences(x64, label_shape):
    logits = RNG.normal(size=(5, 4))
    labels = _labels(label_shape, 4) if label_shape[-1] == 4 else RNG.uniform(size=label_shape)
    want = fd_grad(lambda v: xent(v, labels), logits)
    g = secant.grad(xent)
    np.testing.assert_allclose(np.asarray(g(logits, labels)), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(g)(logits, labels)), want, rtol=1e-6,
                               atol=1e-8)


def test_xent_float32_logits_keep_their_dtype(x64):
    logits = RNG.normal(size=(5, 4)).astype(np.float32)
    labels = _labels((5, 4), 4)            # float64: the product promotes, logits' cotangent not
    got = secant.grad(xent)(logits, labels)
    assert np.asarray(got).dtype == np.float32
    want = fd_grad(lambda v: xent(v.astype(np.float32), labels), logits, eps=1e-3)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3, atol=2e-4)
    jitted = secant.jit(secant.grad(xent))(logits, labels)
    assert np.asarray(jitted).dtype == np.float32
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(got), rtol=1e-5, atol=1e-6)


def test_vmap_of_grad_matches_a_loop():
    logits = RNG.normal(size=(3, 5, 4)).astype(np.float32)
    labels = np.stack([_labels((5, 4), 4) for _ in range(3)]).astype(np.float32)
    g = secant.grad(xent)
    want = np.stack([np.asarray(g(a, b)) for a, b in zip(logits, labels)])
    np.testing.assert_allclose(np.asarray(secant.vmap(g)(logits, labels)), want, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.vmap(g, in_axes=(0, None))(logits, labels[0])),
                               np.stack([np.asarray(g(a, labels[0])) for a in logits]),
                               rtol=1e-5, atol=1e-6)


def test_hessian_matches_differences_of_the_gradient(x64):
    logits, labels = RNG.normal(size=(3, 4)), _labels((3, 4), 4)
    got = np.asarray(secant.hessian(xent)(logits, labels))
    rows = []
    for idx in np.ndindex(logits.shape):
        up, down = logits.copy(), logits.copy()
        up[idx] += 1e-5
        down[idx] -= 1e-5
        rows.append((np.asarray(secant.grad(xent)(up, labels))
                     - np.asarray(secant.grad(xent)(down, labels))) / 2e-5)
    want = np.stack(rows, axis=-1).reshape(logits.shape + logits.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    jvp_of_grad = secant.jvp(lambda v: secant.grad(xent)(v, labels), (logits,),
                             (np.ones_like(logits),))[1]
    np.testing.assert_allclose(np.asarray(jvp_of_grad), want.reshape(12, 12).sum(1).reshape(
        3, 4), rtol=1e-5, atol=1e-7)


def row_weighted(x, w):
    # v's shape is (1, k): it has x's dtype (a reduction and a product of x) but not x's
    # shape, so x stands in for neither its dtype read nor its shape reads
    v = snp.sum(x, axis=0, keepdims=True) * 2.0
    return snp.mean(snp.sum(w * v, axis=-1))


def test_a_value_of_another_shape_is_no_stand_in(x64):
    x, w = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 3))
    src = secant.source(secant.grad(row_weighted))
    assert "unbroadcast(w * w_times_v_bar, sum_x)" in src and "shape_of(w, sum_x)" in src, src
    assert "grad_seed_like(w, x)" in src, src      # (its dtype is x's)
    want = fd_grad(lambda v: row_weighted(v, w), x)
    np.testing.assert_allclose(np.asarray(secant.grad(row_weighted)(x, w)), want, rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(row_weighted))(x, w)), want,
                               rtol=1e-6, atol=1e-8)


def integer_offsets(x, k):
    # z = x + k promotes with k (integers here, floats elsewhere): two sources, no one dtype
    z = x + k
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return snp.sum(logp * logp)


@pytest.mark.parametrize("k_dtype", [np.int32, np.float64])
def test_mixed_sources_keep_their_own_dtype(x64, k_dtype):
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    k = np.arange(3).astype(k_dtype)
    got = secant.grad(integer_offsets)(x, k)
    assert np.asarray(got).dtype == np.float32
    want = fd_grad(lambda v: integer_offsets(v.astype(np.float32), k), x, eps=1e-3)
    np.testing.assert_allclose(np.asarray(got), want, rtol=3e-3, atol=3e-3)


def exp_of_integers(x, k):
    # v = exp(k) is float32 of int32 k: k has no inexact dtype, so nothing reads v's from it
    v = snp.exp(k)
    return snp.mean(snp.sum(x * v, axis=-1))


@pytest.mark.parametrize("x_dtype", [np.float16, np.float32])
def test_an_integer_value_is_no_dtype_source(x_dtype):
    x, k = RNG.normal(size=(4, 3)).astype(x_dtype), np.arange(3, dtype=np.int32)
    src = secant.source(secant.grad(exp_of_integers))
    assert "grad_seed_like(x, k)" not in src, src
    got = np.asarray(secant.grad(exp_of_integers)(x, k))
    assert got.dtype == x_dtype
    want = np.broadcast_to(np.exp(np.arange(3.0)) / 4, (4, 3))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3 if x_dtype is np.float16
                               else 1e-6)


def square_of_layers(x, w1, w2):
    first_hidden_layer = snp.tanh(x @ w1)
    second_hidden_layer = snp.sin(first_hidden_layer @ w2)
    return snp.sum(second_hidden_layer ** 2)


def test_seed_reads_the_nearest_value_computed_anyway(x64):
    src = secant.source(secant.grad(square_of_layers))
    # (it read `second_hidden_layer ** 2`, computing the square for its dtype alone)
    assert "grad_seed_like(second_hidden_layer)" in src, src
    assert not any("second_hidden_layer ** 2" in ln for ln in _code(src)), src
    x, w1, w2 = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 5)), RNG.normal(size=(5, 2))
    want = fd_grad(lambda v: square_of_layers(v, w1, w2), x)
    got = secant.grad(square_of_layers)(x, w1, w2)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(square_of_layers))(x, w1, w2)),
                               want, rtol=1e-6, atol=1e-8)


def integer_output(x):
    return snp.sum((x * 3).astype(snp.int32) * 2)


def test_the_seed_still_refuses_an_integer_output():
    with pytest.raises(secant.SecantError, match="floating-point output"):
        secant.grad(integer_output)(np.ones(3, np.float32))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

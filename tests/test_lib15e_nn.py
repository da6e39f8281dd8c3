"""issue 15 (lib15e): jax.nn.dot_product_attention's local_window_size, query_seq_lengths,
key_value_seq_lengths and return_residual (values against a float64 NumPy reference, eagerly
and under jit, gradients against central differences, vmap against a loop); scaled_matmul
(its documented definition: values, gradient, vmap), scaled_dot_general without configs
(lax.dot_general) and its refused quantizing configs."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import nn
from tests.central_differences import weighted_fd

rng = np.random.default_rng(15)
Q = rng.normal(size=(2, 5, 4, 3))       # B, T, N, H
KEY = rng.normal(size=(2, 6, 2, 3))     # B, S, K, H: two query heads per key/value head
V = rng.normal(size=(2, 6, 2, 3))
Q_LENGTHS = np.array([3, 5], np.int32)
KV_LENGTHS = np.array([4, 2], np.int32)


def reference(q, k, v, window=None, causal=False, q_lengths=None, kv_lengths=None,
              exact=False):
    """(encoded, logsumexp residual (B, T, N)) as jax.nn's XLA implementation computes them."""
    b, t, n, h = q.shape
    s = k.shape[1]
    k = np.repeat(k, n // k.shape[2], axis=2)
    v = np.repeat(v, n // v.shape[2], axis=2)
    logits = np.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(h)
    i, j = np.arange(t)[:, None], np.arange(s)[None, :]
    keep = np.ones(logits.shape, bool)
    if causal:
        keep &= i >= j
    if window is not None:
        keep &= (i <= j + window[0]) & (i >= j - window[1])
    if q_lengths is not None:
        keep &= (i < q_lengths[:, None, None])[:, None]
    if kv_lengths is not None:
        keep &= (j < kv_lengths[:, None, None])[:, None]
    logits = np.where(keep, logits, -0.7 * np.finfo(np.float32).max)
    logits = logits if exact else logits.astype(np.float32)
    top = logits.max(-1, keepdims=True)
    p = np.exp(logits - top)
    lse = (np.log(p.sum(-1)) + top[..., 0]).transpose(0, 2, 1)
    p = (p / p.sum(-1, keepdims=True)).astype(q.dtype)
    out = np.einsum("bnts,bsnh->btnh", p, v)
    if q_lengths is not None:
        out = out * (np.arange(t)[None, :] < q_lengths[:, None])[:, :, None, None]
    return out, lse


CASES = {
    "window": ({"local_window_size": (1, 2)}, {"window": (1, 2)}),
    "window_int_causal": ({"local_window_size": 1, "is_causal": True},
                          {"window": (1, 1), "causal": True}),
    "sequence_lengths": ({"query_seq_lengths": Q_LENGTHS, "key_value_seq_lengths": KV_LENGTHS},
                         {"q_lengths": Q_LENGTHS, "kv_lengths": KV_LENGTHS}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_masking_options_values_gradients_and_vmap(name, x64):
    ours, theirs = CASES[name]
    want = reference(Q, KEY, V, **theirs)[0]

    def f(q):
        return nn.dot_product_attention(q, KEY, V, **ours)
    np.testing.assert_allclose(np.asarray(f(Q)), want, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(secant.jit(f)(Q)), want, rtol=2e-5, atol=1e-7)
    g0, w = weighted_fd(lambda q: reference(q, KEY, V, exact=True, **theirs)[0], Q)
    g = secant.grad(lambda q: snp.sum(f(q) * w))(Q)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-4, atol=1e-5)
    if "window" in theirs:
        per_example = secant.vmap(lambda q, k, v: nn.dot_product_attention(q, k, v, **ours))(
            Q, KEY, V)
        loop = np.stack([reference(Q[i:i + 1], KEY[i:i + 1], V[i:i + 1], **theirs)[0][0]
                         for i in range(2)])
        np.testing.assert_allclose(np.asarray(per_example), loop, rtol=2e-5, atol=1e-7)


def test_sequence_lengths_batched_with_the_inputs():
    def f(q, k, v, ql, kvl):
        return nn.dot_product_attention(q[None], k[None], v[None], query_seq_lengths=ql[None],
                                        key_value_seq_lengths=kvl[None])[0]
    got = secant.vmap(f)(Q, KEY, V, Q_LENGTHS, KV_LENGTHS)
    loop = np.stack([reference(Q[i:i + 1], KEY[i:i + 1], V[i:i + 1], q_lengths=Q_LENGTHS[i:i + 1],
                               kv_lengths=KV_LENGTHS[i:i + 1])[0][0] for i in range(2)])
    np.testing.assert_allclose(np.asarray(got), loop, rtol=2e-5, atol=1e-6)


def test_return_residual_is_the_logsumexp_with_no_derivative(x64):
    out, residual = nn.dot_product_attention(Q, KEY, V, is_causal=True, return_residual=True)
    want, lse = reference(Q, KEY, V, causal=True)
    np.testing.assert_allclose(np.asarray(out), want, rtol=2e-5, atol=1e-7)
    assert residual.shape == (2, 5, 4)
    np.testing.assert_allclose(np.asarray(residual), lse, rtol=2e-6)
    g = secant.grad(lambda q: snp.sum(nn.dot_product_attention(
        q, KEY, V, is_causal=True, return_residual=True)[1]))(Q)
    np.testing.assert_array_equal(np.asarray(g), 0.0)


def test_sequence_lengths_are_checked():
    with pytest.raises(secant.SecantValueError, match=r"query_seq_lengths should have shape"):
        nn.dot_product_attention(Q, KEY, V, query_seq_lengths=np.array([1, 2, 3], np.int32))


A = rng.normal(size=(2, 3, 8))
B = rng.normal(size=(2, 4, 8))
A_SCALES = rng.uniform(0.5, 2.0, size=(2, 3, 2))
B_SCALES = rng.uniform(0.5, 2.0, size=(2, 4, 2))


def scaled_reference(a, b, sa, sb):
    return np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 4, -1), b * np.repeat(sb, 4, -1))


def test_scaled_matmul_values_gradient_and_vmap():
    want = scaled_reference(A, B, A_SCALES, B_SCALES)
    got = nn.scaled_matmul(A, B, A_SCALES, B_SCALES)
    assert got.dtype == np.float32 and got.shape == (2, 3, 4)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.jit(nn.scaled_matmul)(A, B, A_SCALES,
                                                                        B_SCALES)), want,
                               rtol=1e-5, atol=1e-5)
    g0, w = weighted_fd(lambda s: scaled_reference(A, B, s, B_SCALES), A_SCALES)
    g = secant.grad(lambda s: snp.sum(nn.scaled_matmul(A, B, s, B_SCALES) * w))(A_SCALES)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-4, atol=1e-4)
    per_example = secant.vmap(lambda a, b: nn.scaled_matmul(a, b, A_SCALES, B_SCALES))(
        np.stack([A, 2 * A]), np.stack([B, B]))
    np.testing.assert_allclose(np.asarray(per_example), np.stack([want, 2 * want]), rtol=1e-5,
                               atol=1e-4)
    with pytest.raises(secant.SecantValueError, match="3-dimensional"):
        nn.scaled_matmul(A[0], B, A_SCALES, B_SCALES)


def test_scaled_dot_general_without_configs_is_dot_general():
    dims = (((2,), (2,)), ((0,), (0,)))
    np.testing.assert_allclose(np.asarray(nn.scaled_dot_general(A, B, dims)),
                               np.einsum("bmk,bnk->bmn", A, B), rtol=1e-5, atol=1e-5)
    config = nn.get_scaled_dot_general_config("mxfp8")
    assert (config.mode, config.block_size) == ("mxfp8", 32)
    assert nn.get_scaled_dot_general_config("nvfp4").block_size == 16
    with pytest.raises(secant.SecantError, match="float8"):
        nn.scaled_dot_general(A, B, dims, configs=[config] * 3)
    with pytest.raises(secant.SecantValueError, match="Unsupported mode"):
        nn.get_scaled_dot_general_config("int8")

"""secant.nn.dot_product_attention (jax.nn's XLA implementation): values against a float64
NumPy reference (grouped-query heads, bias, mask, causal, 3-D inputs), eagerly and under jit,
gradients against central differences, vmap against a loop."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from tests.central_differences import weighted_fd
from secant import nn

rng = np.random.default_rng(3)
Q = rng.normal(size=(2, 3, 4, 5))       # B, T, N, H
KEY = rng.normal(size=(2, 6, 2, 5))     # B, S, K, H: two query heads per key/value head
V = rng.normal(size=(2, 6, 2, 5))
BIAS = rng.normal(size=(1, 4, 3, 6))
MASK = rng.random((2, 1, 3, 6)) > 0.3


def reference(q, k, v, bias=None, mask=None, scale=None, is_causal=False, exact=False):
    b, t, n, h = q.shape
    s, kh = k.shape[1], k.shape[2]
    k = np.repeat(k, n // kh, axis=2)
    v = np.repeat(v, n // kh, axis=2)
    logits = np.einsum("btnh,bsnh->bnts", q, k) * (1 / np.sqrt(h) if scale is None else scale)
    if bias is not None:
        logits = logits + bias
    keep = np.ones(logits.shape, bool)
    if mask is not None:
        keep &= mask
    if is_causal:
        keep &= np.tril(np.ones((t, s), bool))
    logits = np.where(keep, logits, -0.7 * np.finfo(np.float32).max)
    logits = logits if exact else logits.astype(np.float32)
    p = np.exp(logits - logits.max(-1, keepdims=True))      # in float32, as jax.nn's
    p = (p / p.sum(-1, keepdims=True)).astype(q.dtype)
    return np.einsum("bnts,bsnh->btnh", p, v)


CASES = {
    "plain": ({}, {}),
    "bias_mask": ({"bias": BIAS, "mask": MASK}, {"bias": BIAS, "mask": MASK}),
    "causal_scale": ({"is_causal": True, "scale": 0.3}, {"is_causal": True, "scale": 0.3}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_gradients_and_vmap(name, x64):
    ours, theirs = CASES[name]
    want = reference(Q, KEY, V, **theirs)

    def f(q):
        return nn.dot_product_attention(q, KEY, V, **ours)
    np.testing.assert_allclose(np.asarray(f(Q)), want, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(secant.jit(f)(Q)), want, rtol=2e-5, atol=1e-7)
    g0, w = weighted_fd(lambda q: reference(q, KEY, V, exact=True, **theirs), Q)
    g = secant.grad(lambda q: snp.sum(f(q) * w))(Q)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-4, atol=1e-5)
    per_example = secant.vmap(lambda q, k, v: nn.dot_product_attention(q, k, v))(Q, KEY, V)
    loop = np.stack([reference(Q[i:i + 1], KEY[i:i + 1], V[i:i + 1])[0] for i in range(2)])
    np.testing.assert_allclose(np.asarray(per_example), loop, rtol=2e-5, atol=1e-7)


def test_three_dimensional_inputs_and_float32():
    q, k, v = (x[0].astype(np.float32) for x in (Q, KEY, V))
    out = nn.dot_product_attention(q, k, v)
    assert out.shape == q.shape and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), reference(Q[:1], KEY[:1], V[:1])[0], rtol=2e-5)


def test_unsupported_options_are_clear_errors():
    with pytest.raises(secant.SecantValueError, match="multiple of the key/value heads"):
        nn.dot_product_attention(Q[:, :, :3], KEY, V)
    with pytest.raises(secant.SecantValueError, match="not available"):
        nn.dot_product_attention(Q, KEY, V, implementation="cudnn")
    # (local_window_size and the sequence lengths: tests/test_lib15e_nn.py)

"""secant.nn: jax.nn's activations, softmax family, one_hot and standardize.

Every function is written with secant.numpy / secant.lax ops, and this module sets
`__secant_by_source__`: grad, jvp and vmap read these sources as they read a user's helper
(secant/numpy/composite.py), so derivatives and batched forms follow from the ops' rules and
generated code calls e.g. `relu_vjp`. Values and derivatives are JAX's, including its choices at
kinks (relu'(0) = 0, relu6'(0) = relu6'(6) = 0). The stable forms need no
custom rule: softplus and log_sigmoid are `logaddexp` (whose rule is exp(x - ans)), and the
softmax family and logsumexp shift by a stop_gradient'ed maximum (the exact derivative, since
they are shift-invariant), so gradients stay finite for large |x|.
"""
import numpy as np

import secant.numpy as snp
from secant import lax
from secant.backends.errors import SecantValueError
from secant.scipy import special

__secant_by_source__ = True      # transforms read this module like user code

__all__ = ["relu", "relu6", "gelu", "silu", "swish", "sigmoid", "log_sigmoid", "softplus",
           "soft_sign", "elu", "celu", "selu", "leaky_relu", "hard_tanh", "hard_sigmoid",
           "hard_silu", "hard_swish", "mish", "squareplus", "sparse_plus", "glu", "softmax",
           "log_softmax", "logsumexp", "one_hot", "standardize", "initializers", "avg_pool", "max_pool", "sum_pool",
           "identity", "tanh", "sparse_sigmoid", "log1mexp", "logmeanexp",
           "dot_product_attention", "scaled_matmul", "scaled_dot_general",
           "get_scaled_dot_general_config"]


def relu(x):
    """max(x, 0); its derivative at 0 is 0 (as JAX's)."""
    # (an array: a Python complex has no order, a complex array has JAX's; x <= 0 rather than
    # x > 0: a nan x stays nan, as JAX's)
    x = snp.asarray(x)
    relu_x = snp.where(x <= 0, 0, x)
    return relu_x


def relu6(x):
    """min(max(x, 0), 6); derivative 1 on (0, 6), 0 elsewhere (kinks included, as JAX's)."""
    # a nan x stays nan; 6.0 as JAX's `minimum(maximum(x, 0), 6.)`: an int x gives floats
    x = snp.asarray(x)
    relu6_x = snp.where(x <= 0, 0, snp.where(x >= 6, 6.0, x))
    return relu6_x


def sigmoid(x):
    return lax.logistic(x)


def softplus(x):
    """log(1 + exp(x)), stable for large |x|."""
    return snp.logaddexp(x, 0)


def soft_sign(x):
    return x / (snp.abs(x) + 1)


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return -snp.logaddexp(-x, 0)


def silu(x):
    """x * sigmoid(x)."""
    return x * lax.logistic(x)


swish = silu


def gelu(x, approximate=True):
    """x * Phi(x): with approximate=True (JAX's default) the tanh form."""
    if approximate:
        cdf = 0.5 * (1 + snp.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
        out = x * cdf
    else:
        out = x * (lax.erf(x * 0.7071067811865476) + 1) / 2
    return out


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    x = snp.asarray(x)
    safe_x = snp.where(x > 0, 0, x)
    return snp.where(x > 0, x, alpha * snp.expm1(safe_x))


def celu(x, alpha=1.0):
    """max(x, 0) + alpha * expm1(min(x, 0) / alpha)."""
    return snp.maximum(x, 0) + alpha * snp.expm1(snp.minimum(x, 0) / alpha)


def selu(x):
    """scale * elu(x, alpha) with the self-normalising constants."""
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    x = snp.asarray(x)
    safe_x = snp.where(x > 0, 0, x)
    return scale * snp.where(x > 0, x, alpha * snp.expm1(safe_x))


def leaky_relu(x, negative_slope=1e-2):
    x = snp.asarray(x)
    return snp.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
    """x clipped to [-1, 1] (as JAX's: derivative 1 on [-1, 1], 0 outside)."""
    x = snp.asarray(x)
    return snp.where(x > 1, 1, snp.where(x < -1, -1, x))


def hard_sigmoid(x):
    """relu6(x + 3) / 6."""
    return relu6(x + 3.0) / 6.0


def hard_silu(x):
    """x * hard_sigmoid(x)."""
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def mish(x):
    """x * tanh(softplus(x))."""
    return x * snp.tanh(snp.logaddexp(x, 0))


def squareplus(x, b=4):
    """(x + sqrt(x**2 + b)) / 2, a smooth relu."""
    return (x + snp.sqrt(x * x + b)) / 2


def sparse_plus(x):
    """0 for x <= -1, x for x >= 1, (x + 1)**2 / 4 between."""
    x = snp.asarray(x)
    return snp.where(x <= -1, 0, snp.where(x >= 1, x, (x + 1) ** 2 / 4))


def glu(x, axis=-1):
    """The gated linear unit: x's first half along `axis` times the sigmoid of its second."""
    if np.shape(x)[axis] % 2:
        raise SecantValueError(f"nn.glu needs an even size along axis {axis}, got shape "
                               f"{np.shape(x)}")
    half = np.shape(x)[axis] // 2
    a = snp.take(x, snp.arange(half), axis=axis)
    b = snp.take(x, snp.arange(half, 2 * half), axis=axis)
    return a * lax.logistic(b)


def softmax(x, axis=-1, where=None):
    """exp(x) / sum(exp(x)) along `axis` (an int, a tuple or None), shifted by the maximum;
    with `where`, over the elements where it is true (0 elsewhere), as JAX's."""
    if where is not None:
        x = snp.where(where, x, -snp.inf)
    unnormalized = snp.exp(x - lax.stop_gradient(snp.max(x, axis=axis, keepdims=True)))
    if where is not None:
        unnormalized = snp.where(where, unnormalized, 0)
    result = unnormalized / snp.sum(unnormalized, axis=axis, keepdims=True)
    if where is not None:
        result = snp.where(where, result, 0)
    return result


def log_softmax(x, axis=-1, where=None):
    """x - logsumexp(x) along `axis`, shifted by the maximum; with `where`, over the elements
    where it is true (-inf elsewhere), as JAX's."""
    if where is not None:
        x = snp.where(where, x, -snp.inf)
    shifted = x - lax.stop_gradient(snp.max(x, axis=axis, keepdims=True))
    exp_shifted = snp.exp(shifted)
    if where is not None:
        exp_shifted = snp.where(where, exp_shifted, 0)
    result = shifted - snp.log(snp.sum(exp_shifted, axis=axis, keepdims=True))
    if where is not None:
        result = snp.where(where, result, -snp.inf)
    return result


# jax.nn.logsumexp is jax.scipy.special.logsumexp (b, return_sign, where, complex inputs)
logsumexp = special.logsumexp


def one_hot(x, num_classes, dtype=None, axis=-1):
    """x's integers as one-hot vectors of length num_classes along `axis` (out-of-range
    values give all zeros); no derivative."""
    if dtype is None:               # JAX's float_: float64 when x64 is enabled
        from secant.backends.dtypes import canonicalize_dtype
        dtype = canonicalize_dtype(np.float64)
    position = axis % (np.ndim(x) + 1)
    # (built whole, not by shape.insert: a replay of this function inside a derivative, a
    # scan body's vjp, skips a call made for its effect and reshaped to the rank of x alone)
    shape = [1] * position + [num_classes] + [1] * (np.ndim(x) - position)
    classes = snp.reshape(snp.arange(num_classes), shape)
    return (snp.expand_dims(x, position) == classes).astype(dtype)


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5):
    """(x - mean) / sqrt(variance + epsilon), mean and variance along `axis` unless given."""
    if mean is None:
        mean = snp.mean(x, axis=axis, keepdims=True)
    if variance is None:
        variance = snp.mean(snp.square(x), axis=axis, keepdims=True) - snp.square(mean)
    return (x - mean) * lax.rsqrt(variance + epsilon)


# --- pooling (flax.linen's layout: batch, spatial..., features) -----------------------------------
def _pool(x, computation, init, window_shape, strides, padding):
    window = (1,) + tuple(window_shape) + (1,)
    steps = (1,) + (tuple(strides) if strides is not None else (1,) * len(window_shape)) + (1,)
    if not isinstance(padding, str):
        padding = ((0, 0),) + tuple(tuple(p) for p in padding) + ((0, 0),)
    return lax.reduce_window(x, init, computation, window, steps, padding)


def max_pool(x, window_shape, strides=None, padding="VALID"):
    """The maximum of each window over x's spatial axes (x: batch, spatial..., features)."""
    return _pool(x, lax.max, -np.inf, window_shape, strides, padding)


def sum_pool(x, window_shape, strides=None, padding="VALID"):
    return _pool(x, lax.add, 0.0, window_shape, strides, padding)


def avg_pool(x, window_shape, strides=None, padding="VALID"):
    """The mean of each window (padding counted, as flax's default count_include_pad)."""
    return _pool(x, lax.add, 0.0, window_shape, strides, padding) / np.prod(window_shape)


from secant.nn import initializers  # noqa: E402
from secant.nn.scaled import (scaled_matmul, scaled_dot_general,  # noqa: E402,F401
                              get_scaled_dot_general_config)


def identity(x):
    """x itself (jax.nn.identity)."""
    return x


def tanh(x):
    return snp.tanh(x)


def sparse_sigmoid(x):
    """0 below -1, 1 above 1, (x + 1) / 2 between (jax.nn.sparse_sigmoid)."""
    return 0.5 * snp.clip(x + 1.0, 0.0, 2.0)


def log1mexp(x):
    """log(1 - exp(-x)) for x > 0, stable on both sides of log 2 (jax.nn.log1mexp)."""
    x = snp.asarray(x)
    return snp.where(x > 0.6931471805599453, snp.log1p(-snp.exp(-x)),
                     snp.log(-snp.expm1(-x)))


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """log(mean(exp(x))) over axis: logsumexp less the log of the count (jax.nn.logmeanexp)."""
    x = snp.asarray(x)
    if where is None:
        count = snp.size(x) if axis is None else \
            int(np.prod([snp.shape(x)[a] for a in np.atleast_1d(axis)]))
    else:
        count = snp.sum(snp.broadcast_to(where, snp.shape(x)), axis=axis, keepdims=keepdims)
    return logsumexp(x, axis=axis, where=where, keepdims=keepdims) - snp.log(count)


# --- attention -------------------------------------------------------------------------------
def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None, key_value_seq_lengths=None,
                          local_window_size=None, implementation=None, return_residual=False):
    """softmax(scale * q k^T + bias, masked) v over arrays (B, T, N, H) for query and
    (B, S, K, H) for key and value (the batch axis may be left out), as jax.nn's XLA
    implementation: N query heads share each of the K key/value heads (grouped-query
    attention), bias and a boolean mask (B or 1, N or 1, T, S) apply to the logits, is_causal
    masks keys after each query, local_window_size (left, right) (or one int for both) keeps the
    keys within that many positions of each query, query_seq_lengths / key_value_seq_lengths
    (int32, one per batch row) mask the padding past each row's length (padded queries give 0),
    masked logits become a large negative number (-0.7 * the dtype's max), scale defaults to
    1 / sqrt(H). return_residual also returns the logsumexp of each query's logits
    (B, T, N), with no derivative."""
    _attention_implementation(implementation)
    out_shape = snp.shape(query)
    q = _at_least_4d(snp.asarray(query))
    k = _at_least_4d(snp.asarray(key))
    v = _at_least_4d(snp.asarray(value))
    b, t, n, h = snp.shape(q)
    s, kv_heads = snp.shape(k)[1], snp.shape(k)[2]
    groups = _attention_groups(n, kv_heads)
    if scale is None:
        scale = 1.0 / np.sqrt(h)
    grouped = snp.reshape(q, (b, t, kv_heads, groups, h))
    logits = snp.einsum("btkgh,bskh->bkgts", grouped, k) * scale
    logits = snp.reshape(logits, (b, n, t, s))
    if bias is not None:
        logits = (logits + _at_least_4d(snp.asarray(bias))).astype(logits.dtype)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    if query_seq_lengths is not None:
        query_seq_lengths = _seq_lengths("query_seq_lengths", query_seq_lengths, b)
    if key_value_seq_lengths is not None:
        key_value_seq_lengths = _seq_lengths("key_value_seq_lengths", key_value_seq_lengths, b)
    keep = _attention_keep(b, n, t, s, mask, is_causal, local_window_size, query_seq_lengths,
                           key_value_seq_lengths)
    if keep is not None:
        logits = snp.where(keep, logits, _large_negative(logits.dtype))
    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(k.dtype)
    probs = snp.reshape(probs, (b, kv_heads, groups, t, s))
    encoded = snp.einsum("bkgts,bskh->btkgh", probs, v)
    encoded = snp.reshape(encoded, (b, t, n, h))
    if query_seq_lengths is not None:
        padded = snp.arange(t)[None, :] < query_seq_lengths[:, None]
        encoded = encoded * padded[:, :, None, None].astype(encoded.dtype)
    encoded = snp.reshape(encoded, out_shape)
    if not return_residual:
        return encoded
    residual = lax.stop_gradient(logsumexp(logits, axis=-1).astype(k.dtype))
    return encoded, snp.reshape(snp.transpose(residual, (0, 2, 1)), out_shape[:-1])


def _attention_keep(b, n, t, s, mask, is_causal, local_window_size, q_lengths, kv_lengths):
    """Which logits (b, n, t, s) attention keeps, or None for all of them."""
    keep = None
    if mask is not None:
        keep = snp.broadcast_to(_at_least_4d(snp.asarray(mask)), (b, n, t, s))
    query_pos = snp.arange(t)[:, None]
    key_pos = snp.arange(s)[None, :]
    if is_causal:
        keep = _and(keep, query_pos >= key_pos)
    if local_window_size is not None:
        left, right = local_window_size
        keep = _and(keep, (query_pos <= key_pos + left) & (query_pos >= key_pos - right))
    if q_lengths is not None:
        keep = _and(keep, (query_pos < q_lengths[:, None, None])[:, None])
    if kv_lengths is not None:
        keep = _and(keep, (key_pos < kv_lengths[:, None, None])[:, None])
    return keep


def _and(keep, more):
    return more if keep is None else keep & more


def _seq_lengths(name, lengths, b):
    lengths = snp.asarray(lengths)
    if snp.shape(lengths) != (b,):
        raise SecantValueError(f"dot_product_attention: {name} should have shape ({b},) (one "
                               f"length per batch row), got {snp.shape(lengths)}")
    if not snp.issubdtype(lengths.dtype, snp.integer):
        raise SecantValueError(f"dot_product_attention: {name} should be int32, got "
                               f"{lengths.dtype}")
    return lengths


def _at_least_4d(x):
    return snp.reshape(x, (1,) * (4 - snp.ndim(x)) + snp.shape(x)) if snp.ndim(x) < 4 else x


def _attention_groups(n, kv_heads):
    if n % kv_heads:
        raise SecantValueError(f"dot_product_attention: the number of query heads ({n}) must "
                               f"be a multiple of the key/value heads ({kv_heads})")
    return n // kv_heads


def _attention_implementation(implementation):
    if implementation not in (None, "xla"):
        raise SecantValueError(f"dot_product_attention: implementation {implementation!r} is "
                               f"not available (secant runs the XLA implementation)")


def _large_negative(dtype):
    return -0.7 * min(float(snp.finfo(dtype).max), float(np.finfo(np.float32).max))


# jax.scipy.special.softmax and log_softmax are jax.nn's (secant.scipy.special is imported
# first, so it gets them here)
special.softmax = softmax
special.log_softmax = log_softmax

"""Functions whose generated gradients are checked in as golden files (tests/test_golden.py).

Each function's gradient source is stored in tests/golden/<name>_grad.py.txt; a change to the
code generator that changes any of them shows up as a diff to review.
"""
import numpy as np

import secant.numpy as snp


def polynomial(x):
    """3x^3 - 2x^2 + x - 5, summed over the elements of x."""
    y = 3.0 * x ** 3 - 2.0 * x ** 2 + x - 5.0
    return snp.sum(y)


def mlp_loss(params, x, y):
    """Mean squared error of a two-layer perceptron with a tanh hidden layer.

    params is a dict {"w1", "b1", "w2", "b2"}; x has shape (batch, features), y (batch, out)."""
    h = snp.tanh(x @ params["w1"] + params["b1"])
    pred = h @ params["w2"] + params["b2"]
    err = pred - y
    return snp.mean(err * err)


def softmax_cross_entropy(logits, labels):
    """Mean cross-entropy of softmax(logits) against one-hot labels, with the max subtracted
    for numerical stability (log-sum-exp)."""
    shifted = logits - snp.max(logits, axis=-1, keepdims=True)
    log_norm = snp.log(snp.sum(snp.exp(shifted), axis=-1, keepdims=True))
    log_probs = shifted - log_norm
    return -snp.sum(labels * log_probs) / logits.shape[0]


def _dense(w, b, x):
    """A helper: one dense layer with a sigmoid written out with exp."""
    z = x @ w + b
    return 1.0 / (1.0 + snp.exp(-z))


def with_helper(w, b, x):
    """A loss calling a helper function twice: the gradient calls the helper's own vjp."""
    h = _dense(w, b, x)
    h2 = _dense(w, b, h)
    return snp.sum(h2 * h2)


def static_branch(x, w, normalise):
    """A Python `if` on a static flag and on a shape: decided when the function runs."""
    y = np.sin(x) * w
    if normalise:
        y = y / snp.sqrt(snp.sum(y * y))
    else:
        y = y * 2.0
    if x.ndim == 2:
        y = snp.sum(y, axis=0)
    return snp.sum(y ** 2)


def static_loop(x, w):
    """A Python `for` over a concrete range: three steps of a tanh recurrence h <- tanh(h*w + x)."""
    h = x
    for _ in range(3):
        h = snp.tanh(h * w + x)
    return snp.sum(h)


def grow_until_large(x, w):
    """A Python `while` on a traced test with an `if` inside: under jit, a lax.while_loop
    around a lax.cond."""
    while snp.sum(x * x) < 10.0:
        if snp.sum(x) > 0:
            x = x * w + 0.5
        else:
            x = x * w - 0.5
    return snp.sum(snp.sin(x))

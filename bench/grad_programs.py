"""The functions bench/grad.py differentiates, with their hand-written NumPy gradients.

They live in a file because secant's transforms read source from disk."""
import numpy as np

import secant.numpy as snp

CHAIN_LENGTH = 50


def sin_chain(x):
    """autograd's benchmark: 50 nested sines of a scalar, written as a loop."""
    for _ in range(50):
        x = snp.sin(x)
    return x


def sin_chain_sum(x):
    """The chain of a vector, summed (grad needs a scalar): the 1000-element form."""
    for _ in range(50):
        x = snp.sin(x)
    return snp.sum(x)


def sin_chain_grad_numpy(x):
    """The hand-written derivative: keep each input, multiply the cosines on the way back."""
    xs = []
    for _ in range(CHAIN_LENGTH):
        xs.append(x)
        x = np.sin(x)
    g = 1.0
    for v in reversed(xs):
        g = g * np.cos(v)
    return g


def mlp_loss(params, x, y):
    """Softmax cross-entropy of a tanh MLP; params is a dict of weights and biases."""
    h = snp.tanh(x @ params["w1"] + params["b1"])
    h = snp.tanh(h @ params["w2"] + params["b2"])
    logits = h @ params["w3"] + params["b3"]
    z = logits - snp.max(logits, axis=1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=1, keepdims=True))
    return -snp.mean(snp.sum(logp * y, axis=1))


def make_mlp_loss(np_like):
    """The same loss written against another NumPy (autograd.numpy, jax.numpy)."""
    def loss(params, x, y):
        h = np_like.tanh(x @ params["w1"] + params["b1"])
        h = np_like.tanh(h @ params["w2"] + params["b2"])
        logits = h @ params["w3"] + params["b3"]
        z = logits - np_like.max(logits, axis=1, keepdims=True)
        logp = z - np_like.log(np_like.sum(np_like.exp(z), axis=1, keepdims=True))
        return -np_like.mean(np_like.sum(logp * y, axis=1))
    return loss


def mlp_loss_grad_numpy(params, x, y):
    """The gradient a person would write by hand (softmax minus targets, then backprop)."""
    a1 = x @ params["w1"] + params["b1"]
    h1 = np.tanh(a1)
    h2 = np.tanh(h1 @ params["w2"] + params["b2"])
    logits = h2 @ params["w3"] + params["b3"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    d3 = (p * y.sum(axis=1, keepdims=True) - y) / x.shape[0]
    d2 = (d3 @ params["w3"].T) * (1 - h2 * h2)
    d1 = (d2 @ params["w2"].T) * (1 - h1 * h1)
    return {"w1": x.T @ d1, "b1": d1.sum(axis=0), "w2": h1.T @ d2, "b2": d2.sum(axis=0),
            "w3": h2.T @ d3, "b3": d3.sum(axis=0)}

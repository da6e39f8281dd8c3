"""The ten functions bench/lean.py and bench/memory.py differentiate (issue 20's figures).

Their hand-written NumPy gradients are in bench/handwritten_grads.py. Each function returns a
scalar; secant.grad differentiates it with respect to its first argument. They live in a file
because secant's transforms read source from disk."""
import numpy as np

import secant.lax as lax
import secant.numpy as snp

LOOP_STEPS = 100


def mlp_loss(params, x, y):
    """Softmax cross-entropy of a ReLU MLP; params is a dict of weights and biases."""
    h = snp.maximum(x @ params["w1"] + params["b1"], 0.0)
    h = snp.maximum(h @ params["w2"] + params["b2"], 0.0)
    logits = h @ params["w3"] + params["b3"]
    z = logits - snp.max(logits, axis=1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=1, keepdims=True))
    return -snp.mean(snp.sum(logp * y, axis=1))


def softmax_xent(logits, labels):
    """Mean softmax cross-entropy against one-hot labels."""
    z = logits - snp.max(logits, axis=-1, keepdims=True)
    logp = z - snp.log(snp.sum(snp.exp(z), axis=-1, keepdims=True))
    return -snp.mean(snp.sum(labels * logp, axis=-1))


def rnn_loss(w, u, xs):
    """A tanh RNN over the rows of xs with lax.scan; the loss is the sum of squared states."""
    def step(h, x):
        h = snp.tanh(h @ w + x @ u)
        return h, h
    _, hs = lax.scan(step, snp.zeros(w.shape[0]), xs)
    return snp.sum(hs * hs)


def python_loop(x, n):
    """A Python for loop the transformer unrolls or functionalises."""
    acc = snp.zeros_like(x)
    for i in range(n):
        acc = acc + snp.sin(x * i)
    return snp.sum(acc)


def fori_loop(x, n):
    """The same sum as python_loop with lax.fori_loop."""
    return snp.sum(lax.fori_loop(0, n, lambda i, acc: acc + snp.sin(x * i), snp.zeros_like(x)))


def scan_loop(x, n):
    """The same sum as python_loop with lax.scan over the step numbers."""
    def step(acc, i):
        return acc + snp.sin(x * i), None
    acc, _ = lax.scan(step, snp.zeros_like(x), snp.arange(n, dtype=x.dtype))
    return snp.sum(acc)


def while_loop(x, n):
    """A Python while loop with a counter: x <- 0.9 x + 0.1 sin(x), n times."""
    i = 0
    while i < n:
        x = 0.9 * x + 0.1 * snp.sin(x)
        i = i + 1
    return snp.sum(x * x)


def leapfrog_energy(q, p, k, dt):
    """One leapfrog step of unit masses on springs (force -k q); the energy after it."""
    p_half = p - 0.5 * dt * k * q
    q_new = q + dt * p_half
    p_new = p_half - 0.5 * dt * k * q_new
    return 0.5 * snp.sum(p_new * p_new) + 0.5 * k * snp.sum(q_new * q_new)


def attention(x, wq, wk, wv):
    """A single-head self-attention block; the loss is the sum of squared outputs."""
    q = x @ wq
    k = x @ wk
    v = x @ wv
    s = q @ k.T / snp.sqrt(float(q.shape[-1]))
    e = snp.exp(s - snp.max(s, axis=-1, keepdims=True))
    a = e / snp.sum(e, axis=-1, keepdims=True)
    out = a @ v
    return snp.sum(out * out)


def gaussian_loglik(mu, log_sigma, x):
    """The log-likelihood of the samples x under N(mu, exp(log_sigma)^2)."""
    z = (x - mu) / snp.exp(log_sigma)
    return snp.sum(-0.5 * z * z - log_sigma - 0.5 * snp.log(2 * snp.pi))


def polynomial(x):
    """3x^4 - 2x^3 + x^2 - 5x + 7, summed over x."""
    return snp.sum(3 * x ** 4 - 2 * x ** 3 + x ** 2 - 5 * x + 7)


def _affine(x, w, b):
    return x @ w + b


def _layer(x, w, b):
    return snp.tanh(_affine(x, w, b))


def _mse(pred, target):
    diff = pred - target
    return snp.mean(diff * diff)


def helpers(w, b, x, target):
    """Helpers calling helpers: mse(layer(layer(x))) with a shared weight."""
    h = _layer(x, w, b)
    return _mse(_layer(h, w, b), target)


NAMES = ("mlp_loss", "softmax_xent", "rnn_loss", "python_loop", "while_loop", "leapfrog_energy",
         "attention", "gaussian_loglik", "polynomial", "helpers")
LOOPS = ("python_loop", "fori_loop", "scan_loop")     # one sum, three loops (bench/memory.py)


def inputs(name, rng, dtype=np.float32, small=False):
    """Arguments for the function `name`: the figures' sizes, or small ones for the tests."""
    def normal(*shape, scale=1.0):
        return (scale * rng.normal(size=shape)).astype(dtype)

    def one_hot(n, k):
        return np.eye(k, dtype=dtype)[rng.integers(0, k, n)]

    if name == "mlp_loss":
        sizes, batch = ((6, 5, 4, 3), 7) if small else ((784, 512, 512, 10), 128)
        params = {}
        for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:]), 1):
            params[f"w{i}"] = normal(m, n, scale=1 / np.sqrt(m))
            params[f"b{i}"] = normal(n, scale=0.1)
        return params, normal(batch, sizes[0]), one_hot(batch, sizes[-1])
    if name == "softmax_xent":
        n, k = (5, 4) if small else (128, 10)
        return normal(n, k), one_hot(n, k)
    if name == "rnn_loss":
        t, d, h = (4, 3, 5) if small else (50, 32, 64)
        return normal(h, h, scale=0.5 / np.sqrt(h)), normal(d, h, scale=1 / np.sqrt(d)), normal(t, d)
    if name in LOOPS + ("while_loop",):
        return normal(3 if small else 1000, scale=0.5), 5 if small else LOOP_STEPS
    if name == "leapfrog_energy":
        n = 4 if small else 1000
        return normal(n), normal(n), dtype(1.7), dtype(0.1)
    if name == "attention":
        t, d = (5, 4) if small else (64, 32)
        return (normal(t, d), normal(d, d, scale=1 / np.sqrt(d)), normal(d, d, scale=1 / np.sqrt(d)),
                normal(d, d, scale=1 / np.sqrt(d)))
    if name == "gaussian_loglik":
        n, d = (6, 3) if small else (1000, 16)
        return normal(d), normal(d, scale=0.3), normal(n, d)
    if name == "polynomial":
        return (normal(5 if small else 1000),)
    if name == "helpers":
        n, d = (5, 4) if small else (128, 64)
        return normal(d, d, scale=1 / np.sqrt(d)), normal(d, scale=0.1), normal(n, d), normal(n, d)
    raise KeyError(name)

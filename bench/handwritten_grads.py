"""Hand-written NumPy gradients of the ten functions in bench/lean_functions.py, written as a
person would write them: the forward values that the backward pass needs, then the chain rule.

Each takes the same arguments as its function and returns the gradient with respect to the first
argument (a dict for the MLP's parameters). tests/test_handwritten_grads.py checks each against
secant.grad and float64 finite differences, so the figures in bench/lean.py and bench/memory.py
compare correct code."""
import numpy as np


def mlp_loss(params, x, y):
    a1 = x @ params["w1"] + params["b1"]
    h1 = np.maximum(a1, 0)
    a2 = h1 @ params["w2"] + params["b2"]
    h2 = np.maximum(a2, 0)
    logits = h2 @ params["w3"] + params["b3"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    d3 = (p * y.sum(axis=1, keepdims=True) - y) / x.shape[0]
    d2 = (d3 @ params["w3"].T) * (a2 > 0)
    d1 = (d2 @ params["w2"].T) * (a1 > 0)
    return {"w1": x.T @ d1, "b1": d1.sum(axis=0), "w2": h1.T @ d2, "b2": d2.sum(axis=0),
            "w3": h2.T @ d3, "b3": d3.sum(axis=0)}


def softmax_xent(logits, labels):
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return (p * labels.sum(axis=-1, keepdims=True) - labels) / (logits.size // logits.shape[-1])


def rnn_loss(w, u, xs):
    hs = [np.zeros(w.shape[0], w.dtype)]
    for x in xs:
        hs.append(np.tanh(hs[-1] @ w + x @ u))
    w_bar = np.zeros_like(w)
    h_bar = np.zeros_like(hs[0])
    for t in range(len(xs), 0, -1):
        a_bar = (h_bar + 2 * hs[t]) * (1 - hs[t] * hs[t])
        w_bar += np.outer(hs[t - 1], a_bar)
        h_bar = w @ a_bar
    return w_bar


def python_loop(x, n):
    g = np.zeros_like(x)
    for i in range(n):
        g = g + i * np.cos(x * i)
    return g


fori_loop = scan_loop = python_loop     # the same sum written with lax.fori_loop and lax.scan


def while_loop(x, n):
    xs = []
    for _ in range(n):
        xs.append(x)
        x = 0.9 * x + 0.1 * np.sin(x)
    g = 2 * x
    for v in reversed(xs):
        g = g * (0.9 + 0.1 * np.cos(v))
    return g


def leapfrog_energy(q, p, k, dt):
    c = 0.5 * dt * k
    p_half = p - c * q
    q_new = q + dt * p_half
    p_new = p_half - c * q_new
    q_new_bar = k * q_new - c * p_new
    p_half_bar = p_new + dt * q_new_bar
    return q_new_bar - c * p_half_bar


def attention(x, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv
    scale = q.shape[-1] ** 0.5
    s = q @ k.T / scale
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    a = e / e.sum(axis=-1, keepdims=True)
    out_bar = 2 * (a @ v)
    a_bar = out_bar @ v.T
    s_bar = a * (a_bar - (a_bar * a).sum(axis=-1, keepdims=True)) / scale
    return (s_bar @ k) @ wq.T + (s_bar.T @ q) @ wk.T + (a.T @ out_bar) @ wv.T


def gaussian_loglik(mu, log_sigma, x):
    return ((x - mu) / np.exp(2 * log_sigma)).sum(axis=0)


def polynomial(x):
    return 12 * x ** 3 - 6 * x ** 2 + 2 * x - 5


def helpers(w, b, x, target):
    h1 = np.tanh(x @ w + b)
    h2 = np.tanh(h1 @ w + b)
    d2 = 2 * (h2 - target) / h2.size * (1 - h2 * h2)
    d1 = (d2 @ w.T) * (1 - h1 * h1)
    return h1.T @ d2 + x.T @ d1

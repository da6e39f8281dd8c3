"""secant in one minute: a NumPy-style function run eagerly, jitted through XLA, its StableHLO,
and the readable source of its gradient.

Run: .venv/bin/python examples/quickstart.py
"""
import time

import numpy as np

import secant
import secant.numpy as snp


def dense_softmax(params, x):
    """One dense layer with a tanh, then a numerically stable softmax over the classes."""
    w, b = params
    h = snp.tanh(x @ w + b)
    shifted = h - snp.max(h, axis=-1, keepdims=True)
    e = snp.exp(shifted)
    return e / snp.sum(e, axis=-1, keepdims=True)


def loss(w, x, y):
    """Mean squared error of a tanh layer: the function whose gradient source is printed below."""
    pred = snp.tanh(x @ w)
    err = pred - y
    return snp.mean(err * err)


def finite_differences(fn, w, *rest, eps=1e-6):
    """Central differences of scalar fn with respect to its first argument (float64)."""
    out = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        plus, minus = w.copy(), w.copy()
        plus[i] += eps
        minus[i] -= eps
        out[i] = (float(fn(plus, *rest)) - float(fn(minus, *rest))) / (2 * eps)
    return out


def timed(fn, *args):
    start = time.perf_counter()
    out = secant.block_until_ready(fn(*args))
    return out, (time.perf_counter() - start) * 1e3


def main():
    rng = np.random.default_rng(0)
    params = (rng.normal(size=(16, 4)).astype(np.float32) / 4,
              np.zeros(4, np.float32))
    x = rng.normal(size=(8, 16)).astype(np.float32)

    # 1. Eager: every operation runs on NumPy, so it can be printed and stepped through.
    eager = dense_softmax(params, x)
    print("eager result (first row):", np.round(np.asarray(eager)[0], 4))

    # 2. jit: traced once per argument signature into StableHLO, compiled by XLA, then cached.
    fast = secant.jit(dense_softmax)
    out, first_ms = timed(fast, params, x)
    warm_ms = np.median([timed(fast, params, x)[1] for _ in range(200)])
    np.testing.assert_allclose(np.asarray(out), np.asarray(eager), rtol=1e-5, atol=1e-6)
    print(f"jit result matches eager; first call (trace + compile) {first_ms:.1f} ms, "
          f"warm call {warm_ms * 1e3:.0f} µs (median of 200, NumPy arrays in)")

    # 3. The program XLA compiles; each op's loc(...) points back at the line above that made it.
    print("\nStableHLO of dense_softmax:\n")
    print(fast.lower(params, x).as_text())

    # 4. grad writes a new Python function: its source is the derivative, named after your
    #    variables, with a "# Grad of:" comment above the lines that differentiate each of yours.
    loss_grad = secant.grad(loss)
    print("Generated source of secant.grad(loss):\n")
    print(secant.source(loss_grad))
    secant.config.update("enable_x64", True)          # check it in float64 against
    try:                                              # central finite differences
        w64, x64 = rng.normal(size=(16, 4)) / 4, x.astype(np.float64)
        y64 = rng.normal(size=(8, 4)) / 2
        g = np.asarray(loss_grad(w64, x64, y64))
        np.testing.assert_allclose(g, finite_differences(loss, w64, x64, y64),
                                   rtol=1e-6, atol=1e-9)
    finally:
        secant.config.update("enable_x64", False)
    print(f"grad matches finite differences (max |grad| {np.abs(g).max():.4f}); "
          f"under jit too: {np.allclose(secant.jit(loss_grad)(w64, x64, y64), g, atol=1e-5)}")


if __name__ == "__main__":
    main()

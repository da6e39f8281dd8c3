"""A recurrent network over secant.lax.scan, trained to predict the next value of sine waves.

Each sequence is a sine with a random frequency and phase; at every time step the Elman RNN
reads the current value and predicts the next. The time loop is one `lax.scan` (one
stablehlo.while under jit, and a reverse scan of the generated step_vjp in its gradient), the
batch rides along in the carry, and the whole Adam step is one jitted function.

Run: .venv/bin/python examples/rnn_scan.py [--steps 300] [--show-source]
"""
import argparse
import os
import tempfile
import time

import numpy as np

import secant
import secant.numpy as snp
from secant import lax, tree_util

FULL_STEPS = 300


def rnn_predictions(params, xs):
    """xs: (time, batch, 1) -> predictions of the next value, (time, batch, 1)."""
    wx, wh, b, wo, bo = params["wx"], params["wh"], params["b"], params["wo"], params["bo"]

    def step(h, x):
        h = snp.tanh(x @ wx + h @ wh + b)
        return h, h @ wo + bo
    h0 = snp.zeros((xs.shape[1], wh.shape[0]))
    _, ys = lax.scan(step, h0, xs)
    return ys


def loss(params, xs, targets):
    err = rnn_predictions(params, xs) - targets
    return snp.mean(err * err)


def adam_init(params):
    zeros = tree_util.tree_map(snp.zeros_like, params)
    return {"t": snp.zeros(()), "m": zeros, "v": zeros}


@secant.jit
def train_step(params, opt, xs, targets, lr):
    """Parameters in, parameters and loss out."""
    value, grads = secant.value_and_grad(loss)(params, xs, targets)
    t = opt["t"] + 1.0
    m = tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, opt["m"], grads)
    v = tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, opt["v"], grads)
    scale = lr * snp.sqrt(1.0 - 0.999 ** t) / (1.0 - 0.9 ** t)
    params = tree_util.tree_map(lambda p, m, v: p - scale * m / (snp.sqrt(v) + 1e-8),
                                params, m, v)
    return params, {"t": t, "m": m, "v": v}, value


def sine_batch(rng, batch, length):
    """(inputs, targets), each (time, batch, 1): targets are the inputs shifted by one step."""
    freq = rng.uniform(0.1, 0.4, size=(1, batch))
    phase = rng.uniform(0, 2 * np.pi, size=(1, batch))
    t = np.arange(length + 1)[:, None]
    seq = np.sin(freq * t + phase).astype(np.float32)[..., None]
    return seq[:-1], seq[1:]


def init(rng, hidden):
    return {"wx": (rng.normal(size=(1, hidden)) * 0.5).astype(np.float32),
            "wh": (rng.normal(size=(hidden, hidden)) / np.sqrt(hidden) * 0.9).astype(np.float32),
            "b": np.zeros(hidden, np.float32),
            "wo": (rng.normal(size=(hidden, 1)) / np.sqrt(hidden)).astype(np.float32),
            "bo": np.zeros(1, np.float32)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", FULL_STEPS)))
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--length", type=int, default=40)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--show-source", action="store_true",
                    help="print the generated gradient of the loss (with step_vjp)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    params = init(rng, args.hidden)
    opt = adam_init(params)
    if args.show_source:
        with tempfile.TemporaryDirectory() as tmp:     # the module holds the helpers' vjps
            path = secant.save_source(secant.grad(loss), os.path.join(tmp, "loss_grad.py"))
            with open(path, encoding="utf-8") as fh:
                print(fh.read())
    test_x, test_y = sine_batch(np.random.default_rng(1), 256, args.length)
    test_loss0 = float(secant.jit(loss)(params, test_x, test_y))
    start = time.perf_counter()
    losses = []
    for step in range(args.steps):
        xs, ys = sine_batch(rng, args.batch, args.length)
        params, opt, value = train_step(params, opt, xs, ys, args.lr)
        losses.append(float(value))
        if (step + 1) % max(1, args.steps // 6) == 0:
            print(f"step {step + 1}: train loss {np.mean(losses[-20:]):.5f}", flush=True)
    seconds = time.perf_counter() - start
    test_loss = float(secant.jit(loss)(params, test_x, test_y))
    print(f"trained {args.steps} steps ({args.batch} sequences of {args.length}) in "
          f"{seconds:.1f} s")
    print(f"test loss (mean squared error of the next value): {test_loss0:.5f} -> "
          f"{test_loss:.5f}")
    assert test_loss < test_loss0, "the loss did not decrease"
    if args.steps >= FULL_STEPS:
        assert test_loss < 0.05 * test_loss0, "the loss did not fall 20-fold"


if __name__ == "__main__":
    main()

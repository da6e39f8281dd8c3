"""An MLP trained on scikit-learn's bundled 8x8 digits (1,797 images, no download), in the pure
functional style: the training step takes the parameters and the optimiser state and returns new
ones with the loss; it is one jitted function around `secant.value_and_grad`. Adam is written in
secant.numpy over pytrees. Shows a progress bar (tqdm when installed), saves a loss/accuracy plot
as PNG (matplotlib), and states the test accuracy it reaches.

Needs the examples extra: pip install -e '.[examples]'
Run: .venv/bin/python examples/mlp_digits.py [--epochs 40] [--out DIR]
     (--epochs 2 for a quick smoke run; the accuracy check applies at full size)
"""
import argparse
import os
import tempfile
import time

import numpy as np

import secant
import secant.numpy as snp
from secant import tree_util

FULL_EPOCHS = 40
MIN_TEST_ACCURACY = 0.95        # what the full-size run must reach (it reaches about 0.98)


# --- the model: parameters are a list of (w, b) pairs ---------------------------------------

def init_params(key, sizes):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, sub = secant.random.split(key)
        w = secant.random.normal(sub, (fan_in, fan_out)) * np.sqrt(2.0 / fan_in)
        params.append((w, snp.zeros(fan_out)))
    return params


def predict(params, x):
    """Logits of a ReLU MLP: params is a list of (w, b) pairs, one per layer."""
    for w, b in params[:-1]:
        x = snp.maximum(x @ w + b, 0.0)
    w, b = params[-1]
    return x @ w + b


def log_softmax(logits):
    shifted = logits - snp.max(logits, axis=-1, keepdims=True)
    return shifted - snp.log(snp.sum(snp.exp(shifted), axis=-1, keepdims=True))


def loss(params, x, y_onehot, weight_decay):
    """Mean cross-entropy plus an L2 penalty on the weights."""
    nll = -snp.mean(snp.sum(y_onehot * log_softmax(predict(params, x)), axis=-1))
    l2 = sum(snp.sum(w * w) for w, _ in params)
    return nll + weight_decay * l2


# --- Adam, in secant.numpy over pytrees -----------------------------------------------------

def adam_init(params):
    zeros = tree_util.tree_map(snp.zeros_like, params)
    return {"step": snp.zeros((), snp.int32), "m": zeros, "v": zeros}


def adam_update(params, grads, state, lr, b1=0.9, b2=0.999, eps=1e-8):
    step = state["step"] + 1
    m = tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
    t = step.astype(snp.float32)
    scale = lr * snp.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    params = tree_util.tree_map(lambda p, m, v: p - scale * m / (snp.sqrt(v) + eps),
                                params, m, v)
    return params, {"step": step, "m": m, "v": v}


loss_and_grad = secant.value_and_grad(loss)


@secant.jit
def train_step(params, opt_state, x, y_onehot, lr, weight_decay):
    """Parameters in, parameters and loss out: one pure, jitted step of Adam."""
    value, grads = loss_and_grad(params, x, y_onehot, weight_decay)
    params, opt_state = adam_update(params, grads, opt_state, lr)
    return params, opt_state, value


@secant.jit
def accuracy(params, x, labels):
    return snp.mean((snp.argmax(predict(params, x), axis=-1) == labels).astype(snp.float32))


# --- data, progress, plot -------------------------------------------------------------------

def load_data(seed):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)          # pixels are 0..16
    return train_test_split(x, digits.target.astype(np.int32), test_size=0.25,
                            random_state=seed, stratify=digits.target)


def progress(epochs):
    try:
        from tqdm import tqdm
    except ImportError:
        return None, range(epochs)
    bar = tqdm(range(epochs), desc="training", unit="epoch")
    return bar, bar


def save_plot(history, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    epochs = np.arange(1, len(history["loss"]) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, history["loss"], label="train loss (epoch mean)")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("cross-entropy + L2")
    ax_loss.set_yscale("log")
    ax_loss.legend()
    ax_acc.plot(epochs, history["train_acc"], label="train")
    ax_acc.plot(epochs, history["test_acc"], label="test")
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("accuracy")
    ax_acc.legend()
    fig.suptitle("secant: MLP on scikit-learn digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=int(os.environ.get("EPOCHS", FULL_EPOCHS)))
    ap.add_argument("--hidden", type=int, nargs=2, default=[128, 64])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-accuracy", type=float, default=None,
                    help=f"fail below this test accuracy (default {MIN_TEST_ACCURACY} when "
                         f"--epochs >= {FULL_EPOCHS}, no check for shorter runs)")
    ap.add_argument("--out", help="folder for the plot (default: a new temp dir)")
    args = ap.parse_args(argv)
    min_acc = args.min_accuracy
    if min_acc is None:
        min_acc = MIN_TEST_ACCURACY if args.epochs >= FULL_EPOCHS else 0.0
    out_dir = args.out or tempfile.mkdtemp(prefix="secant_mlp_digits_")
    os.makedirs(out_dir, exist_ok=True)

    x_train, x_test, y_train, y_test = load_data(args.seed)
    onehot = np.eye(10, dtype=np.float32)[y_train]
    n_batches = len(x_train) // args.batch_size             # full batches: one jit signature
    key = secant.random.PRNGKey(args.seed)
    key, init_key = secant.random.split(key)
    params = init_params(init_key, [x_train.shape[1], *args.hidden, 10])
    opt_state = adam_init(params)
    print(f"digits: {len(x_train)} train / {len(x_test)} test images of 8x8; MLP "
          f"{[x_train.shape[1], *args.hidden, 10]}; {args.epochs} epochs of {n_batches} "
          f"batches of {args.batch_size}")

    history = {"loss": [], "train_acc": [], "test_acc": []}
    start = time.perf_counter()
    bar, epochs = progress(args.epochs)
    for epoch in epochs:
        key, shuffle_key = secant.random.split(key)
        order = np.asarray(secant.random.permutation(shuffle_key, len(x_train)))
        losses = []
        for b in range(n_batches):
            idx = order[b * args.batch_size:(b + 1) * args.batch_size]
            params, opt_state, value = train_step(params, opt_state, x_train[idx], onehot[idx],
                                                  args.lr, args.weight_decay)
            losses.append(value)
        history["loss"].append(float(np.mean([float(v) for v in losses])))
        history["train_acc"].append(float(accuracy(params, x_train, y_train)))
        history["test_acc"].append(float(accuracy(params, x_test, y_test)))
        status = (f"loss {history['loss'][-1]:.4f}, train acc {history['train_acc'][-1]:.3f}, "
                  f"test acc {history['test_acc'][-1]:.3f}")
        if bar is not None:
            bar.set_postfix_str(status)
        else:
            print(f"epoch {epoch + 1}/{args.epochs}: {status}", flush=True)
    if bar is not None:
        bar.close()
    seconds = time.perf_counter() - start

    plot = save_plot(history, os.path.join(out_dir, "mlp_digits.png"))
    print(f"trained {args.epochs} epochs in {seconds:.1f} s; loss {history['loss'][0]:.4f} -> "
          f"{history['loss'][-1]:.4f}")
    print(f"plot saved to {plot}")
    test_acc = history["test_acc"][-1]
    print(f"final test accuracy: {test_acc:.4f} (train {history['train_acc'][-1]:.4f})")
    assert history["loss"][-1] < history["loss"][0], "the loss did not decrease"
    assert test_acc >= min_acc, f"test accuracy {test_acc:.4f} below {min_acc}"


if __name__ == "__main__":
    main()

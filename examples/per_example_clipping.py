"""Per-example gradients with vmap(grad) and clipping of each one, as DP-SGD does.

`secant.vmap(secant.grad(loss), in_axes=(None, 0, 0))` maps the generated gradient over the
examples with the parameters shared: one batched program, not a Python loop. Each example's
gradient is then clipped to an L2 norm of at most C (over all parameters together), the clipped
gradients are averaged and Gaussian noise is added. The per-example gradients and the clipped
mean are checked against a Python loop of `secant.grad` calls, then a few DP-SGD steps train a
logistic-regression-with-a-hidden-layer model on a synthetic task.

Run: .venv/bin/python examples/per_example_clipping.py [--steps 500] [--batch 64]
"""
import argparse
import os
import time

import numpy as np

import secant
import secant.numpy as snp
from secant import tree_util

FULL_STEPS = 500


def loss(params, x, y):
    """Binary cross-entropy of a one-hidden-layer model, for one example (x: (d,), y: ())."""
    h = snp.tanh(x @ params["w1"] + params["b1"])
    logit = h @ params["w2"] + params["b2"]
    return snp.logaddexp(0.0, logit) - y * logit      # log(1 + e^z) - y z


per_example_grads = secant.vmap(secant.grad(loss), in_axes=(None, 0, 0))


def clip_and_average(grads, clip_norm):
    """grads: a pytree whose leaves have a leading example axis. Clip each example's gradient
    (all leaves together) to norm <= clip_norm, then average over the examples."""
    leaves = tree_util.tree_leaves(grads)
    sq = snp.zeros(leaves[0].shape[0])
    for leaf in leaves:
        sq = sq + snp.sum(leaf.reshape(leaf.shape[0], -1) ** 2, axis=1)
    norms = snp.sqrt(sq)
    factor = snp.minimum(1.0, clip_norm / (norms + 1e-12))

    def clipped_mean(leaf):
        scale = factor.reshape((-1,) + (1,) * (leaf.ndim - 1))
        return snp.mean(leaf * scale, axis=0)
    return tree_util.tree_map(clipped_mean, grads), norms


@secant.jit
def dp_sgd_step(params, x, y, key, lr, clip_norm, noise_multiplier):
    grads = per_example_grads(params, x, y)
    mean, norms = clip_and_average(grads, clip_norm)
    leaves, treedef = tree_util.tree_flatten(mean)
    keys = secant.random.split(key, len(leaves))
    std = noise_multiplier * clip_norm / x.shape[0]
    noisy = [g + std * secant.random.normal(keys[i], g.shape) for i, g in enumerate(leaves)]
    noisy = tree_util.tree_unflatten(treedef, noisy)
    params = tree_util.tree_map(lambda p, g: p - lr * g, params, noisy)
    return params, snp.mean(norms)


@secant.jit
def batch_loss_and_accuracy(params, x, y):
    logits = (snp.tanh(x @ params["w1"] + params["b1"]) @ params["w2"]) + params["b2"]
    losses = snp.logaddexp(0.0, logits) - y * logits
    return snp.mean(losses), snp.mean(((logits > 0) == (y > 0.5)).astype(snp.float32))


def make_data(rng, n, d):
    """Labels from a noisy quadratic boundary: learnable, not linearly separable."""
    x = rng.normal(size=(n, d)).astype(np.float32)
    score = x[:, 0] * x[:, 1] + 0.5 * x[:, 2] - 0.3 * x[:, 3] ** 2 + 0.1 * rng.normal(size=n)
    return x, (score > np.median(score)).astype(np.float32)


def init(rng, d, hidden):
    return {"w1": (rng.normal(size=(d, hidden)) / np.sqrt(d)).astype(np.float32),
            "b1": np.zeros(hidden, np.float32),
            "w2": (rng.normal(size=hidden) / np.sqrt(hidden)).astype(np.float32),
            "b2": np.zeros((), np.float32)}


def check_against_loop(params, x, y):
    """vmap(grad) and the clipped mean against a Python loop of secant.grad, one example at a
    time, clipping at the median norm (so about half are clipped); returns the max absolute
    differences and how many were clipped."""
    batched = per_example_grads(params, x, y)
    clip_norm = float(np.median(np.asarray(clip_and_average(batched, 1.0)[1])))
    one = secant.grad(loss)
    looped = [one(params, x[i], y[i]) for i in range(x.shape[0])]
    err = 0.0
    for name in params:
        stacked = np.stack([np.asarray(g[name]) for g in looped])
        err = max(err, float(np.max(np.abs(np.asarray(batched[name]) - stacked))))
    mean, norms = clip_and_average(batched, clip_norm)
    clipped_err = 0.0
    loop_norms = [np.sqrt(sum(np.sum(np.asarray(g[k]) ** 2) for k in g)) for g in looped]
    for name in params:
        want = np.mean([np.asarray(g[name]) * min(1.0, clip_norm / n)
                        for g, n in zip(looped, loop_norms)], axis=0)
        clipped_err = max(clipped_err, float(np.max(np.abs(np.asarray(mean[name]) - want))))
    n_clipped = int(np.sum(np.asarray(loop_norms) > clip_norm))
    return err, clipped_err, n_clipped


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", FULL_STEPS)))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--noise", type=float, default=0.5, help="noise multiplier")
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--show-source", action="store_true",
                    help="print the generated per-example gradient function")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    d, hidden = 8, 16
    x_train, y_train = make_data(rng, 2048, d)
    x_test, y_test = make_data(rng, 1024, d)
    params = init(rng, d, hidden)

    if args.show_source:
        print(secant.source(per_example_grads))
    err, clipped_err, n_clipped = check_against_loop(params, x_train[:32], y_train[:32])
    print(f"per-example gradients (vmap of grad) against a Python loop of grad: max error "
          f"{err:.2e}")
    print(f"clipped mean gradient ({n_clipped}/32 examples clipped) against the loop: max error "
          f"{clipped_err:.2e}")
    assert err < 1e-5 and clipped_err < 1e-6
    assert 0 < n_clipped < 32

    loss0, acc0 = (float(v) for v in batch_loss_and_accuracy(params, x_test, y_test))
    key = secant.random.PRNGKey(0)
    start = time.perf_counter()
    for step in range(args.steps):
        idx = rng.choice(len(x_train), args.batch, replace=False)
        key, sub = secant.random.split(key)
        params, mean_norm = dp_sgd_step(params, x_train[idx], y_train[idx], sub, args.lr,
                                        args.clip, args.noise)
        if (step + 1) % max(1, args.steps // 5) == 0:
            print(f"step {step + 1}: mean per-example gradient norm {float(mean_norm):.3f}",
                  flush=True)
    seconds = time.perf_counter() - start
    loss1, acc1 = (float(v) for v in batch_loss_and_accuracy(params, x_test, y_test))
    print(f"DP-SGD: {args.steps} steps of {args.batch} examples in {seconds:.1f} s "
          f"(clip {args.clip}, noise multiplier {args.noise})")
    print(f"test loss {loss0:.4f} -> {loss1:.4f}, test accuracy {acc0:.3f} -> {acc1:.3f}")
    assert loss1 < loss0, "DP-SGD did not reduce the test loss"
    if args.steps >= FULL_STEPS:
        assert acc1 >= 0.75, f"test accuracy {acc1:.3f} below 0.75"


if __name__ == "__main__":
    main()

"""Data-parallel training of a small MLP on 4 CPU devices with secant.pmap, checked against the
same steps on one device.

Each device holds a copy of the parameters and a quarter of every batch; it computes the
gradient of its quarter's loss, `lax.pmean` averages the gradients over the devices (one
all-reduce), and every device applies the same update. Since the loss is a mean over equal
quarters, the mean of the quarters' gradients is the full batch's gradient: the parameters
must match a single-device run of the same steps. The parameters stay on the devices between
steps (each step's sharded outputs are the next step's inputs, no host copy).

Run: .venv/bin/python examples/data_parallel.py      (DATA_PARALLEL_STEPS=n for fewer steps)
 or, as 2 processes of 2 devices each (the gradients averaged across processes):
     .venv/bin/python -m secant.launch -n 2 --devices-per-process 2 examples/data_parallel.py
Each process then feeds only its own devices' quarters of the batch; pmean spans all 4 devices.
"""
import os
import time

import numpy as np

import secant

LAUNCHED = secant.distributed.ENV_COUNT in os.environ     # started by `python -m secant.launch`
if LAUNCHED:
    secant.distributed.initialize()             # joins the other processes (before first use)
else:
    secant.config.update("num_cpu_devices", 4)  # before first use: the client is made once

import secant.numpy as snp  # noqa: E402
from secant import lax  # noqa: E402

STEPS = int(os.environ.get("DATA_PARALLEL_STEPS", "40"))
BATCH, D_IN, HIDDEN, LR = 256, 8, 32, 0.1


def mlp(p, x):
    h = snp.tanh(x @ p["w1"] + p["b1"])
    return h @ p["w2"] + p["b2"]


def loss(p, x, y):
    err = mlp(p, x) - y
    return snp.mean(err * err)


grad_loss = secant.value_and_grad(loss)


def sgd(p, g):
    return {k: p[k] - LR * g[k] for k in p}


def device_step(p, x, y):
    """What each device runs on its quarter of the batch."""
    value, g = grad_loss(p, x, y)
    g = lax.pmean(g, "batch")                  # the full batch's gradient, on every device
    return sgd(p, g), lax.pmean(value, "batch")


def single_step(p, x, y):
    value, g = grad_loss(p, x, y)
    return sgd(p, g), value


def data(rng):
    xs = rng.normal(size=(STEPS, BATCH, D_IN)).astype(np.float32)
    true_w = rng.normal(size=(D_IN, 1)).astype(np.float32)
    ys = np.sin(xs @ true_w) + 0.1 * rng.normal(size=(STEPS, BATCH, 1)).astype(np.float32)
    return xs, ys.astype(np.float32)


def init(rng):
    return {"w1": (rng.normal(size=(D_IN, HIDDEN)) / np.sqrt(D_IN)).astype(np.float32),
            "b1": np.zeros(HIDDEN, np.float32),
            "w2": (rng.normal(size=(HIDDEN, 1)) / np.sqrt(HIDDEN)).astype(np.float32),
            "b2": np.zeros(1, np.float32)}


def main():
    N_DEV = secant.device_count()                 # of all processes
    n_local = secant.local_device_count()         # this process's
    mine = slice(secant.process_index() * n_local, (secant.process_index() + 1) * n_local)
    rng = np.random.default_rng(0)                # (every process draws the same data)
    xs, ys = data(rng)
    params = init(rng)

    # N_DEV devices: parameters replicated (one copy per device), each batch split in N_DEV;
    # this process feeds its own devices' parts (all of them when it is alone)
    parallel = secant.pmap(device_step, axis_name="batch")
    replicated = {k: np.broadcast_to(v, (n_local,) + v.shape) for k, v in params.items()}
    t0 = time.perf_counter()
    p4, first4 = replicated, None
    for s in range(STEPS):
        p4, loss4 = parallel(p4, xs[s].reshape(N_DEV, -1, D_IN)[mine],
                             ys[s].reshape(N_DEV, -1, 1)[mine])
        first4 = loss4 if first4 is None else first4
    loss4, first4 = np.asarray(loss4), np.asarray(first4)
    t4 = time.perf_counter() - t0

    # 1 device: the same steps on the whole batch
    single = secant.jit(single_step)
    t0 = time.perf_counter()
    p1, first1 = params, None
    for s in range(STEPS):
        p1, loss1 = single(p1, xs[s], ys[s])
        first1 = loss1 if first1 is None else first1
    loss1, first1 = float(loss1), float(first1)
    t1 = time.perf_counter() - t0

    if secant.process_count() > 1:
        print(f"process {secant.process_index()} of {secant.process_count()}, devices "
              f"{[str(d) for d in secant.local_devices()]} of {N_DEV}")
    print(f"{STEPS} steps, batch {BATCH} ({BATCH // N_DEV} per device), MLP {D_IN}-{HIDDEN}-1")
    print(f"  {N_DEV} devices: loss {first4[0]:.6f} -> {loss4[0]:.6f}  ({t4:.2f} s, first call "
          "compiles)")
    print(f"  1 device:  loss {first1:.6f} -> {loss1:.6f}  ({t1:.2f} s, first call compiles)")
    print("  parameters on the devices:", [str(d) for d in p4["w1"].sharding_devices])
    assert np.allclose(loss4, loss4[0])               # every device has the same mean loss
    for k in params:
        copies = np.asarray(p4[k])
        for d in range(n_local):                      # every device holds the same parameters
            np.testing.assert_allclose(copies[d], np.asarray(p1[k]), rtol=2e-4, atol=2e-5,
                                       err_msg=f"parameter {k} on device {d}")
    np.testing.assert_allclose(loss4[0], loss1, rtol=2e-4)
    print("parameters match the single-device run")


if __name__ == "__main__":
    main()

"""Run by tests/test_distributed.py: three data-parallel training steps of a small MLP with
pmap + pmean, under `secant.launch -n 2 --devices-per-process 2` (each process feeds its
devices' quarters of every batch) or alone with SECANT_SINGLE=4 (one process, 4 devices).
Prints this process's parameters (its first device's copy) and losses as one JSON line."""
import json
import os

import numpy as np

import secant

if os.environ.get("SECANT_SINGLE"):
    secant.config.update("num_cpu_devices", int(os.environ["SECANT_SINGLE"]))
else:
    secant.distributed.initialize()

import secant.numpy as snp  # noqa: E402
from secant import lax  # noqa: E402


def loss(p, x, y):
    err = snp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] - y
    return snp.mean(err * err)


def step(p, x, y):
    value, g = secant.value_and_grad(loss)(p, x, y)
    g = lax.pmean(g, "batch")
    return {k: p[k] - 0.1 * g[k] for k in p}, lax.pmean(value, "batch")


rng = np.random.default_rng(0)
n, n_local, me = secant.device_count(), secant.local_device_count(), secant.process_index()
mine = slice(me * n_local, (me + 1) * n_local)
params = {"w1": rng.normal(size=(3, 8)).astype(np.float32), "b1": np.zeros(8, np.float32),
          "w2": rng.normal(size=(8, 1)).astype(np.float32)}
p = {k: np.broadcast_to(v, (n_local,) + v.shape) for k, v in params.items()}
f = secant.pmap(step, axis_name="batch")
losses = []
for s in range(3):
    x = rng.normal(size=(32, 3)).astype(np.float32)
    y = np.sin(x[:, :1])
    p, value = f(p, x.reshape(n, -1, 3)[mine], y.reshape(n, -1, 1)[mine])
    losses.append(np.asarray(value).tolist())
out = {k: np.asarray(v).tolist() for k, v in p.items()}
print("RESULT " + json.dumps({"process": me, "params": out, "losses": losses}), flush=True)

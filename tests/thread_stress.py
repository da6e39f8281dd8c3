"""Threads stress script (tests/test_threads.py runs it in fresh processes, so the PJRT client and
every cache start cold): THREADS threads each run every task below (jit, grad, vmap, pmap and
compositions, over several shapes) in their own order, all at once; or, with `seq`, one thread
runs them in order. It saves every result and the trace/compile counts to the .npz path given.

    python tests/thread_stress.py threads|seq OUT.npz [DEVICES] [warm]

`warm` creates the PJRT client before the threads start (to exercise the caches and trace state
alone).
"""
import random
import sys
import threading

import numpy as np

import secant
import secant.numpy as snp
from secant import lax

THREADS = 8
SIZES = (1, 2, 3, 5)


def poly(x):
    return snp.sum(snp.sin(x) * x + x ** 2)


def mixed(x, y):
    z = snp.tanh(x) * y
    if x.shape[0] > 2:          # Python control flow on a static shape
        z = z + snp.cos(y)
    return snp.sum(z * z)


def step(x):
    return snp.exp(-x) * 2.0 + snp.sqrt(snp.abs(x) + 1.0)


def rows(a):
    return snp.dot(a, a) + snp.sum(a)


def loop(x):
    acc = x
    for i in range(3):
        acc = snp.sin(acc) + x * i
    return snp.sum(acc)


def collective(x):
    return snp.sin(x) + lax.psum(x, "i")


def tasks(ndev):
    jit_step = secant.jit(step)
    jit_grad = secant.jit(secant.grad(poly))
    grad_mixed = secant.grad(mixed, argnums=(0, 1))
    vmap_rows = secant.vmap(rows)
    jit_vmap = secant.jit(secant.vmap(secant.grad(loop)))
    vmap_grad = secant.vmap(secant.grad(poly))
    pmapped = secant.pmap(collective, axis_name="i")
    out = []
    for n in SIZES:
        x = np.linspace(-1.0, 1.0, n).astype(np.float32)
        y = np.linspace(0.5, 2.0, n).astype(np.float32)
        b = np.arange(2 * n, dtype=np.float32).reshape(2, n) / 7.0
        p = np.arange(ndev * n, dtype=np.float32).reshape(ndev, n) / 5.0
        out += [
            (f"jit_step_{n}", lambda x=x: jit_step(x)),
            (f"jit_grad_{n}", lambda x=x: jit_grad(x)),
            (f"grad_{n}", lambda x=x: secant.grad(poly)(x)),
            (f"grad_mixed_{n}", lambda x=x, y=y: grad_mixed(x, y)),
            (f"vmap_{n}", lambda b=b: vmap_rows(b)),
            (f"jit_vmap_grad_{n}", lambda b=b: jit_vmap(b)),
            (f"vmap_grad_{n}", lambda b=b: vmap_grad(b)),
            (f"pmap_{n}", lambda p=p: pmapped(p)),
        ]
    return out, [jit_step, jit_grad, jit_vmap]


def run(mode, path, ndev, warm=False):
    secant.config.update("num_cpu_devices", ndev)     # (the client is created by the tasks)
    if warm:
        secant.devices()
    work, jitted = tasks(ndev)
    results, errors = {}, []
    if mode == "seq":
        for name, fn in work:
            results[name] = np.asarray(fn())
    else:
        barrier = threading.Barrier(THREADS)

        def worker(seed):
            order = list(work)
            random.Random(seed).shuffle(order)
            try:
                barrier.wait()
                for name, fn in order:
                    value = np.asarray(fn())
                    prev = results.setdefault(name, value)
                    if not np.array_equal(prev, value):
                        errors.append(f"{name}: threads disagree: {prev} vs {value}")
            except BaseException as e:      # noqa: BLE001 (reported below)
                errors.append(f"{type(e).__name__}: {e}")

        threads = [threading.Thread(target=worker, args=(s,)) for s in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        print("\n".join(errors[:5]))
        sys.exit(1)
    from secant import api
    stats = dict(getattr(api, "stats", {}))
    results["__stats__"] = np.array([stats.get("traces", -1), stats.get("compiles", -1)])
    results["__cache__"] = np.array([len(j._cache) for j in jitted])
    np.savez(path, **results)


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 2,
        sys.argv[4:5] == ["warm"])

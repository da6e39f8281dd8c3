"""pmap (issue 8): a data-parallel training step of an MLP (global batch 1024, gradients
averaged with pmean) on 1, 2 and 4 CPU devices, and the per-call dispatch cost of a trivial
pmap, beside jax.pmap when jax is installed (a benchmark-only dependency).

The device count is fixed when a process creates its PJRT client, so each count runs in its own
subprocess (XLA_FLAGS=--xla_force_host_platform_device_count=n). The CPU devices share the
machine's cores: with 2 cores, 4 devices cannot run 4 steps' worth of work at once.

    .venv/bin/python bench/pmap.py          (/tmp/benchvenv/bin/python for the jax column)
"""
import json
import os
import subprocess
import sys

import numpy as np

from timing import import_jax, once_ms, per_call_us, report

BATCH, D_IN, HIDDEN, D_OUT, LR = 1024, 64, 256, 10, 0.05
COUNTS = (1, 2, 4)


def _data():
    rng = np.random.default_rng(0)
    params = {"w1": (rng.normal(size=(D_IN, HIDDEN)) / np.sqrt(D_IN)).astype(np.float32),
              "b1": np.zeros(HIDDEN, np.float32),
              "w2": (rng.normal(size=(HIDDEN, D_OUT)) / np.sqrt(HIDDEN)).astype(np.float32),
              "b2": np.zeros(D_OUT, np.float32)}
    xs = rng.normal(size=(BATCH, D_IN)).astype(np.float32)
    ys = rng.normal(size=(BATCH, D_OUT)).astype(np.float32)
    return params, xs, ys


def _split(params, xs, ys, n):
    rep = {k: np.broadcast_to(v, (n,) + v.shape).copy() for k, v in params.items()}
    return rep, xs.reshape(n, -1, D_IN), ys.reshape(n, -1, D_OUT)


def _secant(n):
    import secant
    import secant.numpy as snp
    from secant import lax

    def loss(p, x, y):
        h = snp.tanh(x @ p["w1"] + p["b1"])
        err = h @ p["w2"] + p["b2"] - y
        return snp.mean(err * err)

    grad_loss = secant.grad(loss)

    def step(p, x, y):
        g = lax.pmean(grad_loss(p, x, y), "batch")
        return {k: p[k] - LR * g[k] for k in p}

    assert secant.device_count() == n
    p, x, y = _split(*_data(), n)
    train = secant.pmap(step, axis_name="batch")
    first = once_ms(lambda: secant.block_until_ready(train(p, x, y)))
    put = secant.pmap(lambda v: v)          # the batch and parameters placed on the devices once
    sp, sx, sy = put(p), put(x), put(y)
    state = [sp]

    def one_step():                          # parameters stay on the devices between steps
        state[0] = secant.block_until_ready(train(state[0], sx, sy))
    steady = per_call_us(one_step, rounds=5)
    check = np.asarray(train(sp, sx, sy)["w1"])

    inc = secant.pmap(lambda v: v + 1)
    a = inc(np.zeros((n, 8), np.float32))
    dispatch = per_call_us(lambda: inc(a).block_until_ready())
    return {"first_ms": first, "step_us": steady, "dispatch_us": dispatch,
            "w1": check[0].ravel()[:8].tolist()}


def _jax(n):
    jax, jnp = import_jax()
    if jax is None:
        return None

    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        err = h @ p["w2"] + p["b2"] - y
        return jnp.mean(err * err)

    def step(p, x, y):
        g = jax.lax.pmean(jax.grad(loss)(p, x, y), "batch")
        return {k: p[k] - LR * g[k] for k in p}

    assert jax.device_count() == n
    p, x, y = _split(*_data(), n)
    train = jax.pmap(step, axis_name="batch")
    first = once_ms(lambda: jax.block_until_ready(train(p, x, y)))
    put = jax.pmap(lambda v: v)
    sp, sx, sy = put(p), put(x), put(y)
    state = [sp]

    def one_step():
        state[0] = jax.block_until_ready(train(state[0], sx, sy))
    steady = per_call_us(one_step, rounds=5)
    check = np.asarray(train(sp, sx, sy)["w1"])

    inc = jax.pmap(lambda v: v + 1)
    a = inc(np.zeros((n, 8), np.float32))
    dispatch = per_call_us(lambda: inc(a).block_until_ready())
    return {"first_ms": first, "step_us": steady, "dispatch_us": dispatch,
            "w1": check[0].ravel()[:8].tolist()}


def _worker(n):
    out = {"secant": _secant(n), "jax": _jax(n)}
    print("RESULT " + json.dumps(out))


def _run(n):
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    env["XLA_FLAGS"] = " ".join(flags + [f"--xla_force_host_platform_device_count={n}"])
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--devices", str(n)],
                          env=env, capture_output=True, text=True, timeout=600,
                          cwd=os.path.dirname(os.path.abspath(__file__)))
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"bench/pmap.py worker for {n} devices failed:\n{proc.stdout}"
                       f"\n{proc.stderr}")


def main():
    print(f"pmap: data-parallel training step, MLP {D_IN}-{HIDDEN}-{D_OUT}, global batch "
          f"{BATCH} split over n CPU devices ({os.cpu_count()} cores on this machine)")
    results = {n: _run(n) for n in COUNTS}
    base = results[1]["secant"]["step_us"]
    for n in COUNTS:
        s, j = results[n]["secant"], results[n]["jax"]
        if j is not None:     # both trained the same step from the same data
            np.testing.assert_allclose(s["w1"], j["w1"], rtol=1e-3, atol=1e-5)
        report(f"{n} device(s): first call", s["first_ms"], j and j["first_ms"], "ms")
        report(f"{n} device(s): one training step", s["step_us"], j and j["step_us"], "µs")
        print(f"    {BATCH / s['step_us'] * 1e6:10.0f} examples/s, "
              f"{base / s['step_us']:.2f}x the 1-device step rate")
    for n in COUNTS:
        s, j = results[n]["secant"], results[n]["jax"]
        report(f"dispatch of pmap(v + 1), {n} device(s)", s["dispatch_us"],
               j and j["dispatch_us"], "µs")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--devices":
        _worker(int(sys.argv[2]))
    else:
        main()

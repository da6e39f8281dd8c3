"""GPU check (issue 21): secant on the CUDA PJRT plugin against secant on the CPU.

    .venv/bin/python bench/gpu_check.py          (after pip install -e '.[cuda12]')

Runs the same small programs twice, each in its own process (the PJRT client is one per
process): once with SECANT_PLATFORMS=cpu, once on the GPU. Checks jit, grad, vmap and pmap
values on the GPU against the CPU, and prints the MLP training step time and the first-call time
(trace + compile + run), beside jax's on the same GPU when jax with its CUDA packages is
installed. Exit status: 0 all checks pass, 1 a value differs, 2 no usable GPU (no plugin, or
the plugin cannot start): nothing was measured. Bounded: every child runs under a time limit.
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

LIMIT = 240         # seconds per child process
STEPS = 50


def programs():
    import secant
    import secant.numpy as snp
    from secant import lax

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 32)).astype(np.float32)
    w = rng.normal(size=(32, 16)).astype(np.float32) / 6
    xs = rng.normal(size=(8, 64, 32)).astype(np.float32)

    def f(w, x):
        return snp.tanh(x @ w).sum(axis=1)

    def loss(w, x):
        return snp.mean(snp.tanh(x @ w) ** 2)

    n = secant.local_device_count()
    out = {"backend": secant.default_backend(), "devices": [str(d) for d in secant.devices()],
           "jit": np.asarray(secant.jit(f)(w, x)),
           "grad": np.asarray(secant.jit(secant.grad(loss))(w, x)),
           "vmap": np.asarray(secant.vmap(f, in_axes=(None, 0))(w, xs)),
           "pmap": np.asarray(secant.pmap(lambda v: lax.psum(v, "i") * v, axis_name="i")(
               xs[:n, :4, :4]))}
    out["pmap_n"] = n
    return out


def mlp_timing(lib):
    """(first call s, median step s) of an MLP training step under jit."""
    if lib == "jax":
        import jax
        import jax.numpy as snp
        jit, value_and_grad = jax.jit, jax.value_and_grad
    else:
        import secant
        import secant.numpy as snp
        jit, value_and_grad = secant.jit, secant.value_and_grad
    rng = np.random.default_rng(1)
    sizes = [784, 512, 512, 10]
    params = [(rng.normal(size=(a, b)).astype(np.float32) / np.sqrt(a), np.zeros(b, np.float32))
              for a, b in zip(sizes[:-1], sizes[1:])]
    x = rng.normal(size=(256, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = snp.tanh(h @ w + b)
        w, b = params[-1]
        logits = h @ w + b
        logits = logits - logits.max(axis=1, keepdims=True)
        return -snp.mean(snp.sum(y * (logits - snp.log(snp.sum(snp.exp(logits), axis=1,
                                                                   keepdims=True))), axis=1))

    @jit
    def step(params, x, y):
        value, g = value_and_grad(loss)(params, x, y)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, g)], value

    t = time.perf_counter()
    p, v = step(params, x, y)
    v.block_until_ready()
    first = time.perf_counter() - t
    times = []
    for _ in range(STEPS):
        t = time.perf_counter()
        p, v = step(p, x, y)
        v.block_until_ready()
        times.append(time.perf_counter() - t)
    return first, float(np.median(times))


def child(mode, path):
    if mode == "jax":
        import jax
        first, med = mlp_timing("jax")
        res = {"backend": jax.default_backend(), "first": first, "step": med}
    else:
        from secant.backends import runtime
        if mode == "gpu" and runtime.gpu_plugin_path() is None:
            print("no CUDA PJRT plugin installed (pip install -e '.[cuda12]')", file=sys.stderr)
            sys.exit(2)
        try:
            res = programs()
        except Exception as e:
            if mode == "gpu":
                print(f"the GPU could not be used: {type(e).__name__}: {e}", file=sys.stderr)
                sys.exit(2)
            raise
        if mode == "gpu" and res["backend"] != "gpu":
            print(f"the CUDA plugin did not give a GPU (backend {res['backend']})",
                  file=sys.stderr)
            sys.exit(2)
        res["first"], res["step"] = mlp_timing("secant")
    np.save(path, res, allow_pickle=True)


def run_child(mode, tmp):
    path = os.path.join(tmp, f"{mode}.npy")
    env = dict(os.environ)
    if mode == "cpu":
        env["SECANT_PLATFORMS"] = "cpu"
    elif mode == "gpu":
        env["SECANT_PLATFORMS"] = "gpu"
    else:
        env["JAX_PLATFORMS"] = "cuda"
        env.pop("SECANT_PLATFORMS", None)
    try:
        r = subprocess.run([sys.executable, __file__, "--child", mode, path], env=env,
                           capture_output=True, text=True, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        return None, f"{mode}: timed out after {LIMIT} s"
    if r.returncode != 0:
        return r.returncode, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    return np.load(path, allow_pickle=True).item(), None


def main():
    import importlib.util
    with tempfile.TemporaryDirectory() as tmp:
        gpu, why = run_child("gpu", tmp)
        if not isinstance(gpu, dict):
            print(f"gpu_check: no usable GPU: {why}")
            return 2
        cpu, why = run_child("cpu", tmp)
        if not isinstance(cpu, dict):
            print(f"gpu_check: the CPU run failed: {why}")
            return 1
        jax_res = None
        if importlib.util.find_spec("jax") is not None:
            jax_res, why = run_child("jax", tmp)
            if not isinstance(jax_res, dict):
                print(f"(jax on the GPU unavailable: {why})")
                jax_res = None
    print(f"GPU devices: {gpu['devices']}   backend: {gpu['backend']}")
    bad = 0
    for k in ("jit", "grad", "vmap", "pmap"):
        g, c = gpu[k], cpu[k]
        if k == "pmap" and gpu["pmap_n"] != cpu["pmap_n"]:   # (psum over other device counts)
            print(f"  pmap: {gpu['pmap_n']} GPU devices vs {cpu['pmap_n']} CPU: not comparable")
            continue
        err = float(np.max(np.abs(g - c)) / (np.max(np.abs(c)) + 1e-30))
        ok = err < 1e-4
        bad += not ok
        print(f"  {k:5s} GPU vs CPU: max rel. difference {err:.2e}  {'ok' if ok else 'DIFFERS'}")
    print("MLP 784-512-512-10, batch 256, jit(value_and_grad) + SGD:")
    for name, r in (("secant GPU", gpu), ("secant CPU", cpu), ("jax GPU", jax_res)):
        if r is not None:
            print(f"  {name:11s} first call {r['first'] * 1e3:8.1f} ms   step {r['step'] * 1e3:8.3f} "
                  "ms (median)")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())

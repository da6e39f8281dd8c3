"""Reverse mode figures (issue 3): transformation time, eager grad against autograd and
hand-written NumPy, jit(grad) against jax.jit(jax.grad). Prints numbers; not a test.

    .venv/bin/python bench/grad.py

autograd and jax are optional benchmark-only dependencies (`pip install autograd`); their
columns are left out when they are not importable."""
import gc
import importlib.util
import statistics
import tempfile
import time

import numpy as np

import secant
import secant.numpy as snp
from secant import transforms, tree_util
from secant.backends.errors import SecantError
import grad_programs as progs
from timing import import_jax, once_ms, per_call_us


def import_autograd():
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None, None
    return autograd, anp


def compare_us(fns, rounds=15, min_round_s=0.02):
    """Per-call µs of each fn, rounds interleaved (fn1, fn2, ..., fn1, fn2, ...), best round.

    This machine is shared and noisy (the same matmul varies 5x between seconds): interleaving
    exposes every candidate to the same interference and the best round is the least disturbed."""
    numbers = []
    for fn in fns:
        number = 1
        while _round_s(fn, number) < min_round_s:
            number *= 2
        numbers.append(number)
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, (fn, number) in enumerate(zip(fns, numbers)):
            best[i] = min(best[i], _round_s(fn, number) / number)
    return [b * 1e6 for b in best]


def _round_s(fn, number):
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - start


def load_source(source, name, tmpdir, tag):
    path = f"{tmpdir}/{tag}.py"
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(f"secant_bench_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


# --- transformation time --------------------------------------------------------------------------
TEMPLATES = [
    "v{i} = snp.sin(v{p}) + v{j}",
    "v{i} = v{p} * v{j} - 0.5",
    "v{i} = snp.tanh(v{p}) * 2.0",
    "v{i} = snp.maximum(v{p}, v{j})",
    "v{i} = snp.exp(snp.tanh(v{p}))",
]


def straight_line_source(n):
    """def f(x, y): n statements, each reading the previous value and an earlier one."""
    lines = ["import secant.numpy as snp", "", "", "def f(v0, v1):"]
    for i in range(2, n + 2):
        lines.append("    " + TEMPLATES[i % len(TEMPLATES)].format(i=i, p=i - 1,
                                                                    j=(i * 7919) % (i - 1)))
    lines.append(f"    return snp.sum(v{n + 1})")
    return "\n".join(lines) + "\n"


def transform_ms(fn, repeat, collect=True):
    """Median time of a full generate() (source, normalise, reverse, codegen, load)."""
    times = []
    for _ in range(repeat):
        transforms._generated.clear()
        gc.collect()
        if not collect:
            gc.disable()
        try:
            start = time.perf_counter()
            transforms.generate(fn, (0, 1), "grad")
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    transforms._generated.clear()
    return statistics.median(times) * 1e3


def bench_transform(tmpdir):
    print("grad: transformation time of straight-line functions (generate, cache cleared);")
    print("      'no gc': the same with Python's cyclic garbage collector paused")
    for n, repeat in ((10, 21), (100, 11), (1000, 5)):
        fn = load_source(straight_line_source(n), "f", tmpdir, f"straight_{n}")
        ms = transform_ms(fn, repeat)
        ms_nogc = transform_ms(fn, repeat, collect=False)
        gen = transforms.generate(fn, (0, 1), "grad")
        out_lines = len(secant.source(gen).splitlines())
        x = np.linspace(-1, 1, 4, dtype=np.float32)
        gen(x, x)    # the generated function runs
        transforms._generated.clear()
        print(f"  {n:5d} statements  {ms:9.2f} ms  {ms / n * 1e3:7.1f} µs/statement"
              f"   no gc {ms_nogc / n * 1e3:7.1f} µs/statement   ({out_lines} generated lines)")


# --- eager: chain of 50 sines ---------------------------------------------------------------------
def chain_grad(tmpdir, x, want):
    """secant.grad of the chain: the loop form if the transform supports it (and gets it right),
    else the same chain written out as 50 statements."""
    try:
        g = secant.grad(progs.sin_chain)
        got = float(g(x))
        if np.isclose(got, want, rtol=1e-4):
            return g, "for loop"
        problem = f"loop form gives {got!r}, expected {want!r}"
    except SecantError as e:
        problem = "loop form failed: " + str(e).splitlines()[0]
    src = ["import secant.numpy as snp", "", "", "def sin_chain(x):"]
    src += ["    x = snp.sin(x)"] * progs.CHAIN_LENGTH + ["    return x", ""]
    fn = load_source("\n".join(src), "sin_chain", tmpdir, "sin_chain")
    return secant.grad(fn), f"straight-line ({problem})"


def bench_sin_chain(tmpdir):
    print(f"grad: eager grad of {progs.CHAIN_LENGTH} nested snp.sin on a scalar")
    x = 0.5
    want = progs.sin_chain_grad_numpy(np.float64(x))
    g, form = chain_grad(tmpdir, x, want)
    print(f"  secant source: {form}")
    np.testing.assert_allclose(float(g(x)), want, rtol=1e-4)
    jg = secant.jit(g)
    jg(x)
    cands = [("secant.grad (eager)", lambda: g(x)),
             ("hand-written NumPy", lambda: progs.sin_chain_grad_numpy(np.float64(x)))]
    autograd, anp = import_autograd()
    if autograd is not None:
        def achain(x):
            for _ in range(progs.CHAIN_LENGTH):
                x = anp.sin(x)
            return x
        ag = autograd.grad(achain)
        np.testing.assert_allclose(float(ag(x)), want, rtol=1e-6)
        cands.append(("autograd.grad", lambda: ag(x)))
    cands.append(("secant.jit(secant.grad) steady", lambda: jg(x).block_until_ready()))
    times = compare_us([fn for _, fn in cands])
    rows = [(label, us) for (label, _), us in zip(cands, times)]
    secant_us = times[0]
    jax, jnp = import_jax()
    if jax is not None:
        def jchain(x):
            for _ in range(progs.CHAIN_LENGTH):
                x = jnp.sin(x)
            return x
        jgrad = jax.grad(jchain)
        rows.append(("jax.grad (un-jitted)", per_call_us(lambda: jgrad(x).block_until_ready())))
    _print_rows(rows, secant_us)


def _print_rows(rows, secant_us, unit="µs"):
    for label, us in rows:
        print(f"  {label:<34} {us:10.1f} {unit}   secant.grad / this {secant_us / us:6.2f}x")


# --- eager and jitted: MLP loss ---------------------------------------------------------------------
SIZES = (784, 512, 512, 10)
BATCH = 128


def mlp_data():
    rng = np.random.default_rng(0)
    params = {}
    for k, (m, n) in enumerate(zip(SIZES[:-1], SIZES[1:]), 1):
        params[f"w{k}"] = (rng.normal(size=(m, n)) / np.sqrt(m)).astype(np.float32)
        params[f"b{k}"] = (0.1 * rng.normal(size=n)).astype(np.float32)
    x = rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    return params, x, y


def _close(got, want):
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=2e-3, atol=2e-5,
                                   err_msg=k)


def bench_mlp_eager():
    print(f"grad: eager grad of an MLP loss, batch {BATCH}, {'-'.join(map(str, SIZES))}, tanh, "
          "softmax cross-entropy, float32, params dict")
    params, x, y = mlp_data()
    want = progs.mlp_loss_grad_numpy(params, x, y)
    g = secant.grad(progs.mlp_loss)
    _close(g(params, x, y), want)
    n_lines = len(secant.source(g).splitlines())
    print(f"  generated gradient: {n_lines} lines")
    sparams, sx, sy = (tree_util.tree_map(snp.asarray, a) for a in (params, x, y))
    cands = [("secant.grad (eager)", lambda: g(params, x, y)),
             ("secant.grad, secant.Array inputs", lambda: g(sparams, sx, sy)),
             ("hand-written NumPy", lambda: progs.mlp_loss_grad_numpy(params, x, y))]
    autograd, anp = import_autograd()
    if autograd is not None:
        ag = autograd.grad(progs.make_mlp_loss(anp))
        _close(ag(params, x, y), want)
        cands.append(("autograd.grad", lambda: ag(params, x, y)))
    times = compare_us([fn for _, fn in cands], rounds=9)
    rows = [(label, us / 1e3) for (label, _), us in zip(cands, times)]
    _print_rows(rows, times[0] / 1e3, "ms")


def bench_mlp_jit():
    print("grad: jit(grad) of the MLP loss")
    params, x, y = mlp_data()
    want = progs.mlp_loss_grad_numpy(params, x, y)
    transforms._generated.clear()
    transform = once_ms(lambda: secant.grad(progs.mlp_loss))
    jg = secant.jit(secant.grad(progs.mlp_loss))
    first = once_ms(lambda: secant.block_until_ready(jg(params, x, y)))
    dparams, dx, dy = secant.device_put((params, x, y))
    _close(jg(dparams, dx, dy), want)
    cands = [lambda: secant.block_until_ready(jg(dparams, dx, dy))]
    print(f"  {'transform (secant.grad)':<34} {transform:10.2f} ms")
    line = f"  {'first call (trace + compile)':<34} {first:10.2f} ms"
    jax, jnp = import_jax()
    if jax is not None:
        jjg = jax.jit(jax.grad(progs.make_mlp_loss(jnp)))
        jfirst = once_ms(lambda: jax.block_until_ready(jjg(params, x, y)))
        jp, jx, jy = jax.device_put((params, x, y))
        _close(jjg(jp, jx, jy), want)
        cands.append(lambda: jax.block_until_ready(jjg(jp, jx, jy)))
        line += f"   jax {jfirst:10.2f} ms   secant/jax {first / jfirst:5.2f}x"
    print(line)
    times = [t / 1e3 for t in compare_us(cands, rounds=9)]
    line = f"  {'steady state':<34} {times[0]:10.3f} ms"
    if jax is not None:
        line += f"   jax {times[1]:10.3f} ms   secant/jax {times[0] / times[1]:5.2f}x"
    else:
        line += "   (jax not importable: no comparison)"
    print(line)


def main():
    import os
    threads = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    print(f"grad benchmarks ({os.cpu_count()} CPUs, BLAS threads: {threads or 'default'}; "
          "best of interleaved rounds)")
    with tempfile.TemporaryDirectory(prefix="secant_bench_grad_") as tmpdir:
        bench_transform(tmpdir)
        print()
        bench_sin_chain(tmpdir)
    print()
    bench_mlp_eager()
    print()
    bench_mlp_jit()


if __name__ == "__main__":
    main()

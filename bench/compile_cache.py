"""The persistent compilation cache (issue 19): the first call of `jit(grad(mlp_loss))` in a
fresh process with no cache, with an empty cache directory (compile and store), and with a warm
one (read the stored executable), beside jax's own persistent cache when jax is installed (its
thresholds set to 0 so that it stores this program too). Each figure is the median over
REPEATS fresh processes; every process first runs one tiny jitted function, so imports and the
client are not counted.

    PYTHONPATH=/tmp/benchpkgs .venv/bin/python bench/compile_cache.py
"""
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import first_call

REPEATS = 3
MODES = ("no cache", "empty cache", "warm cache")


def _child(lib, cache_dir):
    import numpy as np
    if lib == "secant":
        import secant as lib_
        import secant.numpy as np_like
        from secant.backends import compilation_cache
        if cache_dir:
            lib_.config.update("compilation_cache_dir", cache_dir)
    else:
        import jax as lib_
        import jax.numpy as np_like
        if cache_dir:
            lib_.config.update("jax_compilation_cache_dir", cache_dir)
            lib_.config.update("jax_persistent_cache_min_compile_time_secs", 0)
            lib_.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    lib_.jit(lambda a: a + 1)(np.ones(3, np.float32)).block_until_ready()
    mod = first_call._load(first_call.MLP_SOURCE, f"mlp_loss_{lib}", np_like)
    args = first_call._inputs()
    before = compilation_cache.stats["hits"] if lib == "secant" else None
    start = time.perf_counter()
    out = lib_.jit(lib_.grad(mod.mlp_loss))(*args)
    lib_.block_until_ready(out)
    total = time.perf_counter() - start
    hits = compilation_cache.stats["hits"] - before if lib == "secant" else None
    return {"total": total, "hits": hits}


def _run_child(lib, cache_dir, script=__file__):
    """The JSON line a fresh process running `script --child lib cache_dir` prints last."""
    out = subprocess.run([sys.executable, script, "--child", lib, cache_dir or ""],
                         env=first_call.child_env(),
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{lib}: {out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(repeats=REPEATS):
    """{lib: {mode: median seconds}}"""
    libs = ["secant"] + (["jax"] if importlib.util.find_spec("jax") is not None else [])
    runs = {lib: {m: [] for m in MODES} for lib in libs}
    first_call.warm_up(libs)        # (each library's bytecode cached: first_call.child_env)
    for _ in range(repeats):
        for lib in libs:
            d = tempfile.mkdtemp(prefix=f"compile_cache_{lib}_")
            try:
                runs[lib]["no cache"].append(_run_child(lib, None)["total"])
                runs[lib]["empty cache"].append(_run_child(lib, d)["total"])
                warm = _run_child(lib, d)
                if lib == "secant" and warm["hits"] != 1:
                    raise RuntimeError(f"the warm run did not read the cache: {warm}")
                runs[lib]["warm cache"].append(warm["total"])
            finally:
                shutil.rmtree(d, ignore_errors=True)
    return {lib: {m: statistics.median(v) for m, v in per.items()} for lib, per in runs.items()}


def rows(results=None):
    """Summary rows for run_all: (name, secant s, anchor name, anchor s, target ratio)."""
    results = results or measure()
    jax = results.get("jax")
    out = []
    for mode in MODES[1:]:
        out.append((f"first call, jit(grad(mlp_loss)), {mode}", results["secant"][mode],
                    f"jax, {mode}" if jax else None, jax[mode] if jax else None, 1.0))
    out.append(("warm cache vs no cache (secant)", results["secant"]["warm cache"],
                "secant, no cache", results["secant"]["no cache"], None))
    return out


def main():
    print(f"compile cache: first call of jit(grad(mlp_loss)), fresh processes "
          f"(medians of {REPEATS})")
    results = measure()
    for mode in MODES:
        line = f"  {mode:<12} secant {results['secant'][mode] * 1e3:8.1f} ms"
        if "jax" in results:
            j = results["jax"][mode]
            line += f"   jax {j * 1e3:8.1f} ms   secant/jax {results['secant'][mode] / j:5.2f}x"
        print(line)
    return results


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], sys.argv[3] or None)))
    else:
        main()

"""The warm persistent cache's first call of `jit(grad(mlp_loss))` (issue 19), split: in fresh
processes whose cache directory already holds the program (secant's and jax's, jax's thresholds
at 0), the time from `jit(grad(...))(*args)` to its return ("call": transform, trace, cache key,
reading and deserialising the executable) and from there to the result ("run": the program's
first run, in XLA's threads), each in three clocks: wall, the process's CPU (all threads) and
the main thread's CPU. On a machine shared with other work the CPU clocks move far less than
the wall clock; the main thread's is what the library's own Python costs.

Medians of REPEATS fresh processes per library, the libraries interleaved; every process first
runs one tiny jitted function (imports and the client not counted, as bench/compile_cache.py).

    PYTHONPATH=/tmp/benchpkgs .venv/bin/python bench/compile_cache_split.py
"""
import importlib.util
import json
import shutil
import statistics
import sys
import tempfile
import time

import compile_cache
import first_call

REPEATS = 9
CLOCKS = ("wall", "cpu", "main thread")


def _clocks():
    return time.perf_counter(), time.process_time(), time.thread_time()


def _child(lib, cache_dir):
    import numpy as np
    if lib == "secant":
        import secant as lib_
        import secant.numpy as np_like
        lib_.config.update("compilation_cache_dir", cache_dir)
    else:
        import jax as lib_
        import jax.numpy as np_like
        lib_.config.update("jax_compilation_cache_dir", cache_dir)
        lib_.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        lib_.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    lib_.jit(lambda a: a + 1)(np.ones(3, np.float32)).block_until_ready()
    mod = first_call._load(first_call.MLP_SOURCE, f"mlp_loss_{lib}", np_like)
    args = first_call._inputs()
    a = _clocks()
    out = lib_.jit(lib_.grad(mod.mlp_loss))(*args)
    b = _clocks()
    lib_.block_until_ready(out)
    c = _clocks()
    return {k: {"call": b[i] - a[i], "run": c[i] - b[i]} for i, k in enumerate(CLOCKS)}


def _run_child(lib, cache_dir):
    return compile_cache._run_child(lib, cache_dir, __file__)


def measure(repeats=REPEATS):
    """{lib: {clock: {"call", "run", "total": median seconds}}}"""
    libs = ["secant"] + (["jax"] if importlib.util.find_spec("jax") is not None else [])
    dirs = {lib: tempfile.mkdtemp(prefix=f"cache_split_{lib}_") for lib in libs}
    try:
        for lib in libs:            # (fills the cache)
            _run_child(lib, dirs[lib])
        runs = {lib: [] for lib in libs}
        for _ in range(repeats):
            for lib in libs:
                runs[lib].append(_run_child(lib, dirs[lib]))
    finally:
        for d in dirs.values():
            shutil.rmtree(d, ignore_errors=True)
    return {lib: {k: {"call": statistics.median(r[k]["call"] for r in rs),
                      "run": statistics.median(r[k]["run"] for r in rs),
                      "total": statistics.median(r[k]["call"] + r[k]["run"] for r in rs)}
                  for k in CLOCKS} for lib, rs in runs.items()}


def main():
    print(f"warm compile cache, first call of jit(grad(mlp_loss)) split (medians of {REPEATS} "
          "fresh processes, ms)")
    results = measure()
    for k in CLOCKS:
        line = f"  {k:<12}"
        for lib, r in results.items():
            line += f"  {lib} {r[k]['total'] * 1e3:7.1f} (call {r[k]['call'] * 1e3:6.1f}, " \
                    f"run {r[k]['run'] * 1e3:6.1f})"
        if "jax" in results:
            line += f"   secant/jax {results['secant'][k]['total'] / results['jax'][k]['total']:.2f}x"
        print(line)
    return results


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], sys.argv[3])))
    else:
        main()

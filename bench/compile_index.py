"""The warm persistent cache's first call of `jit(grad(mlp_loss))` (issue 19) with and without
the cache's index (secant/compile_index.py: a record of the trace found by an early key, so a
hit skips the transform under jit, the trace and the emission), split into phases as
bench/first_call.py's: transform (grad's eager derivative at grad(), and under jit its staged
one), trace, emission, compile (here: reading and deserialising the executable) and other (the
early key, reading the record, arguments), then the first run. Main thread CPU time (the
library's own Python; XLA's threads are not in it), medians of REPEATS fresh processes, index
on and off interleaved, each process after one tiny jitted call.

    .venv/bin/python bench/compile_index.py
"""
import json
import shutil
import statistics
import sys
import tempfile
import time

import compile_cache
import first_call

REPEATS = 7
PHASES = ("transform", "trace", "emission", "compile", "other", "run")


def _child(mode, cache_dir):
    import numpy as np
    import secant
    import secant.numpy as snp
    from secant import api, compile_index, transforms
    from secant.backends import runtime, tracer
    from secant.transformer import functionalize
    first_call.CLOCK = time.thread_time
    compile_index.enabled[0] = mode == "on"
    secant.config.update("compilation_cache_dir", cache_dir)
    secant.jit(lambda a: a + 1)(np.ones(3, np.float32)).block_until_ready()
    phases = first_call._Phases()
    phases.wrap(api.JitFunction, "_trace", "trace")
    for owner, attr in ((transforms, "generate"), (transforms, "desugar"),
                        (functionalize, "functionalize")):
        phases.wrap(owner, attr, "transform")
    phases.wrap(tracer.Trace, "module", "emission")
    phases.wrap(runtime, "Executable", "compile")
    mod = first_call._load(first_call.MLP_SOURCE, "mlp_loss_secant", snp)
    args = first_call._inputs()
    hits = compile_index.stats["hits"]
    a = time.thread_time()
    out = secant.jit(secant.grad(mod.mlp_loss))(*args)
    b = time.thread_time()
    secant.block_until_ready(out)
    c = time.thread_time()
    split = {k: phases.acc[k] for k in PHASES[:4]}
    split["other"] = (b - a) - sum(split.values())
    split["run"] = c - b
    split["index hits"] = compile_index.stats["hits"] - hits
    return split


def measure(repeats=REPEATS):
    """{"on"/"off": {phase: median s, "total"}}"""
    d = tempfile.mkdtemp(prefix="compile_index_")
    try:
        compile_cache._run_child("on", d, __file__)        # (fills the cache and the index)
        runs = {"off": [], "on": []}
        for _ in range(repeats):
            for mode in runs:
                r = compile_cache._run_child(mode, d, __file__)
                if (mode == "on") != (r["index hits"] == 1):
                    raise RuntimeError(f"index {mode}: {r}")
                runs[mode].append(r)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    out = {}
    for mode, rs in runs.items():
        out[mode] = {k: statistics.median(r[k] for r in rs) for k in PHASES}
        out[mode]["total"] = statistics.median(sum(r[k] for k in PHASES) for r in rs)
    return out


def main():
    print(f"warm compile cache, first call of jit(grad(mlp_loss)), main thread CPU ms "
          f"(medians of {REPEATS} fresh processes)")
    results = measure()
    for mode in ("off", "on"):
        r = results[mode]
        print(f"  index {mode:<4} total {r['total'] * 1e3:6.1f}  (" + ", ".join(
            f"{k} {r[k] * 1e3:.1f}" for k in PHASES) + ")")
    return results


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], sys.argv[3])))
    else:
        main()

"""First call of a jitted function (issue 19: <= 1.0x jax's): `jit(grad(mlp_loss))` and a
200-op function, from `jit(...)` to the result, in a fresh process whose library already ran one
tiny jitted function (so imports and the PJRT client are not counted, for either library).
Secant's time is split into its phases (time spent in each, nested phases subtracted):

    transform   grad's source rewrite, desugaring and functionalizing (transforms, transformer/)
    trace       running the (generated) Python on tracers (the rest of jit's trace)
    emission    writing the StableHLO text (Trace.module)
    parse       secant's own MLIR parse + verify (runtime.verify: for programs with host
                callbacks, or to explain a module XLA refused)
    compile     XLA compile, its parse of the text included (runtime.Executable, less the above)
    other       the call's remainder (argument handling, transfers, the run itself). For
                jit(grad(mlp_loss)) it is almost all the program's first run: ~37 ms CPU
                against ~7 ms for later runs, in XLA's CPU runtime (perf: oneDNN's Xbyak
                JIT writing its GEMM kernels on their first use, YNNPACK's dot); jax's
                first run of the same program costs the same (42-62 ms vs 6-8 ms)

jax's is split into its XLA compile (compiler.backend_compile_and_load) and the rest.

Both also report "gc": the time Python's cyclic collector ran during the call (inside the
phases above, not beside them). A full collection walks every tracked object (~41k after
`import secant` and a tiny jit, ~98k for jax; 10-25 ms CPU here), and where the one due after a
process's imports lands moves a total by that much: before secant imported jaxlib's MLIR
dialect bindings lazily (runtime.verify), its imports left one due that the first real call
paid (gc 22-28 ms of it); jax's and now secant's land outside the call (gc ~1 ms).

Each figure is the median of REPEATS fresh processes, the libraries interleaved, each process
with its modules' bytecode cached as an installed package has it (child_env). Wall clock by
default; SECANT_BENCH_CPU=1: each process's CPU time, all its threads (XLA's included), which
a machine shared with other work disturbs far less.

    PYTHONPATH=/tmp/benchpkgs .venv/bin/python bench/first_call.py
"""
import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPEATS = 5
CLOCK = time.process_time if os.environ.get("SECANT_BENCH_CPU") else time.perf_counter
PHASES = ("transform", "trace", "emission", "parse", "compile", "other")
CASES = ("jit(grad(mlp_loss))", "jit(200-op function)")
SIZES = (784, 512, 512, 10)
BATCH = 128


def _ops200_source():
    """f(x): 40 lines of 5 elementwise ops each, written out (no loop for jit to roll)."""
    lines = ["def f(x):"]
    for i in range(40):
        lines.append(f"    x = np_like.tanh(x * {1 + i / 1000:.3f} + 0.01) - x * 0.001")
    lines.append("    return x")
    return "\n".join(lines) + "\n"


def _load(source, name, np_like):
    """`source` as module `name`, from one fixed path (the StableHLO text names its file: the
    same program in each process, as a user's script)."""
    folder = os.path.join(tempfile.gettempdir(), "secant_bench_first_call")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ".py")
    tmp = path + f".{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(source)
    os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.np_like = np_like
    return mod


MLP_SOURCE = """
def mlp_loss(params, x, y):
    for w, b in params[:-1]:
        x = np_like.tanh(x @ w + b)
    w, b = params[-1]
    return np_like.mean((x @ w + b - y) ** 2)
"""


def _inputs():
    import numpy as np
    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m),
               np.zeros(n, np.float32)) for m, n in zip(SIZES[:-1], SIZES[1:])]
    x = rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)
    y = rng.normal(size=(BATCH, SIZES[-1])).astype(np.float32)
    return params, x, y


class _Collector:
    """Time spent in Python's cyclic collector (gc.callbacks), from start() on."""

    def __init__(self):
        self.total, self.began = 0.0, None

    def start(self):
        gc.callbacks.append(self._note)

    def _note(self, phase, info):
        if phase == "start":
            self.began = CLOCK()
        elif self.began is not None:
            self.total += CLOCK() - self.began
            self.began = None


class _Phases:
    """Exclusive time per phase: a wrapped function's time, less that of wrapped callees."""

    def __init__(self):
        self.acc = dict.fromkeys(PHASES, 0.0)
        self.stack = []

    def wrap(self, owner, attr, phase):
        fn = getattr(owner, attr)

        def timed(*args, **kwargs):
            now = CLOCK()
            if self.stack:
                self.acc[self.stack[-1][0]] += now - self.stack[-1][1]
            self.stack.append([phase, now])
            try:
                return fn(*args, **kwargs)
            finally:
                end = CLOCK()
                name, start = self.stack.pop()
                self.acc[name] += end - start
                if self.stack:
                    self.stack[-1][1] = end
        setattr(owner, attr, timed)


def _child_secant(case):
    import numpy as np
    import secant
    import secant.numpy as snp
    from secant import api, transforms
    from secant.backends import runtime, tracer
    from secant.transformer import functionalize
    secant.jit(lambda a: a + 1)(np.ones(3, np.float32)).block_until_ready()
    phases = _Phases()
    phases.wrap(api.JitFunction, "_trace", "trace")
    for owner, attr in ((transforms, "generate"), (transforms, "desugar"),
                        (functionalize, "functionalize")):
        phases.wrap(owner, attr, "transform")
    phases.wrap(tracer.Trace, "module", "emission")
    phases.wrap(runtime, "verify", "parse")
    phases.wrap(runtime, "Executable", "compile")
    collector = _Collector()
    total = _first_call(case, "secant", snp, secant.jit, secant.grad, secant.block_until_ready,
                        collector)
    split = dict(phases.acc)
    split["other"] = total - sum(split.values())
    return {"total": total, **split, "gc": collector.total}


def _child_jax(case):
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax._src import compiler
    jax.jit(lambda a: a + 1)(np.ones(3, np.float32)).block_until_ready()
    phases = _Phases()      # (jax's XLA compile, for the split; the rest is its trace and run)
    phases.wrap(compiler, "backend_compile_and_load", "compile")
    collector = _Collector()
    total = _first_call(case, "jax", jnp, jax.jit, jax.grad, jax.block_until_ready, collector)
    return {"total": total, "compile": phases.acc["compile"], "gc": collector.total}


def _first_call(case, tag, numpy_module, jit, grad, block, collector):
    """Seconds from building the jitted function of `case` to its first result (`collector`
    started at the start: the collector's time within them)."""
    import numpy as np
    if case == CASES[0]:
        mod = _load(MLP_SOURCE, f"mlp_loss_{tag}", numpy_module)
        args = _inputs()
        collector.start()
        start = CLOCK()
        block(jit(grad(mod.mlp_loss))(*args))
    else:
        mod = _load(_ops200_source(), f"ops200_{tag}", numpy_module)
        args = (np.linspace(-1, 1, 1000, dtype=np.float32),)
        collector.start()
        start = CLOCK()
        block(jit(mod.f)(*args))
    return CLOCK() - start


def _have_jax():
    return importlib.util.find_spec("jax") is not None


# where the children keep the bytecode of the modules they import (outside the source tree)
PYCACHE = os.path.join(tempfile.gettempdir(), "secant_bench_pycache")


def child_env():
    """The environment of a child process: no persistent compilation cache, and the modules'
    bytecode cached (PYTHONPYCACHEPREFIX), whatever PYTHONDONTWRITEBYTECODE says here, as an
    installed package runs. jax's wheel comes with its bytecode; without this, secant's modules
    that the first call imports lazily (ad/custom_checks.py, secant/gen_index.py, ...) were
    compiled from source inside the timed call: ~5 of jit(grad(mlp_loss))'s 40 ms of transform
    (CPU; Python's compile of their source is ~8 ms). The first child of each library writes
    the cache (warm_up: its run is not counted), so both read theirs from one cache."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPYCACHEPREFIX=PYCACHE)
    for var in ("PYTHONDONTWRITEBYTECODE", "SECANT_COMPILATION_CACHE_DIR",
                "JAX_COMPILATION_CACHE_DIR"):
        env.pop(var, None)
    return env


def warm_up(libs, case=CASES[0]):
    """One uncounted child per library (child_env: its modules' bytecode written)."""
    for lib in libs:
        _run_child(lib, case)


def _run_child(lib, case):
    out = subprocess.run([sys.executable, __file__, "--child", lib, case], env=child_env(),
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{lib} {case}: {out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(repeats=REPEATS):
    """{case: {"secant": {phase: median s}, "jax": median s or None}}"""
    libs = ["secant"] + (["jax"] if _have_jax() else [])
    warm_up(libs)
    results = {}
    for case in CASES:
        runs = {lib: [] for lib in libs}
        for _ in range(repeats):
            for lib in libs:
                runs[lib].append(_run_child(lib, case))
        sec = {k: statistics.median(r[k] for r in runs["secant"])
               for k in ("total",) + PHASES + ("gc",)}
        jax = {k: statistics.median(r[k] for r in runs["jax"]) if "jax" in runs else None
               for k in ("total", "compile", "gc")}
        results[case] = {"secant": sec, "jax": jax["total"], "jax compile": jax["compile"],
                         "jax gc": jax["gc"]}
    return results


def rows(results=None):
    """Summary rows for run_all: (name, secant s, anchor name, anchor s, target ratio)."""
    results = results or measure()
    return [(f"first call, {case}", r["secant"]["total"], "jax.jit",
             r["jax"], 1.0) for case, r in results.items()]


def main():
    clock = "CPU time" if CLOCK is time.process_time else "wall clock"
    print(f"first call: jit(...) to the result, fresh processes (medians of {REPEATS}, {clock})")
    results = measure()
    for case, r in results.items():
        s = r["secant"]
        split = "  ".join(f"{p} {s[p] * 1e3:.1f}" for p in PHASES)
        line = f"  {case:<24} secant {s['total'] * 1e3:8.1f} ms  ({split}; gc {s['gc'] * 1e3:.1f})"
        if r["jax"] is not None:
            line += f"\n  {'':<24} jax    {r['jax'] * 1e3:8.1f} ms  (compile " \
                    f"{r['jax compile'] * 1e3:.1f}, the rest {(r['jax'] - r['jax compile']) * 1e3:.1f}; " \
                    f"gc {r['jax gc'] * 1e3:.1f})" \
                    f"   secant/jax {s['total'] / r['jax']:5.2f}x"
        print(line)
    return results


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child = _child_secant if sys.argv[2] == "secant" else _child_jax
        print(json.dumps(child(sys.argv[3])))
    else:
        main()

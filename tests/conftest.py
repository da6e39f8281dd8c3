"""Shared test setup: hypothesis profiles, the x64 fixture, and the order in which `make test`
hands files to its workers."""
import gc
import os

import pytest
from hypothesis import settings

import secant

# Small by default so `make test` stays fast; `make test-thorough` sets HYPOTHESIS_PROFILE=thorough.
settings.register_profile("default", max_examples=25, deadline=None)
settings.register_profile("thorough", max_examples=10000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Python's cyclic collector less often (default thresholds 700, 10, 10): a worker holds every
# transform it built (syntax trees: millions of long-lived objects), which each young and full
# collection walks again. Measured (Dec 6, one process, the same 580 tests of composition_sweep,
# corpus and grad_rules, every 7th; gc.callbacks timing): collector CPU 7.4 -> 3.3 s, the
# process 55.3 -> 48.3 CPU s (machine at load ~12: the process figure is noisy). Tests that
# need garbage gone call gc.collect() themselves; memory is bounded by the thresholds.
gc.set_threshold(100_000, 50, 10)


@pytest.fixture(autouse=True, scope="module")
def _compiled_programs_per_file():
    """Each test file's compiled programs dropped when it ends (secant.clear_caches), so a
    worker's memory and live XLA executables stay those of one file: a worker of a full run
    grew to ~5 GB, and XLA's compiler crashed there twice near the end of a run."""
    yield
    secant.clear_caches()
    _frozen_after_each_file()


def _frozen_after_each_file():
    """What a file leaves alive, moved out of the cyclic collector's sight (gc.freeze) once a
    full collection has freed the file's garbage: a worker keeps every transform and test
    module it built (millions of objects), which each later full collection walked again, so
    a test's gc.collect() and the collector's own full passes cost more the later a file ran
    (test_function_cache's 10 gc.collect tests: 10-13 s each in a full `make test`). Now
    each full collection walks only the current file's objects. Garbage cycles among what an
    earlier file left alive are not freed (those objects are kept for the worker's life
    anyway: test modules, remembered transforms); `gc.unfreeze()` undoes it."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="module")
def fast_compiles():
    """XLA compiles with LLVM's optimisation off in the default profile (XLA's HLO passes run
    as always): ~40% cheaper a compile (bench/pytest_cpu.py: test_library_cases 118 -> 90 CPU s
    of compiles). For files whose checks are tolerance-based (ulps do not matter) and whose CPU
    time is mostly compiles; they take it with `pytestmark = pytest.mark.usefixtures(
    "fast_compiles")`. `make test-thorough` compiles at XLA's default level."""
    if os.environ.get("HYPOTHESIS_PROFILE") == "thorough":
        yield
        return
    secant.config.update("backend_optimization_level", 0)
    try:
        yield
    finally:
        secant.config.update("backend_optimization_level", None)


@pytest.fixture
def x64():
    """Runs the test with 64-bit types enabled, restoring 32-bit defaults afterwards."""
    secant.config.update("enable_x64", True)
    try:
        yield
    finally:
        secant.config.update("enable_x64", False)


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64_or_not(request):
    """Runs the test twice: with 32-bit and with 64-bit types."""
    secant.config.update("enable_x64", request.param)
    try:
        yield
    finally:
        secant.config.update("enable_x64", False)


# `make test` gives whole files to its workers (pytest-xdist --dist loadfile, queued in collection
# order: --no-loadscope-reorder). Queued by test count, as xdist does by default, a file of a few
# slow tests (subprocesses: the examples, the distributed launches) starts last and keeps one
# worker busy while the other idles; queued heaviest first, the last files are the short ones.
# Seconds of each file: its tests' durations in a full `-n 2` run (`--durations=0`, Dec 2026,
# summed per file), scaled by 0.4 (that run shared its 2 cores with other work). Any other file
# is taken to cost PER_TEST seconds a test. Measured again (Dec 5, bench/pytest_cpu.py, one
# process, the files named here): its CPU seconds scaled by 0.85, which maps them onto an idle
# `make test`'s durations (odeint's third derivative: 86.5 CPU s measured, 67 s in make test):
# odeint_compositions 63 -> 142, others3_compositions 32 -> 73, and files the table lacked
# (reliability_final, others9_*). A stale figure changes only the order (the costliest
# files first, so that no long file starts last), never what runs.
CPU_SECONDS = {
    "test_library_cases.py": 342, "test_composition_sweep.py": 195, "test_corpus.py": 158,
    "test_library_shapes.py": 150, "test_deep_compositions.py": 84, "test_run_jax_programs.py": 67,
    "test_odeint_compositions.py": 142, "test_composition_orders.py": 53,
    "test_eager_memory.py": 42, "test_distributed.py": 42, "test_scipy_special.py": 34,
    "test_others3_compositions.py": 73, "test_linalg_final.py": 31, "test_limits.py": 29,
    "test_others3_autograd_style.py": 24, "test_grad_rules.py": 24, "test_examples.py": 21,
    "test_indexing.py": 21, "test_linalg_lu.py": 21, "test_others4_compositions.py": 19,
    "test_control_flow_compositions.py": 18, "test_effects16_compositions.py": 18,
    "test_odeint_second_order.py": 16, "test_scan2_compositions.py": 15,
    "test_vmap_index_parts.py": 14, "test_structural_primitives.py": 14,
    "test_nested_loop_orders.py": 13, "test_random_dists.py": 13, "test_random_programs.py": 12,
    "test_random_programs2.py": 24,
    "test_compilation_cache.py": 12, "test_jvp.py": 12, "test_random.py": 12,
    "test_fields15_compositions.py": 11, "test_dist21_failures.py": 10,
    "test_others5_sciml.py": 10, "test_numpy_reductions.py": 9, "test_vmap.py": 8,
    "test_sci15_odeint.py": 8, "test_others6_compositions.py": 8, "test_others15_models.py": 8,
    "test_others5_optim_control.py": 8, "test_reliability_final.py": 10,
    "test_others9_models.py": 7, "test_others9_compositions.py": 6, "test_others9_classroom.py": 6,
    "test_others9_science.py": 6, "test_error_catalogue.py": 8, "test_others3_science.py": 8,
    "test_others8_solvers.py": 8, "test_elementwise.py": 7,
}
PER_TEST = 0.05


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return          # (one process: files in their usual order)
    first, count = {}, {}
    for i, item in enumerate(items):
        first.setdefault(item.path, i)
        count[item.path] = count.get(item.path, 0) + 1

    def cost(path):
        return CPU_SECONDS.get(path.name, PER_TEST * count[path])

    # (stable: each file's tests keep their order, so module-level random draws are unchanged)
    items.sort(key=lambda item: (-cost(item.path), first[item.path]))

"""Shared test setup: hypothesis profiles, the x64 fixture, and the order in which `make test`
hands files to its workers."""
import os

import pytest
from hypothesis import settings

import secant

# Small by default so `make test` stays fast; `make test-thorough` sets HYPOTHESIS_PROFILE=thorough.
settings.register_profile("default", max_examples=25, deadline=None)
settings.register_profile("thorough", max_examples=10000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


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
# CPU seconds of each file (user + sys, its subprocesses included) in one process running the
# suite in collection order (Dec 2026, bench/pytest_cpu.py); test_run_jax_programs,
# test_scipy_special, test_linalg_lu and test_structural_primitives (after the files that run
# measured) and the first four (test_library_cases with one jit compile a case) from a run of each
# file alone. Any other file is taken to cost PER_TEST seconds a test. A stale figure changes
# only the order, never what runs.
CPU_SECONDS = {
    "test_library_cases.py": 176, "test_corpus.py": 111, "test_composition_sweep.py": 66,
    "test_library_shapes.py": 48, "test_run_jax_programs.py": 33,
    "test_deep_compositions.py": 30, "test_eager_memory.py": 23,
    "test_scipy_special.py": 23, "test_composition_orders.py": 20,
    "test_distributed.py": 20, "test_linalg_lu.py": 19, "test_limits.py": 18,
    "test_examples.py": 16, "test_indexing.py": 15, "test_grad_rules.py": 14,
    "test_structural_primitives.py": 14, "test_compilation_cache.py": 13,
    "test_elementwise.py": 12, "test_fields15_compositions.py": 11,
    "test_error_catalogue.py": 10, "test_linalg_final.py": 9, "test_lax.py": 9,
    "test_catalogue_fixes.py": 9, "test_grad_api.py": 8,
    "test_control_flow_compositions.py": 8, "test_dist21_failures.py": 8,
    "test_containers_values.py": 7, "test_dist21_gpu_fallback.py": 7,
    "test_appends_higher_order.py": 6, "test_lax_loops_second_order.py": 5,
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

"""A pytest plugin that keeps every SAMPLE_EVERY-th test of each file (default 4), for measuring
the suite's per-file cost in a fraction of its time with bench/pytest_cpu.py (issue 19):

    SAMPLE_EVERY=4 PYTEST_CPU_OUT=/tmp/cpu PYTHONPATH=bench .venv/bin/python -m pytest -q \\
        -p pytest_sample -p pytest_cpu tests/test_a*.py

A file's estimate is its sampled CPU seconds times (its tests / those sampled); rough for a file
of a few slow tests (a sample of 1 in 4 may catch or miss its slowest)."""
import os


def pytest_collection_modifyitems(config, items):
    every = int(os.environ.get("SAMPLE_EVERY", "4"))
    seen, keep, dropped = {}, [], []
    for item in items:
        k = seen.get(item.path, 0)
        seen[item.path] = k + 1
        (keep if k % every == 0 else dropped).append(item)
    config.hook.pytest_deselected(items=dropped)
    items[:] = keep

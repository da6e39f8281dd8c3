"""A pytest plugin that writes each test's CPU seconds (user + sys of the process and of its
finished subprocesses, setup to teardown) and wall seconds, one tab-separated line a test, as it
goes (an interrupted run keeps what ran), to $PYTEST_CPU_OUT.<worker>; then, with --files,
sums them per file:

    PYTEST_CPU_OUT=/tmp/cpu PYTHONPATH=bench .venv/bin/python -m pytest -q -p pytest_cpu tests
    .venv/bin/python bench/pytest_cpu.py /tmp/cpu       # CPU and wall seconds per file

CPU time, not wall time, is what compares on a shared machine (tests/conftest.py's CPU_SECONDS
come from it)."""
import collections
import glob
import os
import resource
import sys
import time

_start = {}
_out = None


def _cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def pytest_runtest_logstart(nodeid, location):
    _start[nodeid] = (_cpu(), time.perf_counter())


def pytest_runtest_logfinish(nodeid, location):
    global _out
    prefix = os.environ.get("PYTEST_CPU_OUT")
    if not prefix or nodeid not in _start:
        return
    cpu, wall = _start.pop(nodeid)
    if _out is None:
        _out = open(f"{prefix}.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}", "w")
    _out.write(f"{nodeid}\t{_cpu() - cpu:.4f}\t{time.perf_counter() - wall:.4f}\n")
    _out.flush()


def per_file(prefix):
    cpu, wall, count = collections.Counter(), collections.Counter(), collections.Counter()
    for path in glob.glob(prefix + ".*"):
        for line in open(path):
            nodeid, c, w = line.rstrip("\n").split("\t")
            name = nodeid.split("::")[0]
            cpu[name] += float(c)
            wall[name] += float(w)
            count[name] += 1
    return cpu, wall, count


if __name__ == "__main__":
    cpu, wall, count = per_file(sys.argv[1])
    print(f"{sum(cpu.values()):.1f} CPU s over {sum(count.values())} tests")
    for name, c in cpu.most_common():
        print(f"{c:8.1f} {wall[name]:8.1f} {count[name]:6d}  {name}")

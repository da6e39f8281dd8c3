"""A pytest plugin that writes each test's CPU seconds (user + sys of the process and of its
finished subprocesses, setup to teardown), wall seconds and XLA compiles of this process (how
many, their CPU seconds, and how many compiled a program text this process had compiled
before), one tab-separated line a test, as it goes (an interrupted run keeps what ran), to
$PYTEST_CPU_OUT.<worker>; then, with --files, sums them per file:

    PYTEST_CPU_OUT=/tmp/cpu PYTHONPATH=bench .venv/bin/python -m pytest -q -p pytest_cpu tests
    .venv/bin/python bench/pytest_cpu.py /tmp/cpu       # seconds and compiles per file

CPU time, not wall time, is what compares on a shared machine (tests/conftest.py's CPU_SECONDS
come from it)."""
import collections
import glob
import hashlib
import os
import resource
import sys
import time

_start = {}
_out = None
_compiles = [0, 0.0, 0]         # compiles, their CPU seconds, repeats of a text compiled before
_seen = set()


def _cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _counted(init):
    def counted(self, text, *args, **kwargs):
        key = hashlib.sha256(text.encode()).digest()
        start = time.process_time()
        try:
            return init(self, text, *args, **kwargs)
        finally:
            _compiles[0] += 1
            _compiles[1] += time.process_time() - start
            _compiles[2] += key in _seen
            _seen.add(key)
    return counted


def pytest_configure(config):
    from secant.backends import runtime
    for cls in (runtime.Executable, runtime.ReplicatedExecutable):
        cls.__init__ = _counted(cls.__init__)


def pytest_runtest_logstart(nodeid, location):
    _start[nodeid] = (_cpu(), time.perf_counter(), list(_compiles))


def pytest_runtest_logfinish(nodeid, location):
    global _out
    prefix = os.environ.get("PYTEST_CPU_OUT")
    if not prefix or nodeid not in _start:
        return
    cpu, wall, compiles = _start.pop(nodeid)
    if _out is None:
        _out = open(f"{prefix}.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}", "w")
    n, c, r = (now - then for now, then in zip(_compiles, compiles))
    _out.write(f"{nodeid}\t{_cpu() - cpu:.4f}\t{time.perf_counter() - wall:.4f}"
               f"\t{n}\t{c:.4f}\t{r}\n")
    _out.flush()


def per_file(prefix):
    """{file: [CPU s, wall s, tests, compiles, compile CPU s, repeated compiles]}"""
    out = collections.defaultdict(lambda: [0.0, 0.0, 0, 0, 0.0, 0])
    for path in glob.glob(prefix + ".*"):
        for line in open(path):
            nodeid, *figures = line.rstrip("\n").split("\t")
            row = out[nodeid.split("::")[0]]
            row[2] += 1
            for i, f in zip((0, 1, 3, 4, 5), figures):
                row[i] += float(f)
    return out


if __name__ == "__main__":
    rows = per_file(sys.argv[1])
    total = [sum(r[i] for r in rows.values()) for i in range(6)]
    print(f"{total[0]:.1f} CPU s over {total[2]} tests; {total[3]:.0f} compiles, "
          f"{total[4]:.1f} CPU s, {total[5]:.0f} of a text compiled before")
    print("   CPU s   wall s  tests  compiles  compile s  repeats  file")
    for name, r in sorted(rows.items(), key=lambda kv: -kv[1][0]):
        print(f"{r[0]:8.1f} {r[1]:8.1f} {r[2]:6d} {r[3]:9.0f} {r[4]:10.1f} {r[5]:8.0f}  {name}")

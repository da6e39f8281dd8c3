"""A pytest plugin that writes each test's CPU seconds (user + sys of the process and of its
finished subprocesses, setup to teardown), wall seconds and XLA compiles of this process (how
many, their CPU seconds, and how many compiled a program text this process had compiled
before), one tab-separated line a test, as it goes (an interrupted run keeps what ran), to
$PYTEST_CPU_OUT.<worker>; then, with --files, sums them per file:

    PYTEST_CPU_OUT=/tmp/cpu PYTHONPATH=bench .venv/bin/python -m pytest -q -p pytest_cpu tests
    .venv/bin/python bench/pytest_cpu.py /tmp/cpu       # seconds and compiles per file
    .venv/bin/python bench/pytest_cpu.py --table /tmp/cpu   # tests/conftest.py's CPU_SECONDS

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
_controller = []    # (true in pytest-xdist's controller: its runtest hooks report the workers'
                    # tests again, with its own CPU figures; only the workers write)


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
    distributed = getattr(config.option, "dist", "no") != "no" and getattr(config.option, "tx", None)
    if distributed and not hasattr(config, "workerinput"):
        _controller.append(True)
        return
    from secant.backends import runtime
    for cls in (runtime.Executable, runtime.ReplicatedExecutable):
        cls.__init__ = _counted(cls.__init__)


def pytest_runtest_logstart(nodeid, location):
    if _controller:
        return
    _start[nodeid] = (_cpu(), time.perf_counter(), list(_compiles))


def pytest_runtest_logfinish(nodeid, location):
    global _out
    prefix = os.environ.get("PYTEST_CPU_OUT")
    if not prefix or nodeid not in _start:
        return
    cpu, wall, compiles = _start.pop(nodeid)
    if _out is None:
        _out = open(f"{prefix}.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}", "w")  # noqa: SIM115
    n, c, r = (now - then for now, then in zip(_compiles, compiles))
    _out.write(f"{nodeid}\t{_cpu() - cpu:.4f}\t{time.perf_counter() - wall:.4f}"
               f"\t{n}\t{c:.4f}\t{r}\n")
    _out.flush()


def per_file(prefix):
    """{file: [CPU s, wall s, tests, compiles, compile CPU s, repeated compiles]}"""
    out = collections.defaultdict(lambda: [0.0, 0.0, 0, 0, 0.0, 0])
    paths = glob.glob(prefix + ".*")
    if any(p.startswith(prefix + ".gw") for p in paths):    # (a .main beside workers' files:
        paths = [p for p in paths if not p.endswith(".main")]   # an xdist controller's, before
    for path in paths:                                          # it stopped writing one)
        with open(path) as lines:
            for line in lines:
                nodeid, *figures = line.rstrip("\n").split("\t")
                row = out[nodeid.split("::")[0]]
                row[2] += 1
                for i, f in zip((0, 1, 3, 4, 5), figures):
                    row[i] += float(f)
    return out


def table(prefix, conftest="tests/conftest.py", width=100):
    """tests/conftest.py's CPU_SECONDS from a run's figures: each measured file's CPU seconds
    (at least 1), files not in the run keep their present figure, and so does a worker's last
    file where it was higher (that file may be unfinished); heaviest first, as Python lines of
    at most `width` characters."""
    import ast
    with open(conftest) as f:
        tree = ast.parse(f.read())
    old = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
               and getattr(n.targets[0], "id", None) == "CPU_SECONDS")
    seconds = dict(old)
    last = set()            # each worker's last file: perhaps cut short (a run still going)
    for path in glob.glob(prefix + ".gw*") or glob.glob(prefix + ".main"):
        with open(path) as lines:
            for line in lines:
                name = line.split("::")[0]
        last.add(os.path.basename(name))
    for name, r in per_file(prefix).items():
        name = os.path.basename(name)
        sec = max(1, round(r[0]))
        seconds[name] = max(sec, seconds.get(name, 0)) if name in last else sec
    items = sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))
    lines, line = ["CPU_SECONDS = {"], "   "
    for name, sec in items:
        entry = f' "{name}": {sec},'
        if len(line) + len(entry) > width:
            lines.append(line)
            line = "   "
        line += entry
    lines += [line, "}"]
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--table":        # (pytest_cpu.py --table PREFIX: CPU_SECONDS, updated)
        print(table(sys.argv[2]))
        sys.exit()
    rows = per_file(sys.argv[1])
    total = [sum(r[i] for r in rows.values()) for i in range(6)]
    print(f"{total[0]:.1f} CPU s over {total[2]} tests; {total[3]:.0f} compiles, "
          f"{total[4]:.1f} CPU s, {total[5]:.0f} of a text compiled before")
    print("   CPU s   wall s  tests  compiles  compile s  repeats  file")
    for name, r in sorted(rows.items(), key=lambda kv: -kv[1][0]):
        print(f"{r[0]:8.1f} {r[1]:8.1f} {r[2]:6d} {r[3]:9.0f} {r[4]:10.1f} {r[5]:8.0f}  {name}")

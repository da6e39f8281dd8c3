"""Records JAX's outcome of each (program, composition) of the deep compositions battery
(tests/user_programs/deep.py) into tests/user_programs/deep_expected.py: the oracle
tests/test_deep15r_compositions.py compares secant against, so the tests never import jax. The
battery's programs are written against secant (`import secant as jax`); here every `secant`
module name is JAX's module while they load. Run with the JAX environment (jax 0.10.2, CPU):

    /tmp/jaxenv/bin/python bench/deep_oracle.py            # every program
    /tmp/jaxenv/bin/python bench/deep_oracle.py NAME ...   # only these programs again
"""
import contextlib
import importlib
import importlib.util
import io
import pathlib
import pprint
import sys

import jax

jax.config.update("jax_enable_x64", True)
for sub in ("numpy", "lax", "random", "tree_util", "nn", "scipy.special", "scipy.linalg",
            "scipy.stats", "experimental.ode", "example_libraries.optimizers",
            "example_libraries.stax", "flatten_util", "dtypes", "debug"):
    importlib.import_module("jax." + sub)
for name, module in list(sys.modules.items()):
    if name == "jax" or name.startswith("jax."):
        sys.modules["secant" + name[3:]] = module

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import user_programs
from user_programs import deep

OUT = ROOT / "tests" / "user_programs" / "deep_expected.py"
only = [a for a in sys.argv[1:] if a != "--resume"]
resume = "--resume" in sys.argv        # keep what the file has, record the programs it lacks
kept = {}
if only or resume:
    spec = importlib.util.spec_from_file_location("deep_expected", OUT)
    recorded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorded)
    kept = recorded.EXPECTED
expected = {}


def jitted(run):
    """the composition's value computed under one jax.jit (one compile, not one per primitive
    as op by op: ~5x faster a record), or op by op where jit cannot trace it (Python control
    flow on values), whose exception is then the one recorded"""
    try:
        return jax.jit(run)()
    except Exception:          # noqa: BLE001 -- eager says what JAX does
        return run()


def write():
    text = pprint.pformat(expected, width=100, sort_dicts=False)
    OUT.write_text(
        f'"""JAX {jax.__version__}\'s outcome of each (program, composition) of deep.py, written '
        'by\nbench/deep_oracle.py: ("value", [(dtype, shape, values)]) or ("raises", [exception\n'
        'classes]). Do not edit by hand."""\n'
        "from math import inf, nan  # noqa: F401\n\n"
        f"EXPECTED = {text}\n")


for name in deep.PROGRAMS:
    case = user_programs.BY_NAME[name]
    print(name, file=sys.stderr, flush=True)
    for comp in deep.COMPOSITIONS:
        if (only and name not in only or resume) and (name, comp) in kept:
            expected[name, comp] = kept[name, comp]
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            expected[name, comp] = deep.outcome(case, comp, jitted)
        if expected[name, comp][0] == "raises":
            print("   ", comp, "raises", expected[name, comp][1][0], file=sys.stderr)
    write()          # after each program: a long run can be read while it goes on
print(len(expected), "outcomes recorded")

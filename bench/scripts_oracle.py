"""Records JAX's trajectory of each whole script of the eighth battery
(tests/user_programs/scripts/s_*.py) into tests/user_programs/scripts_expected.py: the oracle
tests/test_explore15q_scripts.py compares secant against, so the tests never import jax; with
`--libraries`, the ninth's (tests/user_programs/libraries/l_*.py, library-shaped code) into
tests/user_programs/libraries_expected.py, for tests/test_explore15r_libraries.py. Run with the
JAX environment (jax 0.10.2, CPU):

    /tmp/jaxenv/bin/python bench/scripts_oracle.py [--libraries] [SCRIPT ...]

(with script names: only those recorded again, the others kept as they are in the file)
"""
import contextlib
import importlib.util
import io
import pathlib
import pprint
import sys

import jax

ROOT = pathlib.Path(__file__).resolve().parent.parent
# the loader alone (tests/user_programs/__init__.py imports secant)
spec = importlib.util.spec_from_file_location(
    "user_scripts", ROOT / "tests" / "user_programs" / "scripts" / "__init__.py")
scripts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scripts)

battery = "libraries" if "--libraries" in sys.argv else "scripts"
OUT = ROOT / "tests" / "user_programs" / f"{battery}_expected.py"
expected, only = {}, [a for a in sys.argv[1:] if a != "--libraries"]
if only:
    spec = importlib.util.spec_from_file_location("scripts_expected", OUT)
    recorded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorded)
    kept = recorded.EXPECTED
for name in scripts.names(battery):
    if only and name not in only and name in kept:
        expected[name] = kept[name]
        continue
    with contextlib.redirect_stdout(io.StringIO()):
        expected[name] = scripts.run(name, "jax")
text = pprint.pformat(expected, width=100, sort_dicts=False)
OUT.write_text(
    f'"""JAX {jax.__version__}\'s trajectory of each script of tests/user_programs/{battery}/, '
    'written by\nbench/scripts_oracle.py: [(path in the returned pytree, dtype, shape, values)]. '
    'Do not edit by\nhand."""\n'
    "from math import inf, nan  # noqa: F401\n\n"
    f"EXPECTED = {text}\n")
print(len(expected), "scripts recorded")

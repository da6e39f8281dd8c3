"""Records JAX's outcome of each (program, transform) of the numerics battery
(tests/user_programs/numerics.py) into tests/user_programs/numerics_expected.py: the oracle the
tests compare secant against, so the tests never import jax. Run with the JAX environment:

    /tmp/jaxenv/bin/python bench/numerics_oracle.py            # every program
    /tmp/jaxenv/bin/python bench/numerics_oracle.py NAME ...   # only these programs again
"""
import importlib.util
import os
import pathlib
import pprint
import sys

os.environ["SECANT_NUMERICS_ORACLE"] = "jax"
HERE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "user_programs"
spec = importlib.util.spec_from_file_location("numerics", HERE / "numerics.py")
numerics = importlib.util.module_from_spec(spec)
spec.loader.exec_module(numerics)

only = sys.argv[1:]          # program names: only theirs recorded again, the others kept
if only:                     # (read as a file: the package imports secant)
    spec = importlib.util.spec_from_file_location("numerics_expected",
                                                  HERE / "numerics_expected.py")
    recorded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorded)
    kept = recorded.EXPECTED
expected = {(case.name, t): numerics.outcome(case, t) if not only or case.name in only
            else kept[case.name, t] for case, t in numerics.table()}
text = pprint.pformat(expected, width=100, sort_dicts=False)
(HERE / "numerics_expected.py").write_text(
    '"""JAX 0.10.2\'s outcome of each (program, transform) of numerics.py, written by\n'
    'bench/numerics_oracle.py: ("value", [(dtype, weak_type, shape, values)]) or ("raises",\n'
    '[exception classes]). Do not edit by hand."""\n'
    "from math import inf, nan  # noqa: F401\n\n"
    f"EXPECTED = {text}\n")
print(len(expected), "outcomes recorded")

"""The error catalogue (tests/error_catalogue_cases.py): each bad or awkward input raises the
exception type JAX raises there, with a message naming the user's file and line, or gives the
right value. Cases that can crash a process (threads, limits, the command line) run together in
one child process with a memory limit.

KNOWN_FAILURES (tests/error_catalogue_known.py) is a strict xfail table: a case fixed there fails
here until its entry is removed.
"""
import pytest

import error_catalogue_cases as catalogue
from error_catalogue_known import KNOWN_FAILURES


def _param(cid):
    if cid in KNOWN_FAILURES:
        return pytest.param(cid, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[cid]))
    return cid


@pytest.fixture(scope="module")
def child_results():
    ids = [cid for cid, case in catalogue.CASES.items() if catalogue.in_child(case)]
    return catalogue.run_in_child(ids)


def test_known_failures_name_cases():
    assert not set(KNOWN_FAILURES) - set(catalogue.CASES), "entries for cases that do not exist"


def test_catalogue_size():
    groups = {case.group for case in catalogue.CASES.values()}
    assert len(catalogue.CASES) >= 300
    assert groups >= {"syntax", "shape", "api", "tracer", "custom", "leak", "threads", "limits"}


@pytest.mark.parametrize("cid", [_param(cid) for cid in catalogue.CASES])
def test_case(cid, request):
    case = catalogue.CASES[cid]
    if catalogue.in_child(case):
        outcome, detail = request.getfixturevalue("child_results")[cid]
    else:
        outcome, detail = catalogue.classify(case)
    expected = case.expect.what if isinstance(case.expect, catalogue.Value) else \
        f"{case.expect} naming {case.location}"
    assert outcome == "correct", f"{outcome} (expected {expected}): {detail}"


# --- the exception types themselves ------------------------------------------------------------
def test_errors_module_has_jax_names():
    import secant
    from secant import errors
    for name in ("ConcretizationTypeError", "TracerBoolConversionError",
                 "TracerIntegerConversionError", "TracerArrayConversionError",
                 "NonConcreteBooleanIndexError", "KeyReuseError"):
        cls = getattr(errors, name)
        assert issubclass(cls, secant.SecantError) and issubclass(cls, TypeError), name
    assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
    assert issubclass(errors.NonConcreteBooleanIndexError, IndexError)
    assert errors.ConcretizationTypeError is secant.ConcretizationError
    assert issubclass(errors.ShapeError, TypeError) and issubclass(errors.ShapeError, ValueError)


@pytest.mark.parametrize("builtin", [TypeError, ValueError])
def test_shape_mismatch_caught_by_either_builtin(builtin):
    """JAX raises TypeError for jnp.add of (3,) and (4,) but ValueError for (2, 3) and (4,);
    NumPy raises ValueError for both: an `except` for either catches secant's."""
    import secant.numpy as snp
    for a, b in [((3,), (4,)), ((2, 3), (4,))]:
        with pytest.raises(builtin, match="incompatible shapes"):
            snp.ones(a) + snp.ones(b)


def test_conversions_under_jit_raise_jax_types():
    import numpy as np

    import secant
    from secant import errors
    cases = [(lambda x: bool(x > 0), errors.TracerBoolConversionError),
             (lambda x: int(x), errors.TracerIntegerConversionError),
             (lambda x: [1.0, 2.0][x.astype(int)], errors.TracerIntegerConversionError),
             (lambda x: np.asarray(x), errors.TracerArrayConversionError),
             (lambda x: float(x), errors.ConcretizationTypeError)]
    for f, cls in cases:
        with pytest.raises(cls, match="traced value"):
            secant.jit(f)(1.0)

"""Issue 15, seventh battery (numerics15o): numerics and dtype semantics against JAX's.
tests/user_programs/numerics.py holds the programs (weak types and promotion, the x64 flag,
integer division and shifts, float16/bfloat16 through grad and jit, NaN/inf corners, ties,
0-d and size-0 shapes, clamped gathers and dropped scatters, complex derivatives); each runs
eager, under jit, grad, vmap, jvp and their pairs, and its dtype, weak type, shape and values
(or the exception) must be JAX 0.10.2's, recorded by bench/numerics_oracle.py into
tests/user_programs/numerics_expected.py (jax is not imported here).
`.venv/bin/python bench/user_programs.py --numerics` prints the table.
Below: the judge's own checks, and a named regression test for each difference found.
"""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from user_programs import numerics
from user_programs.numerics_expected import EXPECTED

# (program, transform) -> why secant differs from JAX today; strict: a fix removes its entry
KNOWN = {}


def test_every_pair_has_an_oracle():
    assert sorted((c.name, t) for c, t in numerics.table()) == sorted(EXPECTED)
    assert len(numerics.CASES) >= 50


@pytest.mark.parametrize("case", numerics.CASES, ids=lambda c: c.name)
def test_program_matches_jax(case):
    wrong = {}
    for t in case.transforms:
        if (case.name, t) not in EXPECTED:
            continue
        letter, why = numerics.judge(EXPECTED[case.name, t], numerics.outcome(case, t))
        if letter not in ".j":
            wrong[t] = f"{letter} {why}"
    known = {t for (name, t) in KNOWN if name == case.name}
    assert set(wrong) == known, wrong


def _value(dtype, weak, shape, values):
    return ("value", [(dtype, weak, shape, values)])


def test_judge_tells_every_difference():
    jax = _value("float32", False, (2,), [1.0, float("nan")])
    assert numerics.judge(jax, _value("float32", False, (2,), [1.0, float("nan")]))[0] == "."
    assert numerics.judge(jax, _value("float64", False, (2,), [1.0, float("nan")]))[0] == "D"
    assert numerics.judge(jax, _value("float32", True, (2,), [1.0, float("nan")]))[0] == "w"
    assert numerics.judge(jax, _value("float32", False, (2,), [1.0, 0.0]))[0] == "W"
    assert numerics.judge(jax, _value("float32", False, (1, 2), [[1.0, 0.0]]))[0] == "W"
    assert numerics.judge(jax, _value("float32", False, (2,), [1.0, float("inf")]))[0] == "W"
    assert numerics.judge(jax, ("raises", ["SecantTypeError", "SecantError"]))[0] == "R"
    assert numerics.judge(jax, ("raises", ["KeyError"]))[0] == "E"
    refused = ("raises", ["TypeError"])
    assert numerics.judge(refused, ("raises", ["SecantTypeError", "SecantError"]))[0] == "j"
    assert numerics.judge(refused, jax)[0] == "X"


def test_python_int_wraps_into_narrow_ints_as_jax():
    """int8 + 300 is 45 and uint8 + -1 is 0 in JAX (the int is an int32 first, then wraps);
    secant raised NumPy's OverflowError."""
    x = snp.array([1, 2], snp.int8)
    for f in (lambda x: x + 300, secant.jit(lambda x: x + 300)):
        y = f(x)
        assert y.dtype == np.int8 and np.asarray(y).tolist() == [45, 46]
    u = snp.array([1, 2], snp.uint8)
    assert np.asarray(u + -1).tolist() == [0, 1] and np.asarray(u * -1).tolist() == [255, 254]


def test_python_int_beyond_default_int_overflows_as_jax():
    """JAX raises OverflowError for a Python int outside int32 (x64 off), even added to a
    float16 array; secant names the line."""
    for x in (snp.array([1, 2], snp.int32), snp.array([1.0], snp.float16)):
        with pytest.raises(OverflowError, match="does not fit int32"):
            x + 2 ** 40

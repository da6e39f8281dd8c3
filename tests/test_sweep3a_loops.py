"""The composition sweep's loops (scan, fori_loop, cond, Python loops; issue 15, section 4)
under compositions of depth 3: a value, or a clear refusal naming the user's line."""
import inspect

import pytest

import composition_sweep_cases as cases
from secant.backends.errors import UnsupportedError


def test_fori_refusal_without_a_batch_size_names_the_loop(x64):
    """jacrev(grad(hessian(fori))): a vmapped helper's only batched argument is the cotangent of
    fori_loop's empty ys, so it has no batch size to give the zeros it builds: a refusal naming
    the user's fori_loop line (was an internal 'shape entries must be an integer, got None')."""
    with pytest.raises(UnsupportedError, match="no arrays in it") as info:
        cases.check("fori", ["hessian", "grad", "jacrev"])
    line = inspect.getsourcelines(cases.fori)[1] + 1
    assert f"composition_sweep_cases.py:{line}" in str(info.value)

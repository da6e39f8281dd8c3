"""The composition sweep's loops (scan, fori_loop, cond, Python loops; issue 15, section 4)
under compositions of depth 3: a value, or a clear refusal naming the user's line."""
import numpy as np

import composition_sweep_cases as cases


def test_fori_batched_helper_takes_its_callers_batch_size(x64):
    """jacrev(grad(hessian(fori))): a vmapped helper's only batched argument is the cotangent of
    fori_loop's empty ys, which holds no array: the helper takes its caller's batch size (a
    keyword, vectorize.build) for the zeros it builds (was refused: 'no arrays in it'). Each
    layer against float64 central differences of the one inside it."""
    inner = cases.check("fori", ["hessian", "grad"])
    got = cases.check("fori", ["hessian", "grad", "jacrev"])
    assert inner.shape == (3,) and got.shape == (3, 3)
    assert np.all(np.isfinite(got)) and np.any(got != 0)

"""Fixes of error-catalogue cases (issue 16) that the catalogue itself does not pin down:
nested functions rebinding the enclosing function's locals (nonlocal), negative and out-of-range
axes under vmap, vjp cotangent checks, lax validation under every transform."""
import numpy as np
import pytest
from numpy.testing import assert_allclose

import secant
import secant.numpy as snp

HERE = __file__


def line_of(tag):
    with open(HERE) as f:
        for k, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {tag}"):
                return k
    raise AssertionError(tag)


def fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


# --- nonlocal ------------------------------------------------------------------------------------
def two_rebinds(x):
    z = x
    w = x + 1.0

    def update(a):
        nonlocal z, w
        if a > 0:
            z = z * a
        w = w * z
    update(3.0)
    update(2.0)
    return z + w


def test_nonlocal_rebinding_is_differentiated(x64):
    for x in (0.5, 2.0):
        assert_allclose(secant.grad(two_rebinds)(x), fd(two_rebinds, x), rtol=1e-6)
        assert_allclose(secant.jit(secant.grad(two_rebinds))(x), fd(two_rebinds, x), rtol=1e-6)
    xs = np.array([0.5, 2.0, -1.0])
    assert_allclose(secant.vmap(two_rebinds)(xs), [two_rebinds(x) for x in xs])
    assert_allclose(secant.vmap(secant.grad(two_rebinds))(xs), [fd(two_rebinds, x) for x in xs],
                    rtol=1e-6)


def rebinds_and_returns(x):
    z = x

    def double():
        nonlocal z  # rebinds-and-returns
        z = z * 2.0
        return 1.0
    double()
    return z


@pytest.mark.parametrize("transform", ["grad", "vmap"])
def test_nonlocal_rebinding_not_rewritten_is_refused(transform):
    """A nested def rebinding a local that cannot be rewritten to return it: an error naming
    its nonlocal line, never a derivative that misses the rebinding."""
    with pytest.raises(secant.SecantError) as info:
        getattr(secant, transform)(rebinds_and_returns)(np.ones(2, np.float32)
                                                        if transform == "vmap" else 1.0)
    assert f"{HERE}:{line_of('rebinds-and-returns')}" in str(info.value)
    assert "nonlocal" in str(info.value)

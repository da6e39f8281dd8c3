"""Shape-reading derivative rules (lax.expand_dims / squeeze, outer, dynamic_update_slice) read
their operand's shape with snp.shape, so a Python float operand (grad of grad) is fine: third
derivatives against closed forms."""
import pytest

import secant
import secant.numpy as snp
from secant import lax


def cube_expand(x):
    return snp.sum(lax.expand_dims(x * x, (0,))) * x


def cube_squeeze(x):
    return snp.sum(lax.squeeze(snp.reshape(x * x, (1,)), (0,))) * x


def fourth_outer(x):
    return snp.sum(snp.outer(x * x, x)) * x


def cube_update(x):
    return snp.sum(lax.dynamic_update_slice(snp.zeros(3), snp.reshape(x * x * x, (1,)), (1,)))


# (f, its second and third derivatives at x)
CASES = {"expand_dims": (cube_expand, lambda x: 6 * x, lambda x: 6.0),
         "squeeze": (cube_squeeze, lambda x: 6 * x, lambda x: 6.0),
         "outer": (fourth_outer, lambda x: 12 * x * x, lambda x: 24 * x),
         "dynamic_update_slice": (cube_update, lambda x: 6 * x, lambda x: 6.0)}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("x", [1.5, -0.7])
def test_second_and_third_derivative(name, x):
    f, d2, d3 = CASES[name]
    assert float(secant.grad(secant.grad(f))(x)) == pytest.approx(d2(x), rel=1e-5)
    assert float(secant.grad(secant.grad(secant.grad(f)))(x)) == pytest.approx(d3(x), rel=1e-5)

"""Walks the primitive registry: every primitive is complete in every table that exists."""
import numpy as np
import pytest

from secant.backends import core, primitives  # noqa: F401  (registers every primitive)
from secant.backends.lowering import LOWERINGS

REQUIRED = {
    # the foundation issue's list, by primitive name
    "neg", "abs", "sign", "floor", "ceil", "round", "sqrt", "rsqrt", "exp", "exp2", "log", "log1p",
    "expm1", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "logistic", "erf", "is_finite", "add", "sub", "mul", "div", "rem", "pow",
    "max", "min", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "not",
    "shift_left", "shift_right_logical", "shift_right_arithmetic", "select", "clamp",
    "convert_element_type", "bitcast_convert_type", "broadcast_in_dim", "reshape", "transpose",
    "rev", "squeeze", "expand_dims", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod",
    "argmax", "argmin", "reduce_and", "reduce_or", "dot_general", "slice", "dynamic_slice",
    "dynamic_update_slice", "gather", "scatter", "scatter_add", "concatenate", "pad", "iota",
    "cumsum", "cummax", "cumprod", "sort",
}


def test_every_required_primitive_is_registered():
    missing = REQUIRED - set(core.PRIMITIVES)
    assert not missing, f"primitives missing from the registry: {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(core.PRIMITIVES))
def test_every_primitive_has_a_lowering(name):
    assert name in LOWERINGS, f"primitive {name} has no StableHLO lowering"


def test_no_lowering_without_a_primitive():
    assert not set(LOWERINGS) - set(core.PRIMITIVES)


@pytest.mark.parametrize("name", sorted(core.PRIMITIVES))
def test_primitive_definition_is_complete(name):
    p = core.PRIMITIVES[name]
    assert p.name == name
    assert callable(p.shape_rule) and callable(p.impl)
    assert p.weak in ("inputs", "first", "rest", "never", "param")
    assert isinstance(p.differentiable, bool)


def test_comparisons_and_integer_ops_are_marked_non_differentiable():
    for name in ("eq", "lt", "and", "not", "shift_left", "is_finite", "argmax", "iota", "floor"):
        assert not core.PRIMITIVES[name].differentiable, name
    for name in ("add", "sin", "dot_general", "gather", "scatter_add", "sort", "cumsum"):
        assert core.PRIMITIVES[name].differentiable, name


def test_shaped_array_hash_and_equality():
    a = core.ShapedArray((2, 3), np.float32)
    assert a == core.ShapedArray([2, 3], "float32") and hash(a) == hash(core.ShapedArray((2, 3), np.float32))
    assert a != a.update(weak_type=True)
    assert a.str_short() == "float32[2,3]"

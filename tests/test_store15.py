"""Python state and conversions inside transformed functions (issue 15): a traced value's
.item()/.tolist() under jit, a function returning None or strings under grad/jit/vmap."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant.backends.errors import ConcretizationTypeError, SecantTypeError


def _item(x):
    return x.item() * 2.0


def _tolist(x):
    return x.tolist()


@pytest.mark.parametrize("fn, arg", [(_item, 1.0), (_tolist, np.ones(2, np.float32))])
def test_item_and_tolist_of_traced_value_under_jit_name_the_line(fn, arg):
    # before: AttributeError 'Tracer' object has no attribute 'item'
    with pytest.raises(ConcretizationTypeError, match=r"test_store15.py:1[26]"):
        secant.jit(fn)(snp.asarray(arg))


def test_item_of_concrete_value_still_works_eagerly():
    assert _item(snp.asarray(1.5)) == 3.0
    assert _tolist(snp.asarray([1.0, 2.0])) == [1.0, 2.0]


def _none(x):
    return None


def _text(x):
    return "a"


def _texts(x):
    return ["a", "b"]


@pytest.mark.parametrize("fn", [_none, _text, _texts])
def test_grad_of_non_numeric_output_says_so(fn):
    # before: "dtype object is not supported by secant" (a None output read as an array)
    with pytest.raises(SecantTypeError, match="Gradient only defined for scalar-output "
                                              r"functions\. Output was (None|'a'|\['a', 'b'\])"):
        secant.grad(fn)(1.0)


def test_jit_and_vmap_of_none_return_none():
    assert secant.jit(_none)(1.0) is None
    assert secant.vmap(_none)(snp.ones(2)) is None

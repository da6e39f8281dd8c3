"""Inputs of a dtype JAX refuses, or promotes, at secant's library functions (found by a sweep
of jax.scipy.special and jax.nn over complex, int, bool and float16 inputs against JAX 0.10.2):
each raised JAX's exception type under jit but computed eagerly, some silently wrong (i0 of a
complex number was a real number; lax.logistic of int32 was int32 zeros)."""
import numpy as np
import pytest

import secant
import secant.nn as nn
import secant.scipy.special as sp
from secant import lax

INTS = np.array([1, 2, 3], np.int32)
COMPLEX = np.array([0.7 - 0.4j, 0.2 + 0.1j], np.complex64)


@pytest.mark.parametrize("op", ["exp", "log", "sin", "tanh", "sqrt", "logistic", "erf",
                                "lgamma", "digamma", "floor"])
@pytest.mark.parametrize("wrap", ["eager", "jit"])
def test_a_lax_unary_op_refuses_integers_eagerly_as_under_jit(op, wrap):
    """JAX's lax.exp(int32) is a TypeError ("exp does not accept dtype int32"); eagerly secant
    ran NumPy's kernel (np.exp of int32 is float64; scipy's expit rounds to int32 zeros)."""
    f = getattr(lax, op)
    with pytest.raises(TypeError, match=op):
        (secant.jit(f) if wrap == "jit" else f)(INTS)


@pytest.mark.parametrize("f", [nn.sigmoid, nn.silu, nn.swish], ids=["sigmoid", "silu", "swish"])
def test_sigmoid_of_integers_is_a_type_error_as_jax(f):
    with pytest.raises(TypeError, match="logistic"):
        f(INTS)
    np.testing.assert_allclose(np.asarray(f(INTS * 1.0)), np.asarray(f(INTS.astype(np.float32))))


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e"])
def test_modified_bessel_functions_refuse_complex_input(name):
    """i0 of a complex array was a real array (|z| read for z); JAX's is a TypeError."""
    f = getattr(sp, name)
    with pytest.raises(TypeError, match=name):
        f(COMPLEX)
    with pytest.raises(TypeError, match=name):
        f(0.7 - 0.4j)
    with pytest.raises(TypeError, match=name):
        secant.jit(f)(COMPLEX)


@pytest.mark.parametrize("name", ["entr", "kl_div", "rel_entr"])
def test_entropies_refuse_complex_input(name):
    f = getattr(sp, name)
    args = (COMPLEX,) if name == "entr" else (COMPLEX, COMPLEX)
    with pytest.raises(ValueError, match=f"{name} does not support complex"):
        f(*args)


@pytest.mark.parametrize("name", ["entr", "logit"])
def test_booleans_promote_to_floats(name):
    """JAX's entr(True) is -0.0 and logit([True, False]) is [inf, -inf]; secant negated the
    bool array (NumPy: TypeError)."""
    f = getattr(sp, name)
    b = np.array([True, False])
    want = f(b.astype(np.float32))
    got = f(b)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_array_equal(np.asarray(secant.jit(f)(b)), np.asarray(want))


def test_relu6_of_integers_is_float_as_jax():
    """JAX's relu6 is minimum(maximum(x, 0), 6.): an int32 x gives float32 (secant: int32)."""
    got = nn.relu6(np.array([1, 7, -2], np.int32))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), [1.0, 6.0, 0.0])
    assert nn.relu6(np.array([1.0, 7.0], np.float16)).dtype == np.float16

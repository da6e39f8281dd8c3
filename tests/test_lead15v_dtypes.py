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


import secant.numpy as snp  # noqa: E402

REAL_ONLY = {"copysign": TypeError, "fabs": TypeError, "frexp": TypeError,
             "heaviside": TypeError, "hypot": ValueError, "isneginf": ValueError,
             "isposinf": ValueError, "ldexp": ValueError, "signbit": ValueError}


@pytest.mark.parametrize("name", sorted(REAL_ONLY))
def test_functions_of_a_sign_or_exponent_refuse_complex_input(name):
    """JAX refuses these for complex input; secant computed them on the real part or |z|
    (copysign(1+1j, 1.0) was 1.414, hypot(1j, 2) was 2.236, signbit(-1j) False)."""
    f = getattr(snp, name)
    args = (COMPLEX,) if name in ("fabs", "frexp", "isneginf", "isposinf", "signbit") else \
        (COMPLEX, np.int32(2) if name == "ldexp" else COMPLEX)
    with pytest.raises(REAL_ONLY[name], match=f"{name} does not support complex"):
        f(*args)
    with pytest.raises(REAL_ONLY[name], match=f"{name} does not support complex"):
        secant.jit(f)(*args)


def test_float_power_of_complex_stays_complex():
    """float_power(z, 2) was float32 (the imaginary part dropped); NumPy's and JAX's is complex."""
    got = snp.float_power(COMPLEX, 2)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), np.float_power(COMPLEX.astype(complex), 2),
                               rtol=1e-6)
    g = secant.grad(lambda z: snp.real(snp.float_power(z, 2.0)))(1.0 + 1.0j)
    np.testing.assert_allclose(complex(g), 2 - 2j + 4j, rtol=1e-6)    # conj(d/dz z^2) = 2 conj z


def test_searchsorted_of_complex_is_lexicographic():
    """NumPy orders complex numbers by real then imaginary part; secant's comparisons read real
    parts only (searchsorted gave [2, 1, 0] for JAX's [3, 0, 0]); now in NumPy's order."""
    a = np.array([0.2 + 0.1j, 0.7 - 0.4j, 0.7 + 0.4j], np.complex64)
    np.testing.assert_array_equal(np.asarray(snp.searchsorted(a, COMPLEX)),
                                  np.searchsorted(a, COMPLEX))
    np.testing.assert_array_equal(np.asarray(snp.searchsorted(a, COMPLEX)), [1, 0])


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_array_api_cumulative_functions_need_an_axis_above_one_dimension(name):
    f = getattr(snp, name)
    with pytest.raises(ValueError, match="axis must be given"):
        f(np.ones((2, 3)))
    np.testing.assert_array_equal(np.asarray(f(np.ones((2, 3)) * 2, axis=1)),
                                  np.cumsum(np.ones((2, 3)) * 2, axis=1) if name == "cumulative_sum"
                                  else np.cumprod(np.ones((2, 3)) * 2, axis=1))


def test_a_python_complex_argument_is_an_array_to_grad():
    """grad at a Python complex number passed it to the derivative as a number, so a method
    read on it failed (AttributeError: 'complex' object has no attribute 'astype')."""
    def f(z):
        return snp.real(snp.asarray(z).astype(snp.complex64) ** 2)
    for g in (secant.grad(f), secant.jit(secant.grad(f))):
        np.testing.assert_allclose(complex(g(1.5 + 1j)), 3 + 2j, rtol=1e-6)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like"])
def test_like_constants_take_dtype_and_shape_under_every_transform(name):
    """jnp.zeros_like(x, dtype=...) / (x, shape=...) ran eagerly but every transform refused it
    ("bad arguments for zeros_like: unexpected keyword argument 'dtype'")."""
    like = getattr(snp, name)
    fill = 0.0 if name != "ones_like" else 1.0
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)

    def f(x):
        return snp.sum((like(x, dtype=snp.int32) * 0 + fill) * x ** 2) + \
            snp.sum(like(x, shape=(2,)) * 0 + fill)

    def per_row(x):
        return like(x, dtype=snp.int32) * 0 + int(fill), like(x, shape=(2,)) * 0 + fill
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), 2 * fill * x)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(x)), 2 * fill * x)
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(f))(x)), 2 * fill * x)
    ints, twos = secant.vmap(per_row)(x)
    assert ints.dtype == np.int32 and ints.shape == (2, 3) and twos.shape == (2, 2)
    np.testing.assert_array_equal(np.asarray(ints), np.full((2, 3), int(fill)))
    np.testing.assert_array_equal(np.asarray(twos), np.full((2, 2), fill))
    _, t = secant.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(float(t), float(np.sum(2 * fill * x)), rtol=1e-6)


def test_complex_checks_keep_gradients_and_batch():
    """The checks above sit in the sources the transforms read: derivatives through them are
    unchanged (frexp's mantissa 2**-e, ldexp's 2**n, copysign's sign) and vmap refuses complex
    as eager does."""
    x = np.array([1.5, -2.0, 0.3])
    np.testing.assert_allclose(np.asarray(secant.grad(lambda x: snp.sum(snp.frexp(x)[0]))(x)),
                               1 / 2.0 ** np.frexp(x)[1])
    np.testing.assert_allclose(np.asarray(secant.grad(lambda x: snp.sum(snp.ldexp(x, 3)))(x)), 8.0)
    np.testing.assert_allclose(
        np.asarray(secant.vmap(secant.grad(lambda x: snp.copysign(x, -1.0) * x))(x)), -2 * abs(x))
    with pytest.raises(TypeError, match="copysign does not support complex"):
        secant.vmap(lambda z: snp.copysign(z, -1.0))(COMPLEX)
    with pytest.raises(ValueError, match="isneginf does not support complex"):
        secant.vmap(snp.isneginf)(COMPLEX)

"""grad(..., allow_int=True) with arguments that mix integer and floating-point leaves (a dict
of parameters holding integer counts): float0 zeros for the integer leaves, the float leaves'
gradient against closed forms; value_and_grad and has_aux too. An integer leaf of such an
argument used as an index reads as in JAX (an index has no derivative)."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

FLOAT0 = np.dtype([("float0", np.void, 0)])


def loss(p, scale):
    return p["w"] * p["n"] * scale + snp.sum(p["v"] ** 2 * p["k"])


P = {"w": np.float32(2.0), "n": np.int32(3), "v": np.arange(4, dtype=np.float32),
     "k": np.array([0, 1, 2, 2], np.int32)}


def check_params_grad(g):
    assert g["n"].dtype == FLOAT0 and g["n"].shape == ()
    assert g["k"].dtype == FLOAT0 and g["k"].shape == (4,)
    np.testing.assert_allclose(g["w"], 3 * 1.5)
    np.testing.assert_allclose(g["v"], 2 * np.arange(4) * [0, 1, 2, 2])


def test_mixed_leaves_get_float0_zeros_and_the_float_gradient():
    check_params_grad(secant.grad(loss, allow_int=True)(P, 1.5))
    g, gs = secant.grad(loss, argnums=(0, 1), allow_int=True)(P, 1.5)
    check_params_grad(g)
    np.testing.assert_allclose(gs, 2.0 * 3)
    value, g = secant.value_and_grad(loss, allow_int=True)(P, 1.5)
    np.testing.assert_allclose(value, loss(P, 1.5))
    check_params_grad(g)
    g, aux = secant.grad(lambda p, s: (loss(p, s), p["n"]), has_aux=True, allow_int=True)(P, 1.5)
    check_params_grad(g)
    assert int(aux) == 3


def test_mixed_tuple_argument_and_the_error_without_allow_int():
    g = secant.grad(lambda a: a[0] * a[1], allow_int=True)((2.0, 3))
    np.testing.assert_allclose(g[0], 3.0)
    assert g[1].dtype == FLOAT0
    with pytest.raises(secant.SecantTypeError, match="real- or complex-valued inputs"):
        secant.grad(loss)(P, 1.5)
    # an integer leaf used as an index (it was refused): v's gradient counts each read
    g = secant.grad(lambda p: snp.sum(p["v"][p["k"]] ** 2), allow_int=True)(P)
    np.testing.assert_allclose(g["v"], 2 * np.arange(4) * [1, 1, 2, 0])
    assert g["k"].dtype == FLOAT0
    g = secant.jit(secant.grad(lambda p: snp.sum(p["v"][p["k"]] ** 2), allow_int=True))(P)
    np.testing.assert_allclose(g["v"], 2 * np.arange(4) * [1, 1, 2, 0])

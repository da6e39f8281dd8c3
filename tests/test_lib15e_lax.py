"""issue 15 (lib15e): jax.lax.ragged_dot / ragged_dot_general (values against a NumPy loop over
the groups, eagerly and under jit; gradients in lhs and rhs against float64 central
differences; vmap over lhs and over group_sizes against a loop; refused layouts) and the dot
enums accepted as precision=."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax
from tests.central_differences import weighted_fd

rng = np.random.default_rng(15)
LHS = rng.normal(size=(7, 3))
RHS = rng.normal(size=(3, 3, 2))
SIZES = np.array([2, 0, 4], np.int32)       # (an empty group; the last row in none)


def reference(lhs, rhs, sizes):
    out = np.zeros((lhs.shape[0], rhs.shape[2]))
    start = 0
    for j, size in enumerate(sizes):
        out[start:start + size] = lhs[start:start + size] @ rhs[j]
        start += size
    return out


def test_values_eager_and_jit(x64):
    want = reference(LHS, RHS, SIZES)
    np.testing.assert_allclose(np.asarray(lax.ragged_dot(LHS, RHS, SIZES)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(lax.ragged_dot)(LHS, RHS, SIZES)), want,
                               rtol=1e-12)
    general = lax.ragged_dot_general(LHS, RHS, SIZES, lax.RaggedDotDimensionNumbers(
        (((1,), (1,)), ((), ())), [0], [0]))
    np.testing.assert_allclose(np.asarray(general), want, rtol=1e-12)
    out = lax.ragged_dot(LHS.astype(np.float32), RHS.astype(np.float32), SIZES,
                         preferred_element_type=np.float64)
    assert out.dtype == np.float64


def test_gradients_in_lhs_and_rhs(x64):
    g0, w = weighted_fd(lambda a: reference(a, RHS, SIZES), LHS)
    g = secant.grad(lambda a: snp.sum(lax.ragged_dot(a, RHS, SIZES) * w))(LHS)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-7, atol=1e-9)
    g0, w = weighted_fd(lambda b: reference(LHS, b, SIZES), RHS)
    g = secant.grad(lambda b: snp.sum(lax.ragged_dot(LHS, b, SIZES) * w))(RHS)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-7, atol=1e-9)


def test_vmap_over_lhs_and_over_group_sizes(x64):
    lhs = np.stack([LHS, 2 * LHS + 1])
    got = secant.vmap(lambda a: lax.ragged_dot(a, RHS, SIZES))(lhs)
    np.testing.assert_allclose(np.asarray(got), np.stack([reference(a, RHS, SIZES)
                                                          for a in lhs]), rtol=1e-12)
    sizes = np.array([[2, 0, 4], [1, 5, 1], [0, 0, 3]], np.int32)
    got = secant.vmap(lambda s: lax.ragged_dot(LHS, RHS, s))(sizes)
    np.testing.assert_allclose(np.asarray(got), np.stack([reference(LHS, RHS, s)
                                                          for s in sizes]), rtol=1e-12)


def test_refusals_and_enums():
    with pytest.raises(secant.SecantError, match="dimension numbers"):
        lax.ragged_dot_general(LHS, RHS, SIZES, lax.RaggedDotDimensionNumbers(
            (((1,), (1,)), ((), ())), [1], [0]))
    with pytest.raises(secant.SecantValueError, match="must agree"):
        lax.ragged_dot(LHS, RHS[:2], SIZES)
    a = rng.normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(
        np.asarray(lax.dot(a, a.T, precision=lax.DotAlgorithmPreset.F32_F32_F32)), a @ a.T,
        rtol=1e-5)
    assert lax.RandomAlgorithm.RNG_THREE_FRY == 1 and lax.Tolerance(atol=1e-3).atol == 1e-3


def local_reference(x, w, strides, window):
    """Unshared convolution, NCHW / OIHW, VALID: a kernel per output position, its I axis the
    channels then the window's positions (row-major)."""
    n, c, _, _ = x.shape
    o, _, oh, ow = w.shape
    kh, kw = window
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw]
            out[:, :, i, j] = patch.reshape(n, -1) @ w[:, :, i, j].T
    return out


def test_conv_general_dilated_local(x64):
    x = rng.normal(size=(2, 3, 7, 6))
    w = rng.normal(size=(4, 3 * 3 * 2, 3, 5))       # output 3 x 5 for window (3, 2), strides (2, 1)

    def local(x, w):
        return lax.conv_general_dilated_local(x, w, (2, 1), "VALID", (3, 2))
    want = local_reference(x, w, (2, 1), (3, 2))
    np.testing.assert_allclose(np.asarray(local(x, w)), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(local)(x, w)), want, rtol=1e-12, atol=1e-12)
    g0, wt = weighted_fd(lambda v: local_reference(v, w, (2, 1), (3, 2)), x)
    g = secant.grad(lambda v: snp.sum(local(v, w) * wt))(x)
    np.testing.assert_allclose(np.asarray(g), g0, rtol=1e-6, atol=1e-7)
    per_example = secant.vmap(lambda v: local(v[None], w)[0])(x)
    np.testing.assert_allclose(np.asarray(per_example), want, rtol=1e-12, atol=1e-12)

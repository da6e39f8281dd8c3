"""Complex numbers end to end: JAX's dtype promotion, the parts and their derivative conventions,
holomorphic derivatives, vmap, jit (StableHLO complex types) and NumPy's lexicographic ordering.
(Every elementwise op, product and reduction on complex128 inputs: tests/library_cases/complex.py.)
"""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

Z = np.array([1 + 2j, -0.5 + 0.25j, 2 - 1j], np.complex64)
X = np.array([0.5, -1.5, 2.0], np.float32)


# --- dtypes ------------------------------------------------------------------------------------
def test_promotion_as_jax():
    assert (snp.asarray(Z) + X).dtype == np.complex64
    assert (snp.asarray(X) * 1j).dtype == np.complex64          # a weak Python complex
    assert (snp.asarray(Z) * 2.0).dtype == np.complex64
    assert (snp.arange(3) + 1j).dtype == np.complex64
    assert snp.real(Z).dtype == snp.imag(Z).dtype == snp.abs(Z).dtype == np.float32
    assert snp.angle(Z).dtype == np.float32
    assert snp.var(Z).dtype == snp.std(Z).dtype == np.float32


def test_promotion_under_x64(x64):
    z = np.asarray(Z)
    assert (snp.asarray(z) + np.float64(1.0) * np.ones(3)).dtype == np.complex128
    assert (snp.asarray(z) + 1.0).dtype == np.complex64          # weak float keeps complex64
    assert (snp.asarray(X) + 1j).dtype == np.complex64
    assert snp.real(z.astype(np.complex128)).dtype == np.float64


def test_jit_emits_complex_types():
    text = secant.jit(lambda z: snp.real(z) * snp.imag(z) + snp.abs(snp.conj(z))).lower(
        Z).as_text()
    for piece in ("complex<f32>", "stablehlo.real", "stablehlo.imag", "stablehlo.complex"):
        assert piece in text, piece


# --- values: jit against eager against NumPy -------------------------------------------------------
FUNCTIONS = {
    "parts": lambda z: snp.real(z) * 2 + snp.imag(z) - snp.angle(z) + snp.abs(z),
    "conj_product": lambda z: snp.conj(z) * z + lax.complex(snp.real(z), snp.imag(z)),
    "holomorphic": lambda z: snp.exp(z) * snp.sin(z) / (1 + z * z) + snp.sqrt(z) ** 3,
    "matmul": lambda z: z[:, None] @ z[None, :] + snp.einsum("i,j->ij", z, snp.conj(z)),
    "reductions": lambda z: snp.sum(z) + snp.mean(z) * snp.prod(z) + snp.var(z) + snp.std(z),
    "cast": lambda z: z.astype(np.float32) + snp.real(X.astype(np.complex64) * z),
    "round": lambda z: snp.round(z * 3.7) + snp.rint(z),
}
NUMPY = {
    "parts": lambda z: np.real(z) * 2 + np.imag(z) - np.angle(z) + np.abs(z),
    "conj_product": lambda z: np.conj(z) * z + (np.real(z) + 1j * np.imag(z)),
    "holomorphic": lambda z: np.exp(z) * np.sin(z) / (1 + z * z) + np.sqrt(z) ** 3,
    "matmul": lambda z: z[:, None] @ z[None, :] + np.einsum("i,j->ij", z, np.conj(z)),
    "reductions": lambda z: np.sum(z) + np.mean(z) * np.prod(z) + np.var(z) + np.std(z),
    "cast": lambda z: np.real(z) + np.real(X.astype(np.complex64) * z),
    "round": lambda z: np.round(z * 3.7) + np.rint(z),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_values_eager_and_jit(name):
    fn = FUNCTIONS[name]
    want = NUMPY[name](Z.astype(np.complex128))
    eager = np.asarray(fn(Z))
    assert eager.dtype.kind == np.asarray(want).dtype.kind
    np.testing.assert_allclose(eager, want, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(secant.jit(fn)(Z)), eager, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_vmap_against_a_loop(name):
    fn = FUNCTIONS[name]
    zs = np.stack([Z, Z * (0.5 - 1j), Z + 1])
    want = np.stack([np.asarray(fn(z)) for z in zs])
    np.testing.assert_allclose(np.asarray(secant.vmap(fn)(zs)), want, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(fn))(zs)), want, rtol=2e-5,
                               atol=2e-5)


def test_ordering_is_lexicographic_as_numpy():
    a = np.array([1 + 2j, 1 + 1j, 2 - 1j, 1 + 1j], np.complex64)
    b = np.array([1 + 1j, 1 + 2j, 1 + 5j, 1 + 1j], np.complex64)
    for fn in (lambda a, b: a < b, lambda a, b: a <= b, lambda a, b: a > b,
               lambda a, b: a >= b, snp.maximum, snp.minimum,
               lambda a, b: snp.clip(a, 1 + 1.5j, 2 + 0j)):
        ref = fn(np.asarray(a), np.asarray(b)) if fn not in (snp.maximum, snp.minimum) else \
            getattr(np, fn.__name__)(a, b)
        np.testing.assert_array_equal(np.asarray(fn(a, b)), ref)
        np.testing.assert_array_equal(np.asarray(secant.jit(fn)(a, b)), ref)


def test_isfinite_isinf_isnan_ask_both_parts():
    z = np.array([1 + 1j, complex(np.inf, 0), complex(0, np.nan), complex(1, -np.inf)],
                 np.complex64)
    for name in ("isfinite", "isinf", "isnan"):
        want = getattr(np, name)(z)
        np.testing.assert_array_equal(np.asarray(getattr(snp, name)(z)), want)
        np.testing.assert_array_equal(np.asarray(secant.jit(getattr(snp, name))(z)), want)


@pytest.mark.parametrize("fn", [snp.floor, snp.ceil, snp.cbrt, lax.erf, lax.lgamma,
                                lambda z: snp.arctan2(z, z), lambda z: snp.asarray(z) % z,
                                lambda z: snp.asarray(z) // 2])
def test_real_only_kernels_refuse_complex_eagerly_and_under_jit(fn):
    for f in (fn, secant.jit(fn)):
        with pytest.raises(TypeError, match="complex64"):
            f(Z)


# --- derivatives: JAX's conventions -------------------------------------------------------------
def _fd_grad(f, z, eps=1e-6):
    """df/dx - 1j df/dy of a real scalar f of a complex array, by central differences."""
    g = np.zeros(z.shape, np.complex128)
    for idx in np.ndindex(z.shape):
        for step, scale in ((1, 1), (1j, -1j)):
            e = np.zeros(z.shape, np.complex128)
            e[idx] = eps * step
            g[idx] += scale * (float(f(z + e)) - float(f(z - e))) / (2 * eps)
    return g


def test_grad_conventions_closed_forms(x64):
    z = Z.astype(np.complex128)
    np.testing.assert_allclose(secant.grad(lambda z: snp.sum(snp.abs(z) ** 2))(z),
                               2 * np.conj(z), rtol=1e-12)
    np.testing.assert_allclose(secant.grad(lambda z: snp.sum(snp.real(z)))(z), np.ones(3))
    np.testing.assert_allclose(secant.grad(lambda z: snp.sum(snp.imag(z)))(z), -1j * np.ones(3))
    np.testing.assert_allclose(secant.grad(lambda z: snp.sum(snp.abs(z)))(z),
                               np.conj(z) / np.abs(z), rtol=1e-12)
    # angle = atan2(y, x): d/dx - 1j d/dy = (-y - 1j x) / |z|^2
    np.testing.assert_allclose(secant.grad(lambda z: snp.sum(snp.angle(z)))(z),
                               (-z.imag - 1j * z.real) / np.abs(z) ** 2, rtol=1e-12)


LOSSES = {
    "abs_exp": lambda z: snp.sum(snp.abs(snp.exp(z) * z)),
    "real_log": lambda z: snp.sum(snp.real(snp.log(z) * (1 - 2j))),
    "imag_matmul": lambda z: snp.sum(snp.imag(z[:, None] @ snp.conj(z)[None, :] * z)),
    "var_std": lambda z: snp.var(z) + snp.std(z * z),
    "angle_abs": lambda z: snp.sum(snp.angle(z) * snp.abs(z) ** 3),
    "mixed_real": lambda z: snp.sum(snp.real(z * X.astype(np.float64) + 1j * X) ** 2),
    "attributes": lambda z: snp.sum(z.real * z.imag ** 2 + snp.abs(z.conj() * z.conjugate())),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_grad_of_real_losses_against_finite_differences(x64, name):
    loss = LOSSES[name]
    z = Z.astype(np.complex128)
    want = _fd_grad(loss, z)
    np.testing.assert_allclose(secant.grad(loss)(z), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(loss))(z)), want, rtol=1e-6,
                               atol=1e-8)
    zs = np.stack([z, z * 1j, z - 0.5])
    per = np.stack([_fd_grad(loss, zi) for zi in zs])
    np.testing.assert_allclose(np.asarray(secant.vmap(secant.grad(loss))(zs)), per, rtol=1e-6,
                               atol=1e-8)


def test_grad_of_real_input_through_complex_values(x64):
    """A real input that meets complex values: its cotangent is real (the real part)."""
    def f(x):
        return snp.sum(snp.abs(snp.exp(1j * x) * (2 + x)) + snp.real((x + 1j) ** 3))
    x = X.astype(np.float64)
    g = secant.grad(f)(x)
    assert np.asarray(g).dtype == np.float64
    eps = 1e-6
    fd = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_holomorphic_grad_and_jvp(x64):
    z = np.complex128(0.3 - 0.7j)
    f = lambda z: snp.sin(z) * snp.exp(z) + z ** 3      # noqa: E731
    d = np.cos(z) * np.exp(z) + np.sin(z) * np.exp(z) + 3 * z ** 2
    np.testing.assert_allclose(secant.grad(f, holomorphic=True)(z), d, rtol=1e-12)
    _, t = secant.jvp(f, (z,), (np.complex128(1.0),))
    np.testing.assert_allclose(t, d, rtol=1e-12)
    _, t = secant.jvp(f, (z,), (np.complex128(1j),))
    np.testing.assert_allclose(t, 1j * d, rtol=1e-12)


def test_grad_of_complex_output_needs_holomorphic():
    with pytest.raises(TypeError, match="holomorphic=True"):
        secant.grad(lambda z: snp.sum(z * z))(Z)


def test_second_order_through_the_parts(x64):
    """hessian of |z|^2 written with real/imag, against its closed form 2 I (per part)."""
    def f(x):
        z = lax.complex(x[0], x[1])
        return snp.real(z * snp.conj(z)) + snp.imag(z * z)    # x0^2 + x1^2 + 2 x0 x1
    h = secant.hessian(f)(np.array([0.3, -0.8]))
    np.testing.assert_allclose(h, [[2.0, 2.0], [2.0, 2.0]], atol=1e-12)

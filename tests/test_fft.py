"""secant.numpy.fft and lax.fft beyond the shared harness (tests/library_cases/fft.py): the
dot-product identity for each transform kind, float32 -> complex64, StableHLO, vmap with the
batch axis anywhere, second order against closed forms, errors, and the derivative's source."""
import os
import pathlib

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax

GOLDEN = pathlib.Path(__file__).parent / "golden" / "fft"
UPDATE = os.environ.get("SECANT_UPDATE_GOLDEN") == "1"


def _draw(rng, shape, complex_):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


# (kind, operand shape, fft_lengths, complex operand)
KINDS = [("FFT", (2, 5), (5,), True), ("IFFT", (3, 4, 6), (4, 6), True),
         ("FFT", (2, 3, 2, 4), (3, 2, 4), True), ("RFFT", (2, 6), (6,), False),
         ("RFFT", (3, 5), (3, 5), False), ("IRFFT", (2, 4), (6,), True),
         ("IRFFT", (3, 4), (7,), True), ("IRFFT", (2, 4, 3), (4, 4), True)]


@pytest.mark.parametrize("kind, shape, lengths, cplx", KINDS)
def test_dot_product_identity(x64, kind, shape, lengths, cplx):
    """Re<u, J v> == Re<J^T u, v> with JAX's pairing (no conjugate): jvp against vjp."""
    rng = np.random.default_rng(0)
    x = _draw(rng, shape, cplx)
    f = lambda a: lax.fft(a, kind, lengths)          # noqa: E731
    y = np.asarray(f(x))
    v = _draw(rng, shape, cplx)
    u = _draw(rng, y.shape, y.dtype.kind == "c")
    _, jv = secant.jvp(f, (x,), (v,))
    _, pullback = secant.vjp(f, x)
    jtu, = pullback(u)
    lhs = np.real(np.sum(u * np.asarray(jv)))
    rhs = np.real(np.sum(np.asarray(jtu) * v))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)
    # the map is linear: its jvp is itself applied to v
    np.testing.assert_allclose(np.asarray(jv), np.asarray(f(v)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind, shape, lengths, cplx", KINDS)
def test_lax_fft_jit_eager_and_numpy(kind, shape, lengths, cplx):
    rng = np.random.default_rng(1)
    x = _draw(rng, shape, cplx).astype(np.complex64 if cplx else np.float32)
    f = lambda a: lax.fft(a, kind, lengths)          # noqa: E731
    axes = tuple(range(len(shape) - len(lengths), len(shape)))
    ref = {"FFT": lambda: np.fft.fftn(x, axes=axes), "IFFT": lambda: np.fft.ifftn(x, axes=axes),
           "RFFT": lambda: np.fft.rfftn(x, axes=axes),
           "IRFFT": lambda: np.fft.irfftn(x, s=lengths, axes=axes)}[kind]()
    eager, jitted = np.asarray(f(x)), np.asarray(secant.jit(f)(x))
    assert eager.dtype == jitted.dtype == (np.float32 if kind == "IRFFT" else np.complex64)
    np.testing.assert_allclose(eager, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(jitted, eager, rtol=1e-4, atol=1e-5)
    text = secant.jit(f).lower(x).as_text()
    assert "stablehlo.fft" in text and f"fft_type {kind}" in text


def test_float32_gives_complex64_and_x64_complex128(x64):
    x = np.linspace(0, 1, 8)
    assert snp.fft.rfft(x).dtype == np.complex128
    assert snp.fft.rfft(x.astype(np.float32)).dtype == np.complex64
    assert snp.fft.fft(np.arange(4)).dtype == np.complex128     # ints: default float's complex
    assert snp.fft.irfft(snp.fft.rfft(x.astype(np.float32))).dtype == np.float32
    assert snp.fft.hfft(np.ones(3, np.complex64)).dtype == np.float32
    assert snp.fft.fftfreq(4).dtype == np.float64


def test_float32_values_eager_and_jit():
    x = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    for fn, ref in ((snp.fft.rfft, np.fft.rfft), (snp.fft.fft2, np.fft.fft2),
                    (lambda a: snp.fft.ihfft(a, n=6, norm="ortho"),
                     lambda a: np.fft.ihfft(a, n=6, norm="ortho"))):
        out = fn(x)
        assert out.dtype == np.complex64
        np.testing.assert_allclose(np.asarray(out), ref(x), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(secant.jit(fn)(x)), np.asarray(out), rtol=1e-5,
                                   atol=1e-5)


@pytest.mark.parametrize("in_axes", [0, 1, 2])
def test_vmap_with_the_batch_axis_anywhere(x64, in_axes):
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((3, 4, 5))
    for fn in (lambda a: snp.fft.rfft(a, n=6), lambda a: snp.fft.fftn(a, s=(3, 2)),
               lambda a: snp.fft.irfft(snp.fft.fft(a, axis=0)[..., :3], n=5, norm="ortho")):
        loop = np.stack([np.asarray(fn(np.take(xs, i, axis=in_axes)))
                         for i in range(xs.shape[in_axes])])
        np.testing.assert_allclose(np.asarray(secant.vmap(fn, in_axes=in_axes)(xs)), loop,
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(fn, in_axes=in_axes))(xs)),
                                   loop, rtol=1e-10, atol=1e-10)


def spectral_loss(x, target):
    spectrum = snp.fft.rfft(x, norm="ortho")
    power = snp.abs(spectrum) ** 2
    return snp.sum((power - target) ** 2)


def test_per_example_gradients_against_a_loop(x64):
    rng = np.random.default_rng(4)
    xs, target = rng.standard_normal((3, 8)), rng.uniform(0, 1, 5)
    grad = secant.grad(spectral_loss)
    loop = np.stack([np.asarray(grad(x, target)) for x in xs])
    np.testing.assert_allclose(np.asarray(secant.vmap(grad, in_axes=(0, None))(xs, target)),
                               loop, rtol=1e-10)
    np.testing.assert_allclose(
        np.asarray(secant.jit(secant.vmap(grad, in_axes=(0, None)))(xs, target)), loop,
        rtol=1e-9)
    eps, x = 1e-6, xs[0]
    fd = [(spectral_loss(x + eps * e, target) - spectral_loss(x - eps * e, target)) / (2 * eps)
          for e in np.eye(8)]
    np.testing.assert_allclose(loop[0], fd, rtol=1e-6, atol=1e-9)


def test_second_order_parseval(x64):
    """sum |fft(x)|^2 = n sum x^2: its hessian is 2 n I; half spectrum: rfft's weights."""
    x = np.random.default_rng(5).standard_normal(6)
    full = lambda x: snp.sum(snp.abs(snp.fft.fft(x)) ** 2)            # noqa: E731
    np.testing.assert_allclose(secant.hessian(full)(x), 12 * np.eye(6), atol=1e-10)
    np.testing.assert_allclose(secant.jit(secant.hessian(full))(x), 12 * np.eye(6), atol=1e-10)
    half = lambda x: snp.sum(snp.abs(snp.fft.rfft(x, norm="ortho")) ** 2)   # noqa: E731
    r = np.fft.rfft(np.eye(6), norm="ortho")     # row i: rfft of e_i; hessian 2 Re(R R^H)
    np.testing.assert_allclose(secant.hessian(half)(x), 2 * np.real(r @ np.conj(r).T),
                               atol=1e-10)
    # second order through the derivative of |z| for complex z (its phase is not constant)
    g = lambda x: snp.sum(snp.abs(snp.fft.fft(x)))                        # noqa: E731
    gf = lambda x: np.asarray(secant.grad(g)(x))                           # noqa: E731
    fd = np.stack([(gf(x + 1e-6 * e) - gf(x - 1e-6 * e)) / 2e-6 for e in np.eye(6)])
    np.testing.assert_allclose(secant.hessian(g)(x), fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(secant.jacrev(secant.grad(g))(x), fd, rtol=1e-6, atol=1e-7)
    # irfft(rfft(x)) is the identity: its jacobian is I, in both modes
    roundtrip = lambda x: snp.fft.irfft(snp.fft.rfft(x), n=6)          # noqa: E731
    np.testing.assert_allclose(secant.jacrev(roundtrip)(x), np.eye(6), atol=1e-12)
    np.testing.assert_allclose(secant.jacfwd(roundtrip)(x), np.eye(6), atol=1e-12)


def test_fftshift_is_a_permutation(x64):
    x = np.arange(10.0).reshape(2, 5)
    for fn, ref in ((snp.fft.fftshift, np.fft.fftshift), (snp.fft.ifftshift, np.fft.ifftshift)):
        jac = secant.jacrev(fn)(x).reshape(10, 10)
        np.testing.assert_array_equal(jac @ x.ravel(), ref(x).ravel())
        np.testing.assert_array_equal(jac.sum(0), np.ones(10))


@pytest.mark.parametrize("call, exc, match", [
    (lambda: snp.fft.rfft(np.ones(4, np.complex64)), TypeError, "real input"),
    (lambda: snp.fft.fft(np.ones(4), norm="unitary"), ValueError, "invalid norm"),
    (lambda: snp.fft.fftn(np.ones((2, 2)), axes=(0, 2)), ValueError, "out of bounds"),
    (lambda: snp.fft.fftn(np.ones((2, 2)), s=(2, 2, 2), axes=(0, 1)), ValueError, "same length"),
    (lambda: snp.fft.fft(np.ones(4), n=0), ValueError, "data points"),
    (lambda: lax.fft(np.ones(4, np.complex64), "FFT", (5,)), TypeError, "trailing shape"),
    (lambda: lax.fft(np.ones(4, np.float32), "FFT", (4,)), TypeError, "complex operand"),
    (lambda: lax.fft(np.ones(4, np.complex64), "DCT", (4,)), TypeError, "fft_type"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
    with pytest.raises(exc, match=match):
        secant.jit(call)()


def test_generated_derivative_source_is_locked():
    """The derivative of a spectral loss, and the generated functions it calls (golden)."""
    from test_golden import generated_program
    text = generated_program(secant.grad(spectral_loss))
    assert "return rfft_vjp(spectrum_bar, x, norm='ortho')" in text     # (issue 20: no x_bar copy)
    assert "fft_transpose(" in text
    path = GOLDEN / "spectral_loss_grad.py.txt"
    if UPDATE:
        path.write_text(text)
        return
    assert text == path.read_text(), ("the generated source of grad(spectral_loss) changed; "
                                      "regenerate with SECANT_UPDATE_GOLDEN=1 and review it")

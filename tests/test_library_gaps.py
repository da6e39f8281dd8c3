"""Gaps in the library found by hand (issue 17): derivatives of every order of sinc at its
removable singularity, NumPy's own functions (np.linalg.det, np.fft.fft, np.angle, ...) called
in user code under grad/vmap/jit, dtype names called as casts, batched fill values."""
import numpy as np
import pytest

import secant
import secant.numpy as snp

PI2 = np.pi ** 2


# --- sinc: every derivative order right at 0 ------------------------------------------------------
def _sinc_derivatives(x):
    """sinc's first three derivatives, closed forms in t = pi x (x != 0)."""
    t = np.pi * x
    s, c = np.sin(t), np.cos(t)
    d1 = (t * c - s) / t ** 2
    d2 = ((2 - t ** 2) * s - 2 * t * c) / t ** 3
    d3 = ((6 - t ** 2) * t * c + (3 * t ** 2 - 6) * s) / t ** 4
    return np.pi * d1, PI2 * d2, np.pi ** 3 * d3


def test_sinc_derivatives_at_zero_are_the_maclaurin_coefficients(x64):
    g1 = secant.grad(snp.sinc)
    g2 = secant.grad(g1)
    g3 = secant.grad(g2)
    # sin(t)/t = 1 - t^2/6 + t^4/120 ...: d^2/dx^2 = -pi^2/3, d^4/dx^4 = pi^4/5, odd orders 0
    assert float(g1(0.0)) == 0.0
    np.testing.assert_allclose(float(g2(0.0)), -PI2 / 3, rtol=1e-12)
    assert float(g3(0.0)) == 0.0
    np.testing.assert_allclose(float(secant.jit(g2)(0.0)), -PI2 / 3, rtol=1e-12)
    np.testing.assert_allclose(float(secant.hessian(snp.sinc)(0.0)), -PI2 / 3, rtol=1e-12)
    fwd2 = secant.jacfwd(secant.jacfwd(snp.sinc))
    np.testing.assert_allclose(float(fwd2(0.0)), -PI2 / 3, rtol=1e-12)
    _, d2 = secant.jvp(lambda x: secant.jvp(snp.sinc, (x,), (1.0,))[1], (0.0,), (1.0,))
    np.testing.assert_allclose(float(d2), -PI2 / 3, rtol=1e-12)


def test_sinc_fourth_derivative_by_reverse_mode_four_times(x64):
    g4 = secant.grad(secant.grad(secant.grad(secant.grad(snp.sinc))))
    np.testing.assert_allclose(float(g4(0.0)), np.pi ** 4 / 5, rtol=1e-12)


@pytest.mark.parametrize("x", [0.3, -1.2, 2.5])
def test_sinc_derivatives_away_from_zero_match_closed_forms(x64, x):
    g1 = secant.grad(snp.sinc)
    g2 = secant.grad(g1)
    g3 = secant.grad(g2)
    want = _sinc_derivatives(x)
    np.testing.assert_allclose([float(g1(x)), float(g2(x)), float(g3(x))], want, rtol=1e-9)
    eps = 1e-5      # and the third against finite differences of the second
    np.testing.assert_allclose(float(g3(x)), (float(g2(x + eps)) - float(g2(x - eps))) / (2 * eps),
                               rtol=1e-6)


def test_sinc_second_derivative_batched_and_jitted(x64):
    xs = np.array([0.0, 0.3, -1.2, 0.0])
    g2 = secant.grad(secant.grad(snp.sinc))
    want = [-PI2 / 3 if x == 0 else _sinc_derivatives(x)[1] for x in xs]
    np.testing.assert_allclose(np.asarray(secant.vmap(g2)(xs)), want, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.vmap(g2))(xs)), want, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(snp.sinc(xs)), np.sinc(xs), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(secant.jit(snp.sinc)(xs)), np.sinc(xs), rtol=1e-15)


# --- NumPy's own functions in user code -----------------------------------------------------------
A = np.array([[2.0, 0.3, 0.1], [0.2, 3.0, 0.4], [0.1, 0.5, 4.0]])
X = np.array([0.3, -1.2, 2.0])


def f_det(a):
    return np.linalg.det(a) * np.linalg.slogdet(a)[1]


def f_solve(a):
    return np.sum(np.linalg.solve(a, np.arange(3.0)) ** 2) + np.sum(np.linalg.inv(a))


def f_fft(x):
    return np.sum(np.abs(np.fft.fft(x)) ** 2 * np.arange(3.0)) + np.sum(np.fft.rfft(x).real)


def f_angle(x):
    return np.sum(np.angle(x + 2j) * np.roll(x, 1))


def f_kron(x):
    return np.sum(np.kron(x, x) ** 3) + np.sum(np.tril(np.outer(x, x)) ** 2)


def f_norm(a):
    return np.linalg.norm(a) + np.sum(np.triu(a) * np.trace(a))


CASES = [(f_det, A), (f_solve, A), (f_fft, X), (f_angle, X), (f_kron, X), (f_norm, A)]


def _fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


@pytest.mark.parametrize("f,x", CASES, ids=[c[0].__name__ for c in CASES])
def test_numpy_calls_in_user_code_under_grad_vmap_jit(x64, f, x):
    want = _fd_grad(f, x)           # (f itself runs NumPy's functions)
    np.testing.assert_allclose(np.asarray(secant.grad(f)(x)), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(f))(x)), want,
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(float(secant.jit(f)(x)), f(x), rtol=1e-12)
    xs = np.stack([x, 1.1 * x, x + 0.05])
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(xs)), [f(v) for v in xs], rtol=1e-12)
    _, t = secant.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(float(t), np.sum(want), rtol=1e-6)


def test_generated_code_names_secants_functions():
    code = [line for line in secant.source(secant.grad(f_det)).splitlines()
            if not line.strip().startswith("#")]
    assert any("snp.linalg.det(a)" in line for line in code)
    assert not any("np.linalg" in line.replace("snp.linalg", "") for line in code)
    assert "snp.angle" in secant.source(secant.grad(lambda x: np.sum(np.angle(x + 2j))))


# --- dtype names called as casts ------------------------------------------------------------------
def test_scalar_type_names_cast_and_stay_dtypes():
    assert np.dtype(snp.float32) == np.float32 and snp.dtype(snp.int32) == np.dtype("int32")
    assert snp.float32 == np.float32 and hash(snp.int32) == hash(np.int32)
    assert snp.issubdtype(snp.int32, snp.integer) and not snp.issubdtype(snp.float32, snp.integer)
    assert snp.zeros(2, dtype=snp.int32).dtype == np.int32
    assert snp.ones(2).astype(snp.int8).dtype == np.int8
    assert np.zeros(2, dtype=snp.float64).dtype == np.float64
    assert int(snp.int32(2.7)) == 2 and snp.int32(2.7).dtype == np.int32
    assert isinstance(np.float32(1.0), snp.float32)


def test_scalar_type_casts_under_jit_grad_vmap(x64):
    def f(x):
        return snp.float32(x) * 2 + snp.sum(snp.int32(x) * x)

    def g(x):
        return np.float64(x) ** 2 * snp.float64(x)

    xs = np.array([1.7, 2.5, -0.4])
    for x in xs:
        assert float(secant.jit(f)(x)) == pytest.approx(float(f(x)), rel=1e-6)
        # int32(x) has zero derivative: d/dx = 2 + int(x)
        assert float(secant.grad(f)(x)) == pytest.approx(2 + int(x), rel=1e-12)
        assert float(secant.jit(secant.grad(f))(x)) == pytest.approx(2 + int(x), rel=1e-12)
        assert float(secant.grad(g)(x)) == pytest.approx(3 * x ** 2, rel=1e-12)
    assert secant.jit(lambda x: snp.int32(x))(2.7).dtype == np.int32
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(xs)), [float(f(x)) for x in xs],
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.vmap(g)(xs)), xs ** 3, rtol=1e-12)


# --- batched fill values and endpoints ------------------------------------------------------------
def test_full_and_linspace_with_batched_arguments(x64):
    v = np.array([1.0, 2.0, -0.5])
    full = secant.vmap(lambda s: snp.full((3,), s))
    np.testing.assert_array_equal(np.asarray(full(v)), np.repeat(v[:, None], 3, axis=1))
    np.testing.assert_array_equal(np.asarray(secant.jit(full)(v)), np.repeat(v[:, None], 3, 1))
    lin = secant.vmap(lambda s: snp.linspace(s, 2.0, 4))
    want = np.stack([np.linspace(s, 2.0, 4) for s in v])
    np.testing.assert_allclose(np.asarray(lin(v)), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(secant.jit(lin)(v)), want, rtol=1e-12)
    lin2 = secant.vmap(lambda s: snp.linspace(0.0, s, 3, endpoint=False))
    np.testing.assert_allclose(np.asarray(lin2(v)),
                               np.stack([np.linspace(0.0, s, 3, endpoint=False) for s in v]))
    np.testing.assert_allclose(np.asarray(secant.jacfwd(lambda s: snp.linspace(s, 2.0, 4))(1.0)),
                               [1.0, 2 / 3, 1 / 3, 0.0], rtol=1e-12)
    assert float(secant.grad(lambda s: snp.sum(snp.full((3,), s) ** 2))(2.0)) == 12.0

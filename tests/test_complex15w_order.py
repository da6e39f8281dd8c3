"""Complex numbers in NumPy's and JAX's order (by real part, then by imaginary part): sort,
argsort, lax.sort, max/min and their kin, the unique/set family and searchsorted. secant refused
them all ("sort is not defined for complex arrays") though JAX computes them. Values against
NumPy's complex order; derivatives against JAX 0.10.2's (recorded below) and finite
differences; vmap against a loop; jit against eager."""
import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import lax, nn

X = np.array([1 + 2j, 1 - 1j, -3 + 0j, 1 + 2j, 0.5 + 5j], np.complex64)   # a tie: 0 and 3
Y = np.array([[2 - 1j, 2 + 3j, -1 + 1j], [0 + 0j, 0 - 2j, 0 + 2j]], np.complex64)


def _close(got, want, **kw):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6, **kw)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_of_complex_are_lexicographic_as_numpy(descending):
    for a, axis in ((X, -1), (Y, 0), (Y, 1), (Y, None)):
        want = np.sort(a, axis=axis)
        want_idx = np.argsort(a, axis=axis, kind="stable")
        if descending:
            want = np.flip(want, axis=-1 if axis is None else axis)
            want_idx = np.flip(np.argsort(np.flip(a, -1 if axis is None else axis) if axis
                                          is not None else np.flip(a.ravel()), axis=axis,
                                          kind="stable"), -1 if axis is None else axis)
            n = a.size if axis is None else a.shape[axis]
            want_idx = n - 1 - want_idx
        _close(snp.sort(a, axis=axis, descending=descending), want)
        np.testing.assert_array_equal(
            np.asarray(snp.argsort(a, axis=axis, descending=descending)), want_idx)
    _close(secant.jit(snp.sort)(X), np.sort(X))
    np.testing.assert_array_equal(np.asarray(secant.jit(snp.argsort)(X)), [2, 4, 1, 0, 3])


def test_lax_sort_with_a_complex_key_sorts_the_other_operands_by_it():
    keys, vals = lax.sort((X, np.arange(5)), num_keys=1)
    _close(keys, np.sort(X))
    np.testing.assert_array_equal(np.asarray(vals), [2, 4, 1, 0, 3])   # JAX's
    _close(lax.sort(Y, dimension=0), np.sort(Y, axis=0))
    np.testing.assert_array_equal(np.asarray(snp.lexsort((X, [1, 0, 1, 0, 1]))),
                                  np.lexsort((X, [1, 0, 1, 0, 1])))


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin", "nanmax", "nanmin", "ptp"])
def test_max_min_of_complex_are_lexicographic_as_numpy(name):
    f, g = getattr(snp, name), getattr(np, name)
    for a, axis in ((X, None), (Y, 0), (Y, 1), (Y, None)):
        _close(f(a, axis=axis), g(a, axis=axis))
        _close(secant.jit(lambda z, axis=axis: f(z, axis=axis))(a), g(a, axis=axis))
    assert complex(snp.max(X)) == 1 + 2j and complex(snp.min(X)) == -3 + 0j    # JAX's


def test_complex_max_with_where_and_initial_as_numpy():
    mask = np.array([False, True, True, False, True])
    _close(snp.max(X, where=mask, initial=-10), np.max(X, where=mask, initial=-10 + 0j))
    _close(snp.min(X, where=mask, initial=10), np.min(X, where=mask, initial=10 + 0j))
    _close(snp.max(X, initial=1 + 3j), 1 + 3j)


@pytest.mark.parametrize("name", ["unique", "union1d", "intersect1d", "setdiff1d", "setxor1d"])
def test_unique_and_set_functions_of_complex_as_numpy(name):
    f, g = getattr(snp, name), getattr(np, name)
    args = (X,) if name == "unique" else (X, X[:2])
    _close(f(*args), g(*args))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_of_complex_is_lexicographic_as_numpy(side):
    s = np.sort(X)
    for v in (X, np.array([1.0, 0.5, -4.0], np.float32), np.complex64(1 + 2j)):
        np.testing.assert_array_equal(np.asarray(snp.searchsorted(s, v, side=side)),
                                      np.searchsorted(s, v, side=side))
    np.testing.assert_array_equal(
        np.asarray(secant.jit(lambda a, v: snp.searchsorted(a, v, side=side))(s, X)),
        np.searchsorted(s, X, side=side))


# --- derivatives: JAX 0.10.2's values (jax.grad of the same functions at X) ---------------------
def test_grad_of_complex_sort_permutes_the_cotangent_back():
    g = secant.grad(lambda z: snp.real(snp.sum(snp.sort(z) * snp.arange(5.0))))(X)
    _close(g, [3, 2, 0, 4, 1])
    g = secant.grad(lambda z: snp.real(snp.sort(z)[0]))(X)
    _close(g, [0, 0, 1, 0, 0])                                     # JAX's


def test_grad_of_complex_max_splits_among_ties_as_jax():
    _close(secant.grad(lambda z: snp.real(snp.max(z)))(X), [0.5, 0, 0, 0.5, 0])
    _close(secant.grad(lambda z: snp.imag(snp.max(z)))(X), [-0.5j, 0, 0, -0.5j, 0])
    _close(secant.grad(lambda z: snp.real(snp.min(z)))(X), [0, 0, 1, 0, 0])


def test_jvp_of_complex_sort_and_max_against_central_differences():
    """Away from ties sort and max are linear in a neighbourhood: central differences with a
    step of 1e-2 are exact there (up to float32 rounding)."""
    x = np.array([1 + 2j, 0.9 - 1j, -3 + 0j, 1.2 + 1j, 0.5 + 5j], np.complex64)   # (no ties)
    t = (np.arange(5) * (0.3 - 0.7j)).astype(np.complex64)
    for f in (snp.sort, snp.max, lambda z: snp.min(z.reshape(5, 1), axis=1), snp.ptp):
        out, tan = secant.jvp(f, (x,), (t,))
        _close(out, f(x))
        h = np.float32(1e-2)
        fd = (np.asarray(f(x + h * t)) - np.asarray(f(x - h * t))) / (2 * h)
        np.testing.assert_allclose(np.asarray(tan), fd, rtol=1e-3, atol=1e-3)
    _, tan = secant.jvp(snp.max, (X,), (t,))    # the tie at 0 and 3: the mean of their tangents
    _close(tan, (t[0] + t[3]) / 2)                 # (JAX's)


def test_vmap_of_complex_sort_max_argsort_against_a_loop():
    batch = np.stack([X, X[::-1], X * 1j, np.conj(X)])
    for f in (snp.sort, snp.argsort, snp.max, snp.min,
              lambda z: snp.searchsorted(snp.sort(z), X)):
        got = secant.vmap(f)(batch)
        want = np.stack([np.asarray(f(b)) for b in batch])
        np.testing.assert_array_equal(np.asarray(got), want)


def test_complex_max_min_propagate_nan_as_numpy():
    """NumPy's max of complex propagates a NaN (nan+0j for a NaN real part, 3+nanj for a NaN
    imaginary part on the largest real part); JAX 0.10.2's gives 3+1j for both max and min of
    [1+2j, nan, 3+1j], which cannot be right. secant's: NaN, and NumPy's where the real part ties."""
    a = np.array([1 + 2j, complex(np.nan, 0), 3 + 1j], np.complex64)
    assert np.isnan(complex(snp.max(a)).real) and np.isnan(complex(snp.min(a)).real)
    b = np.array([1 + 2j, complex(3, np.nan), 3 + 1j], np.complex64)
    got = complex(snp.max(b))
    assert got.real == 3 and np.isnan(got.imag)
    _close(snp.nanmax(b), 3 + 1j)           # (nanmax skips it, as JAX's and NumPy's)
    _close(snp.sort(a), [1 + 2j, 3 + 1j, complex(np.nan, 0)])    # NaN last, as JAX's


def test_lax_complex_keeps_its_parts_with_inf_and_nan_eagerly_as_under_jit():
    """Eager lax.complex computed x + 1j * y: complex(0, inf) was nan+inf j and complex(3, nan)
    nan+nan j (a silently wrong real part); jit's and JAX's are inf j and 3+nan j."""
    x = np.array([0, 3, -1], np.float32)
    y = np.array([np.inf, np.nan, -np.inf], np.float32)
    for f in (lax.complex, secant.jit(lax.complex)):
        got = np.asarray(f(x, y))
        np.testing.assert_array_equal(got.real, x)
        np.testing.assert_array_equal(got.imag, y)


# --- nn activations built on logaddexp (it added a complex x to a float 0: a dtype error) -------
Z = np.array([0.7 - 0.4j, -0.2 + 0.1j, 1.5 + 2j], np.complex64)
T = np.array([0.3 + 0.2j, -0.5j, 1.0], np.complex64)
# JAX 0.10.2's values at Z, and its jax.grad of sum(real(f(z))) at Z
JAX_ACTIVATIONS = {
    "softplus": ([1.08537 - 0.26808j, 0.5969 + 0.04501j, 1.42695 + 1.77996j],
                 [0.6742886 - 0.0894708j, 0.45004243 + 0.02477169j, 1.0498426 + 0.23480728j]),
    "log_sigmoid": ([-0.38537 - 0.13192j, -0.7969 + 0.05499j, 0.07305 + 0.22004j],
                    [0.32571152 + 0.08947087j, 0.5499575 - 0.02477173j, -0.0498426 - 0.23480734j]),
    "mish": ([0.53281 - 0.39398j, -0.11034 + 0.04713j, 1.76906 + 2.14153j],
             [1.0181831 - 0.14176281j, 0.47094512 + 0.06392533j, 0.57297575 - 0.48593342j]),
}


@pytest.mark.parametrize("name", sorted(JAX_ACTIVATIONS))
def test_softplus_log_sigmoid_mish_of_complex_as_jax(name):
    f = getattr(nn, name)
    value, grad = JAX_ACTIVATIONS[name]
    np.testing.assert_allclose(np.asarray(f(Z)), value, atol=2e-5)
    np.testing.assert_allclose(np.asarray(secant.jit(f)(Z)), value, atol=2e-5)
    g = secant.grad(lambda z: snp.sum(snp.real(f(z))))(Z)
    np.testing.assert_allclose(np.asarray(g), grad, atol=2e-5)
    _, tan = secant.jvp(f, (Z,), (T,))
    h = 1e-3
    fd = (np.asarray(f(Z.astype(np.complex128) + h * T)) -
          np.asarray(f(Z.astype(np.complex128) - h * T))) / (2 * h)
    np.testing.assert_allclose(np.asarray(tan), fd, atol=3e-4)
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(Z[:, None]))[:, 0], np.asarray(f(Z)),
                               atol=1e-6)


def test_complex_logaddexp_is_the_principal_log_of_the_sum():
    a = np.array([0.7 - 0.4j, 3 + 3j, -1 - 3j], np.complex128)
    b = np.array([1.2 + 3j, 2 - 3j, -2 - 2j], np.complex128)
    want = np.log(np.exp(a) + np.exp(b))
    got = np.asarray(snp.logaddexp(a.astype(np.complex64), b.astype(np.complex64)))
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.all(np.abs(got.imag) <= np.pi)


# JAX 0.10.2's values at the Python complex 0.5 - 0.3j (secant: "'<=' not supported between
# instances of 'complex' and 'int'", a bare Python TypeError)
JAX_AT_A_PYTHON_COMPLEX = {"relu": 0.5 - 0.3j, "relu6": 0.5 - 0.3j, "elu": 0.5 - 0.3j,
                           "selu": 0.52535 - 0.31521j, "leaky_relu": 0.5 - 0.3j,
                           "hard_tanh": 0.5 - 0.3j, "hard_sigmoid": 0.58333 - 0.05j,
                           "hard_silu": 0.27667 - 0.2j, "sparse_plus": 0.54 - 0.225j,
                           "log1mexp": -0.782716 - 0.40288615j}


@pytest.mark.parametrize("name", sorted(JAX_AT_A_PYTHON_COMPLEX))
def test_piecewise_activations_of_a_python_complex_as_jax(name):
    f = getattr(nn, name)
    want = JAX_AT_A_PYTHON_COMPLEX[name]
    np.testing.assert_allclose(complex(f(0.5 - 0.3j)), want, atol=1e-5)
    np.testing.assert_allclose(complex(secant.jit(f)(0.5 - 0.3j)), want, atol=1e-5)
    np.testing.assert_allclose(complex(f(np.complex64(0.5 - 0.3j))), want, atol=1e-5)
    assert float(f(0.5)) == float(f(np.float32(0.5)))      # (a Python float as before)


# --- scipy.special.gamma and erfcx of complex (refused: "floor requires real floating-point") ---
ZS = np.array([0.7 - 0.4j, -0.2 + 0.1j, 1.5 + 2j, -2.5 + 0.5j, 5 + 3j], np.complex64)
# SciPy's (complex128) values at ZS
SCIPY_GAMMA = [0.96257164 + 0.44080413j, -4.8029996 - 1.85119623j, 0.16591511 + 0.14946347j,
               -0.3338752 - 0.20645731j, 0.01604188 - 9.43329329j]
SCIPY_ERFCX = [0.487556393 + 0.147975436j, 1.25669388 - 0.162442988j,
               0.150415439 - 0.170371143j, -646.613527 - 482.917986j,
               0.082987738 - 0.0483893652j]


@pytest.mark.parametrize("name", ["gamma", "erfcx"])
def test_gamma_and_erfcx_of_complex_as_scipy_and_jax(name):
    import secant.scipy.special as sp
    f = getattr(sp, name)
    want = SCIPY_GAMMA if name == "gamma" else SCIPY_ERFCX
    for g in (f, secant.jit(f)):
        np.testing.assert_allclose(np.asarray(g(ZS)), want, rtol=5e-5)
    np.testing.assert_allclose(np.asarray(secant.vmap(f)(ZS)), np.asarray(f(ZS)), rtol=1e-5)
    # d/dz is holomorphic: the tangent along t is f'(z) t, against central differences
    z64 = ZS.astype(np.complex128)
    _, tan = secant.jvp(f, (ZS,), (T[:1].repeat(5),))
    h = 1e-3
    fd = (np.asarray(f(z64 + h * T[0])) - np.asarray(f(z64 - h * T[0]))) / (2 * h)
    np.testing.assert_allclose(np.asarray(tan), fd, rtol=5e-3, atol=2e-3)   # (float32 f)
    # JAX 0.10.2's jax.grad of real(f(z)) at 0.7 - 0.4j
    jax_grad = {"gamma": -0.38408518 - 1.2513888j, "erfcx": -0.32741982 - 0.18287951j}[name]
    np.testing.assert_allclose(complex(secant.grad(lambda z: snp.real(f(z)))(ZS[0])), jax_grad,
                               rtol=1e-5)


def test_complex_gamma_is_nan_at_the_poles_as_scipy():
    import secant.scipy.special as sp
    got = np.asarray(sp.gamma(np.array([0j, -2 + 0j, complex(np.nan, 1)], np.complex64)))
    assert np.isnan(got.real).all() and np.isnan(got.imag).all()
    assert np.isfinite(np.asarray(sp.gamma(np.complex64(-2 + 1e-3j)))).all()


def test_owens_t_of_complex_stays_refused():
    """JAX 0.10.2's owens_t(z, z) of complex is not Owen's T continued analytically (at 0.7-0.4j
    it gives 0.0638-0.0365j; the integral (1/2pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx
    along [0, a] is 0.0985-0.0039j): a clear refusal rather than JAX's number."""
    import secant.scipy.special as sp
    with pytest.raises(ValueError, match="real input"):
        sp.owens_t(ZS, ZS)


def test_repeat_refuses_non_integer_repeat_counts():
    """repeat(a, counts) with complex counts was a bare Python TypeError ('>' between complex
    and int) and float counts were truncated (1.5 -> 1); JAX's: a TypeError for float counts."""
    a = np.array([0.7 - 0.4j, 0.2 + 0.1j], np.complex64)
    for counts in (a, np.array([1.5, 2.0])):
        with pytest.raises(TypeError, match="repeats must be integers"):
            snp.repeat(a, counts)
    _close(snp.repeat(a, np.array([1, 2])), np.repeat(a, [1, 2]))


# SciPy's loggamma (complex128) at LZ: the principal branch, one cut on the negative real axis
LZ = np.array([0.7 - 0.4j, -0.2 + 0.1j, 1.5 + 2j, -2.5 + 0.5j, 5 + 3j, -2.5 + 0j, -7.3 - 4j,
               0.3 + 9j], np.complex64)
SCIPY_LOGGAMMA = [0.05704475 + 0.42944067j, 1.63849186 - 2.77371371j, -1.49919637 + 0.73328068j,
                  -0.93508562 - 8.87096289j, 2.24424672 + 4.71408954j, -0.05624372 - 9.42477796j,
                  -18.88052653 + 16.12276615j, -13.65758673 + 10.46327057j]


def test_loggamma_of_complex_is_scipys_principal_branch():
    """JAX's loggamma of complex shifts z right with a while_loop (no reverse-mode derivative);
    secant's is the reflection formula with SciPy's 2 pi i correction: its values, and a
    derivative (digamma) against central differences."""
    import secant.scipy.special as sp
    for g in (sp.loggamma, secant.jit(sp.loggamma)):
        np.testing.assert_allclose(np.asarray(g(LZ)), SCIPY_LOGGAMMA, rtol=2e-6, atol=2e-5)
    got = np.asarray(sp.loggamma(np.array([0j, -3 + 0j, complex(np.nan, 0)], np.complex64)))
    assert np.isnan(got.real).all()
    z = LZ[[0, 1, 2, 4, 6]]         # (off the cut)
    _, tan = secant.jvp(sp.loggamma, (z,), (T[:1].repeat(5),))
    h = 1e-3
    fd = (np.asarray(sp.loggamma(z + h * T[0])) - np.asarray(sp.loggamma(z - h * T[0]))) / (2 * h)
    np.testing.assert_allclose(np.asarray(tan), fd, rtol=5e-3, atol=5e-3)
    g = complex(secant.grad(lambda z: snp.real(sp.loggamma(z)))(LZ[0]))
    np.testing.assert_allclose(g, complex(tan[0]) / complex(T[0]), rtol=1e-4)   # (JAX: f'(z))
    np.testing.assert_allclose(np.asarray(secant.vmap(sp.loggamma)(LZ)),
                               np.asarray(sp.loggamma(LZ)), rtol=1e-5, atol=1e-5)


def test_vmap_of_copysign_with_a_scalar_magnitude_against_a_loop():
    """A (3, 3) result for a batch of 3 while copysign's source read its operands through a
    static query (the lead's complex check of this session, replaced by an `if` of its own)."""
    x = np.array([0.5, -1.0, 2.0], np.float32)
    got = secant.vmap(lambda t: snp.copysign(2.0, t))(x)
    np.testing.assert_array_equal(np.asarray(got), np.copysign(2.0, x).astype(np.float32))

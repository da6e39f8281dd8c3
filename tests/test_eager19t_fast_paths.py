"""Issue 19 (eager19t): the eager shortcuts give what the general paths give.

secant.numpy's transpose, swapaxes, max/min and `x ** k` of an eager float array call the
primitive's NumPy implementation directly: same values, dtype, shape and weak type as the
traced (jit) path and as NumPy, and the same errors. grad's wrapper runs a derivative on NumPy's
values before its general path: a callee rebound between calls is still seen, and a run on
NumPy's values that fails is not run twice. No timings here."""
import types

import numpy as np
import pytest
from secant.backends.array import Array
from secant.backends.primitives import elementwise as ew

import secant
import secant.numpy as snp
from secant import raw_eager

_VALUES = [np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5,
           np.linspace(-1, 1, 24).reshape(2, 3, 4),
           np.arange(6, dtype=np.int32).reshape(3, 2),
           np.array([[1.0, np.nan], [-0.0, 0.0]], np.float32),
           np.float32(1.5), np.linspace(0, 1, 5, dtype=np.float32)]


def _arrays(value):
    a = snp.asarray(value)
    yield a
    if np.issubdtype(np.asarray(a).dtype, np.floating):
        yield a * 1.0 if a.weak_type else snp.asarray(2.0) * snp.ones(a.shape)   # weak


def _same(got, want):
    """got (an eager Array) is want (jit's Array, or NumPy's value): shape, dtype, values."""
    assert type(got) is Array
    w = np.asarray(want)
    g = np.asarray(got)
    assert (g.shape, g.dtype) == (w.shape, w.dtype)
    np.testing.assert_array_equal(g, w)
    if type(want) is Array:
        assert got.weak_type == want.weak_type


@pytest.mark.parametrize("value", _VALUES, ids=lambda v: f"{np.asarray(v).dtype}{np.shape(v)}")
def test_transpose_and_swapaxes_are_the_traced_paths(value, x64_or_not):
    for a in _arrays(value):
        host = np.asarray(a)
        _same(snp.transpose(a), secant.jit(snp.transpose)(a))
        _same(snp.transpose(a), np.transpose(host))
        assert snp.transpose(a).weak_type == a.weak_type
        for i in range(-host.ndim, host.ndim):
            for j in range(-host.ndim, host.ndim):
                got = snp.swapaxes(a, i, j)
                _same(got, secant.jit(lambda v, i=i, j=j: snp.swapaxes(v, i, j))(a))
                _same(got, np.swapaxes(host, i, j))
        for bad in (host.ndim, -host.ndim - 1):
            with pytest.raises(secant.SecantError, match="out of bounds"):
                snp.swapaxes(a, bad, 0)


@pytest.mark.parametrize("value", _VALUES, ids=lambda v: f"{np.asarray(v).dtype}{np.shape(v)}")
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_are_the_traced_paths(value, name, x64_or_not):
    op = getattr(snp, name)
    for a in _arrays(value):
        host = np.asarray(a)
        axes = [None] + list(range(-host.ndim, host.ndim)) + ([(0, host.ndim - 1)]
                                                               if host.ndim > 1 else [])
        for axis in axes:
            for keepdims in (False, True):
                got = op(a, axis=axis, keepdims=keepdims)
                _same(got, secant.jit(
                    lambda v, axis=axis, keepdims=keepdims: op(v, axis=axis, keepdims=keepdims))(a))
                _same(got, getattr(np, name)(host, axis=axis, keepdims=keepdims))
        with pytest.raises(secant.SecantError):
            op(a, axis=host.ndim)


def test_max_of_an_empty_axis_is_still_refused():
    a = snp.zeros((0, 3), np.float32)
    with pytest.raises(secant.SecantError, match="zero-size"):
        snp.max(a, axis=0)
    np.testing.assert_array_equal(np.asarray(snp.max(a, axis=1)), np.zeros(0, np.float32))
    np.testing.assert_array_equal(np.asarray(snp.max(a, axis=0, initial=-1.0)), -np.ones(3))


@pytest.mark.parametrize("value", _VALUES, ids=lambda v: f"{np.asarray(v).dtype}{np.shape(v)}")
def test_integer_powers_are_the_traced_path(value, x64_or_not):
    for a in _arrays(value):
        for k in (0, 1, 2, 3, 4, 5, -1, -2):
            if k < 0 and not np.issubdtype(np.asarray(a).dtype, np.floating):
                continue
            got = a ** k
            if 0 <= k <= 4:     # (integer_pow: the general eager path's products, exactly)
                _same(got, ew.integer_pow_p.bind(a, y=k))
            jitted = secant.jit(lambda v, k=k: v ** k)(a)    # (XLA squares: within an ulp)
            assert got.weak_type == jitted.weak_type
            np.testing.assert_allclose(np.asarray(got), np.asarray(jitted), rtol=1e-6)
            with np.errstate(all="ignore"):
                want = np.asarray(a) ** k
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
            assert np.asarray(got).dtype == np.asarray(a).dtype


def test_grad_through_the_fast_paths_against_finite_differences():
    def f(w, x, np_like=snp):
        h = np_like.tanh(x @ w)
        z = h - np_like.max(h, axis=1, keepdims=True) + np_like.min(h.T, axis=0)[:, None] ** 2
        return np_like.sum(np_like.swapaxes(z, 0, 1) ** 3) + np_like.sum(np_like.transpose(w) ** 2)
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((3, 4)), rng.standard_normal((5, 3))
    got = np.asarray(secant.grad(f)(w.astype(np.float32), x.astype(np.float32)))
    want = np.zeros_like(w)         # (central differences in float64)
    for i in np.ndindex(*w.shape):
        d = np.zeros_like(w)
        d[i] = 1e-6
        want[i] = (f(w + d, x, np) - f(w - d, x, np)) / 2e-6
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


# --- grad's wrapper: the run on NumPy's values ahead of its general path -----------------------
_ns = snp       # a module a derivative reads a ufunc of (rebound below)


def _chain(x):
    for _ in range(3):
        x = _ns.sin(x)
    return snp.sum(x)


def test_a_module_rebound_between_calls_is_seen():
    global _ns
    g = secant.grad(_chain)
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    assert raw_eager.raw_version(g.__secant_current__()) is not None
    want = np.cos(x) * np.cos(np.sin(x)) * np.cos(np.sin(np.sin(x)))
    np.testing.assert_allclose(np.asarray(g(x)), want, rtol=1e-6)
    try:
        _ns = types.SimpleNamespace(sin=snp.cos)
        c1, c2 = np.cos(x), np.cos(np.cos(x))
        want = -np.sin(x) * -np.sin(c1) * -np.sin(c2)
        np.testing.assert_allclose(np.asarray(g(x)), want, rtol=1e-5)
    finally:
        _ns = snp
    np.testing.assert_allclose(np.asarray(g(x)), np.cos(x) * np.cos(np.sin(x)) * np.cos(
        np.sin(np.sin(x))), rtol=1e-6)


def _number_through_a_ufunc(x, k):
    return snp.sum(snp.sin(k) * x)


def test_a_failed_numpy_run_is_not_run_again(monkeypatch):
    g = secant.grad(_number_through_a_ufunc)
    calls = []
    run = raw_eager.run

    def counted(gen, args):
        out = run(gen, args)
        calls.append(out)
        return out
    monkeypatch.setattr(raw_eager, "run", counted)
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    for _ in range(3):
        got = g(x, 2.0)
        assert np.asarray(got).dtype == np.float32 and not got.weak_type
        np.testing.assert_allclose(np.asarray(got), np.full(4, np.sin(2.0)), rtol=1e-6)
    # (x32: NumPy's sin(2.0) is a float64) tried on NumPy's values once: the general path ran
    # it as written without trying again, and stop() left it to the arrays from then on
    assert [c for c in calls if c is not raw_eager.NOT_RAW] == [raw_eager.FAILED]
    assert raw_eager.raw_version(g.__secant_current__()) is None


def test_the_numpy_run_under_jit_and_value_and_grad():
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    want = np.cos(x) * np.cos(np.sin(x)) * np.cos(np.sin(np.sin(x)))
    np.testing.assert_allclose(np.asarray(secant.jit(secant.grad(_chain))(x)), want, rtol=1e-5)
    v, d = secant.value_and_grad(_chain)(x)
    np.testing.assert_allclose(float(v), np.sum(np.sin(np.sin(np.sin(x)))), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(d), want, rtol=1e-6)
    assert np.asarray(d).dtype == np.float32 and np.asarray(v).dtype == np.float32


@pytest.mark.parametrize("value", _VALUES, ids=lambda v: f"{np.asarray(v).dtype}{np.shape(v)}")
def test_division_is_the_traced_path(value, x64_or_not):
    """x / y of eager floats calls NumPy's true_divide as div's impl does: values (a zero
    divisor's inf and nan, quietly), dtype and weak type as jit's and the general path's."""
    for a in _arrays(value):
        host = np.asarray(a)
        flipped = snp.asarray(host[::-1] if host.ndim else host) - 1     # (zeros among them)
        for x, y in ((a, flipped), (a, 2), (3, a), (a, 0.5), (a, a), (flipped, 0)):
            got = x / y
            jitted = secant.jit(lambda u, v: u / v)(x, y)
            _same(got, jitted)      # (ints too: jit's weak type was JAX's since sem15v)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(jitted))
            xs = [snp.asarray(v) if not isinstance(v, Array) else v for v in (x, y)]
            if all(not v.weak_type for v in xs) and xs[0].dtype == xs[1].dtype and \
                    np.issubdtype(xs[0].dtype, np.inexact):
                _same(got, ew.div_p.bind(*xs))      # (the general eager path)
    c = snp.asarray(np.array([1 + 2j, 3 - 1j], np.complex64))
    _same(c / c[::-1], np.array([1 + 2j, 3 - 1j], np.complex64) / np.array([3 - 1j, 1 + 2j],
                                                                              np.complex64))
    i = snp.arange(4)
    _same(i / 2, secant.jit(lambda v: v / 2)(i))     # (ints: promoted, as before)


def test_jit_of_a_python_int_over_an_int_array_is_strong():
    """(was a strict xfail: jit gave a weakly typed float32; fixed by sem15v in
    promote_inexact, which test_sem15v_semantics checks against JAX's recorded dtypes)"""
    a = snp.arange(6)
    assert not (3 / a).weak_type
    assert not secant.jit(lambda u, v: u / v)(3, a).weak_type

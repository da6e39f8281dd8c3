"""The warm paths issue 19 added (jit's per-signature runner for flat positional arguments, and
eager one-argument ufunc primitives called without bind) give exactly what the full paths give:
same values, dtypes, weak types, retracing and cache bounds. No timings here."""
import warnings

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import api


def f(a, b, c):
    return a * b + c


def _eager(*args):
    return f(*[snp.asarray(x) if not isinstance(x, (int, float)) else x for x in args])


@pytest.mark.parametrize("kinds", ["dev,dev,dev", "np,np,np", "dev,np,scalar", "eager,np,dev",
                                   "np64,scalar,eager"])
def test_warm_jit_call_matches_eager_for_each_kind_of_argument(kinds):
    base = [np.linspace(0, 1, 5, dtype=np.float32), np.linspace(1, 2, 5, dtype=np.float32),
            np.float32(0.25)]
    args = []
    for k, v in zip(kinds.split(","), base):
        if k == "dev":
            args.append(secant.device_put(np.broadcast_to(v, (5,)).astype(np.float32)))
        elif k == "np":
            args.append(np.broadcast_to(v, (5,)).astype(np.float32))
        elif k == "np64":               # canonicalised to float32 on the way in
            args.append(np.broadcast_to(v, (5,)).astype(np.float64) + 1e-9)
        elif k == "eager":
            args.append(snp.asarray(np.broadcast_to(v, (5,)).astype(np.float32)))
        else:
            args.append(0.25)
    g = secant.jit(f)
    outs = [g(*args)]                           # traced (unless an earlier case did)
    before = api.stats["traces"]
    outs += [g(*args) for _ in range(3)]        # the warm path: no new trace
    assert api.stats["traces"] == before
    want = np.asarray(_eager(*[np.asarray(a) if not isinstance(a, float) else a for a in args]))
    for out in outs:
        np.testing.assert_allclose(np.asarray(out), want.astype(np.float32), rtol=1e-6)
        assert out.dtype == np.float32


def test_warm_path_tells_signatures_apart():
    g = secant.jit(lambda a: a * 2)
    x32 = np.arange(3, dtype=np.float32)
    xi = np.arange(3, dtype=np.int32)
    for _ in range(2):
        assert g(x32).dtype == np.float32
        assert g(xi).dtype == np.int32
        assert g(2.0).weak_type and g(2.0).dtype == np.float32
        assert g(2).dtype == np.int32
        assert g(True).dtype == np.int32 or g(True).dtype == np.bool_
        np.testing.assert_array_equal(np.asarray(g(np.arange(4, dtype=np.float32))), [0, 2, 4, 6])
        strong = snp.asarray(np.float32(2.0))
        weak = snp.asarray(2.0)
        assert not g(strong).weak_type and g(weak).weak_type
    assert g(True).dtype == secant.jit(lambda a: a * 2)(True).dtype


def test_warm_path_follows_x64(x64):
    g = secant.jit(lambda a: a + 1)
    x = np.arange(3, dtype=np.float64)
    assert g(x).dtype == np.float64
    secant.config.update("enable_x64", False)
    try:
        assert g(x).dtype == np.float32
        assert g(x).dtype == np.float32
    finally:
        secant.config.update("enable_x64", True)
    assert g(x).dtype == np.float64


def test_warm_path_keeps_the_cache_bound_and_lru_order():
    old = secant.config.read("jit_cache_size")
    secant.config.update("jit_cache_size", 2)
    try:
        traces = []

        def h(x):
            traces.append(x.shape)
            return x + 1

        g = secant.jit(h)
        a1, a2, a3 = (np.zeros(n, np.float32) for n in (1, 2, 3))
        g(a1), g(a2), g(a1), g(a1)          # warm hits on a1 keep it the most recent
        g(a3)                               # evicts a2
        assert traces == [(1,), (2,), (3,)]
        g(a1)
        assert len(traces) == 3
        np.testing.assert_array_equal(np.asarray(g(a2)), [1, 1])
        assert len(traces) == 4 and g._cache_size() == 2
        assert len(g._cache.fast) <= 4
    finally:
        secant.config.update("jit_cache_size", old)


def test_warm_path_inside_jit_traces_inline():
    inner = secant.jit(lambda a: a * 3)
    x = np.arange(3, dtype=np.float32)
    inner(x), inner(x)
    outer = secant.jit(lambda a: inner(a) + 1)
    np.testing.assert_array_equal(np.asarray(outer(x)), x * 3 + 1)


def test_donated_arguments_still_deleted():
    g = secant.jit(lambda a: a + 1, donate_argnums=0)
    x = secant.device_put(np.arange(3, dtype=np.float32))
    g(x)
    with pytest.raises(secant.SecantError, match="donate_argnums"):
        g(x)


# --- eager one-argument ufuncs ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sin", "cos", "tanh", "exp", "log", "sqrt", "negative", "sign",
                                  "arctanh", "cbrt"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "int32"])
def test_eager_unary_matches_bind(name, dtype, x64):
    if name == "cbrt" and dtype == "complex64":
        pytest.skip("cbrt is real only")
    fn = getattr(snp, name)
    values = [-2.0, -0.5, 0.0, 0.5, 2.0] + ([np.inf] if dtype != "int32" else [3.0])
    x = np.array(values).astype(dtype)
    for a in (snp.asarray(x), snp.asarray(x[1]), snp.asarray(0.5)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # floating-point warnings stay quiet
            got = fn(a)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(np, name)(np.asarray(a).astype(
                np.result_type(np.asarray(a).dtype, np.float16)
                if name not in ("negative", "sign") else np.asarray(a).dtype))
        assert got.dtype == want.dtype or (dtype == "float16" and got.dtype == np.float16)
        assert got.weak_type == a.weak_type
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(np.asarray(got, dtype=want.dtype), want,
                                   rtol=2e-3 if "16" in str(got.dtype) else 1e-6, equal_nan=True)
        assert type(got._npy) is np.ndarray
        with pytest.raises(secant.SecantError, match="immutable"):
            got[()] = 1


def test_eager_unary_under_transforms():
    x = np.linspace(-1, 1, 4).astype(np.float32)
    g = secant.grad(lambda v: snp.sum(snp.sin(snp.tanh(v))))(x)
    t = np.tanh(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(t) * (1 - t * t), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(secant.jit(snp.sin)(x)), np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(secant.vmap(snp.exp)(x)), np.exp(x), rtol=1e-6)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "int32", "bool"])
def test_eager_binary_matches_numpy_with_jax_promotion(name, dtype, x64):
    if dtype == "bool" and name == "subtract":
        pytest.skip("NumPy has no boolean subtract")
    if dtype == "complex64" and name in ("maximum", "minimum"):
        pytest.skip("ordering complex numbers")
    fn = getattr(snp, name)
    x = np.array([-2.0, -0.5, 0.0, 0.5, 2.0, 3.0]).astype(dtype)
    y = np.array([1.0, -1.5, 0.0, 0.25, np.inf if dtype.startswith("float") else 2.0,
                  -3.0]).astype(dtype)
    for a, b in ((snp.asarray(x), snp.asarray(y)), (snp.asarray(x[1]), snp.asarray(y)),
                 (snp.asarray(2.0), snp.asarray(y)), (snp.asarray(2.0), snp.asarray(0.5))):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = fn(a, b)
        rt = snp.result_type(a, b)            # JAX's promotion (a weak scalar adapts)
        want = getattr(np, name)(np.asarray(a).astype(rt), np.asarray(b).astype(rt))
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        if a.dtype == b.dtype:                  # (mixed: promotion decides, as before)
            assert got.weak_type == (a.weak_type and b.weak_type)
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3 if "16" in dtype else 1e-6)
        assert type(got._npy) is np.ndarray


def test_eager_binary_shape_errors_name_the_caller():
    a = snp.asarray(np.zeros(2, np.float32))
    with pytest.raises(secant.SecantError, match="incompatible shapes") as info:
        a * snp.asarray(np.zeros(3, np.float32))
    assert "test_perf_paths.py" in str(info.value)

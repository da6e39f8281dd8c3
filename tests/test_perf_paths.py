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


def _host_value_ok(a):
    """An eager result holds an ndarray, or for a 0-d result the NumPy scalar NumPy computed (of
    the array's dtype); np.asarray of it is an ndarray either way."""
    v = a._npy
    stored = type(v) is np.ndarray or (isinstance(v, np.generic) and a.shape == ()
                                        and v.dtype == a.dtype)
    return stored and type(np.asarray(a)) is np.ndarray and np.asarray(a).dtype == a.dtype


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
        assert _host_value_ok(got)
        with pytest.raises(secant.SecantError, match="immutable"):
            got[()] = 1


@pytest.mark.parametrize("name", ["sin", "exp", "log", "sqrt", "negative", "arctanh"])
def test_eager_unary_of_python_and_numpy_values_matches_conversion_then_bind(name, x64_or_not):
    # Python floats, NumPy scalars and arrays skip conversion + bind: same value, dtype, weak
    # type, quiet floating-point errors, and 64-bit inputs narrowed without enable_x64
    from secant.numpy.conversion import ensure_array, to_inexact
    fn = getattr(snp, name)
    from secant.backends.primitives import elementwise as ew
    prim = getattr(ew, {"negative": "neg", "arctanh": "atanh"}.get(name, name) + "_p").bind
    convert = ensure_array if name == "negative" else to_inexact
    values = [0.5, -2.0, float("inf"), np.float32(0.5), np.float64(-0.7), np.complex64(1 + 2j),
              np.complex128(1 - 1j), np.float16(0.5), np.array([0.5, -1.0, np.inf], np.float32),
              np.array(-3.0), np.array([[1.0, -2.0]]).T, np.array([1, 2], np.int32), 3, True]
    for x in values:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                want = prim(convert(x))
            except secant.SecantError as e:     # (negative of a bool): the same error
                with pytest.raises(type(e)):
                    fn(x)
                continue
            got = fn(x)
        assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert _host_value_ok(got)


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
        assert _host_value_ok(got)


def test_eager_binary_shape_errors_name_the_caller():
    a = snp.asarray(np.zeros(2, np.float32))
    with pytest.raises(secant.SecantError, match="incompatible shapes") as info:
        a * snp.asarray(np.zeros(3, np.float32))
    assert "test_perf_paths.py" in str(info.value)


# --- 0-d operands: the fast paths compute on the scalar and hand back a 0-d array --------------
@pytest.mark.parametrize("dtype", ["float16", "float32", "complex64", "int32", "bool"])
def test_eager_zero_d_fast_paths_keep_dtype_shape_and_nan(dtype):
    for value in (0.5, np.nan, np.inf, -np.inf, 0.0):
        if dtype in ("int32", "bool") and not np.isfinite(value):
            continue
        a = snp.asarray(np.asarray(value).astype(dtype))
        v, f = np.asarray(a), np.asarray(a).astype(snp.result_type(a, 0.5))
        for ours, numpys in ((snp.sin, lambda: np.sin(f)), (snp.exp, lambda: np.exp(f)),
                             (lambda a: a * a, lambda: v * v), (lambda a: a + a, lambda: v + v),
                             (lambda a: snp.maximum(a, a), lambda: np.maximum(v, v))):
            with warnings.catch_warnings():
                warnings.simplefilter("error")      # quiet, as the full path
                got = ours(a)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = numpys()
            assert got.shape == () and got.dtype == want.dtype, (got.dtype, want.dtype)
            assert _host_value_ok(got) and not got.weak_type
            np.testing.assert_array_equal(np.asarray(got), want)
            with pytest.raises(secant.SecantError, match="immutable"):
                got[()] = 1


def test_eager_zero_d_with_an_array_broadcasts_and_weak_scalars_adapt():
    x = snp.asarray(np.array([1.0, np.nan, 3.0], np.float32))
    s = snp.asarray(np.float32(2.0))
    for got in (x * s, s * x, snp.subtract(s, x)):
        assert got.shape == (3,) and got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(s - x), [1.0, np.nan, -1.0])
    w = snp.asarray(2.0)                              # weak: float32, weak result
    assert (w * w).weak_type and (w * w).dtype == np.float32 and snp.sin(w).weak_type
    assert not (w * s).weak_type
    h = snp.asarray(np.float16(3.0))
    assert (h * w).dtype == np.float16                # the weak scalar takes the array's type
    np.testing.assert_allclose(float(snp.sin(snp.asarray(np.float64(0.5)))), np.sin(0.5),
                               rtol=1e-6)             # (canonicalised to float32)


# --- structural shape rules: a signature seen once passes without re-checking ------------------
def test_structural_rule_cache_still_rejects_what_it_has_not_seen():
    from secant.backends.primitives import structural as st
    x = snp.asarray(np.ones((2, 3), np.float32))
    assert st.reduce_sum_p.bind(x, axes=(1,)).shape == (2,)
    assert st.reduce_sum_p.bind(x, axes=(1,)).shape == (2,)      # cached
    for bad in ((1.0,), (True,), (2,), (1, 1)):   # equal to (1,) or close, but not accepted
        with pytest.raises(secant.SecantError):
            st.reduce_sum_p.bind(x, axes=bad)
    b = snp.asarray(np.ones((2, 3), bool))
    assert st.reduce_and_p.bind(b, axes=(1,)).dtype == np.bool_
    with pytest.raises(secant.SecantError, match="boolean"):
        st.reduce_and_p.bind(x, axes=(1,))        # same shape and axes, other dtype
    with pytest.raises(secant.SecantError, match="transpose"):
        st.transpose_p.bind(snp.asarray(np.ones((2, 3, 4), np.float32)), permutation=(1, 0))
    y = st.transpose_p.bind(x, permutation=(1, 0))
    np.testing.assert_array_equal(np.asarray(y), np.ones((3, 2)))
    with pytest.raises(secant.SecantError, match="transpose"):
        st.transpose_p.bind(x, permutation=(1, 0, 2))


def test_structural_rule_cache_keys_unusual_params_and_values():
    from secant.backends.primitives import structural as st
    x = snp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    for _ in range(2):      # a list parameter is not cached, and still checked
        np.testing.assert_array_equal(np.asarray(st.reduce_sum_p.bind(x, axes=[0])), [3, 5, 7])
        with pytest.raises(secant.SecantError):
            st.reduce_sum_p.bind(x, axes=[2])
    # values never enter the key: two arrays of one signature, each its own result
    z = snp.asarray(np.full((2, 3), np.nan, np.float32))
    assert np.isnan(np.asarray(st.reduce_max_p.bind(z, axes=(0,)))).all()
    np.testing.assert_array_equal(np.asarray(st.reduce_max_p.bind(x, axes=(0,))), [3, 4, 5])


def test_structural_rule_cache_key_tells_equal_values_of_other_types_apart(x64):
    from secant.backends.primitives.structural import _rule_key
    x = np.ones((2, 3), np.float32)
    key = _rule_key((x,), {"axes": (1,)})
    others = [_rule_key((x,), {"axes": axes}) for axes in ((True,), ((1,),), 1, True, (1, 1))]
    others += [_rule_key((x.astype(np.float64),), {"axes": (1,)}),
               _rule_key((x.reshape(3, 2),), {"axes": (1,)}),
               _rule_key((x,), {"dims": (1,)})]
    assert key is not None and None not in others and key not in others
    assert len(set(others)) == len(others)
    assert _rule_key((x,), {"axes": (1,)}) == key
    secant.config.update("enable_x64", False)
    assert _rule_key((x,), {"axes": (1,)}) != key           # x64 decides canonical dtypes
    secant.config.update("enable_x64", True)
    for params in ({"axes": [1]}, {"axes": (np.int64(1),)}, {"axes": (1.0,)}):
        assert _rule_key((x,), params) is None               # not plain: checked every time
    assert _rule_key((1.0,), {}) is None and _rule_key((x[0, 0],), {}) is None
    assert _rule_key((x,), {"t": np.dtype("float32")}) != _rule_key((x,), {"t": "float32"})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eager_zero_d_scalar_arithmetic_is_the_ufunc_and_quiet(dtype, x64):
    big = np.finfo(dtype).max
    values = [0.1, -2.5, big, -big, np.finfo(dtype).tiny, np.nan, np.inf, -np.inf, 0.0, -0.0]
    for p in values:
        for q in values:
            a, b = snp.asarray(np.asarray(p, dtype)), snp.asarray(np.asarray(q, dtype))
            for name in ("add", "subtract", "multiply"):
                with warnings.catch_warnings():
                    warnings.simplefilter("error")      # overflow, inf - inf: quiet
                    got = getattr(snp, name)(a, b)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want = getattr(np, name)(np.asarray(p, dtype), np.asarray(q, dtype))
                assert got.dtype == np.dtype(dtype) and got.shape == ()
                assert _host_value_ok(got)
                np.testing.assert_array_equal(np.asarray(got), want)
                assert np.signbit(np.asarray(got)) == np.signbit(want)    # -0.0 kept


# --- transformation: each pass reads the function a bounded number of times (no timings) -------
def test_desugaring_reads_the_functions_bound_names_once_not_once_per_call(tmp_path, monkeypatch):
    import importlib.util
    from secant.transformer import desugar
    lines = ["import secant.numpy as snp", "", "", "def f(v0):"]
    lines += [f"    v{i} = snp.sin(v{i - 1}) * 2.0" for i in range(1, 61)]
    lines += ["    return snp.sum(v60)", ""]
    path = tmp_path / "many_calls.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("secant_test_many_calls", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    calls = []
    real = desugar.hygiene_bound
    monkeypatch.setattr(desugar, "hygiene_bound", lambda node: calls.append(1) or real(node))
    x = np.linspace(-1, 1, 3).astype(np.float32)
    g = np.asarray(secant.grad(module.f)(x))
    want = np.ones(3)
    v = x.astype(np.float64)
    for _ in range(60):
        want = want * 2.0 * np.cos(v)
        v = np.sin(v) * 2.0
    np.testing.assert_allclose(g, want, rtol=1e-4)
    assert len(calls) <= 2, len(calls)      # was one per call expression (quadratic)


def test_hygiene_walk_yields_ast_walks_nodes_in_its_order():
    import ast
    import inspect
    import gast
    from secant.transformer import hygiene, normalize
    text = inspect.getsource(normalize)         # a large module: every kind of node
    for tree in (ast.parse(text), gast.parse(text)):
        want = [id(n) for n in ast.walk(tree)]
        assert [id(n) for n in hygiene.walk(tree)] == want and len(want) > 10000


# --- jit(grad(f)): the staged derivative is the eager one when jit has nothing to stage ---------
def _generations(fn_name):
    from secant import transforms
    seen = []

    def hook(fn, mode, wrt, staged, gen):
        if fn.__name__ == fn_name:
            seen.append(staged)
    transforms.GENERATE_HOOKS.append(hook)
    return seen, lambda: transforms.GENERATE_HOOKS.remove(hook)


def test_jit_of_grad_reuses_the_eager_derivative_of_straight_line_code():
    def tanh_loss(w, x):
        return snp.sum(snp.tanh(x @ w) ** 2)
    w, x = np.full((3, 2), 0.3, np.float32), np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    seen, done = _generations("tanh_loss")
    try:
        g = secant.grad(tanh_loss)
        eager = np.asarray(g(w, x))
        jitted = np.asarray(secant.jit(g)(w, x))
    finally:
        done()
    assert seen == [False]          # generated once: jit's trace ran the eager derivative
    t = np.tanh(x.astype(np.float64) @ w)
    np.testing.assert_allclose(jitted, x.T @ (2 * t * (1 - t * t)), rtol=1e-5)
    np.testing.assert_allclose(jitted, eager, rtol=1e-6)


def test_jit_of_grad_stages_control_flow_in_the_function_or_its_callees():
    def clipped(v):
        if snp.sum(v) > 0:          # on a traced value: jit needs the staged (lax.cond) form
            return v * 2.0
        return -v

    def outer_loss(v):              # a callee by name: jit rewrites outer_loss itself
        return snp.sum(snp.sin(clipped(v)))

    def loss_with_if(v):
        return snp.sum(snp.sin(v * 2.0 if snp.sum(v) > 0 else -v))
    for loss in (outer_loss, loss_with_if):
        seen, done = _generations(loss.__name__)
        try:
            g = secant.grad(loss)
            for v in (np.array([0.5, 1.0], np.float32), np.array([-0.5, -1.0], np.float32)):
                eager = np.asarray(g(v))
                jitted = np.asarray(secant.jit(g)(v))
                scale = 2.0 if v.sum() > 0 else -1.0
                np.testing.assert_allclose(jitted, scale * np.cos(scale * v), rtol=1e-6)
                np.testing.assert_allclose(jitted, eager, rtol=1e-6)
        finally:
            done()
        assert sorted(seen) == [False, True]    # the eager derivative and jit's staged one


# --- eager derivatives: one quiet error state per call, 0-d values held as NumPy scalars --------
def test_eager_grad_is_quiet_inside_and_restores_the_callers_error_state():
    g = secant.grad(lambda x: snp.sum(snp.log(x) * 0.0 + snp.sin(x)))
    x = np.array([0.0, 1.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = np.asarray(g(x))                  # log(0) and its derivative 1/0: quiet
    np.testing.assert_allclose(out[1], np.cos(1.0), rtol=1e-6)
    with np.errstate(divide="raise"):
        before = np.geterr()
        g(x)
        assert np.geterr() == before            # the caller's state is back
        with pytest.raises(FloatingPointError):
            np.log(np.zeros(1))
    with pytest.raises(secant.SecantError):
        secant.grad(lambda x: snp.ones(2) * x)(np.float32(1.0))    # (not a scalar output)
    assert np.geterr()["divide"] == "warn"      # ... also after a failing call


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_grad_seed_of_a_zero_d_fast_path_result_is_ones_like(dtype, x64):
    from secant.ad.helpers import grad_seed
    for a in (snp.asarray(np.asarray(0.5, dtype)), snp.asarray(0.5)):
        out = snp.sin(a)
        got, want = grad_seed(out), snp.ones_like(out)
        assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type)
        assert _host_value_ok(got) and float(got) == 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grad_of_numpy_scalars_matches_the_closed_form(dtype, x64_or_not):
    def chain(x):
        for _ in range(5):
            x = snp.sin(x) * x
        return x
    x = np.dtype(dtype).type(0.7)
    got = secant.grad(chain)(x)
    want_dtype = snp.asarray(x).dtype
    assert got.dtype == want_dtype and got.shape == () and not got.weak_type
    v, d = 0.7, 1.0
    for _ in range(5):
        v, d = np.sin(v) * v, d * (np.cos(v) * v + np.sin(v))
    np.testing.assert_allclose(float(got), d, rtol=1e-5)


def test_zero_d_value_held_as_a_scalar_hands_out_fresh_arrays():
    a = snp.sin(snp.asarray(np.float32(0.5)))
    v = np.asarray(a)
    assert type(v) is np.ndarray and v.shape == () and v.dtype == np.float32
    v[()] = 7.0                                 # a copy: the array stays what it was
    assert float(a) == np.sin(np.float32(0.5))
    b = snp.asarray(a) + snp.zeros((2,), np.float32)      # through bind: the impl sees arrays
    np.testing.assert_array_equal(np.asarray(b), [np.sin(np.float32(0.5))] * 2)
    assert a.tolist() == float(np.sin(np.float32(0.5))) and a.item() == a.tolist()


# --- eager matmul and sum of float arrays: NumPy's kernel directly, as bind would run it --------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_eager_matmul_and_sum_fast_paths_match_bind(dtype, x64):
    from secant.backends.primitives import structural as st
    rng = np.random.default_rng(0)
    m = snp.asarray((rng.normal(size=(5, 3)) * 4).astype(dtype))
    n = snp.asarray((rng.normal(size=(3, 4)) * 4).astype(dtype))
    weak = snp.broadcast_to(snp.asarray(2.0), (3, 4))         # (a weak operand)
    for a, b in ((m, n), (m, snp.swapaxes(snp.asarray(np.asarray(n).T.copy()), 0, 1)),
                 (snp.asarray(np.asarray(m)[:, :2]), snp.asarray(np.asarray(n)[:2]))):
        got = a @ b
        want = st.dot_general_p.bind(a, b, dimension_numbers=(((1,), (0,)), ((), ())))
        assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert (m @ weak).dtype == snp.result_type(m, weak)
    with pytest.raises(secant.SecantError, match="contracting"):
        m @ m
    for axis, keepdims in ((0, False), (1, True), (None, False), (None, True), ((0, 1), True),
                           (-1, False), ((), False)):
        got = snp.sum(m, axis=axis, keepdims=keepdims)
        axes = tuple(range(2)) if axis is None else (axis,) if isinstance(axis, int) else axis
        axes = tuple(sorted(a % 2 for a in axes))
        want = snp.asarray(np.sum(np.asarray(m), axis=axes, keepdims=keepdims,
                                  dtype=snp.sum(m[:1, :1]).dtype))
        assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, m.weak_type)
        assert _host_value_ok(got)
        if dtype in ("float32", "float64"):
            red = st.reduce_sum_p.bind(m, axes=axes) if axes else m
            np.testing.assert_array_equal(np.asarray(got), np.asarray(red).reshape(got.shape))
        else:
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-2)
    assert weak.weak_type and snp.sum(weak).weak_type and snp.sum(weak, axis=0).weak_type
    assert (weak @ snp.swapaxes(weak, 0, 1)).weak_type
    for bad in (2, (0, 0), 1.0):
        with pytest.raises(secant.SecantError):
            snp.sum(m, axis=bad)


def test_eager_expand_dims_and_broadcast_to_match_bind():
    from secant.backends.primitives import structural as st
    for a in (snp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3)), snp.asarray(2.0),
              snp.sum(snp.asarray(np.ones(3, np.float32))), snp.asarray(np.arange(3))):
        for axis in ((0,), (-1,), (0, -1)):
            got = snp.expand_dims(a, axis)
            dims = tuple(sorted(d % (a.ndim + len(axis)) for d in axis))
            want = st.expand_dims_p.bind(a, dimensions=dims)
            assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        shape = (4,) + a.shape
        got = snp.broadcast_to(a, shape)
        want = st.broadcast_in_dim_p.bind(a, shape=shape,
                                          broadcast_dimensions=tuple(range(1, len(shape))))
        assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        with pytest.raises(secant.SecantError, match="immutable"):
            got[0] = 1
        with pytest.raises(secant.SecantError):
            snp.expand_dims(a, (0, 0))
    with pytest.raises(secant.SecantError, match="broadcast"):
        snp.broadcast_to(snp.asarray(np.ones(3, np.float32)), (2, 4))


# --- eager ufunc calls in a quiet context of their own; 0-d floats held as scalars by asarray --
def test_eager_fast_paths_stay_quiet_when_their_quiet_context_is_in_use():
    # the context is entered once at a time (another thread's long ufunc holds it): the fast
    # paths then enter the quiet state the other way, same values, no warnings
    from secant.backends import core
    x = snp.asarray(np.array([0.0, 1.0, -1.0], np.float32))
    s = snp.asarray(np.float32(0.0))

    def inside():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return (snp.log(x), snp.log(s), x / s, s * s,
                    core.quiet_call(np.log, np.zeros(2, np.float32)))
    log_x, log_s, ratio, square, direct = core._quiet_context_call(inside)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(np.asarray(log_x), np.log(np.asarray(x)))
        np.testing.assert_array_equal(np.asarray(ratio), np.asarray(x) / np.float32(0.0))
    assert float(log_s) == -np.inf and float(square) == 0.0 and list(direct) == [-np.inf] * 2
    assert log_x.dtype == ratio.dtype == log_s.dtype == np.float32
    with np.errstate(divide="raise"):               # the caller's state is untouched
        assert float(snp.log(s)) == -np.inf
        with pytest.raises(FloatingPointError):
            np.log(np.zeros(1))


@pytest.mark.parametrize("value", [np.float32(0.5), np.float64(0.5), np.array(0.25, np.float32),
                                   0.5, np.float16(0.5), np.array(3, np.int32), True])
def test_asarray_of_a_zero_d_value_matches_the_array_path(value, x64_or_not):
    a, b = snp.asarray(value), snp.array(value)
    want = np.asarray(value).astype(secant.dtypes.canonicalize_dtype(np.asarray(value).dtype))
    for got in (a, b, snp.asarray(value, dtype=np.float32)):
        assert got.shape == () and _host_value_ok(got)
        assert float(got) == float(want)
    assert a.dtype == b.dtype == want.dtype
    assert a.weak_type == b.weak_type == (type(value) is float)
    if isinstance(value, np.ndarray):
        value[()] = 9                               # a copy: the array stays what it was
        assert float(a) == float(want) and float(b) == float(want)

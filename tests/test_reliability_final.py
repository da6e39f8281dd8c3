"""The last of issue 16 (reliability): a custom_vjp fwd rule whose primal output disagrees with
the function's own output type, a tracer used from another thread while its trace is live, and
variadic library functions (snp.atleast_3d, broadcast_arrays, meshgrid) passed directly to a
transform; errors that remain name the user's line, never secant's own source."""
import inspect
import threading

import numpy as np
import pytest

import secant
import secant.lax as lax
import secant.numpy as snp
from secant import SecantError

HERE = __file__


def _def_line(fn):
    return f"{HERE}:{inspect.getsourcelines(fn)[1]}"


# --- 1. custom_vjp: fwd's primal output checked against f's output type ----------------------
@secant.custom_vjp
def sin_int_fwd(x):
    return snp.sin(x)


def sin_int_fwd_fwd(x):
    return snp.sin(x).astype(snp.int32), x       # an int32 primal for a float32 function


def sin_int_fwd_bwd(res, g):
    return (g * snp.cos(res),)


sin_int_fwd.defvjp(sin_int_fwd_fwd, sin_int_fwd_bwd)


@secant.custom_vjp
def pair_out(x):
    return snp.sin(x), snp.cos(x)


def pair_out_fwd(x):
    return snp.sin(x), x                           # one output where f returns a pair


def pair_out_bwd(res, g):
    return (g,)


pair_out.defvjp(pair_out_fwd, pair_out_bwd)


@secant.custom_vjp
def wrong_shape(x):
    return snp.sum(x)


def wrong_shape_fwd(x):
    return x * 1.0, x                              # (3,) where f returns a scalar


def wrong_shape_bwd(res, g):
    return (g * snp.ones_like(res),)


wrong_shape.defvjp(wrong_shape_fwd, wrong_shape_bwd)


def _fwd_error(run, fwd):
    with pytest.raises(TypeError) as info:          # (a SecantTypeError, as JAX's TypeError)
        run()
    assert isinstance(info.value, SecantError)
    msg = str(info.value)
    assert "fwd rule" in msg and _def_line(fwd) in msg, msg
    return msg


X = snp.asarray(0.7)
V = snp.asarray([0.1, 0.5, 0.9])


@pytest.mark.parametrize("run", [
    lambda: secant.grad(sin_int_fwd)(X),
    lambda: secant.grad(lambda x: sin_int_fwd(x) * 2.0)(X),
    lambda: secant.jit(secant.grad(sin_int_fwd))(X),
    lambda: secant.vmap(secant.grad(sin_int_fwd))(V),
    lambda: secant.grad(lambda v: snp.sum(secant.vmap(sin_int_fwd)(v)))(V),
    lambda: secant.vjp(sin_int_fwd, X)[1](snp.asarray(1.0)),
    lambda: secant.jacrev(sin_int_fwd)(X),
    lambda: secant.jit(secant.vmap(secant.grad(sin_int_fwd)))(V),
], ids=["grad", "grad-caller", "jit-grad", "vmap-grad", "grad-vmap", "vjp", "jacrev",
        "jit-vmap-grad"])
def test_fwd_dtype_disagreeing_with_f_is_an_error(run):
    msg = _fwd_error(run, sin_int_fwd_fwd)
    assert "float32" in msg and "int32" in msg, msg


def test_fwd_structure_disagreeing_with_f_is_an_error():
    msg = _fwd_error(lambda: secant.grad(lambda x: pair_out(x)[0] + pair_out(x)[1])(X),
                     pair_out_fwd)
    assert "structure" in msg


@pytest.mark.parametrize("run", [
    lambda: secant.grad(wrong_shape)(V),
    lambda: secant.jit(secant.grad(wrong_shape))(V),
    lambda: secant.vmap(secant.grad(wrong_shape))(snp.stack([V, V])),
])
def test_fwd_shape_disagreeing_with_f_is_an_error(run):
    _fwd_error(run, wrong_shape_fwd)


def test_direct_calls_of_f_do_not_run_fwd():
    """As JAX: a call of f (eager or jitted) without differentiation never runs fwd."""
    np.testing.assert_allclose(sin_int_fwd(X), np.sin(0.7), rtol=1e-6)
    np.testing.assert_allclose(secant.jit(sin_int_fwd)(X), np.sin(0.7), rtol=1e-6)


@secant.custom_vjp
def with_count(x):
    return snp.sin(x), snp.argmax(x)                # a float and an int output


def with_count_fwd(x):
    return (snp.sin(x), snp.argmax(x)), x


def with_count_bwd(res, g):
    g_sin, _ = g
    return (g_sin * 3.0 * snp.cos(res),)           # (3x the true derivative: the rule is used)


with_count.defvjp(with_count_fwd, with_count_bwd)


@secant.custom_vjp
def floor_int(x):
    return snp.floor(x).astype(snp.int32)          # integer-valued f


def floor_int_fwd(x):
    return snp.floor(x).astype(snp.int32), x       # and an integer fwd primal: accepted


def floor_int_bwd(res, g):
    return (snp.ones_like(res),)


floor_int.defvjp(floor_int_fwd, floor_int_bwd)


def test_matching_fwd_outputs_are_accepted_int_outputs_included():
    loss = lambda v: snp.sum(with_count(v)[0])                  # noqa: E731
    want = 3.0 * np.cos(np.asarray(V))
    np.testing.assert_allclose(secant.grad(loss)(V), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(loss))(V), want, rtol=1e-6)
    batch = snp.stack([V, 2 * V])
    np.testing.assert_allclose(secant.vmap(secant.grad(loss))(batch),
                               3.0 * np.cos(np.asarray(batch)), rtol=1e-6)
    out, pull = secant.vjp(floor_int, V)
    np.testing.assert_array_equal(out, [0, 0, 0])
    assert out.dtype == np.int32
    (ct,) = pull(snp.ones(3))
    np.testing.assert_allclose(ct, np.ones(3))


@secant.custom_vjp
def branchy(x):
    if x > 0:           # Python control flow on the value: f cannot be traced abstractly
        return x * 2.0
    return -x


def branchy_fwd(x):
    return branchy(x), x


def branchy_bwd(res, g):
    return (g * 5.0,)


branchy.defvjp(branchy_fwd, branchy_bwd)


def test_fwd_check_skipped_where_f_cannot_be_traced():
    np.testing.assert_allclose(secant.grad(branchy)(snp.asarray(1.5)), 5.0)


# --- 2. a tracer used from another thread while its trace is live ----------------------------
def test_tracer_of_a_live_trace_used_in_another_thread():
    box, stored, release, errors = {}, threading.Event(), threading.Event(), {}

    def f(x):
        box["t"] = x * 2.0
        stored.set()
        release.wait(30)            # the trace stays live while thread B uses the tracer
        return x + 1.0

    result = {}

    def tracing():
        result["a"] = secant.jit(f)(snp.ones(3))

    def using():
        stored.wait(30)
        for name, use in [("add", lambda t: t + 1.0), ("sin", lambda t: snp.sin(t)),
                          ("bool", lambda t: bool(t[0] > 0)),
                          ("jit", lambda t: secant.jit(lambda y: y * 3.0)(t)),
                          ("grad", lambda t: secant.grad(lambda y: snp.sum(y * y))(t))]:
            try:
                use(box["t"])
            except Exception as e:      # noqa: BLE001 (the test checks its type below)
                errors[name] = e
        release.set()

    a, b = threading.Thread(target=tracing), threading.Thread(target=using, name="user-B")
    a.start()
    b.start()
    a.join(60)
    b.join(60)
    assert set(errors) == {"add", "sin", "bool", "jit", "grad"}, errors
    for name, e in errors.items():
        assert isinstance(e, secant.errors.UnexpectedTracerError), (name, e)
        msg = str(e)
        assert "another thread" in msg and "user-B" in msg, msg
        assert f"{HERE}:" in msg and "created at" in msg, msg
    np.testing.assert_allclose(result["a"], 2.0 * np.ones(3))     # A's trace is unharmed


def test_tracer_handed_over_after_its_trace_finished_is_still_leaked():
    box = {}

    def f(x):
        box["t"] = x
        return x

    secant.jit(f)(snp.ones(2))
    errors = []
    t = threading.Thread(target=lambda: errors.append(_catch(lambda: box["t"] + 1.0)))
    t.start()
    t.join()
    assert isinstance(errors[0], secant.errors.UnexpectedTracerError)
    assert "after that trace finished" in str(errors[0])


def _catch(fn):
    try:
        fn()
    except Exception as e:          # noqa: BLE001
        return e
    return None


# --- 3. variadic library functions passed directly to a transform ----------------------------
A = snp.asarray(np.arange(6.0).reshape(2, 3))
B = snp.asarray(np.arange(6.0, 12.0).reshape(2, 3))


def _loop(fn, *xs):
    return [fn(*(x[i] for x in xs)) for i in range(xs[0].shape[0])]


@pytest.mark.parametrize("fn", [snp.atleast_1d, snp.atleast_2d, snp.atleast_3d])
def test_vmap_of_atleast_nd_directly(fn):
    got = secant.vmap(fn)(A)
    want = np.stack([np.asarray(r) for r in _loop(fn, A)])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want)
    two = secant.vmap(fn)(A, B)             # two arguments: a list, each batched
    want2 = _loop(fn, A, B)
    for i in range(2):
        np.testing.assert_allclose(two[i], np.stack([np.asarray(w[i]) for w in want2]))
    np.testing.assert_allclose(secant.jit(secant.vmap(fn))(A), want)


def test_nested_vmap_of_a_variadic_library_function():
    got = secant.vmap(secant.vmap(snp.atleast_2d))(A)
    assert got.shape == (2, 3, 1, 1)
    np.testing.assert_allclose(got[..., 0, 0], A)


def test_jvp_and_jacobians_of_atleast_2d_directly():
    v = snp.asarray([1.0, 2.0, 3.0])
    out, out_dot = secant.jvp(snp.atleast_2d, (v,), (2 * v,))
    np.testing.assert_allclose(out, [[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(out_dot, [[2.0, 4.0, 6.0]])
    for jac in (secant.jacrev, secant.jacfwd):
        np.testing.assert_allclose(jac(snp.atleast_2d)(v), np.eye(3)[None])


def test_grad_through_variadic_library_calls(x64):
    v = snp.asarray([0.3, -1.2, 2.0])
    g = secant.grad(lambda x: snp.sum(snp.hstack([x, x * x]) ** 2))(v)
    x = np.asarray(v)
    np.testing.assert_allclose(g, 2 * x + 4 * x ** 3, rtol=1e-12)
    g2 = secant.grad(lambda x: snp.sum(snp.atleast_3d(x) * 3.0))(v)
    np.testing.assert_allclose(g2, 3.0 * np.ones(3))


def test_broadcast_arrays_and_meshgrid_directly():
    row = snp.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    col = snp.asarray([[10.0], [20.0]])
    got = secant.vmap(snp.broadcast_arrays)(row, col)       # per example: (3,) and (1,)
    want = _loop(snp.broadcast_arrays, row, col)
    for i in range(2):
        np.testing.assert_allclose(got[i], np.stack([np.asarray(w[i]) for w in want]))
    a, b = snp.asarray([1.0, 2.0, 3.0]), snp.asarray([4.0, 5.0])
    (x, y), (x_dot, y_dot) = secant.jvp(snp.meshgrid, (a, b), (snp.ones(3), 2 * snp.ones(2)))
    np.testing.assert_allclose(x, np.meshgrid(a, b)[0])
    np.testing.assert_allclose(x_dot, np.ones((2, 3)))
    np.testing.assert_allclose(y_dot, 2 * np.ones((2, 3)))
    got = secant.vmap(snp.meshgrid)(A, B)
    want = _loop(snp.meshgrid, A, B)
    for i in range(2):
        np.testing.assert_allclose(got[i], np.stack([np.asarray(w[i]) for w in want]))
    jit_out = secant.jit(snp.meshgrid)(a, b)
    np.testing.assert_allclose(jit_out[1], np.meshgrid(a, b)[1])


def test_errors_of_library_functions_passed_directly_name_the_users_line():
    batched = secant.vmap(lax.cond, in_axes=(0, None, None, 0))(V > 0.4, snp.sin, snp.cos, V)
    np.testing.assert_allclose(batched, np.where(V > 0.4, np.sin(V), np.cos(V)), rtol=1e-6)
    for run in (lambda: secant.grad(lax.switch, argnums=2)(1, [snp.sin, snp.cos], 1.0),
                lambda: secant.grad(snp.einsum, argnums=1)("i,i->", V, V)):
        with pytest.raises(SecantError) as info:
            run()
        msg = str(info.value)
        assert f"{HERE}:" in msg, msg
        assert "lax_control_flow.py" not in msg and "sources_existing.py" not in msg, msg


# --- derivatives of a vmapped custom function use the user's rules (as JAX's) ----------------
@secant.custom_vjp
def scaled(x, w):
    return snp.sin(x) * w


def scaled_fwd(x, w):
    return snp.sin(x) * w, (x, w)


def scaled_bwd(res, g):
    x, w = res      # 3x the true derivative, so a test sees the rule was used
    return 3.0 * g * snp.cos(x) * w, 3.0 * g * snp.sin(x)


scaled.defvjp(scaled_fwd, scaled_bwd)


@secant.custom_jvp
def tripled(x):
    return snp.sin(x)


@tripled.defjvp
def tripled_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return snp.sin(x), 3.0 * snp.cos(x) * x_dot


XS = snp.asarray([0.1, 0.5, 0.9])


def test_grad_of_vmapped_custom_vjp_uses_its_rule():
    w = snp.asarray(1.5)
    loss = lambda xs, w: snp.sum(secant.vmap(scaled, in_axes=(0, None))(xs, w))   # noqa: E731
    x = np.asarray(XS)
    for g in (secant.grad(loss, argnums=(0, 1)), secant.jit(secant.grad(loss, argnums=(0, 1)))):
        gx, gw = g(XS, w)
        np.testing.assert_allclose(gx, 3.0 * np.cos(x) * 1.5, rtol=1e-6)
        np.testing.assert_allclose(gw, 3.0 * np.sum(np.sin(x)), rtol=1e-6)   # summed


def test_derivatives_of_vmapped_custom_jvp_use_its_rule():
    want = 3.0 * np.cos(np.asarray(XS))
    batched = secant.vmap(tripled)
    np.testing.assert_allclose(secant.jvp(batched, (XS,), (snp.ones(3),))[1], want, rtol=1e-6)
    np.testing.assert_allclose(secant.grad(lambda v: snp.sum(batched(v)))(XS), want, rtol=1e-6)
    np.testing.assert_allclose(np.diag(secant.jacfwd(batched)(XS)), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.grad(lambda v: snp.sum(batched(v))))(XS), want,
                               rtol=1e-6)
    np.testing.assert_allclose(batched(XS), np.sin(np.asarray(XS)), rtol=1e-6)


def test_vmapped_custom_rules_with_nondiff_arguments():
    import functools

    @functools.partial(secant.custom_vjp, nondiff_argnums=(0,))
    def app(k, x):
        return snp.sin(x) * k

    def app_fwd(k, x):
        return app(k, x), x

    def app_bwd(k, res, g):
        return (3.0 * k * g * snp.cos(res),)

    app.defvjp(app_fwd, app_bwd)

    @functools.partial(secant.custom_jvp, nondiff_argnums=(0,))
    def capp(k, x):
        return snp.sin(x) * k

    @capp.defjvp
    def capp_jvp(k, p, t):
        return capp(k, p[0]), 3.0 * k * snp.cos(p[0]) * t[0]

    want = 6.0 * np.cos(np.asarray(XS))
    for fn in (app, capp):
        got = secant.grad(lambda xs: snp.sum(secant.vmap(fn, in_axes=(None, 0))(2.0, xs)))(XS)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    got = secant.jvp(lambda xs: secant.vmap(capp, in_axes=(None, 0))(2.0, xs), (XS,),
                     (snp.ones(3),))[1]
    np.testing.assert_allclose(got, want, rtol=1e-6)


# --- limits: a 1,500-term expression under every transform (tests/test_limits.py: grad, vmap, jit)
def test_1500_term_expression_under_jvp_and_compositions(tmp_path):
    import importlib.util
    path = tmp_path / "deep1500.py"
    path.write_text("def deep(x):\n    return " + " + ".join(["x * 1.5"] * 1500) + "\n")
    spec = importlib.util.spec_from_file_location("deep1500", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    deep, xs = module.deep, snp.ones(3)
    assert float(secant.jvp(deep, (1.0,), (1.0,))[1]) == 2250.0
    assert float(secant.jit(lambda x: secant.jvp(deep, (x,), (2.0,))[1])(1.0)) == 4500.0
    np.testing.assert_allclose(secant.vmap(secant.grad(deep))(xs), 2250.0 * np.ones(3))
    assert float(secant.grad(secant.grad(deep))(1.0)) == 0.0


def test_fwd_check_under_jacobians_of_a_valid_rule():
    """jacrev vmaps the vjp over output cotangents (the primals unbatched): a valid fwd stays
    accepted, and its rule gives the Jacobian."""
    @secant.custom_vjp
    def f(v):
        return snp.sin(v)

    def f_fwd(v):
        return snp.sin(v), v

    def f_bwd(v, g):
        return (3.0 * g * snp.cos(v),)

    f.defvjp(f_fwd, f_bwd)
    want = np.diag(3.0 * np.cos(np.asarray(XS)))
    np.testing.assert_allclose(secant.jacrev(f)(XS), want, rtol=1e-6)
    np.testing.assert_allclose(secant.jit(secant.jacrev(f))(XS), want, rtol=1e-6)
    np.testing.assert_allclose(secant.vmap(secant.jacrev(f))(snp.stack([XS, XS])),
                               np.stack([want, want]), rtol=1e-6)

"""Issue 15, section 1: the source secant transforms is the live function's own, and the
generated code reads what the user's code reads when it runs. Each case is a regression test
for a silently wrong value: decorators (`__wrapped__` never followed), closure cells and globals
read at run time (never frozen into a cached derivative), a file edited after import, names
the generated code uses for itself that a user's name shadowed, and functions with no source."""
import functools

import numpy as np
import pytest

import secant
import secant.numpy as snp


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# --- 1. decorators: the function passed is transformed, not the one it wraps ------------------
def _double(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return fn(x) * 2.0
    return wrapper


@_double
def _square_doubled(x):
    return x * x


def _scaled(s):             # a decorator with arguments
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(x):
            return fn(x) * s
        return wrapper
    return deco


@_scaled(3.0)
def _sin_tripled(x):
    return snp.sin(x)


def _plus_cx(fn):           # the wrapper takes more parameters than the function it wraps
    @functools.wraps(fn)
    def wrapper(x, c):
        return fn(x) + c * x
    return wrapper


@_plus_cx
def _cube(x):
    return x ** 3


def test_grad_of_wraps_decorated_function_is_the_wrappers():
    assert _square_doubled(3.0) == 18.0
    close(secant.grad(_square_doubled)(3.0), 12.0)          # d/dx 2x^2, not 2x
    close(secant.jit(secant.grad(_square_doubled))(3.0), 12.0)
    xs = np.array([1.0, 2.0, -0.5], np.float32)
    close(secant.vmap(_square_doubled)(xs), 2 * xs ** 2)
    close(secant.vmap(secant.grad(_square_doubled))(xs), 4 * xs)
    jvp_out = secant.jvp(_square_doubled, (3.0,), (1.0,))
    close(jvp_out[0], 18.0)
    close(jvp_out[1], 12.0)


def test_grad_of_decorator_with_arguments():
    x = 0.7
    close(secant.grad(_sin_tripled)(x), 3.0 * np.cos(x))
    close(secant.jit(secant.grad(_sin_tripled))(x), 3.0 * np.cos(x))
    xs = np.array([0.1, 0.5, 1.5], np.float32)
    close(secant.vmap(secant.grad(_sin_tripled))(xs), 3.0 * np.cos(xs))


def test_wrapper_with_its_own_signature():
    x, c = 1.5, 2.0
    close(secant.grad(_plus_cx(_cube.__wrapped__))(x, c), 3 * x ** 2 + c)
    close(secant.grad(_cube, argnums=(0, 1))(x, c), (3 * x ** 2 + c, x))
    close(secant.jit(secant.grad(_cube, argnums=1))(x, c), x)


def test_decorated_callee_inside_a_function():
    def loss(x):
        return _square_doubled(x) + x
    close(secant.grad(loss)(3.0), 13.0)
    close(secant.jit(secant.grad(loss))(3.0), 13.0)


# --- 2. closure cells and globals are read when the derivative runs -------------------------
def _counter_scale():
    k = 2.0

    def f(x):
        return k * x * x

    def set_k(v):
        nonlocal k
        k = v
    return f, set_k


def test_nonlocal_changed_after_first_grad_is_read():
    f, set_k = _counter_scale()
    g = secant.grad(f)
    close(g(1.5), 2 * 2.0 * 1.5)
    set_k(5.0)
    close(g(1.5), 2 * 5.0 * 1.5)                      # the same grad(f)
    close(secant.grad(f)(1.5), 2 * 5.0 * 1.5)         # a freshly built one (cached source)
    close(secant.jit(secant.grad(f))(1.5), 2 * 5.0 * 1.5)
    xs = np.array([0.5, 1.0, 2.0], np.float32)
    close(secant.vmap(secant.grad(f))(xs), 2 * 5.0 * xs)
    close(secant.vmap(f)(xs), 5.0 * xs ** 2)
    close(secant.jvp(f, (1.5,), (1.0,))[1], 2 * 5.0 * 1.5)
    close(secant.grad(secant.grad(f))(1.5), 2 * 5.0)


def test_nonlocal_read_by_staged_control_flow_and_lifted_lambda():
    k = 2.0

    def branchy(x):
        if x > 0:
            y = k * x * x
        else:
            y = x
        return y

    def mapped(x):
        return snp.sum(secant.lax.map(lambda v: k * v * v, x))
    close(secant.jit(secant.grad(branchy))(1.0), 4.0)
    close(secant.grad(mapped)(np.ones(2, np.float32)), [4.0, 4.0])
    k = 5.0
    close(secant.jit(secant.grad(branchy))(1.0), 10.0)
    close(secant.grad(mapped)(np.ones(2, np.float32)), [10.0, 10.0])
    close(secant.jit(secant.grad(mapped))(np.ones(2, np.float32)), [10.0, 10.0])


SCALE = 2.0


def _global_scaled(x):
    return SCALE * snp.sin(x)


def test_global_rebound_after_first_grad_is_read():
    global SCALE
    g = secant.grad(_global_scaled)
    try:
        close(g(0.3), 2.0 * np.cos(0.3))
        SCALE = 7.0
        close(g(0.3), 7.0 * np.cos(0.3))
        close(secant.jit(secant.grad(_global_scaled))(0.3), 7.0 * np.cos(0.3))
    finally:
        SCALE = 2.0


def test_callee_in_a_closure_cell_rebound_is_not_called_stale():
    def inner(x):
        return snp.sin(x)

    def f(x):
        return 3.0 * inner(x)
    g, gg, jf = secant.grad(f), secant.grad(secant.grad(f)), secant.jvp_fn(f)
    close(g(0.5), 3.0 * np.cos(0.5))
    close(gg(0.5), -3.0 * np.sin(0.5))
    inner = lambda x: x * x * x      # noqa: E731, F811  (Python now calls this one)
    close(f(2.0), 24.0)
    close(g(2.0), 3.0 * 3 * 4.0)
    close(secant.grad(f)(2.0), 36.0)
    close(gg(2.0), 3.0 * 6 * 2.0)
    close(jf(2.0, 1.0)[1], 36.0)
    close(secant.jit(secant.grad(f))(2.0), 36.0)
    close(secant.vmap(secant.grad(f))(np.array([1.0, 2.0], np.float32)), [9.0, 36.0])


def test_deep_composition_holds_each_guard_once_and_still_sees_a_rebound_callee():
    """Issue 19: a derivative's guards are its own and its callees', and a deep composition
    reaches the same ones along many paths; each is held once (hessian(jvp(hessian(f))) of a
    matmul had carried 116,352 for 319, checked on every call), and a rebound callee is still
    seen by the outermost derivative."""
    from secant import transforms

    def inner(x):
        return snp.sin(x)

    def f(x):
        return 3.0 * inner(x)
    h4 = secant.hessian(secant.hessian(f))
    close(h4(0.5), 3.0 * np.sin(0.5))
    for gen in list(transforms._generated.values()):
        guards = getattr(gen, "__secant_guards__", ())
        assert len({id(g) for g in guards}) == len(guards), gen.__name__
    inner = lambda x: x * x * x * x      # noqa: E731, F811  (Python now calls this one)
    close(h4(0.5), 72.0)
    close(secant.hessian(secant.hessian(f))(2.0), 72.0)


def test_callee_through_an_attribute_chain_rebound():
    import types
    table = types.SimpleNamespace(act=snp.sin)

    def f(x):
        return table.act(x) * 2.0
    g = secant.grad(f)
    close(g(0.5), 2.0 * np.cos(0.5))
    table.act = snp.cos              # Python now calls cos: so does the derivative
    close(g(0.5), -2.0 * np.sin(0.5))
    close(secant.jit(g)(0.5), -2.0 * np.sin(0.5))


def _callee_a(x):
    return snp.exp(x)


def _uses_callee(x):
    return _callee_a(x) + x


def test_global_callee_rebound_is_not_called_stale():
    global _callee_a
    original = _callee_a
    g = secant.grad(_uses_callee)
    try:
        close(g(0.0), 2.0)
        _callee_a = snp.cos            # a library op now: its rule, not exp's
        close(g(0.4), 1.0 - np.sin(0.4))
        _callee_a = lambda x: x * x    # noqa: E731
        close(g(3.0), 7.0)
        close(secant.vmap(g)(np.array([1.0, 3.0], np.float32)), [3.0, 7.0])
    finally:
        _callee_a = original
    close(g(0.0), 2.0)


# --- 4. hygiene: a user's name never changes what the generated code calls -------------------
mean_grad = 2.0          # a global named like a derivative helper, read by _reads_mean_grad


def _reads_mean_grad(x):
    return snp.mean(x * mean_grad)


def _local_unbroadcast(x):
    unbroadcast = 3.0
    return snp.mean(x * unbroadcast - x)


def _params_named_like_helpers(x, unbroadcast, grad_seed=1.0):
    return snp.sum(x * unbroadcast * grad_seed) + snp.sum(x * x)


_api = snp


def _locals_named_like_api(x):
    snp = 2.0            # a local `snp`, `lax`, `matmul_grad_y`: none is secant's
    lax = x * snp
    matmul_grad_y = _api.sin(lax)
    return _api.sum(matmul_grad_y)


def _batching_helper_names(x):
    batch_axis = 3.0
    align = x * batch_axis
    return snp.sum(align * align)


def test_user_local_named_unbroadcast():
    x = np.array([1.0, 2.0, 4.0], np.float32)
    want = np.full(3, (3.0 - 1.0) / 3)
    close(secant.grad(_local_unbroadcast)(x), want)
    close(secant.jit(secant.grad(_local_unbroadcast))(x), want)
    xs = np.stack([x, 2 * x])
    close(secant.vmap(secant.grad(_local_unbroadcast))(xs), np.stack([want, want]))
    text = secant.source(secant.grad(_local_unbroadcast))
    assert "    unbroadcast = 3.0\n" in text          # the user's name kept, ours renamed


def test_user_global_named_mean_grad():
    x = np.array([1.0, -2.0], np.float32)
    close(secant.grad(_reads_mean_grad)(x), np.full(2, 2.0 / 2))
    close(secant.jit(secant.grad(_reads_mean_grad))(x), np.full(2, 1.0))
    global mean_grad
    mean_grad = 6.0      # read when the derivative runs, under its own name
    try:
        close(secant.grad(_reads_mean_grad)(x), np.full(2, 3.0))
    finally:
        mean_grad = 2.0


def test_parameters_named_like_helpers_keep_the_signature():
    x = np.array([1.0, 2.0], np.float32)
    want = 3.0 * 0.5 + 2 * x
    g = secant.grad(_params_named_like_helpers)
    close(g(x, 3.0, 0.5), want)
    close(g(x, unbroadcast=3.0, grad_seed=0.5), want)             # keyword calls
    close(g(x, 3.0), 3.0 + 2 * x)                                  # the default
    close(secant.jit(g)(x, 3.0, 0.5), want)
    close(secant.grad(_params_named_like_helpers, argnums=1)(x, 3.0, 0.5), np.sum(x) * 0.5)
    assert "(x, unbroadcast, grad_seed=1.0)" in secant.source(g)
    close(secant.jvp(_params_named_like_helpers, (x, 3.0, 0.5),
                     (np.ones(2, np.float32), 0.0, 0.0))[1], np.sum(want))
    xs = np.stack([x, -x])
    close(secant.vmap(g, in_axes=(0, None, None))(xs, 3.0, 0.5), [want, 3.0 * 0.5 - 2 * x])


def test_locals_named_snp_lax_matmul_grad_y():
    x = np.array([0.1, 0.7], np.float32)
    close(secant.grad(_locals_named_like_api)(x), 2.0 * np.cos(2.0 * x))
    close(secant.jit(secant.grad(_locals_named_like_api))(x), 2.0 * np.cos(2.0 * x))
    close(secant.vmap(secant.grad(_locals_named_like_api))(np.stack([x, x])),
          np.stack([2.0 * np.cos(2.0 * x)] * 2))


def test_locals_named_like_batching_helpers():
    xs = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    close(secant.vmap(secant.grad(_batching_helper_names))(xs), 18.0 * xs)
    close(secant.vmap(_batching_helper_names)(xs), 9.0 * np.sum(xs * xs, axis=1))


def test_variable_named_grad_does_not_make_a_temporary_named_mean_grad():
    def loss(grad):
        return snp.mean(grad * grad)
    x = np.array([1.0, 3.0], np.float32)
    close(secant.grad(loss)(x), x)
    close(secant.grad(secant.grad(lambda v: snp.mean(v * v * v)))(np.float32(2.0)), 12.0)


def _g_callee(x):
    return x * x


g_callee_vjp = 10.0      # a global named like the derivative secant writes for _g_callee


def _calls_g_callee(x):
    return _g_callee(x) * g_callee_vjp


def test_global_named_like_a_generated_callee():
    close(secant.grad(_calls_g_callee)(3.0), 60.0)
    close(secant.jit(secant.grad(_calls_g_callee))(3.0), 60.0)


# --- 3. a file edited after import: the text read must be the running code's ----------------
def _import_then_edit(tmp_path, monkeypatch, name, before, after):
    import importlib
    import os
    path = tmp_path / f"{name}.py"
    path.write_text(before)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    path.write_text(after)
    os.utime(path, (1, 1))          # a different mtime (and size): linecache reads it anew
    return module


def test_file_edited_after_import_is_not_differentiated_from_new_text(tmp_path, monkeypatch):
    m = _import_then_edit(tmp_path, monkeypatch, "fidelity_edit_body",
                          "def f(x):\n    return x * x\n",
                          "def f(x):\n    return x * x * x\n")
    assert m.f(3.0) == 9.0                     # the running function is still x * x
    assert_source_faithful(m.f, 3.0, 6.0)


def test_file_edited_above_the_function(tmp_path, monkeypatch):
    m = _import_then_edit(tmp_path, monkeypatch, "fidelity_edit_above",
                          "def f(x):\n    return x * x\n\n\ndef g(x):\n    return 5.0 * x\n",
                          "def h(x):\n    return 7.0 * x\n\n\ndef f(x):\n    return x * x\n"
                          "\n\ndef g(x):\n    return 5.0 * x\n")
    assert_source_faithful(m.g, 2.0, 5.0)       # line 5 now holds `def f`
    assert_source_faithful(m.f, 2.0, 4.0)       # line 1 now holds `def h`


def test_constant_edited_in_place(tmp_path, monkeypatch):
    m = _import_then_edit(tmp_path, monkeypatch, "fidelity_edit_const",
                          "def f(x):\n    return 2.0 * x - x\n",
                          "def f(x):\n    return 3.0 * x + x\n")
    assert_source_faithful(m.f, 1.0, 1.0)


def assert_source_faithful(fn, x, want):
    """The derivative of the running function (its trace), never the new text's."""
    g = secant.grad(fn)
    close(g(x), want)
    close(secant.jit(g)(x), want)
    close(secant.vmap(g)(np.array([x, x], np.float32)), [want, want])
    assert "# traced from" in secant.source(g).splitlines()[1]


# --- 5. functions with no source: traced once into straight-line Python -------------------
_EXEC_SOURCE = """
def helper(v):
    return snp.tanh(v) * 2.0

def f(x, scale=2.0):
    y = snp.sin(x) * scale + x ** 2
    z = helper(y) @ W
    for i in range(N):
        z = z * 1.5
    return snp.sum(z * z) / x.shape[0]

square_mean = lambda x: snp.mean(snp.exp(x) - x)

def make(k):
    def scaled(x):
        return snp.sum(k * x * x)
    return scaled

def branchy(x):
    if snp.sum(x) > 0:
        return x
    return -x
"""


def _exec_namespace():
    ns = {"snp": snp, "W": np.array([[1.0, 2.0], [3.0, 4.0]]), "N": 3}
    exec(_EXEC_SOURCE, ns)      # noqa: S102
    return ns


def _fd_grad(fun, x, eps=1e-5):
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        out.flat[i] = (float(fun(x + e)) - float(fun(x - e))) / (2 * eps)
    return out


def test_exec_defined_function_under_grad_jit_vmap(x64):
    ns = _exec_namespace()
    f = ns["f"]
    x = np.array([0.3, -0.2])
    want = _fd_grad(f, x)
    g = secant.grad(f)
    close(g(x), want, 1e-6)
    close(secant.jit(g)(x), want, 1e-6)
    xs = np.stack([x, 0.5 * x])
    close(secant.vmap(g)(xs), np.stack([want, _fd_grad(f, 0.5 * x)]), 1e-6)
    close(secant.vmap(f)(xs), [f(x), f(0.5 * x)], 1e-9)
    close(secant.grad(f, argnums=1)(x, 3.0), _fd_grad(lambda s: f(x, s), np.array(3.0)), 1e-6)
    text = secant.source(g)
    assert text.splitlines()[1].strip().startswith("# traced from f (no source")
    assert "helper(" in text                # a call of a user function stays a call


def test_exec_defined_lambda_and_closure(x64):
    ns = _exec_namespace()
    x = np.array([0.1, -0.4, 0.9])
    close(secant.grad(ns["square_mean"])(x), (np.exp(x) - 1) / 3, 1e-9)
    close(secant.jit(secant.grad(ns["square_mean"]))(x), (np.exp(x) - 1) / 3, 1e-9)
    close(secant.vmap(secant.grad(ns["square_mean"]))(np.stack([x, x])),
          np.stack([(np.exp(x) - 1) / 3] * 2), 1e-9)
    scaled = ns["make"](2.0)
    close(secant.grad(scaled)(x), 4.0 * x, 1e-12)
    close(secant.jvp(scaled, (x,), (np.ones(3),))[1], np.sum(4.0 * x), 1e-12)


def test_traced_function_reads_globals_when_it_runs(x64):
    ns = _exec_namespace()
    f = ns["f"]
    x = np.array([0.3, -0.2])
    g = secant.grad(f)
    g(x)
    ns["W"] = np.array([[0.5, 0.0], [1.0, -1.0]])      # an array: read by name
    close(g(x), _fd_grad(f, x), 1e-6)
    ns["N"] = 1                                          # an int the trace fixed: traced again
    close(g(x), _fd_grad(f, x), 1e-6)


def test_traced_function_refuses_a_branch_on_a_traced_value():
    from secant.transformer.trace_source import TraceSourceError
    ns = _exec_namespace()
    with pytest.raises(TraceSourceError, match="branch .* on a traced value at <string>:20"):
        secant.grad(ns["branchy"])(np.array([1.0, 2.0], np.float32))
    with pytest.raises(TraceSourceError):
        secant.vmap(ns["branchy"])(np.ones((2, 2), np.float32))


def test_python_dash_c(tmp_path):
    import subprocess
    import sys
    code = ("import secant, secant.numpy as snp\n"
            "f = lambda x: snp.sum(snp.sin(x) * x)\n"
            "print(float(secant.grad(f)(0.5)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    close(float(out.stdout), np.cos(0.5) * 0.5 + np.sin(0.5))


def test_module_globals_named_like_builtins_the_generated_code_calls(tmp_path, monkeypatch):
    import importlib
    (tmp_path / "fidelity_shadowed_builtins.py").write_text(
        "import secant.numpy as snp\n\n"
        "def tuple(*a):\n    raise RuntimeError(\"the module's tuple\")\n\n"
        "def range(*a):\n    raise RuntimeError(\"the module's range\")\n\n"
        "def loss(x):\n    s = snp.sum(x * x)\n    return s * s\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    m = importlib.import_module("fidelity_shadowed_builtins")
    xs = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    got = secant.vmap(secant.grad(m.loss))(xs)           # writes tuple(range(1, ...ndim))
    close(got, 4 * (xs ** 2).sum(axis=(1, 2), keepdims=True) * xs)
    assert "tuple(range(" in secant.source(secant.vmap(secant.grad(m.loss)))

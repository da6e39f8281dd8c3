"""secant.jit as a user sees it: results, the trace cache, static arguments, pytrees, lowering,
devices, and errors that point at the user's line."""
import collections
import inspect

import numpy as np
import pytest
from numpy.testing import assert_allclose

import secant
import secant.numpy as snp

Pair = collections.namedtuple("Pair", "first second")


@secant.tree_util.register_pytree_node_class
class Tagged:
    """A registered class: one array child, one static tag."""

    def __init__(self, value, tag):
        self.value, self.tag = value, tag

    def tree_flatten(self):
        return (self.value,), self.tag

    @classmethod
    def tree_unflatten(cls, tag, children):
        return cls(children[0], tag)


def counted(fn):
    """`fn` plus a list that grows by one on every Python-level call (i.e. every trace)."""
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(1)
        return fn(*args, **kwargs)
    return wrapper, calls


def line_of(fn, text):
    """The absolute line number of the first line of `fn` containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


X = np.linspace(-2, 2, 6, dtype=np.float32)
Y = np.arange(6, dtype=np.float32)


# --- results --------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda x, y: x * y + x,
    lambda x, y: snp.sin(x) * snp.exp(y / 10) - 1.0,
    lambda x, y: snp.where(x > 0, x, y) ** 2,
    lambda x, y: (x - y) / (1 + snp.abs(y)),
])
def test_jit_matches_eager(fn):
    out = secant.jit(fn)(X, Y)
    assert isinstance(out, secant.Array)
    assert out.dtype == np.float32
    assert_allclose(np.asarray(out), np.asarray(fn(X, Y)), rtol=1e-6, atol=1e-6)


def test_jit_accepts_decorator_form_and_kwargs():
    @secant.jit
    def f(x, *, scale):
        return x * scale
    assert_allclose(np.asarray(f(X, scale=3.0)), X * 3)


# --- the trace cache -------------------------------------------------------------------------
def test_traced_once_per_signature():
    fn, calls = counted(lambda x: x * 2)
    f = secant.jit(fn)
    f(X)
    f(X + 1)
    assert len(calls) == 1
    f(np.ones(3, np.float32))             # new shape
    assert len(calls) == 2
    f(np.ones(3, np.int32))               # new dtype
    assert len(calls) == 3
    f(np.ones(3, np.int32))
    assert len(calls) == 3


def test_weak_type_is_part_of_the_signature():
    fn, calls = counted(lambda x: x + 1)
    f = secant.jit(fn)
    f(2.0)
    f(3.0)
    assert len(calls) == 1
    f(np.float32(2.0))                    # same dtype, but strongly typed
    assert len(calls) == 2
    f(2)                                  # a Python int: int32, weakly typed
    assert len(calls) == 3


def test_outputs_fed_back_in_do_not_retrace():
    fn, calls = counted(lambda x, y: (x * y, y + 1))
    f = secant.jit(fn)
    a, b = f(*secant.device_put((X, Y)))
    for _ in range(3):
        a, b = f(a, b)
    assert len(calls) == 1
    assert_allclose(np.asarray(b), Y + 4)


def test_static_argnums_retrace_on_new_value():
    fn, calls = counted(lambda x, n: x * n if n > 1 else x)   # `n > 1` needs a concrete n
    f = secant.jit(fn, static_argnums=1)
    assert_allclose(np.asarray(f(X, 3)), X * 3)
    f(X, 3)
    assert len(calls) == 1
    assert_allclose(np.asarray(f(X, 1)), X)
    assert len(calls) == 2


def test_static_argnames_matches_positional_and_keyword_use():
    fn, calls = counted(lambda x, n: x * n)
    f = secant.jit(fn, static_argnames="n")
    assert_allclose(np.asarray(f(X, n=2)), X * 2)
    assert_allclose(np.asarray(f(X, 2)), X * 2)
    f(X, n=2)
    assert len(calls) <= 2
    f(X, n=5)
    assert len(calls) <= 3 and f._cache_size() == len(calls)


def test_unhashable_static_argument_is_a_clear_error():
    f = secant.jit(lambda x, n: x, static_argnums=1)
    with pytest.raises(secant.SecantValueError, match="not hashable"):
        f(X, [1, 2])
    with pytest.raises(ValueError):
        f(X, {"a": 1})


# --- pytrees in and out ----------------------------------------------------------------------
def test_pytrees_in_and_out():
    def f(tree):
        t, lst, d, nothing, pair, tagged = tree
        assert nothing is None
        return {"tuple": (t[0] + t[1],), "list": [lst[0] * 2], "dict": d["k"] - 1,
                "none": None, "pair": Pair(pair.first * pair.second, pair.second),
                "tagged": Tagged(tagged.value + 1, tagged.tag)}

    tree = ((X, Y), [X], {"k": Y}, None, Pair(X, 2.0), Tagged(Y, "label"))
    out = secant.jit(f)(tree)
    ref = f(tree)
    assert secant.tree_util.tree_structure(out) == secant.tree_util.tree_structure(ref)
    assert out["none"] is None and isinstance(out["pair"], Pair)
    assert out["tagged"].tag == "label"
    for got, want in zip(secant.tree_util.tree_leaves(out), secant.tree_util.tree_leaves(ref)):
        assert isinstance(got, secant.Array)
        assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_new_tree_structure_retraces():
    fn, calls = counted(lambda t: t[0] + t[-1])
    f = secant.jit(fn)
    f((X, Y))
    f((X, Y))
    f([X, Y])
    f((X, Y, Y))
    assert len(calls) == 3


# --- composition -------------------------------------------------------------------------------
def test_jit_of_jit():
    f = lambda x: snp.cos(x) * 2
    assert_allclose(np.asarray(secant.jit(secant.jit(f))(X)), np.cos(X) * 2, rtol=1e-6)


def test_jitted_function_called_inside_jit_is_inlined():
    inner_fn, calls = counted(lambda x: x * 3)
    inner = secant.jit(inner_fn)

    @secant.jit
    def outer(x):
        return inner(x) + inner(x + 1)

    assert_allclose(np.asarray(outer(X)), X * 3 + (X + 1) * 3, rtol=1e-6)
    assert outer.lower(X).as_text().count("func.func") == 1


# --- lowering and compiling ----------------------------------------------------------------------
def test_lower_as_text_is_stablehlo_located_at_user_lines():
    def f(x, y):
        return snp.sin(x) * y
    text = secant.jit(f).lower(X, Y).as_text()
    assert "func.func public @main" in text
    assert "stablehlo.sine" in text
    assert f'loc("{__file__}":{line_of(f, "snp.sin")}' in text


def test_compile_runs_and_checks_its_signature():
    compiled = secant.jit(lambda x, y: x - y).lower(X, Y).compile()
    assert_allclose(np.asarray(compiled(X, Y)), X - Y)
    with pytest.raises(secant.SecantTypeError):
        compiled(X[:2], Y[:2])


# --- devices -------------------------------------------------------------------------------------
def test_outputs_live_on_the_device():
    out = secant.jit(lambda x: x + 1)(X)
    assert isinstance(out, secant.Array)
    assert out._buf is not None                 # a device buffer, no host copy until asked
    assert out.devices() == {secant.devices()[0]}
    assert_allclose(np.asarray(out), X + 1)
    assert out.shape == X.shape and out.dtype == X.dtype


def test_device_put_devices_and_backend():
    devices = secant.devices()
    assert devices and secant.device_count() == len(devices)
    assert secant.default_backend() == "cpu"
    tree = secant.device_put({"a": X, "b": [Y]}, devices[0])
    assert isinstance(tree["a"], secant.Array) and tree["a"].devices() == {devices[0]}
    assert_allclose(np.asarray(tree["b"][0]), Y)
    out = secant.block_until_ready(secant.jit(lambda t: t["a"] * t["b"][0])(tree))
    assert_allclose(np.asarray(out), X * Y)


# --- errors name the user's line ------------------------------------------------------------------
def test_python_if_on_a_traced_value_is_staged():
    def g(x):
        if x > 0:
            return x
        return -x

    jg = secant.jit(g)
    assert float(jg(2.0)) == 2.0 and float(jg(-3.0)) == 3.0
    assert "stablehlo.if" in jg.lower(1.0).as_text()


def test_bool_of_traced_value_names_the_user_line():
    def g(x):
        while x > 0:      # a Python side effect keeps this loop Python: bool() of a tracer
            print("positive")
            x = x - 1
        return x

    with pytest.raises(secant.ConcretizationError) as info:
        secant.jit(g)(1.0)
    assert f"{__file__}:{line_of(g, 'while x > 0')}" in str(info.value)
    assert isinstance(info.value, TypeError)


def test_shape_mismatch_under_jit_names_the_user_file():
    def f(x, y):
        return x + y
    with pytest.raises(secant.SecantTypeError) as info:
        secant.jit(f)(np.ones(3, np.float32), np.ones(4, np.float32))
    assert f"{__file__}:{line_of(f, 'x + y')}" in str(info.value)


# --- argument types --------------------------------------------------------------------------------
def test_python_scalars_are_weakly_typed():
    out = secant.jit(lambda s: s * 2)(2.0)
    assert out.dtype == np.float32 and out.weak_type
    half = np.ones(3, np.float16)
    out = secant.jit(lambda x, s: x * s)(half, 3.0)     # the weak scalar does not widen float16
    assert out.dtype == np.float16
    assert_allclose(np.asarray(out), np.full(3, 3, np.float16))
    out = secant.jit(lambda i: i + 1)(3)
    assert out.dtype == np.int32 and out.weak_type and int(out) == 4


def test_float64_inputs_become_float32_without_x64():
    out = secant.jit(lambda x: x * 2)(np.arange(3, dtype=np.float64))
    assert out.dtype == np.float32
    assert secant.jit(lambda x: x)(np.arange(3, dtype=np.int64)).dtype == np.int32


def test_float64_inputs_stay_float64_with_x64(x64):
    x = np.linspace(0, 1, 5)
    out = secant.jit(lambda x: x * 2 + 1e-12)(x)
    assert out.dtype == np.float64
    assert_allclose(np.asarray(out), x * 2 + 1e-12, rtol=1e-15)
    assert secant.jit(lambda s: s)(1.0).dtype == np.float64


def test_numpy_and_device_arrays_of_one_signature_share_a_trace():
    fn, calls = counted(lambda x: x * 2)
    f = secant.jit(fn)
    f(X)
    f(secant.device_put(X))
    assert len(calls) == 1


def test_toggling_x64_retraces():
    f = secant.jit(lambda x: x + 1)
    assert f(np.ones(2)).dtype == np.float32
    secant.config.update("enable_x64", True)
    try:
        assert f(np.ones(2)).dtype == np.float64
    finally:
        secant.config.update("enable_x64", False)
